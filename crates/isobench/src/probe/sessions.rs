//! The one step coordinator under both ways of running an isolation spec:
//! a probe's interleaving at each level ([`super::exec`]) and a spec file
//! the way PostgreSQL's `isolationtester` prints it ([`super::suite`]).
//!
//! [`Sessions`] holds a control connection and one connection per spec
//! session, each with at most one step in flight. A step is sent as one
//! simple-protocol query on a task of its own ([`Sessions::send`]); the
//! caller then watches it in windows of its choosing
//! ([`Sessions::wait`]) and asks the server between windows whether the
//! session's backend waits on another session ([`Sessions::is_blocked`],
//! through a [`WaitCheck`]). What to do with a step that waits, how long
//! to let it run and what to print are the caller's policy: a probe
//! records its steps and calls a run stuck, isolationtester's output
//! prints blocker annotations and notices. Setup and teardown blocks run
//! bounded by a timeout and by Ctrl-C ([`block`]); after a stop
//! [`Sessions::cleanup`] cancels what still runs and ends the sessions'
//! backends, so nothing hangs and nothing leaks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, SimpleQueryMessage};
use tokio_util::sync::CancellationToken;

use super::exec::WaitCheck;
use crate::postgres;

/// What one statement returned, as a libpq `PGresult` would hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StmtResult {
    /// A statement that returns rows (even none): column names and values
    /// (`None` for null).
    Tuples {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    /// A statement without rows (or an empty query).
    Command,
}

/// What a step or block returned: each statement's result up to an
/// error, then the error that ended it, if any.
pub struct Outcome {
    pub results: Vec<StmtResult>,
    pub error: Option<tokio_postgres::Error>,
}

impl Outcome {
    /// The rows of all its statements, in order, columns joined by `,`
    /// and `NULL` for null.
    pub fn rows(&self) -> Vec<String> {
        self.results
            .iter()
            .flat_map(|r| match r {
                StmtResult::Tuples { rows, .. } => rows.as_slice(),
                StmtResult::Command => &[],
            })
            .map(|row| {
                row.iter()
                    .map(|v| v.as_deref().unwrap_or("NULL"))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }
}

/// Runs `sql` as one simple-protocol query and keeps every statement's
/// result up to an error, as libpq's `PQgetResult` loop sees them.
pub async fn run_sql(client: &Client, sql: &str) -> Outcome {
    let mut results = Vec::new();
    let stream = match client.simple_query_raw(sql).await {
        Ok(s) => s,
        Err(e) => {
            return Outcome {
                results,
                error: Some(e),
            };
        }
    };
    futures_util::pin_mut!(stream);
    let mut current: Option<StmtResult> = None;
    while let Some(m) = stream.next().await {
        match m {
            Ok(SimpleQueryMessage::RowDescription(cols)) => {
                current = Some(StmtResult::Tuples {
                    columns: cols.iter().map(|c| c.name().to_string()).collect(),
                    rows: Vec::new(),
                });
            }
            Ok(SimpleQueryMessage::Row(row)) => {
                if let Some(StmtResult::Tuples { rows, .. }) = current.as_mut() {
                    rows.push(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_string))
                            .collect(),
                    );
                }
            }
            Ok(SimpleQueryMessage::CommandComplete(_)) => {
                results.push(current.take().unwrap_or(StmtResult::Command));
            }
            Ok(_) => {}
            Err(e) => {
                return Outcome {
                    results,
                    error: Some(e),
                };
            }
        }
    }
    Outcome {
        results,
        error: None,
    }
}

/// How a setup, teardown or `@final` block ended.
pub enum Block {
    Done(Outcome),
    /// Still running after the timeout; the caller cancels it
    /// ([`Sessions::cancel`], [`cancel_query`]) after looking at what it
    /// waits for, if it likes.
    TimedOut,
    /// Ctrl-C: the query was cancelled.
    Interrupted,
}

