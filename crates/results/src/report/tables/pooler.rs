//! The pgbouncer table: what pgbouncer's admin console showed of each
//! cell that ran behind it (`--pooler`), with its note.

use super::cells::cell_value;
use super::table::{Column, Table, Value};
use crate::report::analysis::model::ReportModel;
use crate::report::analysis::server::pooler_summary;
use crate::report::{format::fmt_fixed, format::fmt_ms};

/// What the pgbouncer table shows (Markdown code spans; report.md and
/// report.html).
pub const POOLER_NOTE: &str = "The clients went through a pgbouncer that isobench started for each run \
     (`--pooler`). From its admin console: clients waiting for a server connection and server connections in \
     use (`SHOW POOLS` every second, mean over the samples of the cell's complete runs, and the largest), the \
     longest wait (`maxwait`), and the time clients spent queued per transaction (`SHOW STATS` \
     `total_wait_time` / `total_xact_count` over the measured window) with its share of the transactions' \
     mean latency, which holds it.";

/// pgbouncer's pool per cell that ran behind it (no rows without):
/// clients waiting and server connections in use (`SHOW POOLS`, mean and
/// maximum), the longest wait (ms), and the wait per transaction (ms)
/// against the latency (%, `SHOW STATS`).
pub fn pooler(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("pgbouncer (version · mode · pool)"),
        Column::num("clients waiting (mean)"),
        Column::num("clients waiting (max)"),
        Column::num("server connections active (mean)"),
        Column::num("longest wait (ms)"),
        Column::num("wait per transaction (ms)"),
        Column::num("share of latency (%)"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let Some(p) = pooler_summary(c) else {
            continue;
        };
        t.row(vec![
            cell_value(m, i),
            Value::text(p.setup.clone()),
            Value::num(p.cl_waiting_mean, fmt_fixed(p.cl_waiting_mean, 1)),
            Value::count(p.cl_waiting_max),
            Value::num(p.sv_active_mean, fmt_fixed(p.sv_active_mean, 1)),
            Value::num(p.maxwait_ms, fmt_ms(p.maxwait_ms)),
            Value::num(p.wait_per_xact_ms, fmt_ms(p.wait_per_xact_ms)),
            Value::num(p.wait_share_pct, fmt_fixed(p.wait_share_pct, 1)),
        ]);
    }
    t
}
