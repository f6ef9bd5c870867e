//! The product against pgbench: the `isobench` binary (the `measure`
//! profile's: fat LTO, Cargo.toml), run as a
//! user runs it (`isobench run --dsn ...`, default observation, default
//! threads unless a part says otherwise, figures read from its
//! results.json), against pgbench on the same server. This is the bench
//! that settles whether isobench keeps up with pgbench; `vs_pgbench`,
//! `pacing` and `load` drive the engine or the loader directly and are
//! diagnostics.
//!
//! One PostgreSQL server with plain settings (`shared_buffers=512MB`,
//! `max_connections=200`, every other setting initdb's default; `BENCH_SET`
//! adds or overrides), pgbench's data loaded by `pgbench -i` for pgbench's
//! runs; `isobench run` loads its own (equal to pgbench's, see
//! tests/it/determinism.rs) and copies it per run, as users see it. Before
//! each pgbench run its database is a fresh copy of the template, VACUUM
//! ANALYZEd and CHECKPOINTed, as isobench's per-run copy is. Rounds
//! alternate the order (ABBA: pgbench first in odd rounds). Every round is
//! printed, then the median ratio.
//!
//! Parts (`BENCH_PARTS`, default `tps,cpu,rate,load`), each runnable alone:
//! - `tps`: committed tps, isobench / pgbench, for each isolation
//!   (`BENCH_ISOLATIONS`, rc,ser), script (`BENCH_SCRIPTS`,
//!   tpcb-like,select-only) and thread setting (`BENCH_THREADS`,
//!   `1,default`: `1` is `-j 1` for both, `default` is pgbench `-j` = CPU
//!   count against isobench's default threads); pgbench `-M prepared
//!   --max-tries 10` (isobench's default tries), failure shares printed.
//!   Targets: SERIALIZABLE tpcb-like -j 1 ratio 0.95-1.05 with failure
//!   shares within 2 points; READ COMMITTED tpcb-like default threads
//!   >= 1.0.
//! - `cpu`: client CPU per committed transaction, measured from outside
//!   (utime + stime of the child process, `RUSAGE_CHILDREN` deltas around
//!   its wait): pgbench's over its run; isobench's as the difference of a
//!   run of `BENCH_SECONDS` and one of `BENCH_SHORT_SECONDS` (1), divided
//!   by the difference of their lifetime commits, so start-up, loading and
//!   the copy cancel. READ COMMITTED, `-j 1` both (`BENCH_CPU_THREADS`),
//!   scripts as `BENCH_SCRIPTS`. Target: isobench / pgbench <= 1.0.
//! - `rate`: open loop, `pgbench -R` against `isobench run -R`, select-only,
//!   `BENCH_RATE_CLIENTS` (4) clients, rates `BENCH_RATES` (2000,10000);
//!   mean latency (from the scheduled start) ratio and the target
//!   `isobench <= 1.3 x pgbench + 0.05 ms`.
//! - `load`: `pgbench -i -q -s BENCH_LOAD_SCALE` (50) wall time into a new
//!   empty database against `isobench run -w tpcb -s 50 -T 1s --repeat 1
//!   --isolation rc`'s `load[].load_ms` (and the first run's copy,
//!   `reset_ms`); CHECKPOINT before each. Target: >= 1.5x.
//!
//! Every part ends with the median ratio and its 95 % distribution-free
//! interval (`stats::median_interval`; at least 6 rounds). SERIALIZABLE
//! throughput at 16 clients on 2 cores varies by ±15 % from run to run
//! for both tools: 6 rounds give an interval of about ±10 %, too wide
//! for its 0.95-1.05 band; use `BENCH_ROUNDS=12` or more there.
//!
//! Run: `cargo bench --profile measure --bench product` (brings the
//! `measure` profile's binary up to date first; `BENCH_PROFILE=release`
//! measures the binary users build instead). Environment besides the above: `BENCH_ROUNDS` (6),
//! `BENCH_SECONDS` (10), `BENCH_SCALE` (10, the tps/cpu/rate data),
//! `BENCH_CLIENTS` (16), `BENCH_ISOBENCH` (`script`: pgbench's built-in
//! script through isobench's interpreter, `-b NAME`; `workload`: the
//! built-in `-w tpcb --param variant=NAME`), `BENCH_SET`, `PGBENCH`,
//! `ISOBENCH_BIN`. Not a test: record results in BENCHMARKS.md, and say
//! how busy the machine was.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{Harness, children_cpu_s, env_list, env_or, isobench_bin, summary};
use isobench::model::Isolation;

