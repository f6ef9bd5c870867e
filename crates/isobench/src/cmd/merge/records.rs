//! One merged run record from the same run of every input: counters
//! summed, histograms added, rates and percentiles recomputed.

use std::collections::BTreeMap;

use anyhow::Result;
use hdrhistogram::Histogram;

use crate::model::{LatencySummary, SecondPoint, WaitSummary};
use crate::model::{decode_histogram, encode_histogram, new_histogram};
use crate::store::{CommandRecord, FailureReasonRecord, RunRecord, TxTypeRecord};

/// Adds base64 V2 histograms; errors name the histogram that cannot be
/// decoded.
pub(super) fn add_histograms<'a>(
    encoded: impl IntoIterator<Item = &'a str>,
    what: &str,
) -> Result<Histogram<u64>, String> {
    let mut sum = new_histogram();
    for e in encoded {
        if e.is_empty() {
            continue;
        }
        let h = decode_histogram(e).map_err(|m| format!("{what}: malformed histogram: {m}"))?;
        sum.add(&h).map_err(|m| format!("{what}: {m:?}"))?;
    }
    Ok(sum)
}

pub(super) fn sum_maps(maps: &[&BTreeMap<String, u64>]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in *m {
            *out.entry(k.clone()).or_insert(0) += v;
        }
    }
    out
}

pub(super) fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Merges wait summaries: counts summed, means weighted by count, the
/// maximum of the maxima; p50 and p99 are the largest of the inputs'
/// (an upper bound of the merged percentile: results.json keeps no
/// histogram of waits to add).
pub(super) fn merge_waits(w: &[Option<WaitSummary>]) -> Option<WaitSummary> {
    let ws: Vec<&WaitSummary> = w.iter().flatten().collect();
    if ws.len() <= 1 {
        return ws.first().map(|w| **w);
    }
    let count: u64 = ws.iter().map(|w| w.count).sum();
    Some(WaitSummary {
        count,
        mean: ratio(
            ws.iter().map(|w| w.mean * w.count as f64).sum(),
            count as f64,
        ),
        p50: ws.iter().map(|w| w.p50).fold(0.0, f64::max),
        p99: ws.iter().map(|w| w.p99).fold(0.0, f64::max),
        max: ws.iter().map(|w| w.max).fold(0.0, f64::max),
    })
}

/// Merges one transaction type's records (the same name in every input).
pub(super) fn merge_tx_type(ts: &[&TxTypeRecord]) -> Result<TxTypeRecord, String> {
    let first = ts[0];
    let h = add_histograms(
        ts.iter().map(|t| t.latency_histogram.as_str()),
        &format!("transaction type {}", first.name),
    )?;
    let mut commands: Vec<CommandRecord> = Vec::new();
    for t in ts {
        for c in &t.commands {
            match commands.iter_mut().find(|m| m.command == c.command) {
                Some(m) => {
                    // The means are over completed executions.
                    let done = |c: &CommandRecord| c.executions.saturating_sub(c.failures) as f64;
                    m.mean_ms = ratio(m.mean_ms * done(m) + c.mean_ms * done(c), done(m) + done(c));
                    m.executions += c.executions;
                    m.failures += c.failures;
                }
                None => commands.push(c.clone()),
            }
        }
    }
    let mut reasons: Vec<FailureReasonRecord> = Vec::new();
    for t in ts {
        for r in &t.failure_reasons {
            match reasons.iter_mut().find(|m| {
                (&m.sqlstate, &m.reason, &m.statement) == (&r.sqlstate, &r.reason, &r.statement)
            }) {
                Some(m) => {
                    m.attempts += r.attempts;
                    m.failed += r.failed;
                }
                None => reasons.push(r.clone()),
            }
        }
    }
    // Most frequent first, as a run writes them (a stable sort keeps the
    // first input's order among equals).
    reasons.sort_by_key(|r| std::cmp::Reverse((r.attempts, r.failed)));
    Ok(TxTypeRecord {
        name: first.name.clone(),
        committed: ts.iter().map(|t| t.committed).sum(),
        user_aborts: ts.iter().map(|t| t.user_aborts).sum(),
        attempts: ts.iter().map(|t| t.attempts).sum(),
        failed: sum_maps(&ts.iter().map(|t| &t.failed).collect::<Vec<_>>()),
        unknown_outcome: ts.iter().map(|t| t.unknown_outcome).sum(),
        wasted_ms: ts.iter().map(|t| t.wasted_ms).sum(),
        latency_ms: if ts.len() == 1 {
            first.latency_ms
        } else {
            LatencySummary::of(&h)
        },
        latency_histogram: if ts.len() == 1 {
            first.latency_histogram.clone()
        } else {
            encode_histogram(&h)
        },
        commands,
        failure_reasons: reasons,
    })
}

