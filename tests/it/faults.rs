//! Faults during a run (issue #18): clients whose connections are
//! terminated reconnect and go on; a backend killed with SIGKILL (the
//! server then ends every backend and runs crash recovery) does not end
//! the study, and the faulted run is kept, marked, with its invariants.
//!
//! The faults are injected from outside, as an operator would: SIGTERM to
//! a backend is what `pg_terminate_backend` sends; SIGKILL crashes it.

use crate::common;

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Starts a study of 2 runs of 4 s (no warm-up, no observer, so the run
/// database's backends are the check connection and the 4 clients).
fn start(dir: &std::path::Path) -> std::process::Child {
    Study::short()
        .duration("4s")
        .repeat(2)
        .out(dir)
        .args(&[
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "rc",
            "--observe",
            "none",
        ])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pids of the client backends of `isobench`'s run database once the
/// 4 clients are connected and each has been seen inside a transaction
/// (the check connection, opened before them, has the lowest pid and is
/// left out).
fn client_backends(isobench: u32) -> Vec<u32> {
    let db = run_db(isobench);
    let mut pids = Vec::new();
    wait_until("the 4 clients to connect", || {
        pids = backends_of(&db).iter().map(|b| b.pid).collect();
        pids.len() >= 5
    });
    let (check, clients) = (pids[0], pids[1..].to_vec());
    let running = wait_for_clients_in_transactions(&db, clients.len(), &[check]);
    assert!(
        clients.iter().all(|c| running.contains(c)),
        "clients {clients:?}, inside transactions {running:?}"
    );
    clients
}

fn finish(mut child: std::process::Child) -> (Option<i32>, String) {
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status.code(), stderr)
}

#[test]
fn terminated_connections_reconnect_and_the_run_goes_on() {
    let (_keep, dir) = out_dir("terminated");
    let child = start(&dir);
    for pid in client_backends(child.id()) {
        kill(Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    }
    let (code, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true, "{stderr}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let run = &runs[0];
    assert_eq!(run["complete"], true);
    let f = &run["faults"];
    assert_eq!(f["connections_lost"], 4, "{f}");
    assert_eq!(f["reconnects"], 4, "{f}");
    assert!(f["cause"].is_null(), "the server did not go away: {f}");
    // 57P01 admin_shutdown, what the server said, whether the FATAL went
    // to a statement in flight or (client idle) to the connection's I/O.
    for loss in f["losses"].as_array().unwrap() {
        assert_eq!(loss["sqlstate"], "57P01", "{loss}");
    }
    // The same run kept committing after the losses.
    let first_loss = f["losses"][0]["t_s"].as_f64().unwrap();
    // Reconnecting takes milliseconds; the limit only says the clients
    // came back within the run.
    assert!(f["outage_s"].as_f64().unwrap() < 3.0, "{f}");
    let after: u64 = run["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["t_s"].as_f64().unwrap() > first_loss + 1.0)
        .map(|p| p["committed"].as_u64().unwrap())
        .sum();
    assert!(after > 0, "no commit after the losses");
    assert!(
        run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["ok"] == true)
    );
    assert!(runs[1]["faults"].is_null(), "run 2 had no fault");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Faults"), "{md}");
    assert_managed_server_gone(&r);
}

#[test]
fn a_sigkilled_backend_crashes_the_server_and_the_study_goes_on() {
    let (_keep, dir) = out_dir("crashed");
    let child = start(&dir);
    let victim = *client_backends(child.id()).last().unwrap();
    kill(Pid::from_raw(victim as i32), Signal::SIGKILL).unwrap();
    let (code, stderr) = finish(child);
    assert_eq!(code, Some(0), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true, "{stderr}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{stderr}");
    let run = &runs[0];
    assert_eq!(run["complete"], true);
    let f = &run["faults"];
    let cause = f["cause"].as_str().unwrap_or_default();
    assert!(
        cause.contains(&format!("(PID {victim}) was terminated by signal 9")),
        "{f}"
    );
    // Every client loses its session when the postmaster resets; a client
    // whose backend was the victim may reconnect before the reset reaches
    // the postmaster and lose that new session too, so a client can appear
    // twice.
    let losses = f["losses"].as_array().unwrap();
    let clients: std::collections::BTreeSet<u64> = losses
        .iter()
        .map(|l| l["client"].as_u64().unwrap())
        .collect();
    assert_eq!(clients, (0..4).collect(), "{f}");
    assert_eq!(f["connections_lost"], losses.len(), "{f}");
    assert!(f["reconnects"].as_u64().unwrap() >= 4, "{f}");
    // synchronous_commit=on (the default): nothing acknowledged was lost.
    for i in run["invariants"].as_array().unwrap() {
        assert_eq!(i["ok"], true, "{i}");
    }
    assert!(run["committed"].as_u64().unwrap() > 0);
    assert_eq!(runs[1]["complete"], true);
    assert!(
        runs[1]["committed"].as_u64().unwrap() > 0,
        "the next run ran"
    );
    assert_managed_server_gone(&r);
}

/// A study of one run of 3 s with the fault plan `fault` (no warm-up, no
/// observer) and `more` flags: exit status, stderr and results.json.
fn injected(
    name: &str,
    fault: &str,
    more: &[&str],
) -> (Option<i32>, String, serde_json::Value, tempfile::TempDir) {
    let (keep, dir) = out_dir(name);
    let out = Study::short()
        .duration("3s")
        .out(&dir)
        .args(&[
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "rc",
            "--observe",
            "none",
        ])
        .args(&["--fault", fault])
        .args(more)
        .command()
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let r = read_json(&dir);
    assert_schema_valid(&r);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Faults") && md.contains(fault), "{md}");
    assert_managed_server_gone(&r);
    (out.status.code(), stderr, r, keep)
}

#[test]
fn an_injected_terminate_is_recorded_and_the_run_keeps_committing() {
    let (code, stderr, r, _keep) = injected("inject-terminate", "terminate@1s", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(r["config"]["faults"][0], "terminate@1s");
    let run = &r["runs"][0];
    assert_eq!(run["complete"], true, "{stderr}");
    let f = &run["faults"];
    let inj = &f["injected"][0];
    assert_eq!(inj["kind"], "terminate", "{f}");
    let t = inj["t_s"].as_f64().unwrap();
    // Due at 1 s: late by up to a second on a loaded machine, never
    // early.
    assert!((1.0..2.0).contains(&t), "{f}");
    assert_eq!(inj["detail"], "terminated 4 client connections", "{f}");
    assert_eq!(f["connections_lost"], 4, "{f}");
    assert_eq!(f["reconnects"], 4, "{f}");
    assert!(f["cause"].is_null(), "{f}");
    let after: u64 = run["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["t_s"].as_f64().unwrap() > t + 1.0)
        .map(|p| p["committed"].as_u64().unwrap())
        .sum();
    assert!(after > 0, "no commit after the fault: {run}");
    for i in run["invariants"].as_array().unwrap() {
        assert_eq!(i["ok"], true, "{i}");
    }
}

#[test]
fn an_injected_kill_backend_crashes_the_server_and_the_run_is_kept() {
    let (code, stderr, r, _keep) = injected("inject-kill", "kill-backend@1s", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    assert_eq!(run["complete"], true, "{stderr}");
    let f = &run["faults"];
    let inj = &f["injected"][0];
    assert_eq!(inj["kind"], "kill-backend", "{f}");
    let detail = inj["detail"].as_str().unwrap();
    let pid = detail
        .strip_prefix("SIGKILL to client backend PID ")
        .unwrap();
    let cause = f["cause"].as_str().unwrap_or_default();
    assert!(
        cause.contains(&format!("(PID {pid}) was terminated by signal 9")),
        "{f}"
    );
    assert!(f["connections_lost"].as_u64().unwrap() >= 4, "{f}");
    for i in run["invariants"].as_array().unwrap() {
        assert_eq!(i["ok"], true, "{i}");
    }
    // synchronous_commit=on: every acknowledged commit survived the crash.
    assert_eq!(history_check(run)["lost_commits"], 0, "{run}");
}

/// The run's `history-matches-commits` invariant.
fn history_check(run: &serde_json::Value) -> &serde_json::Value {
    run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "history-matches-commits")
        .unwrap()
}

/// The run's injected fault `kind`: checks it is the only one and
/// returns its detail.
fn only_injected<'a>(run: &'a serde_json::Value, kind: &str) -> &'a str {
    let inj = run["faults"]["injected"].as_array().unwrap();
    assert_eq!(inj.len(), 1, "{inj:?}");
    assert_eq!(inj[0]["kind"], kind, "{inj:?}");
    inj[0]["detail"].as_str().unwrap()
}

/// Commits in the seconds of `run` that began at or after `from_s`.
fn commits_from(run: &serde_json::Value, from_s: f64) -> u64 {
    run["per_second"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["t_s"].as_f64().unwrap() - 1.0 >= from_s - 1e-6)
        .map(|p| p["committed"].as_u64().unwrap())
        .sum()
}

#[test]
fn an_injected_restart_ends_every_session_and_the_run_commits_after_it() {
    let (code, stderr, r, _keep) = injected("inject-restart", "restart@1s", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    assert_eq!(run["complete"], true, "{stderr}");
    let detail = only_injected(run, "restart");
    assert!(detail.starts_with("fast shutdown and start"), "{detail}");
    let f = &run["faults"];
    let cause = f["cause"].as_str().unwrap_or_default();
    assert!(cause.contains("fast shutdown request"), "{f}");
    // Each client's session ended with 57P01 admin_shutdown (or its socket
    // closed while the server went down), and came back.
    assert!(f["connections_lost"].as_u64().unwrap() >= 4, "{f}");
    assert!(f["reconnects"].as_u64().unwrap() >= 4, "{f}");
    assert!(f["outage_s"].as_f64().unwrap() > 0.0, "{f}");
    assert!(
        commits_from(run, 2.0) > 0,
        "nothing after the restart: {run}"
    );
    for i in run["invariants"].as_array().unwrap() {
        assert_eq!(i["ok"], true, "{i}");
    }
    assert_eq!(history_check(run)["lost_commits"], 0, "{run}");
}

#[test]
fn a_paused_server_loses_no_connection_and_the_run_goes_on_after_it() {
    let (code, stderr, r, _keep) = injected("inject-pause", "pause:1s@1s", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    assert_eq!(run["complete"], true, "{stderr}");
    let detail = only_injected(run, "pause");
    assert!(
        detail.starts_with("SIGSTOP to the postmaster and ")
            && detail.ends_with("SIGCONT after 1.00 s"),
        "{detail}"
    );
    let f = &run["faults"];
    assert_eq!(f["connections_lost"], 0, "{f}");
    assert!(f["cause"].is_null(), "{f}");
    // The second the server stood still (from 1 s to 2 s) committed far
    // less than the first; the last one commits again.
    let p = run["per_second"].as_array().unwrap();
    let c = |i: usize| p[i]["committed"].as_u64().unwrap();
    assert!(c(1) * 2 < c(0), "no stall while paused: {p:?}");
    assert!(c(2) > 0, "no commit after the pause: {p:?}");
    for i in run["invariants"].as_array().unwrap() {
        assert_eq!(i["ok"], true, "{i}");
    }
}

#[test]
fn commits_lost_in_a_crash_with_synchronous_commit_off_are_counted_not_violations() {
    let (code, stderr, r, keep) = injected(
        "inject-crash-async",
        "crash@1s",
        &["--set", "synchronous_commit=off"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let run = &r["runs"][0];
    assert_eq!(run["complete"], true, "{stderr}");
    let detail = only_injected(run, "crash");
    assert!(
        detail.starts_with("immediate shutdown and start"),
        "{detail}"
    );
    let cause = run["faults"]["cause"].as_str().unwrap_or_default();
    assert!(cause.contains("immediate shutdown request"), "{run}");
    // Possibly 0 (the WAL writer may have flushed everything): never
    // negative, never an invariant error.
    let h = history_check(run);
    let lost = h["lost_commits"].as_u64().expect("counted");
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(h["violations"], 0, "{h}");
    assert_eq!(run["anomalies"], 0, "{run}");
    let md = std::fs::read_to_string(keep.path().join("inject-crash-async/report.md")).unwrap();
    let faults = md.split("## Faults").nth(1).unwrap();
    assert!(faults.contains("lost commits"), "{faults}");
    eprintln!("lost commits in the crash: {lost}");
}

#[test]
fn kill_backend_on_an_external_server_is_refused() {
    let out = isobench()
        .args([
            "run",
            "--dsn",
            "host=/nonexistent dbname=x",
            "--fault",
            "kill-backend@1s",
            "--duration",
            "3s",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--fault kill-backend@1s") && stderr.contains("managed server"),
        "{stderr}"
    );
}

#[test]
fn the_fault_plan_is_a_factor_of_one_study_file() {
    // "synchronous_commit on vs off under a crash, against no fault": one
    // file, four cells.
    let (keep, dir) = out_dir("fault-factor");
    let study = keep.path().join("crash.toml");
    std::fs::write(
        &study,
        "scale = 1\nclients = 4\nisolation = \"rc\"\nrepeat = 1\nduration = \"3s\"\n\
         warmup = \"0s\"\nobserve = \"none\"\nbaseline = \"fault_plan=none\"\n\
         [factors]\nfault_plan = [\"none\", \"crash@1s\"]\n\
         settings.synchronous_commit = [\"on\", \"off\"]\n",
    )
    .unwrap();
    let out = isobench()
        .args(["run", "--quiet", "--out"])
        .arg(&dir)
        .arg(&study)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_managed_server_gone(&r);
    assert_eq!(r["config"]["fault_plans"][1], "crash@1s");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        let plan = run["cell"]["fault_plan"].as_str().unwrap();
        let sync = run["cell"]["settings"]["synchronous_commit"]
            .as_str()
            .unwrap();
        let f = &run["faults"];
        let lost = history_check(run)["lost_commits"].as_u64();
        if plan == "none" {
            assert!(f.is_null(), "{plan} {sync}: {f}");
        } else {
            assert_eq!(
                only_injected(run, "crash").split(':').next(),
                Some("immediate shutdown and start")
            );
            assert!(
                f["cause"].as_str().unwrap().contains("immediate shutdown"),
                "{f}"
            );
            if sync == "on" {
                assert_eq!(lost, Some(0), "{run}");
            }
        }
        assert_eq!(history_check(run)["ok"], true, "{run}");
    }
    // The plan is a factor column, and the crash cells are compared with
    // the baseline (no fault) at the same setting.
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| fault_plan |") || md.contains(" fault_plan "),
        "{md}"
    );
    assert!(md.contains("The fault plan is a factor"), "{md}");
    let cells = std::fs::read_to_string(dir.join("cells.csv")).unwrap();
    assert!(
        cells.lines().next().unwrap().contains("fault_plan"),
        "{cells}"
    );
    assert_eq!(
        cells.lines().filter(|l| l.contains("crash@1s")).count(),
        2,
        "{cells}"
    );
    // compare matches the cells on the plan like on any factor: the two
    // crash cells in the TPS and p99 tables, and in the effective TPS
    // table that leads when a crash under synchronous_commit=off lost
    // commits.
    let d = dir.to_str().unwrap();
    let (out, stdout, stderr) = run(&["compare", d, d]);
    assert!(out.status.success(), "{stderr}");
    // The effective table leads exactly when some run's history check
    // found commits that left no work: effective below reported tps.
    let lost_work = runs.iter().any(|run| {
        run["effective_tps"].as_f64().is_some_and(|e| {
            let (tps, s) = (
                run["tps"].as_f64().unwrap(),
                run["duration_s"].as_f64().unwrap(),
            );
            ((tps - e).max(0.0) * s).round() >= 1.0
        })
    });
    assert_eq!(stdout.contains("## Effective TPS"), lost_work, "{stdout}");
    let tables = if lost_work { 3 } else { 2 };
    // Table rows only: the "cannot tell" lines under a table name cells too.
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with('|') && l.contains("fault_plan=crash@1s"))
            .count(),
        2 * tables,
        "{stdout}"
    );
}
