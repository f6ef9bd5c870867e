//! The load engine: clients, the closed loop, the retry loop, and the
//! ticker that turns per-thread recorders into per-second series.
//!
//! Data flow: clients are spread over a few OS threads (`worker`), each
//! thread serving its clients in passes, as pgbench's threads do (`pass`);
//! a client has its own connection, or borrows one of a pool's. It draws
//! inputs, runs attempts until one commits or the retry policy gives up, and
//! records the outcome in its thread's `Recorder`. The ticker (this task) wakes
//! once a second, drains every recorder into one `Interval`, discards it
//! during warm-up, and otherwise appends a [`SecondPoint`] and merges it into
//! the run's totals. Nothing is sent per transaction.

mod attempt;
mod faults;
pub mod hlog;
pub mod hosts;
pub mod limits;
mod pace;
mod pass;
pub mod reads;
pub mod retry;
mod session;
pub mod txlog;
pub use faults::{FaultEvents, HostRun, MAX_HOST_RUNS, writes_to_two_primaries};
#[cfg(test)]
mod tests;
mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::time::sleep_until;
use tokio_postgres::Config;
use tokio_util::sync::CancellationToken;

use crate::metrics::host::CpuTicks;
use crate::metrics::{Interval, Recorder};
use crate::model::Isolation;
use crate::model::{HostCpu, Lifetime};
use crate::model::{Phase, SecondPoint};
use crate::postgres::TargetError;
use crate::workload::{Ledger, Workload, WorkloadClient};
use retry::Retrier;

/// How one run is driven.
#[derive(Debug, Clone)]
pub struct EngineParams {
    pub clients: u32,
    /// The id of this process's first client: 0, or in a sharded run the
    /// clients (and pool sessions) of the shards before this one, so that
    /// ids are unique across the shards (`ShardSpec::first_id`). Clients
    /// are `first_client..first_client + clients`, pool sessions follow.
    pub first_client: u32,
    /// The connections (the clients' own, or with a pool its sessions) of
    /// the shards before this one, 0 unsharded: this process's round-robin
    /// over the DSN's hosts goes on from there ([`hosts::assign`]).
    pub first_connection: u32,
    pub isolation: Isolation,
    pub retrier: Retrier,
    pub warmup: Duration,
    pub duration: Duration,
    /// End by count (pgbench `-t`): each client ends after this many
    /// transactions (committed, failed, skipped, rolled back by the
    /// application), and the measured window when every client has;
    /// `duration` is then not used, and `warmup` should be zero (the
    /// clients count from their start). `None`: end by `duration`.
    pub transactions: Option<u64>,
    /// pgbench `-C`: every transaction on a connection of its own, opened
    /// before it and closed after it; their time is in [`Tick::connect_ms`],
    /// not in the transactions' latencies (as pgbench counts it). Clients
    /// with their own connections only (not with `pool_size`).
    pub connect_per_transaction: bool,
    /// After each transaction a client lets its thread serve the other
    /// clients before it starts the next one, as pgbench's client returns
    /// to its thread's loop at the end of every transaction
    /// (`advanceConnectionState`, CSTATE_END_TX): the next one starts,
    /// and its latency and first command's with it, when the thread next
    /// serves the client, not when the last one ended. Without it a
    /// client starts the next transaction at once; its latencies then
    /// include the time its thread spends on the other clients before
    /// reading its answer, which pgbench's leave out (`-r`'s select-only
    /// SELECT: 0.198 against pgbench's 0.148 ms at 16 clients on one
    /// thread, issue #49).
    pub serve_between_transactions: bool,
    /// A log of every transaction (pgbench `-l`), see [`txlog`].
    pub tx_log: Option<txlog::TxLogHook>,
    /// Client `i` (its id, [`Self::first_client`] counted) seeds its input
    /// generator with `seed + i`.
    pub seed: u64,
    /// OS threads driving the clients, each with its own single-threaded
    /// runtime (like pgbench -j); clamped to 1..=clients (and to the pool
    /// size).
    pub threads: usize,
    /// Connections shared by the clients, split over the threads like the
    /// clients; `None`: a connection per client.
    pub pool_size: Option<u32>,
    /// Open loop at this total rate, tx/s; `None`: closed loop.
    pub rate: Option<f64>,
    /// Open loop: skip transactions later than this; count slower commits
    /// as late (pgbench `--latency-limit`); closed loop: count slower
    /// commits as late.
    pub latency_limit: Option<Duration>,
    /// How the connections spread over the DSN's hosts when it has
    /// several ([`hosts::assign`]).
    pub host_policy: crate::model::HostPolicy,
    /// Prepare every statement as the unnamed statement, parsed again
    /// with every execution (pgbench's `-M extended`), instead of as a
    /// named statement of its connection; needed behind a pooler that
    /// hands each transaction to any server connection
    /// ([`crate::wire::Conn::use_unnamed`]).
    pub unnamed_statements: bool,
    /// `--read-from standby|any`: where read-only transactions go
    /// ([`reads`]); `None`: every transaction on the primary.
    pub read_route: Option<reads::ReadRoute>,
    /// Keep which of a multi-host DSN's hosts acknowledged each
    /// read-write commit ([`FaultEvents::host_runs`]), for a run with a
    /// failover planned; costs a mutex per commit, so off otherwise.
    pub commits_by_host: bool,
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
    /// Transactions committed in the tick.
    pub committed: u64,
    /// Tries in the tick that did not end their transaction (retried):
    /// attempts less the transactions that ended (committed, failed, rolled
    /// back by the application, outcome unknown).
    pub retried: u64,
    /// Transactions that ended in the tick after more than one try
    /// (pgbench's "retried", where `retried` above is its "retries").
    pub retried_tx: u64,
    /// Transactions that gave up in the tick with a serialization failure
    /// (SQLSTATE 40001), a deadlock (40P01), or another error.
    pub failed_by_kind: [u64; 3],
    /// Mean and standard deviation of the tick's committed transactions'
    /// latencies, ms (0 when none committed); from the tick's histogram.
    pub lat_mean_ms: f64,
    pub lat_stddev_ms: f64,
    /// Open loop: transactions of the tick not started because they were
    /// already later than the latency limit (pgbench's "skipped").
    pub skipped: u64,
    /// Open loop: mean schedule lag of the tick's transactions, ms.
    pub lag_ms: f64,
    /// How long the clients took to open their connections before the
    /// run started, ms (the same in every tick; pgbench's `initial
    /// connection time`).
    pub initial_connect_ms: f64,
    /// A connection per transaction ([`EngineParams::connect_per_transaction`]):
    /// the tick's time spent opening and closing them, ms.
    pub connect_ms: f64,
}

