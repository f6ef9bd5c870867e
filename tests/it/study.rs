//! Study files, pool size (and a pooled client's variables), open loop,
//! settings factors and resume, end to end against the managed server
//! (issue #5).

use crate::common;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::os::unix::fs::PermissionsExt;

fn write_study(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The file of the issue runs as is: 2 isolation levels x 2 pool sizes x 2
/// repetitions. With 8 clients on 2 connections the clients wait for a
/// connection; on 8 they practically never do.
#[test]
fn the_pool_size_study_file_runs_as_is() {
    let (base, dir) = out_dir("pool");
    let study = write_study(
        base.path(),
        "pool.toml",
        r#"workload = "tpcb"
scale = 1
repeat = 2
duration = "2s"
warmup = "1s"
[factors]
isolation = ["rc", "ser"]
clients = [8]
pool_size = [2, 8]
"#,
    );
    let ran = run_file(&study, &dir, &[]);
    let (out, stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("pool_size"), "{stdout}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    assert_eq!(r["config"]["file"], study.to_str().unwrap());
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    let mean_wait = |pool: u64| -> f64 {
        let w: Vec<f64> = runs
            .iter()
            .filter(|x| x["cell"]["pool_size"] == pool)
            .map(|x| x["pool_wait_ms"]["mean"].as_f64().unwrap())
            .collect();
        assert_eq!(w.len(), 4);
        w.iter().sum::<f64>() / 4.0
    };
    let (small, full) = (mean_wait(2), mean_wait(8));
    assert!(
        small > 0.2,
        "8 clients on 2 connections waited {small} ms on average"
    );
    assert!(
        small > 20.0 * full,
        "pool 2 waits {small} ms, pool 8 {full} ms"
    );
    for x in runs {
        assert!(x["pool_wait_ms"]["p99"].as_f64().unwrap() >= 0.0);
        assert!(x["committed"].as_u64().unwrap() > 0);
        assert!(
            x["server_version"]
                .as_str()
                .unwrap()
                .starts_with(char::is_numeric)
        );
    }
    assert!(dir.join("results.sqlite").exists());
    assert_managed_server_gone(&r);

    // The store round-trips: reports re-rendered from it equal the ones
    // the run wrote.
    let files = [
        "report.md",
        "report.html",
        "results.json",
        "cells.json",
        "runs.csv",
        "cells.csv",
    ];
    let before: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    assert!(before[1].contains("<svg"), "report.html has charts");
    assert_eq!(before[4].lines().count(), 9, "runs.csv: header + 8 runs");
    for f in files {
        std::fs::remove_file(dir.join(f)).unwrap();
    }
    // Readers open the store read-only: a write-protected one works and
    // stays as it was (root may write it anyway: its bytes are compared).
    let store = dir.join("results.sqlite");
    let unchanged = store_snapshot(&store);
    let (out, stdout, stderr) = run(&["report", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("report.html"), "{stdout}");
    for (f, was) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read_to_string(dir.join(f)).unwrap(), was, "{f}");
    }

    // Another baseline: pool size 8 at the same isolation level.
    let (out, _, stderr) = run(&[
        "report",
        dir.to_str().unwrap(),
        "--format",
        "md",
        "--baseline",
        "pool_size=8",
    ]);
    assert!(out.status.success(), "{stderr}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("pool_size=8"), "the baseline rule is named");
    let (out, _, stderr) = run(&["report", dir.to_str().unwrap(), "--baseline", "pool_size=3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("pool_size") && stderr.contains("2, 8"),
        "{stderr}"
    );

    // A directory compared with itself: no significant difference anywhere
    // (with 2 runs a side, below the 3 a verdict needs: too few runs).
    let (out, stdout, stderr) = run(&["compare", dir.to_str().unwrap(), dir.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| isolation="))
        .collect();
    assert_eq!(rows.len(), 8, "4 cells x (TPS, p99): {stdout}");
    assert!(
        rows.iter()
            .all(|l| l.contains("no significant difference") || l.contains("too few runs")),
        "{stdout}"
    );
    assert_eq!(
        store_snapshot(&store),
        unchanged,
        "report and compare wrote the store"
    );

    // A store of an older version (2, before tx_type_commands had its own
    // version) reads the same and is not upgraded by readers.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch(
            "PRAGMA user_version = 2; UPDATE meta SET value = '2' WHERE key = 'store_version';",
        )
        .unwrap();
    let old = store_snapshot(&store);
    let (out, _, stderr) = run(&["report", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    for (f, was) in files.iter().zip(&before) {
        assert_eq!(&std::fs::read_to_string(dir.join(f)).unwrap(), was, "{f}");
    }
    let (out, _, stderr) = run(&["compare", dir.to_str().unwrap(), dir.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(store_snapshot(&store), old, "a reader upgraded the store");
}

/// Makes the store at `path` read-only and returns its bytes and mtime.
fn store_snapshot(path: &std::path::Path) -> (Vec<u8>, std::time::SystemTime) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o444)).unwrap();
    assert!(
        !std::path::Path::new(&format!("{}-journal", path.display())).exists(),
        "a journal next to {}",
        path.display()
    );
    let meta = std::fs::metadata(path).unwrap();
    (std::fs::read(path).unwrap(), meta.modified().unwrap())
}

/// An open-loop run below capacity achieves its rate; a server setting
/// as a factor restarts the server and is in effect inside each run.
#[test]
fn open_loop_rate_and_settings_factor() {
    let (base, dir) = out_dir("rate");
    let study = write_study(
        base.path(),
        "rate.toml",
        r#"workload = "tpcb"
scale = 1
repeat = 1
duration = "4s"
warmup = "500ms"
isolation = "rc"
clients = 4
rate = 150
[factors.settings]
max_pred_locks_per_transaction = [64, 128]
"#,
    );
    let ran = run_file(&study, &dir, &["--quiet"]);
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for x in runs {
        let want = x["cell"]["settings"]["max_pred_locks_per_transaction"]
            .as_str()
            .unwrap();
        assert_eq!(
            x["server_settings"]["max_pred_locks_per_transaction"], want,
            "SHOW inside the run"
        );
        let tps = x["tps"].as_f64().unwrap();
        assert!(
            (tps - 150.0).abs() < 0.25 * 150.0,
            "open loop at 150 tx/s achieved {tps} tx/s"
        );
        let lag = &x["schedule_lag_ms"];
        assert!(lag["count"].as_u64().unwrap() > 300, "{lag}");
        assert_eq!(x["skipped"], 0);
        assert!(x["pool_wait_ms"].is_null());
    }
    let restarts = stderr.matches("restarting the server").count();
    assert_eq!(restarts, 0, "quiet run prints nothing: {stderr}");
    assert_managed_server_gone(&r);
}

/// Two named builds (`--pg-bin NAME=DIR`, here both the installed
/// server): a factor whose cells, results.json, report.md, cells.csv and
/// the terminal summary name each build by its label; the directories
/// stay in results.json.
#[test]
fn named_server_builds_are_a_factor_shown_by_label() {
    let bin = isobench::postgres::find_bin_dir(None).expect("PostgreSQL installed");
    let bin = bin.to_str().unwrap();
    let (_base, dir) = out_dir("builds");
    let (stock, again) = (format!("stock={bin}"), format!("again={bin}"));
    let ran = Study::short()
        .warmup("200ms")
        .out(&dir)
        .loud()
        .args(&[
            "-w",
            "tpcb",
            "-s",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "2",
            "--pg-bin",
            &stock,
            "--pg-bin",
            &again,
        ])
        .run();
    let (out, stdout, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["config"]["pg_bin"], serde_json::json!(["stock", "again"]));
    assert_eq!(
        r["config"]["pg_bin_dirs"],
        serde_json::json!({"stock": bin, "again": bin})
    );
    let labels: Vec<&str> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["cell"]["pg_bin"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["stock", "again"]);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("- **Server builds (pg_bin):** stock: PostgreSQL "),
        "{md}"
    );
    assert!(
        md.contains(&format!(" from {bin}; again: PostgreSQL ")),
        "{md}"
    );
    assert!(md.contains("| rc | optimistic | 2 | stock |"), "{md}");
    assert!(md.contains("clients=2 pg_bin=again"), "{md}");
    let csv = std::fs::read_to_string(dir.join("cells.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("pg_bin"), "{csv}");
    assert!(csv.contains(",again,"), "{csv}");
    assert!(
        stdout.contains("stock") && stdout.contains("again"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(bin),
        "the terminal shows labels, not the path: {stdout}"
    );
    assert_managed_server_gone(&r);
}

/// Ctrl-C mid-study, then `--resume`: the completed runs are kept as
/// they were, the rest run, and the study completes.
#[test]
fn resume_continues_an_interrupted_study() {
    let (_keep, dir) = out_dir("resume");
    let mut child = Study::short()
        .repeat(2)
        .out(&dir)
        .args(&["--scale", "1", "--clients", "2", "--isolation", "rc,ser"])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_run(&dir);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let before = read_json(&dir);
    let kept: Vec<serde_json::Value> = before["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["complete"] == true)
        .cloned()
        .collect();
    assert!(
        !kept.is_empty() && kept.len() < 4,
        "{} complete",
        kept.len()
    );

    // Flags that would change the study are refused.
    let (out, _, stderr) = run(&["run", "--resume", dir.to_str().unwrap(), "--clients", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("--clients cannot change it"), "{stderr}");

    let (out, _, stderr) = run(&["run", "--resume", dir.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success(), "{stderr}");
    let after = read_json(&dir);
    assert_schema_valid(&after);
    assert_eq!(after["complete"], true);
    let runs = after["runs"].as_array().unwrap();
    let indexes: Vec<u64> = runs.iter().map(|r| r["index"].as_u64().unwrap()).collect();
    assert_eq!(indexes, vec![1, 2, 3, 4]);
    for k in &kept {
        let same = runs.iter().find(|r| r["index"] == k["index"]).unwrap();
        assert_eq!(same, k, "a completed run changed on resume");
    }
    // Nothing left to resume.
    let (out, _, stderr) = run(&["run", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("nothing to resume"), "{stderr}");
}

/// Bad study files: exit 2 with file:line:column (of the offending
/// list element) and the key, before
/// any server starts.
#[test]
fn bad_study_files_name_the_key_and_line() {
    let base = tempfile::tempdir().unwrap();
    for (text, want) in [
        (
            "workload = \"tpcb\"\nclinets = [8]\n",
            ":2:1: unknown field `clinets`",
        ),
        (
            "[factors]\npool_size = [2, 0]\n",
            ":2:17: pool_size: 0 is out of range",
        ),
        ("duration = \"2 parsecs\"\n", ":1:12: duration:"),
    ] {
        let p = write_study(base.path(), "bad.toml", text);
        let (out, _, stderr) = run(&["run", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("bad.toml{want}")),
            "{text:?}: {stderr}"
        );
    }
    // The command line overrides the file: --clients 0 is clap's error (2).
    let p = write_study(base.path(), "ok.toml", "clients = 4\n");
    let (out, _, _) = run(&["run", p.to_str().unwrap(), "--clients", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Behind a connection pool (`--pool-size`) a client's transactions run
/// on whichever session is free, and still on that client's variables:
/// each of 3 clients counts its own transactions in a script's `:n`
/// through one pooled session, as it would on a session of its own.
#[test]
fn pooled_sessions_run_each_client_on_its_own_variables() {
    let (base, dir) = out_dir("pooled-vars");
    let script = base.path().join("count.sql");
    std::fs::write(
        &script,
        "\\set n :n + 1\n\\set seen debug(:client_id * 1000000 + :n)\nSELECT 1;\n",
    )
    .unwrap();
    let ran = Study::short()
        .out(&dir)
        .args(&[
            "-f",
            script.to_str().unwrap(),
            "-D",
            "n=0",
            "--isolation",
            "rc",
            "--scale",
            "1",
            "--clients",
            "3",
            "--pool-size",
            "1",
        ])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = read_json(&dir);
    let failed = &r["runs"][0]["failed"];
    assert!(failed.as_object().is_some_and(|m| m.is_empty()), "{failed}");
    let mut counts: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for line in ran.stderr.lines() {
        if let Some(v) = line.strip_prefix("debug(script=0,command=2): int ") {
            let v: u64 = v.parse().expect("an integer");
            counts.entry(v / 1_000_000).or_default().push(v % 1_000_000);
        }
    }
    assert_eq!(counts.len(), 3, "every client ran: {counts:?}");
    for (client, mut seen) in counts {
        seen.sort_unstable();
        let expected: Vec<u64> = (1..=seen.len() as u64).collect();
        assert!(
            seen.len() > 5,
            "client {client} ran {} transactions",
            seen.len()
        );
        assert_eq!(
            seen, expected,
            "client {client}'s count has gaps or repeats"
        );
    }
}
