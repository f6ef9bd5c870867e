//! The one settings struct: the flags of `isobench run` (clap) and the
//! keys of a study file (serde) are the same fields, read by the same
//! value parsers ([`super::values`]). Layers of settings are merged
//! defaults <- file <- flags by [`Settings::overlay`], and the merged
//! settings are checked against each other and turned into the
//! study's configuration by [`Settings::into_config`], the one place
//! that knows the defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde::Deserialize;

use super::values::*;
use super::{SettingsError, StudyError};
use crate::model::{
    Backoff, CheckSpec, CpuPlacement, DEFAULT_MAX_REPEAT, ExternalLoad, FaultSchedule, FaultSpec,
    Ha, HostPolicy, Isolation, LoadFormat, ObserveLevel, OnError, Order, PgBuild, Pooler,
    PoolerConfig, Precision, QueryMode, ReadFrom, Replication, RetryPolicy, ScriptSet,
    ScriptsConfig, ShardSpec, StudyConfig, TargetConfig,
};

/// Where a setting came from, for errors about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A study file, at the setting's value (1-based line and column).
    File {
        path: String,
        line: usize,
        column: usize,
    },
    /// A command-line flag (or its environment variable).
    Flag,
}

/// Every setting of a study, each `None` until a layer sets it. The field
/// name is the study file's key, and in kebab-case the flag
/// (`pool_size`, `--pool-size`), except `settings` (`--set`) and `params`
/// (`--param`). A factor takes a list (`clients = [1, 16]`,
/// `--clients 1,16`); the cells are the cross product of all factors.
/// Numeric flags take values that start with a hyphen, so that `-c -4`
/// reaches their own range check ("-4 is out of range (1 to 10000)")
/// instead of clap's "unexpected argument" (issue #31).
#[derive(Debug, Default, Clone, Args, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Built-in workload (see `isobench workloads`); several are a factor, e.g. tpcb,ssibench [default: tpcb].
    #[arg(long, short = 'w', value_delimiter = ',', value_parser = Workload::parse)]
    #[serde(default, deserialize_with = "list::<_, Workload>")]
    pub workload: Option<Vec<String>>,
    /// Scale factors (default: the workload's; TPC-B: 100000 accounts per unit), e.g. 1,10.
    #[arg(long, short = 's', value_delimiter = ',', value_parser = Count::<100_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "list::<_, Count<100_000>>")]
    pub scale: Option<Vec<u32>>,
    /// Isolation levels to compare: read-committed|rc, repeatable-read|rr, serializable|ser (default: rc,rr,ser; with --load-cmd: rc).
    #[arg(long, value_delimiter = ',', value_parser = Via::<Isolation>::parse)]
    #[serde(default, deserialize_with = "list::<_, Via<Isolation>>")]
    pub isolation: Option<Vec<Isolation>>,
    /// Concurrency-control strategies to compare, e.g. optimistic,locking (default: the workload's first).
    #[arg(long, value_delimiter = ',', value_parser = Strategy::parse)]
    #[serde(default, deserialize_with = "list::<_, Strategy>")]
    pub strategy: Option<Vec<String>>,
    /// Workload parameter as a factor, repeatable: --param rows=10,100,1000.
    #[arg(long = "param", value_name = "NAME=V1,V2", value_parser = param)]
    #[serde(default, deserialize_with = "table_of_lists")]
    pub params: Option<Vec<Named>>,
    /// Client counts to sweep, e.g. 1,16 [default: 16].
    #[arg(long, short = 'c', value_delimiter = ',', value_parser = Count::<{ crate::model::MAX_CLIENTS }>::parse, allow_hyphen_values = true)]
    #[serde(
        default,
        deserialize_with = "list::<_, Count<{ crate::model::MAX_CLIENTS }>>"
    )]
    pub clients: Option<Vec<u32>>,
    /// Connection pool sizes to sweep: clients share this many connections and wait for a free one (default: a connection per client).
    #[arg(long, value_delimiter = ',', value_parser = Count::<10_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "list::<_, Count<10_000>>")]
    pub pool_size: Option<Vec<u32>>,
    /// Connection pooler between the clients and the server, as a factor: none, pgbouncer:transaction (or pgbouncer), pgbouncer:session; isobench starts a pgbouncer for each run (default: none).
    #[arg(long, value_delimiter = ',', value_parser = Via::<Pooler>::parse)]
    #[serde(default, deserialize_with = "list::<_, Via<Pooler>>")]
    pub pooler: Option<Vec<Pooler>>,
    /// pgbouncer's default_pool_size (its server connections) to sweep, e.g. 10,50 (default: pgbouncer's, 20).
    #[arg(long, value_delimiter = ',', value_parser = Count::<10_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "list::<_, Count<10_000>>")]
    pub pooler_size: Option<Vec<u32>>,
    /// pgbouncer processes on one port (so_reuseport), sharing --pooler-size's server connections and the clients; each holds a descriptor per client of its share, so 50,000 clients under an open-files limit of 20,000 need 3 or more (default: 1).
    #[arg(long, value_name = "N", value_parser = Count::<64>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Count<64>>")]
    pub pooler_processes: Option<u32>,
    /// The pgbouncer executable for --pooler pgbouncer (default: pgbouncer on the PATH, else /usr/sbin/pgbouncer).
    #[arg(long, value_name = "FILE", value_parser = PathArg::parse)]
    #[serde(default, deserialize_with = "one::<_, PathArg>")]
    pub pgbouncer_bin: Option<PathBuf>,
    /// Open loop: target total rates in tx/s with Poisson arrivals, e.g. 200,400 (default: closed loop).
    #[arg(long, short = 'R', value_delimiter = ',', value_parser = Rate::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "list::<_, Rate>")]
    pub rate: Option<Vec<f64>>,
    /// Open loop: skip transactions already later than this, count slower commits as late (like pgbench -L).
    #[arg(long, value_parser = PositiveDur::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub latency_limit: Option<Duration>,
    /// Inject a fault into every run, repeatable: KIND@TIME from the start of the measured window; KIND: terminate (pg_terminate_backend of the clients), kill-backend (SIGKILL one client backend: crash and recovery), restart (fast shutdown and start), crash (immediate shutdown and start: crash recovery), pause:DURATION (SIGSTOP the server's processes, SIGCONT after DURATION), failover (with --ha pg_auto_failover: SIGKILL of the primary node's keeper and postmaster; the manager promotes the standby); all but terminate need the managed server. E.g. terminate@2s, pause:1s@2s, failover@30s.
    #[arg(long, value_name = "KIND@TIME", value_parser = Via::<FaultSpec>::parse)]
    #[serde(default, deserialize_with = "list::<_, Via<FaultSpec>>")]
    pub fault: Option<Vec<FaultSpec>>,
    /// The fault as a factor: each cell runs one plan, comma-separated: none, or faults (as --fault) joined by +, e.g. none,crash@2s,pause:1s@1s+restart@3s.
    #[arg(long, value_name = "PLAN", value_delimiter = ',', value_parser = Via::<FaultSchedule>::parse)]
    #[serde(default, deserialize_with = "list::<_, Via<FaultSchedule>>")]
    pub fault_plan: Option<Vec<FaultSchedule>>,
    /// Leave runs that had faults (lost connections, a crashed server) out of the statistics; by default they count and are marked.
    #[arg(long, num_args = 0, default_missing_value = "true", value_parser = Bool::parse)]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub exclude_faulted: Option<bool>,
    /// Run order: interleaved (repetition by repetition) or random (each repetition shuffled, seeded) [default: interleaved].
    #[arg(long, value_parser = Via::<Order>::parse)]
    #[serde(default, deserialize_with = "one::<_, Via<Order>>")]
    pub order: Option<Order>,
    /// The baseline cell of "% vs baseline", e.g. 'isolation=rc,clients=16' (default: first isolation level and strategy, other factors equal).
    #[arg(long, value_name = "FACTOR=VALUE,...", value_parser = Baseline::parse)]
    #[serde(default, deserialize_with = "one::<_, Baseline>")]
    pub baseline: Option<String>,
    /// Repetitions of every cell (interleaved) [default: 3].
    #[arg(long, value_parser = Count::<10_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Count<10_000>>")]
    pub repeat: Option<u32>,
    /// Repeat every cell until the 95 % interval of its TPS is within ±PCT of its mean (a sequential rule with honest coverage: Chow and Robbins', at least 5 repetitions), or --max-repeat, e.g. 2%.
    #[arg(long, value_name = "PCT", value_parser = Percent::parse)]
    #[serde(default, deserialize_with = "one::<_, Percent>")]
    pub precision: Option<f64>,
    /// Hunt for guarantee violations: repeat the cells' runs, interleaved, until every cell found one (a history check saw an anomaly its level forbids), or every cell's violation rate is bounded below --rate-bound, or --hunt-for has passed. Alone (no -w), it hunts with the hunt shape: list-append at SERIALIZABLE (see "Does SERIALIZABLE keep its promise?" in the user guide).
    #[arg(long, num_args = 0, default_missing_value = "true", value_parser = Bool::parse, help_heading = "Hunting guarantee violations")]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub hunt: Option<bool>,
    /// With --hunt: stop a cell once the upper end of the 95 % interval of its violation rate is below this, per committed transaction: 1e-6, or 1/1000000, or "1 per million" [default: 1e-6].
    #[arg(long, value_name = "RATE", value_parser = RateBound::parse, help_heading = "Hunting guarantee violations")]
    #[serde(default, deserialize_with = "one::<_, RateBound>")]
    pub rate_bound: Option<f64>,
    /// With --hunt: the time budget, from the study's start, e.g. 30m, 2h [default: 30m].
    #[arg(long, value_name = "DURATION", value_parser = PositiveDur::parse, help_heading = "Hunting guarantee violations")]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub hunt_for: Option<Duration>,
    /// With --precision: the most repetitions of a cell [default: 20].
    #[arg(long, value_parser = Count::<10_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Count<10_000>>")]
    pub max_repeat: Option<u32>,
    /// Pin the managed server's processes and isobench's client threads to CPUs: server=LIST,clients=LIST (either may be left out), e.g. server=0,clients=1 or server=0-1,clients=2-3; overlapping or absent CPUs are refused.
    #[arg(long, value_name = "server=LIST,clients=LIST", value_parser = Cpus::parse)]
    #[serde(default, deserialize_with = "one::<_, Cpus>")]
    pub cpus: Option<CpuPlacement>,
    /// Measured time of each run, e.g. 10s, 500ms, 2m [default: 10s].
    #[arg(long, short = 'T', value_parser = PositiveDur::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub duration: Option<Duration>,
    /// End each run by count, as pgbench -t: every client runs N transactions (committed, failed or skipped) and the run ends when the last has; tps is over the run's elapsed time; no warm-up; excludes --duration.
    #[arg(long, short = 't', value_name = "N", value_parser = Count::<1_000_000_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Count<1_000_000_000>>")]
    pub transactions: Option<u32>,
    /// Warm-up before each run's measured time (discarded) [default: 2s].
    #[arg(long, value_parser = Dur::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Dur>")]
    pub warmup: Option<Duration>,
    /// How long to wait for a server that went away (crash, restart, failover) to accept connections again; then a managed server is restarted, and with an external one the study stops, keeping what it measured [default: 60s].
    #[arg(long, value_parser = PositiveDur::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub server_wait: Option<Duration>,
    /// Tries per transaction including the first (1 = no retries); several are a factor [default: 10].
    #[arg(long, value_delimiter = ',', value_parser = Count::<1_000_000>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "list::<_, Count<1_000_000>>")]
    pub max_tries: Option<Vec<u32>>,
    /// SQLSTATEs that are retried, e.g. 40001,40P01,55P03 [default: 40001,40P01].
    #[arg(long, value_delimiter = ',', value_parser = Sqlstate::parse)]
    #[serde(default, deserialize_with = "list::<_, Sqlstate>")]
    pub retry_on: Option<Vec<String>>,
    /// Wait before a retry: none, exp (1ms..100ms full jitter), or exp:BASE:MAX [default: none].
    #[arg(long, value_parser = Via::<Backoff>::parse)]
    #[serde(default, deserialize_with = "one::<_, Via<Backoff>>")]
    pub backoff: Option<Backoff>,
    /// OS threads driving the clients, like pgbench -j (default: the CPU count, at most one per client).
    #[arg(long, short = 'j', value_parser = Count::<1024>::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Count<1024>>")]
    pub threads: Option<u32>,
    /// pg_stat_database sampling interval [default: 5s].
    #[arg(long, value_parser = SampleInterval::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, SampleInterval>")]
    pub sample_interval: Option<Duration>,
    /// Server observations during each run: none, light (plans, pg_stat_database every sample interval) or full (also wait events every second and, under SERIALIZABLE, SIRead locks every sample interval) [default: full].
    #[arg(long, value_parser = Via::<ObserveLevel>::parse)]
    #[serde(default, deserialize_with = "one::<_, Via<ObserveLevel>>")]
    pub observe: Option<ObserveLevel>,
    /// Seed of the input generators (default: random, recorded in results); pgbench's --random-seed.
    #[arg(long, alias = "random-seed", value_parser = Seed::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, Seed>")]
    pub seed: Option<u64>,
    /// Run as shard I of N (from 0) of a study run from N processes or machines against one external server (--dsn); see "Sharded runs" in the user guide.
    #[arg(long, value_name = "I/N", conflicts_with = "shards", value_parser = Via::<ShardSpec>::parse)]
    #[serde(default, deserialize_with = "one::<_, Via<ShardSpec>>")]
    pub shard: Option<ShardSpec>,
    /// Run as one of N shards, the index from JOB_COMPLETION_INDEX (Kubernetes Indexed Job), SLURM_ARRAY_TASK_ID (Slurm job array) or SLURM_PROCID (Slurm step).
    #[arg(long, value_name = "N", value_parser = Count::<{ crate::model::MAX_SHARDS }>::parse, allow_hyphen_values = true)]
    #[serde(
        default,
        deserialize_with = "one::<_, Count<{ crate::model::MAX_SHARDS }>>"
    )]
    pub shards: Option<u32>,
    /// How long a sharded run waits for every shard at its start barrier (and shard 0 for every shard to end the run) before it ends the run naming the missing shards [default: 60s].
    #[arg(long, value_parser = PositiveDur::parse, allow_hyphen_values = true)]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub shard_wait: Option<Duration>,
    /// External server as a libpq URL or key=value string (password never printed).
    #[arg(long, env = "ISOBENCH_DSN", hide_env_values = true, value_parser = DsnArg)]
    #[serde(default, deserialize_with = "one::<_, Dsn>")]
    pub dsn: Option<String>,
    /// External server from the libpq variables PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE.
    #[arg(long, conflicts_with = "dsn", num_args = 0, default_missing_value = "true", value_parser = Bool::parse)]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub external: Option<bool>,
    /// How each run's clients spread over the hosts of an external server's DSN with several (host=h1,h2): round-robin, random (seeded) or first (libpq's failover, all on the first that accepts) [default: round-robin].
    #[arg(long, value_parser = Via::<HostPolicy>::parse)]
    #[serde(default, deserialize_with = "one::<_, Via<HostPolicy>>")]
    pub host_policy: Option<HostPolicy>,
    /// Streaming standbys of the managed primary (pg_basebackup from the same binaries, a replication slot, a port and data directory each), 0 to 8 [default: 0; with --ha pg_auto_failover: 1].
    #[arg(long, value_parser = Standbys::parse, allow_hyphen_values = true, help_heading = "Replication")]
    #[serde(default, deserialize_with = "one::<_, Standbys>")]
    pub standbys: Option<u32>,
    /// How the primary waits for its standbys, a factor: async, sync (the first standby synchronous), quorum:N (any N); set as synchronous_standby_names between runs, without a restart [default: async].
    #[arg(long, value_delimiter = ',', value_parser = Via::<Replication>::parse, help_heading = "Replication")]
    #[serde(default, deserialize_with = "list::<_, Via<Replication>>")]
    pub replication: Option<Vec<Replication>>,
    /// synchronous_commit levels as a factor: off, local, remote_write, on, remote_apply; set on each run's database, without a restart (the same as settings.synchronous_commit).
    #[arg(long, value_delimiter = ',', value_parser = SyncCommit::parse, help_heading = "Replication")]
    #[serde(default, deserialize_with = "list::<_, SyncCommit>")]
    pub synchronous_commit: Option<Vec<String>>,
    /// Failover manager of the managed cluster: none, or pg_auto_failover (a monitor and two nodes from the pg-auto-failover packages; clients reconnect through a multi-host DSN with target_session_attrs=read-write) [default: none].
    #[arg(long, value_parser = Via::<Ha>::parse, help_heading = "Replication")]
    #[serde(default, deserialize_with = "one::<_, Via<Ha>>")]
    pub ha: Option<Ha>,
    /// The failover manager's timeouts: default (pg_auto_failover's own: a failover takes about 51 s) or fast (health checks every second, a node unhealthy after 2 s, 1.5 s to demote: about 5 s; unsafe in a real network partition, harmless for the node crash isobench injects) [default: default].
    #[arg(long, value_parser = HaTimeouts::parse, help_heading = "Replication")]
    #[serde(default, deserialize_with = "one::<_, HaTimeouts>")]
    pub ha_timeouts: Option<bool>,
    /// Where the read-only transactions of workloads that have them go (ycsb's reads, list-append's read-only transactions, sysbench's oltp_read_only and oltp_point_select, pgbench's builtin:select-only): primary, standby (client i on standby i mod N), any (primary or standby, drawn per transaction), a factor; routed reads record the client's last commit LSN and the standby's replay LSN, and read-your-writes and monotonic-read violations are counted [default: primary].
    #[arg(long, value_delimiter = ',', value_parser = Via::<ReadFrom>::parse, help_heading = "Replication")]
    #[serde(default, deserialize_with = "list::<_, Via<ReadFrom>>")]
    pub read_from: Option<Vec<ReadFrom>>,
    /// Managed server setting, repeatable: --set shared_buffers=256MB (in a file, the `[settings]` table; a list there is a factor).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = setting)]
    #[serde(default, deserialize_with = "table_of_lists")]
    pub settings: Option<Vec<Named>>,
    /// OS user that runs the managed server when isobench runs as root [default: postgres].
    #[arg(long, value_parser = Text::parse)]
    #[serde(default, deserialize_with = "one::<_, Text>")]
    pub server_user: Option<String>,
    /// The managed server's binaries (initdb, postgres) as DIR or NAME=DIR; repeat it for several builds, a factor that reports show by NAME.
    #[arg(long, value_name = "[NAME=]DIR", value_parser = Build::parse)]
    #[serde(default, deserialize_with = "builds")]
    pub pg_bin: Option<Vec<PgBuild>>,
    /// Results directory (default `results/<timestamp>`).
    #[arg(long, short = 'o', value_name = "DIR", value_parser = PathArg::parse)]
    #[serde(default, deserialize_with = "one::<_, PathArg>")]
    pub out: Option<PathBuf>,
    /// No live progress and no summary table.
    #[arg(long, short = 'q', num_args = 0, default_missing_value = "true", value_parser = Bool::parse)]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub quiet: Option<bool>,
    /// Exit with status 4 when an isolation level broke its promise (a history check found an anomaly class the level forbids), else 3 when any invariant is violated (anomalies > 0).
    #[arg(long, num_args = 0, default_missing_value = "true", value_parser = Bool::parse)]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub fail_on_violation: Option<bool>,
    /// The managed server logs every statement with its time, backend pid and xid (log_statement = all, log_line_prefix = '%m [%p] %x '), so that a guarantee violation's evidence (violations/N/server.log) holds its transactions' lines. Costs server time: for hunting, not for measuring.
    #[arg(long, num_args = 0, default_missing_value = "true", value_parser = Bool::parse, help_heading = "Hunting guarantee violations")]
    #[serde(default, deserialize_with = "one::<_, Bool>")]
    pub log_violations: Option<bool>,
    /// Serve live metrics (current run and cell, committed/failed/retried transactions, last second's tps and p99) as OpenMetrics text at http://ADDR/metrics for Prometheus, e.g. 127.0.0.1:9187.
    #[arg(long, value_name = "HOST:PORT", value_parser = Listen::parse)]
    #[serde(default, deserialize_with = "one::<_, Listen>")]
    pub metrics_listen: Option<String>,
    /// External load instead of a workload: a command run once per run, with placeholders like {clients}, {pool_size}, {isolation}, {duration_s}, {dsn} (see "External loads" in the user guide, docs/src/reference/external-loads.md).
    #[arg(long, value_name = "CMD", conflicts_with = "workload", value_parser = Template::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Template>")]
    pub load_cmd: Option<String>,
    /// Run once per server into the database the runs copy, e.g. 'pgbench -i -s {scale}'.
    #[arg(long, value_name = "CMD", value_parser = Template::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Template>")]
    pub setup_cmd: Option<String>,
    /// Run before each run's load (e.g. start the application); what it leaves running is stopped after the run.
    #[arg(long, value_name = "CMD", value_parser = Template::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Template>")]
    pub before_run: Option<String>,
    /// Run after each run's load, also after a failed or interrupted one.
    #[arg(long, value_name = "CMD", value_parser = Template::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Template>")]
    pub after_run: Option<String>,
    /// Before the load: poll this http:// URL until it answers 2xx/3xx, or this command until it exits 0.
    #[arg(long, value_name = "URL|CMD", value_parser = Template::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Template>")]
    pub ready: Option<String>,
    /// How long the readiness check may take [default: 60s].
    #[arg(long, value_parser = PositiveDur::parse, allow_hyphen_values = true, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub ready_timeout: Option<Duration>,
    /// How to read the load's output: auto (by program name), autocannon (-j JSON), pgbench (summary), command (exit code and time only) [default: auto].
    #[arg(long, value_parser = Via::<LoadFormat>::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Via<LoadFormat>>")]
    pub load_format: Option<LoadFormat>,
    /// When a command fails or its output does not parse: stop the study, or continue with the next run [default: stop].
    #[arg(long, value_parser = Via::<OnError>::parse, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, Via<OnError>>")]
    pub on_error: Option<OnError>,
    /// Stop the load command after this long (default: no limit).
    #[arg(long, value_parser = PositiveDur::parse, allow_hyphen_values = true, help_heading = "External load")]
    #[serde(default, deserialize_with = "one::<_, PositiveDur>")]
    pub load_timeout: Option<Duration>,
    /// A pgbench script file, optionally weighted (like pgbench -f); repeatable (in a file: relative to it).
    #[arg(short = 'f', long, value_name = "FILE[@WEIGHT]", value_parser = Weighted::parse, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "list::<_, Weighted>")]
    pub file: Option<Vec<(String, u32)>>,
    /// A pgbench built-in script: tpcb-like, simple-update, select-only, optionally weighted (like pgbench -b); repeatable.
    #[arg(short = 'b', long, value_name = "NAME[@WEIGHT]", value_parser = Weighted::parse, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "list::<_, Weighted>")]
    pub builtin: Option<Vec<(String, u32)>>,
    // clap shows this text as is: `[@WEIGHT]` is not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// The script as a factor, repeatable: each occurrence is one cell's script set, FILE[@WEIGHT] or builtin:NAME[@WEIGHT], a comma list for a weighted mix (-f/-b stay one mix of every cell); e.g. --script-factor builtin:tpcb-like --script-factor tpcb_func.sql (study key `script`).
    #[arg(long = "script-factor", value_name = "SET", value_parser = ScriptSetP::parse, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "script_sets")]
    pub script: Option<Vec<ScriptSetArg>>,
    /// A script variable every client starts with (like pgbench -D); repeatable (in a file, the `[define]` table).
    #[arg(short = 'D', long, value_name = "NAME=VALUE", value_parser = define, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "defines")]
    pub define: Option<Vec<(String, String)>>,
    /// How statements are sent (like pgbench -M): prepared (named prepared statements), extended (parsed with every execution: what pgbouncer before 1.21 needs in transaction mode) or simple (scripts only) [default: prepared; extended with --pooler pgbouncer:transaction].
    #[arg(short = 'M', long, value_parser = Via::<QueryMode>::parse, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "one::<_, Via<QueryMode>>")]
    pub protocol: Option<QueryMode>,
    /// SQL run once into the template database for the scripts: alone, instead of pgbench's tables (the scripts' own schema); with -w tpcb, after pgbench's tables are loaded (in a file: relative to it).
    #[arg(long, value_name = "FILE", value_parser = PathArg::parse, help_heading = "pgbench scripts")]
    #[serde(default, deserialize_with = "one::<_, PathArg>")]
    pub init_sql: Option<PathBuf>,
    /// A declared check, repeatable: NAME=SQL, a query whose rows are violations (or one `count`, which must be 0), run in each run's database after the run; its violations count in the anomalies column (in a file: `[[check]]` tables with name, sql, expect, during; see "Declared checks" in the user guide).
    #[arg(long = "check", value_name = "NAME=SQL", value_parser = super::checks::check_flag, help_heading = "Declared checks")]
    #[serde(default, deserialize_with = "super::checks::checks")]
    pub check: Option<Vec<CheckSpec>>,
    /// A file of named checks, repeatable: `-- name: NAME` before each query, then optional `-- expect: N` and `-- during: true` lines (in a file: relative to it).
    #[arg(long, value_name = "FILE", value_parser = PathArg::parse, help_heading = "Declared checks")]
    #[serde(default, deserialize_with = "list::<_, PathArg>")]
    pub check_file: Option<Vec<PathBuf>>,
    /// A study file's `[factors]` table: factors written apart from the
    /// other settings (merged into them when the file is read).
    #[arg(skip)]
    #[serde(default)]
    pub factors: Option<Box<Settings>>,
    /// Where each set key came from (`params.rows` for one entry).
    #[arg(skip)]
    #[serde(skip)]
    pub(super) origins: BTreeMap<String, Origin>,
}

