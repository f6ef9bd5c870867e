//! The baseline of each cell: the rule of `config.baseline` (or the
//! default, the first isolation level and strategy), its check against
//! the cells, and its description in words (see the rules in
//! [`super`]).

use super::CellSummary;
use crate::model::Isolation;
use crate::store::{Cell, Results};

/// One `KEY=VALUE` of a baseline rule: the column of
/// [`crate::report::format::factor_headers`] and the wanted value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct RuleItem {
    pub(super) column: usize,
    key: String,
    value: String,
}

/// Factor columns whose values compare as numbers (`rate=500` is
/// `rate=500.0`).
pub const NUMERIC_FACTORS: [&str; 6] = [
    "clients",
    "scale",
    "pool_size",
    "pooler_size",
    "rate",
    "max_tries",
];

impl RuleItem {
    /// Whether a cell's value for this column (from
    /// [`crate::report::format::factor_values`]) is the wanted one.
    pub(super) fn matches(&self, cell_value: &str) -> bool {
        if NUMERIC_FACTORS.contains(&self.key.as_str()) {
            match (self.value.parse::<f64>(), cell_value.parse::<f64>()) {
                (Ok(a), Ok(b)) => a == b,
                _ => self.value == cell_value,
            }
        } else {
            self.value == cell_value
        }
    }
}

/// The baseline rule of `results`: the spec of `config.baseline` parsed
/// against the factor columns, or the default (first isolation level and
/// strategy); `Ok(None)` when there is no baseline (no isolation level in
/// the configuration). Errors: see [`check_baseline`].
pub(super) fn baseline_rule(results: &Results) -> Result<Option<Vec<RuleItem>>, String> {
    let c = &results.config;
    let Some(spec) = &c.baseline else {
        let Some(iso) = c.isolation.first() else {
            return Ok(None);
        };
        // The workload or script factor's column comes first.
        let first = usize::from(crate::report::format::work_factor(results).is_some());
        let mut rule = vec![RuleItem {
            column: first,
            key: "isolation".into(),
            value: iso.short().into(),
        }];
        if let Some(s) = c.strategies.first() {
            rule.push(RuleItem {
                column: first + 1,
                key: "strategy".into(),
                value: s.clone(),
            });
        }
        return Ok(Some(rule));
    };
    let headers = crate::report::format::factor_headers(results);
    let mut rule: Vec<RuleItem> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!(
                "baseline '{spec}': '{item}' is not FACTOR=VALUE (e.g. isolation=rc,clients=16)"
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some(column) = headers.iter().position(|h| h == key) else {
            return Err(format!(
                "baseline '{spec}': unknown factor '{key}' (this study's factors: {})",
                headers.join(", ")
            ));
        };
        if rule.iter().any(|r| r.key == key) {
            return Err(format!("baseline '{spec}': factor '{key}' given twice"));
        }
        let value = if key == "isolation" {
            value
                .parse::<Isolation>()
                .map_err(|e| format!("baseline '{spec}': {e}"))?
                .short()
                .to_string()
        } else {
            value.to_string()
        };
        rule.push(RuleItem {
            column,
            key: key.into(),
            value,
        });
    }
    if rule.is_empty() {
        return Err(format!(
            "baseline '{spec}': no FACTOR=VALUE given (e.g. isolation=rc,clients=16)"
        ));
    }
    Ok(Some(rule))
}

/// Checks `results.config.baseline` against the cells of `results` (the
/// CLI calls it for `isobench report DIR --baseline SPEC`). `Ok` without a
/// spec.
///
/// Errors, naming the factor and listing the valid choices: an item that
/// is not `FACTOR=VALUE`; an unknown factor (the names of
/// [`crate::report::format::factor_headers`]: isolation, strategy, each parameter,
/// clients, and scale, pool_size, rate, max_tries, each setting and pg_bin
/// when they are factors); a factor given twice; an unknown isolation
/// level (rc/rr/ser or the long names); a value that no cell has; values
/// that no single cell has together.
pub fn check_baseline(results: &Results) -> Result<(), String> {
    check_baseline_among(results, &distinct_cells(results))
}

