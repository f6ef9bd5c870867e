use std::collections::BTreeMap;

use super::*;
use crate::model::{Cycle, CycleStep};
use crate::probe::spec::parse_syntax;

/// Issue #47's first cycle as a small history (tests/fixtures), checked,
/// and the model's cycle of its G2-item.
fn fixture() -> (History, Cycle) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/histories/g2-item-pg15.jsonl");
    let h = read_history(&path).unwrap();
    let report = crate::elle::check(&h);
    let steps = &report.finding(crate::elle::Class::G2Item).cycles[0];
    let cycle = Cycle {
        steps: steps
            .iter()
            .map(|s| CycleStep {
                from: u64::from(s.from),
                to: u64::from(s.to),
                kind: match s.kind {
                    crate::elle::Dep::Ww => crate::model::Dependency::Ww,
                    crate::elle::Dep::Wr => crate::model::Dependency::Wr,
                    crate::elle::Dep::Rw => crate::model::Dependency::Rw,
                },
                why: s.why.clone(),
            })
            .collect(),
        evidence: None,
    };
    (h, cycle)
}

fn shape() -> Shape {
    let params = BTreeMap::from([("tables".to_string(), "3".to_string())]);
    Shape::from_params(&params, "optimistic").unwrap()
}

#[test]
fn a_violations_directory_holds_every_piece() {
    let (h, cycle) = fixture();
    let shape = shape();
    let v = Violation {
        run: Some(2),
        cell: "isolation=ser keys=10 tables=3".into(),
        class: "G2-item",
        level: Isolation::Serializable,
        cycle: &cycle,
        shape: Some(&shape),
    };
    let dir = tempfile::tempdir().unwrap();
    let replayed = Replayed {
        times: 3,
        committed: 0,
        prevented: BTreeMap::from([("ERROR:  could not serialize access".to_string(), 3)]),
        stopped: BTreeMap::new(),
        first_output: Some("step t1_begin: ...".into()),
    };
    let rel = write(dir.path(), &h, &v, Some(&replayed), Some("a log line\n")).unwrap();
    assert_eq!(rel, "violations/1");
    let read = |f: &str| std::fs::read_to_string(dir.path().join(&rel).join(f)).unwrap();
    let c = read("cycle.txt");
    assert!(
        c.starts_with("G2-item at SERIALIZABLE, run 2 (isolation=ser keys=10 tables=3)"),
        "{c}"
    );
    assert!(c.contains(&format!("cycle: {}", cycle.arrows())), "{c}");
    assert!(c.contains("T2 (client 4, backend pid 5004, read only, committed): r(k2848)=[39171 40011] r(k2852)=[]"), "{c}");
    let s = read("statements.txt");
    // T1's append to k2848 (table 1) sent 2.42 ms after its BEGIN,
    // answered at 2.6 ms.
    assert!(
        s.contains("      2.420     2.600  INSERT INTO la_1 AS t (k, sk, v) VALUES (2848, 2848, ARRAY[40011::bigint])"),
        "{s}"
    );
    assert!(
        s.contains("BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"),
        "{s}"
    );
    let edn = read("history.edn");
    assert!(
        edn.contains("{:index 2, :type :ok, :f :txn, :process 4, :value [[:r 2848 [39171 40011]] [:r 2852 []]]"),
        "{edn}"
    );
    let json: serde_json::Value = serde_json::from_str(&read("history.json")).unwrap();
    assert_eq!(json["txns"].as_array().unwrap().len(), 3);
    assert!(read("replay.txt").contains("prevented 3 of 3: ERROR:  could not serialize access"));
    assert_eq!(read("server.log"), "a log line\n");
    // The next one goes beside it.
    assert_eq!(next_number(dir.path()), 2);
}

