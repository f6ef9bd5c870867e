//! The results of a study as stored (`results.json`, the SQLite
//! store) and rendered: configuration, environment, cells and run records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    ExternalLoad, HostCpu, HostPolicy, InvariantResult, Isolation, LatencySummary, Lifetime,
    LoadFigures, LoadFormat, LoadReport, Order, PGBOUNCER_DEFAULT_POOL_SIZE, Pooler, RetryPolicy,
    RunFaults, ScriptsConfig, SecondPoint, ServerObservations, TargetConfig,
};

/// Everything one study measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema_version: u32,
    pub isobench_version: String,
    /// RFC 3339.
    pub started_at: String,
    pub finished_at: Option<String>,
    /// False while running, and when interrupted or stopped by an error.
    pub complete: bool,
    pub config: StoredConfig,
    pub environment: Environment,
    /// One entry per template database loaded (one per data variant).
    pub load: Vec<LoadReport>,
    pub runs: Vec<RunRecord>,
}

/// The resolved study configuration (never a password): everything
/// `isobench run --resume` needs to plan the same runs again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredConfig {
    /// The built-in workload, or `external` with an external load; the
    /// first of `workloads` when the workload is a factor.
    pub workload: String,
    /// The workload as a factor: its workloads in order (the values of
    /// [`Cell::workload`]); empty when it is not a factor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<String>,
    /// The external load's commands (templates as written); no command
    /// for a built-in workload.
    #[serde(default)]
    pub load: ExternalLoad,
    /// The pgbench scripts (files, built-ins, defines, query mode); none
    /// for a built-in workload.
    #[serde(default)]
    pub scripts: ScriptsConfig,
    /// Scale factors (one value unless scale is a factor); empty for
    /// workloads sized by a parameter.
    pub scale: Vec<u32>,
    pub isolation: Vec<Isolation>,
    /// Concurrency-control strategies compared (`--strategy`).
    pub strategies: Vec<String>,
    /// Workload parameters given as factors (`--param NAME=V1,V2`), in the
    /// order given.
    pub params: Vec<(String, Vec<String>)>,
    /// Every workload parameter's default (those not in `params` ran at it).
    pub param_defaults: BTreeMap<String, String>,
    pub clients: Vec<u32>,
    /// Pool sizes (empty: no pool, a connection per client).
    pub pool_size: Vec<u32>,
    /// Open-loop target rates, tx/s (empty: closed loop).
    pub rate: Vec<f64>,
    /// pgbench's `--latency-limit`, ms.
    pub latency_limit_ms: Option<f64>,
    /// Faults injected into every run (`--fault`), as given
    /// (`terminate@2s`); empty in stores written before `--fault`.
    #[serde(default)]
    pub faults: Vec<String>,
    /// The fault as a factor: its plans as written (`none`, `crash@2s`,
    /// `pause:1s@1s+crash@3s`), the values of [`Cell::fault_plan`], in order;
    /// empty when it is not a factor (and in stores written before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_plans: Vec<String>,
    /// The connection pooler as given (`--pooler`): its values, those of
    /// [`Cell::pooler`], in order; empty when none was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pooler: Vec<Pooler>,
    /// pgbouncer's pool sizes as given (`--pooler-size`), the values of
    /// [`Cell::pooler_size`]; empty: pgbouncer's default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pooler_size: Vec<u32>,
    /// `--pooler-processes`, when given: pgbouncer processes on one port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler_processes: Option<u32>,
    /// `--pgbouncer-bin`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgbouncer_bin: Option<String>,
    /// Runs with faults are left out of the statistics
    /// (`--exclude-faulted`); by default they count, marked.
    #[serde(default)]
    pub exclude_faulted: bool,
    /// `max_tries` values when the retry policy is a factor.
    pub max_tries: Vec<u32>,
    /// Server settings given as factors, in the order given.
    pub setting_factors: Vec<(String, Vec<String>)>,
    /// Server builds when they are a factor: their labels, the values of
    /// [`Cell::pg_bin`], in the order given. Stores written before builds
    /// had labels hold the directories here (and in the cells).
    pub pg_bin: Vec<String>,
    /// Each build label of `pg_bin` -> its binaries directory; empty in
    /// stores written before labels (see [`StoredConfig::pg_bin_dir`]).
    #[serde(default)]
    pub pg_bin_dirs: BTreeMap<String, String>,
    pub repeat: u32,
    /// `interleaved` or `random` (seeded by `seed`).
    pub order: Order,
    /// The baseline cell, e.g. `isolation=rc,clients=16`; `None`: the
    /// first isolation level and strategy, other factors equal.
    pub baseline: Option<String>,
    pub duration_s: f64,
    pub warmup_s: f64,
    /// `--transactions`: each run ended when every client had run this
    /// many transactions (`duration_s` is then not used); absent: by time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// `--server-wait`, s; 60 in stores written before it.
    #[serde(default = "default_server_wait_s")]
    pub server_wait_s: f64,
    pub sample_interval_s: f64,
    /// Client threads (`--threads`); null: one per CPU, at most one per
    /// client.
    pub threads: Option<usize>,
    pub retry: RetryPolicy,
    pub seed: u64,
    /// e.g. `managed PostgreSQL from /usr/lib/postgresql/15/bin (...)`.
    pub target: String,
    /// `--set` server settings of the managed server.
    pub settings: BTreeMap<String, String>,
    /// The study file the study came from, if any.
    pub file: Option<String>,
    /// How the server was chosen, for `--resume`.
    pub target_options: StoredTarget,
    /// This results directory is one shard's of a sharded study
    /// (`--shard`); absent when not sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::ShardSpec>,
    /// `--precision` and `--max-repeat`; absent without a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<crate::Precision>,
    /// `--hunt` with `--rate-bound` and `--hunt-for`; absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunt: Option<crate::Hunt>,
    /// `--cpus`: where the managed server and the client threads ran;
    /// absent when nothing was pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::CpuPlacement>,
    /// `isobench calibrate`'s pairs; absent for other studies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibrate: Option<crate::Calibration>,
    /// The checks the study declared (`[[check]]`, `--check`,
    /// `--check-file`), with where each was declared; absent when none
    /// was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<super::CheckSpec>,
}

