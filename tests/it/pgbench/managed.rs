//! `isobench pgbench` on the managed server (a fresh copy of pgbench's
//! tables): pgbench's output parsed back the way wrappers parse it, the
//! end by count (`-t`) and `isobench run --transactions`.

use super::*;
use crate::common::*;

/// The built-in TPC-B-like script on the managed server, with -P 1 and
/// -r: pgbench's summary, progress and per-command lines, the same
/// figures in isobench's results directory.
#[test]
fn builtin_tpcb_with_progress_and_per_command() {
    let (_keep, dir) = out_dir("pgbench-tpcb");
    let (out, stdout, stderr) = run(&[
        "pgbench",
        "-c",
        "2",
        "-j",
        "2",
        "-T",
        "2",
        "-P",
        "1",
        "-r",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("transaction type: <builtin: TPC-B (sort of)>\n"),
        "{stdout}"
    );
    assert!(stdout.contains("scaling factor: 1\nquery mode: simple\nnumber of clients: 2\nnumber of threads: 2\nmaximum number of tries: 1\nduration: 2 s\n"), "{stdout}");
    let s = summary(&stdout);
    assert!(
        s.processed > 0 && s.failed == 0 && s.failed_pct == 0.0,
        "{s:?}"
    );
    // -P: latency average and stddev from the measured latencies.
    assert!(stdout.contains("latency stddev = "), "{stdout}");
    let progress = progress_lines(&stderr, false);
    assert_eq!(progress.len(), 2, "{stderr}");
    assert_eq!(progress[0].0, 1.0, "{stderr}");
    // The summary's tps is the window's; the progress lines' mean is near it.
    let mean = progress.iter().map(|p| p.1).sum::<f64>() / progress.len() as f64;
    assert!((mean - s.tps).abs() <= 0.15 * s.tps, "{mean} vs {}", s.tps);
    assert!(
        stdout.contains("statement latencies in milliseconds and failures:\n"),
        "{stdout}"
    );
    let cmds = per_command(&stdout, false);
    let names: Vec<&str> = cmds.iter().map(|c| c.2.as_str()).collect();
    assert_eq!(names.len(), 11, "{stdout}");
    assert_eq!(names[0], r"\set aid random(1, 100000 * :scale)");
    assert_eq!(
        names[8],
        "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;"
    );
    assert!(
        cmds.iter()
            .filter(|c| !c.2.starts_with('\\'))
            .all(|c| c.0 > 0.0),
        "{stdout}"
    );
    // isobench's own reader of pgbench summaries reads the same figures.
    let f = isobench::cmd::pgbench::parse_summary(&stdout).unwrap();
    assert_eq!(f.throughput, s.tps);
    assert_eq!(f.count, s.processed);
    assert_eq!(f.latency_mean_ms, Some(s.latency_ms));
    assert_eq!(f.failed, Some(0));
    assert_eq!(f.duration_s, Some(2.0));
    // The results directory, named on stderr, holds the same run.
    assert_eq!(results_dir(&stdout), dir);
    let json = read_json(&dir);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["committed"].as_u64(), Some(s.processed));
    assert_eq!(runs[0]["cell"]["isolation"], "read-committed");
    assert!(dir.join("report.md").exists());
}