/// The keys a `[factors]` table may hold.
pub const FACTOR_KEYS: [&str; 18] = [
    "workload",
    "script",
    "isolation",
    "strategy",
    "clients",
    "pool_size",
    "pooler",
    "pooler_size",
    "rate",
    "scale",
    "max_tries",
    "fault_plan",
    "pg_bin",
    "params",
    "settings",
    "replication",
    "synchronous_commit",
    "read_from",
];

/// `LOAD_KEYS` and `clear_load` from one list: the keys of the external
/// load, which a workload set over them clears.
macro_rules! load_keys {
    ($($k:ident),* $(,)?) => {
        const LOAD_KEYS: &[&str] = &[$(stringify!($k)),*];

        impl Settings {
            fn clear_load(&mut self) {
                $(self.$k = None;)*
            }
        }
    };
}

load_keys!(
    load_cmd,
    setup_cmd,
    before_run,
    after_run,
    ready,
    ready_timeout,
    load_format,
    on_error,
    load_timeout,
);

/// `keys_set` and `take_set` over every setting field, from one list (a
/// field left out would not override a file: the every-flag test in
/// `cli` catches it).
macro_rules! every_key {
    ($($k:ident),* $(,)?) => {
        impl Settings {
            /// The keys this layer sets, in declaration order.
            pub fn keys_set(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(if self.$k.is_some() { keys.push(stringify!($k)); })*
                keys
            }

            /// Every key `over` sets replaces this layer's.
            fn take_set(&mut self, over: Settings) {
                $(if over.$k.is_some() { self.$k = over.$k; })*
            }
        }
    };
}