/// What the bench needs for every part.
struct Bench {
    h: Harness,
    bin: PathBuf,
    dsn: String,
    out: tempfile::TempDir,
    runs: u32,
    rounds: u32,
    seconds: u32,
    scale: u32,
    clients: u32,
    /// `-b NAME` (true) or `-w tpcb --param variant=NAME`.
    as_script: bool,
    cpus: usize,
}

/// What one `isobench run` reported (its only run) and cost.
#[derive(Debug, Clone, Default)]
struct IsobenchRun {
    tps: f64,
    failure_pct: f64,
    /// Commits over the clients' whole life (warm-up and drain included).
    lifetime_committed: u64,
    latency_ms: f64,
    lag_ms: f64,
    /// The in-process figure results.json reports.
    cpu_us_per_tx: f64,
    /// The process's CPU (user + sys), measured from outside, s.
    cpu_s: f64,
    load_ms: f64,
    reset_ms: f64,
    wall_s: f64,
}

fn level_arg(i: Isolation) -> String {
    i.sql().to_lowercase().replace(' ', "-")
}

impl Bench {
    /// `isobench run` with `args` after the common ones; panics when it
    /// fails.
    fn isobench(&mut self, args: &[String]) -> IsobenchRun {
        self.runs += 1;
        let out = self.out.path().join(format!("run{}", self.runs));
        let mut cmd = Command::new(&self.bin);
        cmd.args(["run", "-q", "--repeat", "1", "--dsn", &self.dsn])
            .args(args)
            .arg("-o")
            .arg(&out);
        let cpu0 = children_cpu_s();
        let t = Instant::now();
        let o = cmd.output().expect("run isobench");
        let wall_s = t.elapsed().as_secs_f64();
        let cpu_s = children_cpu_s() - cpu0;
        assert!(
            o.status.success(),
            "isobench run {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r = read_results(&out);
        IsobenchRun { cpu_s, wall_s, ..r }
    }

    /// The arguments that select pgbench's built-in `script` in isobench.
    fn script_args(&self, script: &str) -> Vec<String> {
        if self.as_script {
            vec!["-b".into(), script.into()]
        } else {
            vec![
                "-w".into(),
                "tpcb".into(),
                "--param".into(),
                format!("variant={script}"),
            ]
        }
    }

    /// `db` made a fresh copy of `tmpl`, then VACUUM ANALYZE and
    /// CHECKPOINT: what isobench does before each run.
    fn fresh_vacuumed(&self, db: &str) {
        self.h.fresh_copy("tmpl", db);
        let config = self.h.config(db);
        self.h.rt.block_on(async {
            let c = isobench::postgres::connect(&config).await.expect("connect");
            c.batch_execute("VACUUM ANALYZE").await.expect("VACUUM");
            c.batch_execute("CHECKPOINT").await.expect("CHECKPOINT");
        });
    }
}

/// The figures of the only run in results directory `dir`.
fn read_results(dir: &Path) -> IsobenchRun {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
    let run = &v["runs"][0];
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN);
    IsobenchRun {
        tps: f(&run["tps"]),
        failure_pct: f(&run["failure_pct"]),
        lifetime_committed: run["lifetime"]["committed"].as_u64().unwrap_or(0),
        latency_ms: f(&run["latency_ms"]["mean"]),
        lag_ms: f(&run["schedule_lag_ms"]["mean"]),
        cpu_us_per_tx: f(&run["client_cpu_us_per_tx"]),
        load_ms: v["load"]
            .as_array()
            .map_or(f64::NAN, |l| l.iter().map(|x| f(&x["load_ms"])).sum()),
        reset_ms: f(&run["reset_ms"]),
        ..IsobenchRun::default()
    }
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

/// Committed tps, isobench / pgbench.
fn tps(b: &mut Bench) {
    let isolations: Vec<Isolation> = env_list("BENCH_ISOLATIONS", "rc,ser");
    let scripts: Vec<String> = env_list("BENCH_SCRIPTS", "tpcb-like,select-only");
    let threads: Vec<String> = env_list("BENCH_THREADS", "1,default");
    for &iso in &isolations {
        for script in &scripts {
            for th in &threads {
                let (pg_j, ib_j) = match th.as_str() {
                    "default" => (b.cpus.to_string(), None),
                    n => (n.to_string(), Some(n.to_string())),
                };
                println!(
                    "\ntps | {script}, {} | {} clients | pgbench -j {pg_j}, isobench {} | {} s | scale {}",
                    iso.sql(),
                    b.clients,
                    ib_j.as_ref()
                        .map_or("default threads".to_string(), |j| format!("-j {j}")),
                    b.seconds,
                    b.scale
                );
                println!(
                    "{:>5} {:>9} {:>9} {:>7} {:>7} {:>7} {:>7} {:>7}",
                    "round", "pg tps", "ib tps", "ratio", "pg fail%", "ib fail%", "pg µs", "ib µs"
                );
                let mut ratios = Vec::new();
                let mut fails = (Vec::new(), Vec::new());
                for round in 1..=b.rounds {
                    let mut args = b.script_args(script);
                    args.extend(
                        [
                            "-c",
                            &b.clients.to_string(),
                            "-s",
                            &b.scale.to_string(),
                            "--isolation",
                            &level_arg(iso),
                            "-T",
                            &format!("{}s", b.seconds),
                        ]
                        .map(String::from),
                    );
                    if let Some(j) = &ib_j {
                        args.extend(["-j".to_string(), j.clone()]);
                    }
                    let (c, t) = (b.clients.to_string(), b.seconds.to_string());
                    let pg_args = [
                        "-b",
                        script,
                        "-M",
                        "prepared",
                        "-c",
                        &c,
                        "-j",
                        &pg_j,
                        "-T",
                        &t,
                        "--max-tries",
                        "10",
                    ];
                    let pgbench_run = |b: &mut Bench| {
                        b.fresh_vacuumed("bench_pg");
                        let r = b.h.pgbench("bench_pg", Some(iso), &pg_args);
                        b.h.exec("DROP DATABASE IF EXISTS bench_pg WITH (FORCE)");
                        r
                    };
                    let (pg, ib) = if round % 2 == 1 {
                        let pg = pgbench_run(b);
                        (pg, b.isobench(&args))
                    } else {
                        let ib = b.isobench(&args);
                        (pgbench_run(b), ib)
                    };
                    let ratio = ib.tps / pg.tps;
                    ratios.push(ratio);
                    fails.0.push(pg.failed_pct());
                    fails.1.push(ib.failure_pct);
                    println!(
                        "{round:>5} {:>9.0} {:>9.0} {ratio:>7.3} {:>7.2} {:>7.2} {:>7.1} {:>7.1}",
                        pg.tps,
                        ib.tps,
                        pg.failed_pct(),
                        ib.failure_pct,
                        pg.cpu_s * 1e6 / pg.committed.max(1) as f64,
                        ib.cpu_us_per_tx,
                    );
                }
                print_summary(
                    &format!("{script} {} committed tps isobench/pgbench", iso.sql()),
                    &ratios,
                );
                if iso != Isolation::ReadCommitted {
                    println!(
                        "failed transactions, % (median): pgbench {:.2}, isobench {:.2}",
                        summary(&fails.0).1,
                        summary(&fails.1).1
                    );
                }
            }
        }
    }
}

/// Client CPU per committed transaction, measured from outside.
fn cpu(b: &mut Bench) {
    let scripts: Vec<String> = env_list("BENCH_SCRIPTS", "tpcb-like,select-only");
    let threads: u32 = env_or("BENCH_CPU_THREADS", 1);
    let short: u32 = env_or("BENCH_SHORT_SECONDS", 1);
    assert!(
        short < b.seconds,
        "BENCH_SHORT_SECONDS must be below BENCH_SECONDS"
    );
    for script in &scripts {
        println!(
            "\ncpu | {script}, READ COMMITTED | {} clients | -j {threads} both | isobench: {} s run - {short} s run | scale {}",
            b.clients, b.seconds, b.scale
        );
        println!(
            "{:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "round", "pg tps", "ib tps", "pg µs/tx", "ib µs/tx", "ib own µs", "ratio"
        );
        let mut ratios = Vec::new();
        for round in 1..=b.rounds {
            let ib_args = |secs: u32| {
                let mut a = b.script_args(script);
                a.extend(
                    [
                        "-c",
                        &b.clients.to_string(),
                        "-s",
                        &b.scale.to_string(),
                        "--isolation",
                        "rc",
                        "-j",
                        &threads.to_string(),
                        "-T",
                        &format!("{secs}s"),
                    ]
                    .map(String::from),
                );
                a
            };
            let (long, short_args) = (ib_args(b.seconds), ib_args(short));
            let (c, t, j) = (
                b.clients.to_string(),
                b.seconds.to_string(),
                threads.to_string(),
            );
            let pg_args = ["-b", script, "-M", "prepared", "-c", &c, "-j", &j, "-T", &t];
            let pgbench_run = |b: &mut Bench| {
                b.fresh_vacuumed("bench_pg");
                let r =
                    b.h.pgbench("bench_pg", Some(Isolation::ReadCommitted), &pg_args);
                b.h.exec("DROP DATABASE IF EXISTS bench_pg WITH (FORCE)");
                r
            };
            // ABBA over the pair: the short run sits next to its long one.
            let isobench_pair = |b: &mut Bench| {
                let l = b.isobench(&long);
                let s = b.isobench(&short_args);
                (l, s)
            };
            let (pg, (l, s)) = if round % 2 == 1 {
                let pg = pgbench_run(b);
                (pg, isobench_pair(b))
            } else {
                let p = isobench_pair(b);
                (pgbench_run(b), p)
            };
            let pg_us = pg.cpu_s * 1e6 / pg.committed.max(1) as f64;
            // The difference is only meaningful when the long run did
            // more work than the short one; on a disturbed machine a
            // short run can commit more than a long one.
            let (d_cpu, d_tx) = (
                l.cpu_s - s.cpu_s,
                l.lifetime_committed as f64 - s.lifetime_committed as f64,
            );
            if d_cpu <= 0.0 || d_tx <= 0.0 {
                println!(
                    "{round:>5} {:>9.0} {:>9.0} {pg_us:>9.1} {:>9} {:>9.1} {:>7}  (long - short: {d_cpu:.3} s CPU, {d_tx:.0} commits: round left out)",
                    pg.tps, l.tps, "n/a", l.cpu_us_per_tx, "n/a"
                );
                continue;
            }
            let ib_us = d_cpu * 1e6 / d_tx;
            ratios.push(ib_us / pg_us);
            println!(
                "{round:>5} {:>9.0} {:>9.0} {pg_us:>9.1} {ib_us:>9.1} {:>9.1} {:>7.3}",
                pg.tps,
                l.tps,
                l.cpu_us_per_tx,
                ib_us / pg_us
            );
        }
        print_summary(
            &format!("{script} client CPU per committed transaction isobench/pgbench"),
            &ratios,
        );
    }
}

/// Open-loop latency against `pgbench -R`.
fn rate(b: &mut Bench) {
    let rates: Vec<u32> = env_list("BENCH_RATES", "2000,10000");
    let clients: u32 = env_or("BENCH_RATE_CLIENTS", 4);
    let script = "select-only";
    for &r in &rates {
        println!(
            "\nrate | {script}, READ COMMITTED | {r} tx/s | {clients} clients | pgbench -j 1, isobench default threads | {} s",
            b.seconds
        );
        println!(
            "{:>5} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
            "round", "pg tps", "ib tps", "pg lat", "ib lat", "pg lag", "ib lag", "target", "ratio"
        );
        let mut ratios = Vec::new();
        let mut within = 0;
        for round in 1..=b.rounds {
            let mut args = b.script_args(script);
            args.extend(
                [
                    "-c",
                    &clients.to_string(),
                    "-s",
                    &b.scale.to_string(),
                    "--isolation",
                    "rc",
                    "-R",
                    &r.to_string(),
                    "-T",
                    &format!("{}s", b.seconds),
                ]
                .map(String::from),
            );
            let (c, t, rs) = (clients.to_string(), b.seconds.to_string(), r.to_string());
            let pg_args = [
                "-b", script, "-M", "prepared", "-n", "-c", &c, "-j", "1", "-R", &rs, "-T", &t,
            ];
            let pgbench_run = |b: &mut Bench| {
                b.fresh_vacuumed("bench_pg");
                let x =
                    b.h.pgbench("bench_pg", Some(Isolation::ReadCommitted), &pg_args);
                b.h.exec("DROP DATABASE IF EXISTS bench_pg WITH (FORCE)");
                x
            };
            let (pg, ib) = if round % 2 == 1 {
                let pg = pgbench_run(b);
                (pg, b.isobench(&args))
            } else {
                let ib = b.isobench(&args);
                (pgbench_run(b), ib)
            };
            let target = 1.3 * pg.latency_ms + 0.05;
            within += u32::from(ib.latency_ms <= target);
            ratios.push(ib.latency_ms / pg.latency_ms);
            println!(
                "{round:>5} {:>9.0} {:>9.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {target:>8.3} {:>7.3}",
                pg.tps,
                ib.tps,
                pg.latency_ms,
                ib.latency_ms,
                pg.lag_ms,
                ib.lag_ms,
                ib.latency_ms / pg.latency_ms
            );
        }
        print_summary(&format!("{r} tx/s mean latency isobench/pgbench"), &ratios);
        println!(
            "{r} tx/s: isobench mean latency within 1.3 x pgbench + 0.05 ms in {within} of {} rounds",
            b.rounds
        );
    }
}

/// Load time: `pgbench -i` against what `isobench run` reports.
fn load(b: &mut Bench) {
    let scale: u32 = env_or("BENCH_LOAD_SCALE", 50);
    println!(
        "\nload | scale {scale} | pgbench -i -q into a new database vs isobench run -w tpcb -T 1s load_ms | CHECKPOINT before each"
    );
    println!(
        "{:>5} {:>9} {:>9} {:>9} {:>9} {:>8}  pgbench's own breakdown",
        "round", "pg s", "ib load s", "ib copy s", "ib wall s", "speed-up"
    );
    let mut ratios = Vec::new();
    for round in 1..=b.rounds {
        let args: Vec<String> = [
            "-w",
            "tpcb",
            "-s",
            &scale.to_string(),
            "--isolation",
            "rc",
            "-T",
            "1s",
            "--warmup",
            "0s",
            "-c",
            "1",
        ]
        .map(String::from)
        .to_vec();
        let pgbench_run = |b: &mut Bench| {
            b.h.exec("DROP DATABASE IF EXISTS load_pg");
            b.h.exec("CREATE DATABASE load_pg");
            b.h.exec("CHECKPOINT");
            let t = Instant::now();
            let r =
                b.h.pgbench("load_pg", None, &["-i", "-q", "-s", &scale.to_string()]);
            let took = t.elapsed().as_secs_f64();
            b.h.exec("DROP DATABASE IF EXISTS load_pg");
            let detail = r
                .stderr
                .lines()
                .chain(r.stdout.lines())
                .find(|l| l.starts_with("done in"))
                .unwrap_or("")
                .to_string();
            (took, detail)
        };
        let isobench_run = |b: &mut Bench| {
            b.h.exec("CHECKPOINT");
            b.isobench(&args)
        };
        let ((pg, detail), ib) = if round % 2 == 1 {
            let p = pgbench_run(b);
            (p, isobench_run(b))
        } else {
            let i = isobench_run(b);
            (pgbench_run(b), i)
        };
        let ib_s = ib.load_ms / 1000.0;
        ratios.push(pg / ib_s);
        println!(
            "{round:>5} {pg:>9.2} {ib_s:>9.2} {:>9.2} {:>9.2} {:>8.2}  {detail}",
            ib.reset_ms / 1000.0,
            ib.wall_s,
            pg / ib_s
        );
    }
    print_summary(
        &format!("scale {scale} load speed-up pgbench -i / isobench load_ms"),
        &ratios,
    );
}

fn main() {
    let parts: Vec<String> = env_list("BENCH_PARTS", "tps,cpu,rate,load");
    let settings = vec![
        ("shared_buffers".to_string(), "512MB".to_string()),
        ("max_connections".to_string(), "200".to_string()),
    ];
    let bin = isobench_bin();
    let h = Harness::start_with(settings);
    let dsn = h.dsn();
    let mut b = Bench {
        h,
        bin,
        dsn,
        out: tempfile::tempdir().expect("temp dir"),
        runs: 0,
        rounds: env_or("BENCH_ROUNDS", 6),
        seconds: env_or("BENCH_SECONDS", 10),
        scale: env_or("BENCH_SCALE", 10),
        clients: env_or("BENCH_CLIENTS", 16),
        as_script: env_or("BENCH_ISOBENCH", "script".to_string()) != "workload",
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let settings: Vec<String> =
        b.h.rt
            .block_on(async {
                let c = isobench::postgres::connect(&b.h.config("postgres"))
                    .await
                    .expect("connect");
                c.query(
                    "SELECT name || '=' || current_setting(name) FROM pg_settings
                  WHERE name IN ('shared_buffers', 'max_connections', 'max_wal_size',
                                 'maintenance_work_mem', 'synchronous_commit', 'fsync')
                  ORDER BY name",
                    &[],
                )
                .await
                .expect("settings")
            })
            .iter()
            .map(|r| r.get(0))
            .collect();
    println!(
        "product | isobench {} | {} rounds (ABBA) | {} CPUs | server: {}",
        b.bin.display(),
        b.rounds,
        b.cpus,
        settings.join(" ")
    );
    let needs_data = parts.iter().any(|p| p != "load");
    if needs_data {
        b.h.pgbench_init("tmpl", b.scale);
    }
    for part in &parts {
        match part.as_str() {
            "tps" => tps(&mut b),
            "cpu" => cpu(&mut b),
            "rate" => rate(&mut b),
            "load" => load(&mut b),
            other => panic!("BENCH_PARTS: unknown part {other} (tps, cpu, rate, load)"),
        }
    }
}
