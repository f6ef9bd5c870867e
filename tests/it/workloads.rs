//! The workload library end to end (issue #3): every workload loads, runs
//! with each of its strategies, and its invariants hold where they must;
//! the demonstrations of what isolation buys are reproducible.

use crate::common;

use common::*;
use serde_json::Value;

/// Runs a short study (1 repetition, no warm-up) with `args`; checks
/// success and the schema; returns results.json.
fn study(name: &str, args: &[&str]) -> Value {
    study_for(name, "1500ms", args)
}

/// [`study`] with another measured duration per run.
fn study_for(_name: &str, duration: &str, args: &[&str]) -> Value {
    let r = Study::short()
        .duration(duration)
        .sample_interval("1s")
        .args(args)
        .ok();
    assert_managed_server_gone(&r);
    r
}

fn runs(r: &Value) -> &Vec<Value> {
    r["runs"].as_array().unwrap()
}

fn short(run: &Value) -> &str {
    match run["cell"]["isolation"].as_str().unwrap() {
        "read-committed" => "rc",
        "repeatable-read" => "rr",
        _ => "ser",
    }
}

fn strategy(run: &Value) -> &str {
    run["cell"]["strategy"].as_str().unwrap()
}

fn anomalies(run: &Value) -> u64 {
    run["anomalies"].as_u64().unwrap()
}

fn failed(run: &Value, code: &str) -> u64 {
    run["failed"][code].as_u64().unwrap_or(0)
}

/// Every invariant of `run` holds.
fn assert_invariants_hold(run: &Value) {
    for inv in run["invariants"].as_array().unwrap() {
        assert_eq!(
            inv["ok"],
            true,
            "{} {}: {} violated: {}",
            short(run),
            strategy(run),
            inv["name"],
            inv["detail"]
        );
    }
    assert_eq!(anomalies(run), 0);
}

