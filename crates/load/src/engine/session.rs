//! A client's connection to the server: opened, given its isolation
//! default and its workload client's prepared statements ([`setup`],
//! [`open`]), opened again after it was lost ([`reconnect`], with capped
//! exponential backoff), and shared between clients in a pool ([`Pool`],
//! checked out as a [`Lease`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::Config;

use super::EngineError;
use super::faults::{FaultLog, reconnect_delay};
use crate::model::Isolation;
use crate::postgres;
use crate::wire::{self, Conn, StatementCache};
use crate::workload::{TxControl, WorkloadClient};

/// A connection with its prepared statements and the workload client
/// instance that prepared them.
pub(super) struct Session<C> {
    pub(super) id: u32,
    pub(super) client: C,
    /// The connection, driven by whichever task runs the session's
    /// attempt (no I/O task of its own: see [`crate::wire`]).
    pub(super) conn: Conn,
    pub(super) tx: TxControl,
    /// The DSN's host this session tries first (`--host-policy`), an
    /// index into its hosts.
    pub(super) home: usize,
    /// The host its connection is open to: `home`, or the next that
    /// accepted when `home` refused.
    pub(super) host: usize,
    /// `--read-from standby|any`: its connection to its standby.
    pub(super) replica: Option<Box<Replica>>,
}

/// A worker's share of the connection pool.
pub(super) struct Pool<C> {
    size: usize,
    /// One permit per session; fair, so waiting clients are served in
    /// arrival order.
    permits: Semaphore,
    /// Boxed, so that a [`Lease`], which every waiting or running client's
    /// future holds, is a pointer and not a whole session (a few hundred
    /// bytes in each of thousands of clients).
    sessions: Mutex<Vec<Box<Session<C>>>>,
}

impl<C> Pool<C> {
    /// A pool of `sessions`.
    pub(super) fn new(sessions: Vec<Session<C>>) -> Self {
        Pool {
            size: sessions.len(),
            permits: Semaphore::new(sessions.len()),
            sessions: Mutex::new(sessions.into_iter().map(Box::new).collect()),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Vec<Box<Session<C>>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a free session (in arrival order) and checks it out;
    /// returns it with the time waited.
    pub(super) async fn checkout(&self) -> (Lease<'_, C>, Duration) {
        let asked = Instant::now();
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the pool's semaphore is never closed");
        let session = self
            .sessions()
            .pop()
            .expect("a permit guarantees a session");
        let lease = Lease {
            session: Some(session),
            pool: self,
            _permit: permit,
        };
        (lease, asked.elapsed())
    }

    /// The sessions back in the pool (after the run), and whether all of
    /// them came back (a client task that died kept its session).
    pub(super) fn drain(&self) -> (Vec<Box<Session<C>>>, bool) {
        let sessions = std::mem::take(&mut *self.sessions());
        let all = sessions.len() == self.size;
        (sessions, all)
    }
}

/// A session checked out of a pool; returned to it when dropped.
pub(super) struct Lease<'a, C> {
    session: Option<Box<Session<C>>>,
    pool: &'a Pool<C>,
    _permit: SemaphorePermit<'a>,
}

impl<C> Lease<'_, C> {
    pub(super) fn session(&mut self) -> &mut Session<C> {
        self.session.as_mut().expect("held until drop")
    }
}

impl<C> Drop for Lease<'_, C> {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            self.pool.sessions().push(s);
        }
    }
}

/// Connects client `id`'s session, to `db`'s host `home` or else the
/// next that accepts, sets its isolation default, and prepares its
/// statements.
///
/// Errors: [`EngineError::Connect`], [`EngineError::Prepare`].
pub(super) async fn setup<C: WorkloadClient>(
    id: u32,
    mut client: C,
    db: &Config,
    isolation: Isolation,
    home: usize,
    unnamed: Option<&Arc<StatementCache>>,
) -> Result<Session<C>, EngineError> {
    let (conn, tx, host) = open(&mut client, db, isolation, home, unnamed)
        .await
        .map_err(|e| match e {
            OpenError::Connect(e) => EngineError::Connect(postgres::TargetError::Connect {
                target: postgres::describe_config(db),
                reason: e.to_string(),
            }),
            OpenError::Prepare(e) => EngineError::Prepare {
                client: id,
                reason: e.to_string(),
            },
        })?;
    Ok(Session {
        id,
        client,
        conn,
        tx,
        home,
        host,
        replica: None,
    })
}

/// Why a session could not be opened.
enum OpenError {
    Connect(wire::Error),
    Prepare(wire::Error),
}