/// Merges the per-second points of the inputs' runs, shifted by
/// `shifts` (whole seconds): points of the same second are summed (commits,
/// failures, tps); the p99 of a second that several inputs measured is
/// `slot_p99`'s (from the merged interval logs) when known, else the
/// largest of theirs (an upper bound); the schedule lag is the mean
/// weighted by commits.
pub fn merge_seconds(
    series: &[&[SecondPoint]],
    shifts: &[i64],
    slot_p99: &BTreeMap<i64, f64>,
) -> Vec<SecondPoint> {
    // slot -> (point, contributors, lag weight)
    let mut slots: BTreeMap<i64, (SecondPoint, usize, f64, f64)> = BTreeMap::new();
    for (s, k) in series.iter().zip(shifts) {
        for (i, p) in s.iter().enumerate() {
            let slot = i as i64 + k;
            let w = p.committed.max(1) as f64;
            match slots.get_mut(&slot) {
                None => {
                    let mut q = *p;
                    q.t_s = p.t_s + *k as f64;
                    let lag = p.lag_ms.map_or(0.0, |l| l * w);
                    slots.insert(slot, (q, 1, lag, if p.lag_ms.is_some() { w } else { 0.0 }));
                }
                Some((q, n, lag, lw)) => {
                    q.committed += p.committed;
                    q.failed += p.failed;
                    q.tps += p.tps;
                    q.p99_ms = q.p99_ms.max(p.p99_ms);
                    if let Some(l) = p.lag_ms {
                        *lag += l * w;
                        *lw += w;
                    }
                    *n += 1;
                }
            }
        }
    }
    slots
        .into_iter()
        .map(|(slot, (mut q, n, lag, lw))| {
            if n > 1 {
                if let Some(p) = slot_p99.get(&slot) {
                    q.p99_ms = *p;
                }
                q.lag_ms = (lw > 0.0).then(|| lag / lw);
            }
            q
        })
        .collect()
}

/// Merges one run's records, one per input in merge order (shard 0
/// first), into the record of the whole study. `sharded`: the inputs are
/// shards (each ran a share of `cell.clients`); else independent runs
/// (each ran all of them, so the merged run had `inputs x clients`).
/// `shifts` and `slot_p99` as in [`merge_seconds`].
///
/// Errors: a latency histogram that cannot be decoded.
pub fn merge_run(
    runs: &[&RunRecord],
    sharded: bool,
    shifts: &[i64],
    slot_p99: &BTreeMap<i64, f64>,
) -> Result<RunRecord, String> {
    let first = runs[0];
    if runs.len() == 1 {
        return Ok(first.clone());
    }
    let sum = |f: fn(&RunRecord) -> u64| runs.iter().map(|r| f(r)).sum::<u64>();
    let committed = sum(|r| r.committed);
    let attempts = sum(|r| r.attempts);
    let retries = sum(|r| r.retries);
    let unknown = sum(|r| r.unknown_outcome);
    let user_aborts = sum(|r| r.user_aborts);
    let failed = sum_maps(&runs.iter().map(|r| &r.failed).collect::<Vec<_>>());
    let mut failed_by_type: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for r in runs {
        for (t, m) in &r.failed_by_type {
            let e = failed_by_type.entry(t.clone()).or_default();
            *e = sum_maps(&[e, m]);
        }
    }
    let wasted_ms: f64 = runs.iter().map(|r| r.wasted_ms).sum();
    let wasted_attempts = sum(|r| r.wasted_attempts);
    let client_cpu_s: f64 = runs.iter().map(|r| r.client_cpu_s).sum();
    let h = add_histograms(
        runs.iter().map(|r| r.latency_histogram.as_str()),
        &format!("run {}", first.index),
    )?;
    let mut transactions = Vec::new();
    for t in &first.transactions {
        let same: Vec<&TxTypeRecord> = runs
            .iter()
            .filter_map(|r| r.transactions.iter().find(|u| u.name == t.name))
            .collect();
        transactions.push(merge_tx_type(&same)?);
    }
    // Types only later inputs have (no commits in shard 0's run is not a
    // reason to drop them).
    for r in &runs[1..] {
        for t in &r.transactions {
            if !transactions.iter().any(|u| u.name == t.name) {
                let same: Vec<&TxTypeRecord> = runs
                    .iter()
                    .filter_map(|r| r.transactions.iter().find(|u| u.name == t.name))
                    .collect();
                transactions.push(merge_tx_type(&same)?);
            }
        }
    }
    let duration_s = first.duration_s;
    let clients = f64::from(first.cell.clients) * if sharded { 1.0 } else { runs.len() as f64 };
    let series: Vec<&[SecondPoint]> = runs.iter().map(|r| r.per_second.as_slice()).collect();
    let mut errors = Vec::new();
    for r in runs {
        errors.extend(r.errors.iter().cloned());
    }
    let faults = runs.iter().find_map(|r| r.faults.clone());
    let mut merged = RunRecord {
        complete: runs.iter().all(|r| r.complete),
        committed,
        tpmc: None,
        attempts,
        retries,
        failed,
        failed_by_type,
        unknown_outcome: unknown,
        user_aborts,
        wasted_ms,
        wasted_attempts,
        transactions,
        latency_ms: LatencySummary::of(&h),
        latency_histogram: encode_histogram(&h),
        per_second: merge_seconds(&series, shifts, slot_p99),
        client_cpu_s,
        lifetime: crate::model::Lifetime {
            committed: sum(|r| r.lifetime.committed),
            unknown_outcome: sum(|r| r.lifetime.unknown_outcome),
        },
        errors,
        pool_wait_ms: merge_waits(&runs.iter().map(|r| r.pool_wait_ms).collect::<Vec<_>>()),
        schedule_lag_ms: merge_waits(&runs.iter().map(|r| r.schedule_lag_ms).collect::<Vec<_>>()),
        skipped: sum(|r| r.skipped),
        late: sum(|r| r.late),
        faults,
        hosts: merge_hosts(runs, duration_s, first.index)?,
        invariants: merge_invariants(runs),
        anomalies: sum(|r| r.anomalies),
        ..first.clone()
    };
    // Every rate and share from the merged counts, as the run derives
    // its own (shard 0's effective TPS, for one, is a third of a
    // three-shard run's); an external load's tools report throughput,
    // which adds.
    if first.load.is_some() {
        merged.tps = runs.iter().map(|r| r.tps).sum();
    }
    merged.derive_figures(clients);
    Ok(merged)
}