fn type_names(run: &Value) -> Vec<&str> {
    run["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn tpcb_variants_and_foreign_keys() {
    let r = study(
        "tpcb",
        &[
            "--workload",
            "tpcb",
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "rc",
            "--param",
            "variant=tpcb-like,simple-update,select-only,single-statement",
            "--param",
            "foreign-keys=true",
        ],
    );
    let runs = runs(&r);
    assert_eq!(runs.len(), 4);
    for run in runs {
        let variant = run["cell"]["params"]["variant"].as_str().unwrap();
        assert_eq!(run["cell"]["params"]["foreign-keys"], "true");
        assert_eq!(type_names(run), [variant]);
        assert!(run["committed"].as_u64().unwrap() > 20, "{variant}");
        assert_invariants_hold(run);
    }
    assert_eq!(r["load"].as_array().unwrap().len(), 1, "one template");
}

/// Sibench under SERIALIZABLE: the full scan takes a relation-level SIRead
/// lock; both strategies keep the sum equal to the committed updates.
#[test]
fn sibench_strategies_and_relation_siread_locks() {
    // SIRead locks are sampled once a second from the start of the
    // measured window, when no transaction may have run yet: 3 s gives
    // every run at least two samples taken under load, even on a busy CI
    // machine (1.5 s once gave a run no sample with any lock).
    let r = study_for(
        "sibench",
        "3s",
        &[
            "--workload",
            "sibench",
            "--param",
            "rows=100,1000",
            "--isolation",
            "ser",
            "--strategy",
            "optimistic,locking",
            "--clients",
            "4",
        ],
    );
    let runs = runs(&r);
    assert_eq!(runs.len(), 4);
    assert_eq!(
        r["load"].as_array().unwrap().len(),
        2,
        "one template per rows"
    );
    // A run whose every sample found no SIRead lock happens (1 of 20
    // runs in one full test run here, 0 of 12 in three more): the
    // sampler works when the other runs see locks.
    let mut with_locks = 0;
    for run in runs {
        assert_invariants_hold(run);
        assert_eq!(type_names(run), ["query", "update"]);
        for t in run["transactions"].as_array().unwrap() {
            assert!(t["committed"].as_u64().unwrap() > 0, "{t}");
        }
        let siread = &run["server"]["siread_locks"];
        assert!(siread["samples"].as_u64().unwrap() >= 3, "{siread}");
        if !siread["by_granularity"].as_object().unwrap().is_empty() {
            with_locks += 1;
        }
    }
    assert!(
        with_locks >= 3,
        "{with_locks} of 4 runs sampled a SIRead lock"
    );
    // The query's relation-level lock lives only while a query runs: a
    // read-only transaction without rw-conflicts out releases its SIRead
    // locks at commit. A 1-per-second sample of a 3 s run can miss it in
    // one run on a loaded machine (seen in CI), so each strategy must
    // show it in at least one of its runs.
    for s in ["optimistic", "locking"] {
        assert!(
            runs.iter().filter(|run| strategy(run) == s).any(|run| {
                run["server"]["siread_locks"]["by_granularity"]
                    .as_object()
                    .unwrap()
                    .contains_key("relation")
            }),
            "{s}: no run saw a relation-level SIRead lock"
        );
    }
}

#[test]
fn ssibench_and_simple_ssibench_report_ktps_and_abort_ratio() {
    for w in ["ssibench", "simple-ssibench"] {
        let ran = Study::short()
            .duration("1500ms")
            .loud()
            .args(&[
                "--workload",
                w,
                "--param",
                "table-size=2000",
                "--isolation",
                "rr,ser",
                "--clients",
                "6",
            ])
            .run();
        assert!(ran.out.status.success(), "{w}: {}", ran.stderr);
        assert!(ran.stdout.contains("anomalies"), "{}", ran.stdout);
        let r = ran.json();
        assert_schema_valid(&r);
        for run in runs(&r) {
            assert_invariants_hold(run);
            let ratio = run["abort_ratio"].as_f64().unwrap();
            let wasted = run["wasted_attempts"].as_u64().unwrap();
            let attempts = run["attempts"].as_u64().unwrap();
            assert!((ratio - wasted as f64 / attempts as f64).abs() < 1e-9);
        }
        let ser = runs(&r).iter().find(|r| short(r) == "ser").unwrap();
        assert!(
            ser["retries"].as_u64().unwrap() > 0,
            "{w}: no serialization failures under ser"
        );
        let report = std::fs::read_to_string(ran.dir.join("report.md")).unwrap();
        assert!(report.contains("KTPS") && report.contains("abort ratio"));
    }
}

/// ssibench and simple-ssibench send liumx10/pg-bench's statements, so
/// at its table size (100000 rows) the server plans what it planned for
/// the original: the 20-key update is a literal OR list (a BitmapOr of
/// index scans, not one index scan with an `= ANY` array), the range read
/// an index scan; under SERIALIZABLE both commit and keep their
/// invariants.
#[test]
fn ssibench_statements_and_plans_are_the_originals() {
    for w in ["ssibench", "simple-ssibench"] {
        let r = study(
            w,
            &["--workload", w, "--isolation", "ser", "--clients", "4"],
        );
        let run = &runs(&r)[0];
        assert_invariants_hold(run);
        assert!(run["committed"].as_u64().unwrap() > 20, "{w}: {run}");
        assert_eq!(
            r["load"][0]["rows"],
            if w == "ssibench" { 300_000 } else { 100_000 }
        );
        let plans = run["server"]["plans"].as_array().expect("plans");
        let plan = |label: &str| -> (&str, &str) {
            let p = plans
                .iter()
                .find(|p| p["label"] == label)
                .unwrap_or_else(|| panic!("{w}: no plan of {label}: {plans:?}"));
            (p["sql"].as_str().unwrap(), p["plan"].as_str().unwrap())
        };
        let (sql, update) = plan("update");
        assert_eq!(sql.matches(" OR b_int_key=").count(), 19, "{sql}");
        assert!(update.contains("BitmapOr"), "{w}: {update}");
        assert!(update.contains("Bitmap Heap Scan"), "{w}: {update}");
        let (sql, read) = plan("range read");
        assert!(
            sql.contains("b_int_key > ") && sql.contains(" AND b_int_key < "),
            "{sql}"
        );
        assert!(
            read.contains("Index Scan using ssibench1_pkey"),
            "{w}: {read}"
        );
    }
}

/// `tpcb --param variant=pg-bench`: liumx10/pg-bench's tables and sizes
/// (scale 1: 10 branches, 100 tellers, 100000 accounts; its 100 branches
/// are scale 10), its statements, and its invariants under SERIALIZABLE;
/// foreign keys are refused with it.
#[test]
fn tpcb_pg_bench_variant() {
    let r = study(
        "tpcb-pg-bench",
        &[
            "--workload",
            "tpcb",
            "--scale",
            "1",
            "--clients",
            "4",
            "--isolation",
            "ser",
            "--param",
            "variant=pg-bench",
        ],
    );
    let load = &r["load"][0];
    assert_eq!(load["data"], "pg-bench");
    assert_eq!(load["rows"], 10 + 100 + 100_000);
    let cell = &runs(&r)[0];
    assert_eq!(type_names(cell), ["pg-bench"]);
    assert!(cell["committed"].as_u64().unwrap() > 20, "{cell}");
    assert_invariants_hold(cell);
    let plans = cell["server"]["plans"].as_array().expect("plans");
    let labels: Vec<&str> = plans.iter().map(|p| p["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "update account",
            "insert history",
            "update teller",
            "update branch"
        ]
    );
    let branch = plans[3]["sql"].as_str().unwrap();
    assert!(
        branch.starts_with("UPDATE branch SET branch_balance"),
        "{branch}"
    );

    let (_keep, dir) = out_dir("tpcb-pg-bench-fk");
    let (out, _, stderr) = run(&[
        "run",
        "--workload",
        "tpcb",
        "--param",
        "variant=pg-bench",
        "--param",
        "foreign-keys=true",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("foreign-keys") && stderr.contains("pg-bench"),
        "{stderr}"
    );
}

/// SmallBank keeps its money under SERIALIZABLE with both strategies and
/// with a DEFERRABLE Balance; user aborts are counted apart from failures.
#[test]
fn smallbank_conserves_money_under_serializable() {
    let r = study(
        "smallbank",
        &[
            "--workload",
            "smallbank",
            "--param",
            "customers=500",
            "--param",
            "hotspot-size=20",
            "--param",
            "send-payment=true",
            "--param",
            "balance=read-write,deferrable",
            "--isolation",
            "ser",
            "--strategy",
            "optimistic,locking",
            "--clients",
            "6",
        ],
    );
    let runs = runs(&r);
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_invariants_hold(run);
        assert_eq!(
            type_names(run),
            [
                "Balance",
                "DepositChecking",
                "TransactSaving",
                "Amalgamate",
                "WriteCheck",
                "SendPayment"
            ]
        );
        let names: Vec<&str> = run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"money-conserved"));
    }
}

