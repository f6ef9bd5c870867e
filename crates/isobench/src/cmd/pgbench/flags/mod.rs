//! pgbench's command line (15's, or with `ISOBENCH_PGBENCH=18` 17's and
//! 18's, [`specs`]): every option once, in one table
//! ([`SPECS`]), which gives clap its arguments (so completions, man pages
//! and `isobench --help` know them), `--help` its text in pgbench's form,
//! and [`PgbenchArgs`] the options in the order given. pgbench acts on its
//! options in that order (`getopt_long` in `main`): a bad value stops it
//! at the first one, `-b list` prints at once, a script file is read when
//! its `-f` comes. `check` does the same, with pgbench's messages.
//!
//! Parsing is clap's ([`clap::Args`] implemented by hand over the table):
//! options after DBNAME, `-c4`/`-c 4`/`--client=4`/`--cli=4` (a unique
//! prefix, as `getopt_long` allows), and values that start with `-`, as
//! `getopt` takes them.

use clap::{Arg, ArgAction, ArgMatches};

mod check;
mod getopt;
mod invocation;
mod values;

pub use check::parse;
pub use getopt::first_error;
pub use invocation::{
    Action, Connection, DEFAULT_TRANSACTIONS, End, InitOptions, Invocation, LogOptions,
    PartitionMethod, ScriptChoice, ScriptSource, builtin_desc,
};
pub use values::{Bad, stdin_script_path};

use crate::cmd::pgbench::version::Pgbench;

/// One of pgbench's options (and isobench's own, after them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Initialize,
    InitSteps,
    Fillfactor,
    NoVacuum,
    Quiet,
    Scale,
    ForeignKeys,
    IndexTablespace,
    PartitionMethod,
    Partitions,
    Tablespace,
    UnloggedTables,
    Builtin,
    File,
    SkipSomeUpdates,
    SelectOnly,
    Client,
    Connect,
    Define,
    Jobs,
    Log,
    LatencyLimit,
    Protocol,
    Progress,
    ReportPerCommand,
    Rate,
    Transactions,
    Time,
    VacuumAll,
    AggregateInterval,
    ExitOnAbort,
    FailuresDetailed,
    LogPrefix,
    MaxTries,
    ProgressTimestamp,
    RandomSeed,
    SamplingRate,
    ShowScript,
    VerboseErrors,
    Debug,
    /// pgbench 17's `-d/--dbname` (`ISOBENCH_PGBENCH=18`).
    Dbname,
    Host,
    Port,
    Username,
    Version,
    Help,
    Out,
    FreshCopy,
}

/// Where `--help` lists an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    Init,
    Select,
    Bench,
    Common,
    Isobench,
}

impl Group {
    fn heading(self) -> &'static str {
        match self {
            Group::Init => "Initialization options",
            Group::Select => "Options to select what to run",
            Group::Bench => "Benchmarking options",
            Group::Common => "Common options",
            Group::Isobench => "isobench options",
        }
    }
}

/// An option: its short and long names, its value's name (none for a
/// flag), its help line and where `--help` lists it.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub opt: Opt,
    pub short: Option<char>,
    pub long: &'static str,
    pub value: Option<&'static str>,
    help: &'static str,
    group: Group,
}

const fn spec(
    opt: Opt,
    short: Option<char>,
    long: &'static str,
    value: Option<&'static str>,
    help: &'static str,
    group: Group,
) -> Spec {
    Spec {
        opt,
        short,
        long,
        value,
        help,
        group,
    }
}

use Group::{Bench, Common, Init, Isobench, Select};

