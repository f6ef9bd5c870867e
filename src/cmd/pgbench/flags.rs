//! pgbench 15's command line: its options as clap arguments
//! ([`PgbenchArgs`]) and their checks, with pgbench's messages, into an
//! [`Invocation`].

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use crate::model::{Isolation, QueryMode};

/// `isobench pgbench`: PostgreSQL 15's pgbench options, short and long,
/// as pgbench spells them (values are checked by
/// [`Invocation::from_args`] with pgbench's messages).
/// Options may follow DBNAME, as with pgbench.
#[derive(Debug, Default, Args)]
pub struct PgbenchArgs {
    /// Invoke initialization mode.
    #[arg(short = 'i', long, help_heading = "Initialization options")]
    pub initialize: bool,
    /// Run selected initialization steps (of dtgGvpf) [default: dtgvp].
    #[arg(
        short = 'I',
        long,
        value_name = "STEPS",
        help_heading = "Initialization options"
    )]
    pub init_steps: Option<String>,
    /// Set fill factor (isobench: only 100).
    #[arg(
        short = 'F',
        long,
        value_name = "NUM",
        help_heading = "Initialization options"
    )]
    pub fillfactor: Option<String>,
    /// Do not run VACUUM during initialization or before tests.
    #[arg(short = 'n', long, help_heading = "Initialization options")]
    pub no_vacuum: bool,
    /// Quiet logging during initialization.
    #[arg(short = 'q', long, help_heading = "Initialization options")]
    pub quiet: bool,
    /// Scaling factor.
    #[arg(
        short = 's',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Initialization options"
    )]
    pub scale: Option<String>,
    /// Create foreign key constraints between tables.
    #[arg(long, help_heading = "Initialization options")]
    pub foreign_keys: bool,
    /// Create indexes in this tablespace (refused by isobench).
    #[arg(
        long,
        value_name = "TABLESPACE",
        help_heading = "Initialization options"
    )]
    pub index_tablespace: Option<String>,
    /// Partition pgbench_accounts with this method (refused by isobench).
    #[arg(
        long,
        value_name = "range|hash",
        help_heading = "Initialization options"
    )]
    pub partition_method: Option<String>,
    /// Partition pgbench_accounts into NUM parts (isobench: only 0).
    #[arg(long, value_name = "NUM", help_heading = "Initialization options")]
    pub partitions: Option<String>,
    /// Create tables in this tablespace (refused by isobench).
    #[arg(
        long,
        value_name = "TABLESPACE",
        help_heading = "Initialization options"
    )]
    pub tablespace: Option<String>,
    /// Create tables as unlogged tables (refused by isobench).
    #[arg(long, help_heading = "Initialization options")]
    pub unlogged_tables: bool,
    /// Add builtin script NAME weighted at W (`-b list` lists them).
    #[arg(
        short = 'b',
        long,
        value_name = "NAME[@W]",
        help_heading = "Options to select what to run"
    )]
    pub builtin: Vec<String>,
    /// Add script FILENAME weighted at W.
    #[arg(
        short = 'f',
        long,
        value_name = "FILENAME[@W]",
        help_heading = "Options to select what to run"
    )]
    pub file: Vec<String>,
    /// Skip updates of pgbench_tellers and pgbench_branches (-b simple-update).
    #[arg(short = 'N', long, help_heading = "Options to select what to run")]
    pub skip_some_updates: bool,
    /// Perform SELECT-only transactions (-b select-only).
    #[arg(short = 'S', long, help_heading = "Options to select what to run")]
    pub select_only: bool,
    /// Number of concurrent database clients [default: 1].
    #[arg(
        short = 'c',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub client: Option<String>,
    /// Establish a new connection for each transaction (refused by isobench).
    #[arg(short = 'C', long, help_heading = "Benchmarking options")]
    pub connect: bool,
    /// Define variable for use by custom script.
    #[arg(
        short = 'D',
        long,
        value_name = "VARNAME=VALUE",
        help_heading = "Benchmarking options"
    )]
    pub define: Vec<String>,
    /// Number of threads [default: 1].
    #[arg(
        short = 'j',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub jobs: Option<String>,
    /// Write transaction times to log file (refused by isobench).
    #[arg(short = 'l', long, help_heading = "Benchmarking options")]
    pub log: bool,
    /// Count transactions lasting more than NUM ms as late.
    #[arg(
        short = 'L',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub latency_limit: Option<String>,
    /// Protocol for submitting queries: simple|extended|prepared [default: simple].
    #[arg(
        short = 'M',
        long,
        value_name = "MODE",
        help_heading = "Benchmarking options"
    )]
    pub protocol: Option<String>,
    /// Show progress report every NUM seconds.
    #[arg(
        short = 'P',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub progress: Option<String>,
    /// Report latencies, failures, and retries per command.
    #[arg(short = 'r', long, help_heading = "Benchmarking options")]
    pub report_per_command: bool,
    /// Target rate in transactions per second.
    #[arg(
        short = 'R',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub rate: Option<String>,
    /// Number of transactions each client runs [default: 10].
    #[arg(
        short = 't',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub transactions: Option<String>,
    /// Duration of benchmark test in seconds.
    #[arg(
        short = 'T',
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub time: Option<String>,
    /// Vacuum all four standard tables before tests.
    #[arg(short = 'v', long, help_heading = "Benchmarking options")]
    pub vacuum_all: bool,
    /// Aggregate data over NUM seconds (refused by isobench).
    #[arg(long, value_name = "NUM", help_heading = "Benchmarking options")]
    pub aggregate_interval: Option<String>,
    /// Report the failures grouped by basic types.
    #[arg(long, help_heading = "Benchmarking options")]
    pub failures_detailed: bool,
    /// Prefix for transaction time log file (refused by isobench).
    #[arg(long, value_name = "PREFIX", help_heading = "Benchmarking options")]
    pub log_prefix: Option<String>,
    /// Max number of tries to run transaction [default: 1].
    #[arg(
        long,
        value_name = "NUM",
        allow_hyphen_values = true,
        help_heading = "Benchmarking options"
    )]
    pub max_tries: Option<String>,
    /// Use Unix epoch timestamps for progress.
    #[arg(long, help_heading = "Benchmarking options")]
    pub progress_timestamp: bool,
    /// Set random seed ("time", "rand", integer).
    #[arg(long, value_name = "SEED", help_heading = "Benchmarking options")]
    pub random_seed: Option<String>,
    /// Fraction of transactions to log (refused by isobench).
    #[arg(long, value_name = "NUM", help_heading = "Benchmarking options")]
    pub sampling_rate: Option<String>,
    /// Show builtin script code, then exit.
    #[arg(long, value_name = "NAME", help_heading = "Benchmarking options")]
    pub show_script: Option<String>,
    /// Print messages of all errors (isobench: counted by reason in report.md instead).
    #[arg(long, help_heading = "Benchmarking options")]
    pub verbose_errors: bool,
    /// Print debugging output (refused by isobench).
    #[arg(short = 'd', long, help_heading = "Common options")]
    pub debug: bool,
    /// Database server host or socket directory.
    #[arg(
        short = 'h',
        long,
        value_name = "HOSTNAME",
        help_heading = "Common options"
    )]
    pub host: Option<String>,
    /// Database server port number.
    #[arg(
        short = 'p',
        long,
        value_name = "PORT",
        help_heading = "Common options"
    )]
    pub port: Option<String>,
    /// Connect as specified database user.
    #[arg(
        short = 'U',
        long,
        value_name = "USERNAME",
        help_heading = "Common options"
    )]
    pub username: Option<String>,
    /// Output version information, then exit.
    #[arg(short = 'V', long, help_heading = "Common options")]
    pub version: bool,
    /// Show this help, then exit.
    #[arg(short = '?', long, action = clap::ArgAction::Help, help_heading = "Common options")]
    pub help: Option<bool>,
    /// isobench's results directory (default `results/<timestamp>`).
    #[arg(short = 'o', long, value_name = "DIR", help_heading = "isobench")]
    pub out: Option<PathBuf>,
    /// The database (default: PGDATABASE, else the user name); naming it uses that server as is.
    #[arg(value_name = "DBNAME")]
    pub dbname: Option<String>,
}

