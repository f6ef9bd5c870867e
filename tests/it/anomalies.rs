//! `isobench anomalies` against a real managed PostgreSQL: the built-in
//! matrix meets every probe's expectation, a wrong expectation fails the
//! command with a step-by-step explanation, and the coordinator detects
//! lock waits, deadlocks and hangs without hanging itself.

use crate::common;

use std::time::{Duration, Instant};

use isobench::model::Isolation;
use isobench::postgres::{self, ManagedServer};
use isobench::probe::directive;
use isobench::probe::exec::{self, Env, WaitCheck};
use isobench::probe::spec::Outcome;
use isobench::probe::{self, judge};

const NAMES: [&str; 14] = [
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "OTV",
    "PMP",
    "PMP-write",
    "P4",
    "G-single",
    "G-single-predicate",
    "G-single-write-predicate",
    "G2-item",
    "G2",
    "read-only-anomaly",
];

#[test]
fn builtin_matrix_meets_every_expectation_and_writes_json_and_markdown() {
    let (_base, dir) = common::out_dir("anomalies");
    let started = Instant::now();
    let (out, stdout, stderr) = common::run(&["anomalies", "-o", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "isobench anomalies failed ({:?}); the mismatches, step by step:\n{stderr}\n{stdout}",
        out.status
    );
    // The whole matrix, a server included; a generous limit (it was
    // 60 s), so that a loaded machine does not fail it.
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "took {:?}",
        started.elapsed()
    );
    for name in NAMES {
        assert!(
            stdout.contains(name),
            "{name} missing from the matrix:\n{stdout}"
        );
    }
    let text = std::fs::read_to_string(dir.join("anomalies.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    common::assert_valid(&json, "anomalies.schema.json");
    assert!(
        json["server"]["version"]
            .as_str()
            .unwrap()
            .starts_with(char::is_numeric)
    );
    let probes = json["probes"].as_array().unwrap();
    let names: Vec<&str> = probes.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES);
    let get = |name: &str, level: &str| {
        let p = probes.iter().find(|p| p["name"] == name).unwrap();
        p["results"][level].clone()
    };
    // Independent of the probe files' @expect lines: Hermitage's table for
    // PostgreSQL, and how each level gets there.
    for name in ["G0", "G1a", "G1b", "G1c", "OTV"] {
        for level in ["read-committed", "repeatable-read", "serializable"] {
            assert_eq!(get(name, level)["outcome"], "prevented", "{name} {level}");
        }
    }
    for name in ["PMP", "P4", "G-single", "G2-item", "G2"] {
        assert_eq!(get(name, "read-committed")["outcome"], "anomaly", "{name}");
        assert_eq!(get(name, "serializable")["outcome"], "prevented", "{name}");
    }
    for name in ["PMP", "P4", "G-single"] {
        assert_eq!(
            get(name, "repeatable-read")["outcome"],
            "prevented",
            "{name}"
        );
    }
    for name in ["G2-item", "G2", "read-only-anomaly"] {
        assert_eq!(get(name, "repeatable-read")["outcome"], "anomaly", "{name}");
        let ser = get(name, "serializable");
        assert_eq!(ser["error"]["sqlstate"], "40001", "{name}: {ser}");
    }
    let g0 = get("G0", "read-committed");
    assert_eq!(g0["waited"][0], "s2:s2u1", "{g0}");
    assert_eq!(g0["how"], "blocked at step s2:s2u1");
    let p4 = get("P4", "repeatable-read");
    assert_eq!(p4["how"], "blocked at step s2:s2u, then 40001", "{p4}");
    let g2 = get("G2-item", "repeatable-read");
    assert_eq!(
        g2["observation"], "s1r read 1,10; 2,20, s2r read 1,10; 2,20",
        "{g2}"
    );
    let md = std::fs::read_to_string(dir.join("anomalies.md")).unwrap();
    assert!(
        md.contains("| G2-item | item anti-dependency cycle (write skew) |"),
        "{md}"
    );
    assert!(!md.contains("differ from the probes' expectations"), "{md}");
    assert!(
        common::processes_mentioning(dir.to_str().unwrap()).is_empty(),
        "a server outlived isobench"
    );
}

#[test]
fn a_wrong_expectation_exits_3_and_explains_step_by_step() {
    let tmp = tempfile::tempdir().unwrap();
    let text = probe::BUILTIN
        .iter()
        .find(|(n, _)| *n == "G2-item")
        .unwrap()
        .1
        .replace("# @expect ser prevented 40001", "# @expect ser anomaly");
    let file = tmp.path().join("g2-item-wrong.spec");
    std::fs::write(&file, text).unwrap();
    let out_dir = tmp.path().join("out");
    let (out, _stdout, stderr) = common::run(&[
        "anomalies",
        "-q",
        "--isolation",
        "ser",
        "--probe",
        file.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    for needle in [
        "G2-item at serializable: expected anomaly, got prevented (40001 at step s2:s2c)",
        "anomaly if: s1r = \"1,10; 2,20\" and s2r = \"1,10; 2,20\"",
        "serially (s1, s2): s1r 1,10; 2,20, s2r 1,11; 2,20",
        "step s2c: COMMIT;",
        "ERROR 40001: could not serialize access",
        "1 result(s) differ from the probes' @expect lines",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?} in:\n{stderr}");
    }
    let md = std::fs::read_to_string(out_dir.join("anomalies.md")).unwrap();
    assert!(md.contains("differs from the expected anomaly"), "{md}");
}

#[test]
fn a_bad_probe_file_fails_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.spec");
    std::fs::write(&file, "session s1\nstep a { SELECT 1; }\npermutation a b\n").unwrap();
    let out_dir = tmp.path().join("out");
    let (out, _, stderr) = common::run(&[
        "anomalies",
        "--probe",
        file.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.spec:3:15: permutation names unknown step 'b'"),
        "{stderr}"
    );
    assert!(!out_dir.exists(), "the results directory was created");
    let (out, _, stderr) = common::run(&["anomalies", "--probe", "G9"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("--probe G9: no built-in probe of that name"),
        "{stderr}"
    );
}

/// A row lock held by s1 and wanted by s2, for the coordinator tests.
const ROW_LOCK: &str = r#"
# @anomaly s2u = "99"
setup { CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0), (2, 0); }
teardown { DROP TABLE t; }
session s1
setup { BEGIN; }
step s1l { SELECT id FROM t WHERE id = 1 FOR UPDATE; }
step s1m { UPDATE t SET v = 1 WHERE id = 2; }
step s1s { SELECT pg_sleep(30); }
step s1c { COMMIT; }
session s2
setup { BEGIN; }
step s2u { UPDATE t SET v = v + 1 WHERE id = 1 RETURNING v; }
step s2m { UPDATE t SET v = 2 WHERE id = 2; }
step s2c { COMMIT; }
permutation s1l s2u s1c s2c
permutation s1l s2u s2c s1c
permutation s1s
permutation s1l s2m s2u s1m s1c s2c
"#;

fn server(tmp: &std::path::Path) -> ManagedServer {
    crate::common::Server::new(tmp)
        .set("deadlock_timeout", "200ms")
        .start()
}

#[test]
fn coordinator_detects_waits_deadlocks_and_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = directive::parse(ROW_LOCK, "row-lock.spec").unwrap();
        let admin = postgres::connect(&server.config("postgres")).await.unwrap();
        let detected = WaitCheck::detect(&admin).await.unwrap();
        assert_eq!(detected, WaitCheck::IsolationTestFunction);
        for wait_check in [WaitCheck::IsolationTestFunction, WaitCheck::LockWaitEvent] {
            let env = Env {
                config: server.config("postgres"),
                wait_check,
                step_timeout: Duration::from_secs(1),
                cancel: Default::default(),
            };
            let rc = Isolation::ReadCommitted;

            // s2 waits on s1's row lock; s1's COMMIT releases it.
            let e = exec::execute(&env, &p, &p.permutations[0], rc, false).await.unwrap();
            let r = judge(&p, &e, rc);
            assert_eq!(r.outcome, Outcome::Prevented, "{wait_check:?}: {:#?}", e.trace);
            assert_eq!(r.how, "blocked at step s2:s2u");
            assert_eq!(e.rows(p.permutations[0][1]), Some(&["1".to_string()][..]));
            let trace = e.trace.join("\n");
            let waiting = trace.find("step s2u: UPDATE t SET v = v + 1 WHERE id = 1 RETURNING v; <waiting ...>");
            let commit = trace.find("step s1c: COMMIT;");
            let done = trace.find("step s2u: <... completed>");
            assert!(
                waiting.is_some() && waiting < commit && commit < done,
                "{wait_check:?}: {trace}"
            );
            assert_eq!(e.committed, vec![true, true]);

            // s2's COMMIT is due while s2u still waits for s1, which commits
            // only after it: stuck, reported and cleaned up within the timeout.
            let start = Instant::now();
            let e = exec::execute(&env, &p, &p.permutations[1], rc, false).await.unwrap();
            let r = judge(&p, &e, rc);
            assert_eq!(r.outcome, Outcome::Stuck, "{wait_check:?}: {:#?}", e.trace);
            assert!(
                r.how.starts_with("at step s2:s2u, waiting on a lock for 1."),
                "{}",
                r.how
            );
            // Reported when the 1 s step timeout ends, not after the lock
            // (held until s1 commits, which never comes).
            assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());

            // A step that runs (no lock wait) past the timeout: stuck and
            // cancelled, not waited for.
            let start = Instant::now();
            let e = exec::execute(&env, &p, &p.permutations[2], rc, false).await.unwrap();
            let r = judge(&p, &e, rc);
            assert_eq!(r.outcome, Outcome::Stuck);
            assert!(r.how.starts_with("at step s1:s1s, running for 1."), "{}", r.how);
            // Cancelled at the 1 s step timeout, not waited for (the step
            // sleeps 30 s).
            assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());

            // Nothing leaks: no probe schema, and the session backends end
            // (they exit asynchronously after their connections close).
            let mut leftovers = -1i64;
            for _ in 0..30 {
                leftovers = admin
                    .query_one(
                        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'isobench_probe_%')
                              + (SELECT count(*) FROM pg_stat_activity
                                  WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())",
                        &[],
                    )
                    .await
                    .unwrap()
                    .get(0);
                if leftovers == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(leftovers, 0, "{wait_check:?}");
        }

        // A deadlock: both sessions wait; PostgreSQL's detector (200 ms
        // here) fails one with 40P01 and the other completes.
        let env = Env {
            config: server.config("postgres"),
            wait_check: detected,
            step_timeout: Duration::from_secs(3),
            cancel: Default::default(),
        };
        let rc = Isolation::ReadCommitted;
        let e = exec::execute(&env, &p, &p.permutations[3], rc, false).await.unwrap();
        let r = judge(&p, &e, rc);
        assert_eq!(r.outcome, Outcome::Prevented, "{:#?}", e.trace);
        assert_eq!(r.error.as_ref().unwrap().sqlstate, "40P01", "{:#?}", e.trace);
        assert!(r.mechanisms.contains(&"blocked".to_string()), "{r:?}");
        assert_eq!(e.committed.iter().filter(|c| **c).count(), 1, "{:#?}", e.trace);
    });
}

