//! Open-loop pacing against `pgbench -R`: same managed server, same data,
//! same client count and rate, alternating runs (ABBA); prints both tools'
//! mean latency and schedule lag (both measured from the scheduled start),
//! the target `isobench <= 1.3 x pgbench + 0.05 ms`, and client CPU.
//!
//! Diagnostic: it drives the engine in-process, on the managed server's
//! settings, not the `isobench` binary as a user runs it; the product's
//! figures come from `bench/product.rs` (`BENCH_PARTS=rate`).
//!
//! Run: `cargo bench --bench pacing`. Environment: `BENCH_RATES`
//! (2000,20000 tx/s in all), `BENCH_CLIENTS` (4), `BENCH_SECONDS` (10),
//! `BENCH_ROUNDS` (4), `BENCH_SCRIPT` (select-only), `BENCH_SCALE` (10),
//! `BENCH_THREADS` (1: pgbench -j and isobench --threads), `BENCH_SET`,
//! `PGBENCH`. Not a test: record results in BENCHMARKS.md.

mod common;

use std::time::Duration;

use common::{Harness, env_list, env_or};
use isobench::engine::retry::Retrier;
use isobench::engine::{self, EngineParams};
use isobench::model::Phase;
use isobench::model::{Isolation, RetryPolicy};
use isobench::workload::tpcb::{Tpcb, Variant};
use tokio_util::sync::CancellationToken;

fn main() {
    let scale: u32 = env_or("BENCH_SCALE", 10);
    let clients: u32 = env_or("BENCH_CLIENTS", 4);
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let rounds: u32 = env_or("BENCH_ROUNDS", 4);
    let rates: Vec<f64> = env_list("BENCH_RATES", "2000,20000");
    let threads: usize = env_or("BENCH_THREADS", 1);
    let script: String = env_or("BENCH_SCRIPT", "select-only".to_string());
    let variant = match script.as_str() {
        "select-only" => Variant::SelectOnly,
        "tpcb-like" => Variant::TpcbLike,
        "simple-update" => Variant::SimpleUpdate,
        other => panic!("BENCH_SCRIPT: unknown script {other}"),
    };
    let h = Harness::start(clients);
    h.pgbench_init("tmpl", scale);
    println!(
        "open loop | {script} | {clients} clients | {threads} thread(s) | {seconds} s per run | {rounds} rounds (ABBA) | fresh copy per run"
    );
    println!(
        "{:>7} {:>5} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7}",
        "rate",
        "round",
        "pg tps",
        "ib tps",
        "pg lat",
        "ib lat",
        "pg lag",
        "ib lag",
        "target",
        "pg µs",
        "ib µs"
    );
    let workload = Tpcb::with_variant(scale, variant).unwrap();
    for &rate in &rates {
        let mut within = 0;
        for round in 1..=rounds {
            let pgbench_run = || {
                h.fresh_copy("tmpl", "run");
                let r = h.pgbench(
                    "run",
                    Some(Isolation::ReadCommitted),
                    &[
                        &format!("-b{script}"),
                        "-M",
                        "prepared",
                        "-n",
                        "-c",
                        &clients.to_string(),
                        "-j",
                        &threads.to_string(),
                        "-R",
                        &format!("{rate}"),
                        "-T",
                        &seconds.to_string(),
                    ],
                );
                let us = r.cpu_s * 1e6 / r.committed.max(1) as f64;
                (r.tps, r.latency_ms, r.lag_ms, us)
            };
            let isobench_run = || {
                h.fresh_copy("tmpl", "run");
                let params = EngineParams {
                    first_client: 0,
                    first_connection: 0,
                    clients,
                    isolation: Isolation::ReadCommitted,
                    retrier: Retrier::new(&RetryPolicy::default()).unwrap(),
                    warmup: Duration::ZERO,
                    duration: Duration::from_secs(seconds),
                    transactions: None,
                    connect_per_transaction: false,
                    serve_between_transactions: false,
                    tx_log: None,
                    seed: u64::from(round),
                    threads,
                    pool_size: None,
                    rate: Some(rate),
                    latency_limit: None,
                    host_policy: Default::default(),
                    unnamed_statements: false,
                    read_route: None,
                    commits_by_host: false,
                };
                let o =
                    h.rt.block_on(async {
                        let (phase, _rx) = tokio::sync::watch::channel(Phase::Connecting);
                        engine::run(
                            &workload,
                            &h.config("run"),
                            &params,
                            &CancellationToken::new(),
                            &phase,
                            &mut |_| {},
                        )
                        .await
                    })
                    .expect("engine run")
                    .0;
                let t = o.measured.total();
                let lag_ms = o.measured.waits.lag_us.mean() / 1000.0;
                (
                    t.committed as f64 / o.measured_s,
                    t.latency_summary().mean,
                    lag_ms,
                    o.cpu_s * 1e6 / t.committed.max(1) as f64,
                )
            };
            let (pg, ib) = if round % 2 == 1 {
                let p = pgbench_run();
                (p, isobench_run())
            } else {
                let i = isobench_run();
                (pgbench_run(), i)
            };
            let target = 1.3 * pg.1 + 0.05;
            within += u32::from(ib.1 <= target && ib.2 <= 1.3 * pg.2 + 0.05);
            println!(
                "{rate:>7.0} {round:>5} {:>9.0} {:>9.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>7.1} {:>7.1}",
                pg.0, ib.0, pg.1, ib.1, pg.2, ib.2, target, pg.3, ib.3
            );
        }
        println!(
            "{rate:>7.0} latency and lag within 1.3 x pgbench + 0.05 ms in {within} of {rounds} rounds"
        );
    }
}
