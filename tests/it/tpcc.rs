//! TPC-C (issue #40) against a real managed PostgreSQL: after a short
//! run under SERIALIZABLE every consistency condition of clause 3.3.2
//! holds and the clients' commits are in the database, with tpmC beside
//! TPS; each condition catches a violation planted with SQL into loaded
//! data; and TPC-C++'s Credit Check lets write skew through under
//! REPEATABLE READ, which the `credit-check-skew` check counts, and not
//! under SERIALIZABLE.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::*;
use isobench::model::Lifetime;
use isobench::postgres;
use isobench::workload::tpcc::Tpcc;
use isobench::workload::tpcc::txn::TpccLedger;
use isobench::workload::{self, Loader, Setup, Workload};
use serde_json::Value;

/// Every condition's invariant, as a run with `consistency=all` has them.
const CONDITIONS: [&str; 12] = [
    "c1-warehouse-ytd",
    "c2-next-order-id",
    "c3-new-order-range",
    "c4-order-line-count",
    "c5-carrier-new-order",
    "c6-lines-per-order",
    "c7-delivery-date",
    "c8-warehouse-history",
    "c9-district-history",
    "c10-customer-balance",
    "c11-delivered-orders",
    "c12-balance-plus-ytd",
];

/// A one-repetition study of `duration` runs without warm-up; returns
/// results.json (schema-checked, complete) and the terminal output.
fn study(duration: &str, args: &[&str]) -> (Value, String) {
    let ran = Study::short().duration(duration).loud().args(args).run();
    assert!(
        ran.out.status.success(),
        "isobench {args:?} failed: {}",
        ran.stderr
    );
    let r = ran.json();
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    assert_managed_server_gone(&r);
    (r, ran.stdout)
}

fn invariant<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name)
        .unwrap_or_else(|| panic!("no invariant {name}: {}", run["invariants"]))
}

fn tx<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no transaction type {name}"))
}

/// A short TPC-C run under SERIALIZABLE, both strategies: every
/// consistency condition is checked and holds, New-Orders and Payments
/// match the clients' commits, each of the five types commits and has
/// its own latency histogram, and tpmC is the New-Order commits per
/// minute, shown beside TPS.
#[test]
fn tpcc_consistency_conditions_hold_under_serializable() {
    let (r, stdout) = study(
        "3s",
        &[
            "-w",
            "tpcc",
            "-s",
            "1",
            "--isolation",
            "ser",
            "--strategy",
            "optimistic,locking",
            "-c",
            "4",
            "--param",
            "consistency=all",
        ],
    );
    assert!(
        stdout.contains("tpmC") && stdout.contains("New-Order"),
        "{stdout}"
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        let names: BTreeSet<&str> = run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap())
            .collect();
        for c in CONDITIONS
            .iter()
            .chain(&["new-orders-match-commits", "payments-match-commits"])
        {
            assert!(names.contains(c), "{c} not checked: {names:?}");
            let inv = invariant(run, c);
            assert_eq!(inv["ok"], true, "{}: {c}: {}", run["cell"], inv["detail"]);
        }
        assert_eq!(run["anomalies"], 0);
        for t in [
            "New-Order",
            "Payment",
            "Order-Status",
            "Delivery",
            "Stock-Level",
        ] {
            let t = tx(run, t);
            assert!(t["committed"].as_u64().unwrap() > 0, "{t}");
            assert!(!t["latency_histogram"].as_str().unwrap().is_empty());
        }
        let new_orders = tx(run, "New-Order")["committed"].as_f64().unwrap();
        let tpmc = run["tpmc"].as_f64().expect("tpmc per run");
        let duration = run["duration_s"].as_f64().unwrap();
        assert!((tpmc - new_orders * 60.0 / duration).abs() < 1e-6, "{tpmc}");
        // The 1 % rolled back by design are user aborts, never failures.
        let failed_no: u64 = tx(run, "New-Order")["failed"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(code, _)| !code.starts_with("40"))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum();
        assert_eq!(failed_no, 0, "{}", tx(run, "New-Order"));
    }
}

