//! Server observations, taken on a separate connection while a run
//! measures, never counted in the workload.
//!
//! - `pg_stat_database` for the run's database every sample interval
//!   (default 5 s), stored as deltas and per-second rates. Since PostgreSQL
//!   15 backends flush their counters at most about once a second, so an
//!   interval's figures can lag by up to ~1 s.
//! - Wait events: `pg_stat_activity` of the run's client backends once a
//!   second, counted by `wait_event_type:wait_event` (`CPU` for an active
//!   backend with no wait event). Only the workload's connections count:
//!   those with the clients' `application_name` (`isobench`, or the
//!   user's; [`postgres::clients_application_name`]); observers append
//!   to it ([`postgres::own_session`]).
//! - SIRead locks: `pg_locks` rows with `mode = 'SIReadLock'` every sample
//!   interval (not every second: see [`ObserveOptions::siread_locks`]),
//!   counted by granularity (relation/page/tuple) and by relation.
//! - Standbys, when the server has them: `pg_stat_replication` once a
//!   second, each standby's lags and `sync_state` (`replication`).
//! - pgbouncer, when the clients go through it: its admin console's
//!   `SHOW POOLS` every second and `SHOW STATS` at the window's ends
//!   ([`observe_pooler`]).
//! - Plans: EXPLAIN (no ANALYZE) of every workload statement when the
//!   measured window starts and again when it ends; a statement whose plan
//!   changed shape in between is recorded as a [`PlanChange`].

mod pooler;
mod replication;
pub use pooler::{PoolerInfo, observe_pooler};

use crate::model::{
    CountStat, Plan, PlanChange, STAT_COUNTERS, ServerObservations, SireadLocks, plan_shape,
    stat_interval,
};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_postgres::{Client, Config};

use crate::model::ObserveLevel;
use crate::model::Phase;
use crate::postgres;
use crate::workload::ExplainStatement;

/// Whose backends the wait-event samples count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backends {
    /// isobench's own clients (the `application_name` of
    /// [`postgres::clients_application_name`]).
    Isobench,
    /// Every client backend of the database but the observer's own
    /// (`isobench monitor`: someone else's load).
    All,
}

/// What an observer samples, and how often.
#[derive(Debug, Clone)]
pub struct ObserveOptions {
    /// `ObserveLevel::None`: no observer connection at all.
    pub level: ObserveLevel,
    /// How often `pg_stat_database` (and SIRead locks) are sampled.
    pub sample_interval: Duration,
    /// Whose wait events are counted.
    pub backends: Backends,
    /// Sample SIRead locks (`pg_locks`) at [`ObserveLevel::Full`]. Only
    /// SERIALIZABLE transactions take them, and reading `pg_locks` holds
    /// every lock-manager partition, which on a saturated server costs
    /// about 1.7 % of throughput per sample per second (BENCHMARKS.md),
    /// so they are sampled every `sample_interval`, not every second.
    pub siread_locks: bool,
}

