//! Workloads: schema, deterministic data, transactions, invariant checks.
//!
//! A [`Workload`] is built from a [`Setup`] (scale, strategy, parameters),
//! loads its data once into a template database, and checks its
//! invariants after every run; a [`WorkloadClient`] (one per simulated
//! client) draws a transaction's inputs and executes one attempt of it. The
//! engine owns everything around an attempt: timing, the retry loop,
//! rollback, and recording. Workload types are generic parameters of the
//! engine (no boxing per transaction).
//!
//! Each workload is described by a static [`WorkloadSpec`] in [`REGISTRY`]:
//! its parameters with defaults, its strategies, its transaction types and
//! invariants. The specification of every built-in workload is
//! `../shared/docs/WORKLOADS.md` in the project's docs.

pub mod dist;
pub mod docstore;
pub mod list_append;
pub mod sibench;
pub mod smallbank;
pub mod ssibench;
pub mod sysbench;
pub mod tpcb;
pub mod tpcc;
pub mod write_skew;
pub mod ycsb;

use crate::model::{FailureReason, InvariantResult, StepTime};
use std::collections::BTreeMap;
use std::future::Future;

use bytes::{BufMut, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::Client;

use crate::model::Isolation;
use crate::model::Lifetime;
use crate::wire::{Conn, Statement};

/// Errors of building, loading or checking a workload.
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
            reason: crate::postgres::error_text(&e),
        }
    }
}

/// A workload parameter (`--param NAME=VALUE`).
#[derive(Debug, Clone, Copy)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: &'static str,
    /// One line: meaning, unit, allowed values.
    pub help: &'static str,
}

/// A concurrency-control strategy (`--strategy NAME`).
#[derive(Debug, Clone, Copy)]
pub struct StrategySpec {
    pub name: &'static str,
    /// One line: which locks the transactions take.
    pub help: &'static str,
}

/// What `--scale` means for a workload that has one.
#[derive(Debug, Clone, Copy)]
pub struct ScaleSpec {
    pub default: u32,
    /// What one unit of scale loads, e.g. `1 branch, 10 tellers, 100000 accounts`.
    pub unit: &'static str,
}

/// The static description of a built-in workload (`isobench workloads`).
#[derive(Debug, Clone, Copy)]
pub struct WorkloadSpec {
    pub name: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Where the workload comes from (paper, benchmark, documentation).
    pub source: &'static str,
    /// `None`: the workload's size is a parameter and `--scale` is refused.
    pub scale: Option<ScaleSpec>,
    pub params: &'static [ParamSpec],
    /// The first is the default.
    pub strategies: &'static [StrategySpec],
    /// Transaction types and default weights, one per line.
    pub transactions: &'static [&'static str],
    /// Invariants checked after every run, one per line.
    pub invariants: &'static [&'static str],
    /// One `isobench run` example (without the `isobench run` prefix).
    pub example: &'static str,
}

impl WorkloadSpec {
    pub fn default_strategy(&self) -> &'static str {
        self.strategies[0].name
    }

    fn param(&self, name: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.name == name)
    }

    /// Every parameter at its default.
    pub fn defaults(&self) -> BTreeMap<String, String> {
        self.params
            .iter()
            .map(|p| (p.name.to_string(), p.default.to_string()))
            .collect()
    }

    /// Checks a `--param` name. Errors: unknown, listing the known ones.
    pub fn check_param(&self, name: &str) -> Result<(), WorkloadError> {
        if self.param(name).is_some() {
            return Ok(());
        }
        let known: Vec<&str> = self.params.iter().map(|p| p.name).collect();
        Err(WorkloadError::Invalid(format!(
            "--param {name}: {} has no parameter '{name}' ({}; see `isobench workloads {}`)",
            self.name,
            if known.is_empty() {
                "it has none".to_string()
            } else {
                format!("it has {}", known.join(", "))
            },
            self.name
        )))
    }

    /// Checks a `--strategy` name. Errors: unknown, listing the known ones.
    pub fn check_strategy(&self, name: &str) -> Result<(), WorkloadError> {
        if self.strategies.iter().any(|s| s.name == name) {
            return Ok(());
        }
        let known: Vec<&str> = self.strategies.iter().map(|s| s.name).collect();
        Err(WorkloadError::Invalid(format!(
            "--strategy {name}: {} has no strategy '{name}' (it has {}; see `isobench workloads {}`)",
            self.name,
            known.join(", "),
            self.name
        )))
    }

    /// Checks `--scale`: refused by workloads sized by a parameter.
    pub fn resolve_scale(&self, given: Option<u32>) -> Result<Option<u32>, WorkloadError> {
        match (self.scale, given) {
            (Some(s), g) => Ok(Some(g.unwrap_or(s.default))),
            (None, None) => Ok(None),
            (None, Some(_)) => Err(WorkloadError::Invalid(format!(
                "--scale: {} has no scale factor; its size is a parameter (see `isobench workloads {}`)",
                self.name, self.name
            ))),
        }
    }
}

