//! isobench against sysbench on sysbench's own test (issue #40): `isobench
//! run -w sysbench --param test=oltp_read_write` and `sysbench
//! --db-driver=pgsql oltp_read_write`, on the same server, the same rows,
//! the same number of clients (sysbench `--threads`, isobench `-c`),
//! READ COMMITTED.
//!
//! Figures, per round and as medians with their 95 % distribution-free
//! intervals (`stats::median_interval`, at least 6 rounds):
//! - committed tps, isobench / sysbench (goal >= 1.0): isobench's `tps`
//!   from results.json (its measured window, after `--warmup`); sysbench's
//!   "transactions ... per sec." (every event completed over its run);
//! - client CPU per committed transaction, isobench / sysbench (goal <=
//!   1.0), measured from outside for both: user + system time of the
//!   process from `/proc/PID/stat`, read when it has exited and before it
//!   is reaped (`waitid(WNOWAIT)`). Start-up (isobench's load, copy and
//!   report; sysbench's connections) cancels out as in bench/product.rs:
//!   each tool runs once for `BENCH_SECONDS` and once for
//!   `BENCH_SHORT_SECONDS`, and CPU per transaction is the difference of
//!   the two runs' CPU over the difference of their transactions
//!   (isobench's lifetime commits, warm-up included; sysbench's
//!   transactions).
//!
//! Same data: the template database is loaded by isobench's own loader
//! (the rows `isobench run` loads for the same options, deterministic),
//! and every sysbench run gets a fresh copy of it, VACUUM ANALYZEd and
//! CHECKPOINTed, as isobench's per-run copy is. Rounds alternate the
//! order (ABBA: sysbench first in odd rounds).
//!
//! Errors: sysbench cannot retry a transaction: on 40001, 40P01 or 23505
//! its pgsql driver rolls back, counts an "ignored error" and runs the
//! event again with new random ids (other errors stop it; "reconnects"
//! are counted for MySQL's lost connections only). Under READ COMMITTED
//! its delete/insert pairs collide on hot ids (23505) and its updates
//! deadlock (40P01) now and then, so isobench runs with `--retry-on
//! 40001,40P01,23505` (same inputs again) and the table shows both
//! tools' error counts.
//!
//! Run: `cargo bench --profile measure --bench vs_sysbench` (brings the
//! `measure` profile's binary up to date first; needs `sysbench` on the PATH, Debian package `sysbench`).
//! Environment: `BENCH_ROUNDS` (6), `BENCH_SECONDS` (10),
//! `BENCH_SHORT_SECONDS` (2), `BENCH_CLIENTS` (8), `BENCH_TABLES` (1),
//! `BENCH_TABLE_SIZE` (10000, sysbench's default), `BENCH_TEST`
//! (`oltp_read_write`), `BENCH_RAND_TYPE` (sysbench's default, special),
//! `BENCH_SET`, `SYSBENCH`, `ISOBENCH_BIN`. Not a
//! test: record results in BENCHMARKS.md, and say how busy the machine
//! was.

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::Instant;

use common::{Harness, env_or, isobench_bin, summary};
use isobench::postgres::SUPERUSER;
use isobench::workload::{self, Loader, Setup, Workload, sysbench::Sysbench};

/// One run of either tool, as measured.
#[derive(Debug, Clone, Default)]
struct Run {
    tps: f64,
    /// Transactions over the process's life (isobench: lifetime commits;
    /// sysbench: its transactions).
    transactions: u64,
    /// The process's user + system CPU, s (/proc/PID/stat).
    cpu_s: f64,
    /// Errors: sysbench's ignored errors; isobench's failed attempts
    /// (retries plus failed transactions).
    errors: u64,
    /// isobench: failed transactions, % (sysbench has none: it never
    /// gives up on an event).
    failure_pct: f64,
    wall_s: f64,
}

/// Runs `cmd` to its end with stdout and stderr in files; returns them
/// and its CPU time, read from /proc/PID/stat after it exited and before
/// it is reaped. Panics when it fails.
fn run_measured(mut cmd: Command, what: &str) -> (String, String, f64, f64) {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    let out = tempfile::tempfile().expect("temp file");
    let err = tempfile::tempfile().expect("temp file");
    let t = Instant::now();
    let mut child = cmd
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(err.try_clone().unwrap()))
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let pid = child.id();
    // Wait for the exit without reaping: /proc/PID/stat stays readable.
    waitid(
        Id::Pid(nix::unistd::Pid::from_raw(pid as i32)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
    )
    .expect("waitid");
    let wall = t.elapsed().as_secs_f64();
    let cpu = proc_cpu_s(pid);
    let status = child.wait().expect("reap");
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut s = String::new();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_string(&mut s).unwrap();
        s
    };
    let (stdout, stderr) = (read(out), read(err));
    assert!(
        status.success(),
        "{what} failed ({status}): {stderr}\n{stdout}"
    );
    (stdout, stderr, cpu, wall)
}