/// The measurements of one run.
#[derive(Debug)]
pub struct EngineOutcome {
    /// Totals over the measured window.
    pub measured: Interval,
    /// Length of the measured window, s.
    pub measured_s: f64,
    pub per_second: Vec<SecondPoint>,
    /// The measured window's latencies as an HdrHistogram interval log
    /// (V2, compressed; see [`hlog`]): one interval a second per
    /// transaction type, tagged by its name. Empty when the window never
    /// opened.
    pub hlog: Vec<u8>,
    /// Over the clients' whole life: what the database must hold.
    pub lifetime: Lifetime,
    /// isobench's own CPU time (user + system) during the measured window, s.
    pub cpu_s: f64,
    /// The host's CPU use during the measured window (`/proc/stat`).
    pub host_cpu: Option<HostCpu>,
    /// The run was cancelled (Ctrl-C) before its measured window ended.
    pub interrupted: bool,
    /// When the measured window opened, by this machine's clock; `None`
    /// when it never did.
    pub window_start: Option<std::time::SystemTime>,
    /// Clients that stopped early, with why (a script error, a thread
    /// that died). A lost connection does not stop a client: see `faults`.
    pub client_errors: Vec<ClientStop>,
    /// Connections the clients lost and opened again.
    pub faults: FaultEvents,
    /// False when a client thread or task died or hung: its clients'
    /// ledgers are missing from the merged one.
    pub ledger_complete: bool,
    /// Per SQLSTATE the retry policy does not retry, sorted by code: the
    /// first failure's message, with its location when the workload knows
    /// it (a pgbench script's `file:line`).
    pub first_failures: Vec<(String, String)>,
    /// Per host of a DSN with several, in the DSN's order: its
    /// connections and the measured window's transactions on it; empty
    /// with one host.
    pub hosts: Vec<hosts::HostOutcome>,
    /// `--read-from standby|any`: what the measured window's routed reads
    /// showed.
    pub reads: Option<reads::ReadTally>,
}

