//! Command-line flags (clap derive), turned into plain config structs.
//! No clap type leaves this module.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::model::LoadFormat;
use crate::model::{
    AnomaliesConfig, Backoff, ExperimentConfig, ExternalLoad, Isolation, ObserveLevel, OnError,
    Order, PgBuild, RetryPolicy, TargetConfig, parse_duration,
};

/// isobench: what transaction isolation costs and buys on PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "isobench", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure: run the experiment and write a results directory.
    Run(Box<RunArgs>),
    /// Re-render the reports of a results directory from its store, without re-running.
    Report(ReportArgs),
    /// A/B of two results directories, cell by cell (benchstat style): TPS and p99 with confidence intervals, Welch's test and a verdict.
    Compare {
        /// The A side (e.g. the original server build).
        a: PathBuf,
        /// The B side (e.g. the patched build).
        b: PathBuf,
    },
    /// Observe a server under someone else's load: pg_stat_database every sample interval, wait events and SIRead locks every second; writes monitor.json and monitor.md.
    Monitor(MonitorArgs),
    /// Which isolation anomalies each level prevents, and how: runs every
    /// probe (Hermitage-style interleavings) at every level and prints the
    /// matrix. Exit status 3 when a result differs from a probe's @expect.
    Anomalies(Box<AnomaliesArgs>),
    /// Check list-append histories for isolation anomalies (Elle-style): isobench's own (histories/run-N.jsonl.gz of a results directory) or Jepsen/Elle JSON (one operation per line, or an array). Exit status 3 when any anomaly is found.
    CheckHistory {
        /// History files, gzip-compressed or not.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// List the built-in workloads, or show one in detail.
    Workloads {
        /// A workload name, e.g. smallbank.
        name: Option<String>,
    },
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration(s)
}

fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!("'{s}' must be longer than 0s"));
    }
    Ok(d)
}

fn sample_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(100) {
        return Err(format!("'{s}' is shorter than the 100ms minimum"));
    }
    Ok(d)
}

fn workload(s: &str) -> Result<String, String> {
    if crate::workload::spec(s).is_some() {
        Ok(s.to_string())
    } else {
        let known: Vec<&str> = crate::workload::REGISTRY.iter().map(|s| s.name).collect();
        Err(format!(
            "unknown workload '{s}' (built-in: {}; see `isobench workloads`)",
            known.join(", ")
        ))
    }
}

fn setting(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "'{s}' is not name=value (e.g. --set shared_buffers=256MB)"
        )),
    }
}

/// `-D NAME=VALUE`: NAME must be a pgbench variable name.
fn define(s: &str) -> Result<(String, String), String> {
    let (k, v) = setting(s)?;
    crate::pgbench::script::check_variable_name(&k)?;
    Ok((k, v))
}

fn param(s: &str) -> Result<(String, Vec<String>), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok((
            k.trim().to_string(),
            v.split(',').map(|x| x.trim().to_string()).collect(),
        )),
        _ => Err(format!(
            "'{s}' is not NAME=VALUE[,VALUE...] (e.g. --param rows=10,100)"
        )),
    }
}

fn weighted(s: &str) -> Result<(String, u32), String> {
    crate::pgbench::script::split_weight(s).map(|(n, w)| (n.to_string(), w))
}

/// A `--fault KIND@TIME` value.
fn fault(s: &str) -> Result<crate::model::FaultSpec, String> {
    s.parse()
        .map_err(|e: crate::model::FaultSpecError| e.to_string())
}

/// A `--fault-plan` value: `none` or `KIND@TIME+KIND@TIME...`.
fn fault_plan(s: &str) -> Result<crate::model::FaultPlan, String> {
    s.parse()
        .map_err(|e: crate::model::FaultSpecError| e.to_string())
}

fn rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 => Ok(r),
        _ => Err(format!(
            "'{s}' is not a rate; give transactions per second > 0, e.g. 500"
        )),
    }
}

fn sqlstate(s: &str) -> Result<String, String> {
    let s = s.trim().to_ascii_uppercase();
    if crate::model::sqlstate(&s).is_some() {
        Ok(s)
    } else {
        Err(format!("'{s}' is not a five-character SQLSTATE like 40001"))
    }
}