/// [`StoredConfig::server_wait_s`] of stores written before it, s.
fn default_server_wait_s() -> f64 {
    60.0
}

/// The target options `--resume` needs again (never a DSN: it may hold a
/// password; an external target must be given again).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredTarget {
    /// `--dsn` or `--external` was used.
    pub external: bool,
    /// `--pg-bin`: the directory of the one build given.
    pub pg_bin: Option<String>,
    /// The name given to that build (`--pg-bin NAME=DIR`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg_bin_label: Option<String>,
    /// `--server-user`.
    pub server_user: String,
    /// `--host-policy` of an external server; absent for the managed
    /// server and in results written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_policy: Option<HostPolicy>,
    /// The managed cluster (`--standbys`, `--ha`, `--ha-timeouts`,
    /// `--read-from`), for `--resume`; absent for a single managed
    /// server and in results written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<super::ClusterConfig>,
}

impl StoredTarget {
    pub fn of(t: &TargetConfig) -> Self {
        StoredTarget {
            external: t.dsn.is_some() || t.external_from_env,
            pg_bin: t.pg_bin.as_ref().map(|b| b.dir.display().to_string()),
            pg_bin_label: t.pg_bin.as_ref().and_then(|b| b.name.clone()),
            server_user: t.server_user.clone(),
            host_policy: (t.dsn.is_some() || t.external_from_env).then_some(t.host_policy),
            cluster: (t.cluster != super::ClusterConfig::default()).then_some(t.cluster),
        }
    }
}

impl StoredConfig {
    /// The binaries directory of the build labelled `label` (a value of
    /// [`Cell::pg_bin`]): from `pg_bin_dirs`, else the label itself (a
    /// store written before labels, whose cells hold the directory).
    pub fn pg_bin_dir<'a>(&'a self, label: &'a str) -> &'a str {
        self.pg_bin_dirs.get(label).map_or(label, String::as_str)
    }

    /// Cells x repetitions: the runs the study planned.
    pub fn planned_runs(&self) -> usize {
        let n = |len: usize| len.max(1);
        n(self.isolation.len())
            * n(self.strategies.len())
            * self.params.iter().map(|(_, v)| v.len()).product::<usize>()
            * n(self.clients.len())
            * n(self.scale.len())
            * n(self.pool_size.len())
            * n(self.rate.len())
            * n(self.max_tries.len())
            * self
                .setting_factors
                .iter()
                .map(|(_, v)| v.len())
                .product::<usize>()
            * n(self.pg_bin.len())
            * n(self.fault_plans.len())
            * self.pooler_cells()
            * self.repeat as usize
    }
}