impl EngineOutcome {
    /// The outcome of a run whose clients never started (cancelled, or
    /// its start gate refused): nothing measured, interrupted.
    pub fn cancelled_before_start(types: usize) -> Self {
        EngineOutcome {
            measured: Interval::new(types),
            measured_s: 0.0,
            per_second: Vec::new(),
            hlog: Vec::new(),
            lifetime: Lifetime::default(),
            cpu_s: 0.0,
            host_cpu: None,
            interrupted: true,
            window_start: None,
            client_errors: Vec::new(),
            faults: FaultEvents::default(),
            ledger_complete: true,
            first_failures: Vec::new(),
            hosts: Vec::new(),
            reads: None,
        }
    }
}

/// Errors that stop a run before it measures anything.
/// Why a client stopped before the end of its run. The messages are what
/// the run record's `errors` show.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StopReason {
    /// The client's own program failed (a pgbench script's run-time
    /// error); every run would hit it again.
    #[error("client aborted: {0}")]
    Script(String),
    #[error("ROLLBACK failed: {0}")]
    RollbackFailed(String),
    /// The client panicked (the panic's message).
    #[error("client panicked: {0}")]
    TaskDied(String),
    /// A client thread (with this many clients) panicked.
    #[error("a thread of {0} client(s) ended abnormally")]
    ThreadDied(usize),
    /// A client thread (with this many clients) was still busy this long
    /// (s) after the window closed, with no transaction ending in the last
    /// [`DRAIN_STALL`] (or [`DRAIN_MOST`] over), and was abandoned.
    #[error(
        "{0} client(s) still busy {1:.0} s after the run ended, no transaction ending in the last 30 s; abandoned"
    )]
    Abandoned(usize, f64),
}

/// A client (or, with `client: None`, a whole client thread) that stopped
/// early.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientStop {
    pub client: Option<u32>,
    pub reason: StopReason,
}

impl ClientStop {
    fn worker(reason: StopReason) -> Self {
        ClientStop {
            client: None,
            reason,
        }
    }
}

impl std::fmt::Display for ClientStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.client {
            Some(id) => write!(f, "client {id}: {}", self.reason),
            None => write!(f, "{}", self.reason),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Connect(#[from] TargetError),
    #[error("client {client}: preparing statements failed: {reason}")]
    Prepare { client: u32, reason: String },
    #[error("{0}")]
    Thread(String),
    /// The start gate ([`run_gated`]) refused to start the run (a sharded
    /// run's barrier: a shard missing).
    #[error("{0}")]
    Gate(String),
}

/// What a run waits for once every client is connected and prepared,
/// before its clock starts: a sharded run's start barrier
/// (`executor::shard`). `Err`: the run does not start, with why.
pub type Gate<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>>;

/// The arguments of [`run_gated`], for `drive::Driven::run_engine`.
pub struct RunArgs<'a> {
    pub db: &'a Config,
    pub params: &'a EngineParams,
    pub cancel: &'a CancellationToken,
    pub phase: &'a watch::Sender<Phase>,
    pub on_tick: &'a mut (dyn FnMut(&Tick) + Send),
    pub gate: Option<Gate<'a>>,
}

/// What `drive::Driven::run_engine` returns: [`run_gated`]'s future
/// for workload `W`, boxed where it was compiled.
pub type Running<'a, W> = std::pin::Pin<
    Box<
        dyn std::future::Future<
                Output = Result<
                    (
                        EngineOutcome,
                        <<W as Workload>::Client as WorkloadClient>::Ledger,
                    ),
                    EngineError,
                >,
            > + Send
            + 'a,
    >,
>;

/// [`run_gated`] with its arguments in one value; what
/// `drive::Driven::run_engine` boxes.
pub async fn run_with<W: Workload>(
    workload: &W,
    a: RunArgs<'_>,
) -> Result<(EngineOutcome, <W::Client as WorkloadClient>::Ledger), EngineError> {
    run_gated(
        workload, a.db, a.params, a.cancel, a.phase, a.on_tick, a.gate,
    )
    .await
}

