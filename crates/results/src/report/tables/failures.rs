//! Failed transactions: by SQLSTATE per cell (with the swallowed ones),
//! and failed attempts by reason and statement.

use std::collections::BTreeMap;

use super::table::{Column, Mark, Table, Value};
use super::{cell_value, opt_value};
use crate::model::sqlstate_name;
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::model::ReportModel;
use crate::report::{format::NA, format::fmt_opt};

/// Σ over a cell's complete runs: (transactions, measured s).
pub fn failure_totals(c: &CellSummary) -> (u64, f64) {
    let mut tx = 0;
    let mut secs = 0.0;
    for r in c.complete_runs() {
        tx += r.committed + r.user_aborts + r.unknown_outcome + r.failed.values().sum::<u64>();
        secs += r.duration_s;
    }
    (tx, secs)
}

/// Failed transactions by SQLSTATE per cell, summed over complete runs;
/// as rates in detail columns; then a cell's swallowed failures
/// ([`SWALLOWED`]) when it has any.
pub fn failures(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("SQLSTATE"),
        Column::text("name"),
        Column::num("failed (transactions)"),
        Column::num("failed (tx/s)").detail(),
        Column::num("failed (% of transactions)").detail(),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let (tx, secs) = failure_totals(c);
        for (code, n) in &c.failures {
            let per_s = (secs > 0.0).then(|| *n as f64 / secs);
            let pct = (tx > 0).then(|| 100.0 * *n as f64 / tx as f64);
            t.row(vec![
                cell_value(m, i),
                Value::text(code.clone()),
                Value::text(sqlstate_name(code)),
                Value::count(*n),
                opt_value(per_s, 2),
                opt_value(pct, 2),
            ]);
        }
        if c.swallowed > 0 {
            // Counted as committed, so not among the transactions above:
            // as a share of all transactions, the reported ones.
            let n = c.swallowed;
            t.row(vec![
                cell_value(m, i),
                Value::text(NA),
                Value::text(SWALLOWED),
                Value::count(n).mark(Mark::Bad),
                opt_value((secs > 0.0).then(|| n as f64 / secs), 2),
                opt_value((tx > 0).then(|| 100.0 * n as f64 / tx as f64), 2),
            ]);
        }
    }
    t
}

/// What the Failures tables say about [`SWALLOWED`] rows.
pub const SWALLOWED_NOTE: &str = "Swallowed: transactions counted as committed in the measured window \
     whose work is not in the database (the history check found their pgbench_history rows missing: \
     typically a function that caught the serialization failure and returned normally); no SQLSTATE \
     reached the client, and they are not in failed (%).";

/// The name of the Failures row of transactions counted as committed whose
/// work is not in the database ([`CellSummary::swallowed`]).
pub const SWALLOWED: &str = "swallowed (counted as committed, work not in the database)";

/// What the failures-by-reason table counts (plain text, for every
/// renderer).
pub const REASONS_NOTE: &str = "Attempts that failed with a server error, retried ones included, summed over complete \
     runs, by transaction type, the statement that raised the error, its SQLSTATE and the reason PostgreSQL \
     gave: for a serialization failure the reason code of its DETAIL (predicate.c; transaction ids \
     stripped; a pivot is the middle transaction of a dangerous structure of two read-write conflicts), or \
     concurrent update / concurrent delete for a write-write conflict. Share: of the cell's failed attempts \
     with that SQLSTATE. Gave up: transactions whose last error it was (counted in Failures by SQLSTATE).";

/// Per cell, transaction type, statement, SQLSTATE and reason: failed
/// attempts, their share of the cell's failed attempts with that SQLSTATE
/// (%), and the transactions that gave up after it. Empty when no attempt
/// failed (or the results predate failure reasons).
pub fn reasons(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("transaction"),
        Column::long("statement"),
        Column::text("SQLSTATE"),
        Column::text("reason"),
        Column::num("failed attempts"),
        Column::num("share of the SQLSTATE (%)"),
        Column::num("gave up (transactions)"),
    ]);
    for (i, tallies) in m.failure_reasons.iter().enumerate() {
        let mut per_code: BTreeMap<&str, u64> = BTreeMap::new();
        for r in tallies {
            *per_code.entry(r.sqlstate.as_str()).or_default() += r.attempts;
        }
        for r in tallies {
            let total = per_code[r.sqlstate.as_str()];
            let share = (total > 0).then(|| 100.0 * r.attempts as f64 / total as f64);
            t.row(vec![
                cell_value(m, i),
                Value::text(r.tx_type.clone()),
                r.statement
                    .as_ref()
                    .map_or_else(|| Value::text(NA), |s| Value::code(s.clone())),
                Value::text(r.sqlstate.clone()).title(sqlstate_name(&r.sqlstate)),
                Value::text(r.reason.clone().unwrap_or_else(|| NA.into())),
                Value::count(r.attempts),
                Value::opt(share, fmt_opt(share, 1)),
                Value::count(r.failed),
            ]);
        }
    }
    t
}