/// pgbench's transactions per client when neither `-t` nor `-T` is given.
pub const DEFAULT_TRANSACTIONS: u32 = 10;

/// How a run ends: `-t` (transactions per client) or `-T` (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Transactions(u32),
    Time(u32),
}

/// A pgbench option isobench cannot honour, with what to do instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("option {option} is not supported by isobench pgbench: {why}")]
pub struct Refused {
    /// The option as pgbench spells it, e.g. `-C/--connect`.
    pub option: String,
    pub why: String,
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

/// What `isobench pgbench` was asked to do, checked.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `-i`: load pgbench's tables and exit.
    pub initialize: bool,
    /// `-I` steps (default `dtgvp`).
    pub init_steps: String,
    pub foreign_keys: bool,
    pub no_vacuum: bool,
    /// `-s`, when given.
    pub scale: Option<u32>,
    /// `-f FILE[@W]`, in order.
    pub files: Vec<(String, u32)>,
    /// `-b NAME[@W]` (and `-S`, `-N`), full names, in order; `tpcb-like`
    /// when no script is named.
    pub builtins: Vec<(String, u32)>,
    pub defines: Vec<(String, String)>,
    pub clients: u32,
    pub threads: u32,
    /// `-t` or `-T` (default `-t` [`DEFAULT_TRANSACTIONS`]).
    pub end: End,
    pub rate: Option<f64>,
    /// `-L`, ms.
    pub latency_limit_ms: Option<f64>,
    pub mode: QueryMode,
    /// `-P`, s.
    pub progress_s: Option<u32>,
    pub progress_timestamp: bool,
    pub per_command: bool,
    pub failures_detailed: bool,
    pub max_tries: u32,
    pub seed: Option<u64>,
    /// The level from `PGOPTIONS` (`-c default_transaction_isolation=...`),
    /// read committed (PostgreSQL's default) otherwise.
    pub isolation: Isolation,
    /// Other `-c NAME=VALUE` of `PGOPTIONS` (for the managed server).
    pub pgoptions_settings: Vec<(String, String)>,
    pub connection: Connection,
    /// A connection option, DBNAME or `PG*` variable names a server.
    pub named_server: bool,
    pub out: Option<PathBuf>,
    /// `-V`, `-b list`, `--show-script NAME`: print and exit.
    pub print_only: Option<String>,
}