/// Flags of `isobench run`. With none, a default study: TPC-B at scale 10,
/// rc/rr/ser, 16 clients, 3 x 10 s after 2 s of warm-up, on a managed server.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// An experiment file (TOML) with the study's factors and settings; flags override it.
    #[arg(value_name = "STUDY.toml")]
    pub file: Option<PathBuf>,
    /// Continue the interrupted experiment in DIR, skipping its completed runs.
    #[arg(long, value_name = "DIR", conflicts_with = "file")]
    pub resume: Option<PathBuf>,
    /// Built-in workload (see `isobench workloads`).
    #[arg(long, short = 'w', default_value = "tpcb", value_parser = workload)]
    pub workload: String,
    /// Scale factors (default: the workload's; TPC-B: 100000 accounts per unit), e.g. 1,10.
    #[arg(long, short = 's', value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub scale: Vec<u32>,
    /// Isolation levels to compare: read-committed|rc, repeatable-read|rr, serializable|ser (default: rc,rr,ser; with --load-cmd: rc).
    #[arg(long, value_delimiter = ',')]
    pub isolation: Vec<Isolation>,
    /// Concurrency-control strategies to compare, e.g. optimistic,locking (default: the workload's first).
    #[arg(long, value_delimiter = ',')]
    pub strategy: Vec<String>,
    /// Workload parameter as a factor, repeatable: --param rows=10,100,1000.
    #[arg(long = "param", value_name = "NAME=V1,V2", value_parser = param)]
    pub params: Vec<(String, Vec<String>)>,
    /// Client counts to sweep, e.g. 1,16.
    #[arg(long, short = 'c', value_delimiter = ',', default_value = "16",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub clients: Vec<u32>,
    /// Connection pool sizes to sweep: clients share this many connections and wait for a free one (default: a connection per client).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub pool_size: Vec<u32>,
    /// Open loop: target total rates in tx/s with Poisson arrivals, e.g. 200,400 (default: closed loop).
    #[arg(long, short = 'R', value_delimiter = ',', value_parser = rate)]
    pub rate: Vec<f64>,
    /// Open loop: skip transactions already later than this, count slower commits as late (like pgbench -L).
    #[arg(long, value_parser = positive_duration, allow_hyphen_values = true)]
    pub latency_limit: Option<Duration>,
    /// Inject a fault into every run, repeatable: KIND@TIME from the start of the measured window; KIND: terminate (pg_terminate_backend of the clients), kill-backend (SIGKILL one client backend: crash and recovery), restart (fast shutdown and start), crash (immediate shutdown and start: crash recovery), pause:DURATION (SIGSTOP the server's processes, SIGCONT after DURATION); all but terminate need the managed server. E.g. terminate@2s, pause:1s@2s.
    #[arg(long = "fault", value_name = "KIND@TIME", value_parser = fault)]
    pub faults: Vec<crate::model::FaultSpec>,
    /// The fault as a factor: each cell runs one plan, comma-separated: none, or faults (as --fault) joined by +, e.g. none,crash@2s,pause:1s@1s+restart@3s.
    #[arg(long = "fault-plan", value_name = "PLAN", value_delimiter = ',', value_parser = fault_plan)]
    pub fault_plans: Vec<crate::model::FaultPlan>,
    /// Leave runs that had faults (lost connections, a crashed server) out of the statistics; by default they count and are marked.
    #[arg(long)]
    pub exclude_faulted: bool,
    /// Run order: interleaved (repetition by repetition) or random (each repetition shuffled, seeded).
    #[arg(long, default_value = "interleaved")]
    pub order: Order,
    /// The baseline cell of "% vs baseline", e.g. 'isolation=rc,clients=16' (default: first isolation level and strategy, other factors equal).
    #[arg(long, value_name = "FACTOR=VALUE,...")]
    pub baseline: Option<String>,
    /// Repetitions of every cell (interleaved).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Measured time of each run, e.g. 10s, 500ms, 2m.
    #[arg(long, short = 'T', default_value = "10s", value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Duration,
    /// Warm-up before each run's measured time (discarded).
    #[arg(long, default_value = "2s", value_parser = duration, allow_hyphen_values = true)]
    pub warmup: Duration,
    /// How long to wait for a server that went away (crash, restart, failover) to accept connections again; then a managed server is restarted, and with an external one the study stops, keeping what it measured.
    #[arg(long, default_value = "60s", value_parser = positive_duration, allow_hyphen_values = true)]
    pub server_wait: Duration,
    /// Tries per transaction including the first (1 = no retries).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tries: u32,
    /// SQLSTATEs that are retried, e.g. 40001,40P01,55P03.
    #[arg(long, value_delimiter = ',', default_value = "40001,40P01", value_parser = sqlstate)]
    pub retry_on: Vec<String>,
    /// Wait before a retry: none, exp (1ms..100ms full jitter), or exp:BASE:MAX.
    #[arg(long, default_value = "none")]
    pub backoff: Backoff,
    /// OS threads driving the clients, like pgbench -j (default: one per 16 clients, at most the CPU count).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// pg_stat_database sampling interval.
    #[arg(long, default_value = "5s", value_parser = sample_interval, allow_hyphen_values = true)]
    pub sample_interval: Duration,
    /// Server observations during each run: none, light (plans, pg_stat_database) or full (also wait events and SIRead locks every second).
    #[arg(long, default_value = "full")]
    pub observe: ObserveLevel,
    /// Seed of the input generators (default: random, recorded in results); pgbench's --random-seed.
    #[arg(long, alias = "random-seed")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The managed server's binaries (initdb, postgres) as DIR or NAME=DIR; repeat it for several builds, a factor that reports show by NAME.
    #[arg(long, value_name = "[NAME=]DIR", value_parser = pg_build)]
    pub pg_bin: Vec<PgBuild>,
    /// Results directory (default results/<timestamp>).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No live progress and no summary table.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Exit with status 3 when any invariant is violated (anomalies > 0).
    #[arg(long)]
    pub fail_on_violation: bool,
    /// External load instead of a workload: a command run once per run, with placeholders like {clients}, {pool_size}, {isolation}, {duration_s}, {dsn} (see `isobench run --help` and the README).
    #[arg(
        long,
        value_name = "CMD",
        conflicts_with = "workload",
        value_parser = template,
        help_heading = "External load"
    )]
    pub load_cmd: Option<String>,
    /// Run once per server into the database the runs copy, e.g. 'pgbench -i -s {scale}'.
    #[arg(long, value_name = "CMD", value_parser = template, help_heading = "External load")]
    pub setup_cmd: Option<String>,
    /// Run before each run's load (e.g. start the application); what it leaves running is stopped after the run.
    #[arg(long, value_name = "CMD", value_parser = template, help_heading = "External load")]
    pub before_run: Option<String>,
    /// Run after each run's load, also after a failed or interrupted one.
    #[arg(long, value_name = "CMD", value_parser = template, help_heading = "External load")]
    pub after_run: Option<String>,
    /// Before the load: poll this http:// URL until it answers 2xx/3xx, or this command until it exits 0.
    #[arg(long, value_name = "URL|CMD", value_parser = template, help_heading = "External load")]
    pub ready: Option<String>,
    /// How long the readiness check may take.
    #[arg(long, default_value = "60s", value_parser = positive_duration, allow_hyphen_values = true, help_heading = "External load")]
    pub ready_timeout: Duration,
    /// How to read the load's output: auto (by program name), autocannon (-j JSON), pgbench (summary), command (exit code and time only).
    #[arg(long, default_value = "auto", help_heading = "External load")]
    pub load_format: LoadFormat,
    /// When a command fails or its output does not parse: stop the study, or continue with the next run.
    #[arg(long, default_value = "stop", help_heading = "External load")]
    pub on_error: OnError,
    /// A pgbench script file, optionally weighted (like pgbench -f); repeatable.
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]", value_parser = weighted, help_heading = "pgbench scripts")]
    pub script_files: Vec<(String, u32)>,
    /// A pgbench built-in script: tpcb-like, simple-update, select-only, optionally weighted (like pgbench -b); repeatable.
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@WEIGHT]", value_parser = weighted, help_heading = "pgbench scripts")]
    pub builtins: Vec<(String, u32)>,
    /// A script variable every client starts with (like pgbench -D); repeatable.
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE", value_parser = define, help_heading = "pgbench scripts")]
    pub defines: Vec<(String, String)>,
    /// How scripts send SQL: simple, extended or prepared (like pgbench -M).
    #[arg(
        short = 'M',
        long = "protocol",
        default_value = "prepared",
        help_heading = "pgbench scripts"
    )]
    pub protocol: crate::model::QueryMode,
    /// SQL run once into the template database for the scripts, instead of pgbench's tables.
    #[arg(long, value_name = "FILE", help_heading = "pgbench scripts")]
    pub init_sql: Option<PathBuf>,
    /// Stop the load command after this long (default: no limit).
    #[arg(long, value_parser = positive_duration, allow_hyphen_values = true, help_heading = "External load")]
    pub load_timeout: Option<Duration>,
}