/// Observes database `dbname` through `config` while `phase` says
/// Measuring, returning when it says Draining (or the sender is gone):
/// the plans of `statements` at the start, `pg_stat_database` every
/// sample interval, and at [`ObserveLevel::Full`] wait events once a
/// second and SIRead locks every sample interval. At
/// [`ObserveLevel::None`] it returns at once and opens no connection.
/// Failed queries are recorded in `errors`; they do not stop the run.
pub async fn observe(
    config: Config,
    dbname: String,
    statements: Vec<ExplainStatement>,
    opts: ObserveOptions,
    mut phase: watch::Receiver<Phase>,
) -> ServerObservations {
    let ObserveOptions {
        level,
        sample_interval,
        backends,
        siread_locks,
    } = opts;
    let mut obs = ServerObservations::default();
    if level == ObserveLevel::None {
        return obs;
    }
    let full = level == ObserveLevel::Full;
    let mut config = config;
    let clients = postgres::clients_application_name(&config);
    postgres::own_session(&mut config, "observer");
    let mut db = match postgres::connect(&config).await {
        Ok(c) => c,
        Err(e) => {
            obs.errors.push(e.to_string());
            return obs;
        }
    };
    // Wait for the measured window.
    loop {
        match *phase.borrow_and_update() {
            Phase::Measuring => break,
            Phase::Draining => return obs,
            _ => {}
        }
        if phase.changed().await.is_err() {
            return obs;
        }
    }
    let start = Instant::now();
    obs.plans = explain_all(&db, &statements, &mut obs.errors).await;
    let mut sampler = Sampler {
        all_backends: backends == Backends::All,
        clients,
        ..Sampler::default()
    };
    let mut last = match stat_sample(&db, &dbname).await {
        Ok(s) => Some((Instant::now(), s)),
        Err(e) => {
            obs.errors
                .push(format!("pg_stat_database: {}", postgres::error_text(&e)));
            None
        }
    };
    enum Due {
        Stat,
        Waits,
        Siread,
        Replication,
    }
    let mut standbys = replication::ReplicationSampler::default();
    let mut replication = tokio::time::interval(Duration::from_secs(1));
    let (waits_on, siread_on) = (full, full && siread_locks);
    let mut waits = tokio::time::interval(Duration::from_secs(1));
    let mut siread = tokio::time::interval(sample_interval);
    let mut stat =
        tokio::time::interval_at((Instant::now() + sample_interval).into(), sample_interval);
    let mut reconnects = 0u32;
    loop {
        let due = tokio::select! {
            _ = stat.tick() => Due::Stat,
            _ = waits.tick(), if waits_on => Due::Waits,
            _ = siread.tick(), if siread_on => Due::Siread,
            _ = replication.tick(), if !standbys.off => Due::Replication,
            r = phase.changed() => {
                if r.is_err() || *phase.borrow() != Phase::Measuring { break }
                continue;
            }
        };
        if db.is_closed() {
            // The server ended the connection (terminated, crashed,
            // restarted): open it again, a bounded number of times; the
            // next pg_stat_database sample starts afresh (a crash resets
            // the counters).
            if reconnects >= MAX_RECONNECTS {
                continue;
            }
            reconnects += 1;
            match tokio::time::timeout(Duration::from_secs(2), postgres::connect(&config)).await {
                Ok(Ok(c)) => {
                    db = c;
                    last = None;
                    obs.errors.push(format!(
                        "observer: connection lost, reconnected (try {reconnects} of {MAX_RECONNECTS})"
                    ));
                }
                _ => continue,
            }
        }
        let failed = match due {
            Due::Stat => {
                take_interval(&db, &dbname, start, &mut last, &mut obs).await;
                None
            }
            Due::Waits => sampler
                .sample_waits(&db, &dbname, &mut obs)
                .await
                .err()
                .map(|e| ("wait events", e)),
            Due::Siread => sampler
                .sample_siread(&db, &dbname)
                .await
                .err()
                .map(|e| ("SIRead locks", e)),
            Due::Replication => standbys.sample(&db).await.err().map(|e| {
                // A standby (pg_current_wal_lsn() fails in recovery), or
                // a role that may not read the view: stop asking.
                standbys.off = true;
                ("pg_stat_replication", e)
            }),
        };
        if let Some((what, e)) = failed {
            obs.errors
                .push(format!("{what}: {}", postgres::error_text(&e)));
        }
    }
    // The last, usually partial, interval (skip slivers under 0.5 s).
    if last
        .as_ref()
        .is_some_and(|(t, _)| t.elapsed() >= Duration::from_millis(500))
    {
        take_interval(&db, &dbname, start, &mut last, &mut obs).await;
    }
    sampler.finish(&mut obs);
    standbys.finish(&mut obs);
    // The plans again as the window closes: a plan that changed within the
    // run (autovacuum, statistics, a table that grew) is recorded.
    let end = explain_all(&db, &statements, &mut obs.errors).await;
    obs.plan_changes = plan_changes(&obs.plans, end);
    obs
}

