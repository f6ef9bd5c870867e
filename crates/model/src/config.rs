//! Plain configuration types: what a study is, independent of how it
//! was given (CLI flags today, study files later). No clap types here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::build::{PgBuild, build_labels};
use super::faults::{FaultSchedule, FaultSpec};
use super::placement::{Calibration, CpuPlacement, Precision};

/// A transaction isolation level (PostgreSQL docs, "Transaction Isolation").
/// Parsed from `read-committed|rc`, `repeatable-read|rr`, `serializable|ser`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Isolation {
    pub const ALL: [Isolation; 3] = [
        Isolation::ReadCommitted,
        Isolation::RepeatableRead,
        Isolation::Serializable,
    ];

    /// The SQL spelling, e.g. `REPEATABLE READ`.
    pub fn sql(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }

    /// The stored name, e.g. `repeatable-read`.
    pub fn name(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "read-committed",
            Isolation::RepeatableRead => "repeatable-read",
            Isolation::Serializable => "serializable",
        }
    }

    /// The short name, e.g. `rr`.
    pub fn short(self) -> &'static str {
        match self {
            Isolation::ReadCommitted => "rc",
            Isolation::RepeatableRead => "rr",
            Isolation::Serializable => "ser",
        }
    }
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s
            .trim()
            .to_ascii_lowercase()
            .replace(['_', ' '], "-")
            .as_str()
        {
            "rc" | "read-committed" => Ok(Isolation::ReadCommitted),
            "rr" | "repeatable-read" => Ok(Isolation::RepeatableRead),
            "ser" | "serializable" => Ok(Isolation::Serializable),
            other => Err(format!(
                "unknown isolation level '{other}' (use read-committed|rc, repeatable-read|rr, serializable|ser)"
            )),
        }
    }
}

/// Wait between a failed attempt and its retry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Backoff {
    /// Retry at once, as pgbench does.
    None,
    /// "Full jitter" exponential backoff (AWS Architecture Blog, "Exponential
    /// Backoff and Jitter", 2015): before retry `n` (1-based) sleep a uniform
    /// random time in `[0, min(max, base * 2^(n-1))]`.
    Exponential {
        #[serde(with = "duration_ms")]
        base: Duration,
        #[serde(with = "duration_ms")]
        max: Duration,
    },
}

impl FromStr for Backoff {
    type Err = String;
    /// `none`, `exp` (base 1ms, max 100ms) or `exp:BASE:MAX` e.g. `exp:2ms:50ms`.
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let dur = |t: &str| parse_duration(t).map_err(|e| format!("backoff '{s}': {e}"));
        match parts.as_slice() {
            ["none"] => Ok(Backoff::None),
            ["exp"] | ["exponential"] => Ok(Backoff::Exponential {
                base: Duration::from_millis(1),
                max: Duration::from_millis(100),
            }),
            ["exp" | "exponential", base, max] => {
                let (base, max) = (dur(base)?, dur(max)?);
                if base.is_zero() || max < base {
                    return Err(format!("backoff '{s}': need 0 < BASE <= MAX"));
                }
                Ok(Backoff::Exponential { base, max })
            }
            _ => Err(format!(
                "unknown backoff '{s}' (use none, exp, or exp:BASE:MAX like exp:1ms:100ms)"
            )),
        }
    }
}

/// Which errors re-run a transaction, how often, and how long to wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts per transaction including the first (>= 1; 1 = no retries).
    pub max_tries: u32,
    /// Five-character SQLSTATEs that are retried (default 40001, 40P01).
    pub retry_on: Vec<String>,
    pub backoff: Backoff,
}

impl Default for RetryPolicy {
    /// 10 tries, no backoff, retrying serialization_failure (40001) and
    /// deadlock_detected (40P01). pgbench retries the same two SQLSTATEs but
    /// defaults to 1 try; with 1 try a SERIALIZABLE run reports failures
    /// that an application would simply retry, so its goodput would say
    /// little. 10 bounds the work one transaction can waste.
    fn default() -> Self {
        RetryPolicy {
            max_tries: 10,
            retry_on: vec!["40001".into(), "40P01".into()],
            backoff: Backoff::None,
        }
    }
}

