//! What every benchmark against pgbench shares: one managed server, pgbench
//! runs parsed into figures, fresh copies of a template database, a
//! `pg_stat_activity` sampler, and ratio summaries. Benchmarks are not
//! tests: they print figures to record in BENCHMARKS.md.

#![allow(dead_code)] // each bench uses its own part

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use isobench::model::Isolation;
use isobench::postgres::{self, ManagedOptions, ManagedServer, SUPERUSER};

/// `name` from the environment, parsed, else `default`.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A comma-separated list from the environment, else `default`.
pub fn env_list<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}: cannot parse '{s}'"))
        })
        .collect()
}

/// Children's CPU time (user + sys) so far, s.
pub fn children_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    tv(u.user_time()) + tv(u.system_time())
}

/// The `isobench` binary that benchmarks measure, built with the
/// `measure` profile (fat LTO, one codegen unit: Cargo.toml) into
/// target/measure/ and brought up to date first (a no-op when it is), so a
/// bench never measures a stale binary. `BENCH_PROFILE=release` measures
/// the profile users build instead (target/release/); `ISOBENCH_BIN`
/// names another binary, used as it is.
pub fn isobench_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ISOBENCH_BIN") {
        return p.into();
    }
    let profile = std::env::var("BENCH_PROFILE").unwrap_or_else(|_| "measure".into());
    // This bench runs from <target>/<its profile>/deps/.
    let exe = std::env::current_exe().expect("bench path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the target directory above this bench");
    let ok = Command::new(env!("CARGO"))
        .args([
            "build",
            "--locked",
            "--profile",
            &profile,
            "--bin",
            "isobench",
        ])
        .status()
        .expect("cargo build");
    assert!(ok.success(), "cargo build --profile {profile} failed");
    // Cargo's built-in profiles keep their directory names (dev: debug).
    let dir = if profile == "dev" { "debug" } else { &profile };
    target.join(dir).join("isobench")
}

/// `BENCH_TCP=1`: both tools connect over TCP on 127.0.0.1 (e.g. to
/// capture their traffic with tcpdump) instead of the Unix socket.
pub fn tcp() -> bool {
    env_or("BENCH_TCP", 0) == 1
}

/// What one pgbench run printed, parsed.
#[derive(Debug, Clone, Default)]
pub struct PgbenchRun {
    pub tps: f64,
    /// "number of transactions actually processed".
    pub committed: u64,
    pub failed: u64,
    /// Transactions retried at least once.
    pub retried: u64,
    /// Retries in all ("total number of retries").
    pub retries: u64,
    /// "latency average", ms.
    pub latency_ms: f64,
    /// "rate limit schedule lag: avg", ms (with -R).
    pub lag_ms: f64,
    /// pgbench's CPU (user + sys), s.
    pub cpu_s: f64,
    pub stdout: String,
    pub stderr: String,
}

impl PgbenchRun {
    /// The figures of pgbench's summary `text`.
    pub fn parse(text: &str) -> Self {
        let num = |prefix: &str| -> Option<f64> {
            let l = text.lines().find(|l| l.trim_start().starts_with(prefix))?;
            let rest = l.trim_start()[prefix.len()..].trim_start();
            rest.split_whitespace().next()?.parse().ok()
        };
        PgbenchRun {
            tps: num("tps = ").unwrap_or(0.0),
            committed: num("number of transactions actually processed:").unwrap_or(0.0) as u64,
            failed: num("number of failed transactions:").unwrap_or(0.0) as u64,
            retried: num("number of transactions retried:").unwrap_or(0.0) as u64,
            retries: num("total number of retries:").unwrap_or(0.0) as u64,
            latency_ms: num("latency average =").unwrap_or(0.0),
            lag_ms: text
                .lines()
                .find(|l| l.starts_with("rate limit schedule lag: avg"))
                .and_then(|l| l.split_whitespace().nth(5)?.parse().ok())
                .unwrap_or(0.0),
            cpu_s: 0.0,
            stdout: text.to_string(),
            stderr: String::new(),
        }
    }