/// A store of loaded TPC-C++ data (all of TPC-C's tables and the Credit
/// Check's) checked as is, then with one violation planted at a time
/// (each inside a transaction rolled back afterwards): the conditions
/// that must catch it, and only those, fail.
#[test]
fn tpcc_checks_catch_planted_violations() {
    let tmp = tempfile::tempdir().unwrap();
    let server = library_server(tmp.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let admin = postgres::connect(&server.config("postgres")).await.unwrap();
        admin.batch_execute("CREATE DATABASE tpcc").await.unwrap();
        let given = BTreeMap::from([
            ("variant".to_string(), "tpcc++".to_string()),
            ("consistency".to_string(), "all".to_string()),
        ]);
        let setup = Setup::new(workload::spec("tpcc").unwrap(), Some(1), None, &given).unwrap();
        let w = Tpcc::new(&setup).unwrap();
        let loader = Loader::new(
            postgres::connect(&server.config("tpcc")).await.unwrap(),
            server.config("tpcc"),
        );
        let rows = w.load(&loader).await.unwrap();
        assert!((590_000..610_000).contains(&rows), "{rows} rows at 1 warehouse");
        let db = postgres::connect(&server.config("tpcc")).await.unwrap();
        let failing = |ledger: TpccLedger| {
            let (w, db) = (&w, &db);
            async move {
                let all = w.check(db, Lifetime::default(), ledger).await.unwrap();
                assert_eq!(all.len(), 15, "12 conditions, 2 commit checks, credit-check-skew");
                all.into_iter()
                    .filter(|i| !i.ok)
                    .map(|i| i.name)
                    .collect::<BTreeSet<String>>()
            }
        };
        assert!(failing(TpccLedger::default()).await.is_empty(), "loaded data is consistent");
        let cases: [(&str, &[&str]); 10] = [
            (
                "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 1",
                &["c1-warehouse-ytd", "c9-district-history"],
            ),
            (
                "UPDATE warehouse SET w_ytd = w_ytd - 0.01",
                &["c1-warehouse-ytd", "c8-warehouse-history"],
            ),
            (
                "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 2",
                &["c2-next-order-id", "new-orders-match-commits"],
            ),
            (
                "DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 3 AND no_o_id = 2500",
                &["c3-new-order-range", "c5-carrier-new-order", "c11-delivered-orders"],
            ),
            (
                "DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 5 AND ol_number = 1",
                &["c4-order-line-count", "c6-lines-per-order"],
            ),
            (
                "UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 5 AND ol_o_id = 6 AND ol_number = 2",
                &["c7-delivery-date"],
            ),
            (
                "UPDATE customer SET c_balance = c_balance + 1 WHERE c_w_id = 1 AND c_d_id = 6 AND c_id = 7",
                &["c10-customer-balance", "c12-balance-plus-ytd"],
            ),
            (
                "INSERT INTO history VALUES (8, 7, 1, 7, 1, now(), 5.00, 'planted')",
                &[
                    "c8-warehouse-history",
                    "c9-district-history",
                    "c10-customer-balance",
                    "payments-match-commits",
                ],
            ),
            (
                "UPDATE orders SET o_carrier_id = 3 WHERE o_w_id = 1 AND o_d_id = 8 AND o_id = 2900",
                &["c5-carrier-new-order", "c7-delivery-date"],
            ),
            // A Credit Check that wrote credit version 1 of customer 9
            // seeing none of its orders: its order (read version 0) and
            // the check missed each other's writes.
            (
                "INSERT INTO credit_check VALUES (1, 9, 9, 1, 0, 'GC', 0, 0)",
                &["credit-check-skew"],
            ),
        ];
        for (sql, want) in cases {
            db.batch_execute(&format!("BEGIN; {sql}")).await.unwrap();
            let got = failing(TpccLedger::default()).await;
            db.batch_execute("ROLLBACK").await.unwrap();
            let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
            assert_eq!(got, want, "after `{sql}`");
        }
        // The clients' counts against an unchanged database.
        let more_new_orders = TpccLedger {
            new_orders: 2,
            ..TpccLedger::default()
        };
        let got = failing(more_new_orders).await;
        assert_eq!(got, BTreeSet::from(["new-orders-match-commits".to_string()]));
        let delivered = TpccLedger {
            delivered: 1,
            ..TpccLedger::default()
        };
        let got = failing(delivered).await;
        assert_eq!(got, BTreeSet::from(["c11-delivered-orders".to_string()]));
        // An unknown outcome is slack, not a violation.
        let unknown = TpccLedger {
            unknown_payments: 1,
            unknown_payment_cents: 500,
            ..TpccLedger::default()
        };
        db.batch_execute("BEGIN; INSERT INTO history VALUES (8, 7, 1, 7, 1, now(), 0.00, 'maybe')")
            .await
            .unwrap();
        let got = failing(unknown).await;
        db.batch_execute("ROLLBACK").await.unwrap();
        assert!(!got.contains("payments-match-commits"), "{got:?}");
    });
}

