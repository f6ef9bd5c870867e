//! pgbench scripts through the real binary (`isobench run -f/-b/-D/-M
//! --init-sql`), against the managed server it starts: built-in scripts
//! with weights, a one-statement TPC-B in every query mode, a PL/pgSQL
//! function that swallows serialization failures, the script language's
//! meta-commands, errors before and during a run, and what a retry starts
//! from. Scripts are in tests/fixtures/scripts/.

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The path of a script fixture.
fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/scripts/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `isobench run ARGS` with short runs (1 s, no warm-up, 1 repetition,
/// --quiet) into `dir`: its exit status and stderr.
fn run_short(args: &[&str], dir: &std::path::Path) -> (std::process::Output, String) {
    let ran = Study::short().out(dir).args(args).run();
    (ran.out, ran.stderr)
}

/// [`run_short`] that must succeed: the results and stderr.
fn run_ok(args: &[&str], dir: &std::path::Path) -> (Value, String) {
    let (out, stderr) = run_short(args, dir);
    assert!(out.status.success(), "isobench {args:?} failed: {stderr}");
    (read_json(dir), stderr)
}

/// The run of `results` at `isolation` (there is one run per cell).
fn run_at<'a>(results: &'a Value, isolation: &str) -> &'a Value {
    let runs = results["runs"].as_array().expect("runs");
    let mut at = runs.iter().filter(|r| r["cell"]["isolation"] == isolation);
    let run = at.next().unwrap_or_else(|| panic!("no {isolation} run"));
    assert!(at.next().is_none(), "more than one {isolation} run");
    run
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// `failed` of a run (or a transaction type): SQLSTATE -> count.
fn failed(v: &Value) -> BTreeMap<String, u64> {
    v["failed"]
        .as_object()
        .expect("failed is an object")
        .iter()
        .map(|(k, n)| (k.clone(), u64_of(n)))
        .collect()
}

/// Committed per transaction type (script name).
fn committed_by_type(run: &Value) -> BTreeMap<String, u64> {
    run["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                u64_of(&t["committed"]),
            )
        })
        .collect()
}

/// The run completed without client errors, and every invariant held.
fn assert_clean(run: &Value, what: &str) {
    assert_eq!(run["complete"], true, "{what}: run incomplete: {run:#}");
    assert_eq!(
        run["errors"].as_array().unwrap().len(),
        0,
        "{what}: client errors: {}",
        run["errors"]
    );
    for inv in run["invariants"].as_array().unwrap() {
        assert_eq!(
            inv["ok"], true,
            "{what}: invariant {} violated: {}",
            inv["name"], inv["detail"]
        );
    }
    assert_eq!(run["anomalies"], 0, "{what}");
}

/// The TPC-B invariants and the history check were checked (pgbench's
/// tables) and held.
fn assert_tpcb_invariants_checked(run: &Value, what: &str) {
    let names: Vec<&str> = run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "accounts-match-history",
            "tellers-match-branches",
            "history-matches-commits"
        ],
        "{what}"
    );
    assert_clean(run, what);
}

/// The history check of `run`: (rows gained, expected at least, detail).
fn history_check(run: &Value) -> (u64, u64, String) {
    let inv = run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "history-matches-commits")
        .unwrap_or_else(|| panic!("no history check: {}", run["invariants"]));
    let detail = inv["detail"].as_str().unwrap().to_string();
    // "pgbench_history gained R rows, expected E[..M]: ..."
    let rest = detail
        .strip_prefix("pgbench_history gained ")
        .expect(&detail);
    let (rows, rest) = rest.split_once(" rows, expected ").expect(&detail);
    let expected = rest.split([':', '.']).next().unwrap();
    (
        rows.parse().expect(&detail),
        expected.parse().expect(&detail),
        detail,
    )
}

