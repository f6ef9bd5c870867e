//! pgbouncer's view of a run, through its admin console (database
//! `pgbouncer`, simple protocol only; pgbouncer documentation, "Admin
//! console"), taken while the run measures:
//!
//! - `SHOW POOLS` once a second, the run database's row: clients waiting
//!   for a server connection (`cl_waiting`) and linked to one
//!   (`cl_active`), server connections in use (`sv_active`) and idle
//!   (`sv_idle`), and how long the oldest waiting client has waited
//!   (`maxwait`, `maxwait_us`); gauges, summed up as mean and maximum.
//! - `SHOW STATS` when the measured window opens and when it closes, the
//!   run database's row: its totals (`total_xact_count`,
//!   `total_query_count`, `total_wait_time`, `total_xact_time`,
//!   `total_query_time`, µs) are counters, so their differences are the
//!   window's. pgbouncer counts a transaction (and a query) when the
//!   client sends its first message, before it waits for a server
//!   connection (`client.c`), so the window's count is of the transactions
//!   that *began* in it: in a steady state about the clients' commits, but
//!   a window that opens with the clients (no warm-up) while every client
//!   is queued counts each queued client's transaction again at its end.
//!   pgbouncer's own `avg_*` columns average over its `stats_period` (60
//!   s), not over the window, and are not used.
//!
//! Several pgbouncer processes on one port (`--pooler-processes`) are
//! observed each through its own admin console, and their rows summed:
//! gauges and counters added up, `maxwait` the longest of them; so the
//! figures are those of the pool as a whole.
//!
//! The wait is what a client spent queued in pgbouncer for a server
//! connection; a transaction's latency as the clients measure it holds it,
//! which is what [`PoolerObservations::wait_per_xact_ms`] is compared
//! with in the report's finding.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{Client, Config, SimpleQueryMessage};

use crate::model::{CountStatF, Phase, PoolerObservations};
use crate::postgres;

/// What the observer is told about the pgbouncer it watches.
#[derive(Debug, Clone)]
pub struct PoolerInfo {
    /// `pgbouncer --version`'s version.
    pub version: String,
    /// `pool_mode`.
    pub pool_mode: String,
    /// `default_pool_size`.
    pub pool_size: u32,
}

/// Observes pgbouncer's pool of database `dbname` through the admin
/// consoles `admins` (one per process) while `phase` says Measuring (see
/// the module docs),
/// returning when it says Draining (or the sender is gone). Failed
/// queries are returned as errors next to what was observed; they do not
/// stop the run. `None` when the window never opened or the console never
/// answered.
pub async fn observe_pooler(
    admins: Vec<Config>,
    dbname: String,
    info: PoolerInfo,
    mut phase: watch::Receiver<Phase>,
) -> (Option<PoolerObservations>, Vec<String>) {
    let mut errors = Vec::new();
    let mut db = Vec::new();
    for (i, admin) in admins.iter().enumerate() {
        match postgres::connect(admin).await {
            Ok(c) => db.push(c),
            Err(e) => {
                errors.push(format!("pgbouncer admin console (process {i}): {e}"));
                return (None, errors);
            }
        }
    }
    loop {
        match *phase.borrow_and_update() {
            Phase::Measuring => break,
            Phase::Draining => return (None, errors),
            _ => {}
        }
        if phase.changed().await.is_err() {
            return (None, errors);
        }
    }
    let mut err = |what: &str, e: String| errors.push(format!("pgbouncer {what}: {e}"));
    let start = match row_of(&db, "SHOW STATS", &dbname).await {
        Ok(r) => r,
        Err(e) => {
            err("SHOW STATS", e);
            None
        }
    };
    tracing::debug!("pgbouncer stats at the window's start: {start:?}");
    let mut gauges = Gauges::default();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            r = phase.changed() => {
                if r.is_err() || *phase.borrow() != Phase::Measuring { break }
                continue;
            }
        }
        match row_of(&db, "SHOW POOLS", &dbname).await {
            Ok(Some(row)) => gauges.add(&row),
            Ok(None) => gauges.add(&BTreeMap::new()),
            Err(e) => err("SHOW POOLS", e),
        }
    }
    let end = match row_of(&db, "SHOW STATS", &dbname).await {
        Ok(r) => r,
        Err(e) => {
            err("SHOW STATS", e);
            None
        }
    };
    tracing::debug!("pgbouncer stats at the window's end: {end:?}");
    let empty = BTreeMap::new();
    let obs = window(
        &info,
        &gauges,
        start.as_ref().unwrap_or(&empty),
        end.as_ref().unwrap_or(&empty),
    );
    (Some(obs), errors)
}