every_key!(
    workload,
    scale,
    isolation,
    strategy,
    params,
    clients,
    pool_size,
    pooler,
    pooler_size,
    pooler_processes,
    pgbouncer_bin,
    rate,
    latency_limit,
    fault,
    fault_plan,
    exclude_faulted,
    order,
    baseline,
    repeat,
    precision,
    hunt,
    rate_bound,
    hunt_for,
    max_repeat,
    cpus,
    duration,
    transactions,
    warmup,
    server_wait,
    max_tries,
    retry_on,
    backoff,
    threads,
    sample_interval,
    observe,
    seed,
    shard,
    shards,
    shard_wait,
    dsn,
    external,
    host_policy,
    standbys,
    replication,
    synchronous_commit,
    ha,
    ha_timeouts,
    read_from,
    settings,
    server_user,
    pg_bin,
    out,
    quiet,
    fail_on_violation,
    log_violations,
    metrics_listen,
    load_cmd,
    setup_cmd,
    before_run,
    after_run,
    ready,
    ready_timeout,
    load_format,
    on_error,
    load_timeout,
    file,
    builtin,
    script,
    define,
    protocol,
    init_sql,
    check,
    check_file,
);

/// The flag of setting `key` (`pool_size` → `pool-size`).
pub fn flag_of(key: &str) -> String {
    match key.split('.').next().unwrap_or(key) {
        "settings" => "set".into(),
        "params" => "param".into(),
        "script" => "script-factor".into(),
        k => k.replace('_', "-"),
    }
}

