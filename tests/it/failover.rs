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
    formation_dir(&wait_for_formation_results(dir))
}

/// The first results.json of the study writing into `dir` that names
/// its formation: written once the formation runs, before the first
/// run.
fn wait_for_formation_results(dir: &Path) -> serde_json::Value {
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
            return v;
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

/// The port of data node `name` ("n1") from the stored target text
/// ("... nodes n1 localhost:P1 and n2 localhost:P2; ...").
fn node_port(results: &serde_json::Value, name: &str) -> u16 {
    let target = results["config"]["target"].as_str().expect("config.target");
    let key = format!("{name} localhost:");
    let start = target.find(&key).expect("the node in target") + key.len();
    let digits: String = target[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("the node's port")
}

/// Runs `sql` (one value, as text) in database postgres of the node
/// listening on `port`; the error when the node cannot answer (it was
/// killed).
fn node_query(port: u16, sql: &str) -> Result<String, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut config = tokio_postgres::Config::new();
    config
        .host("localhost")
        .port(port)
        .user("postgres")
        .dbname("postgres")
        .connect_timeout(Duration::from_secs(5));
    rt.block_on(async {
        let client = isobench::postgres::connect(&config)
            .await
            .map_err(|e| e.to_string())?;
        let row = client
            .query_one(sql, &[])
            .await
            .map_err(|e| e.to_string())?;
        row.try_get(0).map_err(|e| e.to_string())
    })
}

/// A process this test stopped (SIGSTOP); killed (SIGKILL) when dropped,
/// so that it never outlives the test, whatever fails. A stopped
/// backend of a killed postmaster would keep its shared memory, and
/// nothing else ends it.
struct Stopped(u32);

impl Stopped {
    fn stop(pid: u32) -> Stopped {
        kill(Pid::from_raw(pid as i32), Signal::SIGSTOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0 as i32), Signal::SIGKILL);
    }
}

/// A loss planted where async replication loses commits: once the
/// clients run, the primary's walsender is stopped (SIGSTOP), so that
/// nothing more reaches the standby, while the clients go on committing
/// on the primary, which does not wait for it. The test waits until the
/// primary has flushed 64 kB of WAL (TPC-B commits, each acknowledged,
/// at least one) that it never sent; then isobench kills the primary
/// node (at 6 s), the test kills the stopped walsender as the crash
/// would have, and the standby is promoted without those commits. The
/// run counts them as lost acknowledged commits, and the report's
/// failover figures say so. Every step waits on an event (a results
/// file, backends' titles, the primary's LSNs, the postmaster gone);
/// only the kill is on isobench's clock, far after the events. The
/// clients run at 100 tx/s (open loop): the WAL n2 lacks stays far below
/// pg_auto_failover's `promote_wal_log_threshold` (16 MB), beyond which
/// the monitor refuses to promote it (at full speed on this machine the
/// 6 s went past it, and no node took writes again).
#[test]
fn an_async_failover_with_commits_in_flight_loses_them_and_counts_them() {
    let (_keep, dir) = out_dir("failover-loss");
    let mut child = Study::short()
        .duration("15s")
        .out(&dir)
        .args(&[
            "-w",
            "tpcb",
            "--scale",
            "1",
            "--clients",
            "4",
            "--rate",
            "100",
            "--isolation",
            "rc",
            "--ha",
            "pg_auto_failover",
            "--ha-timeouts",
            "fast",
            "--replication",
            "async",
            "--fault",
            "failover@6s",
        ])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = wait_for_formation_results(&dir);
    let paf = formation_dir(&started);
    let n1 = node_port(&started, "n1");
    let n1_runs = || !processes_mentioning(&format!("-D {}", paf.join("n1").display())).is_empty();
    // The clients commit on the primary, n1 (the measured window runs)...
    wait_for_clients_in_transactions(&run_db(child.id()), 4, &[]);
    // ... when n1 stops sending WAL to n2 ...
    let sender: u32 = node_query(n1, "SELECT pid::text FROM pg_stat_replication")
        .expect("n1's walsender")
        .parse()
        .unwrap();
    let stopped = Stopped::stop(sender);
    // ... and goes on flushing commits that n2 will never have.
    wait_until("64 kB of WAL flushed on n1 and not sent to n2", || {
        assert!(
            n1_runs(),
            "n1 was killed before the loss was planted: the failover at 6 s came first"
        );
        node_query(
            n1,
            "SELECT (pg_wal_lsn_diff(pg_current_wal_flush_lsn(), sent_lsn) >= 65536)::text \
               FROM pg_stat_replication",
        )
        .is_ok_and(|t| t == "true")
    });
    // isobench kills n1 (its keeper and postmaster); the stopped
    // walsender is killed as the crash would have ended it.
    wait_until("the failover's kill of n1", || !n1_runs());
    drop(stopped);
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
    // n1 was killed: only n2 took writes after it (a count from the
    // nodes that acknowledged the commits, so a wrong count of host runs
    // would not be 0 here).
    assert_eq!(injected["failover"]["split_brain_writes"], 0, "{injected}");
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