/// The order runs execute in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// Repetition 1 of every cell, then repetition 2, ...
    #[default]
    Interleaved,
    /// Every repetition's cells shuffled (seeded by the study seed);
    /// repetitions still follow each other.
    Random,
}

impl FromStr for Order {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "interleaved" => Ok(Order::Interleaved),
            "random" | "randomized" => Ok(Order::Random),
            other => Err(format!(
                "unknown order '{other}' (use interleaved or random)"
            )),
        }
    }
}

/// How much isobench observes the server while a run measures (see
/// `observe`): every observation is a query on its own connection, so the
/// cheapest level that answers the question keeps the measurement clean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObserveLevel {
    /// No observer connection at all during the measured window.
    None,
    /// Plans at the start, `pg_stat_database` every sample interval.
    Light,
    /// Also wait events once a second and, under SERIALIZABLE, SIRead
    /// locks every sample interval.
    #[default]
    Full,
}

impl FromStr for ObserveLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "none" | "off" => Ok(ObserveLevel::None),
            "light" => Ok(ObserveLevel::Light),
            "full" => Ok(ObserveLevel::Full),
            other => Err(format!(
                "unknown observe level '{other}' (use none, light or full)"
            )),
        }
    }
}

/// How the clients of a run are spread over the hosts of a DSN with
/// several (`host=h1,h2`, `postgresql://h1:5432,h2:5433/db`):
/// `--host-policy`, study key `host_policy`
/// (docs/src/reference/clients-over-a-cluster.md). With one host every policy
/// is the same.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostPolicy {
    /// Client (or pool connection) `i` connects to host `i mod H`, and to
    /// the next hosts in turn if that one refuses.
    #[default]
    RoundRobin,
    /// Each client's host drawn from the run's seeded generator (the same
    /// hosts for the same seed), the next hosts in turn if it refuses.
    Random,
    /// libpq's order: every client connects to the first host that
    /// accepts (failover, no spreading).
    First,
}

impl HostPolicy {
    /// The name `--host-policy` takes.
    pub fn name(self) -> &'static str {
        match self {
            HostPolicy::RoundRobin => "round-robin",
            HostPolicy::Random => "random",
            HostPolicy::First => "first",
        }
    }
}

impl FromStr for HostPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "round-robin" | "roundrobin" | "rr" => Ok(HostPolicy::RoundRobin),
            "random" => Ok(HostPolicy::Random),
            "first" => Ok(HostPolicy::First),
            other => Err(format!(
                "unknown host policy '{other}' (use round-robin, random or first)"
            )),
        }
    }
}

/// Parses durations like `10s`, `500ms`, `1m30s`, or a bare number of
/// seconds. Negative or malformed values are errors.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.starts_with('-') {
        return Err(format!(
            "'{s}' is negative; durations are like 10s or 500ms"
        ));
    }
    if let Ok(secs) = t.parse::<f64>() {
        return Ok(Duration::from_secs_f64(secs));
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("'{s}' is not a duration ({e}); use e.g. 10s, 500ms, 2m"))
}

/// What a study does when an external load's command fails (`before_run`
/// or `load_cmd` exits non-zero, the readiness check times out, or the
/// output does not parse).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// Keep the failed run (incomplete) and stop the study with an error.
    #[default]
    Stop,
    /// Keep the failed run (incomplete, left out of the statistics) and go
    /// on with the next one.
    Continue,
}

impl FromStr for OnError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "stop" => Ok(OnError::Stop),
            "continue" => Ok(OnError::Continue),
            other => Err(format!("unknown on_error '{other}' (use stop or continue)")),
        }
    }
}

