//! YCSB's core workloads and sysbench's OLTP tests (issue #40): each runs
//! a short study whose invariants hold under SERIALIZABLE; the checks
//! catch what READ COMMITTED lets through (YCSB F's lost updates) and a
//! violation planted in the data with SQL.

use std::collections::BTreeMap;

use crate::common::*;
use isobench::model::{Isolation, Lifetime};
use isobench::postgres::{self, ManagedServer};
use isobench::workload::{self, Loader, Setup, TxControl, Workload, WorkloadClient};
use isobench::workload::{sysbench::Sysbench, ycsb::Ycsb};
use serde_json::Value;

/// A short study (1 repetition, no warm-up, 1.5 s runs) with `args`;
/// checks success, the schema and that the managed server is gone;
/// returns results.json.
fn study(args: &[&str]) -> Value {
    let r = Study::short().duration("1500ms").args(args).ok();
    assert_managed_server_gone(&r);
    r
}

fn param<'a>(run: &'a Value, name: &str) -> &'a str {
    run["cell"]["params"][name].as_str().unwrap()
}

/// The invariant `name` of `run`.
fn invariant<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no invariant {name}: {}", run["invariants"]))
}

fn assert_all_hold(run: &Value, label: &str) {
    assert!(
        run["committed"].as_u64().unwrap() > 0,
        "{label}: nothing committed"
    );
    for inv in run["invariants"].as_array().unwrap() {
        assert_eq!(
            inv["ok"], true,
            "{label}: {} violated: {}",
            inv["name"], inv["detail"]
        );
    }
    assert_eq!(run["anomalies"], 0, "{label}");
}

#[test]
fn ycsb_workloads_a_to_f_hold_their_invariants_under_serializable() {
    let r = study(&[
        "-w",
        "ycsb",
        "--param",
        "workload=a,b,c,d,e,f",
        "--param",
        "ops=1,3",
        "--isolation",
        "ser",
        "-c",
        "4",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);
    for run in runs {
        let w = param(run, "workload");
        assert_all_hold(run, &format!("ycsb {w} ops={}", param(run, "ops")));
        let rows = invariant(run, "row-count")["detail"].as_str().unwrap();
        // D and E insert; the others do not.
        let inserted = !rows.contains("committed inserts=0 ");
        assert_eq!(inserted, matches!(w, "d" | "e"), "{w}: {rows}");
        // F counts its read-modify-writes in field0.
        let rmw = run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "rmw-count");
        assert_eq!(rmw, w == "f", "{w}");
    }
    // ops=1 reports YCSB's operation names as transaction types.
    let f1 = runs
        .iter()
        .find(|r| param(r, "workload") == "f" && param(r, "ops") == "1")
        .unwrap();
    let types: Vec<&str> = f1["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["READ", "READ-MODIFY-WRITE"],
        "{}",
        f1["transactions"]
    );
}

/// Read-modify-writes on 10 hot records: READ COMMITTED loses updates
/// (the counters in field0 fall short of the committed read-modify-writes),
/// reading FOR UPDATE or SERIALIZABLE does not.
#[test]
fn ycsb_f_loses_updates_under_read_committed_unless_locked() {
    let r = study(&[
        "-w",
        "ycsb",
        "--param",
        "workload=f",
        "--param",
        "recordcount=10",
        "--param",
        "readproportion=0",
        "--isolation",
        "rc,ser",
        "--strategy",
        "optimistic,locking",
        "-c",
        "8",
    ]);
    for run in r["runs"].as_array().unwrap() {
        let level = run["cell"]["isolation"].as_str().unwrap();
        let strategy = run["cell"]["strategy"].as_str().unwrap();
        let rmw = invariant(run, "rmw-count");
        if level == "read-committed" && strategy == "optimistic" {
            assert_eq!(rmw["ok"], false, "{rmw}");
            assert!(rmw["violations"].as_u64().unwrap() > 0, "{rmw}");
            assert!(
                rmw["detail"].as_str().unwrap().contains("lost updates"),
                "{rmw}"
            );
        } else {
            assert_all_hold(run, &format!("{level} {strategy}"));
        }
    }
}