/// pgbench 15's description of a built-in script (`transaction type:`).
pub fn builtin_desc(name: &str) -> &'static str {
    match name {
        "tpcb-like" => "<builtin: TPC-B (sort of)>",
        "simple-update" => "<builtin: simple update>",
        _ => "<builtin: select only>",
    }
}

/// The built-in script `arg` names, or whose unique prefix it is.
fn builtin_name(arg: &str) -> Result<&'static str> {
    let names = ["tpcb-like", "simple-update", "select-only"];
    let found: Vec<&str> = names.into_iter().filter(|n| n.starts_with(arg)).collect();
    match found.as_slice() {
        [n] => Ok(n),
        [] => bail!(
            "no builtin script found for name \"{arg}\" (available: tpcb-like, simple-update, select-only)"
        ),
        _ => bail!(
            "ambiguous builtin name: {} builtin scripts found for prefix \"{arg}\"",
            found.len()
        ),
    }
}

fn int(what: &str, v: &str, min: i64) -> Result<i64> {
    match v.trim().parse::<i64>() {
        Ok(n) if n >= min => Ok(n),
        _ => bail!("invalid {what}: \"{v}\""),
    }
}

/// `NAME=VALUE` settings, in order.
type PgSettings = Vec<(String, String)>;

/// `-c default_transaction_isolation=X` (or `--default_transaction_isolation=X`,
/// `-cdefault-transaction-isolation=X`) and the other settings in PGOPTIONS.
fn read_pgoptions(opts: &str) -> Result<(Option<Isolation>, PgSettings)> {
    // libpq: words split at spaces, a backslash escapes the next character
    // (`repeatable\ read`).
    let mut owned: Vec<String> = vec![String::new()];
    let mut chars = opts.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => owned.last_mut().expect("one word").extend(chars.next()),
            c if c.is_whitespace() => owned.push(String::new()),
            c => owned.last_mut().expect("one word").push(c),
        }
    }
    let words: Vec<&str> = owned
        .iter()
        .map(String::as_str)
        .filter(|w| !w.is_empty())
        .collect();
    let mut settings = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let kv = if w == "-c" {
            i += 1;
            words.get(i).copied()
        } else if let Some(rest) = w.strip_prefix("-c") {
            Some(rest)
        } else {
            w.strip_prefix("--")
        };
        if let Some((k, v)) = kv.and_then(|kv| kv.split_once('=')) {
            settings.push((k.replace('-', "_"), v.trim_matches('\'').to_string()));
        }
        i += 1;
    }
    let mut isolation = None;
    settings.retain(|(k, v)| {
        if k == "default_transaction_isolation" {
            isolation = Some(v.clone());
            false
        } else {
            true
        }
    });
    let isolation = isolation
        .map(|v| {
            v.parse::<Isolation>()
                .map_err(|e| anyhow!("PGOPTIONS default_transaction_isolation: {e}"))
        })
        .transpose()?;
    Ok((isolation, settings))
}

