//! The lean connection layer of the measured statements.
//!
//! A [`Conn`] owns its socket, a read buffer and a write buffer; a
//! statement is written to the socket and its answer read back by the
//! future that runs it, in the client's own task, with no second task,
//! no channel and no allocation per statement beyond the rows it returns.
//! It speaks PostgreSQL's frontend/backend protocol (version 3.0, see the
//! PostgreSQL documentation, chapter "Frontend/Backend Protocol") through
//! `postgres-protocol`'s frontend message codecs, the ones tokio-postgres
//! uses, and reads the backend's answers in place (module `backend`): per
//! statement, `Bind`, `Execute` and `Sync` in one write, then
//! `BindComplete`, rows, `CommandComplete` and `ReadyForQuery` read until
//! the last, as libpq's `PQsendQueryPrepared` does for pgbench (which adds
//! a `Describe` that isobench does not need: it knows a prepared
//! statement's columns from preparing it).
//!
//! Why not tokio-postgres: its `Client` queues a request on a channel
//! for its `Connection` future, which writes it and hands the answer back
//! on another channel; the hops, the runtime's wake-ups between the two
//! halves and the per-request allocations cost ~25 % more client CPU per
//! transaction than libpq (BENCHMARKS.md, "Where the CPU goes"), which on a
//! saturated machine keeps every SERIALIZABLE transaction open longer.
//! tokio-postgres stays for everything that is not measured (loading,
//! observers, invariant checks, probes).
//!
//! What it does not do: TLS (isobench connects without it everywhere),
//! GSSAPI/SSPI authentication, COPY, and queries of other sessions'
//! notifications (they are read and dropped, as are notices).

// The floor below.
use isobench_model as model;

mod backend;
mod connect;
mod encode;
mod error;
mod socket;

use std::ops::Range;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use postgres_protocol::message::frontend;
use postgres_types::{FromSql, Kind, ToSql, Type};

pub use connect::{connect, connect_from, host_labels};
pub use error::{DbError, Error, Fields, Severity, error_position, libpq_message};

use backend::{Frame, Front, tag};

use crate::model::SqlState;

/// Result formats: text (pgbench's) or binary (decoded with `FromSql`).
const TEXT: i16 = 0;
const BINARY: i16 = 1;

/// A connection to PostgreSQL (see the module docs). Every operation
/// takes `&mut self`: one statement at a time, or a pipeline of them
/// ([`Conn::queue`], [`Conn::read_pipeline`]).
pub struct Conn {
    stream: socket::Socket,
    rbuf: BytesMut,
    /// Where the unread bytes of `rbuf` start: the messages before it
    /// were returned by [`Conn::read`] (the last one stays readable until
    /// the next read) or skipped. They are dropped from the buffer only
    /// when it is read into again, not one message at a time.
    rpos: usize,
    wbuf: BytesMut,
    /// The connection is gone (EOF, an I/O error, or after a FATAL).
    closed: bool,
    /// The SQLSTATE of the FATAL error the server ended the session with.
    end: Option<SqlState>,
    /// Names the next prepared statement.
    next_statement: u32,
    /// The backend's process id (`BackendKeyData`).
    pid: i32,
    /// The transaction status of the last `ReadyForQuery`: `I` idle, `T`
    /// in a transaction block, `E` in a failed one.
    status: u8,
    /// A write went out since the last read: the next read tries the
    /// socket at once, as libpq's `PQconsumeInput` does (see [`Conn::read`]).
    sent: bool,
    /// `Some`: statements are prepared as the unnamed statement and parsed
    /// again with every execution (pgbench's `-M extended`), their
    /// descriptions shared through this cache ([`Conn::use_unnamed`]).
    unnamed: Option<Arc<StatementCache>>,
    /// Print the server's notices and warnings on stderr, as libpq's
    /// default notice processor does ([`Conn::print_notices`]); else they
    /// are dropped.
    notices: bool,
}