#[test]
fn sysbench_tests_hold_their_invariants_under_serializable() {
    let tests = "oltp_read_write,oltp_read_only,oltp_write_only,oltp_point_select,\
                 oltp_update_index,oltp_update_non_index,oltp_insert,oltp_delete";
    let r = study(&[
        "-w",
        "sysbench",
        "--param",
        &format!("test={tests}"),
        "--param",
        "table_size=2000",
        "--isolation",
        "ser",
        "-c",
        "4",
    ]);
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 8);
    for run in runs {
        let test = param(run, "test");
        assert_all_hold(run, test);
        let has_k_sum = run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["name"] == "k-sum");
        let deletes = matches!(test, "oltp_read_write" | "oltp_write_only" | "oltp_delete");
        assert_eq!(has_k_sum, !deletes, "{test}");
        let rows = invariant(run, "row-count")["detail"]
            .as_str()
            .unwrap()
            .to_string();
        match test {
            "oltp_insert" => assert!(!rows.contains("inserted=0 "), "{rows}"),
            "oltp_delete" => assert!(!rows.contains("deleted=0 "), "{rows}"),
            _ => {}
        }
        assert_eq!(run["transactions"][0]["name"], test);
    }
    // sysbench's own variants: autocommit statements, empty tables for
    // oltp_insert without auto_inc.
    let r = study(&[
        "-w",
        "sysbench",
        "--param",
        "test=oltp_read_write,oltp_insert",
        "--param",
        "auto_inc=off",
        "--param",
        "skip_trx=on",
        "--param",
        "table_size=500",
        "--param",
        "rand-type=uniform",
        "--isolation",
        "ser",
        "-c",
        "2",
    ]);
    for run in r["runs"].as_array().unwrap() {
        assert_all_hold(run, param(run, "test"));
    }
}

fn setup(name: &str, params: &[(&str, &str)]) -> Setup {
    let given: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Setup::new(workload::spec(name).unwrap(), None, None, &given).unwrap()
}

/// Loads `w` into a new database `db`; returns a connection to it.
async fn load<W: Workload>(server: &ManagedServer, db: &str, w: &W) -> tokio_postgres::Client {
    let admin = postgres::connect(&server.config("postgres")).await.unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .unwrap();
    let loader = Loader::new(
        postgres::connect(&server.config(db)).await.unwrap(),
        server.config(db),
    );
    w.load(&loader).await.unwrap();
    postgres::connect(&server.config(db)).await.unwrap()
}

/// Runs `n` transactions of a client of `w` on `db`, as the engine runs
/// them (prepare, attempt, commit); returns the client's ledger.
async fn drive<W: Workload>(
    server: &ManagedServer,
    db: &str,
    w: &W,
    n: usize,
) -> <W::Client as WorkloadClient>::Ledger {
    let mut conn = isobench::wire::connect(&server.config(db)).await.unwrap();
    let tx = TxControl::prepare(&mut conn, Isolation::Serializable)
        .await
        .unwrap();
    let mut client = w.client(0, 42);
    client.prepare(&mut conn, &tx).await.unwrap();
    for _ in 0..n {
        let input = client.next_input();
        client
            .attempt(&mut conn, &tx, &input)
            .await
            .unwrap_or_else(|e| panic!("attempt: {}", e.describe()));
    }
    client.into_ledger()
}

fn violations(results: &[isobench::model::InvariantResult], name: &str) -> u64 {
    results
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no invariant {name}: {results:?}"))
        .violations
}

/// After a client inserted rows (workload D), deleting one it saw
/// commit is a lost insert and a short row count; an extra row breaks
/// the row count alone.
#[test]
fn ycsb_checks_catch_a_deleted_acknowledged_insert() {
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let w = Ycsb::new(&setup("ycsb", &[("workload", "d"), ("recordcount", "200")])).unwrap();
        let db = load(&server, "ycsb_planted", &w).await;
        let ledger = drive(&server, "ycsb_planted", &w, 600).await;
        assert!(ledger.inserted.len() > 10, "{ledger:?}");
        let ok = w
            .check(&db, Lifetime::default(), ledger.clone())
            .await
            .unwrap();
        assert!(ok.iter().all(|r| r.ok), "{ok:?}");
        let gone = w.config().keys.key(ledger.inserted[3]);
        let n = db
            .execute("DELETE FROM usertable WHERE ycsb_key = $1", &[&gone])
            .await
            .unwrap();
        assert_eq!(n, 1);
        let bad = w
            .check(&db, Lifetime::default(), ledger.clone())
            .await
            .unwrap();
        assert_eq!(violations(&bad, "no-lost-inserts"), 1, "{bad:?}");
        let lost = bad.iter().find(|r| r.name == "no-lost-inserts").unwrap();
        assert!(lost.detail.contains(&gone), "{}", lost.detail);
        assert_eq!(violations(&bad, "row-count"), 1, "{bad:?}");
        // Put it back and add a record nobody inserted: only the count.
        db.batch_execute(&format!(
            "INSERT INTO usertable (ycsb_key) VALUES ('{gone}'), ('user-planted')"
        ))
        .await
        .unwrap();
        let extra = w.check(&db, Lifetime::default(), ledger).await.unwrap();
        assert_eq!(violations(&extra, "no-lost-inserts"), 0, "{extra:?}");
        assert_eq!(violations(&extra, "row-count"), 1, "{extra:?}");
    });
}

