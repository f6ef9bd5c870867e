//! Issue #41, how sure a study is: `--precision` repeats a cell until
//! its interval of TPS is narrow enough (or `--max-repeat`), `--cpus`
//! pins the managed server and the client threads, `isobench calibrate`
//! measures the noise of A/A pairs, and `isobench compare
//! --fail-on-regression` gates CI on it. Short runs against a managed
//! server.

use crate::common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// One tpcb cell at READ COMMITTED, 2 clients.
const CELL: [&str; 8] = [
    "-w",
    "tpcb",
    "--isolation",
    "rc",
    "--clients",
    "2",
    "--scale",
    "1",
];

fn cells_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("cells.json")).expect("cells.json");
    serde_json::from_str(&text).expect("cells.json parses")
}

/// A target any runs reach at the first stage (±99 %: 5 runs whose CV is
/// below 49 %; a second of warm-up keeps a busy machine's first runs
/// from drifting that far): the study stops after 5 repetitions although
/// 7 are allowed, and says so per cell.
#[test]
fn precision_stops_at_the_first_stage_when_the_target_is_reached() {
    let ran = Study::short()
        .warmup("1s")
        .loud()
        .args(&CELL)
        .args(&["--precision", "99%", "--max-repeat", "7"])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    assert_schema_valid(&r);
    assert_eq!(r["runs"].as_array().unwrap().len(), 5, "the first stage");
    assert_eq!(r["config"]["precision"]["target_pct"], 99.0);
    assert_eq!(r["config"]["precision"]["max_repeat"], 7);
    let p = &cells_json(&ran.dir)["cells"][0]["precision"];
    assert_eq!(p["reached"], true, "{p}");
    assert_eq!(p["runs"], 5);
    assert!(p["half_width_pct"].as_f64().unwrap() < 99.0, "{p}");
    assert!(
        ran.stdout.contains("precision ±99 % reached with 5 runs"),
        "{}",
        ran.stdout
    );
    let md = std::fs::read_to_string(ran.dir.join("report.md")).unwrap();
    assert!(md.contains("precision ±99 % reached with 5 runs"), "{md}");
}

/// A target no 1 s run reaches (±0.1 %): every cell runs to
/// `--max-repeat`, and the report says the target was not reached.
#[test]
fn precision_runs_to_the_maximum_when_the_target_is_not_reached() {
    let ran = Study::short()
        .args(&CELL)
        .args(&["--precision", "0.1%", "--max-repeat", "6"])
        .run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let r = ran.json();
    assert_eq!(r["runs"].as_array().unwrap().len(), 6);
    let p = &cells_json(&ran.dir)["cells"][0]["precision"];
    assert_eq!(p["reached"], false, "{p}");
    assert_eq!(p["runs"], 6);
    let md = std::fs::read_to_string(ran.dir.join("report.md")).unwrap();
    assert!(
        md.contains("precision ±0.10 % not reached: ±")
            && md.contains("after 6 runs (the maximum)"),
        "{md}"
    );
}

/// Settings that cannot work are refused before anything runs, with exit
/// 2 and the option named.
#[test]
fn precision_placement_and_calibrate_settings_are_checked() {
    let (_keep, dir) = out_dir("refused");
    let out = dir.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["run", "--precision", "2%", "--max-repeat", "3"],
            "--max-repeat: 3 is below the first stage of 5 repetitions",
        ),
        (vec!["run", "--max-repeat", "8"], "give --precision PCT too"),
        (
            vec!["run", "--cpus", "server=0,clients=0"],
            "CPU 0 is in both",
        ),
        (
            vec!["run", "--cpus", "server=4095"],
            "is not available here",
        ),
        (
            vec!["calibrate", "--precision", "2%"],
            "--precision and --max-repeat do not apply",
        ),
    ] {
        let mut a = args.clone();
        a.extend(["--out", out]);
        let (o, _, stderr) = run(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!dir.exists(), "{args:?} wrote results");
    }
}

/// `Cpus_allowed_list` of /proc/PID[/task/TID]/status.
fn allowed(status: &Path) -> Option<String> {
    let text = std::fs::read_to_string(status).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// The pids whose parent is one of `parents`.
fn children_of(parents: &[u32]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("PPid:"))
                        .and_then(|v| v.trim().parse::<u32>().ok())
                })
                .is_some_and(|pp| parents.contains(&pp))
        })
        .collect()
}