/// The spec of the built-in workload `name`.
pub fn spec(name: &str) -> Option<&'static WorkloadSpec> {
    REGISTRY.iter().copied().find(|s| s.name == name)
}

/// Every built-in workload, in the order `isobench workloads` lists them
/// (`crate::drive::with_workload` gives each name its type).
pub static REGISTRY: &[&WorkloadSpec] = &[
    &tpcb::SPEC,
    &sibench::SPEC,
    &ssibench::SSIBENCH,
    &ssibench::SIMPLE_SSIBENCH,
    &smallbank::SPEC,
    &write_skew::SPEC,
    &docstore::SPEC,
    &list_append::SPEC,
    &list_append::REGISTER_SPEC,
    &ycsb::SPEC,
    &sysbench::SPEC,
    &tpcc::SPEC,
];

/// What one workload instance is built from: one cell's workload factors.
#[derive(Debug, Clone)]
pub struct Setup {
    pub spec: &'static WorkloadSpec,
    /// Resolved `--scale` (`None` for workloads without one).
    pub scale: Option<u32>,
    pub strategy: String,
    /// Every parameter of the spec: given values over defaults.
    pub params: BTreeMap<String, String>,
}

impl Setup {
    /// A setup of `spec` with `strategy` (default if `None`), parameter
    /// values `given` (others at their defaults) and `scale`.
    ///
    /// Errors: unknown strategy or parameter, or `--scale` on a workload
    /// without one.
    pub fn new(
        spec: &'static WorkloadSpec,
        scale: Option<u32>,
        strategy: Option<&str>,
        given: &BTreeMap<String, String>,
    ) -> Result<Self, WorkloadError> {
        let strategy = strategy.unwrap_or(spec.default_strategy());
        spec.check_strategy(strategy)?;
        let mut params = spec.defaults();
        for (k, v) in given {
            spec.check_param(k)?;
            params.insert(k.clone(), v.clone());
        }
        Ok(Setup {
            spec,
            scale: spec.resolve_scale(scale)?,
            strategy: strategy.to_string(),
            params,
        })
    }

    /// The resolved scale of a workload that has one (else 1).
    pub fn scale(&self) -> u32 {
        self.scale.unwrap_or(1)
    }

    fn raw(&self, name: &str) -> &str {
        self.params
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{}: parameter '{name}' is not in its spec", self.spec.name))
    }

    fn bad(&self, name: &str, want: &str) -> WorkloadError {
        WorkloadError::Invalid(format!(
            "--param {name}={}: {} expects {want}",
            self.raw(name),
            self.spec.name
        ))
    }

    /// An integer parameter in `range`.
    pub fn int(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Result<i64, WorkloadError> {
        match self.raw(name).trim().replace('_', "").parse::<i64>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(self.bad(
                name,
                &format!("an integer from {} to {}", range.start(), range.end()),
            )),
        }
    }