/// Write skew: under rr with no locks at least one shift is left without a
/// doctor (bounded retries of the demonstration, never a looser
/// assertion); under ser, and with FOR UPDATE, never. --fail-on-violation
/// turns a violation into exit status 3.
#[test]
fn write_skew_demonstration() {
    let mut seen = 0;
    for attempt in 1..=3 {
        let ran = Study::short()
            .duration("2s")
            .args(&[
                "--workload",
                "write-skew",
                "--param",
                "shifts=2",
                "--isolation",
                "rr",
                "--strategy",
                "none",
                "--clients",
                "8",
                "--fail-on-violation",
            ])
            .run();
        let (out, stderr) = (&ran.out, &ran.stderr);
        let r = ran.json();
        seen = anomalies(&runs(&r)[0]);
        if seen > 0 {
            assert_eq!(out.status.code(), Some(3), "{stderr}");
            assert!(stderr.contains("--fail-on-violation"), "{stderr}");
            break;
        }
        assert!(out.status.success(), "{stderr}");
        eprintln!("write skew not produced in attempt {attempt}");
    }
    assert!(seen > 0, "no write skew under rr/none in 3 attempts");

    let r = study(
        "skew-safe",
        &[
            "--workload",
            "write-skew",
            "--param",
            "shifts=2",
            "--isolation",
            "rc,rr,ser",
            "--strategy",
            "none,locking",
            "--clients",
            "8",
        ],
    );
    for run in runs(&r) {
        let (iso, st) = (short(run), strategy(run));
        if st == "locking" || iso == "ser" {
            assert_invariants_hold(run);
        }
        assert!(run["committed"].as_u64().unwrap() > 100, "{iso} {st}");
    }
}

