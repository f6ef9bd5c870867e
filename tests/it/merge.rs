//! `isobench merge`: two runs of one tiny study (same seed and settings)
//! merged into one directory; another study refused; one directory merged
//! to itself.

use std::path::Path;

use crate::common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

/// A tiny study into `dir`: TPC-B at scale 1, 2 clients, rc and ser, 2 s.
fn study(dir: &Path, duration: &str) {
    let ran = Study::short()
        .duration(duration)
        .warmup("500ms")
        .sample_interval("1s")
        .out(dir)
        .args(&[
            "--scale",
            "1",
            "--clients",
            "2",
            "--isolation",
            "rc,ser",
            "--seed",
            "7",
        ])
        .run();
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "isobench run failed: {stderr}");
}

fn decode(b64: &str) -> Histogram<u64> {
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, b64).unwrap();
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap()
}

/// Samples in every interval of `dir/histograms/run-N.hlog`.
fn hlog_count(dir: &Path, index: u64) -> u64 {
    let bytes = std::fs::read(dir.join(format!("histograms/run-{index}.hlog"))).unwrap();
    IntervalLogIterator::new(&bytes)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(i) => Some(decode(i.encoded_histogram()).len()),
            _ => None,
        })
        .sum()
}

fn merge(args: &[&str]) -> (std::process::Output, String, String) {
    let mut a = vec!["merge"];
    a.extend_from_slice(args);
    run(&a)
}