    /// A number parameter in `range`.
    pub fn float(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<f64>,
    ) -> Result<f64, WorkloadError> {
        match self.raw(name).trim().parse::<f64>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(self.bad(
                name,
                &format!("a number from {} to {}", range.start(), range.end()),
            )),
        }
    }

    /// A boolean parameter: true/false, yes/no, on/off, 1/0.
    pub fn bool(&self, name: &str) -> Result<bool, WorkloadError> {
        match self.raw(name).trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(self.bad(name, "true or false")),
        }
    }

    /// One of `choices`; returns its index.
    pub fn choice(&self, name: &str, choices: &[&str]) -> Result<usize, WorkloadError> {
        let v = self.raw(name).trim();
        choices
            .iter()
            .position(|c| *c == v)
            .ok_or_else(|| self.bad(name, &format!("one of {}", choices.join(", "))))
    }
}

/// A statement whose plan the report shows (EXPLAIN with representative
/// literal inputs, never ANALYZE).
#[derive(Debug, Clone)]
pub struct ExplainStatement {
    pub label: std::borrow::Cow<'static, str>,
    pub sql: String,
}

/// An error of one attempt, with where it happened.
#[derive(Debug)]
pub struct AttemptError {
    pub error: Cause,
    /// True when the error came from COMMIT (or an autocommit statement
    /// that is the transaction).
    pub at_commit: bool,
    /// The command of the client's program that failed, when the workload
    /// knows it (a pgbench script's `file:line`); shared, so that a failed
    /// attempt allocates nothing for it.
    pub location: Option<std::sync::Arc<Location>>,
    /// The statement that raised it, for a workload that names its
    /// statements ([`AttemptError::at`]; its [`ExplainStatement`] label,
    /// so that reports can show its plan).
    pub statement: Option<&'static str>,
}

/// Where in a client's program a command is: a pgbench script's
/// `file:line` and the command's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// `file:line`, e.g. `missing_table.sql:4`.
    pub at: String,
    /// The command's first line, e.g. `SELECT count(*) FROM nope;`.
    pub command: String,
}

/// What failed: the server (or the connection), or the client's program.
#[derive(Debug)]
pub enum Cause {
    Db(crate::wire::Error),
    /// A run-time error of a pgbench script, with its location.
    Script(String),
}

impl AttemptError {
    pub fn body(error: crate::wire::Error) -> Self {
        AttemptError {
            error: Cause::Db(error),
            at_commit: false,
            location: None,
            statement: None,
        }
    }

    pub fn commit(error: crate::wire::Error) -> Self {
        AttemptError {
            error: Cause::Db(error),
            at_commit: true,
            location: None,
            statement: None,
        }
    }

    /// A script's run-time error (message with file and line).
    pub fn script(message: String) -> Self {
        AttemptError {
            error: Cause::Script(message),
            at_commit: false,
            location: None,
            statement: None,
        }
    }

    /// The error as raised by the statement labelled `statement`.
    pub fn at(mut self, statement: &'static str) -> Self {
        self.statement = Some(statement);
        self
    }

    /// The reason under the server error's SQLSTATE, from its message and
    /// DETAIL ([`FailureReason::of`]); `None` for an error without one or
    /// without a server error. Allocates nothing for a known reason.
    pub fn reason(&self) -> Option<FailureReason> {
        let Cause::Db(e) = &self.error else {
            return None;
        };
        let db = e.as_db_error()?;
        FailureReason::of(db.code, &db.message, db.detail.as_deref())
    }

    /// The error's text (the server's message and SQLSTATE, or the
    /// script's).
    pub fn text(&self) -> String {
        match &self.error {
            Cause::Db(e) => e.to_string(),
            Cause::Script(m) => m.clone(),
        }
    }

    /// The same error at `location` (a shared, precomputed location).
    pub fn located(mut self, location: &std::sync::Arc<Location>) -> Self {
        self.location = Some(std::sync::Arc::clone(location));
        self
    }

    /// The error's text with its location when known, as pgbench words a
    /// script's errors: `file:line: message (SQLSTATE) (in `command`)`.
    pub fn describe(&self) -> String {
        match &self.location {
            Some(l) => format!("{}: {} (in `{}`)", l.at, self.text(), l.command),
            None => self.text(),
        }
    }
}

/// The prepared transaction-control statements of one connection.
#[derive(Debug, Clone)]
pub struct TxControl {
    isolation: Isolation,
    begin: Statement,
    commit: Statement,
    rollback: Statement,
}