/// Runs `params.clients` closed-loop clients of `workload` against `db`:
/// warm-up, then the measured window, then a drain. `cancel` ends the run
/// early (the outcome is marked interrupted); `phase` follows the run;
/// `on_tick` is called about once a second. Returns the measurements and
/// the clients' merged ledger.
///
/// Errors: a client that cannot connect or prepare ([`EngineError`]).
pub async fn run<W: Workload>(
    workload: &W,
    db: &Config,
    params: &EngineParams,
    cancel: &CancellationToken,
    phase: &watch::Sender<Phase>,
    on_tick: &mut (dyn FnMut(&Tick) + Send),
) -> Result<(EngineOutcome, <W::Client as WorkloadClient>::Ledger), EngineError> {
    run_gated(workload, db, params, cancel, phase, on_tick, None).await
}

/// [`run`], with `gate` awaited after every client is connected and
/// prepared and before the clock starts (the warm-up, then the measured
/// window, begin when it returns).
///
/// Errors: [`run`]'s, and [`EngineError::Gate`] when `gate` refuses.
pub async fn run_gated<W: Workload>(
    workload: &W,
    db: &Config,
    params: &EngineParams,
    cancel: &CancellationToken,
    phase: &watch::Sender<Phase>,
    on_tick: &mut (dyn FnMut(&Tick) + Send),
    gate: Option<Gate<'_>>,
) -> Result<(EngineOutcome, <W::Client as WorkloadClient>::Ledger), EngineError> {
    phase.send_replace(Phase::Connecting);
    let stop = Arc::new(AtomicBool::new(false));
    let pool = params.pool_size.map(|p| p.max(1) as usize);
    let threads = params
        .threads
        .clamp(1, params.clients.max(1) as usize)
        .min(pool.unwrap_or(usize::MAX));
    let types = workload.tx_types().len();
    let labels = crate::wire::host_labels(db);
    let fault_log = Arc::new(faults::FaultLog::new(
        params.commits_by_host && labels.len() > 1,
    ));
    let recorders: Vec<Arc<Recorder>> = (0..threads)
        .map(|_| Arc::new(Recorder::with_hosts(types, labels.len())))
        .collect();
    let (members, pooled) = deal(
        workload,
        params,
        threads,
        pool.unwrap_or(0) as u32,
        labels.len(),
    );
    let pacing = match params.rate {
        None => worker::Pacing::Closed,
        Some(rate) => worker::Pacing::Open {
            rate_per_client: rate / f64::from(params.clients.max(1)),
            latency_limit: params.latency_limit,
        },
    };
    let retrier = Arc::new(params.retrier.clone());
    let unnamed = params
        .unnamed_statements
        .then(|| Arc::new(crate::wire::StatementCache::default()));
    let running = Arc::new(worker::Running::new(params.clients));
    let reads = params
        .read_route
        .clone()
        .map(|r| Arc::new(reads::Reads::new(r, phase.subscribe(), unnamed.clone())));
    let (ready_tx, ready_rx) = tokio::sync::mpsc::unbounded_channel();
    let (go_tx, go_rx) = watch::channel(false);
    let connecting = Instant::now();
    let mut workers = Vec::with_capacity(threads);
    for (i, (members, pooled)) in members.into_iter().zip(pooled).enumerate() {
        let common = worker::Common {
            db: db.clone(),
            isolation: params.isolation,
            pacing,
            retrier: retrier.clone(),
            recorder: recorders[i].clone(),
            stop: stop.clone(),
            ready: ready_tx.clone(),
            go: go_rx.clone(),
            faults: fault_log.clone(),
            unnamed: unnamed.clone(),
            transactions: params.transactions,
            running: running.clone(),
            connect_per_transaction: params.connect_per_transaction,
            serve_between_transactions: params.serve_between_transactions,
            closed_limit: params.latency_limit.filter(|_| params.rate.is_none()),
            log: txlog::ThreadLog::of(params.tx_log.as_ref(), i, threads),
            reads: reads.clone(),
        };
        workers.push(worker::spawn(i, members, pooled, common));
    }
    drop(ready_tx);
    // On an early return, dropping go_tx sends every worker home.
    let Some(placed) = all_ready(ready_rx, threads, cancel).await? else {
        return Ok((
            EngineOutcome::cancelled_before_start(types),
            Default::default(),
        ));
    };
    // pgbench's "initial connection time": until every client is connected.
    let connected_in = connecting.elapsed();
    if let Some(gate) = gate {
        tokio::select! {
            r = gate => r.map_err(EngineError::Gate)?,
            _ = cancel.cancelled() => {
                return Ok((
                    EngineOutcome::cancelled_before_start(types),
                    Default::default(),
                ));
            }
        }
    }
    go_tx.send_replace(true);

    let names = workload.tx_types();
    let w = measure(
        &recorders,
        params,
        &running,
        connected_in,
        &names,
        cancel,
        phase,
        on_tick,
    )
    .await;

    phase.send_replace(Phase::Draining);
    stop.store(true, Ordering::Relaxed);
    let ended = || recorders.iter().map(|r| r.ended()).sum::<u64>();
    let drained =
        drain::<<W::Client as WorkloadClient>::Ledger>(workers, ended, DRAIN_STALL, DRAIN_MOST)
            .await;
    let mut lifetime = drained.lifetime;
    for r in &recorders {
        let l = r.lifetime();
        lifetime.committed += l.committed;
        lifetime.unknown_outcome += l.unknown_outcome;
    }
    let per_host = if labels.len() > 1 {
        hosts::outcomes(&labels, &placed, &w.measured.hosts)
    } else {
        Vec::new()
    };
    Ok((
        EngineOutcome {
            measured: w.measured,
            measured_s: w.measured_s,
            per_second: w.per_second,
            hlog: w.hlog,
            lifetime,
            cpu_s: w.cpu_s,
            host_cpu: w.host_cpu,
            interrupted: w.interrupted,
            window_start: w.window_start,
            client_errors: drained.errors,
            faults: fault_log.events(w.start),
            ledger_complete: drained.ledger_complete,
            first_failures: first_failures(&recorders),
            hosts: per_host,
            reads: reads.map(|r| r.tally()),
        },
        drained.ledger,
    ))
}

