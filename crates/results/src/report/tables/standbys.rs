//! The standbys table: what the primary's `pg_stat_replication` showed
//! of each standby while the runs of a cell measured (issue #50), with
//! its note. No rows without standbys.

use super::cells::cell_value;
use super::table::{Column, Table, Value};
use crate::model::LagStat;
use crate::report::analysis::model::ReportModel;
use crate::report::{format::fmt_fixed, format::fmt_ms};

/// What the standbys table shows (Markdown code spans; report.md and
/// report.html).
pub const STANDBYS_NOTE: &str = "Each standby as the primary's `pg_stat_replication` showed it once a \
     second while the runs measured (complete runs of the cell): its `sync_state` (seen most often), its \
     `write_lag`, `flush_lag` and `replay_lag` (the time from a commit's WAL being flushed on the primary \
     to the standby's report that it wrote, flushed, applied it; PostgreSQL leaves them empty once an idle \
     standby has caught up, so those seconds are not counted), as the mean of the runs' means and the \
     largest sample, and the WAL not yet applied (`pg_current_wal_lsn() - replay_lsn`). A synchronous \
     standby's `replay_lag` is what `synchronous_commit = remote_apply` adds to every commit.";

/// Per cell and standby: samples, sync state, the three lags (ms) and the
/// WAL behind (kB), mean and max.
pub fn standbys(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("standby"),
        Column::text("sync_state"),
        Column::num("samples"),
        Column::num("write lag (ms)"),
        Column::num("flush lag (ms)"),
        Column::num("replay lag (ms)"),
        Column::num("replay lag max (ms)"),
        Column::num("WAL behind (kB)"),
        Column::num("WAL behind max (kB)"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let mut names: Vec<&str> = Vec::new();
        for r in c.complete_runs() {
            for s in &r.server.standbys {
                if !names.contains(&s.name.as_str()) {
                    names.push(&s.name);
                }
            }
        }
        for name in names {
            let seen: Vec<&crate::model::StandbyObservation> = c
                .complete_runs()
                .flat_map(|r| r.server.standbys.iter().filter(|s| s.name == name))
                .collect();
            let samples: u64 = seen.iter().map(|s| s.samples).sum();
            let state = seen
                .iter()
                .max_by_key(|s| s.samples)
                .map(|s| s.sync_state.clone())
                .unwrap_or_default();
            let lag = |f: fn(&crate::model::StandbyObservation) -> LagStat| {
                let with: Vec<LagStat> = seen
                    .iter()
                    .map(|s| f(s))
                    .filter(|l| l.samples > 0)
                    .collect();
                if with.is_empty() {
                    return (f64::NAN, f64::NAN);
                }
                let mean = with.iter().map(|l| l.mean).sum::<f64>() / with.len() as f64;
                let max = with.iter().map(|l| l.max).fold(f64::NEG_INFINITY, f64::max);
                (mean, max)
            };
            let (write, _) = lag(|s| s.write_lag_ms);
            let (flush, _) = lag(|s| s.flush_lag_ms);
            let (replay, replay_max) = lag(|s| s.replay_lag_ms);
            let (bytes, bytes_max) = lag(|s| s.replay_lag_bytes);
            let ms = |v: f64| Value::num(v, fmt_ms(v));
            let kb = |v: f64| Value::num(v / 1024.0, fmt_fixed(v / 1024.0, 1));
            t.row(vec![
                cell_value(m, i),
                Value::text(name),
                Value::text(state),
                Value::count(samples),
                ms(write),
                ms(flush),
                ms(replay),
                ms(replay_max),
                kb(bytes),
                kb(bytes_max),
            ]);
        }
    }
    t
}
