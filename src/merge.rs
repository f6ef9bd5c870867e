//! `isobench merge DIR... --out DIR`: one results directory from several
//! results directories of one study — the shards of a sharded study
//! (`--shard I/N`, each directory's `config.shard`), or repeated
//! independent runs of the same study — as if one client process had run
//! every shard's clients.
//!
//! Per run (matched by `index`, `cell` and `repetition`): counters are
//! summed (committed, attempts, retries, failures by SQLSTATE, by
//! transaction type and by reason, unknown outcomes, user aborts, wasted
//! work, skipped and late, client CPU); latency histograms (HdrHistogram
//! V2 + DEFLATE, base64; [`crate::metrics::decode_histogram`]) are added,
//! and every percentile is recomputed from the sum, never averaged; rates
//! and shares (tps, failure %, retries per commit, abort ratio, wasted
//! time %, CPU per transaction) are recomputed from the sums. Per-second
//! points are aligned on the measured window's start (`window_start`, the
//! server's clock when sharded) and summed. Server observations, invariants,
//! plans, the environment and the load come from shard 0 (or the first
//! directory). Per-host records (`runs[].hosts`, a DSN with several
//! hosts) are summed by host name, histograms added.
//! `histograms/run-N.hlog` interval logs are merged interval by
//! interval (histograms of the same second and tag added) and written with
//! the `hdrhistogram` crate's interval-log writer. The reports are then
//! written as `isobench report` writes them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use chrono::{DateTime, FixedOffset};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use serde_json::Value;

use crate::metrics::{decode_histogram, encode_histogram, new_histogram};
use crate::model::{BadInput, LatencySummary, SecondPoint, WaitSummary};
use crate::store::{self, CommandRecord, FailureReasonRecord, Results, RunRecord, TxTypeRecord};

/// The shard a results directory was written by (`config.shard` of
/// results.json): `index` of `count`, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardOf {
    /// From 0.
    pub index: u32,
    /// Shards of the study.
    pub count: u32,
}

/// One results directory read for merging.
#[derive(Debug, Clone)]
pub struct Input {
    /// The directory as named on the command line.
    pub dir: PathBuf,
    /// Its results.json, as this isobench reads it.
    pub results: Results,
    /// `config` of results.json as written (the comparison of studies
    /// reads every key, also those this isobench does not know).
    pub config: Value,
    /// `config.shard`; `None` when the study was not sharded.
    pub shard: Option<ShardOf>,
    /// Run index -> `runs[].window_start`, where present: the instant,
    /// and the RFC 3339 text as written.
    pub window_start: BTreeMap<u32, DateTime<FixedOffset>>,
    /// The same, as written (copied to the merged results unchanged).
    pub window_start_text: BTreeMap<u32, String>,
}

/// Reads `dir/results.json` (schema version [`store::SCHEMA_VERSION`]),
/// with the optional sharding fields `config.shard` and
/// `runs[].window_start`.
///
/// Errors ([`BadInput`], naming the directory): no results.json, malformed,
/// another schema version, or a malformed `shard` or `window_start`.
pub fn read_input(dir: &Path) -> Result<Input, BadInput> {
    let bad = |what: String| BadInput(format!("merge: {}: {what}", dir.display()));
    if !dir.is_dir() {
        return Err(bad(
            "no such directory; name results directories written by `isobench run`".into(),
        ));
    }
    let results = Results::read(dir).map_err(|e| bad(e.to_string()))?;
    let text = std::fs::read_to_string(dir.join(store::RESULTS_JSON))
        .map_err(|e| bad(format!("{}: {e}", store::RESULTS_JSON)))?;
    let raw: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let config = raw.get("config").cloned().unwrap_or(Value::Null);
    let shard = match config.get("shard") {
        None | Some(Value::Null) => None,
        Some(s) => {
            let n = |k: &str| {
                s.get(k)
                    .and_then(Value::as_u64)
                    .and_then(|v| u32::try_from(v).ok())
            };
            match (n("index"), n("count")) {
                (Some(index), Some(count)) if index < count => Some(ShardOf { index, count }),
                _ => {
                    return Err(bad(format!(
                        "config.shard is {s}; expected {{\"index\": I, \"count\": N}} with I < N"
                    )));
                }
            }
        }
    };
    let mut window_start = BTreeMap::new();
    let mut window_start_text = BTreeMap::new();
    for run in raw
        .get("runs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(index), Some(ws)) = (
            run.get("index").and_then(Value::as_u64),
            run.get("window_start").and_then(Value::as_str),
        ) else {
            continue;
        };
        let t = DateTime::parse_from_rfc3339(ws)
            .map_err(|e| bad(format!("run {index}: window_start '{ws}': {e}")))?;
        window_start.insert(index as u32, t);
        window_start_text.insert(index as u32, ws.to_string());
    }
    Ok(Input {
        dir: dir.to_path_buf(),
        results,
        config,
        shard,
        window_start,
        window_start_text,
    })
}

