//! The Per host section's table: a DSN with several hosts
//! (`--host-policy`), each run's connections, commits, tps and latency
//! per host.

use super::cells::run_cell_value;
use crate::report::analysis::model::ReportModel;
use crate::report::tables::table::{Column, Mark, Table, Value};
use crate::report::{format::fmt_fixed, format::fmt_ms, format::fmt_tps};

/// Per run and host of the DSN, in execution order and the DSN's order:
/// connections (and those the host refused, which went to the next
/// host), committed transactions and their share of the run's, tps, p50
/// and p99 latency (ms), and transactions that gave up. Empty when no run
/// had more than one host.
pub fn hosts(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::num("run"),
        Column::text("cell"),
        Column::num("repetition"),
        Column::text("host"),
        Column::num("clients"),
        Column::num("refused"),
        Column::num("committed"),
        Column::num("% of run"),
        Column::num("tps"),
        Column::num("p50 (ms)"),
        Column::num("p99 (ms)"),
        Column::num("failed"),
    ]);
    for run in m.results.runs.iter().filter(|r| r.hosts.len() > 1) {
        for h in &run.hosts {
            let share =
                (run.committed > 0).then(|| 100.0 * h.committed as f64 / run.committed as f64);
            let refused = Value::count(h.refused.into());
            t.row(vec![
                Value::count(run.index.into()),
                run_cell_value(m, &run.cell),
                Value::count(run.repetition.into()),
                Value::code(h.host.clone()),
                Value::count(h.clients.into()),
                if h.refused > 0 {
                    refused.mark(Mark::Bad)
                } else {
                    refused
                },
                Value::count(h.committed),
                Value::opt(
                    share,
                    share.map_or_else(|| crate::report::format::NA.into(), |s| fmt_fixed(s, 1)),
                ),
                Value::num(h.tps, fmt_tps(h.tps)),
                Value::num(h.p50_ms, fmt_ms(h.p50_ms)),
                Value::num(h.p99_ms, fmt_ms(h.p99_ms)),
                Value::count(h.failed),
            ]);
        }
    }
    t
}

/// The Per host section's note: the study's host policy (when
/// results.json records it) and what the table counts.
pub fn host_note(m: &ReportModel) -> String {
    let policy = m.results.config.target_options.host_policy.map_or_else(
        || "by --host-policy".to_string(),
        |p| format!("by --host-policy {}", p.name()),
    );
    format!(
        "Clients over a cluster: each run's connections (a client's own, or with a pool the pool's) spread \
         over the DSN's hosts {policy}; a transaction counts on the host of the connection that ran its last \
         attempt. refused: connections that tried the host first and went to the next one, since this one \
         refused them."
    )
}