/// Members of each client thread.
type PerThread<C> = Vec<Vec<worker::Member<C>>>;

/// Per thread: its clients (ids `first_client..first_client + clients`)
/// and its pool sessions (ids after the clients, one per connection), both
/// dealt over the `threads` in consecutive blocks as pgbench deals its
/// clients to `-j` threads ([`blocks`]). The connections (the clients',
/// or with a pool the pool's) get their first host from [`hosts::assign`]
/// over `hosts` hosts, counted from [`EngineParams::first_connection`], so
/// that the shards of a sharded run go on round-robin where the one
/// before stopped.
fn deal<W: Workload>(
    workload: &W,
    params: &EngineParams,
    threads: usize,
    pool: u32,
    hosts: usize,
) -> (PerThread<W::Client>, PerThread<W::Client>) {
    let first = params.first_client;
    let from = params.first_connection;
    let connections = if pool > 0 { pool } else { params.clients };
    let homes = hosts::assign(
        params.host_policy,
        (from + connections) as usize,
        hosts,
        params.seed,
    )
    .split_off(from as usize);
    let member = |id: u32, home: usize| worker::Member {
        id,
        client: workload.client(id, params.seed.wrapping_add(u64::from(id))),
        backoff_seed: backoff_seed(params.seed, id),
        home,
    };
    let members = blocks(params.clients, threads)
        .map(|ks| {
            ks.map(|k| member(first + k, if pool > 0 { 0 } else { homes[k as usize] }))
                .collect()
        })
        .collect();
    let pooled = blocks(pool, threads)
        .map(|js| {
            js.map(|j| member(first + params.clients + j, homes[j as usize]))
                .collect()
        })
        .collect();
    (members, pooled)
}

