//! The options acted on in the order given, then checked against each
//! other, as pgbench 15's `main` does, with its messages (`option_parse_int`
//! for numbers, `parseScriptWeight`, `findBuiltin`, `process_file`,
//! `checkInitSteps`, the mode and logging checks).

use super::invocation::*;
use super::values::*;
use super::{Opt, PgbenchArgs, spec_of};
use crate::cmd::pgbench::version::Pgbench;
use crate::model::{Isolation, QueryMode};
use crate::pgbench::script::{self, BUILTINS, Script};

/// The most scripts pgbench runs (`MAX_SCRIPTS`).
const MAX_SCRIPTS: usize = 128;

/// What the options set, before the checks between them.
#[derive(Default)]
struct Given {
    init: bool,
    init_steps: Option<String>,
    fillfactor: Option<u32>,
    no_vacuum: bool,
    quiet: bool,
    scale: Option<u32>,
    foreign_keys: bool,
    index_tablespace: Option<String>,
    partition_method: Option<PartitionMethod>,
    partitions: u32,
    tablespace: Option<String>,
    unlogged: bool,
    scripts: Vec<ScriptChoice>,
    defines: Vec<(String, String)>,
    clients: Option<u32>,
    threads: Option<u32>,
    transactions: Option<u32>,
    time: Option<u32>,
    rate: Option<f64>,
    latency_limit_ms: Option<f64>,
    mode: Option<QueryMode>,
    progress: Option<u32>,
    progress_timestamp: bool,
    per_command: bool,
    failures_detailed: bool,
    max_tries: Option<u32>,
    seed: Option<u64>,
    connect: bool,
    log: bool,
    log_prefix: Option<String>,
    sampling_rate: Option<f64>,
    aggregate_s: Option<u32>,
    vacuum_all: bool,
    debug: bool,
    verbose_errors: bool,
    exit_on_abort: bool,
    host: Option<String>,
    port: Option<String>,
    user: Option<String>,
    /// pgbench 17's `-d/--dbname`.
    dbname: Option<String>,
    /// Whose options these are.
    version: Pgbench,
    out: Option<std::path::PathBuf>,
    fresh_copy: bool,
    /// pgbench's `benchmarking_option_set`, `initialization_option_set`.
    bench_option: bool,
    init_option: bool,
}

/// Acts on `args` as pgbench 15 does and checks them; `env` reads the
/// environment (`PGOPTIONS`, `PGDATABASE`, `PGUSER`, `PGHOST`, ...,
/// `PGBENCH_RANDOM_SEED`).
///
/// Errors: pgbench's message for the first bad option, file or script,
/// or for options that do not go together ([`Bad`], exit status 1).
pub fn parse(args: PgbenchArgs, env: &dyn Fn(&str) -> Option<String>) -> Result<Invocation, Bad> {
    let mut g = Given {
        version: Pgbench::of_options(env),
        ..Given::default()
    };
    if let Some(s) = env("PGBENCH_RANDOM_SEED") {
        g.seed = Some(random_seed(&s).map_err(|b| {
            b.then("pgbench: error: error while setting random seed from PGBENCH_RANDOM_SEED environment variable\n")
        })?);
    }
    for (opt, value) in &args.given {
        let v = value.as_deref().unwrap_or("");
        if let Some(print) = g.act(*opt, v)? {
            return Ok(printing(print));
        }
    }
    g.finish(args.operands, env)
}

/// An invocation that only prints.
fn printing(action: Action) -> Invocation {
    Invocation {
        action,
        scale: None,
        scripts: Vec::new(),
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
        connect: false,
        log: None,
        no_vacuum: false,
        vacuum_all: false,
        debug: false,
        verbose_errors: false,
        exit_on_abort: false,
        isolation: Isolation::ReadCommitted,
        pgoptions_settings: Vec::new(),
        connection: Connection::default(),
        named_server: false,
        out: None,
        fresh_copy: false,
    }
}