/// An external load: commands that drive the server instead of a built-in
/// workload (`crate::load_cmd`). The commands are templates with
/// `{name}` placeholders (`crate::load_cmd::template`), kept as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalLoad {
    /// The load, run once per run; the server is observed from its start
    /// to its end. `None`: a built-in workload drives the runs.
    pub cmd: Option<String>,
    /// Run once per server start (and per distinct rendering, e.g. per
    /// scale) into the template database the runs copy, e.g.
    /// `pgbench -i -s {scale}`.
    pub setup: Option<String>,
    /// Run before each run's load, e.g. to start the application with the
    /// run's pool size; processes it leaves running are stopped after
    /// `after_run`.
    pub before_run: Option<String>,
    /// Run after each run's load (also after a failed or interrupted one).
    pub after_run: Option<String>,
    /// A `http://` URL polled until it answers 2xx/3xx, or a command
    /// polled until it exits 0, before the load starts.
    pub ready: Option<String>,
    /// How long the readiness check may take.
    #[serde(with = "duration_ms")]
    pub ready_timeout: Duration,
    /// How the load's output is read.
    pub format: LoadFormat,
    pub on_error: OnError,
    /// The load command is stopped after this long, ms (`None`: never).
    pub timeout_ms: Option<f64>,
}

impl Default for ExternalLoad {
    fn default() -> Self {
        ExternalLoad {
            cmd: None,
            setup: None,
            before_run: None,
            after_run: None,
            ready: None,
            ready_timeout: Duration::from_secs(60),
            format: Default::default(),
            on_error: OnError::Stop,
            timeout_ms: None,
        }
    }
}

impl ExternalLoad {
    /// Whether a load command drives the runs.
    pub fn active(&self) -> bool {
        self.cmd.is_some()
    }

    /// The load command's time limit.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
    }
}

/// pgbench scripts that replace a built-in workload's transactions
/// (`-f`, `-b`, `-D`, `-M`, `--init-sql`), see `pgbench`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptsConfig {
    /// `-f FILE[@WEIGHT]`.
    pub files: Vec<(PathBuf, u32)>,
    /// `-b NAME[@WEIGHT]`: pgbench's built-in scripts.
    pub builtins: Vec<(String, u32)>,
    /// `-D NAME=VALUE`: variables every client starts with.
    pub defines: Vec<(String, String)>,
    /// `-M`: how SQL commands are sent.
    pub mode: QueryMode,
    /// `--init-sql FILE`: run once into the template database: instead of
    /// loading pgbench's tables, or after them when `workload_named`.
    pub init_sql: Option<PathBuf>,
    /// The built-in workload was named with the scripts (`-w tpcb`, or
    /// `workload = "tpcb"` in a study file): the scripts run over its
    /// data, and `init_sql` runs after that data is loaded.
    #[serde(default)]
    pub workload_named: bool,
    /// The script as a factor (study key `script`, `--script-factor`):
    /// each cell runs one script set (a weighted mix, as `-f`/`-b` give
    /// one), named by its label in every report; empty: `files` and
    /// `builtins` are the one mix of every cell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<ScriptSet>,
    /// The order `files` and `builtins` were given in, as pgbench numbers
    /// its scripts (`isobench pgbench -f a -b b -f c`): per script, true
    /// for the next built-in, false for the next file; empty: the files,
    /// then the built-ins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<bool>,
}

/// One value of the script factor: a pgbench script mix (files and
/// built-ins with weights, as pgbench's `-f`/`-b` in one run).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptSet {
    /// `FILE[@WEIGHT]`: pgbench script files.
    pub files: Vec<(PathBuf, u32)>,
    /// `NAME[@WEIGHT]`: pgbench's built-in scripts.
    pub builtins: Vec<(String, u32)>,
    /// How the set is named in cells and reports: its members as given
    /// (`builtin:tpcb-like`, `tpcb_func.sql`, `a.sql@2+builtin:select-only`),
    /// files by their name as written in the study.
    pub label: String,
}

impl ScriptsConfig {
    /// Whether scripts drive the runs.
    pub fn active(&self) -> bool {
        !self.files.is_empty() || !self.builtins.is_empty() || !self.sets.is_empty()
    }
}