/// `--cpus server=0,clients=1`: while a run measures, every process of
/// the managed server may run on CPU 0 only, and isobench has threads
/// (the clients) on CPU 1 only; the placement is in results.json.
#[test]
fn cpus_pin_the_managed_server_and_the_client_threads() {
    let here = allowed(Path::new("/proc/self/status")).unwrap();
    if here != "0-1" && !here.starts_with("0-") {
        eprintln!("skipped: this test needs CPUs 0 and 1 (allowed: {here})");
        return;
    }
    let (_keep, dir) = out_dir("pinned");
    let mut child = Study::short()
        .duration("3s")
        .repeat(2)
        .out(&dir)
        .args(&CELL)
        .args(&["--cpus", "server=0,clients=1"])
        .command()
        .spawn()
        .unwrap();
    wait_for_first_run(&dir);
    let r = read_json(&dir);
    let managed = managed_dir(&r);
    // The second run: its server processes (the postmaster, which names
    // the managed directory, and its children) and client threads.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (mut server, mut clients) = (Vec::new(), Vec::new());
    while std::time::Instant::now() < deadline && (server.len() < 2 || clients.is_empty()) {
        let mut pids = processes_mentioning(managed.to_str().unwrap());
        pids.extend(children_of(&pids));
        let seen: Vec<String> = pids
            .iter()
            .filter_map(|pid| allowed(&Path::new("/proc").join(pid.to_string()).join("status")))
            .collect();
        if seen.len() > server.len() {
            server = seen;
        }
        if clients.is_empty() {
            clients = std::fs::read_dir(format!("/proc/{}/task", child.id()))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|t| allowed(&t.path().join("status")))
                .filter(|a| a == "1")
                .collect();
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(server.len() >= 2, "no server processes seen: {server:?}");
    assert!(server.iter().all(|a| a == "0"), "server CPUs: {server:?}");
    assert!(!clients.is_empty(), "no client thread pinned to CPU 1");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(
        r["config"]["cpus"],
        serde_json::json!({"server": [0], "clients": [1]})
    );
}

/// `isobench calibrate`: one A/A pair of 3 runs a side (6 runs of the
/// cell, A and B interleaved), results as a study with a noise section
/// (per metric the CVs between and within runs, the MDE, the runs the
/// target needs, the verdict's false positives over 1 pair), a Noise
/// section in report.md and on the terminal; `compare --noise` reads it,
/// and refuses a directory that is not a calibration.
#[test]
fn calibrate_measures_a_a_noise_that_compare_reads() {
    let (_keep, dir) = out_dir("calibration");
    let d = dir.to_str().unwrap();
    let mut args = vec![
        "calibrate",
        "--repeat",
        "1",
        "--per-side",
        "3",
        "--target-mde",
        "10%",
        "--duration",
        "2s",
        "--warmup",
        "0s",
        "--out",
        d,
    ];
    args.extend(CELL);
    let (o, stdout, stderr) = run(&args);
    assert!(o.status.success(), "{stderr}");
    let r = read_json(&dir);
    assert_schema_valid(&r);
    assert_eq!(r["runs"].as_array().unwrap().len(), 6);
    assert_eq!(
        r["config"]["calibrate"],
        serde_json::json!({"pairs": 1, "per_side": 3, "target_mde_pct": 10.0})
    );
    let n = &r["noise"];
    assert_eq!(
        (n["pairs"].as_u64(), n["per_side"].as_u64()),
        (Some(1), Some(3))
    );
    let cell = &n["cells"][0];
    assert_eq!(cell["runs"], 6);
    let tps = &cell["tps"];
    // The CV between the 6 runs' TPS, recomputed from results.json.
    let v: Vec<f64> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["tps"].as_f64().unwrap())
        .collect();
    let mean = v.iter().sum::<f64>() / 6.0;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 5.0).sqrt();
    let cv = tps["cv_between_pct"].as_f64().unwrap();
    assert!(
        (cv - 100.0 * sd / mean).abs() < 1e-6,
        "{cv} vs {}",
        100.0 * sd / mean
    );
    // Two seconds a run: a per-second series to vary within.
    assert!(tps["cv_within_pct"].as_f64().is_some(), "{tps}");
    assert!(tps["mde_pct"].as_f64().unwrap() > 0.0);
    assert_eq!(tps["false_positives"]["n"], 1, "{tps}");
    assert!(cell["latency_p99_ms"]["false_positives"]["n"] == 1);
    assert!(cell["latency_p50_ms"]["false_positives"].is_null());
    assert!(
        stdout.contains("Noise (A/A calibration of isolation=rc"),
        "{stdout}"
    );
    assert!(stdout.contains("noise section in results.json"), "{stdout}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("## Noise (A/A calibration of isolation=rc"),
        "{md}"
    );
    assert!(md.contains("| runs a side for ±10 % |"), "{md}");

    // compare --noise: the calibration's noise at the comparison's runs,
    // and the gate, which can pass a calibration against itself only
    // when its noise allows a 5 % change to be seen.
    let (o, stdout, stderr) = run(&["compare", d, d, "--noise", d, "--fail-on-regression", "5%"]);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!(
            "## Calibrated noise ({d}: 1 A/A pairs of 3 runs a side)"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("## Regression gate (threshold 5.0 %)"),
        "{stdout}"
    );
    assert!(!stderr.contains("regression:"), "{stderr}");
    // A study that is not a calibration.
    let plain = Study::short().args(&CELL).run();
    assert!(plain.out.status.success());
    let p = plain.dir.to_str().unwrap();
    let (o, _, stderr) = run(&["compare", p, p, "--noise", p]);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a calibration"), "{stderr}");
}