impl TxControl {
    /// Prepares `BEGIN ISOLATION LEVEL <isolation>`, `COMMIT`, `ROLLBACK`.
    pub async fn prepare(
        conn: &mut Conn,
        isolation: Isolation,
    ) -> Result<Self, crate::wire::Error> {
        Ok(TxControl {
            isolation,
            begin: conn
                .prepare(&format!("BEGIN ISOLATION LEVEL {}", isolation.sql()))
                .await?,
            commit: conn.prepare("COMMIT").await?,
            rollback: conn.prepare("ROLLBACK").await?,
        })
    }

    /// The run's isolation level.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    pub async fn begin(&self, conn: &mut Conn) -> Result<(), AttemptError> {
        conn.execute(&self.begin, &[])
            .await
            .map(drop)
            .map_err(AttemptError::body)
    }

    /// COMMIT; an error here is marked `at_commit` (unknown outcome if the
    /// connection broke).
    pub async fn commit(&self, conn: &mut Conn) -> Result<Ended, AttemptError> {
        conn.execute(&self.commit, &[])
            .await
            .map(|_| Ended::Committed)
            .map_err(AttemptError::commit)
    }

    /// ROLLBACK after an error (the engine's), or a user abort.
    pub async fn rollback(&self, conn: &mut Conn) -> Result<(), crate::wire::Error> {
        conn.execute(&self.rollback, &[]).await.map(drop)
    }

    /// Rolls back on purpose: the application decided to abort (e.g.
    /// smallbank's TransactSaving that would overdraw). Not a failure.
    pub async fn user_abort(&self, conn: &mut Conn) -> Result<Ended, AttemptError> {
        // Not `at_commit`: a broken connection here cannot have committed.
        self.rollback(conn)
            .await
            .map(|_| Ended::UserAbort)
            .map_err(AttemptError::body)
    }
}

/// How an attempt that raised no error ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Committed,
    /// The application rolled back by design; counted apart from
    /// failures, never retried.
    UserAbort,
}

/// What clients count for the invariant checks (money moved, anomalies
/// seen): accumulated per client without synchronisation, merged once
/// after the run. Serializable, because in a sharded run every shard's
/// ledger travels to shard 0 (as JSON through the coordination schema)
/// to be merged before the checks.
pub trait Ledger:
    Default + Send + serde::Serialize + serde::de::DeserializeOwned + 'static
{
    fn merge(&mut self, other: Self);

    /// Writes what the ledger recorded for run `run` under the results
    /// directory `dir`, when it records something worth keeping (a
    /// transaction history), returning the file's path relative to `dir`.
    /// Called after the run, before the invariants are checked; the
    /// default writes nothing. Errors: the file could not be written.
    fn save(&self, _dir: &std::path::Path, _run: u32) -> std::io::Result<Option<String>> {
        Ok(None)
    }
}

impl Ledger for () {
    fn merge(&mut self, _other: Self) {}
}

/// A workload (see the module docs). Implementations are cheap to share
/// across clients (`Arc`).
pub trait Workload: Sized + Send + Sync + 'static {
    type Client: WorkloadClient;

    /// Builds the workload of one cell. Errors: a parameter value out of
    /// range, naming `--param NAME`.
    fn new(setup: &Setup) -> Result<Self, WorkloadError>;

    /// Identifies the data [`Workload::load`] writes: cells whose workloads
    /// have equal keys share one template database. Empty when every
    /// instance loads the same data.
    fn data_key(&self) -> String;

    /// Names of the transaction types, indexed by
    /// [`WorkloadClient::tx_type`].
    fn tx_types(&self) -> Vec<&'static str>;

    /// Creates the schema and loads the data into the connected, empty
    /// database; returns the rows written. Deterministic: the same
    /// parameters give the same rows.
    fn load(&self, db: &Loader) -> impl Future<Output = Result<u64, WorkloadError>> + Send;

    /// What [`Workload::load`] loads, when the workload's name does not
    /// say it (a pgbench script study's own schema: `--init-sql FILE`);
    /// `None`: the workload's name and [`Workload::data_key`].
    fn data_name(&self) -> Option<String> {
        None
    }

    /// What the last [`Workload::load`] did, when it says more than the
    /// `rows` it returned (`--init-sql FILE: 3 statements, 100 rows`).
    fn load_summary(&self, _rows: u64) -> Option<String> {
        None
    }

    /// Statements to EXPLAIN once per run.
    fn explain_statements(&self) -> Vec<ExplainStatement>;

    /// The commands of transaction type `ty` whose latencies clients
    /// report through [`WorkloadClient::step_times`] (pgbench `-r`);
    /// empty for a workload that reports none.
    fn step_names(&self, _ty: usize) -> Vec<String> {
        Vec::new()
    }

    /// A client with its own input generator seeded from `seed`.
    fn client(&self, client_id: u32, seed: u64) -> Self::Client;

    /// Checks the invariants after a run; `lifetime` counts what all clients
    /// saw commit (warm-up and drain included) and the unknown outcomes,
    /// `ledger` is every client's ledger merged.
    fn check(
        &self,
        db: &Client,
        lifetime: Lifetime,
        ledger: <Self::Client as WorkloadClient>::Ledger,
    ) -> impl Future<Output = Result<Vec<InvariantResult>, WorkloadError>> + Send;
}