/// Flags of `isobench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A directory written by `isobench run`.
    pub dir: PathBuf,
    /// Formats to write: md (report.md), html (report.html), json (results.json, cells.json), csv (runs.csv, cells.csv).
    #[arg(long, value_delimiter = ',', default_value = "md,html,json,csv")]
    pub format: Vec<crate::report::files::Format>,
    /// The baseline cell of "% vs baseline", e.g. 'isolation=rc,clients=16' (default: the experiment's).
    #[arg(long, value_name = "FACTOR=VALUE,...")]
    pub baseline: Option<String>,
}

/// Flags of `isobench monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// The server, as a libpq URL or key=value string (password never printed).
    #[arg(long, env = "ISOBENCH_DSN", hide_env_values = true)]
    pub dsn: Option<String>,
    /// The server from the libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
    #[arg(long, conflicts_with = "dsn")]
    pub external: bool,
    /// The database to observe (default: the DSN's).
    #[arg(long)]
    pub database: Option<String>,
    /// pg_stat_database sampling interval.
    #[arg(long, default_value = "5s", value_parser = sample_interval, allow_hyphen_values = true)]
    pub sample_interval: Duration,
    /// How long to observe (default: until Ctrl-C).
    #[arg(long, short = 'T', value_parser = positive_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// Results directory (default results/monitor-<timestamp>).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress line and no summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl MonitorArgs {
    /// The plain configuration.
    pub fn into_config(self) -> crate::monitor::MonitorConfig {
        crate::monitor::MonitorConfig {
            target: TargetConfig {
                dsn: self.dsn,
                external_from_env: self.external,
                ..TargetConfig::default()
            },
            database: self.database,
            sample_interval: self.sample_interval,
            duration: self.duration,
            out: self.out,
            quiet: self.quiet,
        }
    }
}

/// Flags of `isobench anomalies`.
#[derive(Debug, Args)]
pub struct AnomaliesArgs {
    /// Isolation levels (the matrix's columns): read-committed|rc, repeatable-read|rr, serializable|ser.
    #[arg(long, value_delimiter = ',', default_value = "rc,rr,ser")]
    pub isolation: Vec<Isolation>,
    /// A built-in probe (e.g. G2-item) or a probe file in isolation-tester spec syntax; repeatable (default: every built-in probe).
    #[arg(long = "probe", value_name = "NAME|FILE")]
    pub probes: Vec<String>,
    /// A PostgreSQL isolation-tester spec to run unchanged, writing isolationtester's output to DIR/NAME.out; repeatable; a directory of specs or an isolation_schedule file also.
    #[arg(long = "spec", value_name = "FILE|DIR", conflicts_with_all = ["probes", "list"])]
    pub specs: Vec<PathBuf>,
    /// With --spec: compare each NAME.out with DIR/NAME.out and exit 3 on any difference.
    #[arg(long, value_name = "DIR", requires = "specs")]
    pub expected: Option<PathBuf>,
    /// With --spec: the most permutations a spec without `permutation` lines may expand to.
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "specs")]
    pub max_permutations: u64,
    /// How long a step may run, or wait on a lock, before the probe is reported stuck (with --spec: cancelled, and the spec given up after twice this).
    #[arg(long, default_value = "5s", value_parser = positive_duration, allow_hyphen_values = true)]
    pub step_timeout: Duration,
    /// List the built-in probes and exit.
    #[arg(long)]
    pub list: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Directory with the managed server's binaries (initdb, postgres).
    #[arg(long, value_name = "[NAME=]DIR", value_parser = pg_build)]
    pub pg_bin: Option<PgBuild>,
    /// Results directory for anomalies.md and anomalies.json (default results/anomalies-<timestamp>).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress and no matrix on stdout (mismatches still go to stderr).
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl AnomaliesArgs {
    /// The plain configuration.
    pub fn into_config(self) -> AnomaliesConfig {
        AnomaliesConfig {
            levels: dedup(self.isolation),
            probes: self.probes,
            step_timeout: self.step_timeout,
            target: TargetConfig {
                pg_bin: self.pg_bin,
                ..self.target.into_config()
            },
            out: self.out,
            quiet: self.quiet,
        }
    }
}

/// Which server: a managed one (default) or an external one. Shared by
/// `run` and `anomalies`.
#[derive(Debug, Args)]
pub struct TargetArgs {
    /// External server as a libpq URL or key=value string (password never printed).
    #[arg(long, env = "ISOBENCH_DSN", hide_env_values = true)]
    pub dsn: Option<String>,
    /// External server from the libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
    #[arg(long, conflicts_with = "dsn")]
    pub external: bool,
    /// Managed server setting, repeatable: --set shared_buffers=256MB.
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = setting)]
    pub settings: Vec<(String, String)>,
    /// OS user that runs the managed server when isobench runs as root.
    #[arg(long, default_value = "postgres")]
    pub server_user: String,
}

