//! Runs one interleaving of a probe's steps, the way PostgreSQL's isolation
//! tester does (`src/test/isolation/isolationtester.c`): one connection per
//! session driven by one coordinator, plus a control connection for setup,
//! teardown and lock-wait detection.
//!
//! A step is sent, then watched: it either completes, or its backend is
//! found waiting on a lock held by another session
//! (`pg_isolation_test_session_is_blocked`, PostgreSQL 10+; elsewhere
//! `pg_stat_activity.wait_event_type = 'Lock'`). A waiting step is left
//! pending and the next step of the permutation runs; after every step the
//! pending ones are checked again, since a COMMIT may have released them.
//! A session's next step first waits for its pending one. Anything that
//! neither finishes nor waits on a lock within the step timeout, or stays
//! blocked past it, ends the run as stuck: its queries are cancelled and
//! its backends terminated, so nothing hangs and nothing leaks.
//!
//! Every run gets a fresh schema (`search_path` of all its connections) and
//! fresh connections; the schema is dropped afterwards with everything the
//! probe created.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use tokio_postgres::{Client, Config};
use tokio_util::sync::CancellationToken;

use super::spec::{Probe, StepRef};
use crate::model::Isolation;
use crate::postgres;

/// How to tell that a backend waits on another session's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCheck {
    /// `pg_isolation_test_session_is_blocked(pid, pids)` (PostgreSQL 10+):
    /// lock waits and safe-snapshot waits caused by the other sessions.
    IsolationTestFunction,
    /// `pg_stat_activity.wait_event_type = 'Lock'` for servers without it.
    LockWaitEvent,
}

impl WaitCheck {
    /// Whether backend `pid` waits on a lock held by one of `others`
    /// (with [`WaitCheck::LockWaitEvent`], on any lock), asked on `ctl`.
    pub async fn is_blocked(
        self,
        ctl: &Client,
        pid: i32,
        others: &[i32],
    ) -> std::result::Result<bool, tokio_postgres::Error> {
        Ok(match self {
            WaitCheck::IsolationTestFunction => ctl
                .query_one(
                    "SELECT pg_catalog.pg_isolation_test_session_is_blocked($1, $2)",
                    &[&pid, &others],
                )
                .await?
                .get::<_, bool>(0),
            WaitCheck::LockWaitEvent => ctl
                .query_opt(
                    "SELECT coalesce(wait_event_type = 'Lock', false)
                       FROM pg_catalog.pg_stat_activity WHERE pid = $1",
                    &[&pid],
                )
                .await?
                .is_some_and(|r| r.get::<_, bool>(0)),
        })
    }

    /// Picks the best check the server offers.
    pub async fn detect(client: &Client) -> Result<WaitCheck> {
        let row = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc
                                 WHERE proname = 'pg_isolation_test_session_is_blocked')",
                &[],
            )
            .await
            .context("probing for pg_isolation_test_session_is_blocked")?;
        Ok(if row.get::<_, bool>(0) {
            WaitCheck::IsolationTestFunction
        } else {
            WaitCheck::LockWaitEvent
        })
    }
}

/// Where and how to run.
#[derive(Debug, Clone)]
pub struct Env {
    /// Connection settings of the database the probes run in.
    pub config: Config,
    pub wait_check: WaitCheck,
    /// The longest a step may run without waiting on a lock, or stay
    /// blocked, before the run is declared stuck.
    pub step_timeout: Duration,
    /// Fired (Ctrl-C): the run stops at its next poll, cancels what still
    /// runs and drops its schema; the execution is marked `interrupted`.
    pub cancel: CancellationToken,
}

/// What a completed step returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepResult {
    /// The rows of its statements (none for statements without rows),
    /// columns joined by `,`, `NULL` for null.
    Rows(Vec<String>),
    Error {
        sqlstate: String,
        message: String,
    },
}

#[derive(Debug, Clone)]
pub struct StepRecord {
    pub step: StepRef,
    /// The step waited on another session's lock before completing.
    pub waited: bool,
    pub result: StepResult,
}

/// An error of a step or a session's teardown.
#[derive(Debug, Clone)]
pub struct ErrorAt {
    /// `session:step` or `session:teardown`.
    pub at: String,
    pub sqlstate: String,
    pub message: String,
}

/// A step (or a session's teardown) that did not complete in time.
#[derive(Debug, Clone)]
pub struct Stuck {
    /// `session:step`, or `session:teardown`.
    pub at: String,
    pub session: usize,
    /// The step, unless a teardown got stuck.
    pub step: Option<StepRef>,
    /// It was waiting on another session's lock (else: running).
    pub blocked: bool,
    pub waited: Duration,
}