impl StoredConfig {
    /// Cells per combination of the other factors that the pooler and
    /// pgbouncer's pool size make: one without pgbouncer (`none`), one
    /// per pool size with it.
    fn pooler_cells(&self) -> usize {
        if self.pooler.is_empty() {
            return 1;
        }
        self.pooler
            .iter()
            .map(|p| match p.pgbouncer() {
                Some(_) => self.pooler_size.len().max(1),
                None => 1,
            })
            .sum()
    }
}

/// Where the study ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub host: String,
    pub os: String,
    pub cpus: usize,
    /// `SHOW server_version`.
    pub server_version: String,
    pub server_version_num: i32,
    /// Settings that shape the results (max_connections, shared_buffers,
    /// synchronous_commit, max_pred_locks_per_transaction, ...).
    pub server_settings: BTreeMap<String, String>,
}

/// One combination of factor values.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cell {
    pub workload: String,
    pub isolation: Isolation,
    pub strategy: String,
    /// The workload parameters given as factors, with this cell's values
    /// (parameters not given ran at `config.param_defaults`).
    pub params: BTreeMap<String, String>,
    pub clients: u32,
    pub scale: Option<u32>,
    /// Connections the clients share (a client waits for a free one);
    /// `None`: every client has its own connection.
    pub pool_size: Option<u32>,
    /// Target total arrival rate of an open-loop run, tx/s (Poisson
    /// arrivals); `None`: closed loop.
    pub rate: Option<Rate>,
    /// Tries per transaction when the retry policy is a factor; `None`:
    /// `config.retry.max_tries`.
    pub max_tries: Option<u32>,
    /// Server settings given as factors, with this cell's values.
    pub settings: BTreeMap<String, String>,
    /// The server build's label when builds are a factor
    /// ([`StoredConfig::pg_bin_dir`] gives its directory).
    pub pg_bin: Option<String>,
    /// The fault plan of this cell's runs when the fault is a factor
    /// ([`StoredConfig::fault_plans`]: `none`, `crash@2s`); `None`: the
    /// study's `faults` for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault_plan: Option<String>,
    /// When the workload or the script is a factor, its name (`workload`
    /// or `script`), and `workload` holds this cell's value (a workload
    /// name, or a script set's label, [`crate::ScriptSet::label`]);
    /// `None`: `workload` is the study's one workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_factor: Option<String>,
    /// The connection pooler between the clients and the server when one
    /// is given (`--pooler`, [`StoredConfig::pooler`]); `None`: the
    /// clients connect to the server (as [`Pooler::None`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler: Option<Pooler>,
    /// pgbouncer's `default_pool_size` when given (`--pooler-size`);
    /// `None`: pgbouncer's default ([`PGBOUNCER_DEFAULT_POOL_SIZE`]), and
    /// always without pgbouncer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooler_size: Option<u32>,
}

impl Cell {
    /// The server connections this cell's clients open: pgbouncer's pool
    /// behind pgbouncer, else the application pool, else one per client.
    pub fn server_connections(&self) -> u32 {
        match self.pooler.and_then(Pooler::pgbouncer) {
            Some(_) => self.pooler_size.unwrap_or(PGBOUNCER_DEFAULT_POOL_SIZE),
            None => self.pool_size.unwrap_or(self.clients),
        }
    }