    /// Failed transactions, % of transactions (committed + failed).
    pub fn failed_pct(&self) -> f64 {
        100.0 * self.failed as f64 / (self.committed + self.failed).max(1) as f64
    }

    /// Retries per committed transaction.
    pub fn retries_per_commit(&self) -> f64 {
        self.retries as f64 / self.committed.max(1) as f64
    }
}

/// A managed server for a benchmark, with pgbench next to it.
pub struct Harness {
    pub rt: tokio::runtime::Runtime,
    pub server: ManagedServer,
    pub pgbench: PathBuf,
    admin: tokio_postgres::Client,
}

impl Harness {
    /// Starts a managed server with room for `clients` connections and the
    /// settings in `BENCH_SET` ("name=value name=value").
    pub fn start(clients: u32) -> Self {
        Self::start_with(vec![(
            "max_connections".to_string(),
            (clients + 30).max(100).to_string(),
        )])
    }

    /// Starts a managed server with `settings` (every other setting at
    /// initdb's default), then those in `BENCH_SET` ("name=value
    /// name=value"), which override them.
    pub fn start_with(mut settings: Vec<(String, String)>) -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        postgres::reaper::install_panic_hook();
        let bin_dir = postgres::find_bin_dir(None).expect("PostgreSQL binaries");
        for kv in std::env::var("BENCH_SET")
            .unwrap_or_default()
            .split_whitespace()
        {
            let (k, v) = kv
                .split_once('=')
                .expect("BENCH_SET takes name=value pairs");
            settings.retain(|(name, _)| name != k);
            settings.push((k.into(), v.into()));
        }
        let server = ManagedServer::start(&ManagedOptions {
            bin_dir: bin_dir.clone(),
            settings,
            log_path: std::env::temp_dir().join("isobench-bench-server.log"),
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
        let admin = rt
            .block_on(postgres::connect(&server.config("postgres")))
            .expect("admin connection");
        Harness {
            rt,
            server,
            pgbench,
            admin,
        }
    }

    /// Connection settings for `db`: over the Unix socket, or TCP on
    /// 127.0.0.1 when `BENCH_TCP=1` (what pgbench uses too).
    pub fn config(&self, db: &str) -> tokio_postgres::Config {
        let mut c = self.server.config(db);
        if tcp() {
            let mut t = tokio_postgres::Config::new();
            t.host("127.0.0.1")
                .port(self.server.port())
                .user(SUPERUSER)
                .password(self.server.password())
                .dbname(db)
                .application_name("isobench");
            c = t;
        }
        c
    }

    /// The `--dsn` an `isobench run` gets for this server: the superuser
    /// over the Unix socket, database `postgres` (isobench makes its own
    /// per-run databases from there).
    pub fn dsn(&self) -> String {
        format!(
            "host={} port={} user={SUPERUSER} password={} dbname=postgres",
            self.server.socket_dir().display(),
            self.server.port(),
            self.server.password()
        )
    }

    /// Runs SQL on the admin connection (database `postgres`).
    pub fn exec(&self, sql: &str) {
        self.rt
            .block_on(self.admin.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Runs pgbench against `db` with `args`; `isolation` sets the
    /// sessions' default_transaction_isolation. Panics when it fails.
    pub fn pgbench(&self, db: &str, isolation: Option<Isolation>, args: &[&str]) -> PgbenchRun {
        let cpu0 = children_cpu_s();
        let mut cmd = Command::new(&self.pgbench);
        if let Some(level) = isolation {
            cmd.env(
                "PGOPTIONS",
                format!(
                    "-c default_transaction_isolation={}",
                    level.sql().to_lowercase().replace(' ', "\\ ")
                ),
            );
        }
        let host = if tcp() {
            cmd.env("PGPASSWORD", self.server.password());
            "127.0.0.1".to_string()
        } else {
            self.server.socket_dir().to_str().unwrap().to_string()
        };
        let out = cmd
            .args(["-h", &host])
            .args(["-p", &self.server.port().to_string(), "-U", SUPERUSER])
            .args(args)
            .arg(db)
            .output()
            .expect("run pgbench");
        let cpu_s = children_cpu_s() - cpu0;
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "pgbench {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PgbenchRun {
            cpu_s,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            ..PgbenchRun::parse(&text)
        }
    }

    /// `pgbench -i -q -s scale` into `db` (created if missing).
    pub fn pgbench_init(&self, db: &str, scale: u32) -> PgbenchRun {
        if db != "postgres" {
            self.exec(&format!("DROP DATABASE IF EXISTS {db}"));
            self.exec(&format!("CREATE DATABASE {db}"));
        }
        self.pgbench(db, None, &["-i", "-q", "-s", &scale.to_string()])
    }

    /// Replaces database `name` with a fresh copy of `template`, then a
    /// checkpoint, so every run starts from the same data and no run pays
    /// for another's dirty buffers.
    pub fn fresh_copy(&self, template: &str, name: &str) {
        self.exec(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
        self.exec(&format!(
            "CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY"
        ));
        self.exec("CHECKPOINT");
    }
}

/// Client backend states and wait events seen by a `pg_stat_activity`
/// sampler: how each backend of the measured database spent its time.
#[derive(Debug, Clone, Default)]
pub struct Activity {
    pub samples: u64,
    /// Backend-samples by state (`active`, `idle in transaction`, `idle`).
    pub states: BTreeMap<String, u64>,
    /// Backend-samples of active backends by `type:event` (`CPU` when none).
    pub waits: BTreeMap<String, u64>,
}

impl Activity {
    /// Share of backend-samples in `state`, %.
    pub fn state_pct(&self, state: &str) -> f64 {
        let total: u64 = self.states.values().sum();
        100.0 * *self.states.get(state).unwrap_or(&0) as f64 / total.max(1) as f64
    }

    /// The `n` most frequent wait events with their share of active samples.
    pub fn top_waits(&self, n: usize) -> String {
        let total: u64 = self.waits.values().sum();
        let mut v: Vec<_> = self.waits.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        v.iter()
            .take(n)
            .map(|(k, c)| format!("{k} {:.0}%", 100.0 * **c as f64 / total.max(1) as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Samples `pg_stat_activity` for the client backends of `db` every
/// `every` on its own thread until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Activity>,
}

impl Sampler {
    pub fn start(config: tokio_postgres::Config, db: &str, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let db = db.to_string();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let conn = postgres::connect(&config)
                    .await
                    .expect("sampler connection");
                let q = conn
                    .prepare(
                        "SELECT state, coalesce(wait_event_type || ':' || wait_event, 'CPU')
                         FROM pg_stat_activity
                         WHERE datname = $1 AND backend_type = 'client backend'
                           AND pid <> pg_backend_pid()",
                    )
                    .await
                    .unwrap();
                let mut a = Activity::default();
                while !flag.load(Ordering::Relaxed) {
                    if let Ok(rows) = conn.query(&q, &[&db]).await {
                        a.samples += 1;
                        for r in rows {
                            let state: Option<String> = r.get(0);
                            let state = state.unwrap_or_default();
                            if state == "active" {
                                *a.waits.entry(r.get(1)).or_default() += 1;
                            }
                            *a.states.entry(state).or_default() += 1;
                        }
                    }
                    tokio::time::sleep(every).await;
                }
                a
            })
        });
        Sampler { stop, thread }
    }

    pub fn finish(self) -> Activity {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler thread")
    }
}

/// Geometric mean, median, min and max of ratios.
pub fn summary(ratios: &[f64]) -> (f64, f64, f64, f64) {
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    let mut s = ratios.to_vec();
    s.sort_by(f64::total_cmp);
    let median = if s.is_empty() {
        f64::NAN
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        (s[s.len() / 2 - 1] + s[s.len() / 2]) / 2.0
    };
    (
        geo,
        median,
        s.first().copied().unwrap_or(f64::NAN),
        s.last().copied().unwrap_or(f64::NAN),
    )
}
