//! Findings about what limited the load rather than the isolation
//! level: a pool clients queued for, CPU stolen from the host, a client
//! near a core's worth of CPU, an open-loop schedule falling behind or
//! lagging more and more, and lock waits.

use super::Finding;
use crate::report::analysis::model::ReportModel;

/// Saturation of a pool: the mean wait for a connection is more than
/// [`POOL_WAIT_SHARE`] of the mean latency.
pub const POOL_WAIT_SHARE: f64 = 0.5;

pub(super) fn pool_wait(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let (Some(w), Some(l)) = (&c.pool_wait, &c.merged_latency) else {
            continue;
        };
        if l.mean > 0.0 && w.mean_ms.mean > POOL_WAIT_SHARE * l.mean {
            out.push(Finding {
                rule: "pool",
                text: format!(
                    "{}: clients waited {:.2} ms for a pooled connection on average, against {:.2} ms of latency: the pool is the bottleneck.",
                    m.factors.short_labels[i], w.mean_ms.mean, l.mean
                ),
                advice: Some("a larger --pool-size, or fewer clients".into()),
            });
        }
    }
    out
}

/// CPU steal: a run in which the hypervisor took more than
/// [`STEAL_PCT`] % of the host's CPU time (`/proc/stat` steal over the
/// measured window): the machine's capacity changed under the run.
pub const STEAL_PCT: f64 = 5.0;

pub(super) fn host_cpu(m: &ReportModel) -> Vec<Finding> {
    let stolen: Vec<(u32, f64)> = m
        .results
        .runs
        .iter()
        .filter_map(|r| Some((r.index, r.host_cpu?.steal_pct)))
        .filter(|(_, steal)| *steal > STEAL_PCT)
        .collect();
    let Some(worst) = stolen.iter().map(|(_, s)| *s).reduce(f64::max) else {
        return Vec::new();
    };
    let runs: Vec<String> = stolen.iter().map(|(i, _)| i.to_string()).collect();
    vec![Finding {
        rule: "steal",
        text: format!(
            "the hypervisor stole more than {STEAL_PCT:.0} % of the CPU time in run(s) {} (up to {worst:.0} %): those runs had less machine than the others.",
            runs.join(", ")
        ),
        advice: Some("a dedicated machine, or more repetitions interleaved (--repeat)".into()),
    }]
}

/// A busy load generator: isobench's own CPU time over a cell's measured
/// windows is more than [`CLIENT_CORE_SHARE`] of one core. On a machine
/// that also runs the server, that CPU is taken from the server, and a
/// saturated client delays its own transactions (BENCHMARKS.md).
pub const CLIENT_CORE_SHARE: f64 = 0.30;

pub(super) fn client_cpu(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let runs: Vec<&crate::store::RunRecord> =
            c.complete_runs().filter(|r| r.load.is_none()).collect();
        let (cpu, secs): (f64, f64) = runs.iter().fold((0.0, 0.0), |(a, b), r| {
            (a + r.client_cpu_s, b + r.duration_s)
        });
        if secs <= 0.0 || cpu / secs <= CLIENT_CORE_SHARE {
            continue;
        }
        let committed: u64 = runs.iter().map(|r| r.committed).sum();
        let per_tx = if committed > 0 {
            format!(" ({:.0} µs per commit)", cpu * 1e6 / committed as f64)
        } else {
            String::new()
        };
        let host = runs
            .iter()
            .find_map(|r| r.host_cpu)
            .map(|h| format!(" of a {}-CPU host", h.cpus))
            .unwrap_or_default();
        out.push(Finding {
            rule: "client-cpu",
            text: format!(
                "{}: isobench itself used {:.0} % of a core{host}{per_tx}: the load generator competes with the server for CPU.",
                m.factors.short_labels[i],
                100.0 * cpu / secs
            ),
            advice: Some(
                "run isobench on another machine (--dsn), or compare tools at equal client threads (--threads)".into(),
            ),
        });
    }
    out
}

/// Open loop above capacity: in a run with a rate, the mean schedule lag
/// of the last quarter of the window's seconds is more than twice that
/// of the first quarter and above [`LAG_GROWTH_MS`]: transactions start
/// ever later, so the rate is more than the system sustains and latency
/// from the schedule grows with the run's length.
pub const LAG_GROWTH_MS: f64 = 10.0;

