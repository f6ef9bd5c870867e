//! Declared checks (issue #37): rules a study states about its own data
//! (`[[check]]`, `--check`, `--check-file`), run in each run's database
//! after the run and, with `during`, while it runs; their violations are
//! the anomalies column of every output.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

/// The schema of the transfer tests: `n` accounts of 10 each.
fn accounts_sql(dir: &Path, n: u32) -> String {
    let path = dir.join("accounts.sql");
    std::fs::write(
        &path,
        format!(
            "CREATE TABLE account (id int PRIMARY KEY, balance int NOT NULL);\n\
             INSERT INTO account SELECT g, 10 FROM generate_series(1, {n}) g;\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// A transfer of `amount` (a pgbench expression, after the source's
/// `:balance` is read) from one of the first `n` accounts to account
/// `dst` (an expression) when the source covers it: read, then written
/// (`\gset`, `\if`), with `pause` between the read and the writes.
fn transfer_sql(dir: &Path, n: u32, dst: &str, amount: &str, pause: &str) -> String {
    let path = dir.join("transfer.sql");
    std::fs::write(
        &path,
        format!(
            "\\set src random(1, {n})\n\\set dst {dst}\n\
             BEGIN;\n\
             SELECT balance FROM account WHERE id = :src \\gset\n\
             \\set amount {amount}\n\
             {pause}\
             \\if :amount > 0 and :balance >= :amount\n\
             UPDATE account SET balance = balance - :amount WHERE id = :src;\n\
             UPDATE account SET balance = balance + :amount WHERE id = :dst;\n\
             \\endif\n\
             END;\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// The run of `r` at isolation level `level` (short name).
fn runs_at<'a>(r: &'a Value, level: &str) -> Vec<&'a Value> {
    let long = match level {
        "rc" => "read-committed",
        "rr" => "repeatable-read",
        _ => "serializable",
    };
    r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|run| run["cell"]["isolation"] == long)
        .collect()
}

/// The declared check `name` of `run`.
fn check<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == name && i["declared"] == true)
        .unwrap_or_else(|| panic!("no declared check {name}: {}", run["invariants"]))
}

/// A planted violation: 8 clients each move the whole balance of
/// account 1 or 2 to account 3, with 100 ms between reading the balance
/// and writing it. In the first round at least two clients pick the same
/// source (8 clients, 2 sources) and read it before either writes: under
/// READ COMMITTED both take the balance (the second, after waiting for
/// the first's row lock, subtracts from what is left), and the account
/// stays negative (account 3 is never a source, and nothing is moved
/// into 1 or 2). Under SERIALIZABLE the second fails with 40001 and is
/// retried against the new balance of 0, so nothing goes negative. The
/// check's rows name the overdrawn accounts; the money moved is conserved
/// at both levels (an UPDATE adds to the current balance).
#[test]
fn a_check_catches_under_rc_what_serializable_prevents() {
    let (_keep, dir) = out_dir("transfer");
    std::fs::create_dir_all(&dir).unwrap();
    let init = accounts_sql(&dir, 3);
    let script = transfer_sql(&dir, 2, "3", ":balance", "\\sleep 100 ms\n");
    let checks = dir.join("checks.sql");
    std::fs::write(
        &checks,
        "-- name: no-negative-balance\nSELECT id, balance FROM account WHERE balance < 0;\n\n\
         -- name: money-is-conserved\n-- expect: 30\nSELECT sum(balance) FROM account;\n",
    )
    .unwrap();
    let results = dir.join("results");
    let study = Study::short().duration("1500ms").out(&results).args(&[
        "-f",
        &script,
        "--init-sql",
        &init,
        "--check-file",
        checks.to_str().unwrap(),
        "--isolation",
        "rc,ser",
        "--clients",
        "8",
    ]);
    let r = study.ok();
    assert_eq!(r["config"]["checks"].as_array().unwrap().len(), 2);
    let rc = runs_at(&r, "rc")[0];
    let ser = runs_at(&r, "ser")[0];
    let neg = check(rc, "no-negative-balance");
    let n = neg["violations"].as_u64().unwrap();
    assert!(n > 0, "rc overdrew nothing: {neg}");
    assert_eq!(neg["ok"], false);
    // The violating rows: id and a negative balance.
    let rows = &neg["rows"];
    assert_eq!(rows["columns"], serde_json::json!(["id", "balance"]));
    let first = &rows["rows"][0];
    assert!(first[1].as_str().unwrap().starts_with('-'), "{rows}");
    assert_eq!(rows["rows"].as_array().unwrap().len() as u64, n.min(10));
    assert!(
        rc["anomalies"].as_u64().unwrap() >= n,
        "{}",
        rc["anomalies"]
    );
    assert!(rc["committed"].as_u64().unwrap() > 0);
    // SERIALIZABLE: nothing overdrawn, the failures it took instead.
    let neg = check(ser, "no-negative-balance");
    assert_eq!(
        (neg["violations"].as_u64(), &neg["ok"]),
        (Some(0), &Value::Bool(true)),
        "{neg}"
    );
    assert!(neg.get("rows").is_none_or(Value::is_null), "{neg}");
    assert_eq!(ser["anomalies"], 0);
    assert!(ser["committed"].as_u64().unwrap() > 0);
    for run in [rc, ser] {
        let money = check(run, "money-is-conserved");
        assert_eq!(money["violations"], 0, "{money}");
        assert_eq!(money["detail"], "after the run: sum 30, expected 30");
    }
    // What SERIALIZABLE bought, in the headline, and the checks the
    // anomalies column counts, in the note above the Cells table.
    let md = std::fs::read_to_string(results.join("report.md")).unwrap();
    let headline = md
        .lines()
        .find(|l| l.starts_with("- ser:"))
        .unwrap_or_else(|| panic!("no ser headline: {md}"));
    let bought = format!("0 violations of `no-negative-balance` (rc: {n} in 1 run)");
    assert!(headline.contains(&bought), "{headline}");
    assert!(
        md.contains("Anomalies: violations over all runs of the declared no-negative-balance, money-is-conserved."),
        "{md}"
    );
    let cells: Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("cells.json")).unwrap())
            .unwrap();
    let rc_cell = &cells["cells"][0];
    assert_eq!(rc_cell["anomalies"].as_u64(), Some(n));
    let declared: Vec<&Value> = rc_cell["checks"].as_array().unwrap().iter().collect();
    assert_eq!(declared[0]["name"], "no-negative-balance");
    assert_eq!(
        (declared[0]["violations"].as_u64(), &declared[0]["declared"]),
        (Some(n), &Value::Bool(true))
    );
    // The store keeps the checks, rows and all: `isobench report`
    // writes results.json from it.
    let (out, _, stderr) = run(&["report", results.to_str().unwrap()]);
    assert!(out.status.success(), "{stderr}");
    let again = read_json(&results);
    assert_eq!(again["runs"], r["runs"]);
    assert_eq!(again["config"]["checks"], r["config"]["checks"]);
}