    /// `isolation=rc strategy=locking rows=100 clients=16`, then the
    /// factors that are set: `pool_size=8 rate=500 max_tries=1
    /// shared_buffers=1GB fault_plan=crash@2s pg_bin=stock`.
    pub fn label(&self) -> String {
        self.factors()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The factors of [`Cell::label`] as (name, value) pairs, in its
    /// order.
    pub fn factors(&self) -> Vec<(String, String)> {
        let mut f = Vec::new();
        if let Some(name) = &self.work_factor {
            f.push((name.clone(), self.workload.clone()));
        }
        f.push(("isolation".to_string(), self.isolation.short().to_string()));
        if !self.strategy.is_empty() {
            f.push(("strategy".into(), self.strategy.clone()));
        }
        for (k, v) in &self.params {
            f.push((k.clone(), v.clone()));
        }
        f.push(("clients".into(), self.clients.to_string()));
        if let Some(p) = self.pool_size {
            f.push(("pool_size".into(), p.to_string()));
        }
        if let Some(p) = self.pooler {
            f.push(("pooler".into(), p.to_string()));
        }
        if let Some(p) = self.pooler_size {
            f.push(("pooler_size".into(), p.to_string()));
        }
        if let Some(r) = self.rate {
            f.push(("rate".into(), r.to_string()));
        }
        if let Some(t) = self.max_tries {
            f.push(("max_tries".into(), t.to_string()));
        }
        for (k, v) in &self.settings {
            f.push((k.clone(), v.clone()));
        }
        if let Some(p) = &self.fault_plan {
            f.push(("fault_plan".into(), p.clone()));
        }
        if let Some(b) = &self.pg_bin {
            f.push(("pg_bin".into(), b.clone()));
        }
        f
    }
}

/// A target arrival rate in tx/s (finite, > 0). Ordered and hashed by
/// value so that cells can be compared and grouped.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Rate(pub f64);

impl Eq for Rate {}

impl PartialOrd for Rate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Rate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl std::hash::Hash for Rate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Summary of a wait (pool wait, schedule lag) over a run's measured
/// window, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WaitSummary {
    /// Waits recorded (one per pool checkout, or per scheduled
    /// transaction).
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// What the transactions of one type did in a run's measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TxTypeRecord {
    /// e.g. `WriteCheck`.
    pub name: String,
    pub committed: u64,
    /// Rolled back by the application on purpose (not failures).
    pub user_aborts: u64,
    pub attempts: u64,
    /// By SQLSTATE of the last error.
    pub failed: BTreeMap<String, u64>,
    pub unknown_outcome: u64,
    /// Time in attempts that did not commit, ms.
    pub wasted_ms: f64,
    /// Committed transactions' latency, ms.
    pub latency_ms: LatencySummary,
    /// The same as an HdrHistogram (µs; V2 + DEFLATE, base64).
    pub latency_histogram: String,
    /// Per command, for a workload that times its commands (pgbench
    /// scripts, like `pgbench -r`); measured window only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandRecord>,
    /// Attempts that ended in a server error, by SQLSTATE, reason and
    /// statement, most frequent first; measured window only. Absent when
    /// no attempt failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_reasons: Vec<FailureReasonRecord>,
}

/// Attempts of one transaction type that failed with one SQLSTATE and
/// reason at one statement, over a run's measured window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureReasonRecord {
    pub sqlstate: String,
    /// The explanation under the SQLSTATE ([`super::FailureReason`]), e.g.
    /// `pivot, during commit attempt`; `None` when the error gives none
    /// (a deadlock, most errors other than 40001).
    pub reason: Option<String>,
    /// The statement that raised the error: the command as written (its
    /// first line) for a workload that times its commands (pgbench
    /// scripts), the statement's label in `server.plans` for a built-in
    /// workload that names its statements (e.g. TPC-B's `update branch`),
    /// `COMMIT` for a failed COMMIT of another workload, `None` when not
    /// known.
    pub statement: Option<String>,
    /// Attempts that raised it, retried ones included.
    pub attempts: u64,
    /// Transactions that gave up after it (their last error; these are
    /// part of `failed`).
    pub failed: u64,
}

/// One command of a transaction type over a run's measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    /// The command as written (its first line).
    pub command: String,
    /// Executions, every attempt's.
    pub executions: u64,
    /// Mean time per execution that completed, ms: one that raised an
    /// error is left out, as pgbench `-r` leaves it out (0 when none
    /// completed).
    pub mean_ms: f64,
    /// Executions that raised the error ending their attempt.
    pub failures: u64,
}