#[test]
fn a_condition_that_holds_serially_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(tmp.path());
    let text = probe::BUILTIN
        .iter()
        .find(|(n, _)| *n == "G2-item")
        .unwrap()
        .1
        .replace(
            "# @anomaly s1r = \"1,10; 2,20\" and s2r = \"1,10; 2,20\"",
            "# @anomaly s1r = \"1,10; 2,20\"",
        );
    let p = directive::parse(&text, "loose.spec").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let err = rt
        .block_on(async {
            let env = Env {
                config: server.config("postgres"),
                wait_check: WaitCheck::IsolationTestFunction,
                step_timeout: Duration::from_secs(2),
                cancel: Default::default(),
            };
            probe::run_probe(&env, &p, &[Isolation::Serializable]).await
        })
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("loose.spec:") && err.contains("holds in the serial order s1, s2"),
        "{err}"
    );
}

/// G2-item with its own twists: `NO_COMMIT` drops s2's COMMIT (its
/// transaction rolls back when the connection closes), `TEARDOWN_COMMIT`
/// commits s2 in its session teardown, `SNAPSHOT_SETUP` takes a snapshot in
/// each session's setup.
fn g2_item(twist: &str) -> String {
    let text = probe::BUILTIN
        .iter()
        .find(|(n, _)| *n == "G2-item")
        .unwrap()
        .1
        .lines()
        .filter(|l| !l.starts_with("# @expect"))
        .collect::<Vec<_>>()
        .join("\n");
    match twist {
        "NO_COMMIT" => text
            .replace("step s2c { COMMIT; }\n", "")
            .replace("s1c s2c", "s1c"),
        "TEARDOWN_COMMIT" => text
            .replace("step s2c { COMMIT; }", "teardown { COMMIT; }")
            .replace("s1c s2c", "s1c"),
        "SNAPSHOT_SETUP" => text.replace("setup { BEGIN; }", "setup { BEGIN; SELECT 1; }"),
        _ => text,
    }
}

