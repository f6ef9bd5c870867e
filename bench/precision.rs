//! How sure a study is (issue #41), measured with the `isobench`
//! binary of the `measure` profile run as users run it, each study on its own managed server. Not a
//! test: the figures go into BENCHMARKS.md, with how busy the machine
//! was.
//!
//! Parts (`BENCH_PARTS`, default `fp,mde,precision,cpus`), each runnable
//! alone:
//! - `fp`: `isobench calibrate --repeat BENCH_PAIRS (20) --per-side 3` of
//!   `-w tpcb --isolation BENCH_ISOLATIONS (rc,ser) --clients
//!   BENCH_CLIENTS (16)`: per cell the false-positive rate of the default
//!   verdict over the A/A pairs, with its 95 % Clopper–Pearson interval,
//!   the CVs between and within runs and the MDE of a 3-run study. Goal:
//!   a rate of at most 5 %.
//! - `mde`: the default study (`isobench run -w tpcb --isolation
//!   BENCH_ISOLATIONS --clients BENCH_CLIENTS`, 3 repetitions) run
//!   `BENCH_ROUNDS` (6) times: the MDE each prints for its non-baseline
//!   cell (cells.json `tps_mde_pct`) against the MDE the calibration's
//!   CVs give for the same comparison (`stats::power::mde_pct` at 3 runs
//!   a side). Goal: the median ratio within 1/1.5-1.5 (one 3-run study's
//!   own MDE scatters more: its standard deviations rest on 2 degrees of
//!   freedom each, and every round is printed). Needs `fp`'s calibration
//!   (run in the same invocation, or `BENCH_CALIBRATION=DIR`).
//! - `precision`: `isobench run -w tpcb --isolation rc --clients 16
//!   --precision BENCH_PRECISION (3%) --max-repeat 20`: whether the cell
//!   reached the target, with how many runs. Goal: within 20. (The
//!   coverage of the rule is the simulation test
//!   `stats::sequential::tests`.)
//! - `cpus`: the CV of TPS between runs of tpcb-like and select-only
//!   (`--param variant=...`), READ COMMITTED, 16 clients, `BENCH_RUNS`
//!   (10) runs per study, pinned (`--cpus server=0,clients=1`) against not
//!   pinned, in ABBA order over two rounds (2 studies of each per script).
//!   Whichever way it comes out, it goes into BENCHMARKS.md.
//!
//! Run: `cargo bench --bench precision`. Environment besides the above:
//! `BENCH_SECONDS` (10, each run's measured time), `BENCH_WARMUP` (2),
//! `BENCH_SCALE` (10), `ISOBENCH_BIN`. A quick check that it works:
//! `BENCH_PAIRS=1 BENCH_ROUNDS=1 BENCH_RUNS=2 BENCH_SECONDS=1
//! BENCH_WARMUP=0 BENCH_SCALE=1 BENCH_ISOLATIONS=rc,ser BENCH_PRECISION=50%`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{env_list, env_or, isobench_bin};
use isobench::stats::power;
use serde_json::Value;

struct Bench {
    bin: PathBuf,
    out: tempfile::TempDir,
    studies: u32,
    seconds: u32,
    warmup: u32,
    scale: u32,
    clients: u32,
    isolations: String,
}