/// One measurement of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position in execution order, from 1.
    pub index: u32,
    pub cell: Cell,
    /// From 1.
    pub repetition: u32,
    pub seed: u64,
    pub started_at: String,
    /// False when the run was interrupted; such runs are kept but left out
    /// of the statistics.
    pub complete: bool,
    /// Measured window, s (warm-up excluded).
    pub duration_s: f64,
    /// Transactions committed in the measured window.
    pub committed: u64,
    /// committed / duration_s, tx/s.
    pub tps: f64,
    /// Effective throughput, tx/s: `tps` less the committed transactions
    /// whose work is not in the database, by the history check
    /// ([`super::effective_tps`]); `None` (null) when no history check
    /// applies. Reports compare cells on it when they have it.
    #[serde(default)]
    pub effective_tps: Option<f64>,
    /// TPC-C's throughput, tpmC: New-Order transactions committed per
    /// minute of the measured window ([`tpmc`]); absent for a workload
    /// without a `New-Order` transaction type. Not stored in the SQLite
    /// store: it follows from `transactions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<f64>,
    /// Tries of all transactions finished in the window.
    pub attempts: u64,
    /// attempts - transactions (committed + failed + unknown).
    pub retries: u64,
    /// Transactions that gave up, by SQLSTATE of their last error.
    pub failed: BTreeMap<String, u64>,
    /// Failed transactions by transaction type, then by SQLSTATE.
    pub failed_by_type: BTreeMap<String, BTreeMap<String, u64>>,
    /// Transactions whose COMMIT outcome is unknown (connection lost).
    pub unknown_outcome: u64,
    /// Transactions the application rolled back on purpose.
    pub user_aborts: u64,
    /// failed / (committed + user aborts + failed + unknown), %.
    pub failure_pct: f64,
    /// retries / committed.
    pub retries_per_commit: f64,
    /// Time spent in attempts that did not commit, ms (wasted work).
    pub wasted_ms: f64,
    /// Attempts that did not commit: attempts - committed - user aborts.
    pub wasted_attempts: u64,
    /// wasted_attempts / attempts (ssibench's "abort ratio").
    pub abort_ratio: f64,
    /// wasted_ms / (clients x measured window), %: the share of client time
    /// spent on work that was thrown away.
    pub wasted_time_pct: f64,
    /// Per transaction type, in the workload's order.
    pub transactions: Vec<TxTypeRecord>,
    /// Latency of committed transactions, first attempt start to commit, ms.
    pub latency_ms: LatencySummary,
    /// The same latencies as an HdrHistogram (µs; V2 + DEFLATE, base64).
    pub latency_histogram: String,
    pub per_second: Vec<SecondPoint>,
    /// isobench's CPU time (user + system) in the window, s.
    pub client_cpu_s: f64,
    /// client_cpu_s per committed transaction, µs.
    pub client_cpu_us_per_tx: f64,
    /// The host's CPU use in the window (`None` where `/proc/stat` is
    /// not readable, or for an external load).
    #[serde(default)]
    pub host_cpu: Option<HostCpu>,
    /// What all clients counted over their life (warm-up and drain
    /// included): the database must hold exactly this.
    pub lifetime: Lifetime,
    /// Time to copy the template and VACUUM ANALYZE + CHECKPOINT, ms.
    pub reset_ms: f64,
    pub server: ServerObservations,
    pub invariants: Vec<InvariantResult>,
    /// Σ violations over `invariants`: the anomalies this run produced.
    pub anomalies: u64,
    /// Clients lost during the run and similar problems.
    pub errors: Vec<String>,
    /// Time clients waited for a pooled connection, per checkout (one per
    /// attempt), ms; `None` without a pool. Not part of `latency_ms` in a
    /// closed-loop run.
    pub pool_wait_ms: Option<WaitSummary>,
    /// Open loop: how late transactions started after their scheduled
    /// time, ms (pgbench's "schedule lag"); `None` in a closed loop.
    pub schedule_lag_ms: Option<WaitSummary>,
    /// Open loop with `latency_limit`: transactions not started because
    /// they were already later than the limit (pgbench's "skipped").
    pub skipped: u64,
    /// Committed transactions whose latency exceeded `latency_limit`.
    pub late: u64,
    /// `SHOW server_version` of the server this run used.
    pub server_version: String,
    /// `SHOW` of the cell's server settings (and of the managed server's
    /// `--set` ones) in the run's database, as the run saw them.
    pub server_settings: BTreeMap<String, String>,
    /// The external load command of this run and what it reported; `None`
    /// for a built-in workload. Its figures fill `tps`, `committed`,
    /// `latency_ms` (0 where the tool reports nothing, see
    /// [`RunRecord::reported_latency`]) and, for pgbench, the failures and
    /// retries.
    #[serde(default)]
    pub load: Option<LoadRecord>,
    /// Connections lost and got back, a server that crashed or restarted:
    /// `None` when nothing happened. A faulted run is still `complete`
    /// (it measured its window) and counts in the statistics, marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<RunFaults>,
    /// When this process opened the measured window, RFC 3339 UTC: in a
    /// sharded study by the server's clock (the client's plus its offset
    /// measured at the barrier; every shard aims at the barrier's instant
    /// plus the warm-up); otherwise by the client's clock. Absent when the
    /// window never opened and in stores written before it (not kept in
    /// the SQLite store).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start: Option<String>,
    /// In a sharded study, the clients this shard ran (its share of
    /// `cell.clients`); absent when not sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_clients: Option<u32>,
    /// Per host of an external server's DSN with several hosts, in the
    /// DSN's order (`--host-policy`); absent with one host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRecord>,
}