pub(super) fn lag_growing(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(rate) = c.cell.rate else { continue };
        let grew: Vec<(u32, f64, f64)> = c
            .complete_runs()
            .filter_map(|r| {
                let lags: Vec<f64> = r.per_second.iter().filter_map(|p| p.lag_ms).collect();
                let q = lags.len() / 4;
                if q == 0 {
                    return None;
                }
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let (first, last) = (mean(&lags[..q]), mean(&lags[lags.len() - q..]));
                (last > 2.0 * first && last > LAG_GROWTH_MS).then_some((r.index, first, last))
            })
            .collect();
        let Some(&(run, first, last)) = grew.first() else {
            continue;
        };
        let tps = c.tps.as_ref().map_or(String::new(), |s| {
            format!(
                " ({:.0} tx/s committed against a rate of {:.0} tx/s)",
                s.mean, rate.0
            )
        });
        out.push(Finding {
            rule: "lag",
            text: format!(
                "{}: schedule lag grew from {first:.1} ms to {last:.1} ms over run {run}'s window{tps}{}: the rate is above capacity, so latency from the schedule grows with the run's length.",
                m.factors.short_labels[i],
                if grew.len() > 1 { format!(" and in {} more run(s)", grew.len() - 1) } else { String::new() }
            ),
            advice: Some("compare at rates below the closed-loop throughput".into()),
        });
    }
    out
}

/// Open loop behind schedule: in a cell with a rate and a latency limit,
/// the transactions skipped (already later than the limit when due) and
/// those committed later than the limit are more than [`BEHIND_PCT`] % of
/// the scheduled transactions (complete runs): the server could not keep
/// up with the rate, so the throughput is not the rate and the latency
/// leaves out what was skipped.
pub const BEHIND_PCT: f64 = 1.0;

pub(super) fn behind(m: &ReportModel) -> Vec<Finding> {
    let Some(limit) = m.results.config.latency_limit_ms else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let (Some(rate), Some(lag)) = (c.cell.rate, c.schedule_lag.as_ref()) else {
            continue;
        };
        // Every scheduled transaction records a schedule lag, skipped
        // ones included.
        let scheduled = lag.count;
        let n = c.skipped + c.late;
        if scheduled == 0 || (100.0 * n as f64) <= BEHIND_PCT * scheduled as f64 {
            continue;
        }
        out.push(Finding {
            rule: "behind",
            text: format!(
                "{}: the server could not keep up with {} tx/s: {} skipped, {} late (> {limit} ms) of {} scheduled transactions ({:.1} %).",
                m.factors.short_labels[i],
                rate.0,
                crate::report::format::grouped(c.skipped),
                crate::report::format::grouped(c.late),
                crate::report::format::grouped(scheduled),
                100.0 * n as f64 / scheduled as f64
            ),
            advice: Some(
                "compare at a rate the cell sustains (below its closed-loop throughput), or with a larger --latency-limit".into(),
            ),
        });
    }
    out
}

/// Lock waits dominate: more than [`LOCK_WAIT_SHARE`] of a cell's backend
/// samples wait on a heavyweight lock (`Lock:*`, e.g. `Lock:transactionid`:
/// a row another transaction has updated): contention, not the server's
/// speed, sets the throughput.
pub const LOCK_WAIT_SHARE: f64 = 0.5;

pub(super) fn lock_waits(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, (total, shares)) in m.wait_events.iter().enumerate() {
        let locks: Vec<_> = shares
            .iter()
            .filter(|w| w.event.starts_with("Lock:"))
            .collect();
        let n: u64 = locks.iter().map(|w| w.count).sum();
        if *total == 0 || (n as f64) <= LOCK_WAIT_SHARE * *total as f64 {
            continue;
        }
        let top = locks
            .iter()
            .take(2)
            .map(|w| format!("{} {:.0} %", w.event, w.pct));
        out.push(Finding {
            rule: "lock-waits",
            text: format!(
                "{}: {:.0} % of backend samples waited on a lock ({}): contention sets the throughput.",
                m.factors.short_labels[i],
                100.0 * n as f64 / *total as f64,
                top.collect::<Vec<_>>().join(", ")
            ),
            advice: Some(
                "fewer clients on the same rows, or more rows to spread them over (scale); see Wait events".into(),
            ),
        });
    }
    out
}