/// Where the results go and which server to use.
#[derive(Debug, Clone, Default)]
pub struct TargetConfig {
    /// `--dsn`: an external server. `None` and no `external` = managed.
    pub dsn: Option<String>,
    /// Use the libpq `PG*` variables for an external server (no DSN).
    pub external_from_env: bool,
    /// `--pg-bin`: the managed server's build, when one is given (its
    /// name, if any, is shown in reports; `None`: the binaries
    /// `postgres::find_bin_dir` finds).
    pub pg_bin: Option<PgBuild>,
    /// `--set name=value` settings of the managed server.
    pub settings: Vec<(String, String)>,
    /// OS user for the managed server when isobench runs as root.
    pub server_user: String,
    /// How each run's clients are spread over the DSN's hosts
    /// (`--host-policy`); only an external server can have several.
    pub host_policy: HostPolicy,
    /// The managed primary's standbys and failover manager (`--standbys`,
    /// `--ha`).
    pub cluster: super::ClusterConfig,
}

/// How `isobench pgbench` runs its one cell where pgbench 15 behaves
/// unlike `isobench run` (docs/src/reference/pgbench-command.md): an SQL
/// error other than a serialization failure or deadlock, or a script's
/// run-time error, aborts the client (as pgbench's do), and an aborted
/// client does not stop the study (pgbench exits 2 after its summary).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PgbenchRules {
    /// Run in the target's database itself, on its own tables and
    /// functions, as pgbench does: no template database, no fresh copy,
    /// no invariant checks, nothing created or dropped. False: a fresh
    /// copy per run, as `isobench run` (`--fresh-copy`, and the managed
    /// server).
    pub in_place: bool,
    /// `-C`: a new connection for every transaction, its time counted as
    /// pgbench counts it (in the run, not in the transaction's latency).
    pub connect_per_transaction: bool,
    /// `-d`: pgbench's debugging lines (`client N sending ...`) on stderr.
    pub debug: bool,
    /// `--verbose-errors`: a line for every error a transaction meets.
    pub verbose_errors: bool,
    /// `--exit-on-abort` (pgbench 17): the first client that aborts ends
    /// the run.
    pub exit_on_abort: bool,
}