/// `n` items dealt to `threads` threads as pgbench 15 deals its clients:
/// consecutive blocks, thread `i` taking `(left + threads - i - 1) /
/// (threads - i)` of the `left` not yet dealt (so the first threads take
/// the larger blocks: 5 over 2 are 0..3 and 3..5).
fn blocks(n: u32, threads: usize) -> impl Iterator<Item = std::ops::Range<u32>> {
    let t = threads.max(1) as u32;
    let mut dealt = 0u32;
    (0..t).map(move |i| {
        let take = (n - dealt + t - i - 1) / (t - i);
        let block = dealt..dealt + take;
        dealt += take;
        block
    })
}

/// Waits until each of the `threads` workers reports its clients connected
/// and prepared. Returns, per connection, the host it tried first and the
/// one it connected to; `None` when `cancel` fired first.
///
/// Errors: a worker's connect or prepare error; a worker that ended without
/// reporting.
async fn all_ready(
    mut ready: tokio::sync::mpsc::UnboundedReceiver<Result<Vec<(usize, usize)>, EngineError>>,
    threads: usize,
    cancel: &CancellationToken,
) -> Result<Option<Vec<(usize, usize)>>, EngineError> {
    let mut placed = Vec::new();
    for _ in 0..threads {
        let r = tokio::select! {
            r = ready.recv() => r,
            _ = cancel.cancelled() => return Ok(None),
        };
        match r {
            Some(Ok(p)) => placed.extend(p),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(EngineError::Thread(
                    "a client thread ended while connecting".into(),
                ));
            }
        }
    }
    Ok(Some(placed))
}

/// Failed transactions as pgbench groups them: serialization failures
/// (40001), deadlocks (40P01), others.
fn failed_by_kind(f: &crate::metrics::FailureCounts) -> [u64; 3] {
    let mut k = [0u64; 3];
    for (code, n) in f.iter() {
        match code.as_str() {
            "40001" => k[0] += n,
            "40P01" => k[1] += n,
            _ => k[2] += n,
        }
    }
    k
}

/// What the clock loop measured.
struct Window {
    /// The measured window's totals.
    measured: Interval,
    /// The window's length as measured (s): shorter when interrupted.
    measured_s: f64,
    per_second: Vec<SecondPoint>,
    hlog: Vec<u8>,
    /// isobench's CPU time during the window (s).
    cpu_s: f64,
    host_cpu: Option<HostCpu>,
    interrupted: bool,
    /// When the window opened (the clients' start if it never did).
    start: Instant,
    /// When the window opened by the wall clock, if it did.
    window_start: Option<std::time::SystemTime>,
}

/// A measured window that ends by count ([`EngineParams::transactions`])
/// has no end of its own: it ends when `Running` says every client is
/// done (about 10 years is never).
const UNTIL_COUNTED: Duration = Duration::from_secs(10 * 365 * 86_400);