/// A rule broken and then repaired within a run: one client sets a flag
/// negative, waits 300 ms, and sets it back. After the run the flag holds,
/// so a check after the run alone finds nothing; the same check with
/// `during = true`, sampled every 100 ms, sees the flag negative.
#[test]
fn a_during_check_catches_a_rule_broken_then_repaired() {
    let (_keep, dir) = out_dir("during");
    std::fs::create_dir_all(&dir).unwrap();
    let init = dir.join("flag.sql");
    std::fs::write(
        &init,
        "CREATE TABLE flag (id int PRIMARY KEY, v int NOT NULL);\nINSERT INTO flag VALUES (1, 1);\n",
    )
    .unwrap();
    let script = dir.join("flip.sql");
    std::fs::write(
        &script,
        "UPDATE flag SET v = -1 WHERE id = 1;\n\\sleep 300 ms\nUPDATE flag SET v = 1 WHERE id = 1;\n",
    )
    .unwrap();
    let study = dir.join("study.toml");
    std::fs::write(
        &study,
        "file = \"flip.sql\"\ninit_sql = \"flag.sql\"\nisolation = \"rc\"\nclients = 1\n\n\
         [[check]]\nname = \"flag-holds\"\nsql = \"SELECT id, v FROM flag WHERE v < 0\"\nduring = true\n\n\
         [[check]]\nname = \"flag-holds-after\"\nsql = \"SELECT id, v FROM flag WHERE v < 0\"\n",
    )
    .unwrap();
    let r = Study::short()
        .duration("1500ms")
        .sample_interval("100ms")
        .args(&[study.to_str().unwrap()])
        .ok();
    let run = &r["runs"][0];
    let during = check(run, "flag-holds");
    let d = &during["during"];
    assert!(d["samples"].as_u64().unwrap() >= 5, "{during}");
    assert!(d["violated_samples"].as_u64().unwrap() >= 1, "{during}");
    assert_eq!(d["max_violations"], 1, "{during}");
    assert!(d["first_violation_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        d["rows"]["rows"][0],
        serde_json::json!(["1", "-1"]),
        "{during}"
    );
    assert_eq!(during["violations"], 1);
    assert_eq!(during["ok"], false);
    let detail = during["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("after the run: no rows; during the run: up to 1 at once"),
        "{detail}"
    );
    assert_eq!(
        r["config"]["checks"][0]["origin"],
        format!("{}:6", study.display())
    );
    // The same rule checked after the run only: repaired, nothing seen.
    let after = check(run, "flag-holds-after");
    assert_eq!(
        (after["violations"].as_u64(), after.get("during")),
        (Some(0), None),
        "{after}"
    );
    assert_eq!(run["anomalies"], 1);
}

/// Declared checks run beside a built-in workload's own invariants and
/// add to its anomalies: a count of 3 where 0 is expected is 3
/// violations; a count compared with `expect` that matches is none.
#[test]
fn declared_checks_count_beside_a_built_in_workloads_invariants() {
    let r = Study::short()
        .args(&[
            "-w",
            "tpcb",
            "-s",
            "1",
            "--isolation",
            "rc",
            "--clients",
            "2",
            "--check",
            "first-three=SELECT count(*) FROM pgbench_accounts WHERE aid <= 3",
            "--check",
            "a-negative-branch=SELECT bid, bbalance FROM pgbench_branches WHERE bbalance < -1000000000",
        ])
        .ok();
    let run = &r["runs"][0];
    let names: Vec<&str> = run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(names.starts_with(&["balances-consistent"]), "{names:?}");
    assert!(
        names.ends_with(&["first-three", "a-negative-branch"]),
        "{names:?}"
    );
    let three = check(run, "first-three");
    assert_eq!(
        (three["violations"].as_u64(), three["detail"].as_str()),
        (Some(3), Some("after the run: count 3"))
    );
    assert_eq!(check(run, "a-negative-branch")["violations"], 0);
    assert_eq!(three.get("rows"), None, "a count keeps no rows");
    // The workload's invariants hold: the anomalies are the declared 3.
    assert_eq!(run["anomalies"], 3, "{}", run["invariants"]);
    assert_eq!(r["config"]["checks"][0]["origin"], "--check");
}

/// An external load (`--load-cmd`) is checked too: the application
/// (here psql) sets a flag negative, sleeps, and repairs it; the `during`
/// check sees it, the check after the run does not, and a count with
/// `expect` compares the rows the setup made.
#[test]
fn an_external_loads_data_is_checked_during_and_after_the_run() {
    let (_keep, dir) = out_dir("load-checks");
    std::fs::create_dir_all(&dir).unwrap();
    let checks = dir.join("checks.sql");
    std::fs::write(
        &checks,
        "-- name: flag-holds\n-- during: true\nSELECT id, v FROM flag WHERE v < 0;\n\n\
         -- name: one-flag\n-- expect: 1\nSELECT count(*) FROM flag;\n",
    )
    .unwrap();
    let (out, _, stderr) = run(&[
        "run",
        "--setup-cmd",
        "psql -q {dsn} -c 'CREATE TABLE flag (id int PRIMARY KEY, v int NOT NULL); INSERT INTO flag VALUES (1, 1)'",
        "--load-cmd",
        "psql -q {dsn} -c 'UPDATE flag SET v = -1'; sleep 1; psql -q {dsn} -c 'UPDATE flag SET v = 1'",
        "--check-file",
        checks.to_str().unwrap(),
        "--sample-interval",
        "100ms",
        "--repeat",
        "1",
        "--quiet",
        "--out",
        dir.join("results").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir.join("results"));
    assert_schema_valid(&r);
    let run = &r["runs"][0];
    let flag = check(run, "flag-holds");
    assert_eq!(flag["violations"], 1, "{flag}");
    assert!(
        flag["during"]["violated_samples"].as_u64().unwrap() >= 1,
        "{flag}"
    );
    assert!(
        flag["detail"]
            .as_str()
            .unwrap()
            .starts_with("after the run: no rows"),
        "{flag}"
    );
    let one = check(run, "one-flag");
    assert_eq!(
        (one["violations"].as_u64(), one["detail"].as_str()),
        (Some(0), Some("after the run: count 1, expected 1"))
    );
    assert_eq!(run["anomalies"], 1);
}

/// A check that cannot run is bad input naming the check and the line
/// that declared it (exit status 2), never a pass: one that does not
/// prepare stops the study before its first run; one whose result is not
/// a count stops it after the run, which is saved.
#[test]
fn a_check_that_fails_to_run_is_an_error_naming_it_and_its_line() {
    let (_keep, dir) = out_dir("bad-check");
    std::fs::create_dir_all(&dir).unwrap();
    let init = accounts_sql(&dir, 3);
    let script = transfer_sql(&dir, 3, "random(1, 3)", "random(1, 10)", "");
    let study = dir.join("study.toml");
    std::fs::write(
        &study,
        format!(
            "file = \"{script}\"\ninit_sql = \"{init}\"\nisolation = \"rc\"\nclients = 1\n\n\
             [[check]]\nname = \"fine\"\nsql = \"SELECT id FROM account WHERE balance < 0\"\n\n\
             [[check]]\nname = \"broken\"\nsql = \"SELECT id FROM account WHERE nope < 0\"\n"
        ),
    )
    .unwrap();
    let s = Study::short().args(&[study.to_str().unwrap()]);
    let ran = s.run();
    assert_eq!(ran.out.status.code(), Some(2), "{}", ran.stderr);
    let line = format!("check broken ({}:10) failed to run", study.display());
    assert!(ran.stderr.contains(&line), "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("column \"nope\" does not exist (42703)"),
        "{}",
        ran.stderr
    );
    // Found before the run: nothing measured.
    assert_eq!(ran.json()["runs"].as_array().unwrap().len(), 0);

    // A count that is not one: found after the run, which is kept.
    let s = Study::short().args(&[
        "-f",
        &script,
        "--init-sql",
        &init,
        "--isolation",
        "rc",
        "--clients",
        "1",
        "--check",
        "words=SELECT 'many' AS count",
    ]);
    let flagged = s.run();
    assert_eq!(flagged.out.status.code(), Some(2), "{}", flagged.stderr);
    assert!(
        flagged
            .stderr
            .contains("check words (--check) failed to run: its count is many, not an integer"),
        "{}",
        flagged.stderr
    );
    let r = flagged.json();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "the run is saved");
    assert!(runs[0]["committed"].as_u64().unwrap() > 0);
    let errors = runs[0]["errors"].to_string();
    assert!(errors.contains("declared checks not counted"), "{errors}");
}