impl Invocation {
    /// Checks the options as pgbench 15 does (its messages), refuses the
    /// ones isobench cannot honour ([`Refused`]), and reads `env` for
    /// libpq's variables (`PGOPTIONS` for the isolation level).
    ///
    /// Errors: a bad value (pgbench's message), a refused option, options
    /// of the other mode (`-i` with benchmarking options or the reverse).
    pub fn from_args(a: PgbenchArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Invocation> {
        let refuse = |option: &str, why: &str| -> anyhow::Error {
            Refused {
                option: option.into(),
                why: why.into(),
            }
            .into()
        };
        if a.version {
            return Ok(Invocation::print(format!(
                "pgbench (isobench {}; PostgreSQL 15's pgbench options)\n",
                env!("CARGO_PKG_VERSION")
            )));
        }
        if a.builtin.iter().any(|b| b == "list") {
            return Ok(Invocation::print(
                "Available builtin scripts:\n      tpcb-like: <builtin: TPC-B (sort of)>\n  simple-update: <builtin: simple update>\n    select-only: <builtin: select only>\n\n".into(),
            ));
        }
        if let Some(name) = &a.show_script {
            let n = builtin_name(name)?;
            let text = crate::pgbench::script::BUILTINS
                .iter()
                .find(|(b, _)| *b == n)
                .map(|(_, t)| *t)
                .unwrap_or_default();
            return Ok(Invocation::print(format!(
                "-- {n}: {}\n{text}",
                builtin_desc(n)
            )));
        }
        // Options isobench cannot honour, by name.
        let refusals: [(bool, &str, &str); 10] = [
            (
                a.connect,
                "-C/--connect",
                "isobench keeps one connection per client for the run",
            ),
            (
                a.log,
                "-l/--log",
                "isobench records latencies as HdrHistogram logs (histograms/ in the results directory) instead of per-transaction log files",
            ),
            (
                a.log_prefix.is_some(),
                "--log-prefix",
                "there are no per-transaction log files (see -l)",
            ),
            (
                a.sampling_rate.is_some(),
                "--sampling-rate",
                "there are no per-transaction log files (see -l)",
            ),
            (
                a.aggregate_interval.is_some(),
                "--aggregate-interval",
                "isobench keeps per-second figures in results.json (runs[].per_second) instead",
            ),
            (
                a.debug,
                "-d/--debug",
                "use ISOBENCH_LOG=debug for isobench's own debugging output",
            ),
            (
                a.tablespace.is_some(),
                "--tablespace",
                "isobench's loader creates the tables in the default tablespace",
            ),
            (
                a.index_tablespace.is_some(),
                "--index-tablespace",
                "isobench's loader creates the indexes in the default tablespace",
            ),
            (
                a.unlogged_tables,
                "--unlogged-tables",
                "isobench's loader creates logged tables",
            ),
            (
                a.partition_method.is_some(),
                "--partition-method",
                "isobench's loader does not partition pgbench_accounts",
            ),
        ];
        if let Some((_, opt, why)) = refusals.iter().find(|(given, _, _)| *given) {
            return Err(refuse(opt, why));
        }
        if let Some(p) = &a.partitions
            && int("number of partitions", p, 0)? != 0
        {
            return Err(refuse(
                "--partitions",
                "isobench's loader does not partition pgbench_accounts (only --partitions=0)",
            ));
        }
        if let Some(f) = &a.fillfactor {
            let f = int("fillfactor", f, 10)?;
            if f > 100 {
                bail!("invalid fillfactor: \"{f}\"");
            }
            if f != 100 {
                return Err(refuse(
                    "-F/--fillfactor",
                    "isobench's loader uses pgbench's default fillfactor 100 (only -F 100)",
                ));
            }
        }
        let mut foreign_keys = a.foreign_keys;
        let mut no_vacuum = a.no_vacuum;
        let init_steps = match &a.init_steps {
            None => "dtgvp".to_string(),
            Some(steps) => {
                if let Some(c) = steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
                    bail!(
                        "unrecognized initialization step \"{c}\"\nAllowed step characters are: \"dtgGvpf\"."
                    );
                }
                let has = |c: char| steps.contains(c);
                if !(has('t') && (has('g') || has('G')) && has('p')) {
                    return Err(refuse(
                        "-I/--init-steps",
                        "isobench's loader creates, fills and indexes the tables in one step: the steps must include t, g (or G) and p (d, v and f are optional)",
                    ));
                }
                foreign_keys |= has('f');
                no_vacuum |= !has('v');
                steps.clone()
            }
        };
        let scale = a
            .scale
            .as_deref()
            .map(|s| int("scaling factor", s, 1).map(|n| n as u32))
            .transpose()?;
        // pgbench's mode checks.
        let init_only = a.init_steps.is_some()
            || a.fillfactor.is_some()
            || a.foreign_keys
            || a.partitions.is_some()
            || a.quiet;
        let bench_only = !a.builtin.is_empty()
            || !a.file.is_empty()
            || a.skip_some_updates
            || a.select_only
            || a.client.is_some()
            || !a.define.is_empty()
            || a.jobs.is_some()
            || a.latency_limit.is_some()
            || a.protocol.is_some()
            || a.progress.is_some()
            || a.report_per_command
            || a.rate.is_some()
            || a.time.is_some()
            || a.transactions.is_some()
            || a.vacuum_all
            || a.failures_detailed
            || a.max_tries.is_some()
            || a.progress_timestamp
            || a.random_seed.is_some()
            || a.verbose_errors;
        if a.initialize && bench_only {
            bail!("some of the specified options cannot be used in initialization (-i) mode");
        }
        if !a.initialize && init_only {
            bail!("some of the specified options cannot be used in benchmarking mode");
        }
        let weighted = |arg: &str| -> Result<(String, u32)> {
            crate::pgbench::script::split_weight(arg)
                .map(|(n, w)| (n.to_string(), w))
                .map_err(|e| anyhow!("invalid weight specification: {e}"))
        };
        let mut files = Vec::new();
        for f in &a.file {
            files.push(weighted(f)?);
        }
        let mut builtins = Vec::new();
        for b in &a.builtin {
            let (n, w) = weighted(b)?;
            builtins.push((builtin_name(&n)?.to_string(), w));
        }
        if a.select_only {
            builtins.push(("select-only".into(), 1));
        }
        if a.skip_some_updates {
            builtins.push(("simple-update".into(), 1));
        }
        if files.is_empty() && builtins.is_empty() {
            builtins.push(("tpcb-like".into(), 1));
        }
        let mut defines = Vec::new();
        for d in &a.define {
            match d.split_once('=') {
                Some((k, v)) if !k.is_empty() => defines.push((k.to_string(), v.to_string())),
                _ => bail!("invalid variable definition: \"{d}\""),
            }
        }
        let clients = match &a.client {
            Some(c) => int("number of clients", c, 1)? as u32,
            None => 1,
        };
        let threads = match &a.jobs {
            Some(j) => int("number of threads", j, 1)? as u32,
            None => 1,
        };
        if threads > clients {
            bail!("number of threads ({threads}) must not exceed number of clients ({clients})");
        }
        let transactions = a
            .transactions
            .as_deref()
            .map(|t| int("number of transactions", t, 1).map(|n| n as u32))
            .transpose()?;
        let time = a
            .time
            .as_deref()
            .map(|t| int("duration", t, 1).map(|n| n as u32))
            .transpose()?;
        let end = match (transactions, time) {
            (Some(_), Some(_)) => {
                bail!("specify either a number of transactions (-t) or a duration (-T), not both")
            }
            (Some(n), None) => End::Transactions(n),
            (None, Some(s)) => End::Time(s),
            (None, None) => End::Transactions(DEFAULT_TRANSACTIONS),
        };
        let rate = match &a.rate {
            Some(r) => match r.trim().parse::<f64>() {
                Ok(x) if x > 0.0 => Some(x),
                _ => bail!("invalid rate limit: \"{r}\""),
            },
            None => None,
        };
        let latency_limit_ms = match &a.latency_limit {
            Some(l) => match l.trim().parse::<f64>() {
                Ok(x) if x > 0.0 => Some(x),
                _ => bail!("invalid latency limit: \"{l}\""),
            },
            None => None,
        };
        if latency_limit_ms.is_some() && rate.is_none() {
            return Err(refuse(
                "-L/--latency-limit",
                "isobench applies a latency limit to open-loop runs only: give -R/--rate too",
            ));
        }
        let mode = match a.protocol.as_deref() {
            None => QueryMode::Simple,
            Some(m) => m
                .parse::<QueryMode>()
                .map_err(|_| anyhow!("invalid query mode (-M): \"{m}\""))?,
        };
        let progress_s = a
            .progress
            .as_deref()
            .map(|p| int("thread progress delay", p, 1).map(|n| n as u32))
            .transpose()?;
        let max_tries = match &a.max_tries {
            Some(m) => int("number of maximum tries", m, 0)? as u32,
            None => 1,
        };
        if max_tries == 0 {
            return Err(refuse(
                "--max-tries=0",
                "isobench needs a bound on the tries of a transaction (give --max-tries=N)",
            ));
        }
        let seed = match a.random_seed.as_deref() {
            None | Some("time") => None,
            Some("rand") => Some(rand::random::<u64>()),
            Some(s) => Some(s.parse::<u64>().map_err(|_| {
                anyhow!("unrecognized random seed option \"{s}\"\nExpecting an unsigned integer, \"time\" or \"rand\".")
            })?),
        };
        let pgoptions = env("PGOPTIONS");
        let (isolation, pgoptions_settings) = match &pgoptions {
            Some(o) => read_pgoptions(o)?,
            None => (None, Vec::new()),
        };
        let connection = Connection {
            host: a.host,
            port: a.port,
            user: a.username,
            dbname: a.dbname,
            options: pgoptions,
        };
        let named_server = connection.host.is_some()
            || connection.port.is_some()
            || connection.user.is_some()
            || connection.dbname.is_some()
            || [
                "PGHOST",
                "PGPORT",
                "PGUSER",
                "PGDATABASE",
                "PGHOSTADDR",
                "PGSERVICE",
            ]
            .iter()
            .any(|v| env(v).is_some());
        Ok(Invocation {
            initialize: a.initialize,
            init_steps,
            foreign_keys,
            no_vacuum,
            scale,
            files,
            builtins,
            defines,
            clients,
            threads,
            end,
            rate,
            latency_limit_ms,
            mode,
            progress_s,
            progress_timestamp: a.progress_timestamp,
            per_command: a.report_per_command,
            failures_detailed: a.failures_detailed,
            max_tries,
            seed,
            isolation: isolation.unwrap_or(Isolation::ReadCommitted),
            pgoptions_settings,
            connection,
            named_server,
            out: a.out,
            print_only: None,
        })
    }