/// The descriptions of statements prepared as the unnamed statement,
/// shared by the connections of one run: such a statement belongs to no
/// connection (it is parsed again with every execution), so the first
/// connection that prepares a text learns its parameter and column types
/// and every other one reuses them, without a round trip and without a
/// copy per connection (at 50,000 connections, about 1.5 KB each for
/// TPC-B's eight statements). Only for connections to one database as
/// one user: the types are those its server inferred.
#[derive(Debug, Default)]
pub struct StatementCache(std::sync::Mutex<Vec<Statement>>);

impl StatementCache {
    fn get(&self, sql: &str) -> Option<Statement> {
        let known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        known
            .iter()
            .find(|s| s.0.sql.as_deref() == Some(sql))
            .cloned()
    }

    fn put(&self, stmt: &Statement) {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !known.iter().any(|s| s.0.sql == stmt.0.sql) {
            known.push(stmt.clone());
        }
    }
}

/// A statement prepared on one [`Conn`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct Statement(Arc<StatementInner>);

#[derive(Debug)]
struct StatementInner {
    /// Empty for the unnamed statement.
    name: String,
    params: Vec<Type>,
    columns: Arc<[Column]>,
    /// The text of an unnamed statement, sent (`Parse`) with every
    /// execution; `None` for a named one.
    sql: Option<Arc<str>>,
}

/// A result column: its name and type.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: Type,
}

impl Statement {
    /// The types of the statement's parameters, as the server inferred
    /// them.
    pub fn params(&self) -> &[Type] {
        &self.0.params
    }

    /// The statement's result columns (empty for one that returns none).
    pub fn columns(&self) -> &[Column] {
        &self.0.columns
    }
}

/// A row of a result, its values in binary format (see [`Row::get`]).
pub struct Row {
    body: Box<[u8]>,
    ranges: Vec<Option<Range<usize>>>,
    columns: Arc<[Column]>,
}

impl Row {
    /// The value of column `idx` as `T`.
    ///
    /// Panics: no such column, or a value `T` cannot be decoded from (a
    /// bug of the workload's SQL, as with tokio-postgres's `Row::get`).
    pub fn get<'a, T: FromSql<'a>>(&'a self, idx: usize) -> T {
        match self.try_get(idx) {
            Ok(v) => v,
            Err(e) => panic!("column {idx}: {e}"),
        }
    }

    /// The value of column `idx` as `T`. Errors: no such column, a type
    /// `T` does not accept, or a value that does not decode.
    pub fn try_get<'a, T: FromSql<'a>>(&'a self, idx: usize) -> Result<T, String> {
        let col = self
            .columns
            .get(idx)
            .ok_or_else(|| format!("no column {idx} (the row has {})", self.columns.len()))?;
        if !T::accepts(&col.ty) {
            return Err(format!(
                "{} (type {}) cannot be read as {}",
                col.name,
                col.ty,
                std::any::type_name::<T>()
            ));
        }
        let raw = self.ranges[idx].clone().map(|r| &self.body[r]);
        T::from_sql_nullable(&col.ty, raw).map_err(|e| format!("{}: {e}", col.name))
    }

    /// The number of columns.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// What a simple-protocol query returned, message by message: rows (as
/// text) and the end of each statement.
#[derive(Debug)]
pub enum SimpleMessage {
    Row(SimpleRow),
    /// A statement completed, with its row count (0 when the tag has none).
    CommandComplete(u64),
}

/// A row of a simple-protocol query: every value as text.
#[derive(Debug)]
pub struct SimpleRow {
    columns: Arc<[String]>,
    values: Vec<Option<String>>,
}

impl SimpleRow {
    /// The column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Column `idx`'s value (`None`: NULL or no such column).
    pub fn get(&self, idx: usize) -> Option<&str> {
        self.values.get(idx).and_then(|v| v.as_deref())
    }
}

/// Parameters sent in text format, as libpq sends pgbench's (the server
/// reads each by the parameter's type): parameter k is
/// `bytes[spans[k]]`, or NULL where `spans[k]` is `None`. Both buffers are
/// the caller's, reused from statement to statement (nothing is
/// allocated per statement).
#[derive(Debug, Clone, Copy)]
pub struct TextParams<'a> {
    pub bytes: &'a [u8],
    pub spans: &'a [Option<Range<usize>>],
}