#[test]
fn commits_are_followed_through_teardowns_and_serial_runs_are_serial() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let env = Env {
            config: server.config("postgres"),
            wait_check: WaitCheck::IsolationTestFunction,
            step_timeout: Duration::from_secs(2),
            cancel: Default::default(),
        };
        let levels = [Isolation::RepeatableRead, Isolation::Serializable];
        let run = |text: String| {
            let env = env.clone();
            async move {
                let p = directive::parse(&text, "twist.spec").unwrap();
                probe::run_probe(&env, &p, &levels).await.unwrap()
            }
        };
        // A transaction that never commits cannot take part in an anomaly.
        let r = run(g2_item("NO_COMMIT")).await;
        assert_eq!(
            r.results["repeatable-read"].outcome,
            Outcome::Prevented,
            "{r:#?}"
        );
        // A COMMIT in a session teardown counts, and so does its 40001.
        let r = run(g2_item("TEARDOWN_COMMIT")).await;
        assert_eq!(
            r.results["repeatable-read"].outcome,
            Outcome::Anomaly,
            "{r:#?}"
        );
        let ser = &r.results["serializable"];
        assert_eq!(ser.how, "40001 at s2:teardown", "{ser:#?}");
        // Serial orders run one session after the other, setups included:
        // s2 after s1 reads s1's write.
        let r = run(g2_item("SNAPSHOT_SETUP")).await;
        let s1_first = r.serial.iter().find(|o| o.order == ["s1", "s2"]).unwrap();
        assert_eq!(s1_first.reads["s2r"], "1,11; 2,20", "{r:#?}");
        // Several permutations: the worst outcome, whatever their order.
        let pmp = probe::BUILTIN.iter().find(|(n, _)| *n == "PMP").unwrap().1;
        let harmless = "permutation s1r1 s1r2 s1c s2i s2c";
        for text in [
            pmp.replace(
                "permutation s1r1 s2i s2c s1r2 s1c",
                &format!("permutation s1r1 s2i s2c s1r2 s1c\n{harmless}"),
            ),
            pmp.replace(
                "permutation s1r1 s2i s2c s1r2 s1c",
                &format!("{harmless}\npermutation s1r1 s2i s2c s1r2 s1c"),
            ),
        ] {
            let p = directive::parse(&text, "pmp2.spec").unwrap();
            let r = probe::run_probe(&env, &p, &[Isolation::ReadCommitted])
                .await
                .unwrap();
            let rc = &r.results["read-committed"];
            assert_eq!(rc.outcome, Outcome::Anomaly, "{rc:#?}");
            assert_eq!(rc.as_expected, Some(true), "{rc:#?}");
        }
    });
}

