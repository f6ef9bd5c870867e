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
//! V2 + DEFLATE, base64; `model::decode_histogram`) are added,
//! and every percentile is recomputed from the sum, never averaged; rates
//! and shares (tps, failure %, retries per commit, abort ratio, wasted
//! time %, CPU per transaction, effective TPS) are recomputed from the
//! sums by the definition a run uses ([`RunRecord::derive_figures`]), so
//! that no figure is one input's. Invariant results are merged by check
//! (shards: shard 0's, which checked every shard's commits; independent
//! runs: violations and lost commits added), and the anomalies added.
//! Per-second points are aligned on the measured window's start
//! (`window_start`, the server's clock when sharded) and summed. Server
//! observations, plans, the environment and the load come from shard 0
//! (or the first directory). Per-host records (`runs[].hosts`, a DSN with several
//! hosts) are summed by host name, histograms added.
//! `histograms/run-N.hlog` interval logs are merged interval by
//! interval (histograms of the same second and tag added) and written with
//! the `hdrhistogram` crate's interval-log writer. The reports are then
//! written as `isobench report` writes them.

mod hlog;
mod input;
mod records;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::model::BadInput;
use crate::store::{self, Results, RunRecord};

use clap::Args;

use super::{Exit, WidthArg, out};
pub use hlog::{merge_hlogs, read_hlog};
pub use input::{Input, ShardOf, check, read_input, shifts};
pub use records::{merge_run, merge_seconds};

/// Flags of `isobench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Results directories written by `isobench run` for one study (e.g. `results/shard-*`).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory (new, or empty).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub width: WidthArg,
}