/// The run's clock, from the clients' start: the warm-up (discarded),
/// then `params.duration` measured, or, ending by count
/// ([`EngineParams::transactions`]), until every client has run its
/// transactions. Either way it ends as soon as no client is left
/// (`running`): clients that all stopped early (a pgbench script's
/// aborts) end the run then, as pgbench's threads end when their last
/// client is done, and the window's length is the time they ran. Each
/// second it drains the
/// `recorders`, reports a [`Tick`] to `on_tick` and, in the window, adds a
/// [`SecondPoint`]. `cancel` ends it at the next tick (interrupted).
/// `connected_in` is the clients' connection time, reported in every tick.
#[allow(clippy::too_many_arguments)]
async fn measure(
    recorders: &[Arc<Recorder>],
    params: &EngineParams,
    running: &worker::Running,
    connected_in: Duration,
    names: &[&str],
    cancel: &CancellationToken,
    phase: &watch::Sender<Phase>,
    on_tick: &mut (dyn FnMut(&Tick) + Send),
) -> Window {
    let types = names.len();
    let length = match params.transactions {
        Some(_) => UNTIL_COUNTED,
        None => params.duration,
    };
    let started = Instant::now();
    let mut hlog = hlog::Log::default();
    let warm_end = started + params.warmup;
    let mut next = (started + Duration::from_secs(1)).min(warm_end);
    let mut window: Option<(Instant, Instant)> = None; // (start, end)
    let mut cpu_start = 0.0;
    let mut host_start = None;
    let mut host_cpu = None;
    let mut window_start = None;
    if params.warmup.is_zero() {
        window_start = Some(std::time::SystemTime::now());
        // No warm-up: the window opens with the clients, so nothing they
        // record before the first tick is lost.
        window = Some((started, started + length));
        next = (started + Duration::from_secs(1)).min(started + length);
        cpu_start = cpu_time_s();
        host_start = CpuTicks::now();
        phase.send_replace(Phase::Measuring);
    } else {
        phase.send_replace(Phase::Warmup);
    }
    let mut last = started;
    let mut tick = Interval::new(types);
    let mut measured = Interval::new(types);
    let mut per_second = Vec::new();
    let mut cpu_s = 0.0;
    let mut interrupted = false;
    let mut all_done = false;
    loop {
        tokio::select! {
            _ = sleep_until(next.into()) => {}
            _ = cancel.cancelled() => interrupted = true,
            _ = running.all_done(), if !all_done => all_done = true,
        }
        let now = Instant::now();
        for r in recorders {
            r.drain_into(&mut tick);
        }
        let secs = now.duration_since(last).as_secs_f64().max(1e-9);
        let last_tick = last;
        let total = tick.total();
        let mut report = Tick {
            phase: Phase::Warmup,
            elapsed: now.duration_since(started),
            tps: total.committed as f64 / secs,
            p99_ms: total.latency_summary().p99,
            failed: total.failed.total(),
            committed: total.committed,
            retried: total.attempts.saturating_sub(
                total.committed + total.failed.total() + total.user_aborts + total.unknown_outcome,
            ),
            retried_tx: total.retried,
            failed_by_kind: failed_by_kind(&total.failed),
            lat_mean_ms: if total.latency_us.is_empty() {
                0.0
            } else {
                total.latency_us.mean() / 1000.0
            },
            lat_stddev_ms: if total.latency_us.is_empty() {
                0.0
            } else {
                total.latency_us.stdev() / 1000.0
            },
            skipped: tick.waits.skipped,
            lag_ms: if tick.waits.lag_us.is_empty() {
                0.0
            } else {
                tick.waits.lag_us.mean() / 1000.0
            },
            initial_connect_ms: connected_in.as_secs_f64() * 1000.0,
            connect_ms: tick.waits.connect_us as f64 / 1000.0,
        };
        last = now;
        match window {
            None => {
                if now >= warm_end && !interrupted {
                    window = Some((now, now + length));
                    window_start = Some(std::time::SystemTime::now());
                    next = (now + Duration::from_secs(1)).min(now + length);
                    cpu_start = cpu_time_s();
                    host_start = CpuTicks::now();
                    phase.send_replace(Phase::Measuring);
                } else {
                    next = (next + Duration::from_secs(1)).min(warm_end);
                }
            }
            Some((start, end)) => {
                report.phase = Phase::Measuring;
                let from = last_tick.saturating_duration_since(start);
                hlog.write(&tick, names, from, now.duration_since(start) - from);
                measured.merge(&tick);
                per_second.push(SecondPoint {
                    t_s: now.duration_since(start).as_secs_f64(),
                    committed: total.committed,
                    tps: report.tps,
                    p99_ms: report.p99_ms,
                    failed: report.failed,
                    lag_ms: (!tick.waits.lag_us.is_empty())
                        .then(|| tick.waits.lag_us.mean() / 1000.0),
                });
                next = (next + Duration::from_secs(1)).min(end);
                if now >= end || interrupted || all_done {
                    cpu_s = cpu_time_s() - cpu_start;
                    host_cpu = host_start
                        .zip(CpuTicks::now())
                        .and_then(|(a, b)| a.until(&b));
                }
            }
        }
        tick.reset();
        on_tick(&report);
        if interrupted || all_done || window.is_some_and(|(_, end)| now >= end) {
            break;
        }
    }
    Window {
        measured,
        measured_s: window.map_or(0.0, |(start, _)| last.duration_since(start).as_secs_f64()),
        per_second,
        hlog: hlog.finish(),
        cpu_s,
        host_cpu,
        interrupted,
        start: window.map_or(started, |(start, _)| start),
        window_start,
    }
}