/// The result of one run of an interleaving.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Completed steps in completion order.
    pub records: Vec<StepRecord>,
    /// Per step that completed: whether the transaction it ran in
    /// committed (`txn::step_outcomes`).
    pub step_committed: BTreeMap<StepRef, bool>,
    /// Per session: it ran steps, and every transaction they ran in
    /// committed (and it was not stuck).
    pub committed: Vec<bool>,
    /// The `@final` query's rows, when the probe has one and the run was
    /// not stuck.
    pub final_rows: Option<Vec<String>>,
    pub stuck: Option<Stuck>,
    /// Errors of steps and session teardowns, in completion order; see
    /// [`Execution::errors`].
    errors: Vec<ErrorAt>,
    /// Stopped early because [`Env::cancel`] fired; not a result.
    pub interrupted: bool,
    /// What happened, step by step, in the isolation tester's style.
    pub trace: Vec<String>,
}

impl Execution {
    /// The rows a step returned, if it completed without error.
    pub fn rows(&self, r: StepRef) -> Option<&[String]> {
        self.records
            .iter()
            .find(|x| x.step == r)
            .and_then(|x| match &x.result {
                StepResult::Rows(rows) => Some(rows.as_slice()),
                StepResult::Error { .. } => None,
            })
    }

    /// Steps that waited on a lock, in completion order (a stuck blocked
    /// step last).
    pub fn waited(&self) -> Vec<StepRef> {
        let mut v: Vec<StepRef> = self
            .records
            .iter()
            .filter(|r| r.waited)
            .map(|r| r.step)
            .collect();
        if let Some(s) = &self.stuck
            && s.blocked
            && let Some(step) = s.step
        {
            v.push(step);
        }
        v
    }

    /// Whether step `r` completed and the transaction it ran in committed.
    pub fn committed(&self, r: StepRef) -> bool {
        self.step_committed.get(&r).copied().unwrap_or(false)
    }

    /// Errors of steps and session teardowns in completion order, skipping
    /// 25P02 (a statement after an error in the same transaction).
    pub fn errors(&self) -> impl Iterator<Item = &ErrorAt> {
        self.errors.iter().filter(|e| e.sqlstate != "25P02")
    }
}

static SCHEMA_SEQ: AtomicU32 = AtomicU32::new(0);

/// Runs `plan` (steps in order) of `probe` at `level` in a fresh schema.
///
/// Concurrent runs (`serial` false) open every session and run its setup
/// before the first step, as the isolation tester does. Serial runs open a
/// session just before its first step and close it (teardown, then the
/// connection) after its last, so no session's snapshot or lock overlaps
/// another's.
///
/// After the steps: session teardowns (a `COMMIT` there counts), the
/// connections close (a transaction still open rolls back), then the
/// `@final` query and the global teardown. Every block is bounded by the
/// step timeout, so nothing can hang.
///
/// Errors: the server cannot be reached, or a setup, `@final` or global
/// teardown block fails or times out (naming the probe's file and line).
/// Step and session-teardown errors are results, not errors.
pub async fn execute(
    env: &Env,
    probe: &Probe,
    plan: &[StepRef],
    level: Isolation,
    serial: bool,
) -> Result<Execution> {
    let ctl = postgres::connect(&env.config).await?;
    let schema = format!(
        "isobench_probe_{}_{}",
        std::process::id(),
        SCHEMA_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    ctl.batch_execute(&format!(
        "SET client_min_messages = warning; CREATE SCHEMA {schema}; SET search_path = {schema}"
    ))
    .await
    .with_context(|| format!("creating schema {schema} for probe {}", probe.name))?;
    let mut run = Runner::new(env, probe, ctl, &schema, level);
    let mut outcome = run.run(plan, serial).await;
    run.cleanup().await;
    if outcome.is_ok() {
        outcome = run.finish().await;
    } else if let Some(b) = &probe.teardown {
        // Best effort: objects outside the schema must not leak either.
        let _ = run.block(None, &b.sql).await;
    }
    let dropped = run
        .ctl()
        .batch_execute(&format!(
            "SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {schema} CASCADE"
        ))
        .await;
    outcome?;
    dropped.with_context(|| format!("dropping schema {schema} after probe {}", probe.name))?;
    Ok(run.into_execution())
}

mod runner;

use runner::Runner;