/// The gate of `compare --fail-on-regression 5%`: A a real study's runs
/// with their TPS set to 1000, 1010 and 990 tx/s (so that the verdict
/// does not depend on how busy this machine is), B the same runs at half
/// that: B fails with exit 3 and names the cell; A against itself never
/// does; `--format bmf` and `gab` print B's cells as those services read
/// them.
#[test]
fn the_regression_gate_fails_ci_on_a_regression_only() {
    let ran = Study::short().repeat(3).args(&CELL).run();
    assert!(ran.out.status.success(), "{}", ran.stderr);
    let (_keep, base) = out_dir("gate");
    // results.json only (no SQLite store): what compare reads.
    let write = |name: &str, factor: f64| {
        let dir = base.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = ran.json();
        for (run, tps) in r["runs"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip([1000.0, 1010.0, 990.0])
        {
            let kept = run["effective_tps"]
                .as_f64()
                .map(|e| e / run["tps"].as_f64().unwrap());
            run["tps"] = (tps * factor).into();
            if let Some(k) = kept {
                run["effective_tps"] = (k * tps * factor).into();
            }
        }
        std::fs::write(dir.join("results.json"), serde_json::to_string(&r).unwrap()).unwrap();
        (dir, r)
    };
    let (a, _) = write("a", 1.0);
    let (b, r) = write("b", 0.5);
    let (ad, bd) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (o, stdout, stderr) = run(&["compare", ad, bd, "--fail-on-regression", "5%"]);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("isobench: regression: isolation=rc strategy=optimistic clients=2 tps: significantly worse by 50.0%"),
        "{stderr}"
    );
    assert!(stdout.contains("| REGRESSION "), "{stdout}");
    let (o, _, stderr) = run(&["compare", ad, ad, "--fail-on-regression", "5%"]);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("regression:"), "{stderr}");
    // Without the flag, no gate: exit 0 even on the regression.
    let (o, stdout, _) = run(&["compare", ad, bd]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!stdout.contains("Regression gate"));

    let (o, stdout, _) = run(&["compare", ad, bd, "--format", "bmf"]);
    assert!(o.status.success());
    let bmf: Value = serde_json::from_str(&stdout).unwrap();
    let t = &bmf["isolation=rc strategy=optimistic clients=2"]["throughput"];
    let mean: f64 = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["complete"] == true)
        .map(|x| x["tps"].as_f64().unwrap())
        .sum::<f64>()
        / 3.0;
    assert!((t["value"].as_f64().unwrap() - mean).abs() < 1e-6, "{bmf}");
    assert!(t["lower_value"].as_f64().unwrap() < mean);
    let (o, stdout, _) = run(&["compare", ad, bd, "--format", "gab"]);
    assert!(o.status.success());
    let gab: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(gab[0]["name"], "isolation=rc strategy=optimistic clients=2");
    assert_eq!(gab[0]["unit"], "tx/s");
}
