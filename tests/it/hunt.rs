//! `--hunt` end to end (issue #47): rounds of the hunt shape's runs on the
//! managed server until the time budget, each round saying where the hunt
//! stands; the settings it refuses.

use crate::common;

use common::*;

#[test]
fn a_hunt_runs_rounds_until_its_budget_and_says_where_it_stands() {
    let ran = Study::short()
        .loud()
        .args(&["--hunt", "--hunt-for", "6s", "--clients", "4"])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    assert_schema_valid(&r);
    assert_managed_server_gone(&r);
    let c = &r["config"];
    assert_eq!(c["workload"], "list-append");
    assert_eq!(c["isolation"], serde_json::json!(["serializable"]));
    assert_eq!(c["hunt"]["rate_bound"], 1e-6);
    assert_eq!(c["hunt"]["budget_s"], 6.0);
    // The hunt shape's parameters, where the command line gave none.
    assert!(
        c["params"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(["key-order", ["random"]])),
        "{c}"
    );
    let runs = r["runs"].as_array().unwrap();
    let status: Vec<&str> = ran
        .stderr
        .lines()
        .filter(|l| l.starts_with("hunt (target ≤ 1.00 per million): ser"))
        .collect();
    // A status line before each round's decision: the planned run, then
    // a round per line but the last, which found the budget spent (1 s
    // runs against 6 s: at least one round).
    assert_eq!(runs.len(), status.len(), "{}", ran.stderr);
    assert!(status.len() >= 2, "{}", ran.stderr);
    assert!(
        status[1].contains(" committed (≤ ") || status[1].contains("(VIOLATED)"),
        "{}",
        status[1]
    );
    assert!(
        ran.stderr
            .contains("hunt: the time budget (--hunt-for) is spent")
            || ran.stderr.contains("VIOLATED"),
        "{}",
        ran.stderr
    );
    // The summary leads with the promise.
    let first = ran
        .stdout
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert!(
        first.starts_with("Every level kept its promise")
            || first.starts_with("GUARANTEE VIOLATED"),
        "{}",
        ran.stdout
    );
}

#[test]
fn hunt_settings_that_cannot_work_are_refused_naming_the_flag() {
    for (args, needle) in [
        (
            &["--rate-bound", "1e-6"][..],
            "--rate-bound: applies to --hunt only",
        ),
        (
            &["--hunt-for", "10m"][..],
            "--hunt-for: applies to --hunt only",
        ),
        (
            &["--hunt", "-w", "tpcb"][..],
            "--hunt: hunts in the histories of list-append",
        ),
        (
            &["--hunt", "--precision", "2%"][..],
            "--hunt and --precision each decide",
        ),
        (
            &["--hunt", "--rate-bound", "2"][..],
            "'2' is not a rate per committed transaction",
        ),
    ] {
        let (out, _, stderr) = run(&[&["run"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