/// The replay spec parses as an isolation spec, starts the keys where the
/// cycle found them, and orders the steps by the clients' send times.
#[test]
fn the_replay_spec_starts_from_what_the_cycle_saw_in_the_observed_order() {
    let (h, cycle) = fixture();
    let shape = shape();
    let v = Violation {
        run: Some(2),
        cell: "ser".into(),
        class: "G2-item",
        level: Isolation::Serializable,
        cycle: &cycle,
        shape: Some(&shape),
    };
    let text = replay_spec(&h, &v, &shape, &version_orders(&h));
    let syntax = parse_syntax(&text, "replay.spec").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(syntax.sessions.len(), 3);
    // Before the cycle: k2846 = [38805] (T1 appended 40021 after it),
    // k2848 = [39171], k2852 absent (T3 created it).
    assert!(
        text.contains("INSERT INTO la_2 (k, sk, v) VALUES (2846, 2846, ARRAY[38805]::bigint[]);"),
        "{text}"
    );
    assert!(
        text.contains("INSERT INTO la_1 (k, sk, v) VALUES (2848, 2848, ARRAY[39171]::bigint[]);"),
        "{text}"
    );
    assert!(
        !text.contains("INSERT INTO la_2 (k, sk, v) VALUES (2852"),
        "{text}"
    );
    // Sent (ms after the fixture's base): T1 BEGIN 10.000, T3 BEGIN
    // 10.050, T1's first append 10.150, T3's read 10.170, T1's second
    // append 12.420, T1's COMMIT 12.620, T2 (read only) BEGIN 12.900, its
    // reads 13.100 and 13.270, T3's append 13.350, T2's COMMIT 13.440,
    // T3's 13.770.
    let perm = text.lines().find(|l| l.starts_with("permutation")).unwrap();
    let names: Vec<&str> = perm.split('"').skip(1).step_by(2).collect();
    assert_eq!(
        names,
        [
            "t1_begin",
            "t3_begin",
            "t1_1",
            "t3_1",
            "t1_2",
            "t1_commit",
            "t2_begin",
            "t2_1",
            "t2_2",
            "t3_2",
            "t2_commit",
            "t3_commit"
        ],
        "{text}"
    );
}

#[test]
fn server_log_lines_of_the_backends_while_they_ran() {
    let log = "2026-11-28 16:00:00.010 UTC [5003] 791 LOG:  statement: BEGIN ISOLATION LEVEL SERIALIZABLE\n\
               2026-11-28 16:00:00.011 UTC [9999] 0 LOG:  statement: SELECT 1\n\
               2026-11-28 16:00:00.012 UTC [5003] 791 ERROR:  boom\n\
               \tDETAIL:  a continuation line\n\
               2026-11-28 16:00:09.000 UTC [5003] 0 LOG:  statement: later\n";
    let from = chrono::DateTime::parse_from_rfc3339("2026-11-28T16:00:00.010Z")
        .unwrap()
        .timestamp_micros() as u64;
    let got = log_lines(log, &[5003], from, from + 3_000);
    assert_eq!(
        got,
        "2026-11-28 16:00:00.010 UTC [5003] 791 LOG:  statement: BEGIN ISOLATION LEVEL SERIALIZABLE\n\
         2026-11-28 16:00:00.012 UTC [5003] 791 ERROR:  boom\n\
         \tDETAIL:  a continuation line\n"
    );
}

/// A COMMIT sent before another cycle transaction's first statement but
/// answered after it, which that transaction's snapshot missed (T2
/// -rw-> T3 in the fixture): the replay puts the COMMIT right after that
/// statement, so the replay's snapshots see what the run's saw.
#[test]
fn a_commit_on_its_way_comes_after_the_snapshot_that_missed_it() {
    let (mut h, cycle) = fixture();
    let shape = shape();
    let t3 = h.txns[3].timing.clone().unwrap();
    // T3's COMMIT sent at 13.770 (as recorded) and answered at 15.050;
    // T2 begins at 13.800, its reads sent at 13.900 and 14.000.
    h.txns[3].timing.as_mut().unwrap().commit = Some([3720, 5000]);
    let t2 = h.txns[2].timing.as_mut().unwrap();
    t2.begin_us = t3.begin_us + 3750;
    t2.ops = vec![[100, 150], [200, 250]];
    t2.commit = Some([300, 400]);
    let v = Violation {
        run: Some(2),
        cell: "ser".into(),
        class: "G2-item",
        level: Isolation::Serializable,
        cycle: &cycle,
        shape: Some(&shape),
    };
    let text = replay_spec(&h, &v, &shape, &version_orders(&h));
    let perm = text.lines().find(|l| l.starts_with("permutation")).unwrap();
    let names: Vec<&str> = perm.split('"').skip(1).step_by(2).collect();
    assert_eq!(
        names,
        [
            "t1_begin",
            "t3_begin",
            "t1_1",
            "t3_1",
            "t1_2",
            "t1_commit",
            "t3_2",
            "t2_begin",
            "t2_1",
            "t3_commit",
            "t2_2",
            "t2_commit"
        ],
        "{text}"
    );
}
