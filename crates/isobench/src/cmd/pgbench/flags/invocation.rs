//! What `isobench pgbench` was asked to do, checked: print something,
//! initialize (`-i`), or run a benchmark.

use std::path::PathBuf;

use crate::model::{Isolation, QueryMode};
use crate::pgbench::script::Script;

/// pgbench's transactions per client when neither `-t` nor `-T` is given.
pub const DEFAULT_TRANSACTIONS: u32 = 10;

/// How a run ends: `-t` (transactions per client) or `-T` (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Transactions(u32),
    Time(u32),
}

/// Where a script came from: `-f FILE` (as given) or a built-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    File(String),
    Builtin(&'static str),
}

/// One script of the run, in command-line order: its source, weight and
/// parsed commands.
#[derive(Debug, Clone)]
pub struct ScriptChoice {
    pub source: ScriptSource,
    pub weight: u32,
    pub script: Script,
}

impl ScriptChoice {
    /// pgbench's description of the script (`transaction type:`, `SQL
    /// script N:`): the file name as given, or `<builtin: ...>`.
    pub fn desc(&self) -> String {
        match &self.source {
            ScriptSource::File(f) => f.clone(),
            ScriptSource::Builtin(b) => builtin_desc(b).to_string(),
        }
    }
}

pub use crate::pgbench::script::builtin_desc;

/// `--partition-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

impl PartitionMethod {
    /// pgbench's name of the method (`partition method:` of the summary).
    pub fn name(self) -> &'static str {
        match self {
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }
}

/// `pgbench -i`'s options, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct InitOptions {
    /// The steps to run, in order (`-I`, with `-n` and `--foreign-keys`
    /// applied as pgbench applies them; blanks are skipped).
    pub steps: String,
    pub scale: u32,
    /// `-F`, 10 to 100.
    pub fillfactor: u32,
    pub unlogged: bool,
    pub tablespace: Option<String>,
    pub index_tablespace: Option<String>,
    /// `--partitions`, 0: not partitioned.
    pub partitions: u32,
    /// Range unless `--partition-method hash`, when partitioned.
    pub partition_method: Option<PartitionMethod>,
    /// `-q`: a progress line every 5 s instead of every 100,000 rows.
    pub quiet: bool,
}

/// The transaction logs (`-l`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogOptions {
    /// `--log-prefix`, default `pgbench_log`.
    pub prefix: String,
    /// `--sampling-rate`: the fraction of transactions logged.
    pub sampling_rate: Option<f64>,
    /// `--aggregate-interval`, s: one line per interval instead.
    pub aggregate_s: Option<u32>,
}

/// The connection options of the command line (libpq fills the rest
/// from `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    pub host: Option<String>,
    pub port: Option<String>,
    pub user: Option<String>,
    pub dbname: Option<String>,
    /// `PGOPTIONS` as given (sent as the connection's `options`).
    pub options: Option<String>,
}

/// What `isobench pgbench` does.
#[derive(Debug, Clone)]
pub enum Action {
    /// `--help`, `--version` (stdout), `-b list`, `--show-script`
    /// (stderr): print and exit 0.
    Print { text: String, stderr: bool },
    /// `-i`.
    Init(InitOptions),
    /// A benchmark run.
    Bench,
}

/// What `isobench pgbench` was asked to do, checked.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub action: Action,
    /// `-s`, when given (reported for custom scripts; ignored, with
    /// pgbench's warning, for built-in ones on a named server).
    pub scale: Option<u32>,
    /// The scripts in command-line order (`tpcb-like` when none).
    pub scripts: Vec<ScriptChoice>,
    /// `-D NAME=VALUE`, in order.
    pub defines: Vec<(String, String)>,
    pub clients: u32,
    /// `-j`, at most the clients (pgbench lowers it).
    pub threads: u32,
    /// `-t` or `-T` (default `-t` [`DEFAULT_TRANSACTIONS`]).
    pub end: End,
    /// `-R`, tx/s.
    pub rate: Option<f64>,
    /// `-L`, ms.
    pub latency_limit_ms: Option<f64>,
    pub mode: QueryMode,
    /// `-P`, s.
    pub progress_s: Option<u32>,
    pub progress_timestamp: bool,
    pub per_command: bool,
    pub failures_detailed: bool,
    /// `--max-tries`; 0: unlimited (with `-T` or `-L` only).
    pub max_tries: u32,
    /// `--random-seed` (or `PGBENCH_RANDOM_SEED`): the seed; `None`:
    /// drawn.
    pub seed: Option<u64>,
    /// `-C`: a new connection for every transaction.
    pub connect: bool,
    /// `-l` and its options.
    pub log: Option<LogOptions>,
    pub no_vacuum: bool,
    pub vacuum_all: bool,
    /// `-d`: pgbench's debugging lines on stderr.
    pub debug: bool,
    pub verbose_errors: bool,
    /// `--exit-on-abort` (pgbench 17): the first client that aborts ends
    /// the run, with no summary.
    pub exit_on_abort: bool,
    /// The level from `PGOPTIONS` (`-c default_transaction_isolation=...`),
    /// read committed (PostgreSQL's default) otherwise; on a named server
    /// the level its sessions get is read from it instead.
    pub isolation: Isolation,
    /// Other `-c NAME=VALUE` of `PGOPTIONS` (for the managed server).
    pub pgoptions_settings: Vec<(String, String)>,
    pub connection: Connection,
    /// A connection option, DBNAME or `PG*` variable names a server.
    pub named_server: bool,
    /// isobench's `-o/--out`.
    pub out: Option<PathBuf>,
    /// isobench's `--fresh-copy`: run in a fresh copy, as `isobench run`.
    pub fresh_copy: bool,
}

impl Invocation {
    /// Only custom scripts: pgbench gives them `:scale` = `-s`, else 1.
    pub fn custom_only(&self) -> bool {
        self.scripts
            .iter()
            .all(|s| matches!(s.source, ScriptSource::File(_)))
    }

    /// Several scripts: pgbench reports each one's figures.
    pub fn per_script(&self) -> bool {
        self.scripts.len() > 1
    }
}