/// One client's view of a workload.
pub trait WorkloadClient: Send + 'static {
    /// A transaction's inputs; a retry reuses them.
    type Input: Send + Sync;
    type Ledger: Ledger;

    /// Prepares this client's statements on its connection; called again
    /// on the new connection after a reconnect, so it replaces what an
    /// earlier call prepared.
    fn prepare(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
    ) -> impl Future<Output = Result<(), crate::wire::Error>> + Send;

    /// Draws the next transaction's inputs.
    fn next_input(&mut self) -> Self::Input;

    /// Called once, before any [`WorkloadClient::next_input`], on a client
    /// whose inputs the engine runs on other clients' sessions (a
    /// connection pool, `--pool-size`): what an attempt changes in this
    /// client's state must then reach it from another client. Without
    /// the call every input is attempted by the client that drew it, and
    /// a client may keep its state unshared (no lock per transaction).
    fn inputs_run_elsewhere(&mut self) {}

    /// The transaction type of `input` (index into [`Workload::tx_types`]).
    fn tx_type(&self, input: &Self::Input) -> usize;

    /// How long the client pauses before it starts the transaction of
    /// `input`, outside the transaction's latency: an emulated user's
    /// think time after the previous transaction and keying time of this
    /// one (TPC-C clause 5.2.5, `tpcc --param think=spec`). Zero (the
    /// default) for workloads that run closed loop back to back. Applied
    /// in a closed loop only: an open loop's arrival schedule already
    /// spaces the transactions.
    fn pause_before(&mut self, _input: &Self::Input) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    /// Runs one attempt, from BEGIN to COMMIT (with `tx`). On error the
    /// engine rolls back and decides whether to retry.
    fn attempt(
        &mut self,
        conn: &mut Conn,
        tx: &TxControl,
        input: &Self::Input,
    ) -> impl Future<Output = Result<Ended, AttemptError>> + Send;

    /// Whether `input` only reads, so that `--read-from standby|any` may
    /// run it on a standby (see `engine::reads`). A standby refuses
    /// writes (SQLSTATE 25006), so only a transaction that never writes
    /// may say so. Default: false (every transaction on the primary).
    fn read_only(&self, _input: &Self::Input) -> bool {
        false
    }

    /// The attempt of `input` that just ended ran on a standby (a routed
    /// read), not on the primary: a client that keeps a history can
    /// leave it out of what it checks against the primary's isolation
    /// level (list-append does, see its module docs).
    fn ran_on_standby(&mut self, _input: &Self::Input) {}

    /// The connection broke during the COMMIT of `input`'s last attempt:
    /// it may or may not have committed.
    fn unknown_outcome(&mut self, _input: &Self::Input) {}

    /// Given just before `attempt`: the time the engine read as the
    /// attempt's start. A client that times its commands starts its first
    /// one then, instead of reading the clock again.
    fn attempt_starts(&mut self, _at: std::time::Instant) {}

    /// The time the attempt that just ended ended, for a client that read
    /// the clock then (when its last command ended): the engine ends the
    /// transaction's latency there instead of reading the clock again.
    /// `None` (the default): the engine reads it.
    fn attempt_ended(&self) -> Option<std::time::Instant> {
        None
    }

    /// The per-command latencies of the attempt that just ended, `None`
    /// for a workload that times no commands. The engine reads them after
    /// every attempt (counting them in the measured window only) and then
    /// clears the vector, so its memory is reused.
    fn step_times(&mut self) -> Option<&mut Vec<StepTime>> {
        None
    }

    /// This client's ledger, once it has stopped.
    fn into_ledger(self) -> Self::Ledger;
}