/// What the workers handed back after the stop.
struct Drained<L> {
    errors: Vec<ClientStop>,
    /// Unknown outcomes of threads that died or were abandoned (their
    /// clients may have been mid-COMMIT).
    lifetime: Lifetime,
    ledger: L,
    ledger_complete: bool,
}

/// How long the workers may go on stopping, once the window closed,
/// without a transaction ending: a server that hangs. Each client (or pool
/// session) ends the transaction it has in flight; behind a pooler's small
/// pool they wait their turn, so 50,000 clients behind 50 server
/// connections ending 1,000 transactions a second need about 50 s in all,
/// and keep ending transactions all along.
pub const DRAIN_STALL: Duration = Duration::from_secs(30);

/// The longest the workers may take to stop, progress or not.
pub const DRAIN_MOST: Duration = Duration::from_secs(600);

/// Waits for every worker to stop. While transactions keep ending
/// (`ended`, a count that only grows, moves) it waits, up to `most` in
/// all; a thread still busy once nothing ended for `stall`, or after
/// `most`, is abandoned, and one that died (panic) is lost: either counts
/// as a stop of all its clients, whose last transactions have unknown
/// outcomes, and the ledger is incomplete (an abandoned thread's
/// connections close at exit, or when the next run drops the database).
async fn drain<L: Ledger>(
    workers: Vec<worker::Handle<L>>,
    ended: impl Fn() -> u64,
    stall: Duration,
    most: Duration,
) -> Drained<L> {
    let mut d = Drained {
        errors: Vec::new(),
        lifetime: Lifetime::default(),
        ledger: L::default(),
        ledger_complete: true,
    };
    let start = tokio::time::Instant::now();
    let slice = (stall / 4).min(Duration::from_secs(1));
    let (mut seen, mut moved) = (ended(), start);
    for mut worker in workers {
        let reason = loop {
            match tokio::time::timeout(slice, &mut worker.done).await {
                Ok(Ok(done)) => {
                    d.errors.extend(done.errors);
                    d.ledger.merge(done.ledger);
                    d.ledger_complete &= done.ledger_complete;
                    break None;
                }
                Ok(Err(_)) => break Some(StopReason::ThreadDied(worker.clients)),
                Err(_) => {
                    let now = tokio::time::Instant::now();
                    let count = ended();
                    if count != seen {
                        (seen, moved) = (count, now);
                    }
                    if now - moved >= stall || now - start >= most {
                        let waited = (now - start).as_secs_f64();
                        break Some(StopReason::Abandoned(worker.clients, waited));
                    }
                }
            }
        };
        if let Some(reason) = reason {
            d.lifetime.unknown_outcome += worker.clients as u64;
            d.ledger_complete = false;
            d.errors.push(ClientStop::worker(reason));
        }
    }
    d
}

/// The first message seen for each SQLSTATE, over all `recorders`, by
/// SQLSTATE.
fn first_failures(recorders: &[Arc<Recorder>]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in recorders {
        for (code, message) in r.first_failures() {
            let code = String::from_utf8_lossy(&code).into_owned();
            if !out.iter().any(|(c, _)| *c == code) {
                out.push((code, message));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The seed of client (or pool session) `id`'s backoff and arrival
/// generators, from the run's `seed`.
fn backoff_seed(seed: u64, id: u32) -> u64 {
    seed ^ 0x9e37_79b9_7f4a_7c15 ^ u64::from(id)
}

/// Client threads when `--threads` is not given (the CLI's default): one
/// per CPU, at most one per client, as pgbench is run at `-j` = the CPU
/// count. Measured on the 2-core machine (BENCHMARKS.md, issue #29):
/// under SERIALIZABLE at 16 clients two threads commit 18-26 % more than
/// one (654-701 vs 552-556 tx/s), because a client's next statement
/// waits less for the thread and its transaction stays open for less
/// time; under READ COMMITTED throughput is the same (5,249-5,476 vs
/// 5,042-5,708 tx/s) for 5-12 % more client CPU per transaction.
pub fn default_threads(clients: u32) -> usize {
    // With `--cpus clients=LIST`, one thread per pinned CPU at most.
    let cpus = crate::postgres::cpus::client_cpus().map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |c| c.len().max(1),
    );
    (clients as usize).clamp(1, cpus)
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
