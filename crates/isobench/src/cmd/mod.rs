//! The commands: each command's flags (clap derive, turned into plain
//! config structs; no clap type leaves this layer), its dispatch, and what
//! it prints. `isobench run`'s settings are [`crate::study::Settings`], shared with the
//! study file. `main` only parses, calls [`dispatch`], and maps the
//! outcome to an exit status ([`Exit`]).

pub mod anomalies;
pub mod calibrate;
pub mod check_history;
pub mod compare;
pub mod manual;
pub mod merge;
pub mod monitor;
pub mod pgbench;
pub mod report;
pub mod reports;
pub mod run;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::model::BadInput;
use crate::postgres::reaper;
use crate::report::render::terminal::{DEFAULT_WIDTH, MIN_WIDTH};
use crate::{store, workload};
use anomalies::AnomaliesArgs;
use calibrate::CalibrateArgs;
use check_history::CheckHistoryArgs;
use compare::CompareArgs;
use merge::MergeArgs;
use monitor::MonitorArgs;
use pgbench::PgbenchArgs;
use report::ReportArgs;
use run::RunArgs;

/// isobench: what transaction isolation costs and buys on PostgreSQL.
#[derive(Debug, Parser)]
#[command(name = "isobench", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Each subcommand's usage line is fixed (`override_usage`): under an
/// error clap's own lists the flags given as if they were required
/// (`Usage: isobench run --isolation <ISOLATION> [STUDY.toml]`, issue #49).
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure: run the study and write a results directory.
    #[command(override_usage = "isobench run [OPTIONS] [STUDY.toml]")]
    Run(Box<RunArgs>),
    /// Re-render the reports of a results directory from its store, without re-running.
    #[command(override_usage = "isobench report [OPTIONS] <DIR>")]
    Report(ReportArgs),
    /// A/B of two results directories, cell by cell (benchstat style): TPS and p99 with confidence intervals, a test, a verdict and the smallest detectable change; --fail-on-regression PCT gates CI (exit 3).
    #[command(override_usage = "isobench compare [OPTIONS] <A> <B>")]
    Compare(CompareArgs),
    /// How noisy is this study here: its cells run as A and B, interleaved, in --repeat N A/A pairs (default 20); prints the CVs between and within runs, the verdict's false-positive rate and the runs a target MDE needs; results.json gets a noise section.
    #[command(mut_arg("repeat", |a| a.help(
        "A/A pairs: each runs every cell --per-side times as A and as B, interleaved [default: 20]"
    )))]
    #[command(override_usage = "isobench calibrate [OPTIONS] [STUDY.toml]")]
    Calibrate(Box<CalibrateArgs>),
    /// One results directory from several of one study: the shards of a sharded study (`--shard I/N`) or repeated runs. Counters summed, latency histograms added (percentiles recomputed, never averaged), per-second series aligned on the window's start, the reports written as for any study.
    #[command(override_usage = "isobench merge [OPTIONS] --out <DIR> <DIR>...")]
    Merge(MergeArgs),
    /// Observe a server under someone else's load: pg_stat_database and SIRead locks every sample interval, wait events every second; writes monitor.json and monitor.md.
    #[command(override_usage = "isobench monitor [OPTIONS]")]
    Monitor(MonitorArgs),
    /// Which isolation anomalies each level prevents, and how: runs every
    /// probe (Hermitage-style interleavings) at every level and prints the
    /// matrix. Exit status 3 when a result differs from a probe's @expect.
    #[command(override_usage = "isobench anomalies [OPTIONS]")]
    Anomalies(Box<AnomaliesArgs>),
    /// Check list-append histories for isolation anomalies (Elle-style): isobench's own (histories/run-N.jsonl.gz of a results directory) or Jepsen/Elle JSON (one operation per line, or an array). Exit status 3 when any anomaly is found.
    #[command(override_usage = "isobench check-history <FILES>...")]
    CheckHistory(CheckHistoryArgs),
    /// List the built-in workloads, or show one in detail.
    Workloads {
        /// A workload name, e.g. smallbank.
        name: Option<String>,
    },
    /// Print a shell completion script to stdout, e.g. `isobench completions bash > ~/.local/share/bash-completion/completions/isobench`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// PostgreSQL's pgbench, 15's or, against a PostgreSQL 18 server, 18's (`isobench pgbench [OPTION]... [DBNAME]`): its options, behaviour, messages, exit statuses and logs, each run also one isobench cell with a results directory (docs/src/reference/pgbench-command.md).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Pgbench(Box<PgbenchArgs>),
    /// Print the man page (roff) to stdout, e.g. `isobench man | man -l -`; with --dir, write one page per subcommand into DIR.
    Man {
        /// Write isobench.1 and one page per subcommand (isobench-run.1, ...) into DIR instead of printing isobench.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// The exit statuses (user guide, docs/src/reference/exit-status.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Done = 0,
    /// A failure at run time: the server, the network, a load.
    Error = 1,
    /// Input to fix: a flag, a study/script/probe file, a results
    /// directory (clap's own flag errors exit 2 too).
    BadInput = 2,
    /// Invariants violated with `--fail-on-violation`, or anomaly probes
    /// that differ from their `@expect` lines.
    Violations = 3,
    /// A guarantee violation with `--fail-on-violation` (or found by
    /// `check-history --level`): a history check found an anomaly class
    /// the isolation level forbids. Takes precedence over
    /// [`Exit::Violations`].
    GuaranteeViolated = 4,
    /// Ctrl-C or SIGTERM: what was measured is saved.
    Interrupted = 130,
}