/// One row of an admin console's answer, by column name.
type ConsoleRow = BTreeMap<String, String>;

/// The rows of `command`'s answers whose `database` is `dbname`, one from
/// each of the consoles `dbs`, summed ([`sum_rows`]); `None` when none
/// has one (pgbouncer shows a pool once a client used it).
async fn row_of(dbs: &[Client], command: &str, dbname: &str) -> Result<Option<ConsoleRow>, String> {
    let mut rows = Vec::new();
    for db in dbs {
        if let Some(r) = one_row(db, command, dbname).await? {
            rows.push(r);
        }
    }
    Ok((!rows.is_empty()).then(|| sum_rows(&rows)))
}

/// Rows of several processes as one: every numeric column added up, but
/// `maxwait` (and `maxwait_us`) the longest wait of them; other columns
/// the first row's.
fn sum_rows(rows: &[ConsoleRow]) -> ConsoleRow {
    let mut out = rows[0].clone();
    for (column, value) in out.iter_mut() {
        if column == "maxwait" || column == "maxwait_us" {
            continue;
        }
        if value.parse::<u64>().is_ok() {
            *value = rows.iter().map(|r| num(r, column)).sum::<u64>().to_string();
        }
    }
    let longest = rows
        .iter()
        .max_by_key(|r| num(r, "maxwait") * 1_000_000 + num(r, "maxwait_us"))
        .expect("one row at least");
    for c in ["maxwait", "maxwait_us"] {
        if let Some(v) = longest.get(c) {
            out.insert(c.to_string(), v.clone());
        }
    }
    out
}

/// The row of `command`'s answer on console `db` whose `database` is
/// `dbname`.
async fn one_row(db: &Client, command: &str, dbname: &str) -> Result<Option<ConsoleRow>, String> {
    let messages = db
        .simple_query(command)
        .await
        .map_err(|e| postgres::error_text(&e))?;
    for m in messages {
        if let SimpleQueryMessage::Row(r) = m {
            if r.get("database") != Some(dbname) {
                continue;
            }
            let row = r
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name().to_string(), r.get(i).unwrap_or("").to_string()))
                .collect();
            return Ok(Some(row));
        }
    }
    Ok(None)
}