impl Given {
    /// One option, as pgbench's `switch` in `main` handles it. Returns
    /// what to print and exit with (`--help`, `-V`, `-b list`,
    /// `--show-script`).
    fn act(&mut self, opt: Opt, v: &str) -> Result<Option<Action>, Bad> {
        let name = option_name(opt, self.version);
        let int = |min: i64, max: i64| option_int(v, &name, min, max);
        match opt {
            Opt::Help => return Ok(Some(print_out(super::help_text()))),
            Opt::Version => return Ok(Some(print_out(super::version_text()))),
            Opt::Initialize => self.init = true,
            Opt::InitSteps => {
                check_init_steps(v)?;
                self.init_steps = Some(v.to_string());
                self.init_option = true;
            }
            Opt::Host => self.host = Some(v.to_string()),
            Opt::Port => self.port = Some(v.to_string()),
            Opt::Username => self.user = Some(v.to_string()),
            Opt::Dbname => self.dbname = Some(v.to_string()),
            Opt::NoVacuum => self.no_vacuum = true,
            Opt::VacuumAll => self.vacuum_all = true,
            Opt::Debug => self.debug = true,
            Opt::Client => self.clients = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Jobs => self.threads = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Connect => self.connect = true,
            Opt::ReportPerCommand => self.per_command = true,
            Opt::Scale => self.scale = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Transactions => self.transactions = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Time => self.time = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Log => self.log = true,
            Opt::Quiet => self.quiet = true,
            Opt::Builtin if v == "list" => {
                return Ok(Some(Action::Print {
                    text: builtin_list(),
                    stderr: true,
                }));
            }
            Opt::Builtin => {
                let (n, weight) = script_weight(v)?;
                self.add_builtin(find_builtin(&n)?, weight)?;
            }
            Opt::SelectOnly => self.add_builtin("select-only", 1)?,
            Opt::SkipSomeUpdates => self.add_builtin("simple-update", 1)?,
            Opt::File => {
                let (file, weight) = script_weight(v)?;
                let script = read_script(&file, weight)?;
                self.add(ScriptSource::File(file), weight, script)?;
            }
            Opt::Define => self.defines.push(define(v)?),
            Opt::Fillfactor => self.fillfactor = Some(int(10, 100)? as u32),
            Opt::Protocol => {
                self.mode = Some(match v {
                    "simple" => QueryMode::Simple,
                    "extended" => QueryMode::Extended,
                    "prepared" => QueryMode::Prepared,
                    _ => return Err(Bad::error(format!("invalid query mode (-M): \"{v}\""))),
                })
            }
            Opt::Progress => self.progress = Some(int(1, i32::MAX as i64)? as u32),
            Opt::Rate => self.rate = Some(positive(v, "invalid rate limit")?),
            Opt::LatencyLimit => {
                self.latency_limit_ms = Some(positive(v, "invalid latency limit")?)
            }
            Opt::UnloggedTables => self.unlogged = true,
            Opt::Tablespace => self.tablespace = Some(v.to_string()),
            Opt::IndexTablespace => self.index_tablespace = Some(v.to_string()),
            Opt::SamplingRate => {
                let r = atof(v);
                if !(r > 0.0 && r <= 1.0) {
                    return Err(Bad::error(format!("invalid sampling rate: \"{v}\"")));
                }
                self.sampling_rate = Some(r);
            }
            Opt::AggregateInterval => self.aggregate_s = Some(int(1, i32::MAX as i64)? as u32),
            Opt::ProgressTimestamp => self.progress_timestamp = true,
            Opt::LogPrefix => self.log_prefix = Some(v.to_string()),
            Opt::ForeignKeys => self.foreign_keys = true,
            Opt::RandomSeed => {
                self.seed = Some(random_seed(v).map_err(|b| {
                    b.then(
                    "pgbench: error: error while setting random seed from --random-seed option\n",
                )
                })?)
            }
            Opt::ShowScript => {
                let n = find_builtin(v)?;
                let (_, text) = BUILTINS.iter().find(|(b, _)| *b == n).expect("found");
                return Ok(Some(Action::Print {
                    text: format!("-- {n}: {}\n{text}\n", builtin_desc(n)),
                    stderr: true,
                }));
            }
            Opt::Partitions => self.partitions = int(0, i32::MAX as i64)? as u32,
            Opt::PartitionMethod => {
                self.partition_method = Some(match v.to_ascii_lowercase().as_str() {
                    "range" => PartitionMethod::Range,
                    "hash" => PartitionMethod::Hash,
                    _ => {
                        return Err(Bad::error(format!(
                            "invalid partition method, expecting \"range\" or \"hash\", got: \"{v}\""
                        )));
                    }
                })
            }
            Opt::FailuresDetailed => self.failures_detailed = true,
            Opt::MaxTries => {
                let n = atoi(v);
                if n < 0 {
                    return Err(Bad::error(format!(
                        "invalid number of maximum tries: \"{v}\""
                    )));
                }
                self.max_tries = Some(n as u32);
            }
            Opt::VerboseErrors => self.verbose_errors = true,
            Opt::ExitOnAbort => self.exit_on_abort = true,
            Opt::Out => self.out = Some(v.into()),
            Opt::FreshCopy => self.fresh_copy = true,
        }
        if is_bench_option(opt) {
            self.bench_option = true;
        }
        if is_init_option(opt) {
            self.init_option = true;
        }
        Ok(None)
    }