impl Exit {
    /// The status of an error: [`Exit::BadInput`] when its chain holds a
    /// [`BadInput`], a results store that cannot be read, or an invalid
    /// workload setting, else [`Exit::Error`].
    pub fn of(e: &anyhow::Error) -> Exit {
        let bad = e.chain().any(|c| {
            c.is::<BadInput>()
                || c.downcast_ref::<store::StoreError>()
                    .is_some_and(store::StoreError::is_bad_input)
                || matches!(
                    c.downcast_ref::<workload::WorkloadError>(),
                    Some(workload::WorkloadError::Invalid(_))
                )
        });
        if bad { Exit::BadInput } else { Exit::Error }
    }
}

/// Runs the command `cli` names (`run` when none).
///
/// Errors: each command's own; [`Exit::of`] maps them to a status.
pub async fn dispatch(cli: Cli) -> Result<Exit> {
    match cli.command.unwrap_or_else(|| Command::Run(Box::default())) {
        Command::Run(args) => run::run(*args).await,
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Calibrate(args) => calibrate::run(*args).await,
        Command::Merge(args) => merge::command(args),
        Command::Monitor(args) => monitor::command(args).await,
        Command::Pgbench(args) => pgbench(*args).await,
        Command::Anomalies(args) => anomalies::run(*args).await,
        Command::CheckHistory(args) => check_history::run(args),
        Command::Workloads { name } => {
            out(&workload::describe(name.as_deref())?);
            Ok(Exit::Done)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            manual::completions(shell, &mut script);
            out(&String::from_utf8_lossy(&script));
            Ok(Exit::Done)
        }
        Command::Man { dir: None } => {
            let mut page = Vec::new();
            manual::man_page(&mut page)?;
            out(&String::from_utf8_lossy(&page));
            Ok(Exit::Done)
        }
        Command::Man { dir: Some(dir) } => {
            let written = manual::man_pages(&dir)
                .map_err(|e| anyhow::anyhow!("man --dir {}: {e}", dir.display()))?;
            out(&format!(
                "written: {} page(s) in {}\n",
                written.len(),
                dir.display()
            ));
            Ok(Exit::Done)
        }
    }
}

/// `isobench pgbench`: pgbench's exit statuses (0, 1, 2: clients aborted,
/// with isobench's 130 for an interruption), its messages already printed.
async fn pgbench(args: PgbenchArgs) -> Result<Exit> {
    use pgbench::Status;
    let cancel = CancellationToken::new();
    tokio::spawn(watch_signals(cancel.clone()));
    Ok(match pgbench::main(args, cancel).await {
        Status::Done => Exit::Done,
        Status::Failed => Exit::Error,
        // pgbench's 2 (some clients aborted) has BadInput's number.
        Status::Aborted => Exit::BadInput,
        Status::Interrupted => Exit::Interrupted,
    })
}

