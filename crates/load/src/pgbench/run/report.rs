//! What a script client says and does on an error under `isobench
//! pgbench` ([`Rules`]): pgbench 15's lines on stderr (`commandFailed`,
//! `commandError`, `printVerboseErrorMessages` and the `-d` lines of
//! pgbench.c), and pgbench's outcome: an SQL error other than a
//! serialization failure (40001) or deadlock (40P01), or a meta-command
//! that fails, aborts the client. Without rules (`isobench run`) the client
//! says nothing and an SQL error is a failure by SQLSTATE.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use tokio_util::sync::CancellationToken;

use crate::model::SqlState;
use crate::wire;
use crate::workload::AttemptError;

/// `isobench pgbench`'s rules for a script client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rules {
    /// `-d`: `client N sending ...`, `receiving`, `executing ...`.
    pub debug: bool,
    /// `--verbose-errors`: a line for every error a transaction meets.
    pub verbose_errors: bool,
    /// `--max-tries` (0: unlimited), for the verbose lines.
    pub max_tries: u32,
    /// `--exit-on-abort`: the first client that aborts ends the run
    /// ([`run_aborted`]).
    pub exit_on_abort: bool,
}

/// Set when a client of this process aborted under pgbench's rules
/// (`isobench pgbench` runs one run per process: its exit status 2).
static ABORTED: AtomicBool = AtomicBool::new(false);

/// Under `--exit-on-abort`, the id of the first client that aborted
/// (`u32::MAX`: none yet).
static FIRST_ABORTED: AtomicU32 = AtomicU32::new(u32::MAX);

/// Cancelled when a client aborts under `--exit-on-abort`.
static ABORT_RUN: LazyLock<CancellationToken> = LazyLock::new(CancellationToken::new);

/// Whether a client aborted under pgbench's rules in this process.
pub fn any_aborted() -> bool {
    ABORTED.load(Ordering::Relaxed)
}

/// Under `--exit-on-abort`: a token cancelled when the first client
/// aborts, and that client's id once it has. pgbench's thread then
/// leaves its loop and exits the process (`threadRun`, pgbench.c of
/// PostgreSQL 17 and 18); `isobench pgbench` ends the run as it does on
/// Ctrl-C.
pub fn run_aborted() -> (CancellationToken, Option<u32>) {
    let first = FIRST_ABORTED.load(Ordering::Acquire);
    (ABORT_RUN.clone(), (first != u32::MAX).then_some(first))
}

/// The SQLSTATEs pgbench retries (`canRetryError`).
pub(super) fn retryable(code: SqlState) -> bool {
    &code == b"40001" || &code == b"40P01"
}

/// One client's voice: its id and the rules, if any.
#[derive(Debug, Clone, Copy)]
pub(super) struct Say {
    pub rules: Option<Rules>,
    pub id: u32,
}

impl Say {
    /// A `-d` line, built only when `-d` is given. Inlined: it runs at
    /// every command, and without `-d` it is one test.
    #[inline]
    pub fn debug(&self, line: impl FnOnce() -> String) {
        if self.rules.is_some_and(|r| r.debug) {
            eprintln!("pgbench: {}", line());
        }
    }

    /// A meta-command of script `script` at command `cmd` (`word`: its
    /// name) failed with `what`: under pgbench's rules the client aborts,
    /// with pgbench's two lines (`what`, then `client N aborted in command
    /// C (word) of script S; why`); else a script error located by
    /// `fallback`.
    pub fn meta_failed(
        &self,
        script: usize,
        cmd: usize,
        word: &str,
        what: &str,
        why: &str,
        fallback: impl FnOnce() -> AttemptError,
    ) -> AttemptError {
        if self.rules.is_none() {
            return fallback();
        }
        if !what.is_empty() {
            eprintln!("pgbench: error: {what}");
        }
        self.aborted(format!(
            "client {} aborted in command {cmd} ({word}) of script {script}; {why}",
            self.id
        ))
    }

    /// pgbench's `client N aborted: ...` and similar: printed, and the
    /// client stops.
    pub fn aborted(&self, line: String) -> AttemptError {
        eprintln!("pgbench: error: {line}");
        ABORTED.store(true, Ordering::Relaxed);
        if self.rules.is_some_and(|r| r.exit_on_abort) {
            let _ = FIRST_ABORTED.compare_exchange(
                u32::MAX,
                self.id,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            ABORT_RUN.cancel();
        }
        AttemptError::script(line)
    }

    /// An SQL command's error `e` at command `cmd` of `script` (the try
    /// number `tries`), the statement having been sent as `query` (`None`:
    /// a prepared statement, whose text libpq does not keep for its
    /// `LINE n:` display): under pgbench's rules, a retryable one is said
    /// (`--verbose-errors`) and returned for the engine to retry, any other
    /// aborts the client; without rules it is returned as it is.
    #[allow(clippy::too_many_arguments)]
    pub fn sql_failed(
        &self,
        script: usize,
        cmd: usize,
        tries: u32,
        query: Option<&str>,
        e: wire::Error,
        fail: impl FnOnce(wire::Error) -> AttemptError,
    ) -> AttemptError {
        let Some(r) = self.rules else {
            return fail(e);
        };
        let text = match &e {
            wire::Error::Db(db) => db.libpq_text(query),
            wire::Error::CopyNotSupported => {
                return self.aborted("COPY is not supported in pgbench, aborting".into());
            }
            other => format!("{other}"),
        };
        match e.code() {
            Some(code) if retryable(code) && !e.is_broken() => {
                if r.verbose_errors {
                    eprintln!(
                        "pgbench: client {} got an error in command {cmd} (SQL) of script {script}; {text}",
                        self.id
                    );
                    let again = r.max_tries == 0 || tries < r.max_tries;
                    let max = if r.max_tries == 0 {
                        String::new()
                    } else {
                        format!("/{}", r.max_tries)
                    };
                    eprintln!(
                        "pgbench: client {} {} (try {tries}{max})",
                        self.id,
                        if again {
                            "repeats the transaction after the error"
                        } else {
                            "ends the failed transaction"
                        }
                    );
                }
                fail(e)
            }
            _ => self.aborted(format!(
                "client {} script {script} aborted in command {cmd} query 0: {text}",
                self.id
            )),
        }
    }
}
