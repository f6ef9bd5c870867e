//! pgbouncer as a managed component (`--pooler`, issue #42): many clients
//! through it in transaction mode, what its admin console showed, the
//! refusals before a study starts, and no pgbouncer or PostgreSQL process
//! left after any way out (done, error, SIGINT, SIGTERM, SIGKILL).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The private directories of the pgbouncers a study started, from the
/// "listening on unix:DIR/.s.PGSQL.PORT" lines of its `pgbouncer.log`.
fn pgbouncer_dirs(results: &Path) -> Vec<PathBuf> {
    let log = std::fs::read_to_string(results.join("pgbouncer.log")).unwrap_or_default();
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find("listening on unix:")? + "listening on unix:".len()..];
            Some(PathBuf::from(&rest[..rest.find("/.s.PGSQL.")?]))
        })
        .collect()
}

/// Every pgbouncer the study in `results` started is gone, with its
/// directory, within `wait`.
fn assert_pgbouncers_gone(results: &Path, wait: Duration) {
    for dir in assert_pgbouncer_processes_gone(results, wait) {
        assert!(!dir.exists(), "{} still exists", dir.display());
    }
}

/// Every pgbouncer the study in `results` started is gone within `wait`;
/// returns their directories.
fn assert_pgbouncer_processes_gone(results: &Path, wait: Duration) -> Vec<PathBuf> {
    let dirs = pgbouncer_dirs(results);
    assert!(!dirs.is_empty(), "the study started no pgbouncer");
    let deadline = Instant::now() + wait;
    for dir in &dirs {
        let needle = dir.to_str().unwrap().to_string();
        while !processes_mentioning(&needle).is_empty() {
            assert!(
                Instant::now() < deadline,
                "a pgbouncer ({needle}) outlived isobench"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    dirs
}

#[test]
fn two_thousand_clients_run_through_pgbouncer_in_transaction_mode() {
    // A warm-up: pgbouncer counts a transaction when it begins, so a
    // window opening with 2,000 queued clients would count them twice.
    let ran = Study::short()
        .warmup("1s")
        .args(&[
            "-w",
            "tpcb",
            "--scale",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "2000",
            "--pooler",
            "pgbouncer:transaction",
            "--pooler-size",
            "20",
        ])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    assert_schema_valid(&r);
    let run = &r["runs"][0];
    let committed = run["committed"].as_u64().unwrap();
    assert!(committed > 0, "nothing committed");
    assert_eq!(run["anomalies"], 0, "{:#}", run["invariants"]);
    assert_eq!(run["cell"]["pooler"], "pgbouncer:transaction");
    assert_eq!(run["cell"]["pooler_size"], 20);
    // -M was not given: statements are unnamed behind transaction pooling.
    assert_eq!(r["config"]["scripts"]["mode"], "extended");
    // The server was sized for pgbouncer's pool, not for 2,000 clients.
    assert_eq!(
        r["environment"]["server_settings"]["max_connections"],
        "100"
    );
    let p = &run["server"]["pooler"];
    assert_eq!(p["version"].as_str().unwrap().split('.').next(), Some("1"));
    assert_eq!(p["pool_mode"], "transaction");
    assert_eq!(p["pool_size"], 20);
    assert!(p["sv_active"]["max"].as_u64().unwrap() <= 20, "{p:#}");
    // 2,000 clients on 20 server connections queue in pgbouncer.
    assert!(p["cl_waiting"]["max"].as_u64().unwrap() > 1000, "{p:#}");
    assert!(p["wait_per_xact_ms"].as_f64().unwrap() > 0.0, "{p:#}");
    // pgbouncer counted about the transactions the clients committed in
    // the window (its window opens and closes a moment apart from theirs,
    // and it counts transactions as they begin).
    let xacts = p["xacts"].as_u64().unwrap() as f64;
    let c = committed as f64;
    assert!(
        xacts > 0.7 * c && xacts < 1.3 * c + 100.0,
        "pgbouncer {xacts}, clients {c}"
    );
    assert_managed_server_gone(&r);
    assert_pgbouncers_gone(&ran.dir, Duration::from_secs(5));
}

/// Issue #42 item 2: pgbouncer in front of an external server (`--dsn`)
/// reached over TCP with a password. pgbouncer logs in to the server with
/// that password (and listens on 127.0.0.1 too, asking for it there), its
/// pool bounds the server connections the clients use, and isobench's own
/// sessions (loading, the checks) still go to the server directly.
#[test]
fn pgbouncer_in_front_of_an_external_server_with_a_password() {
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let dsn = format!(
        "host=127.0.0.1 port={} user={} password={} dbname=postgres",
        server.port(),
        isobench::postgres::SUPERUSER,
        server.password()
    );
    let ran = Study::short()
        .warmup("500ms")
        .args(&[
            "--dsn",
            &dsn,
            "-w",
            "tpcb",
            "--scale",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "12",
            "--pooler",
            "pgbouncer:transaction",
            "--pooler-size",
            "3",
        ])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    let run = &r["runs"][0];
    assert!(run["committed"].as_u64().unwrap() > 0, "nothing committed");
    // The invariant checks reached the data, directly.
    assert_eq!(run["anomalies"], 0, "{:#}", run["invariants"]);
    let p = &run["server"]["pooler"];
    assert_eq!(p["pool_size"], 3);
    assert!(p["xacts"].as_u64().unwrap() > 0, "{p:#}");
    assert!(p["sv_active"]["max"].as_u64().unwrap() <= 3, "{p:#}");
    // With a password pgbouncer listened on 127.0.0.1 too; it is gone.
    let log = std::fs::read_to_string(ran.dir.join("pgbouncer.log")).unwrap();
    assert!(log.contains("listening on 127.0.0.1:"), "{log}");
    assert_pgbouncers_gone(&ran.dir, Duration::from_secs(5));
    drop(server);
}

#[test]
fn pgbouncer_and_the_server_stop_when_a_study_ends_in_an_error() {
    let (_keep, scripts) = out_dir("scripts");
    std::fs::create_dir_all(&scripts).unwrap();
    let script = scripts.join("missing.sql");
    std::fs::write(&script, "SELECT * FROM no_such_table;\n").unwrap();
    let ran = Study::short()
        .args(&[
            "-f",
            script.to_str().unwrap(),
            "--scale",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "4",
            "--pooler",
            "pgbouncer",
        ])
        .run();
    assert_eq!(ran.out.status.code(), Some(1), "{}", ran.stderr);
    assert!(ran.stderr.contains("42P01"), "{}", ran.stderr);
    assert_pgbouncers_gone(&ran.dir, Duration::from_secs(5));
    assert_managed_server_gone(&ran.json());
}

/// Starts a long study through pgbouncer, sends `signal` once pgbouncer
/// runs, and returns the results directory and the exit status.
fn interrupt(signal: Signal) -> (tempfile::TempDir, PathBuf, std::process::ExitStatus) {
    let (keep, dir) = out_dir("pooler-signal");
    let mut child = Study::short()
        .duration("60s")
        .out(&dir)
        .args(&[
            "--scale",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "8",
            "--pooler",
            "pgbouncer:transaction",
            "--pooler-size",
            "2",
        ])
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while pgbouncer_dirs(&dir).is_empty() {
        assert!(Instant::now() < deadline, "no pgbouncer within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Clients running: both of the pool's server connections inside
    // transactions.
    wait_for_clients_in_transactions(&run_db(child.id()), 2, &[]);
    let running = pgbouncer_dirs(&dir);
    assert!(
        !processes_mentioning(running[0].to_str().unwrap()).is_empty(),
        "pgbouncer not running"
    );
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = child.wait().unwrap();
    (keep, dir, status)
}

#[test]
fn sigint_stops_pgbouncer_and_the_server() {
    let (_keep, dir, status) = interrupt(Signal::SIGINT);
    assert_eq!(status.code(), Some(130));
    assert_pgbouncers_gone(&dir, Duration::from_secs(5));
    assert_managed_server_gone(&read_json(&dir));
}

#[test]
fn sigterm_stops_pgbouncer_and_the_server() {
    let (_keep, dir, status) = interrupt(Signal::SIGTERM);
    assert_eq!(status.code(), Some(130));
    assert_pgbouncers_gone(&dir, Duration::from_secs(5));
    assert_managed_server_gone(&read_json(&dir));
}

/// SIGKILL runs no isobench code: the kernel's parent-death signal ends
/// pgbouncer (its directory stays, as the managed server's does; the test
/// removes both, the server's once its postmaster is gone).
#[test]
fn sigkill_of_isobench_stops_pgbouncer() {
    let (_keep, dir, _) = interrupt(Signal::SIGKILL);
    for d in assert_pgbouncer_processes_gone(&dir, Duration::from_secs(20)) {
        let ini = std::fs::read_to_string(d.join("pgbouncer.ini")).unwrap_or_default();
        let server = ini
            .split_whitespace()
            .find_map(|w| w.strip_prefix("host=/"))
            .map(|h| PathBuf::from(format!("/{h}")));
        let _ = std::fs::remove_dir_all(&d);
        if let Some(server) = server {
            let deadline = Instant::now() + Duration::from_secs(20);
            while !processes_mentioning(server.to_str().unwrap()).is_empty() {
                assert!(Instant::now() < deadline, "postgres still running");
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = std::fs::remove_dir_all(server);
        }
    }
}

#[test]
fn prepared_statements_behind_transaction_pooling_are_refused_with_the_version() {
    let ran = Study::short()
        .args(&["--pooler", "pgbouncer:transaction", "-M", "prepared"])
        .run();
    assert_eq!(ran.out.status.code(), Some(2), "{}", ran.stderr);
    let e = &ran.stderr;
    // The version is detected, not assumed.
    let version = std::process::Command::new("/usr/sbin/pgbouncer")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let version = version.split_whitespace().nth(1).unwrap_or("?");
    assert!(e.contains(&format!("pgbouncer {version}")), "{e}");
    assert!(e.contains("use -M extended"), "{e}");
    assert!(!ran.dir.join("results.json").exists(), "nothing ran");
}

#[test]
fn impossible_pooler_studies_are_refused_before_they_start() {
    for (args, says) in [
        (
            vec![
                "--pooler",
                "pgbouncer:session",
                "--pooler-size",
                "4",
                "--clients",
                "8",
            ],
            "4 would wait for ever",
        ),
        (
            vec!["--pooler-size", "10"],
            "give --pooler pgbouncer:transaction",
        ),
        (
            vec![
                "--pooler",
                "pgbouncer",
                "--pgbouncer-bin",
                "/nonexistent/pgbouncer",
            ],
            "--pgbouncer-bin /nonexistent/pgbouncer: no such file",
        ),
        (
            vec!["--pooler", "pgbouncer:statement"],
            "statement mode refuses",
        ),
        (
            vec!["--pooler-processes", "2"],
            "give --pooler pgbouncer:transaction too",
        ),
        (
            vec!["--pooler", "pgbouncer:session", "--pooler-processes", "2"],
            "each process has its own pool",
        ),
        (
            vec![
                "--pooler",
                "pgbouncer",
                "--pooler-size",
                "2",
                "--pooler-processes",
                "3",
            ],
            "each needs one at least",
        ),
    ] {
        let ran = Study::short().args(&args).run();
        assert_eq!(ran.out.status.code(), Some(2), "{args:?}: {}", ran.stderr);
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
    }
}

/// Issue #51: three shard processes behind shard 0's two pgbouncer
/// processes on one port (`so_reuseport`). Shard 0 starts them with the
/// run and publishes where they listen; the other shards' clients connect
/// there; the two split the pool (5 + 5 server connections) and the 600
/// clients; shard 0's observation sums both admin consoles, so it sees
/// every shard's clients and transactions; both are stopped after the
/// run, and the merged study holds every shard's commits.
#[test]
fn shards_share_shard_0s_pgbouncer_processes() {
    let (_keep, dir) = out_dir("pooler-shards");
    let server = Server::new(&dir).set("max_connections", "100").start();
    let dsn = socket_dsn(&server, "postgres");
    let args = Study::short()
        .warmup("1s")
        .args(&[
            "--dsn",
            &dsn,
            "-w",
            "tpcb",
            "--scale",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "600",
            "--seed",
            "5",
            "--pooler",
            "pgbouncer:transaction",
            "--pooler-size",
            "10",
            "--pooler-processes",
            "2",
        ])
        .without_out();
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("shard-{i}"))).collect();
    let children: Vec<_> = (0..3)
        .map(|i| {
            isobench()
                .args(&args)
                .args(["--shard", &format!("{i}/3"), "--out"])
                .arg(&outs[i])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "shard {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let r: Vec<serde_json::Value> = outs.iter().map(|o| read_json(o)).collect();
    let committed: Vec<u64> = r
        .iter()
        .map(|r| r["runs"][0]["committed"].as_u64().unwrap())
        .collect();
    assert!(committed.iter().all(|&c| c > 0), "{committed:?}");
    assert_eq!(r[0]["config"]["pooler_processes"], 2);
    let p = &r[0]["runs"][0]["server"]["pooler"];
    assert_eq!(p["pool_size"], 10, "{p:#}");
    assert!(p["sv_active"]["max"].as_u64().unwrap() <= 10, "{p:#}");
    // Both consoles summed: every shard's 600 clients, queued or served.
    let clients =
        p["cl_waiting"]["max"].as_u64().unwrap() + p["cl_active"]["max"].as_u64().unwrap();
    assert!(clients > 500, "{p:#}");
    let all: u64 = committed.iter().sum();
    let xacts = p["xacts"].as_u64().unwrap() as f64;
    assert!(
        xacts > 0.7 * all as f64 && xacts < 1.3 * all as f64 + 100.0,
        "pgbouncer {xacts}, the shards' commits {committed:?}"
    );
    // Shard 0's invariants held with every shard's commits.
    let inv = r[0]["runs"][0]["invariants"].as_array().unwrap();
    assert!(inv.iter().all(|i| i["ok"] == true), "{inv:?}");
    // Two processes, on one port, each with its own socket; both gone.
    let log = std::fs::read_to_string(outs[0].join("pgbouncer.log")).unwrap();
    let ports: std::collections::BTreeSet<&str> = log
        .lines()
        .filter_map(|l| l.split("listening on 127.0.0.1:").nth(1))
        .collect();
    assert_eq!(ports.len(), 1, "{log}");
    assert_eq!(pgbouncer_dirs(&outs[0]).len(), 2, "{log}");
    assert_pgbouncers_gone(&outs[0], Duration::from_secs(5));
    for o in &outs[1..] {
        assert!(
            !o.join("pgbouncer.log").exists(),
            "only shard 0 starts pgbouncer"
        );
    }
    drop(server);
}

/// Cancels through pgbouncer 1.18: tokio-postgres's own closes the
/// cancel connection at once, which pgbouncer 1.18 does not survive
/// (pgbouncer issue #801); isobench's waits for the close, as libpq's
/// does: the query is cancelled (57014) and pgbouncer keeps running.
#[test]
fn a_cancel_through_pgbouncer_waits_for_its_close_and_pgbouncer_survives() {
    use isobench::model::PoolMode;
    use isobench::postgres::pgbouncer::{self, PgBouncer, PgBouncerOptions, Upstream};
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let bin = pgbouncer::find_bin(None).expect("pgbouncer");
    let bouncer = PgBouncer::start(&PgBouncerOptions {
        version: pgbouncer::version(&bin).unwrap(),
        bin,
        mode: PoolMode::Session,
        pool_size: 4,
        max_clients: 10,
        processes: 1,
        tcp_clients: false,
        upstream: Upstream::of(&server.config("postgres")).unwrap(),
        log_path: tmp.path().join("pgbouncer.log"),
        os_user: "postgres".into(),
    })
    .expect("pgbouncer starts");
    let config = bouncer.config("postgres");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for round in 0..3 {
            let client = isobench::postgres::connect(&config).await.unwrap();
            let t = Instant::now();
            let (r, ()) = tokio::join!(client.simple_query("SELECT pg_sleep(20)"), async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                isobench::postgres::cancel::cancel(&client, &config).await;
            });
            let e = r.expect_err("cancelled");
            assert_eq!(
                e.code(),
                Some(&tokio_postgres::error::SqlState::QUERY_CANCELED),
                "round {round}: {e}"
            );
            assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        }
    });
    let pid = bouncer.pids()[0];
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "pgbouncer died"
    );
    let log = std::fs::read_to_string(tmp.path().join("pgbouncer.log")).unwrap();
    assert!(!log.contains("FATAL"), "{log}");
    drop(bouncer);
    drop(server);
}