/// utime + stime of process `pid`, s (fields 14 and 15 of
/// /proc/PID/stat, in clock ticks; all its threads, not its children).
fn proc_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
    // The command name may hold spaces: fields follow the last ')'.
    let rest = &stat[stat.rfind(')').expect("comm") + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    ticks / hz
}

/// The first number after `label` on the line that starts with it
/// (sysbench's report, e.g. `transactions:  369  (184.07 per sec.)`),
/// and the one in parentheses.
fn sysbench_figure(text: &str, label: &str) -> (f64, f64) {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("sysbench printed no '{label}':\n{text}"));
    let rest = &line.trim_start()[label.len()..];
    let count = rest
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    let rate = rest
        .split('(')
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    (count, rate)
}

struct Bench {
    h: Harness,
    bin: std::path::PathBuf,
    sysbench: String,
    dsn: String,
    out: tempfile::TempDir,
    runs: u32,
    clients: u32,
    /// The workload's options, `--param` for isobench and `--name=value`
    /// for sysbench.
    options: Vec<(String, String)>,
    test: String,
}

impl Bench {
    fn isobench(&mut self, seconds: u32) -> Run {
        self.runs += 1;
        let out = self.out.path().join(format!("run{}", self.runs));
        let mut cmd = Command::new(&self.bin);
        cmd.args(["run", "-q", "--repeat", "1", "--dsn", &self.dsn])
            .args(["-w", "sysbench", "--param", &format!("test={}", self.test)]);
        for (k, v) in &self.options {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        cmd.args(["-c", &self.clients.to_string(), "--isolation", "rc"])
            .args(["--retry-on", "40001,40P01,23505"])
            .args(["-T", &format!("{seconds}s"), "-o"])
            .arg(&out);
        let (_, _, cpu_s, wall_s) = run_measured(cmd, "isobench run");
        let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        let r = &v["runs"][0];
        let f = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN);
        let failed: u64 = r["failed"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum());
        Run {
            tps: f(&r["tps"]),
            transactions: r["lifetime"]["committed"].as_u64().unwrap_or(0),
            cpu_s,
            errors: r["retries"].as_u64().unwrap_or(0) + failed,
            failure_pct: f(&r["failure_pct"]),
            wall_s,
        }
    }

    fn sysbench(&mut self, seconds: u32) -> Run {
        self.h.fresh_copy("tmpl", "bench_sb");
        let config = self.h.config("bench_sb");
        self.h.rt.block_on(async {
            let c = isobench::postgres::connect(&config).await.expect("connect");
            c.batch_execute("VACUUM ANALYZE").await.expect("VACUUM");
            c.batch_execute("CHECKPOINT").await.expect("CHECKPOINT");
        });
        let s = &self.h.server;
        let mut cmd = Command::new(&self.sysbench);
        cmd.env(
            "PGOPTIONS",
            "-c default_transaction_isolation=read\\ committed",
        )
        .arg("--db-driver=pgsql")
        .arg(format!("--pgsql-host={}", s.socket_dir().display()))
        .arg(format!("--pgsql-port={}", s.port()))
        .arg(format!("--pgsql-user={SUPERUSER}"))
        .arg(format!("--pgsql-password={}", s.password()))
        .arg("--pgsql-db=bench_sb")
        .arg(format!("--threads={}", self.clients))
        .arg(format!("--time={seconds}"))
        .arg(&self.test);
        for (k, v) in &self.options {
            cmd.arg(format!("--{k}={v}"));
        }
        cmd.arg("run");
        let (stdout, _, cpu_s, wall_s) = run_measured(cmd, "sysbench run");
        self.h.exec("DROP DATABASE IF EXISTS bench_sb WITH (FORCE)");
        let (transactions, tps) = sysbench_figure(&stdout, "transactions:");
        let (errors, _) = sysbench_figure(&stdout, "ignored errors:");
        let (reconnects, _) = sysbench_figure(&stdout, "reconnects:");
        assert_eq!(reconnects, 0.0, "sysbench reconnected:\n{stdout}");
        Run {
            tps,
            transactions: transactions as u64,
            cpu_s,
            errors: errors as u64,
            failure_pct: 0.0,
            wall_s,
        }
    }
}

/// CPU per transaction, µs, from a long and a short run; `None` when the
/// long run did no more work than the short one (a disturbed machine).
fn cpu_per_tx_us(long: &Run, short: &Run) -> Option<f64> {
    let (cpu, tx) = (
        long.cpu_s - short.cpu_s,
        long.transactions as f64 - short.transactions as f64,
    );
    (cpu > 0.0 && tx > 0.0).then(|| cpu * 1e6 / tx)
}

fn print_summary(what: &str, ratios: &[f64]) {
    let (geo, median, min, max) = summary(ratios);
    let interval = isobench::stats::median_interval(ratios, 0.95).map_or_else(
        || "95 % interval of the median: needs 6 rounds".to_string(),
        |(lo, hi)| format!("95 % interval of the median {lo:.3}-{hi:.3}"),
    );
    println!(
        "{what}: median {median:.3} ({interval}), geometric mean {geo:.3}, range {min:.3}-{max:.3} ({} rounds)",
        ratios.len()
    );
}