/// The configuration keys that may differ between the directories of one
/// study: the shard, and a managed server's socket and port in `target`
/// (`managed PostgreSQL from DIR (socket S, 127.0.0.1:PORT)`, compared up
/// to its parenthesis; an external server's is compared whole).
fn comparable_config(config: &Value) -> Value {
    let mut c = config.clone();
    if let Some(o) = c.as_object_mut() {
        o.remove("shard");
        if let Some(Value::String(t)) = o.get_mut("target")
            && t.starts_with("managed ")
            && let Some(i) = t.find(" (")
        {
            t.truncate(i);
        }
    }
    c
}

/// The first key (dotted path) where `a` and `b` differ, if any.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => first_difference(u, v, &p),
                    _ => Some(p),
                }
            })
        }
        _ if a == b => None,
        _ => Some(path.to_string()),
    }
}

/// Checks that `inputs` are the directories of one study and puts them in
/// merge order (shard 0 first; else as given). Returns the warnings (a
/// shard index of 0..N-1 that no directory has).
///
/// Errors ([`BadInput`], naming the directory and the key): a
/// configuration that differs from the first directory's (in anything but
/// the shard and the managed server's address), sharded and unsharded
/// directories mixed, different shard counts, two directories with the
/// same shard index, or different run lists (index, cell, repetition).
pub fn check(inputs: &mut [Input]) -> Result<Vec<String>, BadInput> {
    let Some(first) = inputs.first() else {
        return Err(BadInput(
            "merge: name at least one results directory".into(),
        ));
    };
    let base = comparable_config(&first.config);
    let key = |r: &RunRecord| (r.index, r.cell.clone(), r.repetition);
    let base_runs: Vec<_> = first.results.runs.iter().map(key).collect();
    for i in &inputs[1..] {
        let name = || format!("merge: {} and {}", first.dir.display(), i.dir.display());
        if let Some(k) = first_difference(&base, &comparable_config(&i.config), "") {
            return Err(BadInput(format!(
                "{}: not the same study: config.{k} differs ({} vs {}); merge only the directories of one study",
                name(),
                show(lookup(&first.config, &k)),
                show(lookup(&i.config, &k)),
            )));
        }
        if first.shard.is_some() != i.shard.is_some() {
            return Err(BadInput(format!(
                "{}: config.shard differs (one is a shard of a sharded study, the other is not)",
                name()
            )));
        }
        if let (Some(a), Some(b)) = (first.shard, i.shard)
            && a.count != b.count
        {
            return Err(BadInput(format!(
                "{}: config.shard.count differs ({} vs {})",
                name(),
                a.count,
                b.count
            )));
        }
        let runs: Vec<_> = i.results.runs.iter().map(key).collect();
        if runs != base_runs {
            let what = match base_runs.iter().zip(&runs).position(|(a, b)| a != b) {
                Some(p) => format!(
                    "run {} is {} repetition {} in the first, {} repetition {} in the second",
                    base_runs[p].0,
                    base_runs[p].1.label(),
                    base_runs[p].2,
                    runs[p].1.label(),
                    runs[p].2
                ),
                None => format!("{} runs vs {}", base_runs.len(), runs.len()),
            };
            return Err(BadInput(format!(
                "{}: not the same runs (runs differ: {what}); merge directories that ran the same plan to the end",
                name()
            )));
        }
    }
    let mut warnings = Vec::new();
    if let Some(count) = first.shard.map(|s| s.count) {
        let mut seen: BTreeMap<u32, &Path> = BTreeMap::new();
        for i in inputs.iter() {
            let s = i.shard.expect("checked above").index;
            if let Some(other) = seen.insert(s, &i.dir) {
                return Err(BadInput(format!(
                    "merge: {} and {}: both are shard {s} (config.shard.index); name each shard's directory once",
                    other.display(),
                    i.dir.display()
                )));
            }
        }
        let missing: Vec<String> = (0..count)
            .filter(|s| !seen.contains_key(s))
            .map(|s| s.to_string())
            .collect();
        if !missing.is_empty() {
            warnings.push(format!(
                "shard(s) {} of 0..{} missing: the merged results hold only the other shards' clients",
                missing.join(", "),
                count - 1
            ));
        }
        inputs.sort_by_key(|i| i.shard.map(|s| s.index));
    }
    Ok(warnings)
}