impl Bench {
    /// `isobench COMMAND ARGS --out DIR` with the bench's run length and
    /// scale; the results directory.
    fn isobench(&mut self, command: &str, args: &[&str]) -> PathBuf {
        self.studies += 1;
        let dir = self.out.path().join(format!("s{}", self.studies));
        let (secs, warm, scale) = (
            format!("{}s", self.seconds),
            format!("{}s", self.warmup),
            self.scale.to_string(),
        );
        let mut cmd = Command::new(&self.bin);
        cmd.arg(command)
            .args(args)
            .args(["--duration", &secs, "--warmup", &warm, "--scale", &scale])
            .args(["--quiet", "--out", dir.to_str().unwrap()]);
        let out = cmd.output().expect("run isobench");
        assert!(
            out.status.success(),
            "isobench {command} {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
}

fn pct(v: &Value) -> String {
    v.as_f64().map_or("n/a".into(), |v| format!("{v:.1} %"))
}

/// The calibration: per cell its false positives, CVs and MDE.
fn fp(b: &mut Bench) -> PathBuf {
    let pairs: u32 = env_or("BENCH_PAIRS", 20);
    let clients = b.clients.to_string();
    let iso = b.isolations.clone();
    let dir = b.isobench(
        "calibrate",
        &[
            "-w",
            "tpcb",
            "--isolation",
            &iso,
            "--clients",
            &clients,
            "--repeat",
            &pairs.to_string(),
            "--per-side",
            "3",
        ],
    );
    let r = json(&dir.join("results.json"));
    println!("fp: {pairs} A/A pairs of 3 runs a side ({})", dir.display());
    for c in r["noise"]["cells"].as_array().unwrap() {
        let t = &c["tps"];
        let f = &t["false_positives"];
        println!(
            "  {}: TPS CV between runs {}, within {}, MDE at 3 a side {}; false positives {} of {} \
             ({:.1} %, 95 % CI {:.1}-{:.1} %); p99: {} of {}",
            c["cell"].as_str().unwrap(),
            pct(&t["cv_between_pct"]),
            pct(&t["cv_within_pct"]),
            pct(&t["mde_pct"]),
            f["x"],
            f["n"],
            100.0 * f["rate"].as_f64().unwrap_or(f64::NAN),
            100.0 * f["low"].as_f64().unwrap_or(f64::NAN),
            100.0 * f["high"].as_f64().unwrap_or(f64::NAN),
            c["latency_p99_ms"]["false_positives"]["x"],
            c["latency_p99_ms"]["false_positives"]["n"],
        );
    }
    dir
}

/// The default study's printed MDE against the calibration's.
fn mde(b: &mut Bench, calibration: &Path) {
    let cal = json(&calibration.join("results.json"));
    let cv = |label: &str| -> Option<f64> {
        cal["noise"]["cells"]
            .as_array()?
            .iter()
            .find(|c| c["cell"] == label)?["tps"]["cv_between_pct"]
            .as_f64()
            .map(|v| v / 100.0)
    };
    let rounds: u32 = env_or("BENCH_ROUNDS", 6);
    let clients = b.clients.to_string();
    let iso = b.isolations.clone();
    let mut ratios = Vec::new();
    for round in 1..=rounds {
        let dir = b.isobench(
            "run",
            &["-w", "tpcb", "--isolation", &iso, "--clients", &clients],
        );
        let cells = json(&dir.join("cells.json"));
        let all = cells["cells"].as_array().unwrap();
        for c in all.iter().filter(|c| c["is_baseline"] == false) {
            let (Some(printed), Some(base)) =
                (c["tps_mde_pct"].as_f64(), c["baseline_cell"].as_str())
            else {
                continue;
            };
            let label = c["label"].as_str().unwrap();
            let Some(expected) = cv(label)
                .zip(cv(base))
                .and_then(|(x, y)| power::mde_pct(x, 3, y, 3))
            else {
                println!("mde round {round}: {label} is not in the calibration");
                continue;
            };
            let ratio = printed / expected;
            println!(
                "mde round {round}: {label}: printed ±{printed:.1} %, calibrated ±{expected:.1} %, ratio {ratio:.2}"
            );
            ratios.push(ratio);
        }
    }
    let (_, median, low, high) = common::summary(&ratios);
    println!(
        "mde: median ratio printed / calibrated {median:.2} (range {low:.2}-{high:.2}, {} comparisons); goal 0.67-1.5",
        ratios.len()
    );
}

/// `--precision` on tpcb-like READ COMMITTED, 16 clients.
fn precision(b: &mut Bench) {
    let target = std::env::var("BENCH_PRECISION").unwrap_or_else(|_| "3%".into());
    let clients = b.clients.to_string();
    let dir = b.isobench(
        "run",
        &[
            "-w",
            "tpcb",
            "--isolation",
            "rc",
            "--clients",
            &clients,
            "--precision",
            &target,
            "--max-repeat",
            "20",
        ],
    );
    let cells = json(&dir.join("cells.json"));
    for c in cells["cells"].as_array().unwrap() {
        let p = &c["precision"];
        println!(
            "precision {target}: {}: reached {} with {} runs (half-width {})",
            c["label"].as_str().unwrap(),
            p["reached"],
            p["runs"],
            pct(&p["half_width_pct"])
        );
    }
}

/// The CV of TPS between runs, pinned and not, ABBA.
fn cpus(b: &mut Bench) {
    let runs: u32 = env_or("BENCH_RUNS", 10);
    let clients = b.clients.to_string();
    for variant in ["tpcb-like", "select-only"] {
        let mut cvs: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        // ABBA: pinned, not, not, pinned.
        for pinned in [true, false, false, true] {
            let param = format!("variant={variant}");
            let mut args = vec![
                "-w",
                "tpcb",
                "--param",
                &param,
                "--isolation",
                "rc",
                "--clients",
                &clients,
            ];
            let n = runs.to_string();
            args.extend(["--repeat", &n]);
            if pinned {
                args.extend(["--cpus", "server=0,clients=1"]);
            }
            let dir = b.isobench("run", &args);
            let cells = json(&dir.join("cells.json"));
            let tps = &cells["cells"][0]["tps"];
            let cv = 100.0 * tps["cv"].as_f64().unwrap_or(f64::NAN);
            println!(
                "cpus {variant} {}: TPS {:.0}, CV {cv:.1} % over {} runs",
                if pinned {
                    "pinned server=0,clients=1"
                } else {
                    "not pinned"
                },
                tps["mean"].as_f64().unwrap_or(f64::NAN),
                tps["n"]
            );
            cvs[usize::from(!pinned)].push(cv);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!(
            "cpus {variant}: mean CV pinned {:.1} %, not pinned {:.1} %",
            mean(&cvs[0]),
            mean(&cvs[1])
        );
    }
}

fn main() {
    let parts: Vec<String> = env_list("BENCH_PARTS", "fp,mde,precision,cpus");
    let mut b = Bench {
        bin: isobench_bin(),
        out: tempfile::tempdir().expect("tempdir"),
        studies: 0,
        seconds: env_or("BENCH_SECONDS", 10),
        warmup: env_or("BENCH_WARMUP", 2),
        scale: env_or("BENCH_SCALE", 10),
        clients: env_or("BENCH_CLIENTS", 16),
        isolations: std::env::var("BENCH_ISOLATIONS").unwrap_or_else(|_| "rc,ser".into()),
    };
    let mut calibration = std::env::var_os("BENCH_CALIBRATION").map(PathBuf::from);
    for part in &parts {
        match part.as_str() {
            "fp" => calibration = Some(fp(&mut b)),
            "mde" => mde(
                &mut b,
                calibration.as_deref().expect(
                    "mde needs a calibration: add fp to BENCH_PARTS, or BENCH_CALIBRATION=DIR",
                ),
            ),
            "precision" => precision(&mut b),
            "cpus" => cpus(&mut b),
            other => panic!("BENCH_PARTS: unknown part '{other}' (fp, mde, precision, cpus)"),
        }
    }
}