fn main() {
    let rounds: u32 = env_or("BENCH_ROUNDS", 6);
    let seconds: u32 = env_or("BENCH_SECONDS", 10);
    let short: u32 = env_or("BENCH_SHORT_SECONDS", 2);
    assert!(
        short < seconds,
        "BENCH_SHORT_SECONDS must be below BENCH_SECONDS"
    );
    let clients: u32 = env_or("BENCH_CLIENTS", 8);
    let test: String = env_or("BENCH_TEST", "oltp_read_write".to_string());
    let mut options = vec![
        (
            "tables".to_string(),
            env_or("BENCH_TABLES", 1u32).to_string(),
        ),
        (
            "table_size".to_string(),
            env_or("BENCH_TABLE_SIZE", 10_000u32).to_string(),
        ),
    ];
    // sysbench's --rand-type, isobench's `rand-type`: the default,
    // "special", sends 75 % of the ids to 1 % of the rows.
    if let Ok(r) = std::env::var("BENCH_RAND_TYPE") {
        options.push(("rand-type".to_string(), r));
    }
    let sysbench: String = env_or("SYSBENCH", "sysbench".to_string());
    let version = Command::new(&sysbench)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{sysbench}: {e} (apt-get install sysbench)"));
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let bin = isobench_bin();
    let h = Harness::start_with(vec![
        ("shared_buffers".to_string(), "512MB".to_string()),
        ("max_connections".to_string(), "200".to_string()),
    ]);
    let dsn = h.dsn();
    // The template: isobench's loader, the options isobench runs with.
    h.exec("CREATE DATABASE tmpl");
    let mut given: BTreeMap<String, String> = options.iter().cloned().collect();
    given.insert("test".into(), test.clone());
    let setup = Setup::new(workload::spec("sysbench").unwrap(), None, None, &given)
        .expect("sysbench options");
    let w = Sysbench::new(&setup).expect("sysbench options");
    let config = h.config("tmpl");
    let rows = h.rt.block_on(async {
        let loader = Loader::new(
            isobench::postgres::connect(&config).await.expect("connect"),
            config.clone(),
        );
        w.load(&loader).await.expect("load")
    });
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "vs_sysbench | {test} {} | {rows} rows | {clients} clients (sysbench --threads, isobench -c) | READ COMMITTED | {seconds} s and {short} s runs | {rounds} rounds (ABBA) | {cpus} CPUs | {version} | isobench {}",
        options
            .iter()
            .map(|(k, v)| format!("--{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        bin.display()
    );
    let mut b = Bench {
        h,
        bin,
        sysbench,
        dsn,
        out: tempfile::tempdir().expect("temp dir"),
        runs: 0,
        clients,
        options,
        test,
    };
    println!(
        "{:>5} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7} {:>8} {:>8} {:>7}",
        "round",
        "sb tps",
        "ib tps",
        "ratio",
        "sb µs/tx",
        "ib µs/tx",
        "ratio",
        "sb err",
        "ib err",
        "ib fail%"
    );
    let (mut tps_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let pair = |b: &mut Bench, sysbench_first: bool| -> ((Run, Run), (Run, Run)) {
            let sb = |b: &mut Bench| (b.sysbench(seconds), b.sysbench(short));
            let ib = |b: &mut Bench| (b.isobench(seconds), b.isobench(short));
            if sysbench_first {
                let s = sb(b);
                (s, ib(b))
            } else {
                let i = ib(b);
                (sb(b), i)
            }
        };
        let ((sb, sb_short), (ib, ib_short)) = pair(&mut b, round % 2 == 1);
        let tps_ratio = ib.tps / sb.tps;
        tps_ratios.push(tps_ratio);
        let (sb_us, ib_us) = (cpu_per_tx_us(&sb, &sb_short), cpu_per_tx_us(&ib, &ib_short));
        let cpu = match (sb_us, ib_us) {
            (Some(s), Some(i)) => {
                cpu_ratios.push(i / s);
                format!("{s:>9.1} {i:>9.1} {:>7.3}", i / s)
            }
            _ => format!("{:>9} {:>9} {:>7}", "n/a", "n/a", "n/a"),
        };
        println!(
            "{round:>5} {:>9.0} {:>9.0} {tps_ratio:>7.3} {cpu} {:>8} {:>8} {:>7.2}   (wall: sysbench {:.1} s, isobench {:.1} s)",
            sb.tps, ib.tps, sb.errors, ib.errors, ib.failure_pct, sb.wall_s, ib.wall_s
        );
    }
    print_summary(
        &format!("{} committed tps isobench/sysbench", b.test),
        &tps_ratios,
    );
    print_summary(
        &format!(
            "{} client CPU per committed transaction isobench/sysbench",
            b.test
        ),
        &cpu_ratios,
    );
}