impl TargetArgs {
    /// The plain target configuration.
    pub fn into_config(self) -> TargetConfig {
        TargetConfig {
            dsn: self.dsn,
            external_from_env: self.external,
            pg_bin: None,
            settings: self.settings,
            server_user: self.server_user,
        }
    }
}

impl Default for RunArgs {
    fn default() -> Self {
        match Cli::parse_from(["isobench", "run"]).command {
            Some(Command::Run(args)) => *args,
            _ => unreachable!("`isobench run` parses to Run"),
        }
    }
}

impl RunArgs {
    /// The plain experiment configuration.
    pub fn into_config(self) -> ExperimentConfig {
        // One `--pg-bin` is the server, several are a factor.
        let mut builds = dedup(self.pg_bin);
        let (server_build, pg_bin) = if builds.len() == 1 {
            (builds.pop(), Vec::new())
        } else {
            (None, builds)
        };
        ExperimentConfig {
            workload: self.workload,
            load: ExternalLoad {
                cmd: self.load_cmd,
                setup: self.setup_cmd,
                before_run: self.before_run,
                after_run: self.after_run,
                ready: self.ready,
                ready_timeout: self.ready_timeout,
                format: self.load_format,
                on_error: self.on_error,
                timeout_ms: self.load_timeout.map(|d| d.as_secs_f64() * 1000.0),
            },
            scripts: crate::model::ScriptsConfig {
                files: self
                    .script_files
                    .into_iter()
                    .map(|(f, w)| (PathBuf::from(f), w))
                    .collect(),
                builtins: self.builtins,
                defines: self.defines,
                mode: self.protocol,
                init_sql: self.init_sql,
                workload_named: false,
            },
            scale: dedup(self.scale),
            isolation: dedup(self.isolation),
            strategies: dedup(
                self.strategy
                    .into_iter()
                    .map(|s| s.trim().to_string())
                    .collect(),
            ),
            params: self
                .params
                .into_iter()
                .map(|(k, v)| (k, dedup(v)))
                .collect(),
            clients: dedup(self.clients),
            pool_size: dedup(self.pool_size),
            rate: dedup(self.rate),
            latency_limit: self.latency_limit,
            faults: self.faults,
            fault_plans: dedup(self.fault_plans),
            exclude_faulted: self.exclude_faulted,
            max_tries: Vec::new(),
            setting_factors: Vec::new(),
            pg_bin,
            order: self.order,
            baseline: self.baseline,
            file: self.file,
            resume: self.resume,
            repeat: self.repeat,
            duration: self.duration,
            warmup: self.warmup,
            server_wait: self.server_wait,
            retry: RetryPolicy {
                max_tries: self.max_tries,
                retry_on: dedup(self.retry_on),
                backoff: self.backoff,
            },
            threads: self.threads.map(|t| t as usize),
            sample_interval: self.sample_interval,
            observe: self.observe,
            seed: self.seed.unwrap_or_else(rand::random),
            target: TargetConfig {
                pg_bin: server_build,
                ..self.target.into_config()
            },
            out: self.out,
            quiet: self.quiet,
            fail_on_violation: self.fail_on_violation,
        }
    }
}