/// A column's value as a number (0 when absent or not a number).
fn num(row: &ConsoleRow, column: &str) -> u64 {
    row.get(column).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The `SHOW POOLS` gauges summed over the samples.
#[derive(Debug, Default)]
struct Gauges {
    samples: u64,
    /// Per gauge: (sum, max).
    cl_waiting: (u64, u64),
    cl_active: (u64, u64),
    sv_active: (u64, u64),
    sv_idle: (u64, u64),
    /// The longest `maxwait` seen, µs.
    maxwait_us: u64,
}

impl Gauges {
    fn add(&mut self, row: &ConsoleRow) {
        self.samples += 1;
        for (acc, column) in [
            (&mut self.cl_waiting, "cl_waiting"),
            (&mut self.cl_active, "cl_active"),
            (&mut self.sv_active, "sv_active"),
            (&mut self.sv_idle, "sv_idle"),
        ] {
            let v = num(row, column);
            acc.0 += v;
            acc.1 = acc.1.max(v);
        }
        // maxwait is whole seconds, maxwait_us the microseconds beyond.
        let wait = num(row, "maxwait") * 1_000_000 + num(row, "maxwait_us");
        self.maxwait_us = self.maxwait_us.max(wait);
    }

    fn stat(&self, (sum, max): (u64, u64)) -> CountStatF {
        CountStatF {
            mean: if self.samples > 0 {
                sum as f64 / self.samples as f64
            } else {
                0.0
            },
            max,
        }
    }
}

/// The window's observations from the gauges and the `SHOW STATS` rows at
/// its `start` and `end`.
fn window(
    info: &PoolerInfo,
    gauges: &Gauges,
    start: &ConsoleRow,
    end: &ConsoleRow,
) -> PoolerObservations {
    let delta = |c: &str| num(end, c).saturating_sub(num(start, c));
    let xacts = delta("total_xact_count");
    let queries = delta("total_query_count");
    let wait_us = delta("total_wait_time");
    let per = |us: u64, n: u64| {
        if n > 0 {
            us as f64 / n as f64 / 1000.0
        } else {
            0.0
        }
    };
    PoolerObservations {
        version: info.version.clone(),
        pool_mode: info.pool_mode.clone(),
        pool_size: info.pool_size,
        samples: gauges.samples,
        cl_waiting: gauges.stat(gauges.cl_waiting),
        cl_active: gauges.stat(gauges.cl_active),
        sv_active: gauges.stat(gauges.sv_active),
        sv_idle: gauges.stat(gauges.sv_idle),
        maxwait_ms: gauges.maxwait_us as f64 / 1000.0,
        xacts,
        queries,
        wait_ms: wait_us as f64 / 1000.0,
        wait_per_xact_ms: per(wait_us, xacts),
        wait_per_query_ms: per(wait_us, queries),
        xact_time_ms: per(delta("total_xact_time"), xacts),
        query_time_ms: per(delta("total_query_time"), queries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pairs: &[(&str, u64)]) -> ConsoleRow {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn processes_rows_are_added_up_and_the_longest_wait_kept() {
        let mut a = row(&[
            ("cl_waiting", 10),
            ("sv_active", 17),
            ("maxwait", 1),
            ("maxwait_us", 900_000),
            ("total_xact_count", 100),
        ]);
        a.insert("database".into(), "run".into());
        let b = row(&[
            ("cl_waiting", 12),
            ("sv_active", 16),
            ("maxwait", 2),
            ("maxwait_us", 5),
            ("total_xact_count", 50),
        ]);
        let s = sum_rows(&[a, b]);
        assert_eq!(num(&s, "cl_waiting"), 22);
        assert_eq!(num(&s, "sv_active"), 33);
        assert_eq!(num(&s, "total_xact_count"), 150);
        assert_eq!((num(&s, "maxwait"), num(&s, "maxwait_us")), (2, 5));
        assert_eq!(s["database"], "run");
    }

    #[test]
    fn gauges_average_over_samples_and_stats_are_window_differences() {
        let mut g = Gauges::default();
        g.add(&row(&[
            ("cl_waiting", 10),
            ("sv_active", 5),
            ("maxwait", 0),
            ("maxwait_us", 1500),
        ]));
        g.add(&row(&[
            ("cl_waiting", 30),
            ("sv_active", 5),
            ("maxwait", 2),
            ("maxwait_us", 250),
        ]));
        g.add(&row(&[("cl_waiting", 20), ("sv_active", 4)]));
        let info = PoolerInfo {
            version: "1.18.0".into(),
            pool_mode: "transaction".into(),
            pool_size: 5,
        };
        let start = row(&[
            ("total_xact_count", 100),
            ("total_query_count", 700),
            ("total_wait_time", 1_000_000),
            ("total_xact_time", 50_000),
            ("total_query_time", 35_000),
        ]);
        let end = row(&[
            ("total_xact_count", 1100),
            ("total_query_count", 7700),
            ("total_wait_time", 3_000_000),
            ("total_xact_time", 2_050_000),
            ("total_query_time", 735_000),
        ]);
        let o = window(&info, &g, &start, &end);
        assert_eq!(o.samples, 3);
        assert_eq!(
            o.cl_waiting,
            CountStatF {
                mean: 20.0,
                max: 30
            }
        );
        assert_eq!(o.sv_active.max, 5);
        assert!((o.sv_active.mean - 14.0 / 3.0).abs() < 1e-12);
        assert_eq!(o.maxwait_ms, 2000.25);
        assert_eq!((o.xacts, o.queries), (1000, 7000));
        assert_eq!(o.wait_ms, 2000.0);
        assert_eq!(o.wait_per_xact_ms, 2.0);
        assert!((o.wait_per_query_ms - 2000.0 / 7000.0).abs() < 1e-12);
        assert_eq!(o.xact_time_ms, 2.0);
        assert_eq!(o.query_time_ms, 0.1);
        // No transactions: no division by zero.
        let o = window(&info, &Gauges::default(), &start, &start);
        assert_eq!((o.wait_per_xact_ms, o.cl_waiting.mean), (0.0, 0.0));
    }
}