/// pgbench's options (its `--help`, in its order: 15's, and 17's
/// `--exit-on-abort` and `--dbname`, which [`specs`] chooses from), then
/// isobench's.
/// `-n` is listed in both the initialization and benchmarking options, as
/// pgbench lists it; `-s` is both an initialization option and, for a
/// run, the scale reported.
#[rustfmt::skip]
pub const SPECS: &[Spec] = &[
    spec(Opt::Initialize, Some('i'), "initialize", None, "invokes initialization mode", Init),
    spec(Opt::InitSteps, Some('I'), "init-steps", Some("[dtgGvpf]+"), "run selected initialization steps (default \"dtgvp\")", Init),
    spec(Opt::Fillfactor, Some('F'), "fillfactor", Some("NUM"), "set fill factor", Init),
    spec(Opt::NoVacuum, Some('n'), "no-vacuum", None, "do not run VACUUM during initialization", Init),
    spec(Opt::Quiet, Some('q'), "quiet", None, "quiet logging (one message each 5 seconds)", Init),
    spec(Opt::Scale, Some('s'), "scale", Some("NUM"), "scaling factor", Init),
    spec(Opt::ForeignKeys, None, "foreign-keys", None, "create foreign key constraints between tables", Init),
    spec(Opt::IndexTablespace, None, "index-tablespace", Some("TABLESPACE"), "create indexes in the specified tablespace", Init),
    spec(Opt::PartitionMethod, None, "partition-method", Some("(range|hash)"), "partition pgbench_accounts with this method (default: range)", Init),
    spec(Opt::Partitions, None, "partitions", Some("NUM"), "partition pgbench_accounts into NUM parts (default: 0)", Init),
    spec(Opt::Tablespace, None, "tablespace", Some("TABLESPACE"), "create tables in the specified tablespace", Init),
    spec(Opt::UnloggedTables, None, "unlogged-tables", None, "create tables as unlogged tables", Init),
    spec(Opt::Builtin, Some('b'), "builtin", Some("NAME[@W]"), "add builtin script NAME weighted at W (default: 1)\n(use \"-b list\" to list available scripts)", Select),
    spec(Opt::File, Some('f'), "file", Some("FILENAME[@W]"), "add script FILENAME weighted at W (default: 1)", Select),
    spec(Opt::SkipSomeUpdates, Some('N'), "skip-some-updates", None, "skip updates of pgbench_tellers and pgbench_branches\n(same as \"-b simple-update\")", Select),
    spec(Opt::SelectOnly, Some('S'), "select-only", None, "perform SELECT-only transactions\n(same as \"-b select-only\")", Select),
    spec(Opt::Client, Some('c'), "client", Some("NUM"), "number of concurrent database clients (default: 1)", Bench),
    spec(Opt::Connect, Some('C'), "connect", None, "establish new connection for each transaction", Bench),
    spec(Opt::Define, Some('D'), "define", Some("VARNAME=VALUE"), "define variable for use by custom script", Bench),
    spec(Opt::Jobs, Some('j'), "jobs", Some("NUM"), "number of threads (default: 1)", Bench),
    spec(Opt::Log, Some('l'), "log", None, "write transaction times to log file", Bench),
    spec(Opt::LatencyLimit, Some('L'), "latency-limit", Some("NUM"), "count transactions lasting more than NUM ms as late", Bench),
    spec(Opt::Protocol, Some('M'), "protocol", Some("simple|extended|prepared"), "protocol for submitting queries (default: simple)", Bench),
    spec(Opt::Progress, Some('P'), "progress", Some("NUM"), "show thread progress report every NUM seconds", Bench),
    spec(Opt::ReportPerCommand, Some('r'), "report-per-command", None, "report latencies, failures, and retries per command", Bench),
    spec(Opt::Rate, Some('R'), "rate", Some("NUM"), "target rate in transactions per second", Bench),
    spec(Opt::Transactions, Some('t'), "transactions", Some("NUM"), "number of transactions each client runs (default: 10)", Bench),
    spec(Opt::Time, Some('T'), "time", Some("NUM"), "duration of benchmark test in seconds", Bench),
    spec(Opt::VacuumAll, Some('v'), "vacuum-all", None, "vacuum all four standard tables before tests", Bench),
    spec(Opt::AggregateInterval, None, "aggregate-interval", Some("NUM"), "aggregate data over NUM seconds", Bench),
    spec(Opt::ExitOnAbort, None, "exit-on-abort", None, "exit when any client is aborted", Bench),
    spec(Opt::FailuresDetailed, None, "failures-detailed", None, "report the failures grouped by basic types", Bench),
    spec(Opt::LogPrefix, None, "log-prefix", Some("PREFIX"), "prefix for transaction time log file\n(default: \"pgbench_log\")", Bench),
    spec(Opt::MaxTries, None, "max-tries", Some("NUM"), "max number of tries to run transaction (default: 1)", Bench),
    spec(Opt::ProgressTimestamp, None, "progress-timestamp", None, "use Unix epoch timestamps for progress", Bench),
    spec(Opt::RandomSeed, None, "random-seed", Some("SEED"), "set random seed (\"time\", \"rand\", integer)", Bench),
    spec(Opt::SamplingRate, None, "sampling-rate", Some("NUM"), "fraction of transactions to log (e.g., 0.01 for 1%)", Bench),
    spec(Opt::ShowScript, None, "show-script", Some("NAME"), "show builtin script code, then exit", Bench),
    spec(Opt::VerboseErrors, None, "verbose-errors", None, "print messages of all errors", Bench),
    spec(Opt::Debug, Some('d'), "debug", None, "print debugging output", Common),
    spec(Opt::Dbname, Some('d'), "dbname", Some("DBNAME"), "database name to connect to", Common),
    spec(Opt::Host, Some('h'), "host", Some("HOSTNAME"), "database server host or socket directory", Common),
    spec(Opt::Port, Some('p'), "port", Some("PORT"), "database server port number", Common),
    spec(Opt::Username, Some('U'), "username", Some("USERNAME"), "connect as specified database user", Common),
    spec(Opt::Version, Some('V'), "version", None, "output version information, then exit", Common),
    spec(Opt::Help, Some('?'), "help", None, "show this help, then exit", Common),
    spec(Opt::Out, Some('o'), "out", Some("DIR"), "isobench's results directory (default: results/<timestamp>)", Isobench),
    spec(Opt::FreshCopy, None, "fresh-copy", None, "run in a fresh copy of DBNAME's pgbench tables at their scale,\nloaded by isobench, as isobench run does (default: in DBNAME itself)", Isobench),
];