impl Settings {
    /// Records that every key set here came from the command line.
    pub fn from_flags(mut self) -> Settings {
        for k in self.keys_set() {
            self.origins.insert(k.to_string(), Origin::Flag);
        }
        self
    }

    /// This layer with `over` on top: a key `over` sets replaces this
    /// layer's, except `params` and `settings`, which are replaced name by
    /// name (a `--set` fixes one server setting, also one the file made a
    /// factor). A workload over an external load clears the load, and an
    /// external load over a workload clears the workload.
    pub fn overlay(&mut self, mut over: Settings) {
        if over.workload.is_some() {
            for k in LOAD_KEYS.iter().copied() {
                self.origins.remove(k);
            }
            self.clear_load();
        }
        if over.load_cmd.is_some() {
            self.workload = None;
            self.origins.remove("workload");
        }
        for (table, mine, theirs) in [
            ("params", &mut self.params, over.params.take()),
            ("settings", &mut self.settings, over.settings.take()),
        ] {
            let Some(theirs) = theirs else { continue };
            let entries = mine.get_or_insert_with(Vec::new);
            for (name, values) in theirs {
                entries.retain(|(n, _)| *n != name);
                self.origins.remove(&format!("{table}.{name}"));
                entries.push((name, values));
            }
        }
        // Checks are replaced by name too: a `--check` of a file's name
        // replaces that check, others add to the file's.
        if let Some(theirs) = over.check.take() {
            let mine = self.check.get_or_insert_with(Vec::new);
            mine.retain(|c| !theirs.iter().any(|t| t.name == c.name));
            mine.extend(theirs);
        }
        self.origins.append(&mut over.origins);
        self.take_set(over);
    }

