//! Server observations aggregated per cell (over its complete runs):
//! `pg_stat_database` rates, wait events, SIRead locks (plans:
//! [`crate::report::analysis::plans`]).

use std::collections::BTreeMap;

use crate::model::{CountStat, STAT_COUNTERS, StatInterval};
use crate::report::analysis::cells::CellSummary;
use crate::store::RunRecord;

/// Time-weighted mean rate of each `pg_stat_database` counter over one
/// run's intervals, per s: `Σ rateᵢ · dᵢ / Σ dᵢ` (the short last interval
/// weighs less). Empty when the run has no interval.
fn run_rates(intervals: &[StatInterval]) -> BTreeMap<&str, f64> {
    let mut sums: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for i in intervals.iter().filter(|i| i.duration_s > 0.0) {
        for (name, rate) in &i.rate {
            let e = sums.entry(name.as_str()).or_default();
            e.0 += rate * i.duration_s;
            e.1 += i.duration_s;
        }
    }
    sums.into_iter().map(|(k, (sum, d))| (k, sum / d)).collect()
}

/// Mean over the cell's complete runs of each counter's `run_rates`, per
/// s. Runs without intervals are left out.
pub fn counter_rates(c: &CellSummary) -> BTreeMap<String, f64> {
    let mut acc: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for run in c.complete_runs() {
        for (name, rate) in run_rates(&run.server.stat_database) {
            let e = acc.entry(name.to_string()).or_default();
            e.0 += rate;
            e.1 += 1;
        }
    }
    acc.into_iter()
        .map(|(k, (sum, n))| (k, sum / n as f64))
        .collect()
}

/// Counter names to show: those of [`STAT_COUNTERS`] in its order, then
/// any other stored counter alphabetically.
pub fn counter_names(rates: &[BTreeMap<String, f64>]) -> Vec<String> {
    let known = STAT_COUNTERS.iter().map(|n| n.to_string());
    let others: std::collections::BTreeSet<String> = rates
        .iter()
        .flat_map(|r| r.keys())
        .filter(|k| !STAT_COUNTERS.contains(&k.as_str()))
        .cloned()
        .collect();
    known
        .filter(|n| rates.iter().any(|r| r.contains_key(n)))
        .chain(others)
        .collect()
}

/// One wait event's share of a cell's backend observations.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitShare {
    /// `type:event`, or `CPU` for an active backend not waiting.
    pub event: String,
    /// Backend observations over the cell's complete runs.
    pub count: u64,
    /// `100 · count / total`, %.
    pub pct: f64,
}

/// The `k` most frequent wait events of the cell's complete runs (ties by
/// name), with the total number of backend observations.
pub fn top_wait_events(c: &CellSummary, k: usize) -> (u64, Vec<WaitShare>) {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for run in c.complete_runs() {
        for (event, n) in &run.server.wait_events.counts {
            *counts.entry(event.as_str()).or_default() += n;
        }
    }
    let total: u64 = counts.values().sum();
    let mut v: Vec<(&str, u64)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let top = v
        .into_iter()
        .take(k)
        .map(|(event, count)| WaitShare {
            event: event.to_string(),
            count,
            pct: 100.0 * count as f64 / total as f64,
        })
        .collect();
    (total, top)
}

