//! The load engine: clients, the closed loop, the retry loop, and the
//! ticker that turns per-client recorders into per-second series.
//!
//! Data flow: every client is a tokio task with its own connection. It draws
//! inputs, runs attempts until one commits or the retry policy gives up, and
//! records the outcome in its own [`Recorder`]. The ticker (this task) wakes
//! once a second, drains every recorder into one [`Interval`], discards it
//! during warm-up, and otherwise appends a [`SecondPoint`] and merges it into
//! the run's totals. Nothing is sent per transaction.

pub mod retry;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::time::sleep_until;
use tokio_postgres::{Client, Config};
use tokio_util::sync::CancellationToken;

use crate::config::Isolation;
use crate::metrics::{CONNECTION_FAILURE, Interval, Lifetime, Recorder};
use crate::target::{self, TargetError};
use crate::workload::{TxControl, Workload, WorkloadClient};
use retry::{Retrier, Verdict};

/// How one run is driven.
#[derive(Debug, Clone)]
pub struct EngineParams {
    pub clients: u32,
    pub isolation: Isolation,
    pub retrier: Retrier,
    pub warmup: Duration,
    pub duration: Duration,
    /// Client `i` seeds its input generator with `seed + i`.
    pub seed: u64,
}

/// Where a run is; observers follow it through a `watch` channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connecting,
    Warmup,
    Measuring,
    /// The measured window ended; clients finish their transactions.
    Draining,
}

/// One second of the measured window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SecondPoint {
    /// End of the interval, seconds since the measured window began.
    pub t_s: f64,
    pub committed: u64,
    /// Committed transactions per second of this interval.
    pub tps: f64,
    /// 99th percentile latency of this interval's commits, ms.
    pub p99_ms: f64,
    /// Transactions that gave up in this interval.
    pub failed: u64,
}

/// What the ticker reports once a second (for live progress).
#[derive(Debug, Clone, Copy)]
pub struct Tick {
    pub phase: Phase,
    /// Time since the clients started.
    pub elapsed: Duration,
    pub tps: f64,
    pub p99_ms: f64,
    pub failed: u64,
}

/// The measurements of one run.
#[derive(Debug)]
pub struct EngineOutcome {
    /// Totals over the measured window.
    pub measured: Interval,
    /// Length of the measured window, s.
    pub measured_s: f64,
    pub per_second: Vec<SecondPoint>,
    /// Over the clients' whole life: what the database must hold.
    pub lifetime: Lifetime,
    /// isobench's own CPU time (user + system) during the measured window, s.
    pub cpu_s: f64,
    /// The run was cancelled (Ctrl-C) before its measured window ended.
    pub interrupted: bool,
    /// Clients that stopped early, with why (connection lost).
    pub client_errors: Vec<String>,
}

/// Errors that stop a run before it measures anything.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Connect(#[from] TargetError),
    #[error("client {client}: preparing statements failed: {reason}")]
    Prepare { client: u32, reason: String },
}