/// F's counter: a read-modify-write undone by SQL (a lost update as READ
/// COMMITTED makes them) is counted as one.
#[test]
fn ycsb_checks_catch_an_undone_read_modify_write() {
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let w = Ycsb::new(&setup("ycsb", &[("workload", "f"), ("recordcount", "50")])).unwrap();
        let db = load(&server, "ycsb_rmw", &w).await;
        let ledger = drive(&server, "ycsb_rmw", &w, 300).await;
        assert!(ledger.rmw > 50, "{ledger:?}");
        let ok = w.check(&db, Lifetime::default(), ledger.clone()).await.unwrap();
        assert!(ok.iter().all(|r| r.ok), "{ok:?}");
        db.batch_execute(
            "UPDATE usertable SET field0 = lpad((left(field0, 10)::bigint - 2)::text, 10, '0') || substr(field0, 11)
              WHERE ycsb_key = (SELECT ycsb_key FROM usertable WHERE left(field0, 10)::bigint >= 2 LIMIT 1)",
        )
        .await
        .unwrap();
        let bad = w.check(&db, Lifetime::default(), ledger).await.unwrap();
        assert_eq!(violations(&bad, "rmw-count"), 2, "{bad:?}");
    });
}

/// sysbench: a row deleted behind the clients' back breaks the row
/// count; a k changed by SQL breaks Σ k.
#[test]
fn sysbench_checks_catch_a_deleted_row_and_a_changed_k() {
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let w = Sysbench::new(&setup(
            "sysbench",
            &[
                ("test", "oltp_update_index"),
                ("tables", "2"),
                ("table_size", "300"),
            ],
        ))
        .unwrap();
        let db = load(&server, "sb_planted", &w).await;
        let ledger = drive(&server, "sb_planted", &w, 200).await;
        assert!(ledger.k_added > 0, "{ledger:?}");
        let ok = w
            .check(&db, Lifetime::default(), ledger.clone())
            .await
            .unwrap();
        assert!(ok.iter().all(|r| r.ok), "{ok:?}");
        db.batch_execute("UPDATE sbtest2 SET k = k + 5 WHERE id = 17")
            .await
            .unwrap();
        let bad = w
            .check(&db, Lifetime::default(), ledger.clone())
            .await
            .unwrap();
        assert_eq!(violations(&bad, "k-sum"), 1, "{bad:?}");
        assert_eq!(violations(&bad, "row-count"), 0, "{bad:?}");
        db.batch_execute(
            "UPDATE sbtest2 SET k = k - 5 WHERE id = 17; DELETE FROM sbtest1 WHERE id = 9",
        )
        .await
        .unwrap();
        let bad = w.check(&db, Lifetime::default(), ledger).await.unwrap();
        assert_eq!(violations(&bad, "row-count"), 1, "{bad:?}");
    });
}

/// `isobench workloads` lists both under the names their users know, and
/// a bad value is refused before anything starts, naming the parameter.
#[test]
fn workloads_are_listed_and_bad_values_refused() {
    let (out, stdout, _) = run(&["workloads"]);
    assert!(out.status.success());
    for name in ["ycsb", "sysbench"] {
        assert!(stdout.lines().any(|l| l.starts_with(name)), "{stdout}");
    }
    let (_, ycsb, _) = run(&["workloads", "ycsb"]);
    for p in [
        "recordcount",
        "fieldcount",
        "fieldlength",
        "requestdistribution",
        "ops",
    ] {
        assert!(ycsb.contains(&format!("  {p} ")), "{p}: {ycsb}");
    }
    let (_, sb, _) = run(&["workloads", "sysbench"]);
    for p in [
        "table_size",
        "range_size",
        "point_selects",
        "skip_trx",
        "rand-type",
    ] {
        assert!(sb.contains(&format!("  {p} ")), "{p}: {sb}");
    }
    for (args, needle) in [
        (
            &["run", "-w", "ycsb", "--param", "workload=g"][..],
            "--param workload=g: ycsb expects one of a, b, c, d, e, f",
        ),
        (
            &[
                "run",
                "-w",
                "ycsb",
                "--param",
                "workload=f",
                "--param",
                "fieldlength=5",
            ][..],
            "--param fieldlength=5",
        ),
        (
            &["run", "-w", "sysbench", "--param", "test=oltp_bulk_insert"][..],
            "--param test=oltp_bulk_insert",
        ),
        (
            &["run", "-w", "sysbench", "--param", "tables=0"][..],
            "--param tables=0",
        ),
    ] {
        let (out, _, stderr) = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