/// The invariant results of one run's `runs`, by check (name, and
/// whether the study declared it) in first-seen order: shards have them
/// from shard 0 alone (the one that checks, with every shard's counts),
/// independent runs each their own, which add: violations and lost
/// commits summed, `ok` when every input's was, the details of the
/// inputs that have the check joined with ` | `, the first violating
/// rows kept, and a declared check's samples during the run added (the
/// most violations at once the largest, the first violation the
/// earliest).
pub(super) fn merge_invariants(runs: &[&RunRecord]) -> Vec<crate::model::InvariantResult> {
    let mut out: Vec<crate::model::InvariantResult> = Vec::new();
    for r in runs {
        for i in &r.invariants {
            match out
                .iter_mut()
                .find(|o| o.name == i.name && o.declared == i.declared)
            {
                None => out.push(i.clone()),
                Some(o) => {
                    o.ok &= i.ok;
                    o.violations += i.violations;
                    o.lost_commits = match (o.lost_commits, i.lost_commits) {
                        (None, None) => None,
                        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                    };
                    if o.detail != i.detail {
                        o.detail = format!("{} | {}", o.detail, i.detail);
                    }
                    if o.rows.is_none() {
                        o.rows = i.rows.clone();
                    }
                    o.during = match (o.during.take(), &i.during) {
                        (Some(mut a), Some(b)) => {
                            a.samples += b.samples;
                            a.violated_samples += b.violated_samples;
                            a.max_violations = a.max_violations.max(b.max_violations);
                            if a.first_violation_s.is_none()
                                || b.first_violation_s
                                    .is_some_and(|t| a.first_violation_s.is_some_and(|f| t < f))
                            {
                                a.first_violation_s = b.first_violation_s.or(a.first_violation_s);
                                if b.rows.is_some() {
                                    a.rows = b.rows.clone();
                                }
                            }
                            Some(a)
                        }
                        (a, b) => a.or_else(|| b.clone()),
                    };
                }
            }
        }
    }
    out
}

/// The per-host records of one run's `runs` (`runs[].hosts`, a DSN with
/// several hosts) summed by host name, in first-seen order: connections,
/// refusals, commits and failures added, latency histograms added and
/// the percentiles recomputed, tps over `duration_s`. Run `index` names
/// a bad histogram.
///
/// Errors: a latency histogram that cannot be decoded.
pub(super) fn merge_hosts(
    runs: &[&RunRecord],
    duration_s: f64,
    index: u32,
) -> Result<Vec<crate::model::HostRecord>, String> {
    let mut names: Vec<&str> = Vec::new();
    for r in runs {
        for h in &r.hosts {
            if !names.contains(&h.host.as_str()) {
                names.push(&h.host);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let same: Vec<&crate::model::HostRecord> = runs
                .iter()
                .flat_map(|r| r.hosts.iter().filter(|h| h.host == name))
                .collect();
            let h = add_histograms(
                same.iter().map(|x| x.latency_histogram.as_str()),
                &format!("run {index}, host {name}"),
            )?;
            let committed = same.iter().map(|x| x.committed).sum::<u64>();
            let lat = LatencySummary::of(&h);
            Ok(crate::model::HostRecord {
                host: name.to_string(),
                clients: same.iter().map(|x| x.clients).sum(),
                refused: same.iter().map(|x| x.refused).sum(),
                committed,
                tps: ratio(committed as f64, duration_s),
                p50_ms: lat.p50,
                p99_ms: lat.p99,
                failed: same.iter().map(|x| x.failed).sum(),
                latency_histogram: encode_histogram(&h),
            })
        })
        .collect()
}
