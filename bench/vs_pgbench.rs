//! isobench's load generator against pgbench, on the same managed server,
//! same data, same client count, alternating runs; prints tps ratios.
//!
//! Run: `cargo bench --bench vs_pgbench` (release build). Environment:
//! `BENCH_SCALE` (default 10), `BENCH_CLIENTS` (16), `BENCH_SECONDS` (10),
//! `BENCH_ROUNDS` (6), `BENCH_SCRIPTS` (tpcb-like,select-only),
//! `BENCH_ISOLATION` (rc, rr or ser; both tools retry 40001/40P01 up to
//! `BENCH_MAX_TRIES`, default isobench's 10), `BENCH_SET` (server settings, e.g. "synchronous_commit=off"), `BENCH_THREADS` (pgbench's -j and isobench's --threads; default
//! isobench's default for the client count), `PGBENCH` (pgbench from the server's bin directory,
//! else PATH), `BENCH_WORKLOAD` (`tpcb`: isobench's TPC-B workload, the
//! default; `script`: pgbench's built-in script run by isobench's script
//! interpreter, `-M prepared`). Not a test: record results in BENCHMARKS.md.
//!
//! Both sides use prepared statements over the server's Unix socket, one
//! statement per round trip, READ COMMITTED unless BENCH_ISOLATION says otherwise; pgbench gets
//! the same number of threads (`-j`) as isobench (`--threads`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use isobench::config::{Isolation, RetryPolicy};
use isobench::engine::EngineOutcome;
use isobench::engine::retry::Retrier;
use isobench::engine::{self, EngineParams, Phase};
use isobench::pgbench::run::{Data, QueryMode, ScriptWorkload};
use isobench::pgbench::script;
use isobench::target::{self, ManagedOptions, ManagedServer, SUPERUSER};
use isobench::workload::Workload;
use isobench::workload::tpcb::{Tpcb, Variant};
use tokio_util::sync::CancellationToken;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Children's CPU time (user + sys) so far, s.
fn children_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    tv(u.user_time()) + tv(u.system_time())
}

