//! An external target (`--dsn`): here a server started through the library,
//! so isobench does not manage it. The run works over the Unix socket, the
//! TCP listener refuses a client without the password (no trust over TCP),
//! and isobench drops the databases it created.

use crate::common;

use common::*;
use isobench::postgres;

#[test]
fn dsn_target_runs_cleans_up_and_tcp_needs_a_password() {
    let (_keep, dir) = out_dir("external");
    let server = library_server(&dir);
    let dsn = socket_dsn(&server, "postgres");
    let out_dir = dir.join("results");
    let ran = Study::short()
        .out(&out_dir)
        .args(&[
            "--dsn",
            &dsn,
            "--scale",
            "1",
            "--clients",
            "2",
            "--isolation",
            "rc",
        ])
        .run();
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&out_dir);
    assert_schema_valid(&r);
    assert_eq!(r["runs"].as_array().unwrap().len(), 1);
    assert!(
        r["config"]["target"]
            .as_str()
            .unwrap()
            .starts_with("external ")
    );
    assert!(
        !out_dir.join("server.log").exists(),
        "no server log for an external server"
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let left: Vec<String> = rt.block_on(async {
        let db = postgres::connect(&server.config("postgres")).await.unwrap();
        db.query(
            "SELECT datname FROM pg_database WHERE datname LIKE 'isobench_%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
    });
    assert!(left.is_empty(), "isobench left databases behind: {left:?}");

    let tcp = format!(
        "postgres://{}@127.0.0.1:{}/postgres",
        postgres::SUPERUSER,
        server.port()
    );
    let (out, _, stderr) = run(&[
        "run",
        "--dsn",
        &tcp,
        "--quiet",
        "--out",
        dir.join("tcp").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
    assert!(stderr.to_lowercase().contains("password"), "{stderr}");
}

/// `isobench anomalies --dsn`: probes run in the DSN's own database (not
/// `postgres`), the matrix names the external target, and no probe schema
/// is left behind.
#[test]
fn anomalies_on_an_external_server_leave_nothing_behind() {
    let (_keep, dir) = out_dir("external-anomalies");
    let server = library_server(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let admin = postgres::connect(&server.config("postgres")).await.unwrap();
        admin.batch_execute("CREATE DATABASE appdb").await.unwrap();
    });
    let dsn = socket_dsn(&server, "appdb");
    let out_dir = dir.join("results");
    let (out, stdout, stderr) = run(&[
        "anomalies",
        "--dsn",
        &dsn,
        "--probe",
        "P4",
        "--probe",
        "G2-item",
        "--isolation",
        "rr,ser",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("anomalies.json")).unwrap())
            .unwrap();
    assert_valid(&json, "anomalies.schema.json");
    assert!(
        json["target"].as_str().unwrap().starts_with("external "),
        "{json}"
    );
    assert!(
        json["target"].as_str().unwrap().ends_with("/appdb"),
        "{json}"
    );
    assert_eq!(json["probes"].as_array().unwrap().len(), 2);
    assert_eq!(
        json["probes"][1]["results"]["repeatable-read"]["outcome"],
        "anomaly"
    );
    assert!(json["probes"][1]["results"].get("read-committed").is_none());
    let left: i64 = rt.block_on(async {
        let db = postgres::connect(&server.config("appdb")).await.unwrap();
        db.query_one(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'isobench_probe_%'",
            &[],
        )
        .await
        .unwrap()
        .get(0)
    });
    assert_eq!(left, 0, "a probe schema was left in appdb");
}

/// `isobench monitor` observes someone else's load (pgbench here): the
/// server counters move, the load's backends show up in the wait-event
/// samples, and Ctrl-C still writes what was sampled.
#[test]
fn monitor_observes_a_concurrent_pgbench_load() {
    let (_keep, dir) = out_dir("monitor");
    let server = Server::new(&dir)
        .set("shared_preload_libraries", "pg_stat_statements")
        .start();
    let bins = postgres::find_bin_dir(None).unwrap();
    let psql = std::process::Command::new(bins.join("psql"))
        .args(["-h", server.socket_dir().to_str().unwrap()])
        .args(["-p", &server.port().to_string(), "-U", postgres::SUPERUSER])
        .args(["-qc", "CREATE EXTENSION pg_stat_statements", "postgres"])
        .output()
        .unwrap();
    assert!(psql.status.success(), "{psql:?}");
    let bin = bins.join("pgbench");
    let pgbench = |args: &[&str]| {
        std::process::Command::new(&bin)
            .args(["-h", server.socket_dir().to_str().unwrap()])
            .args(["-p", &server.port().to_string(), "-U", postgres::SUPERUSER])
            .args(args)
            .arg("postgres")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("pgbench starts")
    };
    assert!(pgbench(&["-i", "-s", "1", "-q"]).wait().unwrap().success());
    let mut load = pgbench(&["-c", "2", "-T", "12", "-n"]);
    let dsn = socket_dsn(&server, "postgres");

    let out1 = dir.join("m1");
    let (out, stdout, stderr) = run(&[
        "monitor",
        "--dsn",
        &dsn,
        "--sample-interval",
        "1s",
        "--duration",
        "4s",
        "-o",
        out1.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("results:"), "{stdout}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out1.join("monitor.json")).unwrap()).unwrap();
    assert_eq!(m["complete"], true);
    let intervals = m["server"]["stat_database"].as_array().unwrap();
    assert!(intervals.len() >= 3, "{} intervals", intervals.len());
    let commits: i64 = intervals
        .iter()
        .map(|i| i["delta"]["xact_commit"].as_i64().unwrap())
        .sum();
    assert!(commits > 100, "pgbench's commits seen: {commits}");
    let waits = &m["server"]["wait_events"];
    assert!(waits["samples"].as_u64().unwrap() >= 3, "{waits}");
    let seen: u64 = waits["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(
        seen > 0,
        "pgbench's backends were never seen active: {waits}"
    );
    let md = std::fs::read_to_string(out1.join("monitor.md")).unwrap();
    assert!(md.contains("| **average** |"), "{md}");
    // pg_stat_statements: pgbench's account update among the top statements.
    let top = m["statements"].as_array().unwrap();
    assert!(
        top.iter().any(|st| st["query"]
            .as_str()
            .unwrap()
            .starts_with("UPDATE pgbench_accounts")
            && st["calls"].as_i64().unwrap() > 50),
        "{top:?}"
    );
    assert!(md.contains("UPDATE pgbench_accounts"), "{md}");

    // Until Ctrl-C: the samples taken are written. Ctrl-C once the
    // monitor has sampled pg_stat_database twice (one interval), as
    // pg_stat_statements counts its sampling query.
    const SAMPLES: &str = "SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
                            WHERE query LIKE '%FROM pg_stat_database WHERE datname = $1%'";
    let samples_before: i64 = query_text(&server, "postgres", &format!("SELECT ({SAMPLES})::text"))
        .parse()
        .unwrap();
    let out2 = dir.join("m2");
    let child = isobench()
        .args([
            "monitor",
            "--dsn",
            &dsn,
            "--sample-interval",
            "1s",
            "-q",
            "-o",
        ])
        .arg(&out2)
        .spawn()
        .unwrap();
    wait_for_query(
        &server,
        "postgres",
        &format!("SELECT ({SAMPLES}) >= {}", samples_before + 2),
        "two pg_stat_database samples by the monitor",
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("monitor.json")).unwrap()).unwrap();
    assert!(!m["server"]["stat_database"].as_array().unwrap().is_empty());
    let _ = load.kill();
    let _ = load.wait();

    // No server named: a clear error, nothing written.
    let (out, _, stderr) = run(&["monitor", "-T", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("--dsn"), "{stderr}");
}

#[test]
fn an_external_server_gone_for_good_stops_the_study_and_keeps_what_it_measured() {
    let (_keep, dir) = out_dir("external-gone");
    let mut server = library_server(&dir);
    let dsn = socket_dsn(&server, "postgres");
    let results = dir.join("results");
    let child = Study::short()
        .duration("3s")
        .repeat(3)
        .out(&results)
        .args(&[
            "--dsn",
            &dsn,
            "--scale",
            "1",
            "--clients",
            "2",
            "--isolation",
            "rc",
        ])
        .args(&["--observe", "none", "--server-wait", "2s"])
        .command()
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Into the second run's measured window, then the server is gone:
    // once the second run has committed a transaction (a pgbench_history
    // row written after the first run was stored; the run database is a
    // fresh copy for each run).
    wait_for_first_run(&results);
    let stored = query_text(&server, "postgres", "SELECT localtimestamp::text");
    wait_for_query(
        &server,
        &run_db(child.id()),
        &format!("SELECT EXISTS (SELECT 1 FROM pgbench_history WHERE mtime > '{stored}')"),
        "a commit in the second run",
    );
    server.stop();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("did not come back") && stderr.contains("saved in"),
        "{stderr}"
    );
    let r = read_json(&results);
    assert_schema_valid(&r);
    assert_eq!(r["complete"], false);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{r}");
    // The first run is whole; the second keeps what it measured before
    // the server went away, marked, with its invariants unchecked.
    assert_eq!(runs[0]["complete"], true);
    assert!(
        runs[0]["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["ok"] == true)
    );
    let last = &runs[1];
    assert!(last["committed"].as_u64().unwrap() > 0, "{last}");
    assert!(
        last["faults"]["connections_lost"].as_u64().unwrap() >= 2,
        "{last}"
    );
    assert!(last["faults"]["cause"].is_string(), "{last}");
    assert!(last["invariants"].as_array().unwrap().is_empty(), "{last}");
    let errors = last["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().unwrap().contains("invariants not checked")),
        "{last}"
    );
}

/// A DSN's `application_name` is kept on the clients' connections, and
/// what finds them by it still does: the wait-event samples count them,
/// and `--fault terminate` terminates them (and not isobench's own
/// connections, which append `/isobench-...` to it).
#[test]
fn a_dsns_application_name_is_kept_and_the_clients_are_still_found() {
    let (_keep, dir) = out_dir("external-appname");
    let server = Server::new(&dir).set("log_connections", "on").start();
    let dsn = format!("{} application_name=myapp", socket_dsn(&server, "postgres"));
    let out_dir = dir.join("results");
    let ran = Study::short()
        .duration("3s")
        .out(&out_dir)
        .args(&[
            "--dsn",
            &dsn,
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "rc",
            "--fault",
            "terminate@1s",
        ])
        .run();
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&out_dir);
    let run = &r["runs"][0];
    let f = &run["faults"];
    assert_eq!(
        f["injected"][0]["detail"], "terminated 4 client connections",
        "{f}"
    );
    assert_eq!(f["connections_lost"], 4, "{f}");
    let waits = &run["server"]["wait_events"];
    assert!(waits["samples"].as_u64().unwrap() >= 1, "{waits}");
    let counted: u64 = waits["counts"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert!(
        counted > 0,
        "no client backend named myapp sampled: {waits}"
    );
    // Every connection kept the user's name; isobench's own appended.
    let log = std::fs::read_to_string(dir.join("external-server.log")).unwrap();
    let names: std::collections::BTreeSet<&str> = log
        .lines()
        .filter_map(|l| l.split("application_name=").nth(1))
        .map(|n| n.trim())
        .collect();
    assert!(names.contains("myapp"), "{names:?}");
    assert!(names.contains("myapp/isobench-observer"), "{names:?}");
    assert!(names.contains("myapp/isobench-fault"), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("myapp")), "{names:?}");
}