/// A session teardown that waits on another session's lock is stuck, not a
/// hang, and says it was waiting on a lock.
#[test]
fn a_teardown_waiting_forever_is_stuck_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let server = server(tmp.path());
    let text = r#"
# @anomaly s1r = "x"
setup { CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0); }
session s1
step s1r { SELECT 1; }
teardown { UPDATE t SET v = 1 WHERE id = 1; }
session s2
setup { BEGIN; }
step s2u { UPDATE t SET v = 2 WHERE id = 1; }
permutation s1r s2u
"#;
    let p = directive::parse(text, "hang.spec").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let start = Instant::now();
    let r = rt.block_on(async {
        let env = Env {
            config: server.config("postgres"),
            wait_check: WaitCheck::IsolationTestFunction,
            step_timeout: Duration::from_secs(1),
            cancel: Default::default(),
        };
        let e = exec::execute(
            &env,
            &p,
            &p.permutations[0],
            Isolation::ReadCommitted,
            false,
        )
        .await
        .unwrap();
        judge(&p, &e, Isolation::ReadCommitted)
    });
    assert_eq!(r.outcome, Outcome::Stuck, "{r:#?}");
    assert!(
        r.how
            .starts_with("at s1:teardown, waiting on a lock for 1."),
        "{}",
        r.how
    );
    // The 1 s step timeout and the clean-up; a teardown that hung would
    // never return.
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}