/// The table's entry of `opt`.
pub fn spec_of(opt: Opt) -> &'static Spec {
    SPECS
        .iter()
        .find(|s| s.opt == opt)
        .expect("every option is in SPECS")
}

/// The options of pgbench `v`: pgbench 15's (`-d` is `--debug`), or
/// pgbench 17 and 18's (`-d` is `--dbname`, debug is `--debug` alone).
pub fn specs(v: Pgbench) -> Vec<Spec> {
    SPECS
        .iter()
        .filter(|s| v >= Pgbench::V18 || s.opt != Opt::Dbname)
        .map(|s| match s.opt {
            Opt::Debug if v >= Pgbench::V18 => Spec { short: None, ..*s },
            _ => *s,
        })
        .collect()
}

/// The options the command line is read with ([`Pgbench::of_options`]).
fn current_specs() -> Vec<Spec> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    specs(Pgbench::of_options(&env))
}

/// pgbench's options as given, in order: what `isobench pgbench` acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PgbenchArgs {
    /// Each option with its value (none for a flag), in command-line order.
    pub given: Vec<(Opt, Option<String>)>,
    /// The arguments that are not options: DBNAME (pgbench takes one).
    pub operands: Vec<String>,
}

const OPERANDS: &str = "DBNAME";

impl clap::Args for PgbenchArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let mut cmd = cmd
            .disable_help_flag(true)
            .disable_version_flag(true)
            .infer_long_args(true);
        for s in current_specs() {
            let mut arg = Arg::new(s.long)
                .long(s.long)
                .help(s.help.replace('\n', " "))
                .help_heading(s.group.heading())
                .action(ArgAction::Append);
            arg = match s.value {
                // Every occurrence of a flag is kept (with its place):
                // `-S -S` is two scripts.
                None => arg.num_args(0).default_missing_value(""),
                // getopt takes the next word as the value, whatever it is.
                Some(v) => arg.num_args(1).value_name(v).allow_hyphen_values(true),
            };
            if let Some(c) = s.short {
                arg = arg.short(c);
            }
            cmd = cmd.arg(arg);
        }
        cmd.arg(
            Arg::new(OPERANDS)
                .value_name(OPERANDS)
                .action(ArgAction::Append)
                .num_args(1)
                .help("the database (default: PGDATABASE, else PGUSER, else the user name)"),
        )
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for PgbenchArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given: Vec<(usize, Opt, Option<String>)> = Vec::new();
        for s in current_specs() {
            let (Some(at), Some(values)) = (m.indices_of(s.long), m.get_raw(s.long)) else {
                continue;
            };
            for (i, v) in at.zip(values) {
                let v = s.value.map(|_| v.to_string_lossy().into_owned());
                given.push((i, s.opt, v));
            }
        }
        given.sort_by_key(|g| g.0);
        let operands = m
            .get_raw(OPERANDS)
            .map(|v| v.map(|x| x.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        Ok(PgbenchArgs {
            given: given.into_iter().map(|(_, o, v)| (o, v)).collect(),
            operands,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// The versions of pgbench whose behaviour `isobench pgbench` follows
/// (their own tests pass): `--version` prints the one the options follow
/// first, as pgbench does.
pub const PGBENCH_VERSION: &str = "15.18";
pub const PGBENCH_18_VERSION: &str = "18.6";

/// `--version`: pgbench's line, with isobench's name and version after it.
pub fn version_text() -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let v = match Pgbench::of_options(&env) {
        Pgbench::V15 => PGBENCH_VERSION,
        Pgbench::V18 => PGBENCH_18_VERSION,
    };
    format!(
        "pgbench (PostgreSQL) {v} (isobench {})\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `--help` in pgbench's form: the options by group, each with its help
/// in a column from 27.
pub fn help_text() -> String {
    let all = current_specs();
    let mut o = String::from(
        "pgbench is a benchmarking tool for PostgreSQL (here isobench pgbench: each run is also one isobench cell).\n\n\
         Usage:\n  pgbench [OPTION]... [DBNAME]\n",
    );
    for group in [Init, Select, Bench, Common, Isobench] {
        o.push_str(&format!("\n{}:\n", group.heading()));
        let mut listed: Vec<&Spec> = all.iter().filter(|s| s.group == group).collect();
        if group == Bench {
            // pgbench lists -n and -s among the benchmarking options too.
            let at = listed
                .iter()
                .position(|s| s.opt == Opt::Progress)
                .unwrap_or(0);
            listed.insert(at, spec_of(Opt::NoVacuum));
            let at = listed
                .iter()
                .position(|s| s.opt == Opt::Transactions)
                .unwrap_or(0);
            listed.insert(at, spec_of(Opt::Scale));
        }
        for s in listed {
            let mut left = match s.short {
                Some(c) => format!("  -{c}, --{}", s.long),
                None => format!("  --{}", s.long),
            };
            if let Some(v) = s.value {
                left.push('=');
                left.push_str(v);
            }
            let help = match (group, s.opt) {
                (Bench, Opt::NoVacuum) => "do not run VACUUM before tests",
                (Bench, Opt::Scale) => "report this scale factor in output",
                _ => s.help,
            };
            let mut lines = help.lines();
            let first = lines.next().unwrap_or("");
            if left.len() < 27 {
                o.push_str(&format!("{left:<27}{first}\n"));
            } else {
                o.push_str(&format!("{left}\n{:27}{first}\n", ""));
            }
            for more in lines {
                o.push_str(&format!("{:27}{more}\n", ""));
            }
        }
    }
    o.push_str(
        "\nReport bugs to the isobench project (docs/src/reference/pgbench-command.md lists how isobench pgbench differs from pgbench).\n",
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, FromArgMatches};

    fn given(args: &[&str]) -> PgbenchArgs {
        let cmd = PgbenchArgs::augment_args(clap::Command::new("pgbench"));
        let m = cmd
            .try_get_matches_from(std::iter::once("pgbench").chain(args.iter().copied()))
            .unwrap();
        PgbenchArgs::from_arg_matches(&m).unwrap()
    }

    #[test]
    fn options_keep_their_order_and_every_occurrence() {
        let a = given(&[
            "-S",
            "-f",
            "x.sql@2",
            "db",
            "--select-only",
            "-c4",
            "--cli=-5",
            "-Dfoo=-1",
            "-nS",
        ]);
        assert_eq!(
            a.given,
            vec![
                (Opt::SelectOnly, None),
                (Opt::File, Some("x.sql@2".into())),
                (Opt::SelectOnly, None),
                (Opt::Client, Some("4".into())),
                (Opt::Client, Some("-5".into())),
                (Opt::Define, Some("foo=-1".into())),
                (Opt::NoVacuum, None),
                (Opt::SelectOnly, None),
            ]
        );
        assert_eq!(a.operands, vec!["db".to_string()]);
    }

    #[test]
    fn help_is_in_pgbenchs_form() {
        let h = help_text();
        for line in [
            "Usage:\n  pgbench [OPTION]... [DBNAME]\n",
            "Initialization options:\n  -i, --initialize         invokes initialization mode\n",
            "  -c, --client=NUM         number of concurrent database clients (default: 1)\n",
            "  -n, --no-vacuum          do not run VACUUM before tests\n",
            "  --index-tablespace=TABLESPACE\n                           create indexes in the specified tablespace\n",
            "Common options:\n",
            "  -?, --help               show this help, then exit\n",
        ] {
            assert!(h.contains(line), "{line:?} not in:\n{h}");
        }
        assert!(h.starts_with("pgbench is a benchmarking tool for PostgreSQL"));
        assert!(version_text().starts_with("pgbench (PostgreSQL) 15."));
    }
}