/// SIRead locks by granularity: mean over the cell's complete runs of each
/// run's mean count (a run that sampled but saw none counts 0), and the
/// largest count any sample saw.
pub fn siread_by_granularity(c: &CellSummary) -> BTreeMap<String, CountStat> {
    let sampled: Vec<&RunRecord> = c
        .complete_runs()
        .filter(|r| r.server.siread_locks.samples > 0)
        .collect();
    let mut out: BTreeMap<String, CountStat> = BTreeMap::new();
    for run in &sampled {
        for (gran, s) in &run.server.siread_locks.by_granularity {
            let e = out.entry(gran.clone()).or_default();
            e.mean += s.mean / sampled.len() as f64;
            e.max = e.max.max(s.max);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::report::analysis::cells;

    #[test]
    fn rates_are_time_weighted_then_averaged_over_runs() {
        let r = fixture::results();
        let cells = cells::aggregate(&r);
        // rc runs: (98·5 + 38·1) / 6 = 88 and (102·5 + 42·1) / 6 = 92.
        let rates = counter_rates(&cells[0]);
        assert!((rates["xact_commit"] - 90.0).abs() < 1e-9, "{rates:?}");
        let names = counter_names(&[rates]);
        assert_eq!(names[..2], ["xact_commit", "xact_rollback"]);
    }

    #[test]
    fn wait_events_top_and_share() {
        let r = fixture::results();
        let cells = cells::aggregate(&r);
        let (total, top) = top_wait_events(&cells[1], 2);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].event, "CPU");
        assert!(
            (top.iter().map(|w| w.pct).sum::<f64>()
                - 100.0 * (top[0].count + top[1].count) as f64 / total as f64)
                .abs()
                < 1e-9
        );
    }
}

/// What pgbouncer showed of one cell, over its complete runs behind it
/// (`ServerObservations::pooler`).
#[derive(Debug, Clone, PartialEq)]
pub struct PoolerSummary {
    /// `1.18.0 · transaction · 20`: version, pool mode, pool size.
    pub setup: String,
    /// Runs with observations.
    pub runs: usize,
    /// Mean over runs of the mean clients waiting; the largest seen.
    pub cl_waiting_mean: f64,
    pub cl_waiting_max: u64,
    /// Mean over runs of the mean server connections in use; the largest.
    pub sv_active_mean: f64,
    pub sv_active_max: u64,
    /// The longest wait of any sample, ms.
    pub maxwait_ms: f64,
    /// Mean over runs of the wait per transaction, ms.
    pub wait_per_xact_ms: f64,
    /// Mean over runs of the clients' mean latency, ms.
    pub latency_ms: f64,
    /// Mean over runs of `wait_per_xact_ms / latency mean`, %: the share of
    /// a transaction's latency spent queued in pgbouncer.
    pub wait_share_pct: f64,
}

/// The cell's [`PoolerSummary`]; `None` when no complete run of it went
/// through pgbouncer (or none was observed).
pub fn pooler_summary(c: &CellSummary) -> Option<PoolerSummary> {
    let seen: Vec<(&crate::model::PoolerObservations, f64)> = c
        .complete_runs()
        .filter_map(|r| r.server.pooler.as_ref().map(|p| (p, r.latency_ms.mean)))
        .collect();
    let first = seen.first()?.0;
    let n = seen.len() as f64;
    let mean = |f: &dyn Fn(&crate::model::PoolerObservations, f64) -> f64| {
        seen.iter().map(|(p, l)| f(p, *l)).sum::<f64>() / n
    };
    Some(PoolerSummary {
        setup: format!(
            "{} · {} · {}",
            first.version, first.pool_mode, first.pool_size
        ),
        runs: seen.len(),
        cl_waiting_mean: mean(&|p, _| p.cl_waiting.mean),
        cl_waiting_max: seen
            .iter()
            .map(|(p, _)| p.cl_waiting.max)
            .max()
            .unwrap_or(0),
        sv_active_mean: mean(&|p, _| p.sv_active.mean),
        sv_active_max: seen.iter().map(|(p, _)| p.sv_active.max).max().unwrap_or(0),
        maxwait_ms: seen.iter().map(|(p, _)| p.maxwait_ms).fold(0.0, f64::max),
        wait_per_xact_ms: mean(&|p, _| p.wait_per_xact_ms),
        latency_ms: mean(&|_, l| l),
        wait_share_pct: mean(&|p, l| {
            if l > 0.0 {
                100.0 * p.wait_per_xact_ms / l
            } else {
                0.0
            }
        }),
    })
}