/// What one host of a DSN with several did in a run's measured window
/// (`--host-policy`, docs/src/reference/clients-over-a-cluster.md). A
/// transaction counts on the host of the connection that ran its last
/// attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// `name:port` for TCP, `directory:port` for a Unix-domain socket.
    pub host: String,
    /// Connections open to the host when the run started: the clients'
    /// own, or with a pool (`pool_size`) the pool's.
    pub clients: u32,
    /// Connections that tried this host first and went to the next one,
    /// since this one refused them.
    #[serde(default)]
    pub refused: u32,
    /// Transactions committed on the host in the measured window.
    pub committed: u64,
    /// committed / the run's `duration_s`, tx/s.
    pub tps: f64,
    /// Median latency of its committed transactions, ms.
    pub p50_ms: f64,
    /// 99th percentile latency of its committed transactions, ms.
    pub p99_ms: f64,
    /// Transactions that gave up on the host (any SQLSTATE).
    pub failed: u64,
    /// The same latencies as an HdrHistogram (µs; V2 + DEFLATE, base64),
    /// so that `isobench merge` adds hosts exactly.
    pub latency_histogram: String,
}

/// One run of an external load command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    /// The command as run, placeholders substituted except secrets
    /// (`{dsn}`, `{password}`).
    pub command: String,
    /// How its output was read (`auto` resolved).
    pub format: LoadFormat,
    /// Exit status; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Start to exit of the load command, s.
    pub wall_s: f64,
    /// The readiness check's wait, s; `None` without one.
    pub ready_s: Option<f64>,
    /// The run's command outputs, relative to the results directory
    /// (`load.out`, `load.err`, `before_run.out`, ...).
    pub output_dir: String,
    /// What the tool reported; `None` for a plain command or a failed run.
    pub figures: Option<LoadFigures>,
}

/// The transaction type whose commits per minute are TPC-C's throughput
/// (TPC-C standard specification revision 5.11, clause 5.4.1).
pub const NEW_ORDER: &str = "New-Order";

/// tpmC: committed New-Order transactions (the type named [`NEW_ORDER`])
/// per minute of a `duration_s` window; `None` without that type or
/// without a window. The New-Orders rolled back by design (TPC-C's 1 %
/// unused items) are user aborts, not commits, and do not count.
pub fn tpmc(transactions: &[TxTypeRecord], duration_s: f64) -> Option<f64> {
    let t = transactions.iter().find(|t| t.name == NEW_ORDER)?;
    (duration_s > 0.0).then(|| t.committed as f64 * 60.0 / duration_s)
}

/// A run's latency figures, ms; `None` where an external load tool did
/// not report one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReportedLatency {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
}

impl RunRecord {
    /// The latency figures that were measured: all of `latency_ms` for a
    /// built-in workload, those the tool reported for an external load.
    pub fn reported_latency(&self) -> ReportedLatency {
        match &self.load {
            None => ReportedLatency {
                mean: Some(self.latency_ms.mean),
                p50: Some(self.latency_ms.p50),
                p95: Some(self.latency_ms.p95),
                p99: Some(self.latency_ms.p99),
            },
            Some(l) => {
                let f = l.figures.as_ref();
                ReportedLatency {
                    mean: f.and_then(|f| f.latency_mean_ms),
                    p50: f.and_then(|f| f.latency_p50_ms),
                    p95: None,
                    p99: f.and_then(|f| f.latency_p99_ms),
                }
            }
        }
    }
}

/// Version of the `results.json` layout; bumped on incompatible change.
pub const SCHEMA_VERSION: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    fn tx(name: &str, committed: u64) -> TxTypeRecord {
        TxTypeRecord {
            name: name.into(),
            committed,
            user_aborts: 3,
            attempts: committed + 3,
            failed: BTreeMap::new(),
            unknown_outcome: 0,
            wasted_ms: 0.0,
            latency_ms: LatencySummary::default(),
            latency_histogram: String::new(),
            commands: Vec::new(),
            failure_reasons: Vec::new(),
        }
    }

    /// tpmC counts committed New-Orders per minute, not the other types
    /// nor the user aborts; no New-Order type, no tpmC.
    #[test]
    fn tpmc_is_new_order_commits_per_minute() {
        let types = [tx("Payment", 900), tx(NEW_ORDER, 450)];
        assert_eq!(tpmc(&types, 30.0), Some(900.0));
        assert_eq!(tpmc(&types[..1], 30.0), None);
        assert_eq!(tpmc(&types, 0.0), None);
    }
}