/// Tries to reopen a lost observer connection, one per due sample.
const MAX_RECONNECTS: u32 = 30;

/// EXPLAIN of every statement; failures go to `errors`.
async fn explain_all(
    db: &Client,
    statements: &[ExplainStatement],
    errors: &mut Vec<String>,
) -> Vec<Plan> {
    let mut plans = Vec::new();
    for s in statements {
        match explain(db, &s.sql).await {
            Ok(plan) => plans.push(Plan {
                label: s.label.to_string(),
                sql: s.sql.clone(),
                plan,
            }),
            Err(e) => errors.push(format!("EXPLAIN {}: {}", s.label, postgres::error_text(&e))),
        }
    }
    plans
}

/// The statements of `end` whose plan's shape ([`plan_shape`]) differs
/// from their plan in `start`.
fn plan_changes(start: &[Plan], end: Vec<Plan>) -> Vec<PlanChange> {
    end.into_iter()
        .filter_map(|e| {
            let s = start
                .iter()
                .find(|s| s.label == e.label && s.sql == e.sql)?;
            (plan_shape(&s.plan) != plan_shape(&e.plan)).then(|| PlanChange {
                label: e.label,
                sql: e.sql,
                start: s.plan.clone(),
                end: e.plan,
            })
        })
        .collect()
}

