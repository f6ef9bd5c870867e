//! The workload and the script as factors (issue #30 item 2), through the
//! real binary on the managed server: `-w tpcb,ssibench` runs both
//! workloads in one interleaved study with the first as the baseline, a
//! study file's `script = [builtin, file]` compares pgbench's built-in
//! TPC-B with a function that swallows serialization failures (seed 003
//! in one study), and bad factor values are refused before anything runs.

use crate::common;

use common::*;
use serde_json::Value;

/// A script fixture's path.
fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/scripts/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// cells.json of results directory `dir`.
fn cells_json(dir: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(dir.join("cells.json")).expect("cells.json");
    serde_json::from_str(&text).expect("cells.json parses")
}

/// `-w tpcb,ssibench` at a tiny size: one cell per workload, run in
/// interleaved order (repetition 1 of both, then repetition 2), each
/// loaded once as its own template, named by the workload in every
/// report, with tpcb (the first) the baseline of ssibench.
#[test]
fn the_workload_as_a_factor_runs_both_against_the_first() {
    let (_keep, dir) = out_dir("workloads");
    let ran = Study::short()
        .repeat(2)
        .out(&dir)
        .args(&[
            "-w",
            "tpcb,ssibench",
            "-s",
            "1",
            "--param",
            "table-size=1000",
            "--isolation",
            "ser",
            "--clients",
            "2",
        ])
        .run();
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["config"]["workload"], "tpcb");
    assert_eq!(
        r["config"]["workloads"],
        serde_json::json!(["tpcb", "ssibench"])
    );
    assert_eq!(r["config"]["baseline"], "workload=tpcb");
    let order: Vec<(String, u64)> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            assert_eq!(run["cell"]["work_factor"], "workload");
            assert!(run["committed"].as_u64().unwrap() > 0, "{run:#}");
            (
                run["cell"]["workload"].as_str().unwrap().to_string(),
                run["repetition"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = [("tpcb", 1), ("ssibench", 1), ("tpcb", 2), ("ssibench", 2)]
        .iter()
        .map(|(w, k)| (w.to_string(), *k))
        .collect();
    assert_eq!(order, want);
    // Each workload's data loaded once, as its own template.
    let loads: Vec<&str> = r["load"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["data"].as_str().unwrap())
        .collect();
    assert_eq!(loads.len(), 2, "{loads:?}");
    // Every run checked its own workload's invariants.
    let names = |i: usize| -> Vec<String> {
        r["runs"][i]["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_ne!(names(0), names(1));
    let cells = cells_json(&dir);
    let cells = cells["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0]["factors"]["workload"], "tpcb");
    assert_eq!(cells[0]["is_baseline"], true);
    assert_eq!(cells[1]["factors"]["workload"], "ssibench");
    assert_eq!(cells[1]["is_baseline"], false);
    assert_eq!(
        cells[1]["baseline_cell"].as_str().unwrap(),
        cells[0]["label"].as_str().unwrap()
    );
    assert!(
        cells[1]["tps_vs_baseline_pct"].is_number(),
        "{:#}",
        cells[1]
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        report.starts_with("# isobench report: tpcb, ssibench"),
        "{report}"
    );
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("| workload | isolation")),
        "no workload column in report.md:\n{report}"
    );
    let csv = std::fs::read_to_string(dir.join("cells.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().starts_with("workload,"),
        "{csv}"
    );
    assert_managed_server_gone(&r);
}

/// Seed 003 in one study file: `script = ["builtin:tpcb-like",
/// "tpcb_swallow.sql"]` (relative to the file) over pgbench's tables with
/// the swallowing function loaded after them, under repeatable read, with
/// pgbench's foreign keys: the built-in is the baseline, only the
/// function's cell fails the history check.
#[test]
fn the_script_as_a_factor_compares_a_builtin_with_a_file() {
    let (keep, dir) = out_dir("scripts");
    let study_dir = keep.path().join("study");
    std::fs::create_dir_all(&study_dir).unwrap();
    for f in ["tpcb_swallow.sql", "tpcb_swallow_function.sql"] {
        std::fs::copy(fixture(f), study_dir.join(f)).unwrap();
    }
    let study = study_dir.join("s.toml");
    std::fs::write(
        &study,
        r#"workload = "tpcb"
scale = 1
init_sql = "tpcb_swallow_function.sql"
isolation = "rr"
clients = 4
duration = "2s"
warmup = "0s"
repeat = 1
[params]
foreign-keys = true
[factors]
script = ["builtin:tpcb-like", "tpcb_swallow.sql"]
"#,
    )
    .unwrap();
    let ran = run_file(&study, &dir, &["--quiet"]);
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(out.status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["config"]["baseline"], "script=builtin:tpcb-like");
    let sets = r["config"]["scripts"]["sets"].as_array().unwrap();
    assert_eq!(sets[1]["label"], "tpcb_swallow.sql");
    // One template: both sets run over the same tables.
    assert_eq!(r["load"].as_array().unwrap().len(), 1);
    let data = r["load"][0]["data"].as_str().unwrap();
    assert!(
        data.starts_with("pgbench tables, scale 1 with foreign keys, then --init-sql"),
        "{data}"
    );
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let history_ok = |run: &Value| {
        run["invariants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "history-matches-commits")
            .map(|i| i["ok"].as_bool().unwrap())
    };
    assert_eq!(runs[0]["cell"]["workload"], "builtin:tpcb-like");
    assert_eq!(runs[0]["cell"]["work_factor"], "script");
    assert_eq!(history_ok(&runs[0]), Some(true), "{:#}", runs[0]);
    assert_eq!(runs[1]["cell"]["workload"], "tpcb_swallow.sql");
    assert_eq!(history_ok(&runs[1]), Some(false), "{:#}", runs[1]);
    // The built-in's transactions are its own, the file's its own.
    let types = |run: &Value| -> Vec<String> {
        run["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        types(&runs[0])[0].contains("tpcb-like"),
        "{:?}",
        types(&runs[0])
    );
    assert!(
        types(&runs[1])[0].contains("tpcb_swallow.sql"),
        "{:?}",
        types(&runs[1])
    );
    let cells = cells_json(&dir);
    let cells = cells["cells"].as_array().unwrap();
    assert_eq!(cells[0]["factors"]["script"], "builtin:tpcb-like");
    assert_eq!(cells[0]["is_baseline"], true);
    assert_eq!(cells[1]["factors"]["script"], "tpcb_swallow.sql");
    assert_eq!(cells[1]["baseline_cell"], cells[0]["label"]);
    assert_managed_server_gone(&r);
}

/// A factor value that does not exist is refused before anything runs,
/// naming the key or flag and the value, with no results directory left.
#[test]
fn bad_factor_values_are_refused_before_anything_runs() {
    let (keep, dir) = out_dir("bad");
    let study = keep.path().join("s.toml");
    std::fs::write(
        &study,
        "[factors]\nscript = [\"builtin:tpcb-like\", \"missing.sql\"]\n",
    )
    .unwrap();
    let ran = run_file(&study, &dir, &["--quiet"]);
    let (out, _, stderr) = (ran.out, ran.stdout, ran.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("script (--script-factor) builtin:tpcb-like")
            || stderr.contains("missing.sql: cannot read the script"),
        "{stderr}"
    );
    assert!(stderr.contains("missing.sql"), "{stderr}");
    assert!(!dir.join("results.json").exists());
    for (args, needle) in [
        (&["-w", "tpcb,tpce"][..], "unknown workload 'tpce'"),
        (
            &["--script-factor", "builtin:nope"][..],
            "'builtin:nope': no such built-in script",
        ),
        (
            &["-w", "tpcb,ssibench", "--strategy", "locking"][..],
            "--strategy",
        ),
    ] {
        let mut all = vec!["run", "--quiet", "--out", dir.to_str().unwrap()];
        all.extend_from_slice(args);
        let (out, _, stderr) = run(&all);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!dir.join("results.json").exists());
    }
}