/// `--width N`, the flag the commands that print reports share (`run`,
/// `report`, `compare`, `merge`, `anomalies`).
#[derive(Debug, Default, Clone, Args)]
pub struct WidthArg {
    /// Fit what is printed to N columns (at least 40; default: COLUMNS, else the terminal's width, else 100 when stdout is not a terminal).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(40..))]
    pub width: Option<u16>,
}

impl WidthArg {
    /// The width to fit output to, in columns: `--width`, else
    /// `COLUMNS`, else the terminal's width when stdout is a terminal,
    /// else [`DEFAULT_WIDTH`] (docs/src/reference/report-compare.md).
    pub fn columns(&self) -> usize {
        let columns = || {
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse::<u16>().ok())
        };
        let w = self
            .width
            .or_else(columns)
            .or_else(|| comfy_table::Table::new().width())
            .map_or(DEFAULT_WIDTH, usize::from);
        w.max(MIN_WIDTH)
    }
}

/// Writes to stdout; a closed pipe (`isobench workloads | head`) is not an
/// error.
pub fn out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

/// First SIGINT/SIGTERM: stop the current run and save. Second: stop the
/// managed server at once and exit.
pub async fn watch_signals(cancel: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return;
    };
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    eprintln!(
        "\nisobench: stopping: saving what was measured and stopping the server (Ctrl-C again to abort now)"
    );
    cancel.cancel();
    tokio::select! { _ = int.recv() => {}, _ = term.recv() => {} }
    reaper::kill_all();
    eprintln!("isobench: aborted");
    std::process::exit(130);
}