    fn add_builtin(&mut self, name: &'static str, weight: u32) -> Result<(), Bad> {
        let script = script::builtin(name, weight).map_err(Bad::error)?;
        self.add(ScriptSource::Builtin(name), weight, script)
    }

    /// pgbench's `addScript`.
    fn add(&mut self, source: ScriptSource, weight: u32, script: Script) -> Result<(), Bad> {
        if self.scripts.len() >= MAX_SCRIPTS {
            return Err(Bad::error(format!(
                "at most {MAX_SCRIPTS} SQL scripts are allowed"
            )));
        }
        self.scripts.push(ScriptChoice {
            source,
            weight,
            script,
        });
        Ok(())
    }

    /// The checks after the options (pgbench's `main` after `getopt`).
    fn finish(
        mut self,
        operands: Vec<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Invocation, Bad> {
        if self.scripts.is_empty() && !self.init {
            self.add_builtin("tpcb-like", 1)?;
            self.bench_option = true;
        }
        let mode = self.mode.unwrap_or(QueryMode::Simple);
        if mode != QueryMode::Simple {
            for s in &self.scripts {
                check_params(&s.script)?;
            }
        }
        let total: u64 = self.scripts.iter().map(|s| u64::from(s.weight)).sum();
        if total == 0 && !self.init {
            return Err(Bad::error("total script weight must not be zero"));
        }
        let clients = self.clients.unwrap_or(1);
        let threads = self.threads.unwrap_or(1).min(clients);
        let mut operands = operands.into_iter();
        // pgbench 17: `-d DBNAME`, else the first operand.
        let dbname = self.dbname.clone().or_else(|| operands.next());
        if let Some(extra) = operands.next() {
            return Err(Bad::error(format!(
                "too many command-line arguments (first is \"{extra}\")"
            ))
            .hint());
        }
        let (connection, named_server) = self.connection(dbname, env);
        let pgoptions = connection.options.clone();
        let (isolation, pgoptions_settings) = match &pgoptions {
            Some(o) => read_pgoptions(o)?,
            None => (None, Vec::new()),
        };
        let action = if self.init {
            Action::Init(self.init_options()?)
        } else {
            self.bench_checks()?;
            Action::Bench
        };
        let end = match (self.transactions, self.time) {
            (_, Some(s)) => End::Time(s),
            (Some(n), None) => End::Transactions(n),
            (None, None) => End::Transactions(DEFAULT_TRANSACTIONS),
        };
        let log = self.log.then(|| LogOptions {
            prefix: self
                .log_prefix
                .clone()
                .unwrap_or_else(|| "pgbench_log".into()),
            sampling_rate: self.sampling_rate,
            aggregate_s: self.aggregate_s,
        });
        Ok(Invocation {
            action,
            scale: self.scale,
            scripts: self.scripts,
            defines: self.defines,
            clients,
            threads,
            end,
            rate: self.rate,
            latency_limit_ms: self.latency_limit_ms,
            mode,
            progress_s: self.progress,
            progress_timestamp: self.progress_timestamp,
            per_command: self.per_command,
            failures_detailed: self.failures_detailed,
            max_tries: self.max_tries.unwrap_or(1),
            seed: self.seed,
            connect: self.connect,
            log,
            no_vacuum: self.no_vacuum,
            vacuum_all: self.vacuum_all,
            debug: self.debug,
            verbose_errors: self.verbose_errors,
            exit_on_abort: self.exit_on_abort,
            isolation: isolation.unwrap_or(Isolation::ReadCommitted),
            pgoptions_settings,
            connection,
            named_server,
            out: self.out,
            fresh_copy: self.fresh_copy,
        })
    }

    /// The connection options and whether they (or libpq's variables)
    /// name a server.
    fn connection(
        &self,
        dbname: Option<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> (Connection, bool) {
        let c = Connection {
            host: self.host.clone(),
            port: self.port.clone(),
            user: self.user.clone(),
            dbname,
            options: env("PGOPTIONS"),
        };
        let named = c.host.is_some()
            || c.port.is_some()
            || c.user.is_some()
            || c.dbname.is_some()
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
        (c, named)
    }

    /// `-i`'s checks and its steps, as pgbench 15 completes them.
    fn init_options(&self) -> Result<InitOptions, Bad> {
        if self.bench_option {
            return Err(Bad::error(
                "some of the specified options cannot be used in initialization (-i) mode",
            ));
        }
        if self.partitions == 0 && self.partition_method.is_some() {
            return Err(Bad::error(
                "--partition-method requires greater than zero --partitions",
            ));
        }
        let mut steps = self
            .init_steps
            .clone()
            .unwrap_or_else(|| "dtgvp".to_string());
        if self.no_vacuum {
            steps = steps.replace('v', " ");
        }
        if self.foreign_keys && !steps.contains('f') {
            steps.push('f');
        }
        Ok(InitOptions {
            steps,
            scale: self.scale.unwrap_or(1),
            fillfactor: self.fillfactor.unwrap_or(100),
            unlogged: self.unlogged,
            tablespace: self.tablespace.clone(),
            index_tablespace: self.index_tablespace.clone(),
            partitions: self.partitions,
            partition_method: (self.partitions > 0)
                .then(|| self.partition_method.unwrap_or(PartitionMethod::Range)),
            quiet: self.quiet,
        })
    }

    /// A benchmark's checks, in pgbench's order.
    fn bench_checks(&self) -> Result<(), Bad> {
        let fail = |m: &str| Err(Bad::error(m));
        if self.init_option {
            return fail("some of the specified options cannot be used in benchmarking mode");
        }
        if self.transactions.is_some() && self.time.is_some() {
            return fail(
                "specify either a number of transactions (-t) or a duration (-T), not both",
            );
        }
        if self.sampling_rate.is_some() && !self.log {
            return fail(
                "log sampling (--sampling-rate) is allowed only when logging transactions (-l)",
            );
        }
        if self.sampling_rate.is_some() && self.aggregate_s.is_some() {
            return fail(
                "log sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time",
            );
        }
        if self.aggregate_s.is_some() && !self.log {
            return fail("log aggregation is allowed only when actually logging transactions");
        }
        if self.log_prefix.is_some() && !self.log {
            return fail(
                "log file prefix (--log-prefix) is allowed only when logging transactions (-l)",
            );
        }
        if let (Some(t), Some(a)) = (self.time, self.aggregate_s) {
            if a > t {
                return Err(Bad::error(format!(
                    "number of seconds for aggregation ({a}) must not be higher than test duration ({t})"
                )));
            }
            if t % a != 0 {
                return Err(Bad::error(format!(
                    "duration ({t}) must be a multiple of aggregation interval ({a})"
                )));
            }
        }
        if self.progress_timestamp && self.progress.is_none() {
            return fail("--progress-timestamp is allowed only under --progress");
        }
        if self.max_tries == Some(0) && self.latency_limit_ms.is_none() && self.time.is_none() {
            return fail(
                "an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)",
            );
        }
        Ok(())
    }
}

fn print_out(text: String) -> Action {
    Action::Print {
        text,
        stderr: false,
    }
}

/// pgbench's name of an option in its messages: `-c/--clients` for the
/// numeric ones with a short form (pgbench 15 writes `--clients`, 17 and
/// 18 `--client`), else `--name`.
fn option_name(opt: Opt, v: Pgbench) -> String {
    let s = spec_of(opt);
    let long = if opt == Opt::Client && v == Pgbench::V15 {
        "clients"
    } else {
        s.long
    };
    match s.short {
        Some(c) => format!("-{c}/--{long}"),
        None => format!("--{long}"),
    }
}

/// Options that only a benchmark takes (pgbench's
/// `benchmarking_option_set`).
fn is_bench_option(opt: Opt) -> bool {
    use Opt::*;
    matches!(
        opt,
        VacuumAll
            | Client
            | Jobs
            | Connect
            | ReportPerCommand
            | Transactions
            | Time
            | Log
            | Builtin
            | SelectOnly
            | SkipSomeUpdates
            | File
            | Define
            | Protocol
            | Progress
            | Rate
            | LatencyLimit
            | SamplingRate
            | AggregateInterval
            | ProgressTimestamp
            | LogPrefix
            | RandomSeed
            | FailuresDetailed
            | MaxTries
            | VerboseErrors
            | ExitOnAbort
            | FreshCopy
    )
}

/// Options that only `-i` takes (pgbench's `initialization_option_set`).
fn is_init_option(opt: Opt) -> bool {
    use Opt::*;
    matches!(
        opt,
        InitSteps
            | Quiet
            | Fillfactor
            | UnloggedTables
            | Tablespace
            | IndexTablespace
            | ForeignKeys
            | Partitions
            | PartitionMethod
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::pgbench::flags::Action;
    use clap::{Args, FromArgMatches};

    fn inv(args: &[&str], env: &[(&str, &str)]) -> Result<Invocation, Bad> {
        let cmd = PgbenchArgs::augment_args(clap::Command::new("pgbench"));
        let m = cmd
            .try_get_matches_from(std::iter::once("pgbench").chain(args.iter().copied()))
            .unwrap();
        let a = PgbenchArgs::from_arg_matches(&m).unwrap();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(a, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    fn err(args: &[&str]) -> String {
        inv(args, &[]).unwrap_err().to_string()
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
    fn defaults_long_forms_and_the_order_of_scripts() {
        let i = inv(&[], &[]).unwrap();
        assert_eq!(
            (i.clients, i.threads, i.max_tries, i.end),
            (1, 1, 1, End::Transactions(10))
        );
        assert_eq!(i.mode, QueryMode::Simple);
        assert_eq!(i.scripts.len(), 1);
        assert_eq!(i.scripts[0].source, ScriptSource::Builtin("tpcb-like"));
        let i = inv(
            &[
                "--client=8",
                "--jobs=12",
                "--time=60",
                "--builtin=simple@3",
                "-S",
                "db",
                "--progress=5",
            ],
            &[],
        )
        .unwrap();
        // -j above -c: pgbench runs a thread per client.
        assert_eq!(
            (i.clients, i.threads, i.end, i.progress_s),
            (8, 8, End::Time(60), Some(5))
        );
        let sources: Vec<_> = i
            .scripts
            .iter()
            .map(|s| (s.source.clone(), s.weight))
            .collect();
        assert_eq!(
            sources,
            vec![
                (ScriptSource::Builtin("simple-update"), 3),
                (ScriptSource::Builtin("select-only"), 1)
            ]
        );
        assert_eq!(i.connection.dbname.as_deref(), Some("db"));
    }

    /// pgbench's messages, word for word (pgbench.c, option_utils.c).
    #[test]
    fn bad_values_get_pgbenchs_messages() {
        for (args, want) in [
            (
                &["-c", "three"][..],
                "pgbench: error: invalid value \"three\" for option -c/--clients\n",
            ),
            (
                &["-c", "0"],
                "pgbench: error: -c/--clients must be in range 1..2147483647\n",
            ),
            (
                &["-j", "eleven"],
                "pgbench: error: invalid value \"eleven\" for option -j/--jobs\n",
            ),
            (
                &["-P", "0"],
                "pgbench: error: -P/--progress must be in range 1..2147483647\n",
            ),
            (
                &["-F", "1"],
                "pgbench: error: -F/--fillfactor must be in range 10..100\n",
            ),
            (
                &["--aggregate-interval=-3"],
                "pgbench: error: --aggregate-interval must be in range 1..2147483647\n",
            ),
            (
                &["-b", "select-only@one"],
                "pgbench: error: invalid weight specification: @one\n",
            ),
            (
                &["-b", "select-only@-1"],
                "pgbench: error: weight specification out of range (0 .. 2147483647): -1\n",
            ),
            (
                &["--max-tries", "-10"],
                "pgbench: error: invalid number of maximum tries: \"-10\"\n",
            ),
            (
                &["--max-tries", "0"],
                "pgbench: error: an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)\n",
            ),
            (
                &["-t", "1", "-T", "1"],
                "pgbench: error: specify either a number of transactions (-t) or a duration (-T), not both\n",
            ),
            (
                &["--progress-timestamp"],
                "pgbench: error: --progress-timestamp is allowed only under --progress\n",
            ),
            (
                &["-l", "-T", "5", "--aggregate-interval=3"],
                "pgbench: error: duration (5) must be a multiple of aggregation interval (3)\n",
            ),
            (
                &["-b", "se@0", "-b", "si@0"],
                "pgbench: error: total script weight must not be zero\n",
            ),
            (
                &["-S", "-F", "90"],
                "pgbench: error: some of the specified options cannot be used in benchmarking mode\n",
            ),
            (
                &["-i", "-S"],
                "pgbench: error: some of the specified options cannot be used in initialization (-i) mode\n",
            ),
            (
                &["-i", "--partition-method=hash"],
                "pgbench: error: --partition-method requires greater than zero --partitions\n",
            ),
            (
                &["-i", "--partition-method=BAD"],
                "pgbench: error: invalid partition method, expecting \"range\" or \"hash\", got: \"BAD\"\n",
            ),
            (
                &["a", "b"],
                "pgbench: error: too many command-line arguments (first is \"b\")\npgbench: hint: Try \"pgbench --help\" for more information.\n",
            ),
            (
                &["-i", "-I", "dta"],
                "pgbench: error: unrecognized initialization step \"a\"\npgbench: detail: Allowed step characters are: \"dtgGvpf\".\n",
            ),
            (
                &["-f", "/no/such-file"],
                "pgbench: error: could not open file \"/no/such-file\": No such file or directory\n",
            ),
        ] {
            assert_eq!(err(args), want, "{args:?}");
        }
        let many = vec!["-S"; 129];
        assert_eq!(
            err(&many),
            "pgbench: error: at most 128 SQL scripts are allowed\n"
        );
        assert!(err(&["-b", "s"]).starts_with("pgbench: error: ambiguous builtin name: 2 builtin scripts found for prefix \"s\"\nAvailable builtin scripts:\n"));
    }

    #[test]
    fn init_steps_as_pgbench_completes_them() {
        let steps = |args: &[&str]| match inv(args, &[]).unwrap().action {
            Action::Init(o) => o.steps,
            other => panic!("{other:?}"),
        };
        assert_eq!(steps(&["-i"]), "dtgvp");
        assert_eq!(steps(&["-i", "-n"]), "dtg p");
        assert_eq!(steps(&["-i", "--foreign-keys"]), "dtgvpf");
        assert_eq!(
            steps(&["-i", "-I", "dtpvGvv", "-n", "--foreign-keys"]),
            "dtp G  f"
        );
        match inv(&["-i", "--partitions", "3"], &[]).unwrap().action {
            Action::Init(o) => assert_eq!(o.partition_method, Some(PartitionMethod::Range)),
            other => panic!("{other:?}"),
        }
    }
}