/// One study: the factors, the repetitions, and how each run goes.
/// Every list is a factor; the cells are their cross product.
#[derive(Debug, Clone)]
pub struct StudyConfig {
    /// The built-in workload (ignored when `load` has a command); the
    /// first of `workloads` when the workload is a factor.
    pub workload: String,
    /// The workload as a factor (`-w tpcb,ssibench`, study key
    /// `workload = [...]`): two or more built-in workloads, in the order
    /// given; empty: `workload` for every cell.
    pub workloads: Vec<String>,
    /// An external load instead of the built-in workload.
    pub load: ExternalLoad,
    /// pgbench scripts instead of the built-in workload's transactions.
    pub scripts: ScriptsConfig,
    /// Scale factors; empty: the workload's default (workloads without a
    /// scale refuse one).
    pub scale: Vec<u32>,
    /// Isolation levels; empty: all three, or read committed (the server's
    /// default) with an external load, see [`StudyConfig::resolve`].
    pub isolation: Vec<Isolation>,
    /// Concurrency-control strategies; empty: the workload's default.
    pub strategies: Vec<String>,
    /// Workload parameters as factors: name and its values, in the order
    /// given.
    pub params: Vec<(String, Vec<String>)>,
    pub clients: Vec<u32>,
    /// Connection pool sizes; empty: a connection per client.
    pub pool_size: Vec<u32>,
    /// Open-loop target rates, tx/s; empty: closed loop.
    pub rate: Vec<f64>,
    /// Open loop: transactions already later than this are skipped, and
    /// commits slower than it counted as late (pgbench `--latency-limit`).
    pub latency_limit: Option<Duration>,
    /// Faults injected into every run (`--fault KIND@TIME`), in the order
    /// given, when the fault is not a factor.
    pub faults: Vec<FaultSpec>,
    /// The fault as a factor (`--fault-plan`, study key `fault_plan`):
    /// each cell runs one plan ([`crate::Cell::fault_plan`]);
    /// empty: every run gets `faults`.
    pub fault_plans: Vec<FaultSchedule>,
    /// Leave runs with faults out of the statistics (`--exclude-faulted`).
    pub exclude_faulted: bool,
    /// The connection pooler between the clients and the server
    /// (`--pooler`, `--pooler-size`, `--pgbouncer-bin`).
    pub pooler: PoolerConfig,
    /// `max_tries` as a factor; empty: `retry.max_tries` for every cell.
    pub max_tries: Vec<u32>,
    /// Managed-server settings as factors: name and values.
    pub setting_factors: Vec<(String, Vec<String>)>,
    /// Server builds as a factor, in the order given (labels:
    /// [`StudyConfig::pg_build_labels`]); empty: `target.pg_bin`.
    pub pg_bin: Vec<PgBuild>,
    pub repeat: u32,
    pub order: Order,
    /// The baseline cell, e.g. `isolation=rc,clients=16`.
    pub baseline: Option<String>,
    pub duration: Duration,
    pub warmup: Duration,
    /// End each run by count instead of by `duration` (`--transactions`,
    /// study key `transactions`; pgbench `-t`): every client runs this
    /// many transactions (committed, failed or skipped), and the run ends
    /// when the last client has; there is no warm-up. `None`: by time.
    pub transactions: Option<u64>,
    /// `isobench pgbench`'s run, where pgbench 15 behaves unlike
    /// `isobench run`; `None` for every other study.
    pub pgbench: Option<PgbenchRules>,
    /// How long to wait for a server that went away to accept connections
    /// again (`--server-wait`, default 60 s): then a managed server is
    /// restarted; an external one stops the study.
    pub server_wait: Duration,
    pub retry: RetryPolicy,
    /// OS threads driving the clients (like pgbench -j); `None`: per run,
    /// `engine::default_threads` of its client count.
    pub threads: Option<usize>,
    /// pg_stat_database sampling interval.
    pub sample_interval: Duration,
    /// What the observers sample during each run.
    pub observe: ObserveLevel,
    /// Seed of the per-client input generators; recorded in the results.
    pub seed: u64,
    pub target: TargetConfig,
    /// The study file this came from, if any.
    pub file: Option<PathBuf>,
    /// Continue the interrupted study in this results directory.
    pub resume: Option<PathBuf>,
    /// Results directory; `results/<timestamp>` when `None`.
    pub out: Option<PathBuf>,
    /// No live progress and no summary table.
    pub quiet: bool,
    /// Exit non-zero when any invariant is violated.
    pub fail_on_violation: bool,
    /// The managed server logs every statement with its time, pid and
    /// xid (`--log-violations`), and a guarantee violation's evidence
    /// keeps its transactions' lines.
    pub log_violations: bool,
    /// Serve OpenMetrics at `http://ADDR/metrics` while the study runs
    /// (`--metrics-listen`, `HOST:PORT`).
    pub metrics_listen: Option<String>,
    /// This process is one shard of a study run from several processes
    /// (`--shard I/N`, or `--shards N` with the index from
    /// `JOB_COMPLETION_INDEX` or `SLURM_PROCID`); `None`: not sharded.
    pub shard: Option<ShardSpec>,
    /// How long a run's start barrier waits for every shard to register,
    /// and shard 0 for every shard to end a run (`--shard-wait`, default
    /// 60 s).
    pub shard_wait: Duration,
    /// Repetitions until a target precision (`--precision`,
    /// `--max-repeat`); `None`: `repeat` repetitions.
    pub precision: Option<Precision>,
    /// Runs repeated until a guarantee violation or a bound on its rate
    /// (`--hunt`); `None`: the planned runs only.
    pub hunt: Option<crate::Hunt>,
    /// CPUs of the managed server and the client threads (`--cpus`).
    pub cpus: Option<CpuPlacement>,
    /// An A/A calibration (`isobench calibrate`): `repeat` is
    /// `2 · pairs · per_side`.
    pub calibrate: Option<Calibration>,
    /// Checks the study declares about its data (`[[check]]`, `--check`,
    /// `--check-file`), run in each run's database after the run (and
    /// during it, those with `during`), in the order given.
    pub checks: Vec<super::CheckSpec>,
}

