//! What the observer saw of the server during a run's measured window.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The `pg_stat_database` counters isobench samples.
pub const STAT_COUNTERS: [&str; 12] = [
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "conflicts",
    "deadlocks",
    "temp_bytes",
];

/// One `pg_stat_database` sample interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatInterval {
    /// End of the interval, s since the measured window began.
    pub t_s: f64,
    /// Length of the interval, s.
    pub duration_s: f64,
    /// Counter increase over the interval, by counter name.
    pub delta: BTreeMap<String, i64>,
    /// `delta / duration_s`, per second.
    pub rate: BTreeMap<String, f64>,
}

/// Mean and maximum of a count over samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CountStat {
    pub mean: f64,
    pub max: u64,
}

/// SIRead predicate locks seen over the samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SireadLocks {
    pub samples: u64,
    /// By granularity: `relation`, `page`, `tuple`.
    pub by_granularity: BTreeMap<String, CountStat>,
    /// By `relation (granularity)`, e.g. `pgbench_branches (relation)`.
    pub by_relation: BTreeMap<String, CountStat>,
}

/// Wait events over the samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitEvents {
    pub samples: u64,
    /// Backend observations, by `type:event` (or `CPU`).
    pub counts: BTreeMap<String, u64>,
}

/// The plan of one workload statement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub label: String,
    pub sql: String,
    pub plan: String,
}

/// A workload statement whose plan changed between the start and the end
/// of a run's measured window (compared by [`plan_shape`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanChange {
    pub label: String,
    pub sql: String,
    /// EXPLAIN when the window started.
    pub start: String,
    /// EXPLAIN when it ended.
    pub end: String,
}

/// A plan's lines without the planner's estimates (`  (cost=...)`) and
/// arrows: what the executor does, not what it expected. Two plans with
/// equal shapes differ only in estimates.
pub fn plan_shape(plan: &str) -> Vec<String> {
    plan.lines()
        .map(|l| {
            let l = l.trim().trim_start_matches("->").trim();
            l.split("  (cost=").next().unwrap_or(l).to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// Everything observed on the server during one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerObservations {
    pub stat_database: Vec<StatInterval>,
    pub wait_events: WaitEvents,
    pub siread_locks: SireadLocks,
    /// EXPLAIN of each workload statement when the window started.
    pub plans: Vec<Plan>,
    /// Statements whose plan was different when the window ended.
    #[serde(default)]
    pub plan_changes: Vec<PlanChange>,
    /// Sampling problems (a failed query does not stop the run).
    pub errors: Vec<String>,
    /// The run's connection pooler (`--pooler pgbouncer:...`), as its
    /// admin console showed it; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler: Option<super::PoolerObservations>,
    /// Each standby as the primary's `pg_stat_replication` showed it
    /// (a managed primary with standbys, or an external one that has
    /// them); absent without standbys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub standbys: Vec<super::StandbyObservation>,
}

/// Deltas and rates between two samples of [`STAT_COUNTERS`].
pub fn stat_interval(t_s: f64, duration_s: f64, prev: &[i64], now: &[i64]) -> StatInterval {
    let mut delta = BTreeMap::new();
    let mut rate = BTreeMap::new();
    for (i, name) in STAT_COUNTERS.iter().enumerate() {
        let d = now[i] - prev[i];
        delta.insert(name.to_string(), d);
        rate.insert(
            name.to_string(),
            if duration_s > 0.0 {
                d as f64 / duration_s
            } else {
                0.0
            },
        );
    }
    StatInterval {
        t_s,
        duration_s,
        delta,
        rate,
    }
}