#[test]
fn two_runs_merge_to_sums_and_added_histograms_other_studies_are_refused() {
    let (_keep, base) = out_dir("merge");
    let (a, b, m) = (base.join("a"), base.join("b"), base.join("merged"));
    study(&a, "2s");
    study(&b, "2s");
    let (out, stdout, stderr) = merge(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        m.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "merge failed: {stderr}");
    assert!(stdout.contains("merged 2 directories"), "{stdout}");
    let (ra, rb, rm) = (read_json(&a), read_json(&b), read_json(&m));
    assert_schema_valid(&rm);
    for f in [
        "report.md",
        "report.html",
        "cells.csv",
        "cells.json",
        "runs.csv",
        "results.sqlite",
    ] {
        assert!(m.join(f).is_file(), "{f} missing in the merged directory");
    }
    let runs = |r: &Value| r["runs"].as_array().unwrap().clone();
    assert_eq!(runs(&rm).len(), 2);
    for ((x, y), z) in runs(&ra).iter().zip(&runs(&rb)).zip(&runs(&rm)) {
        let n = |r: &Value, k: &str| r[k].as_u64().unwrap();
        assert!(n(x, "committed") > 0 && n(y, "committed") > 0);
        assert_eq!(n(z, "committed"), n(x, "committed") + n(y, "committed"));
        assert_eq!(n(z, "attempts"), n(x, "attempts") + n(y, "attempts"));
        assert_eq!(n(z, "retries"), n(x, "retries") + n(y, "retries"));
        let tps = n(z, "committed") as f64 / z["duration_s"].as_f64().unwrap();
        assert!((z["tps"].as_f64().unwrap() - tps).abs() < 1e-6);
        // The p99 of the two histograms added, computed here with the
        // hdrhistogram crate: not the average of the two p99s.
        let mut sum = decode(x["latency_histogram"].as_str().unwrap());
        let hy = decode(y["latency_histogram"].as_str().unwrap());
        sum.add(&hy).unwrap();
        let merged = decode(z["latency_histogram"].as_str().unwrap());
        assert_eq!(merged.len(), n(z, "committed"));
        assert_eq!(merged.len(), sum.len());
        let p99 = sum.value_at_quantile(0.99) as f64 / 1000.0;
        assert_eq!(z["latency_ms"]["p99"].as_f64().unwrap(), p99);
        assert_eq!(merged.value_at_quantile(0.99), sum.value_at_quantile(0.99));
        assert_eq!(
            z["latency_ms"]["max"].as_f64().unwrap(),
            sum.max() as f64 / 1000.0
        );
        // Per-second series summed second by second.
        let sec = |r: &Value| -> u64 {
            r["per_second"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["committed"].as_u64().unwrap())
                .sum()
        };
        assert_eq!(sec(z), sec(x) + sec(y));
        // The interval logs merged interval by interval.
        let i = n(z, "index");
        assert_eq!(hlog_count(&m, i), hlog_count(&a, i) + hlog_count(&b, i));
        // Observations: the first directory's. Invariants: both
        // directories checked their own data, so they add (issue #37).
        assert_eq!(z["server"], x["server"]);
        let inv = |r: &Value| r["invariants"].as_array().unwrap().clone();
        assert_eq!(inv(z).len(), inv(x).len());
        for ((iz, ix), iy) in inv(z).iter().zip(&inv(x)).zip(&inv(y)) {
            assert_eq!(iz["name"], ix["name"]);
            assert_eq!(
                iz["violations"].as_u64(),
                Some(ix["violations"].as_u64().unwrap() + iy["violations"].as_u64().unwrap())
            );
            assert_eq!(iz["ok"], Value::Bool(ix["ok"] == true && iy["ok"] == true));
        }
        assert_eq!(z["anomalies"], n(x, "anomalies") + n(y, "anomalies"));
        // Effective TPS from the merged counts (none lost: the merged tps).
        assert_eq!(z["effective_tps"], z["tps"]);
    }

    // A directory of another study: exit 2, naming it and the key.
    let c = base.join("c");
    study(&c, "3s");
    let (out, _, stderr) = merge(&[
        a.to_str().unwrap(),
        c.to_str().unwrap(),
        "--out",
        base.join("bad").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(c.to_str().unwrap()) && stderr.contains("config.duration_s differs"),
        "{stderr}"
    );
    assert!(!base.join("bad").join("results.json").exists());

    // One directory merges to its own numbers.
    let one = base.join("one");
    let (out, _, stderr) = merge(&[a.to_str().unwrap(), "--out", one.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    let ro = read_json(&one);
    for (x, o) in runs(&ra).iter().zip(&runs(&ro)) {
        for k in [
            "committed",
            "tps",
            "attempts",
            "retries",
            "failed",
            "failed_by_type",
            "unknown_outcome",
            "user_aborts",
            "failure_pct",
            "retries_per_commit",
            "wasted_ms",
            "wasted_attempts",
            "abort_ratio",
            "wasted_time_pct",
            "transactions",
            "latency_ms",
            "latency_histogram",
            "per_second",
            "client_cpu_s",
            "client_cpu_us_per_tx",
            "lifetime",
            "skipped",
            "late",
            "pool_wait_ms",
            "schedule_lag_ms",
            "server",
            "invariants",
        ] {
            assert_eq!(o[k], x[k], "run {}: {k}", x["index"]);
        }
    }
    assert!(one.join("histograms/run-1.hlog").is_file());
    assert_eq!(hlog_count(&one, 1), hlog_count(&a, 1));

    // The output directory of an earlier merge is not overwritten.
    let (out, _, stderr) = merge(&[a.to_str().unwrap(), "--out", one.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--out"), "{stderr}");
}

/// deploy/kubernetes: the Indexed Job runs N shards at once (completions
/// = parallelism = the `--shards` count), each into the directory of its
/// index, the merge Job reads them all, the image is two stages with the
/// PostgreSQL client, and the ConfigMap's study is a valid study file
/// (it gets as far as connecting to a server that is not there: exit 1,
/// not 2).
#[test]
fn the_kubernetes_deployment_agrees_with_itself() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let read = |f: &str| std::fs::read_to_string(root.join(f)).unwrap();
    let job = read("shards-job.yaml");
    let field = |name: &str| -> u32 {
        let line = job
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("shards-job.yaml lacks {name}"));
        line.split(':').nth(1).unwrap().trim().parse().unwrap()
    };
    assert!(job.contains("completionMode: Indexed"));
    let n = field("completions");
    assert_eq!(field("parallelism"), n);
    assert!(job.contains(&format!("--shards {n} ")), "{job}");
    assert!(
        job.contains("-o /results/shard-$JOB_COMPLETION_INDEX"),
        "{job}"
    );
    assert!(job.contains("isobench run /study/study.toml"), "{job}");
    assert!(
        job.contains("name: isobench-study")
            && read("study-configmap.yaml").contains("name: isobench-study")
    );
    assert!(
        read("merge-job.yaml").contains("isobench merge /results/shard-* --out /results/merged")
    );
    let docker = read("Dockerfile");
    let froms: Vec<&str> = docker.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    assert!(froms[0].starts_with("FROM rust:") && froms[1] == "FROM debian:bookworm-slim");
    assert!(docker.contains("cargo build --release") && docker.contains("postgresql-client"));
    // The ConfigMap's study.toml, unindented.
    let cm = read("study-configmap.yaml");
    let body = &cm[cm.find("study.toml: |").unwrap()..];
    let study: String = body
        .lines()
        .skip(1)
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("study.toml");
    std::fs::write(&file, study).unwrap();
    let (out, _, stderr) = run(&[
        "run",
        file.to_str().unwrap(),
        "--dsn",
        "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2",
        "--quiet",
        "--out",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("study.toml:"), "{stderr}");
}