/// [`check_baseline`] against `cells` (e.g. the cells a study is
/// about to run) instead of the cells of the recorded runs.
pub fn check_baseline_among(results: &Results, cells: &[&Cell]) -> Result<(), String> {
    let Some(spec) = &results.config.baseline else {
        return Ok(());
    };
    let Some(rule) = baseline_rule(results)? else {
        return Ok(());
    };
    let values: Vec<Vec<String>> = cells
        .iter()
        .map(|c| crate::report::format::factor_values(results, c))
        .collect();
    for item in &rule {
        if !values.iter().any(|v| item.matches(&v[item.column])) {
            let mut have: Vec<&str> = values.iter().map(|v| v[item.column].as_str()).collect();
            have.sort_unstable();
            have.dedup();
            let have = if have.is_empty() {
                "none: no run recorded".to_string()
            } else {
                have.join(", ")
            };
            return Err(format!(
                "baseline '{spec}': no cell has {}={} (values of {}: {have})",
                item.key, item.value, item.key
            ));
        }
    }
    if !values
        .iter()
        .any(|v| rule.iter().all(|r| r.matches(&v[r.column])))
    {
        return Err(format!(
            "baseline '{spec}': no cell has {} together",
            rule.iter()
                .map(|r| format!("{}={}", r.key, r.value))
                .collect::<Vec<_>>()
                .join(" and ")
        ));
    }
    Ok(())
}

/// How each cell's baseline is chosen, in words for a report's legend:
/// `the cell with isolation=rc and strategy=optimistic (the first
/// isolation level and strategy) at the same other factor values`, `...
/// isolation=rc and clients=16 (baseline spec) ...`, or why there is none.
pub fn baseline_description(results: &Results) -> String {
    if let Err(e) = check_baseline(results) {
        return format!("none ({e})");
    }
    match baseline_rule(results) {
        Err(e) => format!("none ({e})"),
        Ok(None) => "none (no isolation level configured)".into(),
        Ok(Some(rule)) => {
            let what = rule
                .iter()
                .map(|r| format!("{}={}", r.key, r.value))
                .collect::<Vec<_>>()
                .join(" and ");
            let why = if results.config.baseline.is_some() {
                "baseline spec"
            } else if rule.len() > 1 {
                "the first isolation level and strategy"
            } else {
                "the first isolation level"
            };
            format!("the cell with {what} ({why}) at the same other factor values")
        }
    }
}

/// The distinct cells of `results.runs`, in order of first run.
fn distinct_cells(results: &Results) -> Vec<&Cell> {
    let mut cells: Vec<&Cell> = Vec::new();
    for r in &results.runs {
        if !cells.contains(&&r.cell) {
            cells.push(&r.cell);
        }
    }
    cells
}

/// The outcome of [`find_baseline`].
pub(super) enum Found {
    /// The cell is a baseline.
    Itself,
    /// No cell with the wanted factor values was run.
    Nothing,
    /// The index of the baseline cell.
    Cell(usize),
}

/// The baseline of `cells[i]` under `rule`; `values` are the cells'
/// [`crate::report::format::factor_values`].
pub(super) fn find_baseline(
    rule: &[RuleItem],
    cells: &[CellSummary],
    values: &[Vec<String>],
    i: usize,
) -> Found {
    let own = &values[i];
    if rule.iter().all(|r| r.matches(&own[r.column])) {
        return Found::Itself;
    }
    // With the workload as a factor, a parameter one of the two workloads
    // does not have (`n/a`) does not tell them apart.
    let work = cells[i].cell.work_factor.is_some();
    let same = |a: &str, b: &str| {
        a == b || (work && (a == crate::report::format::NA || b == crate::report::format::NA))
    };
    let found = (0..cells.len()).find(|&b| {
        // With the workload or script as a factor, its column compares it.
        (cells[b].cell.workload == cells[i].cell.workload || cells[i].cell.work_factor.is_some())
            && values[b].iter().enumerate().all(|(col, v)| {
                match rule.iter().find(|r| r.column == col) {
                    Some(r) => r.matches(v),
                    None => same(v, &own[col]),
                }
            })
    });
    found.map_or(Found::Nothing, Found::Cell)
}