#[cfg(test)]
mod tests {
    use super::manual::{completions, man_page, man_pages};
    use super::*;
    use crate::model::{Isolation, PgBuild, StudyConfig};
    use crate::model::{OnError, RetryPolicy};
    use std::time::Duration;

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
        let c = RunArgs::default().into_study().unwrap();
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
        let c = a.into_study().unwrap();
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
        let c = a.into_study().unwrap();
        assert_eq!(
            c.isolation,
            vec![Isolation::Serializable, Isolation::ReadCommitted]
        );
        assert_eq!(c.clients, vec![1, 16]);
        assert_eq!(c.duration, Duration::from_millis(500));
        let c = parse(&[
            "--workload",
            "sibench",
            "--param",
            "rows=10,100,10",
            "--strategy",
            "locking,optimistic",
        ])
        .unwrap()
        .into_study()
        .unwrap();
        assert_eq!(
            c.params,
            vec![(
                "rows".to_string(),
                vec!["10".to_string(), "100".to_string()]
            )]
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
        let b = crate::postgres::find_bin_dir(None).unwrap();
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
        let b = crate::postgres::find_bin_dir(None).unwrap();
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
    /// the same value as the study file's key of the same name (`--set`
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
        (
            "pooler",
            &["--pooler", "none,pgbouncer:transaction"],
            "pooler = [\"none\", \"pgbouncer:transaction\"]",
            Some(("pgpool", "[\"pgpool\"]")),
        ),
        (
            "pooler-size",
            &["--pooler-size", "10,50"],
            "pooler_size = [10, 50]",
            Some(("0", "[0]")),
        ),
        (
            "pooler-processes",
            &["--pooler-processes", "3"],
            "pooler_processes = 3",
            Some(("0", "0")),
        ),
        (
            "pgbouncer-bin",
            &["--pgbouncer-bin", "/x/pgbouncer"],
            "pgbouncer_bin = \"/x/pgbouncer\"",
            None,
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
            Some(("explode@2s", "[\"explode@2s\"]")),
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
            "precision",
            &["--precision", "2%"],
            "precision = \"2%\"",
            Some(("0%", "\"0%\"")),
        ),
        (
            "max-repeat",
            &["--precision", "2%", "--max-repeat", "8"],
            "max_repeat = 8\nprecision = \"2%\"",
            // Needs --precision, so two lines: a bad value is checked in
            // study::settings' tests.
            None,
        ),
        (
            "cpus",
            &["--cpus", "clients=0"],
            "cpus = \"clients=0\"",
            Some(("cpu=0", "\"cpu=0\"")),
        ),
        (
            "duration",
            &["-T", "3s"],
            "duration = \"3s\"",
            Some(("0s", "\"0s\"")),
        ),
        (
            "transactions",
            &["-t", "100"],
            "transactions = 100",
            Some(("0", "0")),
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
            "host-policy",
            &["--dsn", "postgres://a@b/c", "--host-policy", "first"],
            "host_policy = \"first\"\ndsn = \"postgres://a@b/c\"",
            // Needs a DSN, so two lines: a bad value is checked in
            // study::settings' tests and tests/it/hosts.rs.
            None,
        ),
        (
            "standbys",
            &["--standbys", "1"],
            "standbys = 1",
            Some(("9", "9")),
        ),
        (
            "replication",
            &["--standbys", "1", "--replication", "async,sync"],
            "replication = [\"async\", \"sync\"]\nstandbys = 1",
            Some(("bogus", "[\"bogus\"]")),
        ),
        (
            "synchronous-commit",
            &["--synchronous-commit", "local,on"],
            "synchronous_commit = [\"local\", \"on\"]",
            Some(("maybe", "[\"maybe\"]")),
        ),
        (
            "ha",
            &["--ha", "pg_auto_failover"],
            "ha = \"pg_auto_failover\"",
            Some(("patroni", "\"patroni\"")),
        ),
        (
            "ha-timeouts",
            &["--ha", "pg_auto_failover", "--ha-timeouts", "fast"],
            "ha_timeouts = \"fast\"\nha = \"pg_auto_failover\"",
            Some(("quick", "\"quick\"")),
        ),
        (
            "read-from",
            &["--standbys", "1", "--read-from", "primary,standby"],
            "read_from = [\"primary\", \"standby\"]\nstandbys = 1",
            Some(("everywhere", "[\"everywhere\"]")),
        ),
        (
            "shard",
            &["--dsn", "postgres://a@b/c", "--shard", "1/3"],
            "shard = \"1/3\"\ndsn = \"postgres://a@b/c\"",
            None,
        ),
        (
            // The index from SLURM_PROCID (set by the test below).
            "shards",
            &["--dsn", "postgres://a@b/c", "--shards", "3"],
            "shards = 3\ndsn = \"postgres://a@b/c\"",
            None,
        ),
        (
            "shard-wait",
            &["--shard-wait", "5s"],
            "shard_wait = \"5s\"",
            Some(("0s", "\"0s\"")),
        ),
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
        ("hunt", &["--hunt"], "hunt = true", None),
        (
            "rate-bound",
            &["--hunt", "--rate-bound", "1e-5"],
            "rate_bound = \"1e-5\"\nhunt = true",
            Some(("2", "\"2\"")),
        ),
        (
            "hunt-for",
            &["--hunt", "--hunt-for", "10m"],
            "hunt_for = \"10m\"\nhunt = true",
            Some(("0s", "\"0s\"")),
        ),
        (
            "log-violations",
            &["--log-violations"],
            "log_violations = true",
            None,
        ),
        (
            "metrics-listen",
            &["--metrics-listen", "127.0.0.1:9187"],
            "metrics_listen = \"127.0.0.1:9187\"",
            Some(("9187", "9187")),
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
            "script-factor",
            &["--script-factor", "builtin:select-only,/x/a.sql@2"],
            "script = [[\"builtin:select-only\", \"/x/a.sql@2\"]]",
            Some(("builtin:nope", "[\"builtin:nope\"]")),
        ),
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
        (
            "check",
            &[
                "--check",
                "no-negative=SELECT id FROM account WHERE balance < 0",
            ],
            "[[check]]\nname = \"no-negative\"\nsql = \"SELECT id FROM account WHERE balance < 0\"",
            Some((
                "no negative=SELECT 1",
                "name = \"no negative\"\nsql = \"SELECT 1\"",
            )),
        ),
        (
            "check-file",
            &[
                "--check-file",
                concat!(env!("CARGO_MANIFEST_DIR"), "/examples/transfer/checks.sql"),
            ],
            concat!(
                "check_file = \"",
                env!("CARGO_MANIFEST_DIR"),
                "/examples/transfer/checks.sql\""
            ),
            Some(("", "\"\"")),
        ),
    ];