impl RunArgs {
    /// The experiment: the defaults, then the experiment file (if any),
    /// then the flags in `given` (the ids of the flags given on the command
    /// line or by environment, see [`given_ids`]); with `--resume`, the
    /// study recorded in the results directory.
    ///
    /// Errors: the experiment file's ([`crate::study::StudyError`], with
    /// line and column), a flag that `--resume` cannot take, one
    /// `--pg-bin` name given to two directories.
    pub fn into_study(self, given: &[String]) -> Result<ExperimentConfig, String> {
        crate::model::dedup_builds(self.pg_bin.clone()).map_err(|e| format!("--pg-bin: {e}"))?;
        if let Some(dir) = self.resume.clone() {
            let allowed = [
                "resume",
                "quiet",
                "fail_on_violation",
                "observe",
                "dsn",
                "external",
                "server_user",
                "pg_bin",
            ];
            if let Some(bad) = given.iter().find(|g| !allowed.contains(&g.as_str())) {
                return Err(format!(
                    "--resume continues the study recorded in {}; --{} cannot change it \
                     (only --quiet, --fail-on-violation and the server flags are allowed)",
                    dir.display(),
                    bad.replace('_', "-")
                ));
            }
            let cli = self.into_config();
            return crate::study::resume(&dir, &cli, given)
                .map(ExperimentConfig::resolve)
                .map_err(|e| e.to_string());
        }
        let Some(path) = self.file.clone() else {
            let mut cfg = self.into_config();
            cfg.scripts.workload_named = given.iter().any(|g| g == "workload");
            return Ok(cfg.resolve());
        };
        let base = RunArgs::default().into_config();
        let mut cfg = crate::study::load(&path, base).map_err(|e| e.to_string())?;
        let cli = self.into_config();
        for id in given {
            match id.as_str() {
                "workload" => {
                    // A workload on the command line replaces the file's
                    // external load.
                    cfg.workload = cli.workload.clone();
                    cfg.scripts.workload_named = true;
                    cfg.load = ExternalLoad::default();
                }
                "load_cmd" => cfg.load.cmd = cli.load.cmd.clone(),
                "setup_cmd" => cfg.load.setup = cli.load.setup.clone(),
                "before_run" => cfg.load.before_run = cli.load.before_run.clone(),
                "after_run" => cfg.load.after_run = cli.load.after_run.clone(),
                "ready" => cfg.load.ready = cli.load.ready.clone(),
                "ready_timeout" => cfg.load.ready_timeout = cli.load.ready_timeout,
                "load_format" => cfg.load.format = cli.load.format,
                "on_error" => cfg.load.on_error = cli.load.on_error,
                "load_timeout" => cfg.load.timeout_ms = cli.load.timeout_ms,
                "script_files" => cfg.scripts.files = cli.scripts.files.clone(),
                "builtins" => cfg.scripts.builtins = cli.scripts.builtins.clone(),
                "defines" => cfg.scripts.defines = cli.scripts.defines.clone(),
                "protocol" => cfg.scripts.mode = cli.scripts.mode,
                "init_sql" => cfg.scripts.init_sql = cli.scripts.init_sql.clone(),
                "scale" => cfg.scale = cli.scale.clone(),
                "isolation" => cfg.isolation = cli.isolation.clone(),
                "strategy" => cfg.strategies = cli.strategies.clone(),
                "clients" => cfg.clients = cli.clients.clone(),
                "pool_size" => cfg.pool_size = cli.pool_size.clone(),
                "rate" => cfg.rate = cli.rate.clone(),
                "latency_limit" => cfg.latency_limit = cli.latency_limit,
                "faults" => cfg.faults = cli.faults.clone(),
                "fault_plans" => cfg.fault_plans = cli.fault_plans.clone(),
                "exclude_faulted" => cfg.exclude_faulted = cli.exclude_faulted,
                "repeat" => cfg.repeat = cli.repeat,
                "duration" => cfg.duration = cli.duration,
                "warmup" => cfg.warmup = cli.warmup,
                "server_wait" => cfg.server_wait = cli.server_wait,
                "max_tries" => {
                    cfg.retry.max_tries = cli.retry.max_tries;
                    cfg.max_tries.clear();
                }
                "retry_on" => cfg.retry.retry_on = cli.retry.retry_on.clone(),
                "backoff" => cfg.retry.backoff = cli.retry.backoff,
                "threads" => cfg.threads = cli.threads,
                "sample_interval" => cfg.sample_interval = cli.sample_interval,
                "observe" => cfg.observe = cli.observe,
                "seed" => cfg.seed = cli.seed,
                "order" => cfg.order = cli.order,
                "baseline" => cfg.baseline = cli.baseline.clone(),
                "dsn" => cfg.target.dsn = cli.target.dsn.clone(),
                "external" => cfg.target.external_from_env = cli.target.external_from_env,
                "pg_bin" => {
                    cfg.target.pg_bin = cli.target.pg_bin.clone();
                    cfg.pg_bin = cli.pg_bin.clone();
                }
                "server_user" => cfg.target.server_user = cli.target.server_user.clone(),
                "out" => cfg.out = cli.out.clone(),
                "quiet" => cfg.quiet = cli.quiet,
                "fail_on_violation" => cfg.fail_on_violation = cli.fail_on_violation,
                "settings" => {
                    for (k, v) in &cli.target.settings {
                        cfg.target.settings.retain(|(n, _)| n != k);
                        cfg.setting_factors.retain(|(n, _)| n != k);
                        cfg.target.settings.push((k.clone(), v.clone()));
                    }
                }
                "params" => {
                    for (k, v) in &cli.params {
                        cfg.params.retain(|(n, _)| n != k);
                        cfg.params.push((k.clone(), v.clone()));
                    }
                }
                // The experiment file itself.
                "file" => {}
                other => {
                    // Every flag has a rule above (a test walks them all).
                    return Err(format!(
                        "--{}: not applied over an experiment file (a bug: please report it)",
                        other.replace('_', "-")
                    ));
                }
            }
        }
        Ok(cfg.resolve())
    }
}

