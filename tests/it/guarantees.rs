//! Guarantee violations from history files (issue #47): the two cycles the
//! issue reports (PostgreSQL 15.18 and 18.6), each in a small history of
//! its three transactions with the earlier and later states around them
//! (tests/fixtures/histories), are G2-items; at SERIALIZABLE they break its
//! promise (exit 4) and their evidence replays on the managed server.

use crate::common;

use common::*;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/histories/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn the_issues_two_cycles_are_g2_items_and_violations_at_serializable() {
    let (a, b) = (fixture("g2-item-pg15.jsonl"), fixture("g2-item-pg18.jsonl"));
    // Without a level: anomalies, exit 3, as any checker would say.
    let (out, stdout, stderr) = run(&["check-history", &a, &b]);
    assert_eq!(out.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(stdout.matches("G2-item 1,").count(), 2, "{stdout}");
    // At REPEATABLE READ write skew is allowed: still 3.
    let (out, stdout, _) = run(&["check-history", &a, "--level", "rr"]);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(!stdout.contains("GUARANTEE VIOLATED"), "{stdout}");
    // At SERIALIZABLE: a guarantee violation each, exit 4.
    let (out, stdout, stderr) = run(&["check-history", &a, &b, "--level", "ser"]);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    assert_eq!(
        stdout
            .matches("GUARANTEE VIOLATED: 1 G2-item at SERIALIZABLE, which forbids it")
            .count(),
        2,
        "{stdout}"
    );
    // Evidence needs a level for a file outside a results directory.
    let (out, _, stderr) = run(&["check-history", &a, "--evidence", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--evidence:") && stderr.contains("give --level"),
        "{stderr}"
    );
}

/// The first cycle's evidence replays its statements in the observed
/// order on PostgreSQL: the server prevents it, as the issue found (the
/// append to k2852 fails with 40001): the violation depends on timing.
#[test]
fn the_evidence_replays_and_the_server_prevents_the_statements_alone() {
    let (_keep, dir) = out_dir("evidence");
    let (out, stdout, stderr) = run(&[
        "check-history",
        &fixture("g2-item-pg15.jsonl"),
        "--level",
        "ser",
        "--param",
        "tables=3",
        "--evidence",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(4), "{stdout}{stderr}");
    let v = dir.join("violations/1");
    for f in [
        "cycle.txt",
        "statements.txt",
        "history.edn",
        "history.json",
        "replay.spec",
    ] {
        assert!(v.join(f).is_file(), "{f} missing in {}", v.display());
    }
    let statements = std::fs::read_to_string(v.join("statements.txt")).unwrap();
    assert!(
        statements.contains("backend pid 5004, read only"),
        "{statements}"
    );
    let out_dir = dir.join("replay");
    let (out, stdout, stderr) = run(&[
        "anomalies",
        "--spec",
        v.join("replay.spec").to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}{stderr}");
    let after = stdout
        .split("step t3_2: INSERT INTO la_2")
        .nth(1)
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        after.lines().nth(1).unwrap_or_default()
            == "ERROR:  could not serialize access due to read/write dependencies among transactions",
        "{stdout}"
    );
}

/// A run's guarantee violation gets its evidence while the study's server
/// is up: `for_run` (what a run calls after its checks) writes
/// `violations/1/`, replays the cycle 100 times on the server, and points
/// the invariant's cycle at it.
#[test]
fn a_runs_violation_is_replayed_on_its_server() {
    use isobench::model::{Cell, Isolation};
    let (_keep, dir) = out_dir("run-evidence");
    let server = library_server(&dir.join("server"));
    let target =
        isobench::postgres::Target::external(Some(&socket_dsn(&server, "postgres"))).unwrap();
    // The issue's first cycle as run 2's saved history.
    std::fs::create_dir_all(dir.join("histories")).unwrap();
    let text = std::fs::read(fixture("g2-item-pg15.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    std::fs::write(dir.join("histories/run-2.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let history = isobench::evidence::read_history(&dir.join("histories/run-2.jsonl.gz")).unwrap();
    let report = isobench::elle::check(&history);
    let mut invariants =
        isobench::workload::list_append::invariants(&report, std::time::Duration::ZERO);
    let cell: Cell = serde_json::from_value(serde_json::json!({
        "workload": "list-append",
        "isolation": "serializable",
        "strategy": "optimistic",
        "params": {"tables": "3"},
        "clients": 4,
        "settings": {}
    }))
    .unwrap();
    assert_eq!(cell.isolation, Isolation::Serializable);
    let cancel = tokio_util::sync::CancellationToken::new();
    let e = isobench::evidence::RunEvidence {
        results_dir: &dir,
        run: 2,
        cell: &cell,
        history: "histories/run-2.jsonl.gz",
        replay_on: Some(&target),
        log: None,
        cancel: &cancel,
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let errors = rt.block_on(isobench::evidence::for_run(&e, &mut invariants));
    assert!(errors.is_empty(), "{errors:?}");
    let g2 = invariants.iter().find(|i| i.name == "G2-item").unwrap();
    assert_eq!(g2.cycles[0].evidence.as_deref(), Some("violations/1"));
    let replay = std::fs::read_to_string(dir.join("violations/1/replay.txt")).unwrap();
    assert!(
        replay
            .starts_with("replayed 100 time(s) on the same server: 0 all committed, 100 prevented"),
        "{replay}"
    );
    assert!(replay.contains("depends on timing"), "{replay}");
    // The scratch database is gone.
    let rows = rt.block_on(async {
        let c = isobench::postgres::connect(&target.config("postgres"))
            .await
            .unwrap();
        c.query(
            "SELECT 1 FROM pg_database WHERE datname = 'isobench_replay'",
            &[],
        )
        .await
        .unwrap()
        .len()
    });
    assert_eq!(rows, 0);
}