impl TextParams<'_> {
    /// No parameters.
    pub const NONE: TextParams<'static> = TextParams {
        bytes: &[],
        spans: &[],
    };
}

impl Conn {
    /// The backend's process id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The connection is gone: closed by the server, broken, or ended by
    /// a FATAL error.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// A transaction block is open (possibly failed, waiting for its
    /// ROLLBACK), as of the last answer the server completed.
    pub fn in_transaction(&self) -> bool {
        self.status != b'I'
    }

    /// The SQLSTATE of the FATAL error that ended the session (e.g.
    /// 57P01 from `pg_terminate_backend`), if the server sent one.
    pub fn end_code(&self) -> Option<SqlState> {
        self.end
    }

    /// From now on, prepares statements as the unnamed statement, to be
    /// parsed again with every execution (`Parse`, `Bind`, `Execute`,
    /// `Sync` in one write: pgbench's `-M extended`), their descriptions
    /// shared through `cache`. What a connection pooler that hands each
    /// transaction to any server connection needs (pgbouncer in
    /// transaction mode before 1.21 keeps no named statements): a named
    /// statement lives on the server connection that prepared it.
    pub fn use_unnamed(&mut self, cache: Arc<StatementCache>) {
        self.unnamed = Some(cache);
    }

    /// Prepares `sql` as a named statement of this connection (`Parse`,
    /// `Describe`, `Sync`: one round trip), or, after
    /// [`Conn::use_unnamed`], describes it as the unnamed statement (no
    /// round trip when another connection of the cache did).
    ///
    /// Errors: the server refused it, or the connection is gone.
    pub async fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.prepare_named(None, sql).await
    }

    /// [`Conn::prepare`], the statement named `name` (pgbench's `P_0`,
    /// `P_1`, ...) instead of by the connection; the caller keeps the
    /// names unique.
    ///
    /// Errors: as [`Conn::prepare`].
    pub async fn prepare_as(&mut self, name: &str, sql: &str) -> Result<Statement, Error> {
        self.prepare_named(Some(name), sql).await
    }

    async fn prepare_named(&mut self, name: Option<&str>, sql: &str) -> Result<Statement, Error> {
        let cache = self.unnamed.clone();
        if let Some(known) = cache.as_ref().and_then(|c| c.get(sql)) {
            return Ok(known);
        }
        let name = match name {
            _ if cache.is_some() => String::new(),
            Some(n) => n.to_string(),
            None => {
                self.next_statement += 1;
                format!("i{}", self.next_statement - 1)
            }
        };
        frontend::parse(&name, sql, std::iter::empty(), &mut self.wbuf).map_err(encode)?;
        frontend::describe(b'S', &name, &mut self.wbuf).map_err(encode)?;
        frontend::sync(&mut self.wbuf);
        self.flush().await?;
        let mut params = Vec::new();
        let mut columns = Vec::new();
        self.until_ready(1, |ty, body| {
            match ty {
                tag::PARAMETER_DESCRIPTION => {
                    params = backend::parameter_types(body)?
                        .into_iter()
                        .map(type_of)
                        .collect();
                }
                tag::ROW_DESCRIPTION => {
                    columns = backend::row_columns(body)?
                        .into_iter()
                        .map(|(name, oid)| Column {
                            name,
                            ty: type_of(oid),
                        })
                        .collect();
                }
                _ => {}
            }
            Ok(())
        })
        .await?;
        let stmt = Statement(Arc::new(StatementInner {
            name,
            params,
            columns: columns.into(),
            sql: cache.as_ref().map(|_| Arc::from(sql)),
        }));
        if let Some(c) = &cache {
            c.put(&stmt);
        }
        Ok(stmt)
    }

    /// Executes prepared `stmt` with `params` (binary format, encoded for
    /// the types the server inferred); returns the rows it affected or
    /// returned (the count of its command tag).
    ///
    /// Errors: a parameter that does not encode, the server's error, or
    /// the connection is gone.
    pub async fn execute(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        self.bind_typed(stmt, params, TEXT)?;
        self.finish(|_| Ok(())).await
    }

    /// Executes prepared `stmt` and returns its rows (binary format).
    ///
    /// Errors: as [`Conn::execute`].
    pub async fn query(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        self.bind_typed(stmt, params, BINARY)?;
        let mut rows = Vec::new();
        let columns = &stmt.0.columns;
        self.finish(|body| {
            rows.push(row(body, columns)?);
            Ok(())
        })
        .await?;
        Ok(rows)
    }

    /// Executes prepared `stmt` and returns its only row.
    ///
    /// Errors: as [`Conn::execute`], or a number of rows other than one.
    pub async fn query_one(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, Error> {
        let mut rows = self.query(stmt, params).await?;
        match rows.len() {
            1 => Ok(rows.pop().expect("one row")),
            n => Err(Error::Protocol(format!("expected one row, got {n}"))),
        }
    }

    /// Executes prepared `stmt` and returns its row, if it returned one.
    ///
    /// Errors: as [`Conn::execute`], or more than one row.
    pub async fn query_opt(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, Error> {
        let mut rows = self.query(stmt, params).await?;
        match rows.len() {
            0 | 1 => Ok(rows.pop()),
            n => Err(Error::Protocol(format!(
                "expected at most one row, got {n}"
            ))),
        }
    }

    /// Executes prepared `stmt` with parameters in text format, as
    /// pgbench's `-M prepared` does (the server parses each by its type);
    /// the result rows are read and dropped.
    ///
    /// Errors: the server's error (a value its type cannot read included),
    /// or the connection is gone.
    pub async fn execute_text(
        &mut self,
        stmt: &Statement,
        params: TextParams<'_>,
    ) -> Result<u64, Error> {
        self.queue_text(Some(stmt), "", params)?;
        self.finish(|_| Ok(())).await
    }

    /// Parses, binds and executes `sql` as the unnamed statement in one
    /// round trip, parameters in text format with their types left to the
    /// server, as pgbench's `-M extended` does.
    ///
    /// Errors: as [`Conn::execute_text`].
    pub async fn execute_unnamed(
        &mut self,
        sql: &str,
        params: TextParams<'_>,
    ) -> Result<u64, Error> {
        self.queue_text(None, sql, params)?;
        self.finish(|_| Ok(())).await
    }

    /// Queues one statement of a pipeline (pgbench's `\startpipeline`):
    /// prepared `stmt`, or `sql` as the unnamed statement, with text
    /// parameters, without `Sync` and without reading. [`Conn::sync`]
    /// ends the pipeline's batch; [`Conn::read_pipeline`] reads it.
    ///
    /// Errors: a message that cannot be encoded.
    pub fn queue(
        &mut self,
        stmt: Option<&Statement>,
        sql: &str,
        params: TextParams<'_>,
    ) -> Result<(), Error> {
        self.queue_bind(stmt, sql, params)?;
        self.wbuf.extend_from_slice(encode::EXECUTE);
        Ok(())
    }

    /// From now on, prints the server's notices and warnings (`WARNING:
    /// SET LOCAL can only be used in transaction blocks`) on stderr as
    /// libpq's default notice processor does, as pgbench's clients do;
    /// by default they are dropped.
    pub fn print_notices(&mut self) {
        self.notices = true;
    }

    /// Ends a pipeline batch (`Sync`), written with the next flush.
    pub fn sync(&mut self) {
        frontend::sync(&mut self.wbuf);
    }

    /// Writes what the pipeline queued and reads the answers of `syncs`
    /// batches. Returns the first error of any statement, after reading
    /// every answer (a batch's statements after an error are skipped by
    /// the server, as in libpq's pipeline mode).
    ///
    /// Errors: the first statement's error with the number of queued
    /// statements that completed before it (so the one that failed is
    /// that many into the pipeline), or the connection is gone.
    pub async fn read_pipeline(&mut self, syncs: usize) -> Result<(), (usize, Error)> {
        self.flush().await.map_err(|e| (0, e))?;
        let mut done = 0;
        self.until_ready(syncs, |ty, _| {
            if ty == tag::COMMAND_COMPLETE || ty == tag::EMPTY_QUERY_RESPONSE {
                done += 1;
            }
            Ok(())
        })
        .await
        .map_err(|e| (done, e))
    }

    /// Runs `sql` (one or more statements) with the simple protocol and
    /// returns its rows as text, each statement's end marked.
    ///
    /// Errors: the first statement that failed (the rest are not run),
    /// or the connection is gone.
    pub async fn simple_query(&mut self, sql: &str) -> Result<Vec<SimpleMessage>, Error> {
        frontend::query(sql, &mut self.wbuf).map_err(encode)?;
        self.flush().await?;
        let mut out = Vec::new();
        let mut columns: Arc<[String]> = Arc::from(Vec::new());
        self.until_ready(1, |ty, body| {
            match ty {
                tag::ROW_DESCRIPTION => {
                    let names: Vec<String> = backend::row_columns(body)?
                        .into_iter()
                        .map(|(name, _)| name)
                        .collect();
                    columns = names.into();
                }
                tag::DATA_ROW => {
                    let mut values = Vec::new();
                    backend::data_row(body, |r| {
                        values.push(r.map(|r| String::from_utf8_lossy(&body[r]).into_owned()))
                    })?;
                    out.push(SimpleMessage::Row(SimpleRow {
                        columns: columns.clone(),
                        values,
                    }));
                }
                tag::COMMAND_COMPLETE => {
                    out.push(SimpleMessage::CommandComplete(backend::command_rows(body)));
                }
                _ => {}
            }
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Runs `sql` (one or more statements) with the simple protocol,
    /// dropping any rows.
    ///
    /// Errors: as [`Conn::simple_query`].
    pub async fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.simple_query(sql).await.map(drop)
    }

    /// Queues `Bind` (binary parameters encoded by their [`ToSql`] for
    /// `stmt`'s parameter types; results in `results` format), `Execute`
    /// and `Sync`.
    fn bind_typed(
        &mut self,
        stmt: &Statement,
        params: &[&(dyn ToSql + Sync)],
        results: i16,
    ) -> Result<(), Error> {
        let types = &stmt.0.params;
        if types.len() != params.len() {
            return Err(Error::Protocol(format!(
                "the statement takes {} parameters, {} given",
                types.len(),
                params.len()
            )));
        }
        parse_unnamed(stmt, &mut self.wbuf)?;
        let mut failed = None;
        let r = frontend::bind(
            "",
            &stmt.0.name,
            std::iter::once(BINARY),
            params.iter().zip(types),
            |(p, ty), buf| match p.to_sql_checked(ty, buf) {
                Ok(postgres_types::IsNull::No) => Ok(postgres_protocol::IsNull::No),
                Ok(postgres_types::IsNull::Yes) => Ok(postgres_protocol::IsNull::Yes),
                Err(e) => {
                    failed = Some(format!("a parameter of type {ty}: {e}"));
                    Err(e)
                }
            },
            std::iter::once(results),
            &mut self.wbuf,
        );
        if let Err(e) = r {
            self.wbuf.clear();
            return Err(Error::Protocol(failed.unwrap_or_else(|| match e {
                frontend::BindError::Conversion(e) => e.to_string(),
                frontend::BindError::Serialization(e) => e.to_string(),
            })));
        }
        self.wbuf.extend_from_slice(&encode::EXECUTE_SYNC);
        Ok(())
    }

    /// Queues one statement with text parameters and `Sync`.
    fn queue_text(
        &mut self,
        stmt: Option<&Statement>,
        sql: &str,
        params: TextParams<'_>,
    ) -> Result<(), Error> {
        let queued = self.queue_bind(stmt, sql, params);
        if queued.is_err() {
            self.wbuf.clear();
        }
        queued?;
        self.wbuf.extend_from_slice(&encode::EXECUTE_SYNC);
        Ok(())
    }

    /// Queues the `Parse` (for an unnamed statement) and the `Bind` of a
    /// statement: prepared `stmt`, or `sql` as the unnamed statement.
    fn queue_bind(
        &mut self,
        stmt: Option<&Statement>,
        sql: &str,
        params: TextParams<'_>,
    ) -> Result<(), Error> {
        match stmt {
            Some(s) => {
                parse_unnamed(s, &mut self.wbuf)?;
                encode::bind_text(&s.0.name, params, &mut self.wbuf)
            }
            None => {
                frontend::parse("", sql, std::iter::empty(), &mut self.wbuf).map_err(encode)?;
                encode::bind_text("", params, &mut self.wbuf)
            }
        }
    }

    /// Writes what is queued and reads the answer of one `Sync`ed
    /// statement: `on_row` gets each row, the command tag's count is
    /// returned.
    async fn finish(
        &mut self,
        mut on_row: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<u64, Error> {
        self.flush().await?;
        let mut count = 0;
        self.until_ready(1, |ty, body| {
            match ty {
                tag::DATA_ROW => on_row(body)?,
                tag::COMMAND_COMPLETE => count = backend::command_rows(body),
                _ => {}
            }
            Ok(())
        })
        .await?;
        Ok(count)
    }

    /// Reads the answers of `syncs` `Sync`ed batches, up to the
    /// `syncs`-th `ReadyForQuery`, giving every other message (its type
    /// byte and body) to `on` until the first error. That error, the server's or `on`'s, is
    /// returned after the last `ReadyForQuery`, so the connection is
    /// ready for the next statement whatever happened (a batch's
    /// statements after an error are skipped by the server). A connection
    /// that breaks first returns the error the server sent before it, if
    /// any, else why it broke.
    async fn until_ready(
        &mut self,
        syncs: usize,
        mut on: impl FnMut(u8, &[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut failed = None;
        let mut ready = 0;
        while ready < syncs {
            let f = match self.read().await {
                Ok(f) => f,
                Err(e) => return Err(failed.unwrap_or(e)),
            };
            match f.tag {
                tag::READY_FOR_QUERY => ready += 1,
                tag::ERROR_RESPONSE => {
                    let e = self.server_error(f);
                    failed.get_or_insert(e);
                }
                tag::COPY_IN_RESPONSE => {
                    // A benchmark client feeds no COPY FROM STDIN: end it
                    // (the server answers with an error, then
                    // ReadyForQuery) and say so.
                    // Boxed: rare, and its state would widen every
                    // statement's future (see `Socket::write_all`).
                    Box::pin(self.copy_fail()).await?;
                    failed = Some(Error::CopyNotSupported);
                }
                ty => {
                    if failed.is_none()
                        && let Err(e) = on(ty, &self.rbuf[f.body()])
                    {
                        failed = Some(e);
                    }
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Closes the connection as libpq's `PQfinish` does: `Terminate`, then
    /// the socket. Errors are ignored: the connection is going anyway.
    pub async fn close(mut self) {
        frontend::terminate(&mut self.wbuf);
        let _ = self.flush().await;
    }

    /// Ends a `COPY ... FROM STDIN` the server started (`CopyFail`): the
    /// server answers with an error, then `ReadyForQuery`.
    async fn copy_fail(&mut self) -> Result<(), Error> {
        frontend::copy_fail("COPY is not supported by this client", &mut self.wbuf)
            .map_err(encode)?;
        self.flush().await
    }

    /// A statement of this connection that the server does not know (its
    /// `Parse` failed): using it gets the server's `prepared statement
    /// ... does not exist`, as pgbench's clients do after a failed
    /// PREPARE.
    pub fn unprepared(&mut self) -> Statement {
        let name = format!("i{}", self.next_statement);
        self.next_statement += 1;
        Self::unprepared_as(&name)
    }

    /// [`Conn::unprepared`] under the name the failed `Parse` gave it.
    pub fn unprepared_as(name: &str) -> Statement {
        let name = name.to_string();
        Statement(Arc::new(StatementInner {
            name,
            params: Vec::new(),
            columns: Arc::from(Vec::new()),
            sql: None,
        }))
    }

    /// The server's error; a FATAL one ends the session (the server
    /// closes the socket after it), so it is remembered as the end code.
    fn server_error(&mut self, f: Frame) -> Error {
        let e = DbError::parse(&self.rbuf[f.body()]);
        if e.is_fatal() {
            self.end = Some(e.code);
        }
        Error::Db(Box::new(e))
    }

    /// Writes the queued messages. A write that fails (the server closed
    /// the connection) reads what the server sent before closing, so that
    /// a FATAL error it ended the session with is what is returned.
    async fn flush(&mut self) -> Result<(), Error> {
        if self.closed {
            self.wbuf.clear();
            return Err(Error::Closed);
        }
        let r = self.stream.write_all(&self.wbuf).await;
        self.wbuf.clear();
        self.sent = true;
        if let Err(e) = r {
            loop {
                match self.read().await {
                    Ok(f) if f.tag == tag::ERROR_RESPONSE => return Err(self.server_error(f)),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
            self.closed = true;
            return Err(Error::Io(e));
        }
        Ok(())
    }

    /// Reads the next message, skipping notices, notifications and
    /// parameter changes: a whole message at the front of the read buffer,
    /// there until the next read. EOF or an I/O error closes the
    /// connection.
    ///
    /// The first read after a write is tried at once, before waiting for
    /// the runtime to report the socket readable, as libpq does when
    /// pgbench calls `PQconsumeInput` right after sending. On a busy
    /// machine the backend woken by the write often runs before the client
    /// does again, so its answer is already there: the client goes on with
    /// its next statement now instead of after its thread's next pass over
    /// every client. Without this, a SERIALIZABLE transaction stayed open
    /// about one pass longer per statement, collected more rw-conflicts,
    /// and failed more often than pgbench's at the same `-j` (0.80 of
    /// pgbench's commits, 54 % against 46 % failed; with it 1.0 and within
    /// a point: BENCHMARKS.md, "Reading right after writing").
    ///
    /// Only inside a transaction block, though: a statement sent while the
    /// session was idle (`BEGIN`, an autocommit statement such as
    /// select-only's) holds no snapshot open while its client waits, and
    /// there the early read mostly fails with `EAGAIN` (0.65 wasted
    /// `recv` per select-only transaction) and the thread was preempted
    /// more often (0.37-0.40 context switches per transaction against
    /// 0.25-0.26 without it; BENCHMARKS.md, "Reading at once only inside
    /// a transaction").
    async fn read(&mut self) -> Result<Frame, Error> {
        loop {
            let short = match backend::front(&self.rbuf[self.rpos..]) {
                Ok(Front::Whole(f)) => match f.tag {
                    tag::NOTICE_RESPONSE if self.notices => {
                        let f = Frame {
                            start: self.rpos,
                            ..f
                        };
                        self.rpos += f.len;
                        let notice = DbError::parse(&self.rbuf[f.body()]);
                        eprint!("{}", notice.notice_text());
                        continue;
                    }
                    tag::NOTICE_RESPONSE | tag::NOTIFICATION_RESPONSE | tag::PARAMETER_STATUS => {
                        self.rpos += f.len;
                        continue;
                    }
                    ty => {
                        let f = Frame {
                            start: self.rpos,
                            ..f
                        };
                        self.rpos += f.len;
                        if ty == tag::READY_FOR_QUERY {
                            match backend::ready_status(&self.rbuf[f.body()]) {
                                Ok(s) => self.status = s,
                                Err(e) => {
                                    self.closed = true;
                                    return Err(e);
                                }
                            }
                        }
                        return Ok(f);
                    }
                },
                Ok(Front::Short(n)) => n,
                Err(e) => {
                    self.closed = true;
                    return Err(e);
                }
            };
            if self.closed {
                return Err(Error::Closed);
            }
            // What was read before goes now, at once (most often the whole
            // buffer: the last answer was read to its end).
            if self.rpos == self.rbuf.len() {
                self.rbuf.clear();
            } else {
                self.rbuf.advance(self.rpos);
            }
            self.rpos = 0;
            self.rbuf.reserve(short.max(READ_CHUNK));
            if std::mem::take(&mut self.sent) && self.in_transaction() {
                match self.read_now() {
                    Some(0) => {
                        self.closed = true;
                        return Err(Error::Closed);
                    }
                    Some(_) => continue,
                    None => {}
                }
            }
            match self.stream.read_buf(&mut self.rbuf).await {
                Ok(0) => {
                    self.closed = true;
                    return Err(Error::Closed);
                }
                Ok(_) => {}
                Err(e) => {
                    self.closed = true;
                    return Err(Error::Io(e));
                }
            }
        }
    }
}

impl Conn {
    /// One non-blocking read straight after a write, whatever the runtime
    /// last knew of the socket's readiness ([`socket::Socket::read_now`]):
    /// `Some(bytes read)`, `None` when nothing has arrived yet (or on an
    /// error, which the awaited read that follows then reports).
    fn read_now(&mut self) -> Option<usize> {
        self.stream.read_now(&mut self.rbuf).ok()
    }
}

/// Bytes the read buffer keeps free for the next read. Small, because
/// every connection keeps its buffers for its whole life: the answer to
/// an OLTP statement is a few hundred bytes, and a larger one grows the
/// buffer (doubling) as it arrives. With 16 KiB read and 4 KiB write
/// buffers a connection held 20 KiB, which at 50,000 connections (one
/// per client, through a pooler) is 1 GB; with these 1.5 KiB
/// (BENCHMARKS.md, "Memory per client": 50,000 clients over three
/// processes summed 422 MB of RSS with a 2 KiB read buffer).
const READ_CHUNK: usize = 512;

/// A new connection's read buffer (bytes): twice [`READ_CHUNK`].
pub(crate) const READ_BUFFER: usize = 2 * READ_CHUNK;

/// A new connection's write buffer (bytes); it grows to the largest
/// message written and keeps that size.
pub(crate) const WRITE_BUFFER: usize = 512;

/// Appends a `Parse` of the unnamed statement with `stmt`'s text and
/// parameter types when `stmt` is unnamed ([`Conn::use_unnamed`]), so
/// that the `Bind` after it has a statement to bind; nothing for a named
/// statement.
fn parse_unnamed(stmt: &Statement, buf: &mut BytesMut) -> Result<(), Error> {
    if let Some(sql) = &stmt.0.sql {
        frontend::parse("", sql, stmt.0.params.iter().map(Type::oid), buf).map_err(encode)?;
    }
    Ok(())
}

/// A row of `columns` from a `DataRow` body (copied: the read buffer
/// is reused for the next message).
fn row(body: &[u8], columns: &Arc<[Column]>) -> Result<Row, Error> {
    let mut ranges = Vec::with_capacity(columns.len());
    backend::data_row(body, |r| ranges.push(r))?;
    Ok(Row {
        body: body.into(),
        ranges,
        columns: columns.clone(),
    })
}

/// The type of `oid`: a built-in one, else a placeholder that only
/// `FromSql`/`ToSql` implementations accepting any type take.
fn type_of(oid: u32) -> Type {
    Type::from_oid(oid)
        .unwrap_or_else(|| Type::new(format!("oid {oid}"), oid, Kind::Simple, "unknown".into()))
}

fn protocol(e: std::io::Error) -> Error {
    Error::Protocol(format!("protocol error: {e}"))
}

fn encode(e: std::io::Error) -> Error {
    Error::Protocol(format!("cannot encode a message: {e}"))
}