/// Where a workload loads its data: a connection to the new, empty
/// template database (the `Deref` target), and the settings to open more
/// connections to it for loading in parallel.
pub struct Loader {
    db: Client,
    config: tokio_postgres::Config,
}

impl Loader {
    /// `db` is connected to the database `config` names.
    pub fn new(db: Client, config: tokio_postgres::Config) -> Self {
        Loader { db, config }
    }

    /// Another connection to the same database. Errors: it cannot connect.
    pub async fn connect(&self) -> Result<Client, WorkloadError> {
        crate::postgres::connect(&self.config)
            .await
            .map_err(|e| WorkloadError::Invalid(format!("loader connection: {e}")))
    }
}

impl std::ops::Deref for Loader {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.db
    }
}

/// Streams `rows` lines into `COPY ... FROM STDIN` (`sql`): `line(buf, i)`
/// appends row `i` (1-based) in text format, newline included. Returns the
/// rows the server copied. Errors: the COPY failed (naming `sql`).
pub async fn copy_rows(
    db: &Client,
    sql: &str,
    rows: i64,
    mut line: impl FnMut(&mut BytesMut, i64),
) -> Result<u64, WorkloadError> {
    let sink = db.copy_in(sql).await.map_err(WorkloadError::db(sql))?;
    futures_util::pin_mut!(sink);
    let mut buf = BytesMut::with_capacity(1 << 17);
    for i in 1..=rows {
        line(&mut buf, i);
        if buf.len() >= 1 << 16 {
            sink.send(buf.split().freeze())
                .await
                .map_err(WorkloadError::db(sql))?;
        }
    }
    if !buf.is_empty() {
        sink.send(buf.split().freeze())
            .await
            .map_err(WorkloadError::db(sql))?;
    }
    sink.finish().await.map_err(WorkloadError::db(sql))
}

/// Streams rows `ids` into a binary `COPY ... FROM STDIN (FORMAT binary)`
/// (`sql`): `row(buf, id)` appends one tuple in PostgreSQL's binary copy
/// format (field count, then each field's length and bytes; see the COPY
/// documentation, "Binary Format"). Returns the rows the server copied.
/// Errors: the COPY failed (naming `sql`).
pub async fn copy_binary(
    db: &Client,
    sql: &str,
    ids: std::ops::RangeInclusive<i64>,
    mut row: impl FnMut(&mut BytesMut, i64),
) -> Result<u64, WorkloadError> {
    let sink = db.copy_in(sql).await.map_err(WorkloadError::db(sql))?;
    futures_util::pin_mut!(sink);
    let mut buf = BytesMut::with_capacity(1 << 17);
    // Signature, flags (no OIDs), header extension length.
    buf.put_slice(b"PGCOPY\n\xff\r\n\0");
    buf.put_i32(0);
    buf.put_i32(0);
    for id in ids {
        row(&mut buf, id);
        if buf.len() >= 1 << 16 {
            sink.send(buf.split().freeze())
                .await
                .map_err(WorkloadError::db(sql))?;
        }
    }
    buf.put_i16(-1); // trailer
    sink.send(buf.split().freeze())
        .await
        .map_err(WorkloadError::db(sql))?;
    sink.finish().await.map_err(WorkloadError::db(sql))
}