/// Opens a connection for `client` (to `db`'s host `home`, else the next
/// that accepts): connects, sets the isolation default and prepares the
/// client's statements (again, after a reconnect), as unnamed statements
/// described once in `unnamed` when it is given ([`Conn::use_unnamed`]).
/// Returns the connection, its transaction control statements and the
/// host it went to.
async fn open<C: WorkloadClient>(
    client: &mut C,
    db: &Config,
    isolation: Isolation,
    home: usize,
    unnamed: Option<&Arc<StatementCache>>,
) -> Result<(Conn, TxControl, usize), OpenError> {
    let (mut conn, host) = wire::connect_from(db, home)
        .await
        .map_err(OpenError::Connect)?;
    if let Some(cache) = unnamed {
        conn.use_unnamed(cache.clone());
    }
    let prepared = async {
        // The session default covers autocommit statements; transactions
        // also say their level in BEGIN.
        conn.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            isolation.sql().to_ascii_lowercase()
        ))
        .await?;
        let tx = TxControl::prepare(&mut conn, isolation).await?;
        client.prepare(&mut conn, &tx).await?;
        Ok(tx)
    }
    .await
    .map_err(OpenError::Prepare)?;
    Ok((conn, prepared, host))
}

/// Gives `s` a new connection to `db` (its home host first), closing the
/// one it had, with the isolation default set and the client's statements
/// prepared again: pgbench `-C`'s connection per transaction.
///
/// Errors: the connection or the preparation failed (`s` keeps no open
/// connection then: the next use fails as a lost connection).
pub(super) async fn reopen<C: WorkloadClient>(
    s: &mut Session<C>,
    db: &Config,
    isolation: Isolation,
    unnamed: Option<&Arc<StatementCache>>,
) -> Result<(), wire::Error> {
    let (conn, tx, host) = match open(&mut s.client, db, isolation, s.home, unnamed).await {
        Ok(opened) => opened,
        Err(OpenError::Connect(e) | OpenError::Prepare(e)) => return Err(e),
    };
    let old = std::mem::replace(&mut s.conn, conn);
    old.close().await;
    s.tx = tx;
    s.host = host;
    Ok(())
}

/// Opens `s`'s connection to `db` again after it was lost (its home host
/// first, as at the start), trying until it
/// works or `stop` is set, with [`reconnect_delay`] between tries; logs
/// the reconnect in `faults`. Returns `None` when the run stopped first.
pub(super) async fn reconnect<C: WorkloadClient>(
    s: &mut Session<C>,
    db: &Config,
    isolation: Isolation,
    unnamed: Option<&Arc<StatementCache>>,
    stop: &AtomicBool,
    faults: &FaultLog,
    rng: &mut rand::rngs::SmallRng,
) -> Option<()> {
    let mut failed = 0u32;
    loop {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        if let Ok((conn, tx, host)) = open(&mut s.client, db, isolation, s.home, unnamed).await {
            s.conn = conn;
            s.tx = tx;
            s.host = host;
            faults.reconnected();
            return Some(());
        }
        // Sleep in slices so that the end of the run is not kept waiting.
        let until = Instant::now() + reconnect_delay(failed, rng);
        failed = failed.saturating_add(1);
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            let left = until.saturating_duration_since(Instant::now());
            tokio::time::sleep(left.min(Duration::from_millis(50))).await;
        }
    }
}

/// A session's connection to its standby.
pub(super) struct Replica {
    pub(super) conn: Conn,
    pub(super) tx: TxControl,
    /// The standby, an index into `ReadRoute::standbys`.
    pub(super) standby: usize,
}

/// The isolation level a standby runs a transaction at: PostgreSQL has
/// no SERIALIZABLE on a hot standby ("cannot use serializable mode in a
/// hot standby"), so REPEATABLE READ, the same snapshot without SSI.
fn standby_level(level: Isolation) -> Isolation {
    match level {
        Isolation::Serializable => Isolation::RepeatableRead,
        l => l,
    }
}

/// Opens client `client`'s connection to standby `id mod N` of `standbys`
/// (`--read-from`, see [`super::reads`]),
/// with its statements prepared there in the same order as on the
/// primary (so that the names the client holds are the same on both), or
/// as unnamed statements described in `unnamed` when the primary's are.
///
/// Errors: the connection or a preparation failed.
pub(super) async fn open_replica<C: WorkloadClient>(
    client: &mut C,
    id: u32,
    standbys: &[(Config, usize)],
    isolation: Isolation,
    unnamed: Option<&Arc<StatementCache>>,
) -> Result<Box<Replica>, wire::Error> {
    let standby = id as usize % standbys.len().max(1);
    let (config, host) = standbys
        .get(standby)
        .ok_or_else(|| wire::Error::Protocol("no standby to read from".into()))?;
    let mut config = config.clone();
    config.target_session_attrs(tokio_postgres::config::TargetSessionAttrs::Any);
    let (mut conn, _) = wire::connect_from(&config, *host).await?;
    if let Some(cache) = unnamed {
        conn.use_unnamed(cache.clone());
    }
    let level = standby_level(isolation);
    conn.batch_execute(&format!(
        "SET default_transaction_isolation = '{}'",
        level.sql().to_ascii_lowercase()
    ))
    .await?;
    let tx = TxControl::prepare(&mut conn, level).await?;
    client.prepare(&mut conn, &tx).await?;
    Ok(Box::new(Replica { conn, tx, standby }))
}
