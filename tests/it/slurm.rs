//! Issue #51: a sharded study run the way an HPC user runs it, as a
//! Slurm job array on a real Slurm cluster (munged, slurmctld and slurmd
//! on this machine, tests/slurm/cluster.sh), submitted by
//! tests/slurm/array.sh from the job template deploy/slurm/isobench-array.sbatch,
//! against one PostgreSQL server every task reaches. Needs Debian's
//! slurm-wlm and munge (.ci/run installs them).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;

use common::*;

/// The script and what it printed.
struct Array {
    ok: bool,
    output: String,
    wall: Duration,
}

/// Runs tests/slurm/array.sh with `args`, within `limit` (then SIGTERM,
/// on which the script takes the cluster down).
fn array_sh(args: &[&str], limit: Duration) -> Array {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let t = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("array.log");
    let mut child = Command::new(root.join("tests/slurm/array.sh"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("SLURM_CONF")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.path().join("array.err")).unwrap())
        .spawn()
        .expect("run tests/slurm/array.sh");
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > limit {
            // The script's trap cancels the array and stops the cluster.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(&log).unwrap_or_default()
        + &std::fs::read_to_string(dir.path().join("array.err")).unwrap_or_default();
    Array {
        ok: status.success(),
        output,
        wall: t.elapsed(),
    }
}

fn unix_s(rfc3339: &str) -> f64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .expect("RFC 3339")
        .timestamp_micros() as f64
        / 1e6
}

/// `sbatch --array=0-2` of `isobench run ... --shards 3`: three tasks,
/// each its shard from SLURM_ARRAY_TASK_ID (SLURM_PROCID is 0 in all
/// three); their windows open within a second of each other by the
/// server's clock; `isobench merge` makes one study whose commits and
/// attempts are the sum of the shards'; no Slurm daemon, job or
/// PostgreSQL process is left.
#[test]
fn a_slurm_job_array_runs_the_shards_and_merges_them_exactly() {
    for daemon in ["slurmctld", "slurmd", "munged", "sbatch"] {
        let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
            .iter()
            .any(|d| Path::new(d).join(daemon).exists());
        assert!(
            found,
            "{daemon} not installed: apt-get install --no-install-recommends slurm-wlm munge (.ci/run does)"
        );
    }
    let (_keep, dir) = out_dir("slurm");
    let server = Server::new(&dir).set("max_connections", "200").start();
    let dsn = socket_dsn(&server, "postgres");
    let results = dir.join("results");
    let study = Study::short()
        .warmup("1s")
        .args(&[
            "--scale",
            "1",
            "--clients",
            "6",
            "--isolation",
            "rc",
            "--seed",
            "7",
        ])
        .without_out();
    // `isobench run` is the job script's; the rest are its arguments.
    let run_args: Vec<&str> = study[1..].iter().map(String::as_str).collect();
    let mut args = vec![
        "--dsn",
        &dsn,
        "--out",
        results.to_str().unwrap(),
        "--shards",
        "3",
        "--isobench",
        env!("CARGO_BIN_EXE_isobench"),
        "--timeout",
        "240",
        "--",
    ];
    args.extend(run_args);
    let ran = array_sh(&args, Duration::from_secs(300));
    eprintln!("{}", ran.output);
    assert!(ran.ok, "tests/slurm/array.sh failed:\n{}", ran.output);
    eprintln!("up + array + merge + down: {:.1} s", ran.wall.as_secs_f64());
    for task in 0..3 {
        assert!(
            ran.output.contains(&format!("task {task}: COMPLETED 0:0")),
            "{}",
            ran.output
        );
    }
    let shards: Vec<serde_json::Value> = (0..3)
        .map(|i| read_json(&results.join(format!("shard-{i}"))))
        .collect();
    for (i, r) in shards.iter().enumerate() {
        assert_eq!(r["config"]["shard"]["index"], i, "shard-{i}");
        assert_eq!(r["config"]["shard"]["count"], 3);
        assert_eq!(r["complete"], true, "shard-{i}: {}", r["runs"][0]["errors"]);
    }
    let clients: Vec<u64> = shards
        .iter()
        .map(|r| r["runs"][0]["shard_clients"].as_u64().unwrap())
        .collect();
    assert_eq!(clients, [2, 2, 2]);
    let starts: Vec<f64> = shards
        .iter()
        .map(|r| unix_s(r["runs"][0]["window_start"].as_str().unwrap()))
        .collect();
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    eprintln!("window starts spread {:.1} ms (server clock)", spread * 1e3);
    assert!(spread < 1.0, "windows opened {spread} s apart: {starts:?}");
    let merged = read_json(&results.join("merged"));
    assert_schema_valid(&merged);
    assert!(merged["config"].get("shard").is_none_or(|s| s.is_null()));
    let run = &merged["runs"][0];
    for key in ["committed", "attempts"] {
        let sum: u64 = shards
            .iter()
            .map(|r| r["runs"][0][key].as_u64().unwrap())
            .sum();
        assert!(sum > 0, "{key}");
        assert_eq!(run[key].as_u64().unwrap(), sum, "merged {key}");
    }
    // Checked once, by shard 0, with every shard's commits.
    let invariants = run["invariants"].as_array().unwrap();
    assert!(!invariants.is_empty());
    assert!(invariants.iter().all(|i| i["ok"] == true), "{invariants:?}");
    // Nothing of the cluster runs (the script checks it too).
    let cluster = ran
        .output
        .lines()
        .find_map(|l| l.strip_prefix("slurm cluster in "))
        .expect("the cluster's directory")
        .trim()
        .to_string();
    assert!(processes_mentioning(&cluster).is_empty(), "{cluster}");
    assert!(!Path::new(&cluster).exists(), "{cluster} left");
    let data = server.socket_dir().to_path_buf();
    drop(server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_mentioning(data.to_str().unwrap()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "a postgres process outlived the test"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