/// Merges the directories, prints the terminal summary of the result.
///
/// Errors: as [`merge_dirs`].
pub fn command(args: MergeArgs) -> Result<Exit> {
    let merged = merge_dirs(&args.dirs, &args.out)?;
    for w in &merged.warnings {
        eprintln!("isobench merge: warning: {w}");
    }
    let model = crate::report::analysis::model::ReportModel::new(&merged.results);
    out(&format!(
        "{}merged {} director{} ({} run(s), {} interval log(s)) into {}\n",
        crate::report::render::terminal::summary_of(&model, args.width.columns()),
        args.dirs.len(),
        if args.dirs.len() == 1 { "y" } else { "ies" },
        merged.results.runs.len(),
        merged.hlogs,
        args.out.display()
    ));
    Ok(Exit::Done)
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
pub struct Merged {
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
pub fn merge_dirs(dirs: &[PathBuf], out: &Path) -> Result<Merged> {
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
    Ok(Merged {
        results,
        warnings,
        hlogs: hlogs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SecondPoint;
    use crate::model::fixture;
    use crate::model::{decode_histogram, encode_histogram, new_histogram};
    use crate::store::FailureReasonRecord;
    use chrono::DateTime;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

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
        // Server observations: the first input's; invariants of
        // independent runs add (both inputs checked their own data).
        assert_eq!(m.server, a.server);
        assert_eq!(m.invariants.len(), a.invariants.len());
        for (x, y) in m.invariants.iter().zip(&a.invariants) {
            assert_eq!(
                (&x.name, x.ok, x.violations),
                (&y.name, y.ok, 2 * y.violations)
            );
        }
        // Shards share the cell's clients; independent runs add them.
        let shards = merge_run(&[&a, &b], true, &[0, 0], &BTreeMap::new()).unwrap();
        let repeats = merge_run(&[&a, &b], false, &[0, 0], &BTreeMap::new()).unwrap();
        assert!((shards.wasted_time_pct - 2.0 * repeats.wasted_time_pct).abs() < 1e-9);
    }

    /// Issue #37: a merged run's derived figures are the merged counts',
    /// not shard 0's. Shard 0 holds the invariants (it checked every
    /// shard's commits, none lost), so the merged effective TPS is the
    /// merged TPS; before, the merged run kept shard 0's (a third of it)
    /// and the report called the difference swallowed failures.
    #[test]
    fn derived_figures_come_from_the_merged_counts_not_the_first_input() {
        let r = fixture::swallowed_history();
        // An rc run: its history check held (lost 0).
        let mut a = r.runs[0].clone();
        let mut b = a.clone();
        b.invariants.clear();
        b.anomalies = 0;
        // What a shard 0 of three records: its own TPS, and an effective
        // TPS of its own commits only.
        a.effective_tps = Some(a.tps);
        b.committed = 2 * a.committed;
        b.lifetime.committed = 2 * a.lifetime.committed;
        b.failed = BTreeMap::from([("40001".into(), 50)]);
        let m = merge_run(&[&a, &b], true, &[0, 0], &BTreeMap::new()).unwrap();
        assert_eq!(m.committed, 3 * a.committed);
        assert_eq!(m.tps, 3.0 * a.committed as f64 / a.duration_s);
        assert_eq!(
            m.effective_tps,
            Some(m.tps),
            "not shard 0's {:?}",
            a.effective_tps
        );
        // Every figure is what the run's own definition gives for the
        // merged counts.
        let mut again = m.clone();
        again.tps = f64::NAN;
        again.failure_pct = f64::NAN;
        again.retries_per_commit = f64::NAN;
        again.abort_ratio = f64::NAN;
        again.wasted_time_pct = f64::NAN;
        again.client_cpu_us_per_tx = f64::NAN;
        again.effective_tps = None;
        again.derive_figures(f64::from(m.cell.clients));
        assert_eq!(again, m);
        let failed: u64 = m.failed.values().sum();
        let n = m.committed + m.user_aborts + failed + m.unknown_outcome;
        assert_eq!(m.failure_pct, 100.0 * failed as f64 / n as f64);
        assert_eq!(m.invariants, a.invariants);
        // Lost commits add when both inputs checked (independent runs).
        let mut lost = r.runs[1].clone();
        lost.invariants[0].lost_commits = Some(100);
        let m = merge_run(&[&lost, &lost], false, &[0, 0], &BTreeMap::new()).unwrap();
        assert_eq!(m.invariants[0].lost_commits, Some(200));
        assert_eq!(m.anomalies, 2 * lost.anomalies);
        let kept = 1.0 - 200.0 / (2 * lost.lifetime.committed) as f64;
        assert!((m.effective_tps.unwrap() - m.tps * kept).abs() < 1e-9);
    }

    /// Declared checks of independent runs add by check: a declared check
    /// and a workload invariant of one name stay apart; samples add, the
    /// earliest first violation and its rows are kept.
    #[test]
    fn declared_checks_merge_by_check_and_add_their_samples() {
        use crate::model::{CheckRows, DuringCheck, InvariantResult};
        let (mut a, mut b, _) = two_runs();
        let declared = |violations, first: Option<f64>, row: &str| InvariantResult {
            declared: true,
            rows: Some(CheckRows {
                columns: vec!["id".into()],
                rows: vec![vec![Some(row.into())]],
            }),
            during: Some(DuringCheck {
                samples: 5,
                violated_samples: u32::from(first.is_some()),
                max_violations: violations,
                first_violation_s: first,
                rows: first.map(|_| CheckRows {
                    columns: vec!["id".into()],
                    rows: vec![vec![Some(row.into())]],
                }),
            }),
            ..InvariantResult::count("balances-consistent", violations, String::new())
        };
        a.invariants.push(declared(0, None, "a"));
        b.invariants.push(declared(2, Some(1.5), "b"));
        let m = merge_run(&[&a, &b], false, &[0, 0], &BTreeMap::new()).unwrap();
        let own: Vec<_> = m.invariants.iter().filter(|i| !i.declared).collect();
        let d: Vec<_> = m.invariants.iter().filter(|i| i.declared).collect();
        assert_eq!((own.len(), d.len()), (a.invariants.len() - 1, 1));
        let d = d[0];
        assert_eq!((d.violations, d.ok), (2, false));
        assert_eq!(d.rows.as_ref().unwrap().rows[0][0].as_deref(), Some("a"));
        let during = d.during.as_ref().unwrap();
        assert_eq!(
            (
                during.samples,
                during.violated_samples,
                during.max_violations
            ),
            (10, 1, 2)
        );
        assert_eq!(during.first_violation_s, Some(1.5));
        assert_eq!(
            during.rows.as_ref().unwrap().rows[0][0].as_deref(),
            Some("b")
        );
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

    /// A command's means are over its completed executions (a failed one
    /// has no time in them, as pgbench `-r`), so merging weights each
    /// input's mean by its completed executions, not by all of them.
    #[test]
    fn command_means_merge_weighted_by_completed_executions() {
        use crate::store::CommandRecord;
        let (a, b, _) = two_runs();
        let (mut ta, mut tb) = (a.transactions[0].clone(), b.transactions[0].clone());
        let cmd = |executions, mean_ms, failures| CommandRecord {
            command: "UPDATE pgbench_branches ...".into(),
            executions,
            mean_ms,
            failures,
        };
        // 10 executions, 9 failed: 1 completed at 4 ms; 10, none failed,
        // at 1 ms. Over completed executions: (4 + 10) / 11 ms.
        ta.commands = vec![cmd(10, 4.0, 9)];
        tb.commands = vec![cmd(10, 1.0, 0)];
        let m = records::merge_tx_type(&[&ta, &tb]).unwrap();
        assert_eq!(m.commands.len(), 1);
        assert_eq!((m.commands[0].executions, m.commands[0].failures), (20, 9));
        assert!(
            (m.commands[0].mean_ms - 14.0 / 11.0).abs() < 1e-9,
            "{:?}",
            m.commands[0]
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