/// Docstore: without locks under rc a delete of a parent races an upsert
/// that references it (dangling reference); the original's NOWAIT locks
/// fail fast with 55P03 instead; SERIALIZABLE retries 40001; neither leaves
/// a dangling reference.
#[test]
fn docstore_demonstration() {
    let params = [
        "--workload",
        "docstore",
        "--param",
        "parents=20",
        "--param",
        "children=20",
        "--param",
        "max-refs=1",
        "--clients",
        "8",
    ];
    let mut dangling = 0;
    for attempt in 1..=3 {
        let mut args = params.to_vec();
        args.extend(["--isolation", "rc", "--strategy", "none"]);
        let r = study("docstore-none", &args);
        dangling = anomalies(&runs(&r)[0]);
        if dangling > 0 {
            break;
        }
        eprintln!("no dangling reference in attempt {attempt}");
    }
    assert!(
        dangling > 0,
        "no dangling reference under rc/none in 3 runs"
    );

    let mut args = params.to_vec();
    args.extend(["--isolation", "rc,ser", "--strategy", "locking,optimistic"]);
    let r = study("docstore-safe", &args);
    for run in runs(&r) {
        let (iso, st) = (short(run), strategy(run));
        match (iso, st) {
            ("rc", "locking") => {
                assert_invariants_hold(run);
                assert!(failed(run, "55P03") > 0, "no lock_not_available: {run}");
            }
            ("ser", "optimistic") => {
                assert_invariants_hold(run);
                assert!(run["retries"].as_u64().unwrap() > 0, "no 40001 retries");
            }
            _ => {}
        }
    }
}

#[test]
fn workloads_command_lists_and_details() {
    let (out, stdout, _) = run(&["workloads"]);
    assert!(out.status.success());
    for name in [
        "tpcb",
        "sibench",
        "ssibench",
        "simple-ssibench",
        "smallbank",
        "write-skew",
        "docstore",
        "list-append",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(name)),
            "{name}:\n{stdout}"
        );
    }
    let (out, stdout, _) = run(&["workloads", "docstore"]);
    assert!(out.status.success());
    assert!(
        stdout.contains("FOR NO KEY UPDATE NOWAIT") && stdout.contains("no-dangling-reference")
    );
    let (out, _, stderr) = run(&["workloads", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("unknown workload 'nope'"), "{stderr}");
}

/// A strategy or parameter the workload does not have is refused before
/// anything starts, naming the option and what the workload has.
#[test]
fn unknown_strategy_or_param_is_refused() {
    for (args, needle) in [
        (
            &["run", "--workload", "tpcb", "--strategy", "locking"][..],
            "--strategy locking: tpcb has no strategy 'locking' (it has optimistic",
        ),
        (
            &["run", "--workload", "sibench", "--param", "rowz=10"][..],
            "--param rowz: sibench has no parameter 'rowz' (it has rows",
        ),
        (
            &["run", "--workload", "sibench", "--param", "rows=0"][..],
            "--param rows=0",
        ),
        (
            &["run", "--workload", "write-skew", "--scale", "5"][..],
            "--scale",
        ),
    ] {
        let (out, _, stderr) = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("results:"), "{stderr}");
    }
}
