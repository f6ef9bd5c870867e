//! Client threads. Clients are spread round-robin over a few OS threads,
//! each running a single-threaded tokio runtime that holds its clients'
//! tasks and their connections' I/O tasks, as pgbench spreads clients over
//! `-j` threads. A query's hand-offs between a client and its connection
//! then stay on one thread, which on a 2-core machine shared with the
//! server measured markedly cheaper than a work-stealing runtime (see
//! BENCHMARKS.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::{Client, Config};

use super::EngineError;
use super::retry::{Retrier, Verdict};
use crate::config::Isolation;
use crate::metrics::{CONNECTION_FAILURE, Recorder};
use crate::target;
use crate::workload::{Ledger, Outcome, TxControl, WorkloadClient};

/// One client to be run by a shard.
pub(super) struct Member<C> {
    pub id: u32,
    pub client: C,
    pub backoff_seed: u64,
}

/// What every shard of a run shares.
pub(super) struct Common {
    pub db: Config,
    pub isolation: Isolation,
    pub retrier: Arc<Retrier>,
    /// Set when the measured window ends.
    pub stop: Arc<AtomicBool>,
    /// The shard's recorder, shared by its clients (one thread: uncontended).
    pub recorder: Arc<Recorder>,
    /// Each shard sends one message: its clients are connected, or why not.
    pub ready: mpsc::UnboundedSender<Result<(), EngineError>>,
    /// Turns true when every shard is ready; dropped to call the run off.
    pub go: watch::Receiver<bool>,
}

/// What a shard hands back when its clients have stopped.
pub(super) struct Done<L> {
    /// Errors of clients that stopped early ("client 3: connection lost").
    pub errors: Vec<String>,
    /// The shard's clients' ledgers, merged.
    pub ledger: L,
    /// False when a client task died and took its ledger with it.
    pub ledger_complete: bool,
}

/// A running shard.
pub(super) struct Handle<L> {
    pub clients: usize,
    pub done: oneshot::Receiver<Done<L>>,
}

/// Starts shard `index` on its own thread.
pub(super) fn spawn<C: WorkloadClient>(
    index: usize,
    members: Vec<Member<C>>,
    common: Common,
) -> Handle<C::Ledger> {
    let clients = members.len();
    let (done_tx, done) = oneshot::channel();
    let ready = common.ready.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("isobench-clients-{index}"))
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = common
                        .ready
                        .send(Err(EngineError::Thread(format!("client runtime: {e}"))));
                    return;
                }
            };
            rt.block_on(run_shard(members, common, done_tx));
        });
    if let Err(e) = spawned {
        let _ = ready.send(Err(EngineError::Thread(format!(
            "cannot start a client thread: {e}"
        ))));
    }
    Handle { clients, done }
}

async fn run_shard<C: WorkloadClient>(
    members: Vec<Member<C>>,
    mut common: Common,
    done: oneshot::Sender<Done<C::Ledger>>,
) {
    let setups = members
        .into_iter()
        .map(|m| setup(m, &common.db, common.isolation));
    let mut ready = Vec::new();
    for r in futures_util::future::join_all(setups).await {
        match r {
            Ok(x) => ready.push(x),
            Err(e) => {
                let _ = common.ready.send(Err(e));
                return;
            }
        }
    }
    let _ = common.ready.send(Ok(()));
    // Drop our sender: if another shard dies while connecting, the engine
    // then sees the channel close instead of waiting forever.
    drop(common.ready);
    if common.go.wait_for(|go| *go).await.is_err() {
        return;
    }
    let tasks: Vec<_> = ready
        .into_iter()
        .map(|(m, conn, tx)| {
            let task = client_loop(
                m.client,
                conn,
                tx,
                common.recorder.clone(),
                common.retrier.clone(),
                common.stop.clone(),
                m.backoff_seed,
            );
            (m.id, tokio::spawn(task))
        })
        .collect();
    let mut errors = Vec::new();
    let mut ledger = C::Ledger::default();
    let mut ledger_complete = true;
    for (id, task) in tasks {
        match task.await {
            Ok((client, result)) => {
                ledger.merge(client.into_ledger());
                if let Err(e) = result {
                    errors.push(format!("client {id}: {e}"));
                }
            }
            Err(e) => {
                ledger_complete = false;
                errors.push(format!("client {id}: {e}"));
            }
        }
    }
    let _ = done.send(Done {
        errors,
        ledger,
        ledger_complete,
    });
}