/// TPC-C++ with every New-Order and Credit Check on one customer per
/// district: under REPEATABLE READ some pairs run concurrently and each
/// misses the other's write (write skew), which `credit-check-skew`
/// counts; under SERIALIZABLE none does (SSI aborts one of each pair).
#[test]
fn tpcc_plus_write_skew_under_repeatable_read_not_serializable() {
    let (r, _) = study(
        "4s",
        &[
            "-w",
            "tpcc",
            "-s",
            "1",
            "--isolation",
            "rr,ser",
            "-c",
            "8",
            "--param",
            "variant=tpcc++",
            "--param",
            "customer-hotspot=1",
            "--param",
            "mix=1/0/0/0/0/1",
            "--param",
            "consistency=quick",
        ],
    );
    let runs = r["runs"].as_array().unwrap();
    let by_level = |level: &str| {
        runs.iter()
            .find(|run| run["cell"]["isolation"] == level)
            .unwrap()
    };
    let (rr, ser) = (by_level("repeatable-read"), by_level("serializable"));
    for run in [rr, ser] {
        assert!(tx(run, "Credit-Check")["committed"].as_u64().unwrap() > 20);
        assert!(tx(run, "New-Order")["committed"].as_u64().unwrap() > 20);
    }
    let skew = invariant(rr, "credit-check-skew");
    assert_eq!(
        skew["ok"], false,
        "rr let no write skew through: {}",
        skew["detail"]
    );
    assert!(
        skew["detail"].as_str().unwrap().contains("write skew"),
        "{skew}"
    );
    assert!(rr["anomalies"].as_u64().unwrap() >= 1);
    let none = invariant(ser, "credit-check-skew");
    assert_eq!(none["ok"], true, "{}", none["detail"]);
    // The rest of TPC-C holds at both levels.
    for run in [rr, ser] {
        for inv in run["invariants"].as_array().unwrap() {
            if inv["name"] != "credit-check-skew" {
                assert_eq!(inv["ok"], true, "{}: {}", inv["name"], inv["detail"]);
            }
        }
    }
}

/// `isobench workloads` lists tpcc with its parameters; `isobench
/// workloads tpcc` shows its transactions and checks.
#[test]
fn tpcc_is_listed_by_isobench_workloads() {
    let (out, stdout, _) = run(&["workloads"]);
    assert!(out.status.success());
    assert!(stdout.lines().any(|l| l.starts_with("tpcc ")), "{stdout}");
    assert!(
        stdout.contains("variant=tpcc mix=spec think=none"),
        "{stdout}"
    );
    let (out, stdout, _) = run(&["workloads", "tpcc"]);
    assert!(out.status.success());
    for needle in [
        "revision 5.11",
        "New-Order (45%)",
        "Credit-Check (tpcc++",
        "c1-warehouse-ytd .. c12-balance-plus-ytd",
        "credit-check-skew",
        "locking",
    ] {
        assert!(stdout.contains(needle), "{needle}:\n{stdout}");
    }
    // A comma in a mix separates a factor's values: each value alone is
    // refused, naming the parameter and the slash form.
    let (out, _, stderr) = run(&[
        "run",
        "-w",
        "tpcc",
        "-s",
        "1",
        "--param",
        "mix=45,43,4,4,4",
        "-T",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--param mix=45") && stderr.contains("45/43/4/4/4"),
        "{stderr}"
    );
}
