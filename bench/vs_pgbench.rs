//! isobench's load generator against pgbench, closed loop: same managed
//! server, same data, same client count, alternating runs (ABBA); prints
//! committed-tps ratios, failure %, retries per commit and client CPU.
//!
//! Diagnostic: it drives the engine in-process, on the managed server's
//! settings, not the `isobench` binary as a user runs it; the product's
//! figures come from `bench/product.rs`.
//!
//! Run: `cargo bench --profile measure --bench vs_pgbench` (the engine
//! in-process, built with fat LTO as measurements are). Environment:
//! - `BENCH_SCALE` (10), `BENCH_CLIENTS` (16; a list sweeps, e.g. 4,16,64),
//!   `BENCH_SECONDS` (10), `BENCH_ROUNDS` (6)
//! - `BENCH_SCRIPTS` (tpcb-like,select-only)
//! - `BENCH_WORKLOAD` (tpcb): `tpcb` is isobench's TPC-B workload, `script`
//!   pgbench's built-in script run by isobench's interpreter (`-M
//!   prepared`); a list runs both
//! - `BENCH_ISOLATION` (rc; rc, rr or ser): both tools retry 40001/40P01 up
//!   to `BENCH_MAX_TRIES` (isobench's default, 10)
//! - `BENCH_FRESH` (1): every run on a fresh copy of `pgbench -i` data, as
//!   isobench's runs are; 0 lets the tables churn from run to run
//! - `BENCH_ACTIVITY` (0): 1 samples `pg_stat_activity` every 10 ms and
//!   prints how the backends spent their time (state, wait events)
//! - `BENCH_SET` (server settings, e.g. "synchronous_commit=off"; under
//!   SERIALIZABLE, "enable_seqscan=off" plans the one-page branch and
//!   teller tables with index scans, so their SIRead locks are tuple-level
//!   instead of relation-level: see BENCHMARKS.md),
//!   `BENCH_THREADS` (pgbench's -j and isobench's --threads; default
//!   isobench's default for the client count), `PGBENCH`
//!
//! Both sides use prepared statements over the server's Unix socket, one
//! statement per round trip. Not a test: record results in BENCHMARKS.md.

mod common;

use std::time::Duration;

use common::{Activity, Harness, Sampler, env_list, env_or, summary};
use isobench::engine::retry::Retrier;
use isobench::engine::{self, EngineOutcome, EngineParams};
use isobench::model::Phase;
use isobench::model::QueryMode;
use isobench::model::{Isolation, RetryPolicy};
use isobench::pgbench::run::{Data, ScriptWorkload};
use isobench::pgbench::script;
use isobench::workload::Workload;
use isobench::workload::tpcb::{Tpcb, Variant};
use tokio_util::sync::CancellationToken;

/// One engine run of `workload` (ledger discarded).
fn engine_run<W: Workload>(
    h: &Harness,
    workload: &W,
    db: &str,
    params: &EngineParams,
) -> EngineOutcome {
    h.rt.block_on(async {
        let (phase, _rx) = tokio::sync::watch::channel(Phase::Connecting);
        engine::run(
            workload,
            &h.config(db),
            params,
            &CancellationToken::new(),
            &phase,
            &mut |_| {},
        )
        .await
    })
    .expect("isobench engine run")
    .0
}

/// What one run of either tool gave.
struct Figures {
    tps: f64,
    failed_pct: f64,
    retries_per_commit: f64,
    cpu_us_per_tx: f64,
    activity: Option<Activity>,
    /// Per-statement failures, when known (pgbench -r, isobench scripts).
    statements: String,
}