    fn print(text: String) -> Invocation {
        Invocation {
            initialize: false,
            init_steps: String::new(),
            foreign_keys: false,
            no_vacuum: false,
            scale: None,
            files: Vec::new(),
            builtins: Vec::new(),
            defines: Vec::new(),
            clients: 1,
            threads: 1,
            end: End::Transactions(DEFAULT_TRANSACTIONS),
            rate: None,
            latency_limit_ms: None,
            mode: QueryMode::Simple,
            progress_s: None,
            progress_timestamp: false,
            per_command: false,
            failures_detailed: false,
            max_tries: 1,
            seed: None,
            isolation: Isolation::ReadCommitted,
            pgoptions_settings: Vec::new(),
            connection: Connection::default(),
            named_server: false,
            out: None,
            print_only: Some(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use crate::model::Isolation;
    use clap::Parser;

    fn inv(args: &[&str], env: &[(&str, &str)]) -> Result<Invocation> {
        let mut full = vec!["isobench", "pgbench"];
        full.extend_from_slice(args);
        let Command::Pgbench(a) = Cli::try_parse_from(full).unwrap().command.unwrap() else {
            panic!("not pgbench")
        };
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Invocation::from_args(*a, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn pgoptions_choose_the_level_in_every_spelling() {
        for o in [
            "-c default_transaction_isolation=serializable",
            "-cdefault_transaction_isolation=serializable",
            "--default-transaction-isolation=serializable",
            "-c statement_timeout=0 -c default_transaction_isolation='serializable'",
        ] {
            let i = inv(&[], &[("PGOPTIONS", o)]).unwrap();
            assert_eq!(i.isolation, Isolation::Serializable, "{o}");
        }
        let i = inv(
            &[],
            &[(
                "PGOPTIONS",
                "-c default_transaction_isolation=repeatable\\ read",
            )],
        );
        assert_eq!(i.unwrap().isolation, Isolation::RepeatableRead);
        let i = inv(&[], &[("PGOPTIONS", "-c work_mem=64MB")]).unwrap();
        assert_eq!(i.isolation, Isolation::ReadCommitted);
        assert_eq!(
            i.pgoptions_settings,
            vec![("work_mem".into(), "64MB".into())]
        );
        // PGOPTIONS alone names no server; PGHOST does.
        assert!(!i.named_server);
        assert!(inv(&[], &[("PGHOST", "/tmp")]).unwrap().named_server);
        assert!(inv(&["mydb"], &[]).unwrap().named_server);
    }

    #[test]
    fn pgbench_defaults_and_long_forms() {
        let i = inv(&[], &[]).unwrap();
        assert_eq!(
            (i.clients, i.threads, i.max_tries, i.end),
            (1, 1, 1, End::Transactions(10))
        );
        assert_eq!(i.mode, QueryMode::Simple);
        assert_eq!(i.builtins, vec![("tpcb-like".to_string(), 1)]);
        let i = inv(
            &[
                "--client=8",
                "--jobs=4",
                "--time=60",
                "--builtin=simple@3",
                "-S",
                "db",
                "--progress=5",
            ],
            &[],
        )
        .unwrap();
        assert_eq!(
            (i.clients, i.threads, i.end, i.progress_s),
            (8, 4, End::Time(60), Some(5))
        );
        assert_eq!(
            i.builtins,
            vec![
                ("simple-update".to_string(), 3),
                ("select-only".to_string(), 1)
            ]
        );
        assert_eq!(i.dsn().as_deref(), Some("dbname='db'"));
        let e = inv(&["-c", "2", "-j", "4"], &[]).unwrap_err().to_string();
        assert!(e.contains("must not exceed number of clients"), "{e}");
        let e = inv(&["-b", "nosuch"], &[]).unwrap_err().to_string();
        assert!(e.contains("no builtin script found"), "{e}");
    }

    /// A custom script gets `:scale` = -s or 1 whatever the data's scale;
    /// a built-in script the data's; `-D scale=` wins.
    #[test]
    fn scale_of_custom_scripts_is_pgbenchs() {
        let d = |i: &Invocation| i.settings(7).define.unwrap_or_default();
        let custom = inv(&["-f", "x.sql"], &[]).unwrap();
        assert_eq!(d(&custom), vec![("scale".to_string(), "1".to_string())]);
        let custom_s = inv(&["-f", "x.sql", "-s", "3"], &[]).unwrap();
        assert_eq!(d(&custom_s), vec![("scale".to_string(), "3".to_string())]);
        let own = inv(&["-f", "x.sql", "-D", "scale=9"], &[]).unwrap();
        assert_eq!(d(&own), vec![("scale".to_string(), "9".to_string())]);
        let builtin = inv(&["-f", "x.sql", "-b", "tpcb"], &[]).unwrap();
        assert!(d(&builtin).is_empty());
        assert_eq!(builtin.settings(7).scale, Some(vec![7]));
    }
}