/// The ids of the arguments in `m` that the user gave (on the command
/// line or through an environment variable), not defaults.
pub fn given_ids(m: &clap::ArgMatches) -> Vec<String> {
    use clap::parser::ValueSource;
    m.ids()
        // Groups (clap names them after the flattened structs, e.g.
        // `TargetArgs`) are not flags.
        .filter(|id| !id.as_str().starts_with(|c: char| c.is_ascii_uppercase()))
        .filter(|id| {
            matches!(
                m.value_source(id.as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            )
        })
        .map(|id| id.as_str().to_string())
        .collect()
}

/// A command template (`--load-cmd` ...): its placeholders must be known,
/// as in an experiment file.
fn template(s: &str) -> Result<String, String> {
    crate::external::template::Template::parse("the command", s)?;
    Ok(s.to_string())
}

/// `--pg-bin [NAME=]DIR` ([`PgBuild::split_arg`]), checked by
/// [`crate::target::pg_build`] as an experiment file's `pg_bin` is.
fn pg_build(s: &str) -> Result<PgBuild, String> {
    let (name, dir) = PgBuild::split_arg(s);
    crate::target::pg_build(name, dir).map_err(|e| e.to_string())
}

fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<RunArgs, String> {
        let mut full = vec!["isobench", "run"];
        full.extend_from_slice(args);
        match Cli::try_parse_from(full) {
            Ok(Cli {
                command: Some(Command::Run(a)),
            }) => Ok(*a),
            Ok(_) => Err("not run".into()),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn defaults_are_the_default_study() {
        let c = RunArgs::default().into_config().resolve();
        assert_eq!(c.workload, "tpcb");
        assert!(!c.load.active());
        assert!(c.scale.is_empty());
        assert!(c.strategies.is_empty() && c.params.is_empty());
        assert_eq!(c.isolation, Isolation::ALL.to_vec());
        assert_eq!(c.clients, vec![16]);
        assert_eq!(c.repeat, 3);
        assert_eq!(c.duration, Duration::from_secs(10));
        assert_eq!(c.warmup, Duration::from_secs(2));
        assert_eq!(c.retry, RetryPolicy::default());
    }

    #[test]
    fn an_external_load_defaults_to_read_committed_and_conflicts_with_a_workload() {
        let a = parse(&[
            "--load-cmd",
            "pgbench -c {clients} {dsn}",
            "--on-error",
            "continue",
        ])
        .unwrap();
        let c = a
            .into_study(&["load_cmd".into(), "on_error".into()])
            .unwrap();
        assert_eq!(c.isolation, vec![Isolation::ReadCommitted]);
        assert_eq!(c.load.cmd.as_deref(), Some("pgbench -c {clients} {dsn}"));
        assert_eq!(c.load.on_error, OnError::Continue);
        assert_eq!(c.load.ready_timeout, Duration::from_secs(60));
        let e = parse(&["--load-cmd", "x", "--workload", "tpcb"]).unwrap_err();
        assert!(e.contains("--workload") && e.contains("--load-cmd"), "{e}");
        let e = parse(&["--load-format", "wrk"]).unwrap_err();
        assert!(e.contains("--load-format") && e.contains("wrk"), "{e}");
    }

    #[test]
    fn lists_and_durations() {
        let a = parse(&[
            "--isolation",
            "ser,rc",
            "--clients",
            "1,16,1",
            "--duration",
            "500ms",
        ])
        .unwrap();
        let c = a.into_config();
        assert_eq!(
            c.isolation,
            vec![Isolation::Serializable, Isolation::ReadCommitted]
        );
        assert_eq!(c.clients, vec![1, 16]);
        assert_eq!(c.duration, Duration::from_millis(500));
        let c = parse(&[
            "--param",
            "rows=10,100,10",
            "--param",
            "read-ratio=0.5",
            "--strategy",
            "locking,optimistic",
        ])
        .unwrap()
        .into_config();
        assert_eq!(
            c.params,
            vec![
                (
                    "rows".to_string(),
                    vec!["10".to_string(), "100".to_string()]
                ),
                ("read-ratio".to_string(), vec!["0.5".to_string()])
            ]
        );
        assert_eq!(c.strategies, vec!["locking", "optimistic"]);
    }

    #[test]
    fn bad_values_name_the_option() {
        for (args, option) in [
            (&["--clients", "0"][..], "--clients"),
            (&["--isolation", "bogus"][..], "--isolation"),
            (&["--duration", "-1s"][..], "--duration"),
            (&["--duration", "0s"][..], "--duration"),
            (&["--set", "noequals"][..], "--set"),
            (&["--retry-on", "4001"][..], "--retry-on"),
            (&["--backoff", "linear"][..], "--backoff"),
            (&["--param", "rows"][..], "--param"),
            (&["--workload", "nope"][..], "--workload"),
            (&["--pg-bin", "/nonexistent/bin"][..], "--pg-bin"),
        ] {
            let err = parse(args).unwrap_err();
            assert!(err.contains(option), "{args:?}: {err}");
        }
    }

    #[test]
    fn pg_bin_takes_named_builds() {
        let b = crate::target::find_bin_dir(None).unwrap();
        let b = b.to_str().unwrap();
        // One build, named or not, is the server; several are a factor.
        let c = study_of(&["--pg-bin", b]).unwrap();
        assert_eq!(c.target.pg_bin, Some(PgBuild::new(None, b).unwrap()));
        assert!(c.pg_bin.is_empty());
        let stock = format!("stock={b}");
        let c = study_of(&["--pg-bin", &stock]).unwrap();
        assert_eq!(c.target.pg_bin.unwrap().name.as_deref(), Some("stock"));
        let patched = format!("finer-lock={b}");
        let c = study_of(&["--pg-bin", &stock, "--pg-bin", &patched, "--pg-bin", b]).unwrap();
        assert_eq!(c.target.pg_bin, None);
        assert_eq!(
            c.pg_build_labels(),
            ["stock".to_string(), "finer-lock".into(), default_label(b)]
        );
        // Repeats (also spelt with a trailing /) are one build.
        let c = study_of(&["--pg-bin", &stock, "--pg-bin", &format!("stock={b}/")]).unwrap();
        assert_eq!(c.target.pg_bin.unwrap().name.as_deref(), Some("stock"));
        for (arg, needle) in [
            (format!("fin er={b}"), "build name 'fin er' is not a label"),
            (format!("a,b={b}"), "build name 'a,b' is not a label"),
            (format!("={b}"), "empty build name"),
            ("stock=".to_string(), "no directory given"),
            (
                "stock=/nonexistent/bin".into(),
                "/nonexistent/bin has no `postgres`",
            ),
            ("/tmp".into(), "/tmp has no `postgres`"),
        ] {
            let e = study_of(&["--pg-bin", &arg]).unwrap_err();
            assert!(e.contains("--pg-bin") && e.contains(needle), "{arg}: {e}");
        }
    }

    /// The label [`crate::model::build_labels`] derives for `dir` alone.
    fn default_label(dir: &str) -> String {
        crate::model::build_labels(&[PgBuild::new(None, dir).unwrap()]).remove(0)
    }

    #[test]
    fn one_name_for_two_builds_is_refused() {
        let b = crate::target::find_bin_dir(None).unwrap();
        let other = tempfile::tempdir().unwrap();
        for exe in ["postgres", "initdb"] {
            std::os::unix::fs::symlink(b.join(exe), other.path().join(exe)).unwrap();
        }
        let one = format!("stock={}", b.display());
        let two = format!("stock={}", other.path().display());
        let e = study_of(&["--pg-bin", &one, "--pg-bin", &two]).unwrap_err();
        assert_eq!(
            e,
            "--pg-bin: build name 'stock' is given twice; give each build its own name"
        );
    }

    /// Every `isobench run` flag, with a valid value on the command line and
    /// the same value as the experiment file's key of the same name (`--set`
    /// and `--param` take `[settings]` and `[params]` tables, `-D` a
    /// `[define]` table), and an invalid value for both when the flag takes
    /// one.
    /// (flag, its arguments, the file's key line, a bad value for each).
    type FlagKey = (
        &'static str,
        &'static [&'static str],
        &'static str,
        Option<(&'static str, &'static str)>,
    );

    const FLAG_KEYS: &[FlagKey] = &[
        (
            "workload",
            &["-w", "smallbank"],
            "workload = \"smallbank\"",
            Some(("nope", "\"nope\"")),
        ),
        (
            "scale",
            &["-s", "2,3"],
            "scale = [2, 3]",
            Some(("0", "[0]")),
        ),
        (
            "isolation",
            &["--isolation", "ser,rc"],
            "isolation = [\"ser\", \"rc\"]",
            Some(("bogus", "[\"bogus\"]")),
        ),
        (
            "strategy",
            &["--strategy", "optimistic"],
            "strategy = [\"optimistic\"]",
            Some(("locking", "[\"locking\"]")),
        ),
        (
            "param",
            &["--param", "variant=simple-update"],
            "[params]\nvariant = [\"simple-update\"]",
            Some(("rows=3", "rows = [3]")),
        ),
        (
            "clients",
            &["-c", "4,8"],
            "clients = [4, 8]",
            Some(("0", "[0]")),
        ),
        (
            "pool-size",
            &["--pool-size", "2"],
            "pool_size = [2]",
            Some(("0", "[0]")),
        ),
        ("rate", &["-R", "500"], "rate = [500]", Some(("-5", "[-5]"))),
        (
            "latency-limit",
            &["--latency-limit", "5ms"],
            "latency_limit = \"5ms\"",
            Some(("5 parsecs", "\"5 parsecs\"")),
        ),
        (
            "fault",
            &["--fault", "terminate@2s", "--fault", "kill-backend@1500ms"],
            "fault = [\"terminate@2s\", \"kill-backend@1500ms\"]",
            Some(("explode@2s", "[\"terminate\"]")),
        ),
        (
            "fault-plan",
            &["--fault-plan", "none,pause:1s@1s+crash@2s"],
            "fault_plan = [\"none\", \"pause:1s@1s+crash@2s\"]",
            Some(("crash@2s+explode@3s", "[\"crash@2s+explode@3s\"]")),
        ),
        (
            "order",
            &["--order", "random"],
            "order = \"random\"",
            Some(("sideways", "\"sideways\"")),
        ),
        (
            "baseline",
            &["--baseline", "isolation=ser"],
            "baseline = \"isolation=ser\"",
            None,
        ),
        ("repeat", &["--repeat", "5"], "repeat = 5", Some(("0", "0"))),
        (
            "duration",
            &["-T", "3s"],
            "duration = \"3s\"",
            Some(("0s", "\"0s\"")),
        ),
        (
            "server-wait",
            &["--server-wait", "5s"],
            "server_wait = \"5s\"",
            Some(("0s", "\"0s\"")),
        ),
        (
            "warmup",
            &["--warmup", "1s"],
            "warmup = \"1s\"",
            Some(("soon", "\"soon\"")),
        ),
        (
            "max-tries",
            &["--max-tries", "3"],
            "max_tries = 3",
            Some(("0", "0")),
        ),
        (
            "retry-on",
            &["--retry-on", "40001"],
            "retry_on = [\"40001\"]",
            Some(("4001", "[\"4001\"]")),
        ),
        (
            "backoff",
            &["--backoff", "exp"],
            "backoff = \"exp\"",
            Some(("linear", "\"linear\"")),
        ),
        ("threads", &["-j", "2"], "threads = 2", Some(("0", "0"))),
        (
            "sample-interval",
            &["--sample-interval", "1s"],
            "sample_interval = \"1s\"",
            Some(("often", "\"often\"")),
        ),
        (
            "observe",
            &["--observe", "light"],
            "observe = \"light\"",
            Some(("lots", "\"lots\"")),
        ),
        ("seed", &["--seed", "7"], "seed = 7", Some(("x", "\"x\""))),
        (
            "dsn",
            &["--dsn", "postgres://a@b/c"],
            "dsn = \"postgres://a@b/c\"",
            None,
        ),
        ("external", &["--external"], "external = true", None),
        (
            "pg-bin",
            &["--pg-bin", "PGBIN"],
            "pg_bin = \"PGBIN\"",
            Some(("/x/bin", "\"/x/bin\"")),
        ),
        (
            "pg-bin",
            &["--pg-bin", "stock=PGBIN"],
            "pg_bin = { stock = \"PGBIN\" }",
            Some(("fin er=PGBIN", "{ \"fin er\" = \"PGBIN\" }")),
        ),
        (
            "pg-bin",
            &["--pg-bin", "stock=PGBIN", "--pg-bin", "finer-lock=PGBIN"],
            "pg_bin = { stock = \"PGBIN\", finer-lock = \"PGBIN\" }",
            Some(("=PGBIN", "{ \"\" = \"PGBIN\" }")),
        ),
        (
            "set",
            &["--set", "work_mem=8MB"],
            "[settings]\nwork_mem = \"8MB\"",
            None,
        ),
        (
            "server-user",
            &["--server-user", "bob"],
            "server_user = \"bob\"",
            None,
        ),
        ("out", &["-o", "/x/out"], "out = \"/x/out\"", None),
        ("quiet", &["-q"], "quiet = true", None),
        (
            "exclude-faulted",
            &["--exclude-faulted"],
            "exclude_faulted = true",
            None,
        ),
        (
            "fail-on-violation",
            &["--fail-on-violation"],
            "fail_on_violation = true",
            None,
        ),
        (
            "load-cmd",
            &["--load-cmd", "pgbench {dsn}"],
            "load_cmd = \"pgbench {dsn}\"",
            Some(("pgbench {", "\"pgbench {\"")),
        ),
        (
            "setup-cmd",
            &["--setup-cmd", "true"],
            "setup_cmd = \"true\"",
            None,
        ),
        (
            "before-run",
            &["--before-run", "true"],
            "before_run = \"true\"",
            None,
        ),
        (
            "after-run",
            &["--after-run", "true"],
            "after_run = \"true\"",
            None,
        ),
        ("ready", &["--ready", "true"], "ready = \"true\"", None),
        (
            "ready-timeout",
            &["--ready-timeout", "5s"],
            "ready_timeout = \"5s\"",
            Some(("later", "\"later\"")),
        ),
        (
            "load-format",
            &["--load-format", "pgbench"],
            "load_format = \"pgbench\"",
            Some(("wrk", "\"wrk\"")),
        ),
        (
            "on-error",
            &["--on-error", "continue"],
            "on_error = \"continue\"",
            Some(("shrug", "\"shrug\"")),
        ),
        (
            "load-timeout",
            &["--load-timeout", "30s"],
            "load_timeout = \"30s\"",
            Some(("never", "\"never\"")),
        ),
        ("file", &["-f", "/x/a.sql"], "file = [\"/x/a.sql\"]", None),
        (
            "builtin",
            &["-b", "select-only"],
            "builtin = [\"select-only\"]",
            None,
        ),
        (
            "define",
            &["-D", "x=1"],
            "[define]\nx = \"1\"",
            Some(("1-x=3", "\"1-x\" = \"3\"")),
        ),
        (
            "protocol",
            &["-M", "simple"],
            "protocol = \"simple\"",
            Some(("carrier-pigeon", "\"carrier-pigeon\"")),
        ),
        (
            "init-sql",
            &["--init-sql", "/x/init.sql"],
            "init_sql = \"/x/init.sql\"",
            None,
        ),
    ];

    /// `isobench run ARGS` as the binary reads it: the study with the
    /// flags the user gave, checked as the experiment checks it before
    /// anything starts (workload strategies and parameters are checked
    /// when the cells are planned).
    fn study_of(args: &[&str]) -> Result<ExperimentConfig, String> {
        use clap::{CommandFactory, FromArgMatches};
        let mut full = vec!["isobench", "run"];
        full.extend_from_slice(args);
        let m = Cli::command()
            .try_get_matches_from(full)
            .map_err(|e| e.to_string())?;
        let given = given_ids(m.subcommand_matches("run").unwrap());
        let Some(Command::Run(a)) = Cli::from_arg_matches(&m).unwrap().command else {
            unreachable!()
        };
        let cfg = a.into_study(&given)?;
        crate::experiment::cells(&cfg).map_err(|e| e.to_string())?;
        Ok(cfg)
    }

    /// `cfg` without what differs by construction between the compared
    /// studies (the file it came from; the seed, random unless given).
    fn norm(mut cfg: ExperimentConfig, keep_seed: bool) -> String {
        cfg.file = None;
        if !keep_seed {
            cfg.seed = 0;
        }
        format!("{cfg:?}")
    }

    /// The key's line under its table header, when it has one.
    fn file_text(key_line: &str) -> String {
        match key_line.split_once('\n') {
            Some((header, line)) => format!("{header}\n{line}\n"),
            None => format!("{key_line}\n"),
        }
    }

    #[test]
    fn fault_flag_errors_name_the_option() {
        use clap::Parser;
        for (bad, needle) in [
            ("explode@2s", "'explode' is not a fault kind"),
            ("terminate", "'terminate' is not KIND@TIME"),
            ("terminate@soon", "'terminate@soon': bad time"),
        ] {
            let e = Cli::try_parse_from(["isobench", "run", "--fault", bad])
                .unwrap_err()
                .to_string();
            assert!(e.contains("--fault") && e.contains(needle), "{e}");
        }
    }

    #[test]
    fn every_flag_has_a_file_key_of_the_same_name_and_validation() {
        use clap::CommandFactory;
        let dir = tempfile::tempdir().unwrap();
        let run = Cli::command();
        let run = run.find_subcommand("run").unwrap();
        let flags: Vec<String> = run
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .filter(|l| !["help", "version", "resume"].contains(&l.as_str()))
            .collect();
        let listed: Vec<&str> = FLAG_KEYS.iter().map(|f| f.0).collect();
        for f in &flags {
            assert!(listed.contains(&f.as_str()), "--{f} has no row here");
        }
        // A real server build for `--pg-bin`/`pg_bin`.
        let pg_bin = crate::target::find_bin_dir(None).unwrap();
        let pg_bin = pg_bin.to_str().unwrap();
        for (i, (flag, args, key, bad)) in FLAG_KEYS.iter().enumerate() {
            let args: Vec<String> = args.iter().map(|a| a.replace("PGBIN", pg_bin)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let args = &args[..];
            let key = &key.replace("PGBIN", pg_bin);
            assert!(flags.iter().any(|f| f == flag), "--{flag} is not a flag");
            let name = match *flag {
                "set" => "[settings]".to_string(),
                "param" => "[params]".to_string(),
                "define" => "[define]".to_string(),
                f => f.replace('-', "_"),
            };
            assert!(
                key.starts_with(&name),
                "--{flag}: key `{key}` is not `{name}`"
            );
            let path = dir.path().join(format!("s{i}.toml"));
            std::fs::write(&path, file_text(key)).unwrap();
            let p = path.to_str().unwrap();
            let from_flag = study_of(args).unwrap_or_else(|e| panic!("--{flag}: {e}"));
            let from_file = study_of(&[p]).unwrap_or_else(|e| panic!("{key}: {e}"));
            let seed = *flag == "seed";
            assert_eq!(
                norm(from_flag.clone(), seed),
                norm(from_file, seed),
                "--{flag} and `{key}` give different studies"
            );
            // The flag over a file that sets nothing else: the same again,
            // so the merge of flags over files knows the flag.
            let other = dir.path().join(format!("o{i}.toml"));
            std::fs::write(&other, "seed = 99\n").unwrap();
            let mut over = vec![other.to_str().unwrap()];
            over.extend_from_slice(args);
            let merged = study_of(&over).unwrap_or_else(|e| panic!("--{flag} over a file: {e}"));
            if !seed {
                assert_eq!(merged.seed, 99, "--{flag} over a file lost the file's seed");
            }
            assert_eq!(
                norm(merged, seed),
                norm(from_flag, seed),
                "--{flag} given over an experiment file is not applied"
            );
            if let Some((bad_flag, bad_key)) = bad {
                let (bad_flag, bad_key) = (
                    bad_flag.replace("PGBIN", pg_bin),
                    bad_key.replace("PGBIN", pg_bin),
                );
                let mut bad_args: Vec<&str> = args.to_vec();
                *bad_args.last_mut().unwrap() = &bad_flag;
                assert!(
                    study_of(&bad_args).is_err(),
                    "--{flag} {bad_flag} is accepted"
                );
                let text = match key.split_once('\n') {
                    Some((header, _)) => format!("{header}\n{bad_key}\n"),
                    None => format!("{} = {bad_key}\n", key.split_once(" = ").unwrap().0),
                };
                std::fs::write(&path, &text).unwrap();
                assert!(study_of(&[p]).is_err(), "`{text}` is accepted");
            }
        }
    }
}