/// Connects one client, sets its session's isolation default, and
/// prepares its statements.
async fn setup<C: WorkloadClient>(
    mut m: Member<C>,
    db: &Config,
    isolation: Isolation,
) -> Result<(Member<C>, Client, TxControl), EngineError> {
    let conn = target::connect(db).await?;
    let prepare_err = |e: tokio_postgres::Error| EngineError::Prepare {
        client: m.id,
        reason: target::error_text(&e),
    };
    // The session default covers autocommit statements; transactions also
    // say their level in BEGIN.
    conn.batch_execute(&format!(
        "SET default_transaction_isolation = '{}'",
        isolation.sql().to_ascii_lowercase()
    ))
    .await
    .map_err(prepare_err)?;
    let tx = TxControl::prepare(&conn, isolation)
        .await
        .map_err(prepare_err)?;
    m.client.prepare(&conn, &tx).await.map_err(prepare_err)?;
    Ok((m, conn, tx))
}

/// The closed loop of one client. Returns the client (for its ledger) when
/// `stop` is set, with an error when its connection was lost.
async fn client_loop<C: WorkloadClient>(
    mut client: C,
    conn: Client,
    tx: TxControl,
    rec: Arc<Recorder>,
    retrier: Arc<Retrier>,
    stop: Arc<AtomicBool>,
    seed: u64,
) -> (C, Result<(), String>) {
    let result = closed_loop(&mut client, conn, tx, &rec, &retrier, &stop, seed).await;
    (client, result)
}

async fn closed_loop<C: WorkloadClient>(
    client: &mut C,
    conn: Client,
    tx: TxControl,
    rec: &Recorder,
    retrier: &Retrier,
    stop: &AtomicBool,
    seed: u64,
) -> Result<(), String> {
    use rand::SeedableRng;
    let mut backoff_rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let max_tries = retrier.max_tries();
    while !stop.load(Ordering::Relaxed) {
        let input = client.next_input();
        let ty = client.tx_type(&input);
        let first_start = Instant::now();
        let mut tries = 0u32;
        let mut wasted_us = 0u64;
        loop {
            tries += 1;
            let attempt_start = Instant::now();
            let err = match client.attempt(&conn, &tx, &input).await {
                Ok(Outcome::Committed) => {
                    let latency = first_start.elapsed().as_micros() as u64;
                    rec.commit(ty, latency, tries, wasted_us);
                    break;
                }
                Ok(Outcome::UserAbort) => {
                    rec.user_abort(ty, tries, wasted_us);
                    break;
                }
                Err(e) => e,
            };
            wasted_us += attempt_start.elapsed().as_micros() as u64;
            let (code, retryable) = match retrier.classify(&err) {
                Verdict::Retry(c) => (c, true),
                Verdict::Fail(c) => (c, false),
                Verdict::Unknown => {
                    rec.unknown(ty, tries, wasted_us);
                    client.unknown_outcome(&input);
                    return Err(format!(
                        "connection lost during COMMIT: {}",
                        target::error_text(&err.error)
                    ));
                }
                Verdict::ConnectionLost => {
                    rec.fail(ty, CONNECTION_FAILURE, tries, wasted_us);
                    return Err(format!(
                        "connection lost: {}",
                        target::error_text(&err.error)
                    ));
                }
            };
            // A failed COMMIT has already ended the transaction.
            if !err.at_commit
                && let Err(e) = tx.rollback(&conn).await
            {
                rec.fail(ty, code, tries, wasted_us);
                return Err(format!("ROLLBACK failed: {}", target::error_text(&e)));
            }
            if !retryable || tries >= max_tries || stop.load(Ordering::Relaxed) {
                rec.fail(ty, code, tries, wasted_us);
                if conn.is_closed() {
                    return Err("connection closed by the server".into());
                }
                break;
            }
            let delay = retrier.delay(tries + 1, &mut backoff_rng);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
    }
    Ok(())
}
