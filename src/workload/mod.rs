//! Workloads: schema, deterministic data, transactions, invariant checks.
//!
//! A [`Workload`] loads its data once into a template database and checks
//! its invariants after every run; a [`WorkloadClient`] (one per simulated
//! client) draws a transaction's inputs and executes one attempt of it. The
//! engine owns everything around an attempt: timing, the retry loop,
//! rollback, and recording. Workload types are generic parameters of the
//! engine (no boxing per transaction).

pub mod tpcb;

use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_postgres::{Client, Statement};

use crate::config::Isolation;
use crate::engine::retry::AttemptError;
use crate::metrics::Lifetime;

/// Errors of loading or checking a workload.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error("{what}: {reason}")]
    Db { what: String, reason: String },
    #[error("{0}")]
    Invalid(String),
}

impl WorkloadError {
    pub fn db(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> WorkloadError {
        let what = what.into();
        move |e| WorkloadError::Db {
            what,
            reason: crate::target::error_text(&e),
        }
    }
}

/// The result of one invariant check after a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvariantResult {
    pub name: String,
    pub ok: bool,
    /// The values compared, e.g. `sum(abalance)=-1234 sum(tbalance)=-1234`.
    pub detail: String,
}

/// How long loading took and what it wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    #[serde(with = "crate::config::duration_ms", rename = "load_ms")]
    pub elapsed: Duration,
    pub rows: u64,
}

/// A statement whose plan the report shows (EXPLAIN with representative
/// literal inputs, never ANALYZE).
#[derive(Debug, Clone)]
pub struct ExplainStatement {
    pub label: &'static str,
    pub sql: String,
}

/// The prepared transaction-control statements of one connection.
#[derive(Debug, Clone)]
pub struct TxControl {
    begin: Statement,
    commit: Statement,
    rollback: Statement,
}

impl TxControl {
    /// Prepares `BEGIN ISOLATION LEVEL <isolation>`, `COMMIT`, `ROLLBACK`.
    pub async fn prepare(
        conn: &Client,
        isolation: Isolation,
    ) -> Result<Self, tokio_postgres::Error> {
        Ok(TxControl {
            begin: conn
                .prepare(&format!("BEGIN ISOLATION LEVEL {}", isolation.sql()))
                .await?,
            commit: conn.prepare("COMMIT").await?,
            rollback: conn.prepare("ROLLBACK").await?,
        })
    }

    pub async fn begin(&self, conn: &Client) -> Result<(), AttemptError> {
        conn.execute(&self.begin, &[])
            .await
            .map(drop)
            .map_err(AttemptError::body)
    }

    /// COMMIT; an error here is marked `at_commit` (unknown outcome if the
    /// connection broke).
    pub async fn commit(&self, conn: &Client) -> Result<(), AttemptError> {
        conn.execute(&self.commit, &[])
            .await
            .map(drop)
            .map_err(AttemptError::commit)
    }

    pub async fn rollback(&self, conn: &Client) -> Result<(), tokio_postgres::Error> {
        conn.execute(&self.rollback, &[]).await.map(drop)
    }
}

/// A workload (see the module docs). Implementations are cheap to share
/// across clients (`Arc`).
pub trait Workload: Send + Sync + 'static {
    type Client: WorkloadClient;

    /// Registry name, e.g. `tpcb`.
    fn name(&self) -> &'static str;

    /// Creates the schema and loads the data into the connected, empty
    /// database. Deterministic: the same parameters give the same rows.
    fn load(&self, db: &Client) -> impl Future<Output = Result<LoadReport, WorkloadError>> + Send;

    /// Statements to EXPLAIN once per run.
    fn explain_statements(&self) -> Vec<ExplainStatement>;

    /// A client with its own input generator seeded from `seed`.
    fn client(&self, client_id: u32, seed: u64) -> Self::Client;

    /// Checks the invariants after a run; `lifetime` counts what all clients
    /// saw commit (warm-up and drain included) and the unknown outcomes.
    fn check(
        &self,
        db: &Client,
        lifetime: Lifetime,
    ) -> impl Future<Output = Result<Vec<InvariantResult>, WorkloadError>> + Send;
}

/// One client's view of a workload.
pub trait WorkloadClient: Send + 'static {
    /// A transaction's inputs; a retry reuses them.
    type Input: Send + Sync;

    /// Prepares this client's statements on its connection.
    fn prepare(
        &mut self,
        conn: &Client,
    ) -> impl Future<Output = Result<(), tokio_postgres::Error>> + Send;

    /// Draws the next transaction's inputs.
    fn next_input(&mut self) -> Self::Input;

    /// Runs one attempt, from BEGIN to COMMIT (with `tx`). On error the
    /// engine rolls back and decides whether to retry.
    fn attempt(
        &mut self,
        conn: &Client,
        tx: &TxControl,
        input: &Self::Input,
    ) -> impl Future<Output = Result<(), AttemptError>> + Send;
}

/// Name and one-line description of each built-in workload.
pub const REGISTRY: &[(&str, &str)] = &[(
    "tpcb",
    "pgbench's TPC-B (sort of): accounts/tellers/branches updates + history insert",
)];
