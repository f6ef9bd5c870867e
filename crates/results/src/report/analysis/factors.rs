//! The factors of a report's cells: which vary, and each cell's label
//! by them.

use std::collections::BTreeSet;

use crate::report::analysis::cells::CellSummary;
use crate::store::Results;

/// The factor columns of the cells ([`crate::report::format::factor_headers`]), each
/// cell's values ([`crate::report::format::factor_values`]), which columns vary, and short
/// labels built from the varying ones (`ser · clients=8`).
pub struct Factors {
    pub headers: Vec<String>,
    /// Per cell, in the order of [`crate::report::analysis::model::ReportModel::cells`].
    pub values: Vec<Vec<String>>,
    pub varying: Vec<bool>,
    /// Per cell: [`crate::store::Cell::label`].
    pub labels: Vec<String>,
    /// Per cell: [`Factors::label`].
    pub short_labels: Vec<String>,
    /// The columns the Cells tables show: those that vary between cells
    /// (isolation when none does); the others are the same in every cell.
    pub shown: Vec<usize>,
}

impl Factors {
    pub(super) fn new(results: &Results, cells: &[CellSummary]) -> Factors {
        let headers = crate::report::format::factor_headers(results);
        let values: Vec<Vec<String>> = cells
            .iter()
            .map(|c| crate::report::format::factor_values(results, c.cell))
            .collect();
        let varying: Vec<bool> = (0..headers.len())
            .map(|j| values.iter().map(|v| &v[j]).collect::<BTreeSet<_>>().len() > 1)
            .collect();
        let shown: Vec<usize> = (0..headers.len()).filter(|&j| varying[j]).collect();
        let shown = if shown.is_empty() && !headers.is_empty() {
            vec![0]
        } else {
            shown
        };
        let mut f = Factors {
            headers,
            values,
            varying,
            labels: cells.iter().map(|c| c.cell.label()).collect(),
            short_labels: Vec::new(),
            shown,
        };
        f.short_labels = (0..f.values.len()).map(|i| f.label(i)).collect();
        f
    }

    /// Cell `i`'s varying factors except column `skip`: isolation and
    /// strategy by value, the others as `name=value`; isolation and
    /// strategy when nothing else varies.
    pub fn label_without(&self, i: usize, skip: Option<usize>) -> String {
        let parts: Vec<String> = (0..self.headers.len())
            .filter(|j| self.varying[*j] && Some(*j) != skip)
            .map(|j| {
                if j < 2 {
                    self.values[i][j].clone()
                } else {
                    format!("{}={}", self.headers[j], self.values[i][j])
                }
            })
            .collect();
        if parts.is_empty() {
            format!("{} · {}", self.values[i][0], self.values[i][1])
        } else {
            parts.join(" · ")
        }
    }

    /// Cell `b`'s label as seen from cell `i`: only the factors in which
    /// the two differ (`rc` for the baseline of `ser · clients=8` at 8
    /// clients); [`Self::label`] when they differ in none.
    pub fn label_against(&self, b: usize, i: usize) -> String {
        let parts: Vec<String> = (0..self.headers.len())
            .filter(|&j| self.varying[j] && self.values[b][j] != self.values[i][j])
            .map(|j| {
                if j < 2 {
                    self.values[b][j].clone()
                } else {
                    format!("{}={}", self.headers[j], self.values[b][j])
                }
            })
            .collect();
        if parts.is_empty() {
            self.label(b)
        } else {
            parts.join(" · ")
        }
    }

    /// Cell `i`'s short label.
    pub fn label(&self, i: usize) -> String {
        self.label_without(i, None)
    }

    /// Columns other than isolation and strategy whose values all parse
    /// as numbers and take more than one value, `clients` first.
    pub fn numeric_varying(&self) -> Vec<usize> {
        let mut cols: Vec<usize> = (2..self.headers.len())
            .filter(|j| {
                self.varying[*j]
                    && self
                        .values
                        .iter()
                        .all(|v| v[*j].parse::<f64>().is_ok_and(f64::is_finite))
            })
            .collect();
        cols.sort_by_key(|j| self.headers[*j] != "clients");
        cols
    }
}