/// Issue #37: a custom script over pgbench's tables that moves balances
/// between accounts and inserts no history row: TPC-B's checks still run
/// (and hold trivially), but say nothing of it, so its anomalies column
/// says "not checked" in every output, never 0.
#[test]
fn a_custom_script_without_a_check_is_not_checked_never_0() {
    let (_keep, dir) = out_dir("not-checked");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("move.sql");
    std::fs::write(
        &script,
        "\\set src random(1, 100)\n\\set dst random(1, 100)\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance - 1 WHERE aid = :src;\n\
         UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :dst;\nEND;\n",
    )
    .unwrap();
    let study = Study::short().loud().args(&[
        "-f",
        script.to_str().unwrap(),
        "-s",
        "1",
        "--isolation",
        "rc",
        "--clients",
        "2",
    ]);
    let ran = study.run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    let run = &r["runs"][0];
    assert!(run["committed"].as_u64().unwrap() > 0);
    // TPC-B's checks ran and held.
    assert!(!run["invariants"].as_array().unwrap().is_empty());
    assert_eq!(run["anomalies"], 0);
    // The terminal's table and note.
    let table_row = ran
        .stdout
        .lines()
        .find(|l| l.contains("│ rc"))
        .unwrap_or_else(|| panic!("{}", ran.stdout));
    assert!(table_row.contains("not checked"), "{table_row}");
    assert!(
        ran.stdout
            .contains("anomalies: not checked: no check covers these transactions"),
        "{}",
        ran.stdout
    );
    // report.md: the Cells row, the note and the headline.
    let md = std::fs::read_to_string(ran.dir.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| rc |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.ends_with("| not checked |"), "{row}");
    assert!(
        md.contains("Anomalies: not checked: no check covers these transactions"),
        "{md}"
    );
    assert!(
        md.contains("anomalies not checked: no check covers its transactions"),
        "{md}"
    );
    // Machine outputs: null in cells.json, empty in cells.csv.
    let cells: Value =
        serde_json::from_str(&std::fs::read_to_string(ran.dir.join("cells.json")).unwrap())
            .unwrap();
    assert!(
        cells["cells"][0]["anomalies"].is_null(),
        "{}",
        cells["cells"][0]
    );
    let csv = std::fs::read_to_string(ran.dir.join("cells.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "anomalies").unwrap();
    let values: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(values[col], "", "{csv}");
}