    /// An error about `key` (or its table entry `table.name`), located
    /// where the key was set. A message that already names the flag
    /// (`--strategy x: ...`, as the workloads write them) keeps it on the
    /// command line and trades it for the key in a file.
    pub(super) fn error(&self, key: &str, message: impl std::fmt::Display) -> SettingsError {
        let table = key.split('.').next().unwrap_or(key);
        let origin = self.origins.get(key).or_else(|| self.origins.get(table));
        let message = message.to_string();
        let flag = flag_of(key);
        let names_flag = message.starts_with(&format!("--{flag} "));
        match origin {
            Some(Origin::File { path, line, column }) => {
                let body = match message.split_once(": ") {
                    Some((_, body)) if names_flag => body,
                    _ => &message,
                };
                SettingsError::File(StudyError {
                    path: path.clone(),
                    line: *line,
                    column: *column,
                    message: format!("{key}: {body}"),
                })
            }
            Some(Origin::Flag) | None if names_flag => SettingsError::Flag(message),
            Some(Origin::Flag) | None => SettingsError::Flag(format!("--{flag}: {message}")),
        }
    }

    /// `--precision` with `--max-repeat` (default 20), or none.
    ///
    /// Errors: `--max-repeat` without `--precision`; a maximum below the
    /// first stage (the larger of `--repeat` and 5); a sharded study.
    fn precision_plan(&self) -> Result<Option<Precision>, SettingsError> {
        let Some(target_pct) = self.precision else {
            if self.max_repeat.is_some() {
                return Err(self.error(
                    "max_repeat",
                    "applies to --precision only (the most repetitions a cell gets): give --precision PCT too (or --repeat N for a fixed count)",
                ));
            }
            return Ok(None);
        };
        let first = self
            .repeat
            .unwrap_or(0)
            .max(crate::stats::sequential::FIRST_STAGE as u32);
        let max_repeat = self.max_repeat.unwrap_or(DEFAULT_MAX_REPEAT.max(first));
        if max_repeat < first {
            return Err(self.error(
                "max_repeat",
                format!(
                    "{max_repeat} is below the first stage of {first} repetitions (--precision runs at least 5, \
                     and at least --repeat): give --max-repeat {first} or more"
                ),
            ));
        }
        if self.shard.is_some() || self.shards.is_some() {
            return Err(self.error(
                "precision",
                "a sharded study runs a fixed plan: give --repeat N instead",
            ));
        }
        Ok(Some(Precision {
            target_pct,
            max_repeat,
        }))
    }