    /// `isobench run ARGS` as the binary reads it: the study with the
    /// flags the user gave, checked as the study checks it before
    /// anything starts (workload strategies and parameters are checked
    /// when the cells are planned).
    fn study_of(args: &[&str]) -> Result<StudyConfig, String> {
        let cfg = parse(args)?.into_study().map_err(|e| e.to_string())?;
        crate::executor::cells(&cfg).map_err(|e| e.to_string())?;
        Ok(cfg)
    }

    /// `cfg` without what differs by construction between the compared
    /// studies (the file it came from; the seed, random unless given).
    fn norm(mut cfg: StudyConfig, keep_seed: bool) -> String {
        cfg.file = None;
        // Where a check was declared differs by construction.
        for c in &mut cfg.checks {
            c.origin.clear();
        }
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

    /// Defaults <- file <- flags: a flag replaces the file's key, `--set`
    /// and `--param` replace one entry, a workload replaces an external
    /// load; a check of settings against each other names the key where
    /// the file set it, also when a flag made it fail.
    #[test]
    fn flags_over_a_file_merge_and_errors_keep_their_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let p = path.to_str().unwrap();
        std::fs::write(
            &path,
            "workload = \"sibench\"\nclients = [1, 2]\nstrategy = \"locking\"\n\
             [params]\nrows = [10, 20]\n[factors.settings]\nwork_mem = [\"4MB\", \"8MB\"]\n\
             shared_buffers = [\"64MB\", \"128MB\"]\n",
        )
        .unwrap();
        let c = study_of(&[p, "--clients", "3", "--set", "work_mem=16MB"]).unwrap();
        assert_eq!(c.clients, vec![3]);
        assert_eq!(c.strategies, vec!["locking"]);
        assert_eq!(
            c.params,
            vec![("rows".into(), vec!["10".into(), "20".into()])]
        );
        assert!(
            c.target
                .settings
                .contains(&("work_mem".into(), "16MB".into()))
        );
        assert_eq!(
            c.setting_factors,
            vec![("shared_buffers".into(), vec!["64MB".into(), "128MB".into()])]
        );
        // The flag's workload has no `locking`: the error is the file's line.
        let e = study_of(&[p, "--workload", "tpcb"]).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "{p}:3:12: strategy: tpcb has no strategy 'locking'"
            )),
            "{e}"
        );
        // And a flag's own value is named as the flag.
        let e = study_of(&[p, "--strategy", "none"]).unwrap_err();
        assert!(
            e.starts_with("--strategy none: sibench has no strategy"),
            "{e}"
        );
        // A workload flag over an external load clears the load.
        std::fs::write(
            &path,
            "load_cmd = \"pgbench {dsn}\"\nready_timeout = \"5s\"\n",
        )
        .unwrap();
        let c = study_of(&[p, "--workload", "smallbank"]).unwrap();
        assert!(!c.load.active());
        assert_eq!(c.load.ready_timeout, Duration::from_secs(60));
        assert_eq!(c.workload, "smallbank");
        // A key that is not a factor in [factors].
        std::fs::write(&path, "[factors]\nrepeat = 2\n").unwrap();
        let e = study_of(&[p]).unwrap_err();
        assert!(
            e.starts_with(&format!("{p}:2:1: repeat: not a factor")),
            "{e}"
        );
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

    /// `-w` takes a comma list (the workload as a factor) and
    /// `--script-factor` one script set per occurrence, while `-f`/`-b`
    /// stay one weighted mix.
    #[test]
    fn workload_and_script_factors_from_flags() {
        let c = parse(&["-w", "tpcb,ssibench", "-s", "1"])
            .unwrap()
            .into_study()
            .unwrap();
        assert_eq!(c.workloads, ["tpcb", "ssibench"]);
        let c = parse(&[
            "--script-factor",
            "builtin:tpcb-like",
            "--script-factor",
            "f.sql,builtin:select-only@3",
        ])
        .unwrap()
        .into_study()
        .unwrap();
        let labels: Vec<&str> = c.scripts.sets.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["builtin:tpcb-like", "f.sql+builtin:select-only@3"]);
        let c = parse(&["-f", "a.sql", "-b", "select-only"])
            .unwrap()
            .into_study()
            .unwrap();
        assert!(c.scripts.sets.is_empty());
        assert_eq!(c.scripts.files.len() + c.scripts.builtins.len(), 2);
        let e = parse(&["-w", "tpcb,nope"]).unwrap_err();
        assert!(e.contains("unknown workload 'nope'"), "{e}");
        let e = parse(&["--script-factor", "a.sql", "-f", "b.sql"])
            .unwrap()
            .into_study()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--script-factor: the script factor and -f/-b"),
            "{e}"
        );
    }

    /// Issue #37: `--width N` for every command that prints a report,
    /// at least 40 columns, the flag over `COLUMNS`.
    #[test]
    fn the_printing_commands_take_a_width() {
        let commands: [&[&str]; 5] = [
            &["run"],
            &["report", "dir"],
            &["compare", "a", "b"],
            &["merge", "dir", "-o", "out"],
            &["anomalies"],
        ];
        for command in commands {
            let args = |w: &'static str| {
                let mut a = vec!["isobench"];
                a.extend_from_slice(command);
                a.extend(["--width", w]);
                a
            };
            let cli =
                Cli::try_parse_from(args("120")).unwrap_or_else(|e| panic!("{command:?}: {e}"));
            let width = match cli.command.unwrap() {
                Command::Run(a) => a.width,
                Command::Report(a) => a.width,
                Command::Compare(a) => a.width,
                Command::Merge(a) => a.width,
                Command::Anomalies(a) => a.width,
                _ => unreachable!(),
            };
            assert_eq!(width.columns(), 120, "{command:?}");
            let e = Cli::try_parse_from(args("30")).unwrap_err().to_string();
            assert!(
                e.contains("--width") && e.contains("40"),
                "{command:?}: {e}"
            );
        }
    }

    #[test]
    fn every_flag_has_a_file_key_of_the_same_name_and_validation() {
        use clap::CommandFactory;
        // SAFETY: no other test reads or writes SLURM_PROCID or
        // JOB_COMPLETION_INDEX (only `--shards` does, in this test).
        unsafe {
            std::env::remove_var("JOB_COMPLETION_INDEX");
            std::env::set_var("SLURM_PROCID", "1");
        }
        let dir = tempfile::tempdir().unwrap();
        let run = Cli::command();
        let run = run.find_subcommand("run").unwrap();
        let flags: Vec<String> = run
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .filter(|l| !["help", "version", "resume", "width"].contains(&l.as_str()))
            .collect();
        let listed: Vec<&str> = FLAG_KEYS.iter().map(|f| f.0).collect();
        for f in &flags {
            assert!(listed.contains(&f.as_str()), "--{f} has no row here");
        }
        // A real server build for `--pg-bin`/`pg_bin`.
        let pg_bin = crate::postgres::find_bin_dir(None).unwrap();
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
                "script-factor" => "script".to_string(),
                "check" => "[[check]]".to_string(),
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
                "--{flag} given over a study file is not applied"
            );
            if let Some((bad_flag, bad_key)) = bad {
                let (bad_flag, bad_key) = (
                    bad_flag.replace("PGBIN", pg_bin),
                    bad_key.replace("PGBIN", pg_bin),
                );
                let mut bad_args: Vec<&str> = args.to_vec();
                *bad_args.last_mut().unwrap() = &bad_flag;
                let flag_err =
                    study_of(&bad_args).expect_err(&format!("--{flag} {bad_flag} is accepted"));
                // A table's header and the bad value under it, else the
                // key alone (a key another one needs, as `rate_bound`
                // needs `hunt`, is refused for its value first).
                let first = key.lines().next().unwrap();
                let text = if first.starts_with('[') {
                    format!("{first}\n{bad_key}\n")
                } else {
                    format!("{} = {bad_key}\n", first.split_once(" = ").unwrap().0)
                };
                std::fs::write(&path, &text).unwrap();
                let file_err = study_of(&[p]).expect_err(&format!("`{text}` is accepted"));
                // One check refused both: the file's reason, after
                // `path:line:column: key: `, is the flag's.
                let reason = file_err.splitn(3, ": ").nth(2).unwrap_or("");
                assert!(
                    !reason.is_empty() && flag_err.contains(reason),
                    "--{flag} {bad_flag} and `{text}` are refused for different reasons:\n{flag_err}\n{file_err}"
                );
            }
        }
    }

    /// Issue #31: a negative number for a numeric flag reaches the flag's
    /// own range message, not clap's tip to write `-- -4`.
    #[test]
    fn negative_numbers_reach_the_range_check() {
        for (flag, value, want) in [
            ("-c", "-4", "-4 is out of range (1 to 100000)"),
            ("--clients", "-4,8", "-4 is out of range (1 to 100000)"),
            ("--pool-size", "-2", "-2 is out of range (1 to 10000)"),
            ("--pooler-size", "-2", "-2 is out of range (1 to 10000)"),
            ("--repeat", "-1", "-1 is out of range (1 to 10000)"),
            ("-s", "-3", "-3 is out of range (1 to 100000)"),
            ("-j", "-1", "-1 is out of range (1 to 1024)"),
            ("--max-tries", "-5", "-5 is out of range (1 to 1000000)"),
            ("--seed", "-7", "-7 is out of range (0 to"),
        ] {
            let e = parse(&[flag, value]).unwrap_err();
            assert!(e.contains(want), "{flag} {value}: {e}");
            assert!(!e.contains("-- "), "{flag} {value}: {e}");
        }
        // A flag after a numeric flag is still refused by that flag's parser.
        let e = parse(&["-c", "--quiet"]).unwrap_err();
        assert!(
            e.contains("--clients") && e.contains("not an integer"),
            "{e}"
        );
    }

    /// Issue #31: the help says what the code does, and agrees with the
    /// README and the user guide (docs/src, where the reference moved):
    /// SIRead locks are sampled every sample interval (the observer's
    /// `siread` timer), `--load-cmd` points at the guide's section rather
    /// than at the help it is in, and `--init-sql` runs alone instead of
    /// pgbench's tables or after them with `-w tpcb`.
    #[test]
    fn help_and_readme_agree() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        let run = cli
            .find_subcommand_mut("run")
            .unwrap()
            .render_long_help()
            .to_string();
        let monitor = cli
            .find_subcommand_mut("monitor")
            .unwrap()
            .render_long_help()
            .to_string();
        let top = cli.render_long_help().to_string();
        let root = env!("CARGO_MANIFEST_DIR");
        let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
        let guide = guide_text();
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let (run, monitor, top, readme, guide) = (
            flat(&run),
            flat(&monitor),
            flat(&top),
            flat(&readme),
            flat(&guide),
        );
        for (what, text) in [
            ("run --help", &run),
            ("monitor --help", &monitor),
            ("--help", &top),
            ("README", &readme),
            ("docs/src", &guide),
        ] {
            assert!(
                !text.contains("SIRead locks every second"),
                "{what}: {text}"
            );
            assert!(
                !text.contains("SIRead locks once a second"),
                "{what}: {text}"
            );
        }
        assert!(run.contains("SIRead locks every sample interval"), "{run}");
        assert!(
            monitor.contains("SIRead locks every sample interval"),
            "{monitor}"
        );
        assert!(guide.contains("SIRead locks every sample interval"));
        assert!(guide.contains("SIRead locks every `--sample-interval`"));
        let load_cmd = &run[run.find("--load-cmd <CMD>").unwrap()..];
        let load_cmd = &load_cmd[..load_cmd.find("--setup-cmd <CMD>").unwrap()];
        assert!(!load_cmd.contains("--help"), "{load_cmd}");
        assert!(
            load_cmd.contains("\"External loads\" in the user guide"),
            "{load_cmd}"
        );
        assert!(load_cmd.contains("docs/src/reference/external-loads.md"));
        let external =
            std::fs::read_to_string(format!("{root}/docs/src/reference/external-loads.md"))
                .unwrap();
        assert!(external.starts_with("# External loads"), "{external}");
        let init_sql = &run[run.find("--init-sql <FILE>").unwrap()..];
        assert!(
            init_sql.contains("alone, instead of pgbench's tables"),
            "{init_sql}"
        );
        assert!(
            init_sql.contains("with -w tpcb, after pgbench's tables"),
            "{init_sql}"
        );
        assert!(guide.contains("alone, instead of pgbench's tables (the scripts' own schema); with `-w tpcb`, after pgbench's tables are loaded"));
    }

    /// Every chapter of the user guide (docs/src/**/*.md), concatenated.
    fn guide_text() -> String {
        fn walk(dir: &std::path::Path, text: &mut String) {
            let mut entries: Vec<_> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            entries.sort();
            for p in entries {
                if p.is_dir() {
                    walk(&p, text);
                } else if p.extension().is_some_and(|x| x == "md") {
                    text.push_str(&std::fs::read_to_string(&p).unwrap());
                    text.push('\n');
                }
            }
        }
        let mut text = String::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src"),
            &mut text,
        );
        text
    }

    /// `isobench completions bash` completes the subcommands and the
    /// flags of `run`; every shell clap_complete knows gets a script.
    #[test]
    fn completions_name_the_subcommands_and_flags() {
        let mut bash = Vec::new();
        completions(clap_complete::Shell::Bash, &mut bash);
        let bash = String::from_utf8(bash).unwrap();
        assert!(bash.contains("run"), "{bash}");
        assert!(bash.contains("--isolation"), "{bash}");
        assert!(bash.contains("complete -F"), "{bash}");
        for shell in [
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::Elvish,
            clap_complete::Shell::PowerShell,
        ] {
            let mut script = Vec::new();
            completions(shell, &mut script);
            let script = String::from_utf8(script).unwrap();
            // fish writes `-l isolation`, the others `--isolation`.
            assert!(
                script.contains("isolation") && script.contains("anomalies"),
                "{shell}: {script}"
            );
        }
    }

    /// `isobench man` is a roff page naming the `run` subcommand; `--dir`
    /// writes one page per subcommand.
    #[test]
    fn man_page_is_roff_with_the_subcommands() {
        let mut page = Vec::new();
        man_page(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains(".TH"), "{page}");
        assert!(page.contains("isobench\\-run"), "{page}");
        let dir = tempfile::tempdir().unwrap();
        let written = man_pages(&dir.path().join("man1")).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for want in ["isobench.1", "isobench-run.1", "isobench-anomalies.1"] {
            assert!(names.iter().any(|n| n == want), "{names:?}");
        }
        let run = std::fs::read_to_string(dir.path().join("man1/isobench-run.1")).unwrap();
        assert!(run.contains(".TH") && run.contains("isolation"), "{run}");
    }

    /// Issue #31, "finds every option in the guide": every long flag of
    /// every subcommand appears in the user guide (docs/src) as `--flag`,
    /// and every subcommand by name.
    #[test]
    fn every_flag_is_in_the_guide() {
        use clap::CommandFactory;
        let guide = guide_text();
        let cli = Cli::command();
        let mut missing = Vec::new();
        for sub in cli.get_subcommands() {
            if !guide.contains(&format!("isobench {}", sub.get_name())) {
                missing.push(format!("isobench {}", sub.get_name()));
            }
            for arg in sub.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if ["help", "version"].contains(&long) {
                    continue;
                }
                if !guide.contains(&format!("--{long}")) {
                    missing.push(format!("isobench {} --{long}", sub.get_name()));
                }
            }
        }
        assert!(missing.is_empty(), "not in docs/src: {missing:?}");
    }
}
