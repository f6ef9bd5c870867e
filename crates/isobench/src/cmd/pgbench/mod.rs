//! `isobench pgbench [OPTION]... [DBNAME]`: PostgreSQL's pgbench command
//! line, with pgbench's behaviour, messages, exit statuses and output
//! streams (pgbench 15's, or 18's where they differ: [`version`]), run as
//! one isobench cell: the options become the
//! settings `isobench run` takes (one cell, one repetition, no warm-up)
//! and run through the same driver ([`crate::executor::run_observed`]);
//! the output is pgbench's (`-P` lines and messages on stderr, the summary
//! on stdout, `-l` transaction logs), plus isobench's results directory.
//!
//! The parts, by concept: [`flags`] (the options, checked as pgbench
//! checks them), `init` (`-i` and its steps), `run` (a benchmark: where it
//! runs, the settings of its cell), `logs` (the transaction logs of
//! `-l`), `tally` (per-script retry and skip counts), `output` (the summary, progress lines and messages).
//!
//! Differences from pgbench: docs/src/reference/pgbench-command.md.

pub mod flags;
mod init;
mod logs;
mod output;
mod run;
mod tally;
pub mod version;

use tokio_util::sync::CancellationToken;

pub use flags::{
    Bad, Connection, DEFAULT_TRANSACTIONS, End, Invocation, PgbenchArgs, builtin_desc,
};
pub use output::summary;

/// Reads a pgbench summary (pgbench's or this command's): the reader of
/// `isobench run --load-format pgbench`.
pub use crate::load_cmd::parse::pgbench as parse_summary;

/// How `isobench pgbench` ended: pgbench's exit statuses, and isobench's
/// for an interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exit status 0.
    Done,
    /// 1: bad options, a server that cannot be reached, a failed `-i`.
    Failed,
    /// 2: some clients aborted (a run-time error of a script, an SQL error
    /// pgbench does not retry); the summary is still printed, but for
    /// `--exit-on-abort`.
    Aborted,
    /// 130: Ctrl-C; what was measured is saved.
    Interrupted,
}

impl Status {
    /// The process's exit status.
    pub fn code(self) -> u8 {
        match self {
            Status::Done => 0,
            Status::Failed => 1,
            Status::Aborted => 2,
            Status::Interrupted => 130,
        }
    }
}

/// `isobench pgbench`: checks the options (pgbench's messages, status 1),
/// then prints (`--help`, `-V`, `-b list`, `--show-script`), initializes
/// (`-i`) or runs the benchmark. Every message is already printed when it
/// returns.
pub async fn main(args: PgbenchArgs, cancel: CancellationToken) -> Status {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let inv = match flags::parse(args, &env) {
        Ok(inv) => inv,
        Err(bad) => {
            eprint!("{bad}");
            return Status::Failed;
        }
    };
    match &inv.action {
        flags::Action::Print { text, stderr } => {
            if *stderr {
                eprint!("{text}");
            } else {
                output::out(text);
            }
            Status::Done
        }
        flags::Action::Init(opts) => match init::run(&inv, opts).await {
            Ok(()) => Status::Done,
            Err(e) => {
                eprintln!("pgbench: error: {e:#}");
                Status::Failed
            }
        },
        flags::Action::Bench => run::bench(inv, cancel).await,
    }
}

/// For the binary's own parse of the command line: a clap error of
/// `isobench pgbench`'s options (an unknown option, a missing value) is
/// printed as pgbench prints its `getopt` errors and exits 1, as pgbench
/// does; any other clap error (or `isobench --help`) is clap's.
pub fn exit_on_parse_error(e: clap::Error) -> ! {
    let pgbench = std::env::args_os().nth(1).is_some_and(|a| a == "pgbench");
    if pgbench && e.use_stderr() {
        // getopt's words for what clap found, as pgbench prints them.
        let args: Vec<String> = std::env::args().skip(2).collect();
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        match flags::first_error(&args, version::Pgbench::of_options(&env)) {
            Some(said) => eprint!("{}", Bad::getopt(&said)),
            None => eprint!("{}", Bad::usage(&e.to_string())),
        }
        std::process::exit(1);
    }
    e.exit()
}