    /// The checks across settings: a workload and an external load
    /// together; strategies, parameters and scale the workload does not
    /// have (unless an external load replaces it).
    fn check(&self) -> Result<(), SettingsError> {
        if let (Some(_), Some(_)) = (&self.workload, &self.load_cmd) {
            return Err(self.error(
                "load_cmd",
                "an external load replaces the workload; remove `workload` or `load_cmd`",
            ));
        }
        if self.load_cmd.is_some() {
            return Ok(());
        }
        let tpcb = vec!["tpcb".to_string()];
        let workloads = self.workload.as_ref().unwrap_or(&tpcb);
        let spec_of = |w: &str| crate::workload::spec(w).expect("checked by Workload::parse");
        // With a workload factor, the scale applies to the workloads that
        // have one (it is refused when none has).
        let any_scale = workloads.iter().any(|w| spec_of(w).scale.is_some());
        // With a workload factor, every workload must take the strategies
        // and parameters given.
        for workload in workloads {
            let spec = spec_of(workload);
            for s in self.strategy.iter().flatten() {
                spec.check_strategy(s)
                    .map_err(|e| self.error("strategy", e))?;
            }
            if self.scale.is_some() && !any_scale {
                return Err(self.error(
                    "scale",
                    format!(
                        "{} has no scale factor; its size is a parameter (see `isobench workloads {}`)",
                        spec.name, spec.name
                    ),
                ));
            }
        }
        // A parameter applies to the workloads that have it (pgbench
        // scripts over pgbench's tables take tpcb's `foreign-keys`, checked
        // with the scripts).
        let scripts = self.script.is_some() || self.file.is_some() || self.builtin.is_some();
        for (name, _) in self.params.iter().flatten() {
            let specs = workloads.iter().map(|w| spec_of(w));
            if !scripts && specs.clone().all(|s| s.check_param(name).is_err()) {
                let e = spec_of(&workloads[0]).check_param(name).unwrap_err();
                return Err(self.error(&format!("params.{name}"), e));
            }
        }
        let many = |k: &str| {
            self.error(
                k,
                "the workload is a factor here: scripts run over pgbench's tables (tpcb) only; \
                 to compare scripts, make the script the factor (study key `script`, --script-factor)",
            )
        };
        if self.workload.as_ref().is_some_and(|w| w.len() > 1)
            && (self.script.is_some() || self.file.is_some() || self.builtin.is_some())
        {
            return Err(many("workload"));
        }
        if self.script.is_some() && (self.file.is_some() || self.builtin.is_some()) {
            return Err(self.error(
                "script",
                "the script factor and -f/-b (keys file, builtin) both given: list every script set in the factor, \
                 a mix as one set (e.g. --script-factor a.sql@2,builtin:select-only)",
            ));
        }
        Ok(())
    }