async fn explain(db: &Client, sql: &str) -> Result<String, tokio_postgres::Error> {
    let rows = db.query(&format!("EXPLAIN {sql}"), &[]).await?;
    Ok(rows
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n"))
}

async fn stat_sample(db: &Client, dbname: &str) -> Result<Vec<i64>, tokio_postgres::Error> {
    let sql = format!(
        "SELECT {} FROM pg_stat_database WHERE datname = $1",
        STAT_COUNTERS
            .map(|c| format!("coalesce({c}, 0)::bigint"))
            .join(", ")
    );
    let row = db.query_one(&sql, &[&dbname]).await?;
    Ok((0..STAT_COUNTERS.len())
        .map(|i| row.get::<_, i64>(i))
        .collect())
}

async fn take_interval(
    db: &Client,
    dbname: &str,
    start: Instant,
    last: &mut Option<(Instant, Vec<i64>)>,
    obs: &mut ServerObservations,
) {
    match stat_sample(db, dbname).await {
        Ok(now_values) => {
            let now = Instant::now();
            if let Some((then, prev)) = last.as_ref() {
                obs.stat_database.push(stat_interval(
                    now.duration_since(start).as_secs_f64(),
                    now.duration_since(*then).as_secs_f64(),
                    prev,
                    &now_values,
                ));
            }
            *last = Some((now, now_values));
        }
        Err(e) => obs
            .errors
            .push(format!("pg_stat_database: {}", postgres::error_text(&e))),
    }
}

/// Accumulates the wait-event and SIRead-lock samples.
#[derive(Default)]
struct Sampler {
    /// Count every client backend's wait events, not only isobench's.
    all_backends: bool,
    /// The `application_name` of isobench's clients.
    clients: String,
    siread_samples: u64,
    granularity: BTreeMap<String, (u64, u64)>, // (sum, max)
    relation: BTreeMap<String, (u64, u64)>,
}

impl Sampler {
    /// One `pg_stat_activity` sample of the wait events.
    async fn sample_waits(
        &mut self,
        db: &Client,
        dbname: &str,
        obs: &mut ServerObservations,
    ) -> Result<(), tokio_postgres::Error> {
        let waits = db
            .query(
                "SELECT CASE WHEN wait_event IS NULL THEN 'CPU' ELSE wait_event_type || ':' || wait_event END,
                        count(*)
                   FROM pg_stat_activity
                  WHERE datname = $1 AND backend_type = 'client backend'
                    AND (application_name = $3 OR $2)
                    AND pid <> pg_backend_pid()
                    AND (wait_event IS NOT NULL OR state = 'active')
                  GROUP BY 1",
                &[&dbname, &self.all_backends, &self.clients],
            )
            .await?;
        obs.wait_events.samples += 1;
        for r in waits {
            *obs.wait_events.counts.entry(r.get(0)).or_default() += r.get::<_, i64>(1) as u64;
        }
        Ok(())
    }

    /// One `pg_locks` sample of the SIRead locks, by granularity and
    /// relation.
    async fn sample_siread(
        &mut self,
        db: &Client,
        dbname: &str,
    ) -> Result<(), tokio_postgres::Error> {
        let locks = db
            .query(
                "SELECT locktype, coalesce(relation::regclass::text, '?'), count(*)
                   FROM pg_locks
                  WHERE mode = 'SIReadLock'
                    AND database = (SELECT oid FROM pg_database WHERE datname = $1)
                  GROUP BY 1, 2",
                &[&dbname],
            )
            .await?;
        self.siread_samples += 1;
        let mut per_gran: BTreeMap<String, u64> = BTreeMap::new();
        let mut per_rel: BTreeMap<String, u64> = BTreeMap::new();
        for r in locks {
            let (gran, rel, n): (String, String, i64) = (r.get(0), r.get(1), r.get(2));
            *per_gran.entry(gran.clone()).or_default() += n as u64;
            *per_rel.entry(format!("{rel} ({gran})")).or_default() += n as u64;
        }
        for (acc, now) in [
            (&mut self.granularity, per_gran),
            (&mut self.relation, per_rel),
        ] {
            for (k, n) in now {
                let e = acc.entry(k).or_default();
                e.0 += n;
                e.1 = e.1.max(n);
            }
        }
        Ok(())
    }

    fn finish(self, obs: &mut ServerObservations) {
        let n = self.siread_samples.max(1) as f64;
        let to_stat = |m: BTreeMap<String, (u64, u64)>| {
            m.into_iter()
                .map(|(k, (sum, max))| {
                    (
                        k,
                        CountStat {
                            mean: sum as f64 / n,
                            max,
                        },
                    )
                })
                .collect()
        };
        obs.siread_locks = SireadLocks {
            samples: self.siread_samples,
            by_granularity: to_stat(self.granularity),
            by_relation: to_stat(self.relation),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_deltas_and_rates() {
        let prev: Vec<i64> = (0..12).collect();
        let now: Vec<i64> = (0..12).map(|i| i + 10 * i).collect();
        let s = stat_interval(5.0, 2.0, &prev, &now);
        assert_eq!(s.delta["xact_commit"], 0);
        assert_eq!(s.delta["xact_rollback"], 10);
        assert_eq!(s.rate["xact_rollback"], 5.0);
        assert_eq!(s.delta["temp_bytes"], 110);
        assert_eq!(s.rate.len(), STAT_COUNTERS.len());
    }

    #[test]
    fn a_plan_change_is_a_change_of_shape_not_of_estimates() {
        let plan = |label: &str, text: &str| Plan {
            label: label.into(),
            sql: format!("UPDATE {label}"),
            plan: text.into(),
        };
        let start = vec![
            plan(
                "branches",
                "Update on b  (cost=0.00..1.01 rows=1 width=10)\n  ->  Seq Scan on b  (cost=0.00..1.01 rows=1 width=10)",
            ),
            plan(
                "tellers",
                "Update on t  (cost=0.00..1.12 rows=1 width=10)\n  ->  Seq Scan on t  (cost=0.00..1.12 rows=1 width=10)",
            ),
        ];
        let end = vec![
            // Other estimates, same shape: no change.
            plan(
                "branches",
                "Update on b  (cost=0.00..9.99 rows=7 width=10)\n  ->  Seq Scan on b  (cost=0.00..9.99 rows=7 width=10)",
            ),
            plan(
                "tellers",
                "Update on t  (cost=0.14..8.16 rows=1 width=10)\n  ->  Index Scan using t_pkey on t  (cost=0.14..8.16 rows=1 width=10)",
            ),
        ];
        let changes = plan_changes(&start, end);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].label, "tellers");
        assert!(changes[0].start.contains("Seq Scan") && changes[0].end.contains("Index Scan"));
    }
}
