//! One attempt of a transaction on a connection: the workload client's
//! `attempt`, then what the engine does about its error while the
//! connection is still held (roll back, or tell the client that the
//! outcome is unknown).

use std::time::{Duration, Instant};

use super::session::Session;
use crate::model::SqlState;
use crate::workload::{Ended, WorkloadClient};

/// What the engine does after a failed attempt, decided while the
/// session is still checked out.
pub(super) enum AfterError {
    /// Roll back (the error came before COMMIT).
    Rollback,
    /// Nothing to do: a failed COMMIT ended the transaction.
    Nothing,
    /// The connection broke during COMMIT: tell the session's client
    /// (which knows what the attempt wrote) that the outcome is unknown.
    Unknown,
}

/// The result of one attempt. Small, as it is moved several times per
/// transaction on the client's hot path: what only a failed attempt has
/// is boxed ([`Failed`]); a committed one allocates nothing.
pub(super) struct Attempted {
    pub(super) result: Result<Ended, Box<Failed>>,
    pub(super) pool_wait: Duration,
    /// The DSN's host the session's connection was open to.
    pub(super) host: usize,
    /// When the attempt ended, if its client read the clock then
    /// ([`WorkloadClient::attempt_ended`]).
    pub(super) ended_at: Option<Instant>,
}

/// A failed attempt: its error, and the state of the connection after it.
pub(super) struct Failed {
    pub(super) error: crate::workload::AttemptError,
    /// Time from BEGIN to the end of the attempt (its ROLLBACK included).
    pub(super) took: Duration,
    /// ROLLBACK after the error failed with this error.
    pub(super) rollback_failed: Option<crate::wire::Error>,
    /// The session's connection is closed.
    pub(super) closed: bool,
    /// The SQLSTATE the closed connection ended with, if the server sent
    /// one ([`crate::wire::Conn::end_code`]).
    pub(super) ended: Option<SqlState>,
    /// The command that raised the error, for a workload that times its
    /// commands.
    pub(super) step: Option<usize>,
}

impl Attempted {
    /// Sets the failed command, for an attempt that failed.
    pub(super) fn set_failed_step(&mut self, step: Option<usize>) {
        if let Err(f) = &mut self.result {
            f.step = step;
        }
    }
}

/// Runs one attempt on `s`, started at `start` (the future of
/// [`run_attempt_on`] for the session's parts).
pub(super) fn run_attempt<'a, C: WorkloadClient>(
    s: &'a mut Session<C>,
    input: &'a C::Input,
    after: &'a impl Fn(&crate::workload::AttemptError) -> AfterError,
    start: Instant,
) -> impl Future<Output = Attempted> + 'a {
    run_attempt_on(
        &mut s.client,
        &mut s.conn,
        &s.tx,
        s.host,
        input,
        after,
        start,
    )
}

/// Runs one attempt of `client` on `conn` (host `host` of the DSN, with
/// its transaction control `tx`), started at `start`.
pub(super) async fn run_attempt_on<C: WorkloadClient>(
    client: &mut C,
    conn: &mut crate::wire::Conn,
    tx: &crate::workload::TxControl,
    host: usize,
    input: &C::Input,
    after: &impl Fn(&crate::workload::AttemptError) -> AfterError,
    start: Instant,
) -> Attempted {
    client.attempt_starts(start);
    let result = client.attempt(conn, tx, input).await;
    let ended_at = client.attempt_ended();
    let result = match result {
        Ok(ended) => Ok(ended),
        Err(error) => {
            let mut rollback_failed = None;
            match after(&error) {
                // Only a transaction block needs it: outside one the error
                // ended its statement's implicit transaction already, and a
                // ROLLBACK there gets the server's `WARNING:  there is no
                // transaction in progress` (pgbench checks the status first).
                AfterError::Rollback if conn.in_transaction() => {
                    if let Err(e) = tx.rollback(conn).await {
                        rollback_failed = Some(e);
                    }
                }
                AfterError::Rollback => {}
                AfterError::Nothing => {}
                AfterError::Unknown => client.unknown_outcome(input),
            }
            Err(Box::new(Failed {
                error,
                took: start.elapsed(),
                rollback_failed,
                closed: conn.is_closed(),
                ended: conn.end_code(),
                step: None,
            }))
        }
    };
    Attempted {
        result,
        pool_wait: Duration::ZERO,
        host,
        ended_at,
    }
}

impl Attempted {
    /// An attempt that failed with `error` before its transaction began
    /// (on host `host`; `closed`: its connection is gone).
    pub(super) fn failed(error: crate::workload::AttemptError, host: usize, closed: bool) -> Self {
        Attempted {
            result: Err(Box::new(Failed {
                error,
                took: Duration::ZERO,
                rollback_failed: None,
                closed,
                ended: None,
                step: None,
            })),
            pool_wait: Duration::ZERO,
            host,
            ended_at: None,
        }
    }
}