/// One shard of a sharded study: shard `index` (from 0) of `count`
/// (docs/src/reference/sharded-runs.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

/// The most shards a study may have.
pub const MAX_SHARDS: u32 = 10_000;

impl ShardSpec {
    /// Checks `index < count` and `1 <= count <= MAX_SHARDS`.
    ///
    /// Errors: a message naming both numbers.
    pub fn new(index: u32, count: u32) -> Result<Self, String> {
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "the shard count must be 1 to {MAX_SHARDS}, found {count}"
            ));
        }
        if index >= count {
            return Err(format!(
                "shard index {index} is out of range for {count} shards (0 to {})",
                count - 1
            ));
        }
        Ok(ShardSpec { index, count })
    }

    /// This shard's share of `clients`: `clients / count`, plus one for
    /// the first `clients % count` shards (so the shares sum to
    /// `clients`; a shard may get 0).
    pub fn clients(&self, clients: u32) -> u32 {
        clients / self.count + u32::from(self.index < clients % self.count)
    }

    /// The id of this shard's first client when each shard runs its share
    /// of `clients` and, after them, `pool` pool sessions: the clients and
    /// sessions of the shards before it. Without a pool the shards' clients
    /// are numbered `0..clients` as in one process.
    pub fn first_id(&self, clients: u32, pool: u32) -> u32 {
        let before = ShardSpec {
            index: 0,
            count: self.count,
        };
        (0..self.index)
            .map(|i| ShardSpec { index: i, ..before }.clients(clients) + pool)
            .sum()
    }

    /// This shard's share of an open-loop rate, tx/s: `rate / count`.
    pub fn rate(&self, rate: f64) -> f64 {
        rate / f64::from(self.count)
    }

    /// This shard's seed for a run whose unsharded seed is `run_seed`:
    /// `run_seed + index * 0x9E37_79B9_7F4A_7C15` (wrapping; the 64-bit
    /// golden ratio), so shard 0 draws what an unsharded run draws and
    /// every other shard an unrelated stream.
    pub fn seed(&self, run_seed: u64) -> u64 {
        run_seed.wrapping_add(u64::from(self.index).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }
}

impl FromStr for ShardSpec {
    type Err = String;
    /// `I/N`, e.g. `0/3`.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("expected I/N (shard I of N, from 0), e.g. 0/3, found '{s}'");
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        ShardSpec::new(i, n)
    }
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The most clients a cell may have (`--clients`): 100,000, each a
/// task of a few kilobytes and, without an application pool, a
/// connection (an open file; see "Many clients" in the user guide).
pub const MAX_CLIENTS: u32 = 100_000;

/// The pooler factors of a study and where pgbouncer comes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolerConfig {
    /// The pooler as a factor (`--pooler none,pgbouncer:transaction`), in
    /// the order given; empty: the clients connect to the server.
    pub poolers: Vec<super::Pooler>,
    /// pgbouncer's `default_pool_size` as a factor (`--pooler-size`);
    /// empty: pgbouncer's default.
    pub sizes: Vec<u32>,
    /// `--pooler-processes`: pgbouncer processes on one port, sharing the
    /// pool and the clients; `None`: one.
    pub processes: Option<u32>,
    /// `--pgbouncer-bin`: the pgbouncer executable; `None`: `pgbouncer` on
    /// the PATH, else `/usr/sbin/pgbouncer` (Debian's).
    pub bin: Option<PathBuf>,
}

impl PoolerConfig {
    /// Some cell runs through pgbouncer.
    pub fn pgbouncer(&self) -> bool {
        self.poolers.iter().any(|p| p.pgbouncer().is_some())
    }

    /// pgbouncer processes per run (1 unless `--pooler-processes`).
    pub fn process_count(&self) -> u32 {
        self.processes.unwrap_or(1).max(1)
    }

    /// Some cell runs through pgbouncer in transaction mode.
    pub fn transaction_mode(&self) -> bool {
        self.poolers
            .iter()
            .any(|p| p.pgbouncer() == Some(super::PoolMode::Transaction))
    }
}