fn lookup<'a>(v: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(v, |v, k| v.get(k))
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => {
            let s = v.to_string();
            if s.chars().count() > 80 {
                format!("{}...", s.chars().take(77).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// Each input's shift of run `index`'s per-second series, whole seconds
/// after the earliest `window_start`: the rounded difference of the
/// windows' starts when the inputs are shards of one study and all carry
/// `window_start`; else 0 (independent runs are summed second by second
/// from each window's start).
pub fn shifts(inputs: &[Input], index: u32) -> Vec<i64> {
    let starts: Option<Vec<_>> = inputs
        .iter()
        .map(|i| i.shard.and(i.window_start.get(&index)))
        .collect();
    let Some(starts) = starts else {
        return vec![0; inputs.len()];
    };
    let Some(min) = starts.iter().min().copied() else {
        return vec![0; inputs.len()];
    };
    starts
        .iter()
        .map(|s| {
            let ms = (**s - *min).num_milliseconds();
            (ms as f64 / 1000.0).round() as i64
        })
        .collect()
}

/// Adds base64 V2 histograms; errors name the histogram that cannot be
/// decoded.
fn add_histograms<'a>(
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

fn sum_maps(maps: &[&BTreeMap<String, u64>]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in *m {
            *out.entry(k.clone()).or_insert(0) += v;
        }
    }
    out
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Merges wait summaries: counts summed, means weighted by count, the
/// maximum of the maxima; p50 and p99 are the largest of the inputs'
/// (an upper bound of the merged percentile: results.json keeps no
/// histogram of waits to add).
fn merge_waits(w: &[Option<WaitSummary>]) -> Option<WaitSummary> {
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
fn merge_tx_type(ts: &[&TxTypeRecord]) -> Result<TxTypeRecord, String> {
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
                    let n = m.executions + c.executions;
                    m.mean_ms = ratio(
                        m.mean_ms * m.executions as f64 + c.mean_ms * c.executions as f64,
                        n as f64,
                    );
                    m.executions = n;
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
    let failed_total: u64 = failed.values().sum();
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
    let transactions_total = committed + user_aborts + failed_total + unknown;
    let series: Vec<&[SecondPoint]> = runs.iter().map(|r| r.per_second.as_slice()).collect();
    let mut errors = Vec::new();
    for r in runs {
        errors.extend(r.errors.iter().cloned());
    }
    let faults = runs.iter().find_map(|r| r.faults.clone());
    let tpmc = crate::model::tpmc(&transactions, duration_s);
    Ok(RunRecord {
        complete: runs.iter().all(|r| r.complete),
        committed,
        tps: ratio(committed as f64, duration_s),
        tpmc,
        attempts,
        retries,
        failed,
        failed_by_type,
        unknown_outcome: unknown,
        user_aborts,
        failure_pct: 100.0 * ratio(failed_total as f64, transactions_total as f64),
        retries_per_commit: ratio(retries as f64, committed as f64),
        wasted_ms,
        wasted_attempts,
        abort_ratio: ratio(wasted_attempts as f64, attempts as f64),
        wasted_time_pct: 100.0 * ratio(wasted_ms, clients * duration_s * 1000.0),
        transactions,
        latency_ms: LatencySummary::of(&h),
        latency_histogram: encode_histogram(&h),
        per_second: merge_seconds(&series, shifts, slot_p99),
        client_cpu_s,
        client_cpu_us_per_tx: ratio(client_cpu_s * 1e6, committed as f64),
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
        ..first.clone()
    })
}

/// The per-host records of one run's `runs` (`runs[].hosts`, a DSN with
/// several hosts) summed by host name, in first-seen order: connections,
/// refusals, commits and failures added, latency histograms added and
/// the percentiles recomputed, tps over `duration_s`. Run `index` names
/// a bad histogram.
///
/// Errors: a latency histogram that cannot be decoded.
fn merge_hosts(
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

/// One interval of an interval log: its start (whole seconds into the
/// window), length, tag and histogram.
type Interval = (i64, Duration, Option<String>, Histogram<u64>);

/// The merged intervals of one second: (tag, length, histogram).
type Second = Vec<(Option<String>, Duration, Histogram<u64>)>;

/// The intervals of interval log `bytes` (as [`crate::engine::hlog`]
/// writes them), each start shifted by `shift` seconds, and the log's
/// `BaseTime`.
///
/// Errors: a line or histogram that does not parse.
pub fn read_hlog(bytes: &[u8], shift: i64) -> Result<(Vec<Interval>, Option<Duration>), String> {
    let mut out = Vec::new();
    let mut base = None;
    for e in IntervalLogIterator::new(bytes) {
        match e.map_err(|e| format!("{e:?}"))? {
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::StartTime(_) => {}
            LogEntry::Interval(i) => {
                let h = decode_histogram(i.encoded_histogram())?;
                let start = i.start_timestamp().as_secs_f64().round() as i64 + shift;
                out.push((
                    start,
                    i.duration(),
                    i.tag().map(|t| t.as_str().to_string()),
                    h,
                ));
            }
        }
    }
    Ok((out, base))
}

/// Merges interval logs: the histograms of the same start second and tag
/// added, in order of start then first appearance of the tag, written with
/// base time `base` (the earliest window start). Returns the log and, per
/// second, the p99 of all tags together, ms.
///
/// Errors: an interval that cannot be serialized.
pub fn merge_hlogs(
    logs: Vec<Vec<Interval>>,
    base: Option<SystemTime>,
) -> Result<(Vec<u8>, BTreeMap<i64, f64>), String> {
    let mut merged: BTreeMap<i64, Second> = BTreeMap::new();
    for log in logs {
        for (start, len, tag, h) in log {
            let slot = merged.entry(start).or_default();
            match slot.iter_mut().find(|(t, _, _)| *t == tag) {
                Some((_, l, sum)) => {
                    *l = (*l).max(len);
                    sum.add(&h).map_err(|e| format!("{e:?}"))?;
                }
                None => {
                    let mut sum = new_histogram();
                    sum.add(&h).map_err(|e| format!("{e:?}"))?;
                    slot.push((tag, len, sum));
                }
            }
        }
    }
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder.add_comment(
        "isobench merge: latency (µs) per transaction type, one interval a second of the measured window, the merged directories' intervals of the same second and tag added",
    );
    if let Some(b) = base {
        builder.with_start_time(b).with_base_time(b);
    }
    let mut w = builder
        .begin_log_with(&mut buf, &mut serializer)
        .map_err(|e| e.to_string())?;
    let mut p99 = BTreeMap::new();
    for (start, slot) in &merged {
        let mut all = new_histogram();
        for (tag, len, h) in slot {
            all.add(h).map_err(|e| format!("{e:?}"))?;
            let from = Duration::from_secs(u64::try_from(*start).unwrap_or(0));
            w.write_histogram(h, from, *len, tag.as_deref().and_then(Tag::new))
                .map_err(|e| format!("{e:?}"))?;
        }
        if !all.is_empty() {
            p99.insert(*start, all.value_at_quantile(0.99) as f64 / 1000.0);
        }
    }
    drop(w);
    Ok((buf, p99))
}

/// `results` as one study's rather than shard 0's: without `config.shard`
/// and `runs[].shard_clients`, each run's `window_start` the earliest of
/// the inputs' (`window_starts`). Through JSON, so that it holds whether
/// or not this build's record types carry the sharding fields.
///
/// Errors: none in practice (the value is the serialization of `results`).
fn as_whole_study(results: Results, window_starts: &BTreeMap<u32, String>) -> Result<Results> {
    let mut v = serde_json::to_value(&results)?;
    strip_shard(&mut v, window_starts);
    Ok(serde_json::from_value(v)?)
}

/// [`as_whole_study`] on results.json's value.
fn strip_shard(v: &mut Value, window_starts: &BTreeMap<u32, String>) {
    if let Some(c) = v["config"].as_object_mut() {
        c.remove("shard");
    }
    for r in v["runs"].as_array_mut().into_iter().flatten() {
        let ws = r["index"]
            .as_u64()
            .and_then(|i| window_starts.get(&(i as u32)));
        if let Some(o) = r.as_object_mut() {
            o.remove("shard_clients");
            match ws {
                Some(ws) => o.insert("window_start".into(), Value::String(ws.clone())),
                None => o.remove("window_start"),
            };
        }
    }
}

/// What [`merge_dirs`] did.
#[derive(Debug)]
pub struct Outcome {
    /// The merged results, as written to results.json.
    pub results: Results,
    /// Warnings for the user (missing shards, missing interval logs).
    pub warnings: Vec<String>,
    /// Interval logs written.
    pub hlogs: usize,
}

/// Reads, checks and merges the results directories `dirs` into `out`
/// (a new directory): results.json (with `window_start`, the earliest of
/// the inputs'), the SQLite store, `histograms/run-N.hlog`, and every
/// report as `isobench report` writes it.
///
/// Errors: as [`read_input`] and [`check`] (bad input, exit 2); `--out` is
/// one of the inputs or already holds results; a file cannot be written.
pub fn merge_dirs(dirs: &[PathBuf], out: &Path) -> Result<Outcome> {
    let mut inputs = dirs
        .iter()
        .map(|d| read_input(d))
        .collect::<Result<Vec<_>, _>>()?;
    let mut warnings = check(&mut inputs)?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    };
    for i in &inputs {
        if same(&i.dir, out) {
            return Err(BadInput(format!(
                "--out {}: is one of the directories to merge; choose a new directory",
                out.display()
            ))
            .into());
        }
    }
    let sharded = inputs[0].shard.is_some();
    let first = &inputs[0].results;
    let mut runs = Vec::new();
    let mut window_starts: BTreeMap<u32, String> = BTreeMap::new();
    let mut hlogs: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    for (p, run) in first.runs.iter().enumerate() {
        let index = run.index;
        let records: Vec<&RunRecord> = inputs.iter().map(|i| &i.results.runs[p]).collect();
        let shift = shifts(&inputs, index);
        // Interval logs, where present.
        let mut logs = Vec::new();
        let mut base: Option<Duration> = None;
        let mut missing = Vec::new();
        for (i, k) in inputs.iter().zip(&shift) {
            let path = i.dir.join("histograms").join(format!("run-{index}.hlog"));
            match std::fs::read(&path) {
                Ok(bytes) => {
                    let (log, b) = read_hlog(&bytes, *k)
                        .map_err(|e| BadInput(format!("merge: {}: {e}", path.display())))?;
                    if *k == 0 && base.is_none() {
                        base = b;
                    }
                    logs.push(log);
                }
                Err(_) => missing.push(i.dir.display().to_string()),
            }
        }
        let earliest = inputs
            .iter()
            .filter_map(|i| {
                Some((
                    *i.window_start.get(&index)?,
                    i.window_start_text.get(&index)?,
                ))
            })
            .min_by_key(|(t, _)| *t);
        if let Some((_, text)) = earliest {
            window_starts.insert(index, text.clone());
        }
        let earliest = earliest.map(|(t, _)| t);
        let mut slot_p99 = BTreeMap::new();
        if !logs.is_empty() {
            if !missing.is_empty() {
                warnings.push(format!(
                    "run {index}: no histograms/run-{index}.hlog in {}: the merged interval log and per-second p99 lack their intervals",
                    missing.join(", ")
                ));
            }
            let base_time = earliest
                .map(SystemTime::from)
                .or_else(|| base.map(|b| SystemTime::UNIX_EPOCH + b));
            let (bytes, p99) = merge_hlogs(logs, base_time).map_err(anyhow::Error::msg)?;
            slot_p99 = p99;
            hlogs.insert(index, bytes);
        }
        runs.push(
            merge_run(&records, sharded, &shift, &slot_p99)
                .map_err(|e| BadInput(format!("merge: {e}")))?,
        );
    }
    let config = first.config.clone();
    let results = Results {
        started_at: inputs
            .iter()
            .map(|i| i.results.started_at.clone())
            .min()
            .unwrap_or_default(),
        finished_at: inputs
            .iter()
            .map(|i| i.results.finished_at.clone())
            .max()
            .flatten(),
        complete: inputs.iter().all(|i| i.results.complete),
        config,
        runs,
        ..first.clone()
    };
    let results = as_whole_study(results, &window_starts)?;
    let dir = store::create_results_dir(Some(out), "merged-", store::RESULTS_JSON)?.path;
    let write = || -> Result<()> {
        let mut db = store::sqlite::Store::create(&dir.join(store::sqlite::DB_FILE))?;
        db.save_header(&results)?;
        for r in &results.runs {
            db.save_run(r)?;
        }
        if !hlogs.is_empty() {
            let hdir = dir.join("histograms");
            std::fs::create_dir_all(&hdir)
                .with_context(|| format!("creating {}", hdir.display()))?;
            for (index, bytes) in &hlogs {
                let p = hdir.join(format!("run-{index}.hlog"));
                std::fs::write(&p, bytes).with_context(|| format!("writing {}", p.display()))?;
            }
        }
        crate::report::files::write(&dir, &results, crate::report::files::Format::ALL)
            .map_err(anyhow::Error::msg)?;
        // results.json as the report wrote it, with the windows' starts
        // (a field this build's record type may not carry).
        let path = dir.join(store::RESULTS_JSON);
        let mut v: Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        strip_shard(&mut v, &window_starts);
        store::write_atomic(&path, &serde_json::to_vec_pretty(&v)?)?;
        Ok(())
    };
    write().with_context(|| format!("writing the merged results into {}", dir.display()))?;
    Ok(Outcome {
        results,
        warnings,
        hlogs: hlogs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    /// Two runs of one cell with different latencies and failures, as
    /// two shards would record them.
    fn two_runs() -> (RunRecord, RunRecord, Histogram<u64>) {
        let r = fixture::results();
        let mut a = r.runs[1].clone();
        let mut b = a.clone();
        let (ha, hb) = (hist(1_000..2_000), hist((0..100).map(|i| 50_000 + i * 10)));
        a.latency_histogram = encode_histogram(&ha);
        b.latency_histogram = encode_histogram(&hb);
        a.transactions[0].latency_histogram = a.latency_histogram.clone();
        b.transactions[0].latency_histogram = b.latency_histogram.clone();
        a.committed = 1_000;
        b.committed = 100;
        a.failed = BTreeMap::from([("40001".into(), 7)]);
        b.failed = BTreeMap::from([("40001".into(), 3), ("40P01".into(), 2)]);
        a.failed_by_type = BTreeMap::from([("tpcb-like".into(), a.failed.clone())]);
        b.failed_by_type = BTreeMap::from([("tpcb-like".into(), b.failed.clone())]);
        a.transactions[0].failed = a.failed.clone();
        b.transactions[0].failed = b.failed.clone();
        a.transactions[0].failure_reasons = vec![FailureReasonRecord {
            sqlstate: "40001".into(),
            reason: Some("pivot".into()),
            statement: Some("COMMIT".into()),
            attempts: 9,
            failed: 7,
        }];
        b.transactions[0].failure_reasons = vec![
            FailureReasonRecord {
                sqlstate: "40P01".into(),
                reason: None,
                statement: None,
                attempts: 2,
                failed: 2,
            },
            FailureReasonRecord {
                sqlstate: "40001".into(),
                reason: Some("pivot".into()),
                statement: Some("COMMIT".into()),
                attempts: 4,
                failed: 3,
            },
        ];
        a.retries = 20;
        b.retries = 5;
        a.client_cpu_s = 1.0;
        b.client_cpu_s = 0.5;
        let mut all = ha.clone();
        all.add(&hb).unwrap();
        (a, b, all)
    }

    #[test]
    fn counters_are_summed_and_percentiles_come_from_the_added_histograms() {
        let (a, b, all) = two_runs();
        let m = merge_run(&[&a, &b], true, &[0, 0], &BTreeMap::new()).unwrap();
        assert_eq!(m.committed, 1_100);
        assert_eq!(m.tps, 1_100.0 / a.duration_s);
        assert_eq!(m.retries, 25);
        assert_eq!(m.retries_per_commit, 25.0 / 1_100.0);
        assert_eq!(
            m.failed,
            BTreeMap::from([("40001".into(), 10), ("40P01".into(), 2)])
        );
        assert_eq!(m.failed_by_type["tpcb-like"], m.failed);
        assert_eq!(m.transactions[0].failed, m.failed);
        assert_eq!(m.client_cpu_s, 1.5);
        assert_eq!(m.client_cpu_us_per_tx, 1.5e6 / 1_100.0);
        // Failure reasons: the same (SQLSTATE, reason, statement) summed,
        // most frequent first.
        let fr = &m.transactions[0].failure_reasons;
        assert_eq!(fr.len(), 2);
        assert_eq!(
            (fr[0].sqlstate.as_str(), fr[0].attempts, fr[0].failed),
            ("40001", 13, 10)
        );
        assert_eq!((fr[1].sqlstate.as_str(), fr[1].attempts), ("40P01", 2));
        // The p99 of 1,000 samples near 1-2 ms and 100 near 50 ms: the
        // added histogram's (in the 50 ms group), not the average of the
        // two p99s (about 26 ms).
        let merged = decode_histogram(&m.latency_histogram).unwrap();
        assert_eq!(merged.len(), 1_100);
        let p99 = all.value_at_quantile(0.99) as f64 / 1000.0;
        assert_eq!(m.latency_ms.p99, p99);
        assert!(p99 > 50.0, "{p99}");
        let ha = decode_histogram(&a.latency_histogram).unwrap();
        let hb = decode_histogram(&b.latency_histogram).unwrap();
        let avg = (ha.value_at_quantile(0.99) + hb.value_at_quantile(0.99)) as f64 / 2000.0;
        assert!(
            (m.latency_ms.p99 - avg).abs() > 10.0,
            "{} vs {avg}",
            m.latency_ms.p99
        );
        assert_eq!(m.transactions[0].latency_ms.p99, p99);
        // Server observations and invariants: the first input's.
        assert_eq!(m.server, a.server);
        assert_eq!(m.invariants, a.invariants);
        // Shards share the cell's clients; independent runs add them.
        let shards = merge_run(&[&a, &b], true, &[0, 0], &BTreeMap::new()).unwrap();
        let repeats = merge_run(&[&a, &b], false, &[0, 0], &BTreeMap::new()).unwrap();
        assert!((shards.wasted_time_pct - 2.0 * repeats.wasted_time_pct).abs() < 1e-9);
    }

    #[test]
    fn hosts_are_summed_by_name_with_their_histograms_added() {
        let (mut a, mut b, all) = two_runs();
        let host = |name: &str, clients, committed, failed, hist: &str| crate::model::HostRecord {
            host: name.into(),
            clients,
            refused: 0,
            committed,
            tps: 0.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            failed,
            latency_histogram: hist.into(),
        };
        let empty = encode_histogram(&new_histogram());
        // Shard a ran every commit on host x, shard b on host y and x.
        a.hosts = vec![
            host("x:1", 2, 1_000, 7, &a.latency_histogram),
            host("y:2", 2, 0, 0, &empty),
        ];
        b.hosts = vec![
            host("y:2", 1, 100, 5, &b.latency_histogram),
            host("z:3", 1, 0, 0, &empty),
        ];
        let m = merge_run(&[&a, &b], true, &[0, 0], &BTreeMap::new()).unwrap();
        let names: Vec<&str> = m.hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(names, ["x:1", "y:2", "z:3"]);
        assert_eq!(
            (m.hosts[0].clients, m.hosts[0].committed, m.hosts[0].failed),
            (2, 1_000, 7)
        );
        assert_eq!(
            (m.hosts[1].clients, m.hosts[1].committed, m.hosts[1].failed),
            (3, 100, 5)
        );
        assert_eq!(m.hosts[1].tps, 100.0 / a.duration_s);
        let y = decode_histogram(&m.hosts[1].latency_histogram).unwrap();
        assert_eq!(y.len(), 100);
        // Every host's histogram added is the run's.
        let mut sum = new_histogram();
        for h in &m.hosts {
            sum.add(decode_histogram(&h.latency_histogram).unwrap())
                .unwrap();
        }
        assert_eq!(sum.value_at_quantile(0.99), all.value_at_quantile(0.99));
        assert_eq!(
            m.hosts.iter().map(|h| h.committed).sum::<u64>(),
            m.committed
        );
    }

    #[test]
    fn one_run_merges_to_itself() {
        let (a, _, _) = two_runs();
        assert_eq!(merge_run(&[&a], true, &[0], &BTreeMap::new()).unwrap(), a);
    }

    fn point(t_s: f64, committed: u64, p99_ms: f64) -> SecondPoint {
        SecondPoint {
            t_s,
            committed,
            tps: committed as f64,
            p99_ms,
            failed: 1,
            lag_ms: None,
        }
    }

    #[test]
    fn seconds_align_on_the_shift_and_add() {
        let a = [point(1.0, 10, 2.0), point(2.0, 20, 3.0)];
        let b = [point(1.001, 5, 9.0), point(2.002, 6, 1.0)];
        // b's window started a second later.
        let m = merge_seconds(&[&a, &b], &[0, 1], &BTreeMap::from([(1, 4.5)]));
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].committed, m[0].p99_ms, m[0].t_s), (10, 2.0, 1.0));
        // Second 1: a's second and b's first; p99 from the merged log.
        assert_eq!(
            (m[1].committed, m[1].failed, m[1].tps, m[1].p99_ms),
            (25, 2, 25.0, 4.5)
        );
        assert_eq!((m[2].committed, m[2].t_s), (6, 3.002));
        // Without the log, the larger p99 (an upper bound), never a mean.
        let m = merge_seconds(&[&a, &b], &[0, 0], &BTreeMap::new());
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].committed, m[0].p99_ms), (15, 9.0));
    }

    fn log(intervals: &[(u64, &str, Histogram<u64>)]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut s = V2DeflateSerializer::new();
        let mut w = IntervalLogWriterBuilder::new()
            .with_base_time(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .begin_log_with(&mut buf, &mut s)
            .unwrap();
        for (start, tag, h) in intervals {
            w.write_histogram(
                h,
                Duration::from_secs(*start),
                Duration::from_secs(1),
                Tag::new(tag),
            )
            .unwrap();
        }
        drop(w);
        buf
    }

    #[test]
    fn interval_logs_add_the_same_second_and_tag() {
        let a = log(&[
            (0, "x", hist([100, 200])),
            (1, "x", hist([300])),
            (1, "y", hist([5_000])),
        ]);
        let b = log(&[(0, "x", hist([400])), (0, "y", hist([7_000]))]);
        let (la, base) = read_hlog(&a, 0).unwrap();
        assert_eq!(base, Some(Duration::from_secs(1_700_000_000)));
        let (lb, _) = read_hlog(&b, 1).unwrap(); // b started a second later
        let (bytes, p99) = merge_hlogs(vec![la, lb], None).unwrap();
        let (m, _) = read_hlog(&bytes, 0).unwrap();
        let got: Vec<(i64, Option<&str>, u64)> = m
            .iter()
            .map(|(s, _, t, h)| (*s, t.as_deref(), h.len()))
            .collect();
        assert_eq!(
            got,
            vec![(0, Some("x"), 2), (1, Some("x"), 2), (1, Some("y"), 2)]
        );
        assert_eq!(m[1].3.max(), m[1].3.highest_equivalent(400));
        // Second 1's p99 over both tags: the 7,000 µs sample's group.
        let all = hist([300, 400, 5_000, 7_000]);
        assert_eq!(p99[&1], all.value_at_quantile(0.99) as f64 / 1000.0);
    }

    fn input(name: &str, results: Results, shard: Option<(u32, u32)>) -> Input {
        let mut config = serde_json::to_value(&results.config).unwrap();
        if let Some((index, count)) = shard {
            config["shard"] = serde_json::json!({"index": index, "count": count});
        }
        Input {
            dir: PathBuf::from(name),
            results,
            config,
            shard: shard.map(|(index, count)| ShardOf { index, count }),
            window_start: BTreeMap::new(),
            window_start_text: BTreeMap::new(),
        }
    }

    #[test]
    fn other_studies_runs_and_duplicate_shards_are_refused_naming_them() {
        let r = fixture::results();
        // Shards in any order: shard 0 first; a missing one is a warning.
        let mut ok = vec![
            input("s2", r.clone(), Some((2, 4))),
            input("s0", r.clone(), Some((0, 4))),
            input("s1", r.clone(), Some((1, 4))),
        ];
        let w = check(&mut ok).unwrap();
        assert_eq!(ok[0].dir, PathBuf::from("s0"));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("shard(s) 3 of 0..3 missing"), "{}", w[0]);
        // Another study: the key is named.
        let mut other = r.clone();
        other.config.duration_s = 5.0;
        let e = check(&mut [input("a", r.clone(), None), input("b", other, None)])
            .unwrap_err()
            .0;
        assert!(
            e.contains("a and b") && e.contains("config.duration_s differs"),
            "{e}"
        );
        // A managed server's address is not the study.
        let mut moved = r.clone();
        moved.config.target = format!("{} (socket /tmp/x, 127.0.0.1:5999)", r.config.target);
        assert!(check(&mut [input("a", r.clone(), None), input("b", moved, None)]).is_ok());
        // An external server's description is compared whole.
        let (mut x, mut y) = (r.clone(), r.clone());
        x.config.target = "external host=db1 port=5432 (PostgreSQL 16)".into();
        y.config.target = "external host=db2 port=5432 (PostgreSQL 16)".into();
        let e = check(&mut [input("a", x, None), input("b", y, None)])
            .unwrap_err()
            .0;
        assert!(e.contains("config.target differs"), "{e}");
        // Other runs.
        let mut fewer = r.clone();
        fewer.runs.pop();
        let e = check(&mut [input("a", r.clone(), None), input("b", fewer, None)])
            .unwrap_err()
            .0;
        assert!(e.contains("runs differ"), "{e}");
        // The same shard twice.
        let e = check(&mut [
            input("a", r.clone(), Some((1, 2))),
            input("b", r.clone(), Some((1, 2))),
        ])
        .unwrap_err()
        .0;
        assert!(e.contains("a and b: both are shard 1"), "{e}");
        // Shard counts differ.
        let e = check(&mut [
            input("a", r.clone(), Some((0, 2))),
            input("b", r.clone(), Some((1, 3))),
        ])
        .unwrap_err()
        .0;
        assert!(e.contains("config.shard.count differs"), "{e}");
    }

    #[test]
    fn shards_shift_by_whole_seconds_of_their_window_starts() {
        let r = fixture::results();
        let mut a = input("a", r.clone(), Some((0, 2)));
        let mut b = input("b", r.clone(), Some((1, 2)));
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap();
        a.window_start.insert(1, t("2026-01-01T00:00:02.100Z"));
        b.window_start.insert(1, t("2026-01-01T00:00:00.050Z"));
        assert_eq!(shifts(&[a.clone(), b.clone()], 1), vec![2, 0]);
        b.window_start.insert(1, t("2026-01-01T00:00:02.000Z"));
        assert_eq!(shifts(&[a.clone(), b.clone()], 1), vec![0, 0]);
        // Not shards: no shift.
        a.shard = None;
        b.shard = None;
        assert_eq!(shifts(&[a, b], 1), vec![0, 0]);
    }

    /// Writes `r` as shard `index` of 2 into `dir`, each run's window
    /// starting at `start` (RFC 3339), with an interval log for run 1.
    fn shard_dir(dir: &Path, mut r: Results, index: u32, start: &str, log_bytes: &[u8]) {
        std::fs::create_dir_all(dir.join("histograms")).unwrap();
        for run in &mut r.runs {
            run.per_second = vec![point(1.0, 10, 1.0), point(2.0, 10, 1.0)];
        }
        let mut v = serde_json::to_value(&r).unwrap();
        v["config"]["shard"] = serde_json::json!({"index": index, "count": 2});
        for run in v["runs"].as_array_mut().unwrap() {
            run["window_start"] = Value::String(start.into());
            run["shard_clients"] = serde_json::json!(2);
        }
        std::fs::write(dir.join("results.json"), serde_json::to_vec(&v).unwrap()).unwrap();
        std::fs::write(dir.join("histograms/run-1.hlog"), log_bytes).unwrap();
    }

    #[test]
    fn shard_directories_merge_on_their_window_starts() {
        let base = tempfile::tempdir().unwrap();
        let r = fixture::results();
        let (s0, s1, out) = (
            base.path().join("s0"),
            base.path().join("s1"),
            base.path().join("m"),
        );
        // Shard 1's windows began 1.2 s after shard 0's (as by a clock).
        shard_dir(
            &s1,
            r.clone(),
            1,
            "2026-01-01T00:00:01.2Z",
            &log(&[(0, "x", hist([900]))]),
        );
        shard_dir(
            &s0,
            r.clone(),
            0,
            "2026-01-01T00:00:00Z",
            &log(&[(1, "x", hist([100]))]),
        );
        let o = merge_dirs(&[s1.clone(), s0.clone()], &out).unwrap();
        assert!(o.warnings.is_empty(), "{:?}", o.warnings);
        assert_eq!(o.hlogs, 1);
        let v: Value =
            serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
        assert!(v["config"].get("shard").is_none(), "{}", v["config"]);
        let run = &v["runs"][0];
        assert_eq!(run["window_start"], "2026-01-01T00:00:00Z");
        assert!(run.get("shard_clients").is_none(), "{run}");
        assert_eq!(run["committed"], 2 * r.runs[0].committed);
        // Seconds 0 and 1 of shard 0, 1 and 2 of shard 1 (shifted by one).
        let committed: Vec<u64> = run["per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["committed"].as_u64().unwrap())
            .collect();
        assert_eq!(committed, vec![10, 20, 10]);
        // Second 1 in the merged log: both shards' samples, one interval.
        let (m, _) = read_hlog(
            &std::fs::read(out.join("histograms/run-1.hlog")).unwrap(),
            0,
        )
        .unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].0, m[0].3.len()), (1, 2));
        assert_eq!(
            run["per_second"][1]["p99_ms"],
            m[0].3.value_at_quantile(0.99) as f64 / 1000.0
        );
        for f in [
            "report.md",
            "report.html",
            "cells.csv",
            "runs.csv",
            "cells.json",
            "results.sqlite",
        ] {
            assert!(out.join(f).is_file(), "{f}");
        }
        // The store reads back with the merged numbers.
        let stored = crate::store::load_dir(&out).unwrap();
        assert_eq!(stored.runs[0].committed, 2 * r.runs[0].committed);
        // A second merge into the same directory is refused.
        let e = merge_dirs(&[s0.clone(), s1.clone()], &out).unwrap_err();
        assert!(e.chain().any(|c| c.is::<BadInput>()), "{e:#}");
        // So is merging into one of the inputs.
        let e = merge_dirs(&[s0.clone(), s1], &s0).unwrap_err();
        assert!(
            format!("{e:#}").contains("is one of the directories to merge"),
            "{e:#}"
        );
    }
}