fn main() {
    let scale: u32 = env_or("BENCH_SCALE", 10);
    let client_counts: Vec<u32> = env_list("BENCH_CLIENTS", "16");
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let rounds: u32 = env_or("BENCH_ROUNDS", 6);
    let scripts: Vec<String> = env_list("BENCH_SCRIPTS", "tpcb-like,select-only");
    let workloads: Vec<String> = env_list("BENCH_WORKLOAD", "tpcb");
    let isolation: Isolation = env_or("BENCH_ISOLATION", Isolation::ReadCommitted);
    let max_tries: u32 = env_or("BENCH_MAX_TRIES", RetryPolicy::default().max_tries);
    let fresh = env_or("BENCH_FRESH", 1) == 1;
    let activity = env_or("BENCH_ACTIVITY", 0) == 1;
    let policy = RetryPolicy {
        max_tries,
        ..RetryPolicy::default()
    };
    let h = Harness::start(client_counts.iter().copied().max().unwrap_or(16));
    let init = h.pgbench_init("tmpl", scale);
    println!(
        "loaded: pgbench -i -s {scale} ({:.1} s of pgbench CPU)",
        init.cpu_s
    );
    let db = if fresh { "run" } else { "tmpl" };
    println!(
        "server {} (port {}) | scale {scale} | {seconds} s per run | {rounds} rounds (ABBA) | {isolation} | max tries {max_tries} | {}",
        h.server.bin_dir().display(),
        h.server.port(),
        if fresh {
            "fresh copy per run"
        } else {
            "tables churn across runs"
        }
    );
    println!(
        "{:<12} {:<7} {:>4} {:>5} {:>9} {:>9} {:>6} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6}",
        "script",
        "isobench",
        "c",
        "round",
        "pg tps",
        "ib tps",
        "ratio",
        "pg fail%",
        "ib fail%",
        "pg r/c",
        "ib r/c",
        "pg µs",
        "ib µs"
    );
    for &clients in &client_counts {
        let threads: usize = env_or("BENCH_THREADS", engine::default_threads(clients));
        for (name, variant) in [
            ("tpcb-like", Variant::TpcbLike),
            ("select-only", Variant::SelectOnly),
        ] {
            if !scripts.iter().any(|s| s == name) {
                continue;
            }
            for kind in &workloads {
                let tpcb = Tpcb::with_variant(scale, variant).unwrap();
                let scripted = (kind == "script").then(|| {
                    ScriptWorkload::new(
                        vec![script::builtin(name, 1).unwrap()],
                        QueryMode::Prepared,
                        Vec::new(),
                        Data::pgbench(scale),
                        clients,
                    )
                    .unwrap()
                });
                let sample = |db: &str| {
                    activity.then(|| {
                        Sampler::start(h.config("postgres"), db, Duration::from_millis(10))
                    })
                };
                let mut ratios = Vec::new();
                for round in 1..=rounds {
                    let pgbench_run = || {
                        if fresh {
                            h.fresh_copy("tmpl", db);
                        } else {
                            h.exec("CHECKPOINT");
                        }
                        let s = sample(db);
                        let r = h.pgbench(
                            db,
                            Some(isolation),
                            &[
                                &format!("-b{name}"),
                                "-M",
                                "prepared",
                                "-n",
                                "-r",
                                "-c",
                                &clients.to_string(),
                                "-j",
                                &threads.to_string(),
                                "--max-tries",
                                &max_tries.to_string(),
                                "-T",
                                &seconds.to_string(),
                            ],
                        );
                        let statements = r
                            .stdout
                            .lines()
                            .skip_while(|l| !l.starts_with("statement latencies"))
                            .skip(1)
                            .filter(|l| !l.contains("\\set"))
                            .map(|l| {
                                let f: Vec<&str> = l.split_whitespace().collect();
                                format!(
                                    "{} {}+{} {}ms",
                                    f.get(3).unwrap_or(&"?"),
                                    f.get(1).unwrap_or(&"?"),
                                    f.get(2).unwrap_or(&"?"),
                                    f.first().unwrap_or(&"?")
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(", ");
                        Figures {
                            tps: r.tps,
                            failed_pct: r.failed_pct(),
                            retries_per_commit: r.retries_per_commit(),
                            cpu_us_per_tx: r.cpu_s * 1e6 / r.committed.max(1) as f64,
                            activity: s.map(Sampler::finish),
                            statements,
                        }
                    };
                    let isobench_run = || {
                        if fresh {
                            h.fresh_copy("tmpl", db);
                        } else {
                            h.exec("CHECKPOINT");
                        }
                        let params = EngineParams {
                            first_client: 0,
                            first_connection: 0,
                            clients,
                            isolation,
                            retrier: Retrier::new(&policy).unwrap(),
                            warmup: Duration::ZERO,
                            duration: Duration::from_secs(seconds),
                            transactions: None,
                            connect_per_transaction: false,
                            serve_between_transactions: false,
                            tx_log: None,
                            seed: u64::from(round),
                            threads,
                            pool_size: None,
                            rate: None,
                            latency_limit: None,
                            host_policy: Default::default(),
                            unnamed_statements: false,
                            read_route: None,
                            commits_by_host: false,
                        };
                        let s = sample(db);
                        let o = match &scripted {
                            Some(w) => engine_run(&h, w, db, &params),
                            None => engine_run(&h, &tpcb, db, &params),
                        };
                        let t = o.measured.total();
                        let statements = match &scripted {
                            Some(w) => w
                                .step_names(0)
                                .iter()
                                .zip(&t.steps)
                                .filter(|(n, _)| !n.starts_with("\\set"))
                                .map(|(n, s)| {
                                    format!(
                                        "{} {} {:.3}ms",
                                        n.split_whitespace().next().unwrap_or("?"),
                                        s.failures,
                                        s.total_us as f64 / 1000.0 / s.executions.max(1) as f64
                                    )
                                })
                                .collect::<Vec<_>>()
                                .join(", "),
                            None => String::new(),
                        };
                        Figures {
                            tps: t.committed as f64 / o.measured_s,
                            failed_pct: 100.0 * t.failed.total() as f64
                                / (t.committed + t.failed.total()).max(1) as f64,
                            retries_per_commit: t.attempts.saturating_sub(t.transactions()) as f64
                                / t.committed.max(1) as f64,
                            cpu_us_per_tx: o.cpu_s * 1e6 / t.committed.max(1) as f64,
                            activity: s.map(Sampler::finish),
                            statements,
                        }
                    };
                    // ABBA order: neither tool always goes first.
                    let (pg, ib) = if round % 2 == 1 {
                        let p = pgbench_run();
                        (p, isobench_run())
                    } else {
                        let i = isobench_run();
                        (pgbench_run(), i)
                    };
                    let ratio = ib.tps / pg.tps;
                    ratios.push(ratio);
                    println!(
                        "{name:<12} {kind:<7} {clients:>4} {round:>5} {:>9.0} {:>9.0} {ratio:>6.3} {:>7.1} {:>7.1} {:>6.2} {:>6.2} {:>6.1} {:>6.1}",
                        pg.tps,
                        ib.tps,
                        pg.failed_pct,
                        ib.failed_pct,
                        pg.retries_per_commit,
                        ib.retries_per_commit,
                        pg.cpu_us_per_tx,
                        ib.cpu_us_per_tx
                    );
                    for (tool, f) in [("pgbench", &pg), ("isobench", &ib)] {
                        if let Some(a) = &f.activity {
                            println!(
                                "    {tool:<8} active {:.0}% | idle in transaction {:.0}% | idle {:.0}% | {}",
                                a.state_pct("active"),
                                a.state_pct("idle in transaction"),
                                a.state_pct("idle"),
                                a.top_waits(4)
                            );
                        }
                        if activity && !f.statements.is_empty() {
                            println!("    {tool:<8} failures by statement: {}", f.statements);
                        }
                    }
                }
                let (geo, median, min, max) = summary(&ratios);
                println!(
                    "{name:<12} {kind:<7} {clients:>4} ratio: median {median:.3}, geometric mean {geo:.3}, min {min:.3}, max {max:.3}"
                );
            }
        }
    }
}