impl StudyConfig {
    /// Fills the defaults that depend on other options: with no isolation
    /// level given, all three for a built-in workload, read committed for
    /// an external load (whose command decides the level, if it uses
    /// `{isolation}` at all).
    pub fn resolve(mut self) -> Self {
        self.isolation = self.levels();
        self
    }

    /// The labels of the server builds factor ([`build_labels`] of
    /// `pg_bin`), the values of `Cell::pg_bin`, in order.
    pub fn pg_build_labels(&self) -> Vec<String> {
        build_labels(&self.pg_bin)
    }

    /// The faults of a run of `cell`: its plan when the fault is a factor
    /// (`Cell::fault_plan`, a label of `fault_plans`), else `faults`.
    pub fn faults_of(&self, cell: &super::Cell) -> Vec<FaultSpec> {
        match &cell.fault_plan {
            Some(label) => self
                .fault_plans
                .iter()
                .find(|p| &p.to_string() == label)
                .map(|p| p.0.clone())
                .unwrap_or_default(),
            None => self.faults.clone(),
        }
    }

    /// The binaries directory of the factor's build labelled `label`.
    pub fn pg_bin_dir(&self, label: &str) -> Option<&Path> {
        let labels = self.pg_build_labels();
        let i = labels.iter().position(|l| l == label)?;
        Some(&self.pg_bin[i].dir)
    }

    /// The isolation levels, defaults filled (see [`Self::resolve`]).
    pub fn levels(&self) -> Vec<Isolation> {
        match (self.isolation.is_empty(), self.load.active()) {
            (false, _) => self.isolation.clone(),
            (true, true) => vec![Isolation::ReadCommitted],
            (true, false) => Isolation::ALL.to_vec(),
        }
    }
}

/// `isobench anomalies`: which probes, at which levels, on which server.
#[derive(Debug, Clone)]
pub struct AnomaliesConfig {
    pub levels: Vec<Isolation>,
    /// Built-in probe names or spec files; empty: every built-in probe.
    pub probes: Vec<String>,
    /// How long a step may run, or stay blocked, before the probe is stuck.
    pub step_timeout: Duration,
    pub target: TargetConfig,
    /// Results directory; `results/anomalies-<timestamp>` when `None`.
    pub out: Option<PathBuf>,
    pub quiet: bool,
}

/// Serde helper storing a [`Duration`] as fractional milliseconds.
pub mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(ms / 1000.0))
    }
}

/// pgbench's `-M`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueryMode {
    Simple,
    Extended,
    #[default]
    Prepared,
}

impl std::str::FromStr for QueryMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "simple" => Ok(QueryMode::Simple),
            "extended" => Ok(QueryMode::Extended),
            "prepared" => Ok(QueryMode::Prepared),
            other => Err(format!(
                "unknown query mode '{other}' (use simple, extended or prepared)"
            )),
        }
    }
}

/// How a load command's output is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadFormat {
    /// By the command's program name: `autocannon`, `pgbench`, else
    /// [`LoadFormat::Command`].
    #[default]
    Auto,
    /// autocannon's JSON result (`autocannon -j ...`) on stdout.
    Autocannon,
    /// pgbench's summary on stdout.
    Pgbench,
    /// Nothing parsed: exit code, wall time and the output file only.
    Command,
}

impl FromStr for LoadFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(LoadFormat::Auto),
            "autocannon" => Ok(LoadFormat::Autocannon),
            "pgbench" => Ok(LoadFormat::Pgbench),
            "command" | "none" => Ok(LoadFormat::Command),
            other => Err(format!(
                "unknown load format '{other}' (use auto, autocannon, pgbench or command)"
            )),
        }
    }
}