    /// The study's configuration: every unset key at its default,
    /// the settings checked against each other (strategies, parameters
    /// and scale against the workload, unless an external load replaces
    /// it; build names), lists deduplicated.
    ///
    /// Errors: [`SettingsError`] naming the key where the file set it
    /// (`file:line:column: key: ...`), or the flag.
    pub fn into_config(self) -> Result<StudyConfig, SettingsError> {
        let hunt = self.hunt_plan()?;
        let mut this = self;
        if hunt.is_some() {
            this.hunt_defaults();
        }
        let mut cfg = this.into_config_checked()?;
        cfg.hunt = hunt;
        Ok(cfg)
    }

    /// The keys that conflict with others or need another: each error
    /// names the key and what to do.
    fn check_combinations(&self) -> Result<(), SettingsError> {
        let external = self.dsn.is_some() || self.external == Some(true);
        if self.log_violations == Some(true) && external {
            return Err(self.error(
                "log_violations",
                "sets the managed server's logging; an external server (--dsn, --external) logs as its \
                 administrator set it: drop it, or set log_statement and log_line_prefix there",
            ));
        }
        if self.transactions.is_some() {
            if self.duration.is_some() {
                return Err(self.error(
                    "transactions",
                    "ends each run by count and --duration by time: give one of them (as pgbench's -t and -T)",
                ));
            }
            if self.warmup.is_some_and(|w| !w.is_zero()) {
                return Err(self.error(
                    "transactions",
                    "a run by count has no warm-up (every client's transactions count, as in pgbench -t): drop --warmup or give 0s",
                ));
            }
        }
        if self.host_policy.is_some() && self.dsn.is_none() && self.external != Some(true) {
            return Err(self.error(
                "host_policy",
                "spreads the clients over the hosts of an external server's DSN (--dsn 'host=h1,h2 ...', \
                 or --external with PGHOST=h1,h2); the managed server has one host: give --dsn or drop it",
            ));
        }
        if self.cpus.as_ref().is_some_and(|c| c.server.is_some()) && external {
            return Err(self.error(
                "cpus",
                "server= pins the managed server's processes; an external server (--dsn, --external) runs \
                 elsewhere: give only clients=LIST",
            ));
        }
        Ok(())
    }

    /// The script sets of `script` (a factor of labelled sets of script
    /// files and built-ins, each with its weight).
    fn script_sets(&self) -> Vec<ScriptSet> {
        dedup(self.script.clone().unwrap_or_default())
            .into_iter()
            .map(|(label, members)| {
                let mut set = ScriptSet {
                    label,
                    ..ScriptSet::default()
                };
                for m in members {
                    let (name, w) = crate::pgbench::script::split_weight(&m).expect("checked");
                    match name.strip_prefix("builtin:") {
                        Some(b) => set.builtins.push((b.to_string(), w)),
                        None => set.files.push((PathBuf::from(name), w)),
                    }
                }
                set
            })
            .collect()
    }

    /// The external load's keys (`load_cmd` and its steps).
    fn external_load(&mut self) -> ExternalLoad {
        ExternalLoad {
            cmd: self.load_cmd.take(),
            setup: self.setup_cmd.take(),
            before_run: self.before_run.take(),
            after_run: self.after_run.take(),
            ready: self.ready.take(),
            ready_timeout: self.ready_timeout.unwrap_or(Duration::from_secs(60)),
            format: self.load_format.unwrap_or_default(),
            on_error: self.on_error.unwrap_or_default(),
            timeout_ms: self.load_timeout.map(|d| d.as_secs_f64() * 1000.0),
        }
    }

    /// The pgbench scripts' keys.
    fn scripts_config(&mut self) -> ScriptsConfig {
        ScriptsConfig {
            files: (self.file.take().unwrap_or_default().into_iter())
                .map(|(f, w)| (PathBuf::from(f), w))
                .collect(),
            builtins: self.builtin.take().unwrap_or_default(),
            defines: self.define.take().unwrap_or_default(),
            // Behind pgbouncer in transaction mode a named statement
            // would live on whichever server connection prepared it:
            // unnamed ones by default (an explicit `prepared` is
            // checked against pgbouncer's version before the study).
            mode: self.protocol.unwrap_or(
                if self
                    .pooler
                    .iter()
                    .flatten()
                    .any(|p| p.pgbouncer() == Some(crate::model::PoolMode::Transaction))
                {
                    QueryMode::Extended
                } else {
                    QueryMode::Prepared
                },
            ),
            init_sql: self.init_sql.take(),
            workload_named: self.workload.is_some(),
            sets: self.script_sets(),
            order: Vec::new(),
        }
    }

