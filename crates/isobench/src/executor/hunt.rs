//! `--hunt`: after the planned runs, one more interleaved round of every
//! cell still hunting, until each has found a guarantee violation (a
//! history check saw an anomaly class its level forbids) or bounded its
//! violation rate below the target, or the time budget is spent. A
//! violation a few runs in is as likely as one at the end: the hunt stops
//! a cell as soon as it has one, and keeps every run.
//!
//! The bound is the upper end of the exact 95 % Poisson interval of the
//! cell's violations per committed transaction checked
//! ([`crate::stats::rate`]): with none found it falls as 3.69 over the
//! transactions checked, so a bound of one per million takes about 3.7
//! million committed transactions.

use crate::model::{Hunt, forbids};
use crate::stats::rate::Rate;
use crate::store::{Cell, Results};

use super::schedule::ScheduledRun;

/// Where one cell's hunt stands.
#[derive(Debug, Clone, PartialEq)]
pub struct CellHunt {
    /// Guarantee violations over its runs.
    pub violations: u64,
    /// Committed transactions its history checks examined.
    pub checked: u64,
    /// Its violation rate (`None` before anything was checked).
    pub rate: Option<Rate>,
}

impl CellHunt {
    /// Whether this cell hunts no more: it found a violation, or its rate
    /// is bounded below `hunt.rate_bound`.
    pub fn done(&self, hunt: &Hunt) -> bool {
        self.violations > 0 || self.rate.is_some_and(|r| r.high < hunt.rate_bound)
    }
}

/// `cell`'s hunt so far in `results`.
pub fn cell_hunt(cell: &Cell, results: &Results) -> CellHunt {
    let (mut violations, mut checked) = (0, 0);
    for run in results.runs.iter().filter(|r| r.cell == *cell) {
        let mut run_checked = None;
        for inv in &run.invariants {
            if inv.checked.is_some() {
                run_checked = inv.checked;
            }
            if forbids(cell.isolation, &inv.name) {
                violations += inv.violations;
            }
        }
        checked += run_checked.unwrap_or(0);
    }
    CellHunt {
        violations,
        checked,
        rate: Rate::of(violations, checked),
    }
}

/// The next round: one run of every cell still hunting, repetition numbers
/// continuing after each cell's highest; empty when every cell is done.
pub(super) fn next_round(cells: &[Cell], results: &Results, hunt: &Hunt) -> Vec<ScheduledRun> {
    cells
        .iter()
        .enumerate()
        .filter(|(_, c)| !cell_hunt(c, results).done(hunt))
        .map(|(i, cell)| ScheduledRun {
            cell: cell.clone(),
            cell_index: i,
            repetition: results
                .runs
                .iter()
                .filter(|r| r.cell == *cell)
                .map(|r| r.repetition)
                .max()
                .unwrap_or(0)
                + 1,
        })
        .collect()
}

/// One line on where the hunt stands: per cell its violations in the
/// transactions checked and its bound, and the time left, e.g. `hunt: ser:
/// 0 in 1,234,567 committed (≤ 3.0 per million, target 1.0); 21m left`.
pub(super) fn status(cells: &[Cell], results: &Results, hunt: &Hunt, left_s: f64) -> String {
    let labels = short_labels(cells);
    let parts: Vec<String> = cells
        .iter()
        .zip(&labels)
        .map(|(c, label)| {
            let h = cell_hunt(c, results);
            let bound = h.rate.map_or_else(
                || "nothing checked yet".to_string(),
                |r| {
                    if h.violations > 0 {
                        "VIOLATED".into()
                    } else {
                        format!("≤ {:.2} per million", r.high * 1e6)
                    }
                },
            );
            format!(
                "{label}: {} in {} committed ({bound})",
                h.violations,
                crate::report::format::grouped(h.checked)
            )
        })
        .collect();
    format!(
        "hunt (target ≤ {:.2} per million): {}; {} left",
        hunt.rate_bound * 1e6,
        parts.join("; "),
        crate::progress::fmt_eta(left_s)
    )
}

/// Each cell's level and the factors whose values differ between the
/// cells (`ser`, `ser clients=20`), in the cells' order.
fn short_labels(cells: &[Cell]) -> Vec<String> {
    let tokens: Vec<Vec<String>> = cells
        .iter()
        .map(|c| c.label().split(' ').map(str::to_string).collect())
        .collect();
    tokens
        .iter()
        .zip(cells)
        .map(|(mine, cell)| {
            let mut parts = vec![cell.isolation.short().to_string()];
            parts.extend(
                mine.iter()
                    .filter(|t| !t.starts_with("isolation="))
                    .filter(|t| tokens.iter().any(|other| !other.contains(t)))
                    .cloned(),
            );
            parts.join(" ")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, fixture};

    fn cells(r: &Results) -> Vec<Cell> {
        let mut out: Vec<Cell> = Vec::new();
        for run in &r.runs {
            if !out.contains(&run.cell) {
                out.push(run.cell.clone());
            }
        }
        out
    }

    #[test]
    fn a_cell_with_a_violation_stops_and_one_without_goes_on_until_bounded() {
        let r = fixture::guarantee_violated();
        let cells = cells(&r);
        let hunt = Hunt {
            rate_bound: 1e-6,
            budget_s: 60.0,
        };
        // rc's 2,000 G2-items are admitted: it hunts on; ser found one.
        let (rc, ser) = (&cells[0], &cells[1]);
        assert_eq!(rc.isolation, Isolation::ReadCommitted);
        let h = cell_hunt(ser, &r);
        assert_eq!((h.violations, h.checked), (1, 2 * 138_578));
        assert!(h.done(&hunt));
        let h = cell_hunt(rc, &r);
        assert_eq!(h.violations, 0);
        // 0 in 277,156: at most 13 per million, above 1 per million.
        assert!(!h.done(&hunt));
        let round = next_round(&cells, &r, &hunt);
        assert_eq!(round.len(), 1);
        assert_eq!(round[0].cell, *rc);
        assert_eq!(round[0].repetition, 3);
        // A looser bound stops rc too.
        let loose = Hunt {
            rate_bound: 20e-6,
            ..hunt
        };
        assert!(next_round(&cells, &r, &loose).is_empty());
        let s = status(&cells, &r, &hunt, 90.0);
        assert!(
            s.contains("0 in 277,156 committed (≤ 13.31 per million)"),
            "{s}"
        );
        assert!(s.contains("1 in 277,156 committed (VIOLATED)"), "{s}");
        assert!(s.ends_with("1m30s left"), "{s}");
    }
}
