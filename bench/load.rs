//! Loading TPC-B data: isobench's `tpcb` loader against `pgbench -i`, same
//! managed server, alternating (ABBA), each into a new empty database;
//! prints both wall times and the speed-up (target: >= 1.5x at scale 50
//! and 100). Both end with the same state: tables, rows, vacuumed and
//! analysed, primary keys.
//!
//! Diagnostic: it calls the loader in-process on the managed server's
//! settings; what a user waits for (`isobench run`'s `load_ms`, plain
//! server) comes from `bench/product.rs` (`BENCH_PARTS=load`).
//!
//! Run: `cargo bench --bench load`. Environment: `BENCH_SCALES` (50,100),
//! `BENCH_ROUNDS` (4), `BENCH_SET`, `PGBENCH`. Not a test: record results
//! in BENCHMARKS.md.

mod common;

use std::time::Instant;

use common::{Harness, env_list, env_or, summary};
use isobench::workload::Workload;
use isobench::workload::tpcb::{Tpcb, Variant};

fn main() {
    let scales: Vec<u32> = env_list("BENCH_SCALES", "50,100");
    let rounds: u32 = env_or("BENCH_ROUNDS", 4);
    let h = Harness::start(16);
    {
        use tracing_subscriber::filter::{LevelFilter, Targets};
        use tracing_subscriber::prelude::*;
        let targets = std::env::var("ISOBENCH_LOG")
            .ok()
            .and_then(|v| v.parse::<Targets>().ok())
            .unwrap_or_else(|| Targets::new().with_default(LevelFilter::ERROR));
        tracing_subscriber::registry()
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .with(targets)
            .init();
    }
    println!("load | {rounds} rounds (ABBA) | each into a new database, CHECKPOINT before");
    println!(
        "{:>6} {:>5} {:>12} {:>12} {:>9}  pgbench's own breakdown",
        "scale", "round", "pgbench s", "isobench s", "speed-up"
    );
    for &scale in &scales {
        let mut ratios = Vec::new();
        for round in 1..=rounds {
            let fresh = |db: &str| {
                h.exec(&format!("DROP DATABASE IF EXISTS {db}"));
                h.exec(&format!("CREATE DATABASE {db}"));
                h.exec("CHECKPOINT");
            };
            let pgbench_run = || {
                fresh("load_pg");
                let t = Instant::now();
                let r = h.pgbench("load_pg", None, &["-i", "-q", "-s", &scale.to_string()]);
                let took = t.elapsed().as_secs_f64();
                let detail = r
                    .stderr
                    .lines()
                    .chain(r.stdout.lines())
                    .find(|l| l.starts_with("done in"))
                    .unwrap_or("")
                    .to_string();
                (took, detail)
            };
            let isobench_run = || {
                fresh("load_ib");
                let w = Tpcb::with_variant(scale, Variant::TpcbLike).unwrap();
                let config = h.config("load_ib");
                let t = Instant::now();
                h.rt.block_on(async {
                    let db = isobench::postgres::connect(&config).await.unwrap();
                    let loader = isobench::workload::Loader::new(db, config.clone());
                    w.load(&loader).await.expect("isobench load")
                });
                t.elapsed().as_secs_f64()
            };
            let ((pg, detail), ib) = if round % 2 == 1 {
                let p = pgbench_run();
                (p, isobench_run())
            } else {
                let i = isobench_run();
                (pgbench_run(), i)
            };
            ratios.push(pg / ib);
            println!(
                "{scale:>6} {round:>5} {pg:>12.2} {ib:>12.2} {:>9.2}  {detail}",
                pg / ib
            );
        }
        let (geo, median, min, max) = summary(&ratios);
        println!(
            "{scale:>6} speed-up: median {median:.2}, geometric mean {geo:.2}, min {min:.2}, max {max:.2}"
        );
    }
}