/// Appends `v` in decimal.
pub fn put_int(buf: &mut BytesMut, v: i64) {
    buf.put_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Renders `isobench workloads` (no name) or `isobench workloads NAME`.
///
/// Errors: unknown name, listing the built-in ones.
pub fn describe(name: Option<&str>) -> Result<String, WorkloadError> {
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(name) = name else {
        for s in REGISTRY {
            let _ = writeln!(out, "{:<16} {}", s.name, s.summary);
            let params: Vec<String> = s
                .params
                .iter()
                .map(|p| format!("{}={}", p.name, p.default))
                .collect();
            let mut line = String::new();
            if let Some(sc) = s.scale {
                let _ = write!(line, "scale={} ", sc.default);
            }
            let _ = write!(
                line,
                "params: {}",
                if params.is_empty() {
                    "none".into()
                } else {
                    params.join(" ")
                }
            );
            let _ = writeln!(out, "{:<16} {line}", "");
            let strategies: Vec<&str> = s.strategies.iter().map(|s| s.name).collect();
            let _ = writeln!(out, "{:<16} strategies: {}", "", strategies.join(", "));
        }
        out.push_str("\n`isobench workloads NAME` shows one workload's transactions, parameters and invariants.\n");
        return Ok(out);
    };
    let s = spec(name).ok_or_else(|| {
        WorkloadError::Invalid(format!(
            "unknown workload '{name}' (built-in: {})",
            REGISTRY
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let _ = writeln!(out, "{}: {}\n\nSource: {}\n", s.name, s.summary, s.source);
    match s.scale {
        Some(sc) => {
            let _ = writeln!(
                out,
                "Scale (--scale, default {}): one unit = {}.\n",
                sc.default, sc.unit
            );
        }
        None => out.push_str("Scale: none (--scale is refused; the size is a parameter).\n\n"),
    }
    out.push_str("Parameters (--param NAME=V1,V2 sweeps them as factors):\n");
    if s.params.is_empty() {
        out.push_str("  none\n");
    }
    for p in s.params {
        let _ = writeln!(out, "  {:<20} default {:<12} {}", p.name, p.default, p.help);
    }
    out.push_str("\nStrategies (--strategy A,B; the first is the default):\n");
    for st in s.strategies {
        let _ = writeln!(out, "  {:<12} {}", st.name, st.help);
    }
    out.push_str("\nTransactions:\n");
    for t in s.transactions {
        let _ = writeln!(out, "  {t}");
    }
    out.push_str("\nInvariants (checked after every run; violations are counted as anomalies):\n");
    for i in s.invariants {
        let _ = writeln!(out, "  {i}");
    }
    let _ = writeln!(out, "\nExample:\n  isobench run {}", s.example);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_specs_are_well_formed() {
        let mut names = std::collections::BTreeSet::new();
        for s in REGISTRY {
            assert!(names.insert(s.name), "duplicate workload {}", s.name);
            assert!(!s.strategies.is_empty(), "{}", s.name);
            assert!(
                !s.transactions.is_empty() && !s.invariants.is_empty(),
                "{}",
                s.name
            );
            assert!(describe(Some(s.name)).unwrap().contains(s.example));
        }
        assert!(
            describe(Some("nope"))
                .unwrap_err()
                .to_string()
                .contains("tpcb")
        );
    }

    #[test]
    fn setup_rejects_unknown_names_and_bad_values() {
        let s = spec("tpcb").unwrap();
        let given = BTreeMap::from([("bogus".to_string(), "1".to_string())]);
        let e = Setup::new(s, None, None, &given).unwrap_err().to_string();
        assert!(e.contains("--param bogus") && e.contains("variant"), "{e}");
        let e = Setup::new(s, None, Some("locking"), &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--strategy locking") && e.contains("optimistic"),
            "{e}"
        );
        let setup = Setup::new(s, None, None, &BTreeMap::new()).unwrap();
        assert_eq!(setup.scale, Some(10));
        assert_eq!(setup.strategy, "optimistic");
        let sib = spec("sibench").unwrap();
        let e = Setup::new(sib, Some(3), None, &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("--scale"), "{e}");
        let given = BTreeMap::from([("rows".to_string(), "ten".to_string())]);
        let setup = Setup::new(sib, None, None, &given).unwrap();
        let e = setup.int("rows", 1..=10).unwrap_err().to_string();
        assert!(e.contains("--param rows=ten"), "{e}");
    }
}