/// Runs `params.clients` closed-loop clients of `workload` against `db`:
/// warm-up, then the measured window, then a drain. `cancel` ends the run
/// early (the outcome is marked interrupted); `phase` follows the run;
/// `on_tick` is called about once a second.
///
/// Errors: a client that cannot connect or prepare ([`EngineError`]).
pub async fn run<W: Workload>(
    workload: &W,
    db: &Config,
    params: &EngineParams,
    cancel: &CancellationToken,
    phase: &watch::Sender<Phase>,
    on_tick: &mut (dyn FnMut(&Tick) + Send),
) -> Result<EngineOutcome, EngineError> {
    phase.send_replace(Phase::Connecting);
    let mut ready = Vec::with_capacity(params.clients as usize);
    let connects = (0..params.clients).map(|id| async move {
        let conn = target::connect(db).await?;
        let mut client = workload.client(id, params.seed.wrapping_add(u64::from(id)));
        let prepare_err = |e: tokio_postgres::Error| EngineError::Prepare {
            client: id,
            reason: target::error_text(&e),
        };
        // The session default covers autocommit statements; transactions
        // also say their level in BEGIN.
        conn.batch_execute(&format!(
            "SET default_transaction_isolation = '{}'",
            params.isolation.sql().to_ascii_lowercase()
        ))
        .await
        .map_err(prepare_err)?;
        let tx = TxControl::prepare(&conn, params.isolation)
            .await
            .map_err(prepare_err)?;
        client.prepare(&conn).await.map_err(prepare_err)?;
        Ok::<_, EngineError>((conn, client, tx))
    });
    for r in futures_util::future::join_all(connects).await {
        ready.push(r?);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let retrier = Arc::new(params.retrier.clone());
    let mut recorders = Vec::with_capacity(ready.len());
    let mut tasks = Vec::with_capacity(ready.len());
    for (id, (conn, client, tx)) in ready.into_iter().enumerate() {
        let rec = Arc::new(Recorder::default());
        recorders.push(rec.clone());
        let (stop, retrier) = (stop.clone(), retrier.clone());
        let seed = params.seed ^ 0x9e37_79b9_7f4a_7c15 ^ id as u64;
        tasks.push(tokio::spawn(client_loop(
            client, conn, tx, rec, retrier, stop, seed,
        )));
    }

    let started = Instant::now();
    phase.send_replace(Phase::Warmup);
    let warm_end = started + params.warmup;
    let mut next = (started + Duration::from_secs(1)).min(warm_end);
    let mut window: Option<(Instant, Instant)> = None; // (start, end)
    let mut last = started;
    let mut tick = Interval::default();
    let mut measured = Interval::default();
    let mut per_second = Vec::new();
    let mut cpu_start = 0.0;
    let mut cpu_s = 0.0;
    let mut interrupted = false;
    loop {
        tokio::select! {
            _ = sleep_until(next.into()) => {}
            _ = cancel.cancelled() => interrupted = true,
        }
        let now = Instant::now();
        for r in &recorders {
            r.drain_into(&mut tick);
        }
        let secs = now.duration_since(last).as_secs_f64().max(1e-9);
        let latency = tick.latency_summary();
        let mut report = Tick {
            phase: Phase::Warmup,
            elapsed: now.duration_since(started),
            tps: tick.committed as f64 / secs,
            p99_ms: latency.p99,
            failed: tick.failed.total(),
        };
        last = now;
        match window {
            None => {
                if now >= warm_end && !interrupted {
                    window = Some((now, now + params.duration));
                    next = (now + Duration::from_secs(1)).min(now + params.duration);
                    cpu_start = cpu_time_s();
                    phase.send_replace(Phase::Measuring);
                } else {
                    next = (next + Duration::from_secs(1)).min(warm_end);
                }
            }
            Some((start, end)) => {
                report.phase = Phase::Measuring;
                measured.merge(&tick);
                per_second.push(SecondPoint {
                    t_s: now.duration_since(start).as_secs_f64(),
                    committed: tick.committed,
                    tps: report.tps,
                    p99_ms: report.p99_ms,
                    failed: report.failed,
                });
                next = (next + Duration::from_secs(1)).min(end);
                if now >= end || interrupted {
                    cpu_s = cpu_time_s() - cpu_start;
                }
            }
        }
        tick.reset();
        on_tick(&report);
        if interrupted || window.is_some_and(|(_, end)| now >= end) {
            break;
        }
    }
    let measured_s = window.map_or(0.0, |(start, _)| last.duration_since(start).as_secs_f64());

    phase.send_replace(Phase::Draining);
    stop.store(true, Ordering::Relaxed);
    let mut client_errors = Vec::new();
    let mut lifetime = Lifetime::default();
    let drain = futures_util::future::join_all(tasks.iter_mut());
    match tokio::time::timeout(Duration::from_secs(30), drain).await {
        Ok(results) => {
            for (id, r) in results.into_iter().enumerate() {
                match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => client_errors.push(format!("client {id}: {e}")),
                    Err(e) => client_errors.push(format!("client {id}: {e}")),
                }
            }
        }
        Err(_) => {
            // A client still blocked 30 s after the end: abandon it; its
            // transaction's outcome is unknown.
            for (id, t) in tasks.iter().enumerate() {
                if !t.is_finished() {
                    t.abort();
                    lifetime.unknown_outcome += 1;
                    client_errors.push(format!(
                        "client {id}: still busy 30 s after the run ended; abandoned"
                    ));
                }
            }
        }
    }
    for r in &recorders {
        let l = r.lifetime();
        lifetime.committed += l.committed;
        lifetime.unknown_outcome += l.unknown_outcome;
    }
    Ok(EngineOutcome {
        measured,
        measured_s,
        per_second,
        lifetime,
        cpu_s,
        interrupted,
        client_errors,
    })
}

/// The closed loop of one client. Returns when `stop` is set, or with an
/// error when its connection is lost.
async fn client_loop<C: WorkloadClient>(
    mut client: C,
    conn: Client,
    tx: TxControl,
    rec: Arc<Recorder>,
    retrier: Arc<Retrier>,
    stop: Arc<AtomicBool>,
    seed: u64,
) -> Result<(), String> {
    use rand::SeedableRng;
    let mut backoff_rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let max_tries = retrier.max_tries();
    while !stop.load(Ordering::Relaxed) {
        let input = client.next_input();
        let first_start = Instant::now();
        let mut tries = 0u32;
        let mut wasted_us = 0u64;
        loop {
            tries += 1;
            let attempt_start = Instant::now();
            let err = match client.attempt(&conn, &tx, &input).await {
                Ok(()) => {
                    rec.commit(first_start.elapsed().as_micros() as u64, tries, wasted_us);
                    break;
                }
                Err(e) => e,
            };
            wasted_us += attempt_start.elapsed().as_micros() as u64;
            let (code, retryable) = match retrier.classify(&err) {
                Verdict::Retry(c) => (c, true),
                Verdict::Fail(c) => (c, false),
                Verdict::Unknown => {
                    rec.unknown(tries);
                    return Err(format!(
                        "connection lost during COMMIT: {}",
                        target::error_text(&err.error)
                    ));
                }
                Verdict::ConnectionLost => {
                    rec.fail(CONNECTION_FAILURE, tries, wasted_us);
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
                rec.fail(code, tries, wasted_us);
                return Err(format!("ROLLBACK failed: {}", target::error_text(&e)));
            }
            if !retryable || tries >= max_tries || stop.load(Ordering::Relaxed) {
                rec.fail(code, tries, wasted_us);
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

/// User + system CPU time of this process so far, s.
pub fn cpu_time_s() -> f64 {
    match nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            tv(u.user_time()) + tv(u.system_time())
        }
        Err(_) => 0.0,
    }
}
