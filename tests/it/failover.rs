//! Failover through a real manager (issue #50): pg_auto_failover's
//! monitor and two nodes, the primary node killed while the clients run,
//! the standby promoted, the clients back through their multi-host DSN;
//! acknowledged commits the new primary lacks are counted; and every
//! process of the formation (monitor, keepers, servers) is gone after
//! isobench ends, however it ends. With lowered timeouts (`--ha-timeouts
//! fast`), so that a failover takes seconds. Needs pg_autoctl (Debian:
//! pg-auto-failover-cli, postgresql-15-auto-failover; `.ci/run` installs
//! them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::*;

/// The formation's private directory, from the stored target text
/// ("pg_auto_failover formation (... directory /tmp/isobench-paf-XXXX)").
fn formation_dir(results: &serde_json::Value) -> PathBuf {
    let target = results["config"]["target"].as_str().expect("config.target");
    let start = target.find("directory ").expect("directory in target") + "directory ".len();
    PathBuf::from(target[start..].trim_end_matches(')'))
}

/// The formation of the study writing into `dir`, once it runs (the
/// first results.json names it).
fn wait_for_formation(dir: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(
            Instant::now() < deadline,
            "the formation did not start in 300 s"
        );
        if let Ok(text) = std::fs::read_to_string(dir.join("results.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && v["config"]["target"]
                .as_str()
                .is_some_and(|t| t.contains("isobench-paf-"))
        {
            return formation_dir(&v);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// No process mentions the formation's directory, and it is removed.
fn assert_formation_gone(paf: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !processes_mentioning(paf.to_str().unwrap()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "a process of the formation {} outlived isobench",
            paf.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!paf.exists(), "{} still exists", paf.display());
}

/// The pid of the walreceiver of the node whose data directory is
/// `pgdata`: a process titled `postgres: walreceiver` whose parent runs
/// from `pgdata`.
fn walreceiver_of(pgdata: &Path) -> Option<u32> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let postmasters = processes_mentioning(&format!("-D {}", pgdata.display()));
    processes_mentioning("walreceiver")
        .into_iter()
        .find(|p| parent_of(*p).is_some_and(|pp| postmasters.contains(&pp)))
}

/// A loss planted where async replication loses commits: the standby's
/// walreceiver is stopped (SIGSTOP) while the clients commit on the
/// primary, which does not wait for it; the primary node is killed, the
/// walreceiver continued, and the standby promoted without those
/// commits. The run counts them as lost acknowledged commits, and the
/// report's failover figures say so.
#[test]
#[ignore = "unfinished (issue #50): it finds the run's clients by their backends' titles before the formation's first results.json is written, which races; run it with --run-ignored"]
fn an_async_failover_with_commits_in_flight_loses_them_and_counts_them() {
    let (_keep, dir) = out_dir("failover-loss");
    let mut child = Study::short()
        .duration("10s")
        .out(&dir)
        .args(&[
            "-w",
            "tpcb",
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "rc",
            "--ha",
            "pg_auto_failover",
            "--ha-timeouts",
            "fast",
            "--replication",
            "async",
            "--fault",
            "failover@4s",
        ])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let paf = wait_for_formation(&dir);
    // The clients run (their backends on the primary, n1)...
    let run_db = format!("isobench_run_{}", child.id());
    let deadline = Instant::now() + Duration::from_secs(120);
    while processes_mentioning(&run_db).len() < 5 {
        assert!(Instant::now() < deadline, "the clients never connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    // ... for 1.5 s, then the standby stops receiving; the kill comes at 4 s.
    std::thread::sleep(Duration::from_millis(1500));
    let receiver = walreceiver_of(&paf.join("n2")).expect("n2's walreceiver");
    kill(Pid::from_raw(receiver as i32), Signal::SIGSTOP).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !processes_mentioning(&format!("-D {}", paf.join("n1").display())).is_empty() {
        assert!(Instant::now() < deadline, "n1 was not killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(receiver as i32), Signal::SIGCONT).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    let run = &r["runs"][0];
    let injected = &run["faults"]["injected"][0];
    assert_eq!(injected["kind"], "failover", "{injected}");
    assert_eq!(injected["failover"]["killed"], "n1", "{injected}");
    assert_eq!(injected["failover"]["promoted"], "n2", "{injected}");
    assert!(injected["failover"]["unavailable_s"].as_f64().unwrap() > 0.0);
    let lost = invariant(run, "history-matches-commits")["lost_commits"]
        .as_u64()
        .unwrap();
    assert!(lost > 0, "no commit lost: {}", run["invariants"]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Failovers"), "{report}");
    assert!(
        report.contains(&format!(
            "{lost}.0 acknowledged commits lost per failover ({lost} in 1;"
        )),
        "{report}"
    );
    assert_formation_gone(&paf);
}

/// SIGINT and SIGTERM stop the study and every process of the formation.
#[test]
fn the_formation_is_gone_after_sigint_sigterm_and_an_error() {
    for (signal, name) in [(Signal::SIGINT, "sigint"), (Signal::SIGTERM, "sigterm")] {
        let (_keep, dir) = out_dir(name);
        let mut child = Study::short()
            .duration("60s")
            .out(&dir)
            .args(&[
                "--scale",
                "1",
                "--clients",
                "2",
                "--isolation",
                "rc",
                "--ha",
                "pg_auto_failover",
            ])
            .command()
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let paf = wait_for_formation(&dir);
        assert!(
            processes_mentioning(paf.to_str().unwrap()).len() >= 3,
            "the formation is not running"
        );
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{name}");
        assert_formation_gone(&paf);
    }
    // A study that fails after the formation started.
    let ran = Study::short()
        .args(&[
            "--scale",
            "1",
            "--clients",
            "2",
            "--isolation",
            "rc",
            "--ha",
            "pg_auto_failover",
            "--check",
            "broken=SELECT * FROM no_such_table",
        ])
        .run();
    assert_eq!(ran.out.status.code(), Some(2), "{}", ran.stderr);
    assert_formation_gone(&formation_dir(&ran.json()));
}
