//! The invariant checks' tables: per cell (runs, violations, per 1,000
//! commits, an example) and every check of every run.

use super::cells::{cell_value, run_cell_value};
use super::table::{Column, Mark, Table, Value};
use crate::report::analysis::model::ReportModel;
use crate::report::{format::NA, format::fmt_fixed};

/// Every invariant check of every run, interrupted ones included.
pub fn invariant_checks(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::num("run"),
        Column::text("cell"),
        Column::num("repetition"),
        Column::text("invariant"),
        Column::text("result"),
        Column::long("detail"),
    ]);
    for run in &m.results.runs {
        for i in &run.invariants {
            t.row(vec![
                Value::count(run.index.into()),
                run_cell_value(m, &run.cell),
                Value::count(run.repetition.into()),
                Value::text(i.name.clone()),
                if i.ok {
                    "ok".into()
                } else {
                    Value::text(format!("VIOLATED ({})", i.violations)).mark(Mark::Violation)
                },
                Value::code(i.detail.clone()),
            ]);
        }
    }
    t
}

/// Per cell and invariant: how many runs checked it, how many violated
/// it, the violations (anomalies) in all, per 1,000 transactions committed
/// in those runs' measured windows, and an example.
pub fn invariant_summary(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("invariant"),
        Column::text("result"),
        Column::num("runs checked"),
        Column::num("violations"),
        Column::num("per 1,000 commits"),
        Column::long("example (first violation, else last check)"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let mut names: Vec<&str> = Vec::new();
        for run in &c.runs {
            for inv in &run.invariants {
                if !names.contains(&inv.name.as_str()) {
                    names.push(&inv.name);
                }
            }
        }
        for name in names {
            let checks: Vec<_> = c
                .runs
                .iter()
                .flat_map(|run| run.invariants.iter().filter(|x| x.name == name))
                .collect();
            let bad: Vec<_> = checks.iter().filter(|x| !x.ok).collect();
            let violations: u64 = bad.iter().map(|x| x.violations).sum();
            let committed: u64 = c
                .runs
                .iter()
                .filter(|run| run.invariants.iter().any(|x| x.name == name))
                .map(|run| run.committed)
                .sum();
            let rate = (committed > 0).then(|| 1000.0 * violations as f64 / committed as f64);
            let result = if bad.is_empty() {
                Value::text("ok").mark(Mark::Good)
            } else {
                let text = format!("VIOLATED in {} of {} runs", bad.len(), checks.len());
                Value::text(text).mark(Mark::Bad)
            };
            let example = bad
                .first()
                .map(|x| &x.detail)
                .or(checks.last().map(|x| &x.detail))
                .map_or_else(Value::default, |d| Value::code(d.clone()));
            t.row(vec![
                cell_value(m, i),
                Value::text(name),
                result,
                Value::count(checks.len() as u64),
                Value::count(violations),
                Value::opt(rate, rate.map_or_else(|| NA.into(), |r| fmt_fixed(r, 2))),
                example,
            ]);
        }
    }
    t
}
