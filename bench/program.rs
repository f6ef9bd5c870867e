//! The whole program against pgbench: `isobench run` (a subprocess, as a
//! user runs it, with its observers) against `pgbench -M prepared` on the
//! same managed server, pgbench's tpcb-like script on both sides, closed
//! loop, alternating. Each round runs pgbench once and `isobench run` once
//! per `--observe` level, in rotating order (pgbench's script `BENCH_SCRIPT`,
//! default tpcb-like, on both sides); prints committed-tps ratios
//! (isobench / pgbench; target >= 1.0 at READ COMMITTED) and the cost of
//! each observer level against `--observe none` (target < 1 %).
//!
//! Run: `cargo bench --profile measure --bench program` (builds the
//! `measure` profile's binary first).
//! Environment: `BENCH_SCALE` (10), `BENCH_CLIENTS` (16), `BENCH_SECONDS`
//! (8), `BENCH_ROUNDS` (4), `BENCH_ISOLATION` (rc), `BENCH_OBSERVE`
//! (none,light,full), `BENCH_THREADS` (both tools' -j; default: each
//! tool's own default), `BENCH_TCP`, `BENCH_SET`, `PGBENCH`. pgbench runs
//! on a fresh copy of `pgbench -i` data each time; isobench loads its own
//! (equal to pgbench's, see tests/it/determinism.rs) and copies it per run.
//! Not a test: record results in BENCHMARKS.md.

mod common;

use std::process::Command;

use common::{Harness, env_list, env_or, isobench_bin, summary, tcp};
use isobench::model::Isolation;
use isobench::postgres::SUPERUSER;

/// Committed tps and client CPU µs/tx of the only run in `dir`.
fn read_results(dir: &std::path::Path) -> (f64, f64) {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("results.json is JSON");
    let run = &v["runs"][0];
    (
        run["tps"].as_f64().expect("tps"),
        run["client_cpu_us_per_tx"].as_f64().unwrap_or(f64::NAN),
    )
}

fn main() {
    let scale: u32 = env_or("BENCH_SCALE", 10);
    let script: String = env_or("BENCH_SCRIPT", "tpcb-like".to_string());
    let clients: u32 = env_or("BENCH_CLIENTS", 16);
    let seconds: u32 = env_or("BENCH_SECONDS", 8);
    let rounds: u32 = env_or("BENCH_ROUNDS", 4);
    let isolation: Isolation = env_or("BENCH_ISOLATION", Isolation::ReadCommitted);
    let levels: Vec<String> = env_list("BENCH_OBSERVE", "none,light,full");
    let threads: Option<u32> = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok());
    let bin = isobench_bin();
    let h = Harness::start(clients);
    h.pgbench_init("tmpl", scale);
    let dsn = if tcp() {
        format!(
            "host=127.0.0.1 port={} user={SUPERUSER} password={} dbname=postgres",
            h.server.port(),
            h.server.password()
        )
    } else {
        format!(
            "host={} port={} user={SUPERUSER} password={} dbname=postgres",
            h.server.socket_dir().display(),
            h.server.port(),
            h.server.password()
        )
    };
    let out_root = tempfile::tempdir().expect("temp dir");
    let level_arg = isolation.sql().to_lowercase().replace(' ', "-");
    println!(
        "program | {script} script, {} | {clients} clients | scale {scale} | {seconds} s | {rounds} rounds | {}",
        isolation.sql(),
        if tcp() { "TCP" } else { "Unix socket" }
    );
    println!(
        "{:>5} {:>12} {}",
        "round",
        "pgbench tps",
        levels
            .iter()
            .map(|l| format!("{:>10} {:>6} {:>7}", format!("{l} tps"), "ratio", "µs/tx"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); levels.len()];
    let mut pg_cpu = Vec::new();
    let mut runs = 0u32;
    for round in 1..=rounds {
        let pgbench_run = || {
            h.fresh_copy("tmpl", "bench_pg");
            let (c, t, s) = (clients.to_string(), seconds.to_string(), "10");
            let j = threads.unwrap_or(1).to_string();
            let r = h.pgbench(
                "bench_pg",
                Some(isolation),
                &[
                    "-b",
                    &script,
                    "-M",
                    "prepared",
                    "-c",
                    &c,
                    "-j",
                    &j,
                    "-T",
                    &t,
                    "--max-tries",
                    s,
                ],
            );
            h.exec("DROP DATABASE IF EXISTS bench_pg WITH (FORCE)");
            r
        };
        let mut isobench_run = |level: &str| {
            runs += 1;
            let out = out_root.path().join(format!("run{runs}"));
            let mut cmd = Command::new(&bin);
            cmd.args(["run", "-b", &script, "-M", "prepared", "--repeat", "1"])
                .args(["-s", &scale.to_string(), "-c", &clients.to_string()])
                .args(["--isolation", &level_arg, "-T", &format!("{seconds}s")])
                .args(["--warmup", "1s", "--observe", level, "-q", "--dsn", &dsn])
                .arg("-o")
                .arg(&out);
            if let Some(j) = threads {
                cmd.args(["-j", &j.to_string()]);
            }
            let o = cmd.output().expect("run isobench");
            assert!(
                o.status.success(),
                "isobench run failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            read_results(&out)
        };
        // Rotate the order: pgbench first, last or in between.
        let n = levels.len() + 1;
        let mut pg = None;
        let mut ib = vec![(0.0, 0.0); levels.len()];
        for k in 0..n {
            let slot = (k + round as usize) % n;
            if slot == levels.len() {
                pg = Some(pgbench_run());
            } else {
                ib[slot] = isobench_run(&levels[slot]);
            }
        }
        let pg = pg.unwrap();
        pg_cpu.push(pg.cpu_s * 1e6 / pg.committed.max(1) as f64);
        let cols: Vec<String> = ib
            .iter()
            .enumerate()
            .map(|(i, &(tps, cpu))| {
                ratios[i].push(tps / pg.tps);
                format!("{tps:>10.0} {:>6.3} {cpu:>7.0}", tps / pg.tps)
            })
            .collect();
        println!("{round:>5} {:>12.0} {}", pg.tps, cols.join(" "));
    }
    println!(
        "pgbench client CPU µs/tx (median): {:.0}",
        summary(&pg_cpu).1
    );
    for (i, l) in levels.iter().enumerate() {
        let (geo, median, min, max) = summary(&ratios[i]);
        println!(
            "--observe {l}: isobench/pgbench geomean {geo:.3}, median {median:.3}, range {min:.3}-{max:.3}"
        );
    }
    if let Some(none) = levels.iter().position(|l| l == "none") {
        for (i, l) in levels.iter().enumerate().filter(|(i, _)| *i != none) {
            let cost: Vec<f64> = ratios[i]
                .iter()
                .zip(&ratios[none])
                .map(|(a, b)| a / b)
                .collect();
            let (geo, median, min, max) = summary(&cost);
            println!(
                "--observe {l} vs none: geomean {geo:.3}, median {median:.3}, range {min:.3}-{max:.3}"
            );
        }
    }
}