/// One engine run of `workload` (ledger discarded).
fn engine_run<W: Workload>(
    rt: &tokio::runtime::Runtime,
    workload: &W,
    config: &tokio_postgres::Config,
    params: &EngineParams,
) -> EngineOutcome {
    rt.block_on(async {
        let (phase, _rx) = tokio::sync::watch::channel(Phase::Connecting);
        engine::run(
            workload,
            config,
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

fn main() {
    let scale: u32 = env_or("BENCH_SCALE", 10);
    let clients: u32 = env_or("BENCH_CLIENTS", 16);
    let seconds: u64 = env_or("BENCH_SECONDS", 10);
    let rounds: u32 = env_or("BENCH_ROUNDS", 6);
    let scripts: String = env_or("BENCH_SCRIPTS", "tpcb-like,select-only".to_string());
    let isolation: Isolation = env_or("BENCH_ISOLATION", Isolation::ReadCommitted);
    let max_tries: u32 = env_or("BENCH_MAX_TRIES", RetryPolicy::default().max_tries);
    let policy = RetryPolicy {
        max_tries,
        ..RetryPolicy::default()
    };
    let max_tries = max_tries.to_string();
    let threads: usize = env_or("BENCH_THREADS", isobench::engine::default_threads(clients));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    isobench::target::reaper::install_panic_hook();

    let log = std::env::temp_dir().join("isobench-bench-server.log");
    let bin_dir = target::find_bin_dir(None).expect("PostgreSQL binaries");
    let server = ManagedServer::start(&ManagedOptions {
        bin_dir: bin_dir.clone(),
        settings: {
            let mut v = vec![(
                "max_connections".to_string(),
                (clients + 20).max(100).to_string(),
            )];
            // BENCH_SET="synchronous_commit=off fsync=off": server settings.
            for kv in std::env::var("BENCH_SET")
                .unwrap_or_default()
                .split_whitespace()
            {
                let (k, val) = kv
                    .split_once('=')
                    .expect("BENCH_SET takes name=value pairs");
                v.push((k.into(), val.into()));
            }
            v
        },
        log_path: log,
        os_user: "postgres".into(),
    })
    .expect("managed server");
    let pgbench = std::env::var_os("PGBENCH")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let p = bin_dir.join("pgbench");
            if p.exists() {
                p
            } else {
                PathBuf::from("pgbench")
            }
        });
    let socket = server.socket_dir().to_path_buf();
    let port = server.port().to_string();
    let pg = |args: &[&str]| -> (f64, f64) {
        let cpu0 = children_cpu_s();
        let out = Command::new(&pgbench)
            .env(
                "PGOPTIONS",
                format!(
                    "-c default_transaction_isolation={}",
                    isolation.sql().to_lowercase().replace(' ', "\\ ")
                ),
            )
            .args(["-h", socket.to_str().unwrap(), "-p", &port, "-U", SUPERUSER])
            .args(args)
            .arg("postgres")
            .output()
            .expect("run pgbench");
        let cpu = children_cpu_s() - cpu0;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "pgbench failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tps = text
            .lines()
            .find(|l| l.starts_with("tps = "))
            .and_then(|l| l["tps = ".len()..].split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        (tps, cpu)
    };
    println!("loading: pgbench -i -s {scale} ...");
    let _ = pg(&["-i", "-q", "-s", &scale.to_string()]);
    let config = server.config("postgres");
    let admin = rt
        .block_on(target::connect(&config))
        .expect("admin connection");
    // A checkpoint before every run, so neither tool pays for the other's
    // dirty buffers or starts with a flood of full-page writes at random.
    let checkpoint = || {
        rt.block_on(admin.batch_execute("CHECKPOINT"))
            .expect("CHECKPOINT")
    };
    println!(
        "server {} | scale {scale} | {clients} clients | {seconds} s per run | {rounds} rounds | pgbench -j {threads} | {isolation}",
        bin_dir.display()
    );
    println!(
        "{:<14} {:>5} {:>12} {:>12} {:>8} {:>14} {:>14}",
        "script",
        "round",
        "pgbench tps",
        "isobench tps",
        "ratio",
        "pgbench µs/tx",
        "isobench µs/tx"
    );
    for (name, variant, flag) in [
        ("tpcb-like", Variant::TpcbLike, "-btpcb-like"),
        ("select-only", Variant::SelectOnly, "-bselect-only"),
    ] {
        if !scripts.split(',').any(|s| s == name) {
            continue;
        }
        let workload = Tpcb::with_variant(scale, variant).unwrap();
        let scripted = (std::env::var("BENCH_WORKLOAD").as_deref() == Ok("script")).then(|| {
            ScriptWorkload::new(
                vec![script::builtin(name, 1).unwrap()],
                QueryMode::Prepared,
                Vec::new(),
                Data::Tpcb(scale),
                clients,
            )
            .unwrap()
        });
        let mut ratios = Vec::new();
        for round in 1..=rounds {
            let pgbench_run = || {
                checkpoint();
                pg(&[
                    flag,
                    "-M",
                    "prepared",
                    "-n",
                    "-c",
                    &clients.to_string(),
                    "-j",
                    &threads.to_string(),
                    "--max-tries",
                    &max_tries,
                    "-T",
                    &seconds.to_string(),
                ])
            };
            let isobench_run = || {
                checkpoint();
                let params = EngineParams {
                    clients,
                    isolation,
                    retrier: Retrier::new(&policy).unwrap(),
                    warmup: Duration::ZERO,
                    duration: Duration::from_secs(seconds),
                    seed: u64::from(round),
                    threads,
                    pool_size: None,
                    rate: None,
                    latency_limit: None,
                };
                let outcome = match &scripted {
                    Some(w) => engine_run(&rt, w, &config, &params),
                    None => engine_run(&rt, &workload, &config, &params),
                };
                let committed = outcome.measured.total().committed;
                let tps = committed as f64 / outcome.measured_s;
                (tps, outcome.cpu_s * 1e6 / committed.max(1) as f64)
            };
            // ABBA order: the tables grow and churn as rounds go by, so
            // neither tool always runs on the fresher data.
            let ((pg_tps, pg_cpu), (ib_tps, ib_us)) = if round % 2 == 1 {
                let p = pgbench_run();
                (p, isobench_run())
            } else {
                let i = isobench_run();
                (pgbench_run(), i)
            };
            let pg_us = pg_cpu * 1e6 / (pg_tps * seconds as f64).max(1.0);
            let ratio = ib_tps / pg_tps;
            ratios.push(ratio);
            println!(
                "{name:<14} {round:>5} {pg_tps:>12.0} {ib_tps:>12.0} {ratio:>8.3} {pg_us:>14.1} {ib_us:>14.1}"
            );
        }
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        println!(
            "{name:<14} geometric mean ratio {geo:.3}, median {median:.3}, min {:.3}, max {:.3}",
            sorted[0],
            sorted[sorted.len() - 1]
        );
    }
    drop(server);
}