/// Runs a block on `client`, bounded by `timeout` and by `cancel` (which
/// cancels the query).
pub async fn block(
    client: &Client,
    config: &Config,
    sql: &str,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Block {
    tokio::select! {
        r = run_sql(client, sql) => Block::Done(r),
        () = tokio::time::sleep(timeout) => Block::TimedOut,
        () = cancel.cancelled() => {
            cancel_query(client, config).await;
            Block::Interrupted
        }
    }
}

/// Asks the server to cancel what `client` runs (best effort; waits for
/// the server's close, as libpq does: see [`postgres::cancel`]).
pub async fn cancel_query(client: &Client, config: &Config) {
    postgres::cancel::cancel(client, config).await;
}

/// A step sent and not yet taken back, tagged with whatever its caller
/// needs to know of it.
struct InFlight<T> {
    tag: T,
    task: JoinHandle<Outcome>,
    done: Option<Outcome>,
    since: Instant,
}

/// One session's connection and its step in flight.
pub struct Session<T> {
    pub client: Arc<Client>,
    /// Its backend's process id.
    pub pid: i32,
    in_flight: Option<InFlight<T>>,
}

/// A spec run's connections: the control connection and one slot per spec
/// session (`None` until opened, and after closing), each with at most
/// one step in flight, tagged `T`.
pub struct Sessions<T> {
    /// Setup, teardown, `@final` and the lock-wait checks run here.
    pub ctl: Client,
    /// The connections' settings (for cancels).
    pub config: Config,
    wait_check: WaitCheck,
    slots: Vec<Option<Session<T>>>,
}

/// Why [`Sessions::wait`] could not tell.
#[derive(Debug, thiserror::Error)]
#[error("a step's task failed: {0}")]
pub struct TaskFailed(#[from] tokio::task::JoinError);

impl<T> Sessions<T> {
    /// `n` closed session slots around the control connection `ctl`.
    pub fn new(ctl: Client, config: Config, wait_check: WaitCheck, n: usize) -> Self {
        Sessions {
            ctl,
            config,
            wait_check,
            slots: (0..n).map(|_| None).collect(),
        }
    }

    /// Puts an open connection into slot `s`.
    pub fn open(&mut self, s: usize, client: Client, pid: i32) {
        self.slots[s] = Some(Session {
            client: Arc::new(client),
            pid,
            in_flight: None,
        });
    }

    /// Takes session `s` out of its slot (to close it: dropping its client
    /// ends the connection, and a transaction still open rolls back).
    pub fn close(&mut self, s: usize) -> Option<Session<T>> {
        self.slots[s].take()
    }

    /// Puts back a session taken with [`Sessions::close`].
    pub fn reopen(&mut self, s: usize, session: Session<T>) {
        self.slots[s] = Some(session);
    }

    /// Session `s`, if open.
    pub fn get(&self, s: usize) -> Option<&Session<T>> {
        self.slots[s].as_ref()
    }

    /// Session `s`'s connection. Panics if it is not open.
    pub fn client(&self, s: usize) -> Arc<Client> {
        self.session(s).client.clone()
    }

    fn session(&self, s: usize) -> &Session<T> {
        self.slots[s].as_ref().expect("session is open")
    }

    fn flight(&mut self, s: usize) -> &mut InFlight<T> {
        let sess = self.slots[s].as_mut().expect("session is open");
        sess.in_flight.as_mut().expect("a step in flight")
    }

    /// Number of session slots.
    pub fn count(&self) -> usize {
        self.slots.len()
    }

    /// Whether session `s` is open and has a step in flight.
    pub fn busy(&self, s: usize) -> bool {
        self.slots[s]
            .as_ref()
            .is_some_and(|x| x.in_flight.is_some())
    }

    /// The tag of session `s`'s step in flight.
    pub fn tag(&self, s: usize) -> Option<&T> {
        self.slots[s]
            .as_ref()
            .and_then(|x| x.in_flight.as_ref())
            .map(|f| &f.tag)
    }

    /// The tag of session `s`'s step in flight, to change. Panics without
    /// one.
    pub fn tag_mut(&mut self, s: usize) -> &mut T {
        &mut self.flight(s).tag
    }

    /// How long session `s`'s step has been in flight. Panics without one.
    pub fn in_flight_for(&self, s: usize) -> Duration {
        let f = self.session(s).in_flight.as_ref();
        f.expect("a step in flight").since.elapsed()
    }

    /// Sends `sql` on session `s` (which must be open and idle) as a task
    /// of its own, tagged `tag`.
    pub fn send(&mut self, s: usize, sql: &str, tag: T) {
        let sess = self.slots[s].as_mut().expect("session is open");
        assert!(sess.in_flight.is_none(), "one step in flight per session");
        let client = sess.client.clone();
        let sql = sql.to_string();
        sess.in_flight = Some(InFlight {
            tag,
            task: tokio::spawn(async move { run_sql(&client, &sql).await }),
            done: None,
            since: Instant::now(),
        });
    }

    /// Waits up to `window` for session `s`'s step in flight to finish
    /// (at once if it has); true if it has. Panics without one.
    pub async fn wait(&mut self, s: usize, window: Duration) -> Result<bool, TaskFailed> {
        let f = self.flight(s);
        if f.done.is_some() {
            return Ok(true);
        }
        match tokio::time::timeout(window, &mut f.task).await {
            Ok(joined) => {
                f.done = Some(joined?);
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// Takes back session `s`'s finished step: its tag and outcome.
    /// Panics unless [`Sessions::wait`] said it finished.
    pub fn take(&mut self, s: usize) -> (T, Outcome) {
        let sess = self.slots[s].as_mut().expect("session is open");
        let f = sess.in_flight.take().expect("a step in flight");
        (f.tag, f.done.expect("a finished step"))
    }

    /// Whether session `s`'s backend waits on one of the open sessions
    /// (a lock, or with `pg_isolation_test_session_is_blocked` also a safe
    /// snapshot), asked on the control connection.
    pub async fn is_blocked(&self, s: usize) -> Result<bool, tokio_postgres::Error> {
        let pids: Vec<i32> = self.slots.iter().flatten().map(|x| x.pid).collect();
        self.wait_check
            .is_blocked(&self.ctl, self.session(s).pid, &pids)
            .await
    }

    /// Asks the server to cancel what session `s` runs.
    pub async fn cancel(&self, s: usize) {
        cancel_query(&self.session(s).client, &self.config).await;
    }

    /// After a stop: cancels the steps still in flight, then ends the
    /// backends of every open session and closes them, so the locks they
    /// hold are gone before any teardown.
    pub async fn cleanup(&mut self) {
        let mut pids = Vec::new();
        for sess in self.slots.iter_mut().flatten() {
            if let Some(f) = sess.in_flight.take() {
                cancel_query(&sess.client, &self.config).await;
                f.task.abort();
            }
            pids.push(sess.pid);
        }
        self.slots.iter_mut().for_each(|s| *s = None);
        if !pids.is_empty() {
            let _ = self
                .ctl
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM unnest($1::int4[]) AS pid",
                    &[&pids],
                )
                .await;
        }
    }
}

/// One line of `sql`: its words joined by single spaces.
pub fn one_line(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_join_columns_and_name_null_across_statements() {
        let o = Outcome {
            results: vec![
                StmtResult::Tuples {
                    columns: vec!["a".into(), "b".into()],
                    rows: vec![vec![Some("1".into()), None]],
                },
                StmtResult::Command,
                StmtResult::Tuples {
                    columns: vec!["c".into()],
                    rows: vec![vec![Some("x".into())], vec![Some("".into())]],
                },
            ],
            error: None,
        };
        assert_eq!(o.rows(), vec!["1,NULL", "x", ""]);
    }
}
