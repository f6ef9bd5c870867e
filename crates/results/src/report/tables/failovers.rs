//! The failovers table (issue #50): per cell whose runs went through a
//! failover, the acknowledged commits lost per failover with their
//! interval, the write unavailability and the promotion time
//! ([`crate::report::analysis::failover`]).

use super::cells::cell_value;
use super::table::{Column, Table, Value};
use crate::report::analysis::failover::failovers as cell_failovers;
use crate::report::analysis::model::ReportModel;
use crate::report::{format::NA, format::fmt_fixed};

/// What the failovers table shows (report.md and report.html).
pub const FAILOVERS_NOTE: &str = "Every run of these cells crashed the primary node (`--fault failover@T`: \
     SIGKILL of its keeper and postmaster) and the failover manager promoted the standby. Lost: \
     acknowledged commits missing on the new primary (the workload's ledger against its data: TPC-B's \
     `history-matches-commits`, list-append's `acknowledged-appends-kept`), in all and per failover with the exact 95 % Poisson interval. \
     Unavailable: from the kill to the clients' first commit after it; promoted: from the kill to the \
     monitor naming the new primary; each the mean over the failovers ± the 95 % t-interval. Two \
     primaries: writes another node than the new primary acknowledged after the new primary's first \
     (split brain), summed over the failovers; n/a with one host in the DSN.";

/// Per cell with failovers (no rows without).
pub fn failovers(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("failovers"),
        Column::num("lost"),
        Column::num("lost per failover"),
        Column::text("95 % CI"),
        Column::num("unavailable (s)"),
        Column::num("± (s)"),
        Column::num("promoted after (s)"),
        Column::num("two primaries"),
    ]);
    for f in cell_failovers(m) {
        let (lost, per, ci) = match f.lost {
            Some(r) => (
                Value::count(r.events),
                Value::num(r.rate, fmt_fixed(r.rate, 2)),
                Value::text(format!("{:.2} to {:.2}", r.low, r.high)),
            ),
            None => (Value::text(NA), Value::text(NA), Value::text(NA)),
        };
        let mean = |s: Option<&crate::stats::Summary>| match s {
            Some(s) => Value::num(s.mean, fmt_fixed(s.mean, 2)),
            None => Value::text(NA),
        };
        let pm = match &f.unavailable_s {
            Some(s) if s.n >= 2 => Value::num(s.ci95, fmt_fixed(s.ci95, 2)),
            _ => Value::text(NA),
        };
        t.row(vec![
            cell_value(m, f.cell),
            Value::count(f.failovers),
            lost,
            per,
            ci,
            mean(f.unavailable_s.as_ref()),
            pm,
            mean(f.promoted_s.as_ref()),
            match f.split_brain {
                Some((w, _)) => Value::count(w),
                None => Value::text(NA),
            },
        ]);
    }
    t
}