/// Only serialization failures / deadlocks gave up (after --max-tries).
fn assert_only_retryable_failures(run: &Value, what: &str) {
    for code in failed(run).keys() {
        assert!(
            code == "40001" || code == "40P01",
            "{what}: a transaction failed with {code}: {}",
            run["failed"]
        );
    }
}

/// The `debug()` lines of stderr, counted.
fn debug_lines(stderr: &str) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for l in stderr.lines().filter(|l| l.starts_with("debug(")) {
        *m.entry(l).or_insert(0) += 1;
    }
    m
}

/// pgbench's three built-in scripts, select-only at weight 2, under read
/// committed and serializable: every script commits; the weights pick
/// select-only for half the transactions; attempts add up to commits,
/// failures and retries; read committed retries and fails nothing;
/// serializable retries tpcb-like (one branch row at scale 1), gives up
/// only with 40001/40P01 after 10 tries, and never on select-only; the
/// TPC-B invariants hold in both; results.json validates; the server is
/// gone.
#[test]
fn builtin_scripts_with_weights_under_rc_and_ser() {
    let (_keep, dir) = out_dir("builtins");
    let (r, _) = run_ok(
        &[
            "-b",
            "tpcb-like",
            "-b",
            "simple-update",
            "-b",
            "select-only@2",
            "--isolation",
            "rc,ser",
            "--scale",
            "1",
            "--clients",
            "4",
        ],
        &dir,
    );
    assert_schema_valid(&r);
    assert_eq!(r["complete"], true);
    assert_eq!(r["config"]["workload"], "pgbench-script");
    assert_eq!(r["runs"].as_array().unwrap().len(), 2);
    let names = [
        "builtin: tpcb-like",
        "builtin: simple-update",
        "builtin: select-only",
    ];
    for iso in ["read-committed", "serializable"] {
        let run = run_at(&r, iso);
        assert_tpcb_invariants_checked(run, iso);
        assert_only_retryable_failures(run, iso);
        let by_type = committed_by_type(run);
        assert_eq!(by_type.keys().count(), 3, "{iso}: {by_type:?}");
        for name in names {
            assert!(
                by_type.get(name).copied().unwrap_or(0) > 0,
                "{iso}: {name} committed nothing: {by_type:?}"
            );
        }
        let committed = u64_of(&run["committed"]);
        assert_eq!(committed, by_type.values().sum::<u64>(), "{iso}");
        // pgbench's own scripts leave every commit's work in the
        // database: the effective tps is the tps (issue #30).
        assert_eq!(
            run["effective_tps"].as_f64(),
            Some(run["tps"].as_f64().unwrap()),
            "{iso}"
        );
        // Plans of the scripts' statements, explained with drawn values,
        // once per distinct statement (tpcb-like and simple-update share
        // theirs): the tellers' update has a plan, with a literal tid.
        let plans = run["server"]["plans"].as_array().expect("plans");
        let teller = plans
            .iter()
            .find(|p| {
                p["label"]
                    == "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;"
            })
            .unwrap_or_else(|| panic!("{iso}: no plan of the tellers' update: {plans:?}"));
        let sql = teller["sql"].as_str().unwrap();
        assert!(!sql.contains(':'), "{iso}: variables replaced: {sql}");
        assert!(
            teller["plan"].as_str().unwrap().contains("pgbench_tellers"),
            "{teller}"
        );
        let labels: Vec<&str> = plans.iter().map(|p| p["label"].as_str().unwrap()).collect();
        let unique: std::collections::BTreeSet<&str> = labels.iter().copied().collect();
        assert_eq!(labels.len(), unique.len(), "{iso}: {labels:?}");
        // Retries are counted as attempts beyond one per transaction.
        let attempts: u64 = run["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| u64_of(&t["attempts"]))
            .sum();
        let gave_up: u64 = failed(run).values().sum();
        assert_eq!(
            attempts,
            committed + gave_up + u64_of(&run["retries"]),
            "{iso}: attempts = transactions + retries"
        );
        // Per-command latency (pgbench -r): select-only's two commands,
        // each run once per attempt; its SELECT takes time, its \set
        // almost none.
        let select = run["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "builtin: select-only")
            .expect("select-only");
        let cmds = select["commands"].as_array().expect("commands");
        assert_eq!(cmds.len(), 2, "{iso}: {cmds:?}");
        assert!(
            cmds[0]["command"]
                .as_str()
                .unwrap()
                .starts_with("\\set aid")
        );
        assert!(
            cmds[1]["command"]
                .as_str()
                .unwrap()
                .starts_with("SELECT abalance")
        );
        // An attempt's command times are recorded just before its outcome:
        // at the window's end, up to one per client (4) can fall apart.
        let attempts = u64_of(&select["attempts"]);
        for c in cmds {
            let n = u64_of(&c["executions"]);
            assert!(
                n.abs_diff(attempts) <= 4,
                "{iso}: {n} executions, {attempts} attempts"
            );
        }
        assert!(
            cmds[1]["mean_ms"].as_f64().unwrap() > cmds[0]["mean_ms"].as_f64().unwrap(),
            "{iso}: {cmds:?}"
        );
    }

    let rc = run_at(&r, "read-committed");
    assert_eq!(rc["retries"], 0, "read committed has nothing to retry");
    assert!(failed(rc).is_empty(), "rc failures: {}", rc["failed"]);
    // Weights 1:1:2 pick select-only for half of the transactions (under
    // read committed nothing fails, so every pick is a commit).
    let by_type = committed_by_type(rc);
    let share = by_type["builtin: select-only"] as f64 / u64_of(&rc["committed"]) as f64;
    assert!(
        (0.38..=0.62).contains(&share),
        "select-only@2 is {share:.3} of the transactions, not about 0.5: {by_type:?}"
    );

    let ser = run_at(&r, "serializable");
    assert!(
        u64_of(&ser["retries"]) > 0,
        "serializable at scale 1 with 4 clients retried nothing"
    );
    let of_type = |name: &str| {
        ser["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    // tpcb-like, which updates the one branch row, is the one retried;
    // select-only never gives up.
    let tpcb = of_type("builtin: tpcb-like");
    assert!(
        u64_of(&tpcb["attempts"])
            > u64_of(&tpcb["committed"]) + failed(&tpcb).values().sum::<u64>(),
        "tpcb-like was not retried: {tpcb:#}"
    );
    assert!(failed(&of_type("builtin: select-only")).is_empty());
    assert_managed_server_gone(&r);
}

/// pgbench's TPC-B as one statement of data-modifying CTEs, in autocommit,
/// in each query mode: the variables each appear several times (so `-M
/// extended/prepared` must map every occurrence to the same parameter),
/// serializable retries the single statement, and the invariants hold.
#[test]
fn single_statement_tpcb_with_ctes_in_every_query_mode() {
    let script = fixture("tpcb_cte.sql");
    std::thread::scope(|s| {
        let handles: Vec<_> = ["prepared", "simple", "extended"]
            .into_iter()
            .map(|mode| {
                let script = &script;
                s.spawn(move || {
                    let (_keep, dir) = out_dir(&format!("cte-{mode}"));
                    let (r, _) = run_ok(
                        &[
                            "-f",
                            script,
                            "-M",
                            mode,
                            "--isolation",
                            "rc,ser",
                            "--scale",
                            "1",
                            "--clients",
                            "4",
                        ],
                        &dir,
                    );
                    assert_eq!(r["config"]["scripts"]["mode"], mode);
                    for iso in ["read-committed", "serializable"] {
                        let what = format!("-M {mode} {iso}");
                        let run = run_at(&r, iso);
                        assert_tpcb_invariants_checked(run, &what);
                        assert_only_retryable_failures(run, &what);
                        let by_type = committed_by_type(run);
                        assert!(
                            by_type.get(script.as_str()).copied().unwrap_or(0) > 0,
                            "{what}: nothing committed: {by_type:?}"
                        );
                    }
                    assert!(failed(run_at(&r, "read-committed")).is_empty());
                    assert!(
                        u64_of(&run_at(&r, "serializable")["retries"]) > 0,
                        "-M {mode}: serializable retried no statement"
                    );
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

/// A TPC-B inside a PL/pgSQL function that catches serialization_failure
/// and returns 0, on tables --init-sql creates (so no TPC-B invariants
/// are checked: they are pgbench's tables only). Under serializable the
/// function swallows many failures (stderr's `int 0` lines, via `\gset`
/// and `\if`) and those transactions count as commits; a failure it
/// does not catch (outside the function, e.g. at COMMIT) is retried, and
/// nothing fails but 40001 after 10 tries. Under read committed nothing is swallowed,
/// retried or failed.
#[test]
fn plpgsql_function_that_swallows_serialization_failures() {
    let (_keep, dir) = out_dir("swallow");
    let script = fixture("swallow.sql");
    let init = fixture("swallow_init.sql");
    let (r, stderr) = run_ok(
        &[
            "-f",
            &script,
            "--init-sql",
            &init,
            "--isolation",
            "rc,ser",
            "--clients",
            "4",
        ],
        &dir,
    );
    for iso in ["read-committed", "serializable"] {
        let run = run_at(&r, iso);
        assert_clean(run, iso);
        assert_eq!(
            run["invariants"].as_array().unwrap().len(),
            0,
            "{iso}: --init-sql data is not pgbench's: no TPC-B checks"
        );
        assert!(u64_of(&run["committed"]) > 0, "{iso}: nothing committed");
        assert_only_retryable_failures(run, iso);
    }
    let rc = run_at(&r, "read-committed");
    assert_eq!(rc["retries"], 0);
    assert!(failed(rc).is_empty(), "{}", rc["failed"]);

    let lines = debug_lines(&stderr);
    let line = "debug(script=0,command=6): int 0";
    assert!(
        lines.keys().all(|l| *l == line),
        "unexpected debug output: {lines:?}"
    );
    let swallowed = lines.get(line).copied().unwrap_or(0);
    assert!(
        swallowed > 0,
        "under serializable the function swallowed no serialization failure"
    );
}

/// The inflated-TPS trap over pgbench's tables: `-w tpcb --init-sql`
/// creates a TPC-B function that swallows serialization_failure
/// (tests/fixtures/scripts/tpcb_swallow_function.sql) after pgbench's
/// tables are loaded, and tpcb_swallow.sql calls it. Under repeatable read
/// (4 clients on one branch row) many calls swallow a 40001 and still
/// count as committed: the balances stay consistent (the function's work
/// is rolled back whole), but pgbench_history gains far fewer rows than
/// committed calls, so the history check fails, counts the missing rows
/// as anomalies, and report.md's Findings say so. Issue #30: the run's
/// effective tps (its tps less the share of commits whose row is missing)
/// is below its tps, "% vs baseline" against read committed (where the
/// function swallows nothing) is on effective tps, the Failures table has
/// a swallowed row, and the terminal summary (`isobench report DIR`, from
/// the store) shows the effective TPS and the history finding.
#[test]
fn the_swallowing_function_over_pgbench_tables_is_flagged() {
    let (_keep, dir) = out_dir("trap");
    let script = fixture("tpcb_swallow.sql");
    let init = fixture("tpcb_swallow_function.sql");
    let (r, _) = run_ok(
        &[
            "-f",
            &script,
            "-w",
            "tpcb",
            "--init-sql",
            &init,
            "--isolation",
            "rc,rr",
            "--scale",
            "1",
            "--clients",
            "4",
        ],
        &dir,
    );
    assert_schema_valid(&r);
    assert_eq!(r["config"]["scripts"]["workload_named"], true);
    assert_eq!(
        r["load"][0]["data"],
        format!("pgbench tables, scale 1, then --init-sql {init}")
    );
    let run = run_at(&r, "repeatable-read");
    let by_name: BTreeMap<&str, &Value> = run["invariants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i))
        .collect();
    assert_eq!(by_name["accounts-match-history"]["ok"], true, "{run:#}");
    assert_eq!(by_name["tellers-match-branches"]["ok"], true, "{run:#}");
    let history = by_name["history-matches-commits"];
    assert_eq!(history["ok"], false, "{history}");
    let (rows, expected, detail) = history_check(run);
    assert!(
        detail.contains("tpcb_swallow.sql 1 per transaction through tpcb_swallowing()"),
        "{detail}"
    );
    assert!(
        rows < expected && expected >= u64_of(&run["committed"]),
        "{detail}"
    );
    assert_eq!(u64_of(&history["violations"]), expected - rows, "{detail}");
    assert_eq!(u64_of(&run["anomalies"]), expected - rows);
    // Nothing failed: the function hid every serialization failure.
    assert!(failed(run).is_empty(), "{}", run["failed"]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let finding = report
        .lines()
        .find(|l| l.contains("transactions committed but pgbench_history gained"))
        .unwrap_or_else(|| panic!("no history finding in report.md:\n{report}"));
    assert!(
        finding.contains("the script reports work that was rolled back"),
        "{finding}"
    );
    eprintln!("{detail}\n{finding}");

    // Effective throughput: the commits whose history row is there.
    let lost = u64_of(&history["lost_commits"]);
    assert_eq!(lost, expected - rows, "{detail}");
    let tps = run["tps"].as_f64().unwrap();
    let effective = run["effective_tps"].as_f64().expect("effective_tps");
    let kept = 1.0 - lost as f64 / u64_of(&run["lifetime"]["committed"]) as f64;
    assert!(
        (effective - tps * kept).abs() <= 1e-9 * tps,
        "effective {effective}, tps {tps}, kept {kept}"
    );
    assert!(effective < tps, "effective {effective}, tps {tps}");
    let rc = run_at(&r, "read-committed");
    assert_tpcb_invariants_checked(rc, "read-committed");
    let rc_tps = rc["tps"].as_f64().unwrap();
    assert_eq!(rc["effective_tps"].as_f64(), Some(rc_tps));
    // % vs baseline compares effective tps.
    let cells: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cells.json")).unwrap()).unwrap();
    let rr_cell = cells["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["factors"]["isolation"] == "rr")
        .expect("rr cell");
    assert_eq!(rr_cell["compared_on"], "effective_tps", "{rr_cell:#}");
    assert_eq!(rr_cell["effective_tps"]["mean"].as_f64(), Some(effective));
    let pct = rr_cell["tps_vs_baseline_pct"].as_f64().unwrap();
    let want = 100.0 * (effective / rc_tps - 1.0);
    assert!((pct - want).abs() < 1e-9, "{pct} vs {want}");
    assert!(u64_of(&rr_cell["swallowed"]) > 0, "{rr_cell:#}");
    assert!(
        report.contains("| swallowed (counted as committed, work not in the database) |"),
        "no swallowed row in report.md:\n{report}"
    );
    // The terminal, from the store (wide enough that nothing wraps).
    let (out, stdout, stderr) = common::run(&["report", dir.to_str().unwrap(), "--width", "1000"]);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("effective TPS (tx/s)")
            && stdout.contains("% vs baseline: mean effective TPS against"),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("finding: ")
            && l.contains("transactions committed but pgbench_history gained")),
        "the integrity finding is not printed:\n{stdout}"
    );
    eprintln!("{stdout}");
    assert_managed_server_gone(&r);
}

/// With a workload other than tpcb named, scripts are refused before
/// anything starts: they run over pgbench's tables or --init-sql's own.
#[test]
fn scripts_refuse_another_named_workload() {
    let (_keep, dir) = out_dir("wsmall");
    let script = fixture("tpcb_swallow.sql");
    let (out, stderr) = run_short(&["-f", &script, "-w", "smallbank"], &dir);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--workload smallbank: pgbench scripts run over pgbench's tables"),
        "{stderr}"
    );
}

/// The script language through the binary (tests/fixtures/scripts/
/// features.sql, whose debug lines pgbench 15 prints identically with
/// `-M extended` once `\;` is replaced): `-D` variables, `debug()`,
/// `\if/\elif/\else` on `:client_id`, `\sleep` with a literal and a
/// variable, `\gset` with a prefix, `\aset` over two statements, and a
/// TPC-B in `\startpipeline`/`\endpipeline` whose result, read back with
/// `\gset`, must equal the client's own count (else `1 / 0` stops it).
#[test]
fn meta_commands_variables_and_debug_output() {
    let (_keep, dir) = out_dir("features");
    let script = fixture("features.sql");
    let (r, stderr) = run_ok(
        &[
            "-f",
            &script,
            "-D",
            "k=41",
            "-D",
            "nap=9",
            "-D",
            "n=0",
            "--isolation",
            "rc",
            "--scale",
            "1",
            "--clients",
            "3",
        ],
        &dir,
    );
    let run = run_at(&r, "read-committed");
    assert_tpcb_invariants_checked(run, "features.sql");
    assert!(
        failed(run).is_empty(),
        "the pipelined transaction and :n disagreed: {}",
        run["failed"]
    );
    let committed = u64_of(&run["committed"]);
    // 1 ms + :nap = 9 ms of \sleep per transaction: at most one commit per
    // 10 ms per client; a \sleep in µs (or none) would allow thousands.
    let window_s = run["duration_s"].as_f64().unwrap();
    let most = (3.0 * (window_s * 100.0 + 1.0)) as u64;
    assert!(
        (30..=most).contains(&committed),
        "{committed} commits in {window_s} s: \\sleep 1 ms + \\sleep :nap ms (9) allow 30..={most}"
    );

    let lines = debug_lines(&stderr);
    let expected = [
        "debug(script=0,command=1): int 42",
        "debug(script=0,command=9): int 100",
        "debug(script=0,command=9): int 200",
        "debug(script=0,command=9): int 300",
        "debug(script=0,command=13): int 83",
        "debug(script=0,command=15): int 78",
    ];
    for e in expected {
        assert!(lines.contains_key(e), "no `{e}` on stderr: {lines:?}");
    }
    assert!(
        lines.keys().all(|l| expected.contains(l)),
        "unexpected debug output: {lines:?}"
    );
    // Every transaction (and the few in flight at the end) printed each.
    for e in [expected[0], expected[4], expected[5]] {
        assert!(
            lines[e] as u64 >= committed,
            "{} x `{e}` for {committed} commits",
            lines[e]
        );
    }
    let roles = lines[expected[1]] + lines[expected[2]] + lines[expected[3]];
    assert_eq!(roles, lines[expected[0]], "one \\if branch per transaction");
}

/// Errors in scripts and their options stop isobench before any server
/// starts: exit 2 within a few seconds, no results directory, one message
/// naming the file and line, as pgbench words it, with the line and a
/// caret under the column found.
#[test]
fn script_errors_stop_before_anything_starts() {
    let (_keep, dir) = out_dir("never");
    let out_arg = dir.to_str().unwrap();
    let bad = fixture("bad_expr.sql");
    let meta = fixture("bad_meta.sql");
    let cases: [(&[&str], String); 6] = [
        (
            &["-f", &bad],
            format!(
                "{bad}:3: syntax error in command \"set\"\n\\set x 1 +\n          ^ error found here\n(syntax error at end of expression: expected an expression)\n"
            ),
        ),
        (
            &["-f", &meta],
            format!("{meta}:2: invalid command in command \"shout\"\n\\shout echo hi\n"),
        ),
        (
            &["-b", "nope"],
            "-b nope: no such built-in script (built-in: tpcb-like, simple-update, select-only)"
                .into(),
        ),
        (&["-b", "tpcb-like@0"], "every script has weight 0".into()),
        (
            &["-b", "select-only", "-D", "1-x=3"],
            "1-x is not a variable name".into(),
        ),
        (
            &["-f", "/nonexistent/script.sql"],
            "-f /nonexistent/script.sql: cannot read the script".into(),
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["run"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--quiet", "--out", out_arg]);
        let started = Instant::now();
        let (out, _, stderr) = run(&all);
        let took = started.elapsed();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&message),
            "{args:?}: wanted {message:?} in:\n{stderr}"
        );
        // Refused before any server starts (a process start and the
        // parse); a managed server's initdb and start alone take seconds.
        assert!(
            took < Duration::from_secs(5),
            "{args:?}: took {took:?}: did a server start?"
        );
        assert!(!dir.exists(), "{args:?}: a results directory was created");
    }
}

/// A run-time error in a script (`\set x :a / 0` at the first
/// transaction, no warm-up): each client stops with the error named
/// `file:line` and counted under SQLSTATE IB001 (none lost before the
/// first tick), nothing commits, the run is saved as incomplete, and the
/// study stops with exit status 1 and the error (pgbench exits 2).
#[test]
fn a_runtime_error_stops_the_client_and_is_recorded() {
    let (_keep, dir) = out_dir("div0");
    let script = fixture("div_by_zero.sql");
    let (out, stderr) = run_short(
        &[
            "-f",
            &script,
            "--isolation",
            "rc,ser",
            "--scale",
            "1",
            "--clients",
            "2",
        ],
        &dir,
    );
    // The study stops after the first run, with the script's error.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "a script error stopped the clients: {script}:3: division by zero (in `\\set x :a / 0`)"
        )),
        "{stderr}"
    );
    let r = read_json(&dir);
    assert_eq!(r["complete"], false);
    assert_eq!(r["runs"].as_array().unwrap().len(), 1, "the study stopped");
    let run = run_at(&r, "read-committed");
    assert_eq!(run["complete"], false);
    assert_eq!(run["committed"], 0);
    assert_eq!(failed(run), BTreeMap::from([("IB001".to_string(), 2)]));
    let errors = run["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for e in errors {
        let e = e.as_str().unwrap();
        assert!(
            e.contains(&format!(
                "{script}:3: division by zero (in `\\set x :a / 0`)"
            )),
            "{e}"
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("division by zero"), "{report}");
    assert_managed_server_gone(&r);
}

/// A retry starts from the variables and the random state its
/// transaction had at its start (retry.sql under serializable, 4 clients
/// on one hot row, --init-sql tables). Each attempt leaves its (:n, :r)
/// in a per-client sequence, which a rollback does not undo; the next
/// attempt with the same :n (a retry) prints whether it drew the same
/// :r. A table counts each client's commits transactionally and must
/// equal :n, or `1 / 0` fails the transaction with 22012.
///
/// pgbench 15.18 differs: it restores only the random state, so `\set n
/// :n + 1` advances on every try (it then aborts the clients on this
/// script with "division by zero").
#[test]
fn retries_start_from_the_transactions_variables_and_random_state() {
    let (_keep, dir) = out_dir("retry");
    let (r, stderr) = run_ok(
        &[
            "-f",
            &fixture("retry.sql"),
            "--init-sql",
            &fixture("retry_init.sql"),
            "-D",
            "n=0",
            "--isolation",
            "ser",
            "--clients",
            "4",
        ],
        &dir,
    );
    let run = run_at(&r, "serializable");
    assert_clean(run, "retry.sql");
    assert!(u64_of(&run["committed"]) > 0);
    // No 22012: no attempt saw :n differ from its client's commits.
    assert_only_retryable_failures(run, "retry.sql");
    let retries = u64_of(&run["retries"]);
    assert!(retries > 0, "no retries on one hot row under serializable");
    let lines = debug_lines(&stderr);
    let count = |what: &str| {
        lines
            .get(format!("debug(script=0,command=5): boolean {what}").as_str())
            .copied()
            .unwrap_or(0) as u64
    };
    let (same, differ) = (count("true"), count("false"));
    assert!(
        same >= retries,
        "{same} retries seen by the script, {retries} counted"
    );
    // A transaction that gave up after --max-tries leaves :n as it was, and
    // the client's next transaction draws a new :r: that is the only way
    // the same :n comes with another draw, once per give-up. The counts
    // cover the measured window and the script's lines the whole run: at
    // each end, up to one transaction per client (4) differs.
    let gave_up: u64 = failed(run).values().sum();
    assert!(
        differ <= gave_up + 4 && differ + 4 >= gave_up,
        "{differ} same-:n attempts with new draws, {gave_up} transactions gave up: {lines:?}"
    );
}

/// A script whose every transaction fails with one error the policy does
/// not retry measures nothing: the study stops after the first run, with
/// exit 1 and the SQLSTATE, instead of running every cell to the end.
#[test]
fn a_workload_that_only_fails_stops_the_study() {
    let (_keep, dir) = out_dir("missing");
    let script = fixture("missing_table.sql");
    let (out, stderr) = run_short(
        &[
            "-f",
            &script,
            "-M",
            "simple",
            "--isolation",
            "rc,ser",
            "--scale",
            "1",
            "--clients",
            "2",
        ],
        &dir,
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("failed with SQLSTATE 42P01 (undefined_table), which is not retried"),
        "{stderr}"
    );
    // The one line also names the server's message and the script's file
    // and line of the failing command.
    let line = stderr
        .lines()
        .find(|l| l.contains("42P01 (undefined_table)"))
        .expect("the error line");
    assert!(
        line.contains(&format!(
            "(the first: {script}:4: relation \"no_such_table\" does not exist (42P01) (in `SELECT count(*) FROM no_such_table;`))"
        )),
        "{line}"
    );
    let r = read_json(&dir);
    assert_eq!(r["runs"].as_array().unwrap().len(), 1, "the study stopped");
    // The run's Problems keep that first failure.
    let errors = r["runs"][0]["errors"].as_array().unwrap();
    assert!(
        errors.iter().any(|e| e
            .as_str()
            .unwrap()
            .starts_with("first failure with SQLSTATE 42P01 (undefined_table), not retried: ")),
        "{errors:?}"
    );
    assert_managed_server_gone(&r);
}

/// A pipeline whose statement fails before its COMMIT (`-M prepared`, as
/// pgbench allows): the server skips the rest of the batch and leaves the
/// transaction open and failed; the engine must roll it back, so the next
/// transaction starts clean (no 25P02 in_failed_sql_transaction), and the
/// transactions whose pipeline did not fail commit.
#[test]
fn a_failed_pipeline_rolls_back_and_the_next_transaction_starts_clean() {
    let (_keep, dir) = out_dir("pipeline-error");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("pipe.sql");
    std::fs::write(
        &script,
        "\\set aid random(1, 100000 * :scale)\n\\set delta random(-5000, 5000)\n\
         \\startpipeline\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT 1 / (:aid % 2);\n\
         INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, 1, :aid, :delta, CURRENT_TIMESTAMP);\n\
         END;\n\\endpipeline\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (r, _) = run_ok(
        &[
            "-f",
            script.to_str().unwrap(),
            "-M",
            "prepared",
            "--isolation",
            "rc",
            "--scale",
            "1",
            "--clients",
            "2",
        ],
        &out,
    );
    let run = run_at(&r, "read-committed");
    let failed = failed(run);
    assert!(
        failed.keys().all(|k| k == "22012"),
        "only division by zero may fail, not 25P02: {failed:?}"
    );
    assert!(failed.get("22012").copied().unwrap_or(0) > 0, "{failed:?}");
    assert!(u64_of(&run["committed"]) > 0, "{}", run["committed"]);
}