    /// [`Settings::into_config`] after the hunt's defaults.
    fn into_config_checked(self) -> Result<StudyConfig, SettingsError> {
        self.check()?;
        self.check_combinations()?;
        let workloads = dedup(self.workload.clone().unwrap_or_else(|| vec!["tpcb".into()]));
        let workload = workloads[0].clone();
        let workloads = if workloads.len() > 1 {
            workloads
        } else {
            Vec::new()
        };
        let builds = crate::model::dedup_builds(self.pg_bin.clone().unwrap_or_default())
            .map_err(|e| self.error("pg_bin", e))?;
        let (server_build, pg_bin) = match <[PgBuild; 1]>::try_from(builds) {
            Ok([one]) => (Some(one), Vec::new()),
            Err(several) => (None, several),
        };
        let retry = RetryPolicy::default();
        let tries = dedup(self.max_tries.clone().unwrap_or(vec![retry.max_tries]));
        let (max_tries, tries_factor) = match tries.as_slice() {
            [one] => (*one, Vec::new()),
            _ => (tries[0], tries),
        };
        let mut fixed = Vec::new();
        let mut setting_factors = Vec::new();
        for (name, values) in self.settings_with_cluster()? {
            match dedup(values).as_slice() {
                [one] => fixed.push((name, one.clone())),
                several => setting_factors.push((name, several.to_vec())),
            }
        }
        if self.log_violations == Some(true) {
            self.add_violation_logging(&mut fixed);
        }
        let shard = self.shard_spec()?;
        let checks = self.declared_checks()?;
        let precision = self.precision_plan()?;
        let cluster = self.cluster()?;
        let repeat = match precision {
            // The sequential rule's first stage.
            Some(_) => self
                .repeat
                .unwrap_or(0)
                .max(crate::stats::sequential::FIRST_STAGE as u32),
            None => self.repeat.unwrap_or(3),
        };
        let mut s = self;
        Ok(StudyConfig {
            load: s.external_load(),
            scripts: s.scripts_config(),
            workload,
            workloads,
            scale: dedup(s.scale.unwrap_or_default()),
            isolation: dedup(s.isolation.unwrap_or_default()),
            strategies: dedup(s.strategy.unwrap_or_default()),
            params: (s.params.unwrap_or_default().into_iter())
                .map(|(k, v)| (k, dedup(v)))
                .collect(),
            clients: dedup(s.clients.unwrap_or_else(|| vec![16])),
            pool_size: dedup(s.pool_size.unwrap_or_default()),
            rate: dedup(s.rate.unwrap_or_default()),
            latency_limit: s.latency_limit,
            faults: s.fault.unwrap_or_default(),
            fault_plans: dedup(s.fault_plan.unwrap_or_default()),
            exclude_faulted: s.exclude_faulted.unwrap_or(false),
            pooler: PoolerConfig {
                poolers: dedup(s.pooler.unwrap_or_default()),
                sizes: dedup(s.pooler_size.unwrap_or_default()),
                processes: s.pooler_processes,
                bin: s.pgbouncer_bin,
            },
            max_tries: tries_factor,
            setting_factors,
            pg_bin,
            order: s.order.unwrap_or_default(),
            baseline: s.baseline,
            file: None,
            resume: None,
            repeat,
            precision,
            hunt: None,
            cpus: s.cpus,
            calibrate: None,
            duration: s.duration.unwrap_or(Duration::from_secs(10)),
            warmup: match s.transactions {
                Some(_) => Duration::ZERO,
                None => s.warmup.unwrap_or(Duration::from_secs(2)),
            },
            transactions: s.transactions.map(u64::from),
            pgbench: None,
            server_wait: s.server_wait.unwrap_or(Duration::from_secs(60)),
            retry: RetryPolicy {
                max_tries,
                retry_on: dedup(s.retry_on.unwrap_or(retry.retry_on)),
                backoff: s.backoff.unwrap_or(retry.backoff),
            },
            threads: s.threads.map(|t| t as usize),
            sample_interval: s.sample_interval.unwrap_or(Duration::from_secs(5)),
            observe: s.observe.unwrap_or_default(),
            // Every shard must draw the same seed: without one given, a
            // sharded study's is 0 (docs/src/reference/sharded-runs.md).
            seed: s
                .seed
                .unwrap_or_else(|| if shard.is_some() { 0 } else { rand::random() }),
            target: TargetConfig {
                dsn: s.dsn,
                external_from_env: s.external.unwrap_or(false),
                pg_bin: server_build,
                settings: fixed,
                server_user: s.server_user.unwrap_or_else(|| "postgres".into()),
                // A failover manager's cluster is reached as applications
                // reach it: every client to the first node that takes
                // writes (target_session_attrs=read-write).
                host_policy: if cluster.ha == Ha::None {
                    s.host_policy.unwrap_or_default()
                } else {
                    HostPolicy::First
                },
                cluster,
            },
            out: s.out,
            quiet: s.quiet.unwrap_or(false),
            fail_on_violation: s.fail_on_violation.unwrap_or(false),
            log_violations: s.log_violations.unwrap_or(false),
            metrics_listen: s.metrics_listen,
            shard,
            shard_wait: s.shard_wait.unwrap_or(Duration::from_secs(60)),
            checks,
        })
    }
}

/// `v` without repeats, in first-seen order.
pub(crate) fn dedup<T: PartialEq>(v: Vec<T>) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}