impl LoadFormat {
    /// The name as written in files, e.g. `autocannon`.
    pub fn name(self) -> &'static str {
        match self {
            LoadFormat::Auto => "auto",
            LoadFormat::Autocannon => "autocannon",
            LoadFormat::Pgbench => "pgbench",
            LoadFormat::Command => "command",
        }
    }

    /// [`LoadFormat::Auto`] resolved for `cmd`: the program is the first
    /// word after `VAR=value` assignments and the wrappers `env`, `exec`,
    /// `npx`, `nice`, `time`; its file name decides. Other formats are
    /// returned as they are.
    pub fn resolve(self, cmd: &str) -> LoadFormat {
        if self != LoadFormat::Auto {
            return self;
        }
        let program = cmd
            .split_whitespace()
            .find(|w| !w.contains('=') && !["env", "exec", "npx", "nice", "time"].contains(w))
            .unwrap_or("");
        match program.rsplit('/').next().unwrap_or("") {
            "autocannon" => LoadFormat::Autocannon,
            "pgbench" => LoadFormat::Pgbench,
            _ => LoadFormat::Command,
        }
    }
}

/// A load tool's own figures for one run. Fields the tool does not report
/// are `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadFigures {
    /// What `throughput` counts: `req/s` (autocannon) or `tx/s` (pgbench).
    pub unit: String,
    /// Mean throughput as the tool reports it: autocannon's
    /// `requests.average` (mean of its per-second samples), pgbench's
    /// `tps` (without initial connection time).
    pub throughput: f64,
    /// Requests completed (autocannon `requests.total`, any status), or
    /// transactions processed (pgbench).
    pub count: u64,
    /// The tool's measured duration, s.
    pub duration_s: Option<f64>,
    pub latency_mean_ms: Option<f64>,
    pub latency_stddev_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p90_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// Response bytes per second (autocannon `throughput.average`).
    pub bytes_per_s: Option<f64>,
    /// Responses with a 2xx status.
    pub responses_2xx: Option<u64>,
    /// Responses with another status.
    pub non_2xx: Option<u64>,
    /// Connection errors, timeouts included (autocannon `errors`).
    pub errors: Option<u64>,
    /// Requests that timed out.
    pub timeouts: Option<u64>,
    /// pgbench: transactions that failed after their last try.
    pub failed: Option<u64>,
    /// pgbench: failures by kind (`--failures-detailed`).
    pub serialization_failures: Option<u64>,
    pub deadlock_failures: Option<u64>,
    /// pgbench: transactions retried at least once, and retries in all.
    pub retried: Option<u64>,
    pub retries: Option<u64>,
    /// pgbench `--latency-limit`: transactions skipped.
    pub skipped: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolation_short_and_long_forms() {
        assert_eq!("rc".parse::<Isolation>(), Ok(Isolation::ReadCommitted));
        assert_eq!(
            "Repeatable Read".parse::<Isolation>(),
            Ok(Isolation::RepeatableRead)
        );
        assert_eq!("ser".parse::<Isolation>(), Ok(Isolation::Serializable));
        assert!("bogus".parse::<Isolation>().unwrap_err().contains("bogus"));
    }

    /// 10 clients over 3 shards: 4, 3, 3, numbered 0-3, 4-6, 7-9 as one
    /// process numbers them; with a pool of 2 each shard's sessions follow
    /// its clients and the next shard starts after them.
    #[test]
    fn shard_shares_and_first_ids() {
        let s = |i| ShardSpec::new(i, 3).unwrap();
        let shares: Vec<u32> = (0..3).map(|i| s(i).clients(10)).collect();
        assert_eq!(shares, [4, 3, 3]);
        let firsts: Vec<u32> = (0..3).map(|i| s(i).first_id(10, 0)).collect();
        assert_eq!(firsts, [0, 4, 7]);
        let pooled: Vec<u32> = (0..3).map(|i| s(i).first_id(10, 2)).collect();
        assert_eq!(pooled, [0, 6, 11]);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn backoff_forms() {
        assert_eq!("none".parse::<Backoff>(), Ok(Backoff::None));
        assert_eq!(
            "exp:2ms:50ms".parse::<Backoff>(),
            Ok(Backoff::Exponential {
                base: Duration::from_millis(2),
                max: Duration::from_millis(50)
            })
        );
        assert!("exp:50ms:2ms".parse::<Backoff>().is_err());
        assert!("linear".parse::<Backoff>().is_err());
    }
}