/// -S with PGOPTIONS choosing SERIALIZABLE, --max-tries and
/// --failures-detailed: the retry lines, the level in the results.
#[test]
fn select_only_serializable_from_pgoptions_with_retries() {
    let (_keep, dir) = out_dir("pgbench-select");
    let out = isobench()
        .env("PGOPTIONS", "-c default_transaction_isolation=serializable")
        .args([
            "pgbench",
            "-S",
            "-c",
            "2",
            "-T",
            "1",
            "--max-tries=3",
            "--failures-detailed",
            "-P",
            "1",
            "-o",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("transaction type: <builtin: select only>\n"),
        "{stdout}"
    );
    assert!(stdout.contains("maximum number of tries: 3\n"), "{stdout}");
    for line in [
        "number of serialization failures: 0 (0.000%)",
        "number of deadlock failures: 0 (0.000%)",
        "number of transactions retried: 0 (0.000%)",
        "total number of retries: 0",
    ] {
        assert!(stdout.contains(&format!("{line}\n")), "{line}: {stdout}");
    }
    assert!(summary(&stdout).processed > 0);
    assert_eq!(progress_lines(&stderr, true).len(), 1, "{stderr}");
    let f = isobench::cmd::pgbench::parse_summary(&stdout).unwrap();
    assert_eq!(
        (f.serialization_failures, f.retried, f.retries),
        (Some(0), Some(0), Some(0))
    );
    let json = read_json(&dir);
    assert_eq!(json["runs"][0]["cell"]["isolation"], "serializable");
    assert_eq!(json["config"]["retry"]["max_tries"], 3);
}

/// `-t`: 4 clients of 100 transactions each under REPEATABLE READ on one
/// branch (every pair of transactions conflicts on it) with
/// `--max-tries=100`: every one of the 400 transactions ends, committed
/// or failed after its 100th try; the conflicts are retries (counted as
/// pgbench counts them: transactions retried and tries beyond the
/// first), not failures; and the run is its transactions' (tps over its
/// own elapsed time).
///
/// A transaction can lose the branch row 99 times running: measured
/// alternately on one server, 8 of 20 pgbench 15.18 runs of this
/// command had a transaction reach its 100th try (isobench: 6 of 20), so
/// a failure or two is pgbench's behaviour too, not a defect.
#[test]
fn transactions_per_client_each_end_once_with_retries_as_pgbench_counts() {
    let (_keep, dir) = out_dir("pgbench-t");
    let out = isobench()
        .env(
            "PGOPTIONS",
            "-c default_transaction_isolation=repeatable\\ read",
        )
        .args([
            "pgbench",
            "-c",
            "4",
            "-j",
            "2",
            "-t",
            "100",
            "--max-tries=100",
            "-o",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("duration:"), "{stdout}");
    let cap = |re: &str| -> u64 {
        Regex::new(re)
            .unwrap()
            .captures(&stdout)
            .unwrap_or_else(|| panic!("{re}: {stdout}"))[1]
            .parse()
            .unwrap()
    };
    let failed = cap(r"(?m)^number of failed transactions: ([0-9]+) \([0-9.]+%\)$");
    let committed = 400 - failed;
    assert!(
        stdout.contains(&format!(
            "number of transactions per client: 100\nnumber of transactions actually processed: {committed}/400\n"
        )),
        "{stdout}"
    );
    let retried = cap(r"(?m)^number of transactions retried: ([0-9]+) \([0-9.]+%\)$");
    let retries = cap(r"(?m)^total number of retries: ([0-9]+)$");
    // A failed transaction was retried 99 times first; conflicts are
    // mostly retries that end in a commit.
    assert!(
        retried >= failed && retries >= retried + 98 * failed,
        "{stdout}"
    );
    assert!(retried > 2 * failed && failed < 10, "{stdout}");
    let json = read_json(&dir);
    let run = &json["runs"][0];
    assert_eq!(run["committed"].as_u64(), Some(committed), "{run}");
    // Every try beyond a transaction's first is a retry.
    assert_eq!(run["attempts"].as_u64(), Some(400 + retries), "{run}");
    assert_eq!(run["retries"].as_u64(), Some(retries));
    assert_eq!(json["config"]["transactions"].as_u64(), Some(100));
    // tps = commits over the run's own elapsed time.
    let tps = summary(&stdout).tps;
    let d = run["duration_s"].as_f64().unwrap();
    assert!(
        (tps - committed as f64 / d).abs() <= 1e-3 * tps,
        "{tps} vs {committed}/{d}"
    );
}

/// `isobench run --transactions N`: every run of every cell and
/// repetition ends when each client has run N transactions (no warm-up),
/// and the study records it; `--duration` with it is refused, as -T
/// with -t is in pgbench.
#[test]
fn run_by_count_in_every_cell_and_repetition() {
    let (_keep, dir) = out_dir("run-by-count");
    let (out, stdout, stderr) = run(&[
        "run",
        "-w",
        "tpcb",
        "-s",
        "1",
        "--isolation",
        "rc,rr",
        "--clients",
        "3",
        "--transactions",
        "50",
        "--max-tries",
        "100",
        "--repeat",
        "2",
        "-q",
        "-o",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let json = read_json(&dir);
    assert_schema_valid(&json);
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        assert_eq!(r["committed"].as_u64(), Some(150), "{r}");
        assert_eq!(r["anomalies"].as_u64(), Some(0), "{r}");
        let d = r["duration_s"].as_f64().unwrap();
        let tps = r["tps"].as_f64().unwrap();
        assert!(d > 0.0 && (tps - 150.0 / d).abs() <= 1e-6 * tps, "{r}");
    }
    assert_eq!(json["config"]["transactions"].as_u64(), Some(50));
    assert_eq!(json["config"]["warmup_s"].as_f64(), Some(0.0));
    let (out, _, stderr) = run(&["run", "--transactions", "5", "--duration", "2s"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--transactions"), "{stderr}");
}
