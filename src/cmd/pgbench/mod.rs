//! `isobench pgbench [OPTION]... [DBNAME]`: PostgreSQL 15's pgbench
//! command line run as one isobench cell. The options become the same
//! settings `isobench run` takes (one cell, one repetition, no warm-up) and
//! run through the same driver ([`crate::experiment::run_observed`]); the
//! output is pgbench's: `-P` progress lines on stderr, the summary (and
//! `-r`/per-script blocks) on stdout, in pgbench 15's formats
//! (`printProgressReport` and `printResults` in pgbench.c), plus
//! isobench's results directory, named on stderr. With `-i`, pgbench's
//! tables are loaded by isobench's TPC-B loader and nothing is run.
//!
//! The parts, by concept: [`flags`] (the options and their checks),
//! `init` (`-i`), `run` (the run and its settings), `output` (the
//! summary and progress lines).
//!
//! Differences from pgbench: docs/src/reference/pgbench-command.md.

pub mod flags;
mod init;
mod output;
mod run;

pub use flags::{
    Connection, DEFAULT_TRANSACTIONS, End, Invocation, PgbenchArgs, Refused, builtin_desc,
};
pub use output::summary;
pub use run::run;

/// Reads a pgbench summary (pgbench's or this command's): the reader of
/// `isobench run --load-format pgbench`.
pub use crate::external::parse::pgbench as parse_summary;
