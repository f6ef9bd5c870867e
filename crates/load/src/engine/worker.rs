//! Client threads. Clients are dealt in blocks over a few OS threads,
//! each running a single-threaded tokio runtime, as pgbench spreads clients
//! over `-j` threads. A query's hand-offs between a client and its
//! connection then stay on one thread, which on a 2-core machine shared
//! with the server measured markedly cheaper than a work-stealing runtime
//! (see BENCHMARKS.md). A thread's clients, each reading and writing its
//! own socket ([`crate::wire`]), run as one task that serves the woken ones
//! in id order, pass after pass, as pgbench's thread does ([`pass`]).
//!
//! A *session* is a connection with its prepared statements and the
//! workload client instance that prepared them. Without a pool every
//! client owns one session and draws its inputs from the same instance.
//! With a pool (`pool_size`), a worker owns its share of the pool's
//! sessions; each client draws inputs from its own (unprepared) instance
//! and checks a session out for every attempt, first come first served
//! (tokio's semaphore is fair), like an application's connection pool.
//! Ledgers are sums, so the clients' and the sessions' ledgers merge into
//! the same totals.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch};
use tokio_postgres::Config;

use super::EngineError;
use super::attempt::{AfterError, Attempted, Failed, run_attempt};
use super::faults::FaultLog;
use super::retry::{Retrier, Verdict};
use super::session::{Pool, Session, reconnect, reopen, setup};
use super::txlog::{ThreadLog, TxEnd, TxRecord};
use super::{ClientStop, StopReason};
use super::{pace, pass};
use crate::metrics::{ErrorKey, Recorder};
use crate::model::Isolation;
use crate::model::{CONNECTION_FAILURE, SCRIPT_ERROR, SqlState};
use crate::wire::StatementCache;
use crate::workload::{Ended, Ledger, WorkloadClient};

/// One client to be run by a worker.
pub(super) struct Member<C> {
    pub id: u32,
    pub client: C,
    pub backoff_seed: u64,
    /// The DSN's host its connection tries first (`hosts::assign`).
    pub home: usize,
}

/// How clients pace themselves.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pacing {
    /// The next transaction starts when the previous one ends.
    Closed,
    /// Open loop: each client's transactions are scheduled by a Poisson
    /// process of `rate_per_client` tx/s (so the clients together arrive
    /// at the target rate); latency counts from the scheduled start.
    /// Transactions already later than `latency_limit` are skipped.
    Open {
        rate_per_client: f64,
        latency_limit: Option<Duration>,
    },
}

/// What every worker of a run shares.
pub(super) struct Common {
    pub db: Config,
    pub isolation: Isolation,
    pub pacing: Pacing,
    pub retrier: Arc<Retrier>,
    /// Set when the measured window ends.
    pub stop: Arc<AtomicBool>,
    /// The worker's recorder, shared by its clients (one thread: uncontended).
    pub recorder: Arc<Recorder>,
    /// Each worker sends one message: its clients are connected (with,
    /// per connection, the host it tried first and the one it connected
    /// to), or why not.
    pub ready: mpsc::UnboundedSender<Result<Vec<(usize, usize)>, EngineError>>,
    /// Turns true when every worker is ready; dropped to call the run off.
    pub go: watch::Receiver<bool>,
    /// Every worker's connection losses and reconnects.
    pub faults: Arc<FaultLog>,
    /// `Some`: statements are unnamed, described once for the run
    /// ([`EngineParams::unnamed_statements`](super::EngineParams)).
    pub unnamed: Option<Arc<StatementCache>>,
    /// End by count: each client's transactions
    /// ([`super::EngineParams::transactions`]).
    pub transactions: Option<u64>,
    /// The clients still running (see [`Running`]).
    pub running: Arc<Running>,
    /// pgbench `-C`: a connection per transaction.
    pub connect_per_transaction: bool,
    /// pgbench's return to the thread's loop after every transaction.
    pub serve_between_transactions: bool,
    /// Closed loop: count commits slower than this as late.
    pub closed_limit: Option<Duration>,
    /// This thread's transaction log, if any.
    pub log: Option<ThreadLog>,
    /// `--read-from standby|any`: the route and the run's tally.
    pub reads: Option<Arc<super::reads::Reads>>,
}

/// The clients of a run still running: each client's loop holds a
/// [`Leaving`], and the last to drop its one (when it ends, also by a
/// panic) wakes [`Running::all_done`]. A run ends there: a run by count
/// when every client has run its transactions, any run when every
/// client has stopped early.
pub(super) struct Running {
    left: AtomicU32,
    none_left: tokio::sync::Notify,
}

impl Running {
    /// `clients` clients, none ended yet.
    pub(super) fn new(clients: u32) -> Self {
        Running {
            left: AtomicU32::new(clients),
            none_left: tokio::sync::Notify::new(),
        }
    }

    /// Returns once every client has ended.
    pub(super) async fn all_done(&self) {
        if self.left.load(Ordering::Acquire) != 0 {
            // notify_one keeps its wake for a later waiter: none is lost.
            self.none_left.notified().await;
        }
    }
}

/// A running client's place in [`Running`], given up when dropped.
struct Leaving(Arc<Running>);

impl Drop for Leaving {
    fn drop(&mut self) {
        if self.0.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.none_left.notify_one();
        }
    }
}

/// What a worker hands back when its clients have stopped.
pub(super) struct Done<L> {
    /// Clients that stopped early, and why.
    pub errors: Vec<ClientStop>,
    /// The worker's clients' ledgers, merged.
    pub ledger: L,
    /// False when a client task died and took its ledger with it.
    pub ledger_complete: bool,
}

/// A running worker.
pub(super) struct Handle<L> {
    pub clients: usize,
    pub done: oneshot::Receiver<Done<L>>,
}

/// Starts worker `index` on its own thread. With `pooled` non-empty, its
/// members share those sessions (see the module docs); else each member
/// gets its own.
pub(super) fn spawn<C: WorkloadClient>(
    index: usize,
    members: Vec<Member<C>>,
    pooled: Vec<Member<C>>,
    common: Common,
) -> Handle<C::Ledger> {
    let clients = members.len();
    let (done_tx, done) = oneshot::channel();
    let ready = common.ready.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("isobench-clients-{index}"))
        .spawn(move || {
            // `--cpus clients=LIST`: this thread's clients run there.
            if let Err(e) = crate::postgres::cpus::pin_this_thread() {
                let _ = common.ready.send(Err(EngineError::Thread(e)));
                return;
            }
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
            rt.block_on(run_worker(members, pooled, common, done_tx));
        });
    if let Err(e) = spawned {
        let _ = ready.send(Err(EngineError::Thread(format!(
            "cannot start a client thread: {e}"
        ))));
    }
    Handle { clients, done }
}

async fn run_worker<C: WorkloadClient>(
    members: Vec<Member<C>>,
    pooled: Vec<Member<C>>,
    mut common: Common,
    done: oneshot::Sender<Done<C::Ledger>>,
) {
    // Connect and prepare: one session per member, or the pool's.
    let (connect, inputs) = if pooled.is_empty() {
        (members, Vec::new())
    } else {
        (pooled, members)
    };
    let sessions = match connect_all(
        connect,
        &common.db,
        common.isolation,
        common.unnamed.as_ref(),
        common.reads.as_deref(),
    )
    .await
    {
        Ok(s) => s,
        Err(e) => {
            let _ = common.ready.send(Err(e));
            return;
        }
    };
    let placed = sessions.iter().map(|(s, _)| (s.home, s.host)).collect();
    let _ = common.ready.send(Ok(placed));
    // Drop our sender: if another worker dies while connecting, the engine
    // then sees the channel close instead of waiting forever.
    drop(common.ready);
    if common.go.wait_for(|go| *go).await.is_err() {
        return;
    }
    let shared = Arc::new(Shared {
        rec: common.recorder,
        retrier: common.retrier,
        stop: common.stop,
        pacing: common.pacing,
        db: common.db,
        isolation: common.isolation,
        faults: common.faults,
        unnamed: common.unnamed,
        transactions: common.transactions,
        running: common.running,
        connect_each: common.connect_per_transaction,
        serve_between: common.serve_between_transactions,
        closed_limit: common.closed_limit,
        log: common.log.clone(),
        reads: common.reads.clone(),
    });
    let ctx = |id: u32, seed: u64| Ctx {
        id,
        seed,
        shared: shared.clone(),
    };
    // Each client's loop is boxed as it is made, in id order (served in
    // that order in each pass, as pgbench serves its clients), from its
    // member's slot: no second copy of every client's state is ever
    // alive at once (see `pass` on memory per client).
    let mut ids: Vec<u32> = Vec::new();
    let (loops, pool) = if inputs.is_empty() {
        let mut own = sessions;
        own.sort_by_key(|(s, _)| s.id);
        ids.extend(own.iter().map(|(s, _)| s.id));
        let loops: Vec<_> = own
            .into_iter()
            .map(|(session, seed)| {
                let id = session.id;
                Box::pin(client_loop(Source::Own(Box::new(session)), ctx(id, seed)))
            })
            .collect();
        (loops, None)
    } else {
        let pool = Arc::new(Pool::new(sessions.into_iter().map(|(s, _)| s).collect()));
        let mut inputs = inputs;
        inputs.sort_by_key(|m| m.id);
        ids.extend(inputs.iter().map(|m| m.id));
        let loops: Vec<_> = inputs
            .into_iter()
            .map(|m| {
                let mut client = m.client;
                client.inputs_run_elsewhere();
                let source = Source::Pooled {
                    inputs: client,
                    pool: pool.clone(),
                };
                Box::pin(client_loop(source, ctx(m.id, m.backoff_seed)))
            })
            .collect();
        (loops, Some(pool))
    };
    drop(shared);
    let ended = match tokio::spawn(pass::run(loops)).await {
        Ok(ended) => ended,
        Err(e) => ids.iter().map(|_| Err(e.to_string())).collect(),
    };
    if let Some(log) = &common.log {
        log.finish();
    }
    let _ = done.send(gather(ids.into_iter().zip(ended), pool));
}

/// Connections a worker opens at once.
///
/// Bounded, for two reasons: a listening socket queues only so many
/// connections not yet accepted (pgbouncer's `listen_backlog` is 128 by
/// default, and a Unix-domain socket refuses the rest with `EAGAIN`), and
/// each connection being opened holds its startup and authentication
/// state (about 1.5 KB), which for 50,000 clients at once would be 75 MB
/// on top of the sessions themselves.
const CONNECTING: usize = 64;

/// Connects and prepares a session for each of `members`, at most
/// [`CONNECTING`] at a time, with its backoff seed; in `members`' order.
/// Errors: the first member's that failed.
async fn connect_all<C: WorkloadClient>(
    members: Vec<Member<C>>,
    db: &Config,
    isolation: Isolation,
    unnamed: Option<&Arc<StatementCache>>,
    reads: Option<&super::reads::Reads>,
) -> Result<Vec<(Session<C>, u64)>, EngineError> {
    use futures_util::{StreamExt, TryStreamExt};
    let n = members.len();
    let setups = members.into_iter().map(|m| async move {
        let seed = m.backoff_seed;
        let mut s = setup(m.id, m.client, db, isolation, m.home, unnamed).await?;
        if let Some(reads) = reads {
            let replica = super::session::open_replica(
                &mut s.client,
                s.id,
                &reads.route.standbys,
                isolation,
                unnamed,
            )
            .await;
            s.replica = Some(replica.map_err(|e| {
                EngineError::Connect(crate::postgres::TargetError::Connect {
                    target: "a standby to read from (--read-from)".into(),
                    reason: e.to_string(),
                })
            })?);
        }
        Ok::<_, EngineError>((s, seed))
    });
    let mut sessions = Vec::with_capacity(n);
    let mut opened = futures_util::stream::iter(setups).buffered(CONNECTING);
    while let Some(s) = opened.try_next().await? {
        sessions.push(s);
    }
    Ok(sessions)
}

/// How a client's loop ended: with its workload client and why it
/// stopped (`Ok` at the run's end), or with the message of its panic.
type ClientEnd<C> = Result<(C, Result<(), StopReason>), String>;

/// The worker's [`Done`] from how each client's loop `ended` (its client
/// and result, or the panic that ended it) and, with a pool, the sessions
/// it gives back.
fn gather<C: WorkloadClient>(
    ended: impl Iterator<Item = (u32, ClientEnd<C>)>,
    pool: Option<Arc<Pool<C>>>,
) -> Done<C::Ledger> {
    let mut errors = Vec::new();
    let mut ledger = C::Ledger::default();
    let mut ledger_complete = true;
    for (id, end) in ended {
        match end {
            Ok((client, result)) => {
                ledger.merge(client.into_ledger());
                if let Err(reason) = result {
                    errors.push(ClientStop {
                        client: Some(id),
                        reason,
                    });
                }
            }
            Err(panic) => {
                ledger_complete = false;
                errors.push(ClientStop {
                    client: Some(id),
                    reason: StopReason::TaskDied(panic),
                });
            }
        }
    }
    if let Some(pool) = pool {
        let (sessions, all) = pool.drain();
        // A session that never came back took its ledger with it.
        ledger_complete &= all;
        for s in sessions {
            ledger.merge(s.client.into_ledger());
        }
    }
    Done {
        errors,
        ledger,
        ledger_complete,
    }
}

/// Where a client's inputs and connections come from.
enum Source<C> {
    /// Its own session, which also draws the inputs.
    Own(Box<Session<C>>),
    /// Its own input generator, and sessions from a pool.
    Pooled { inputs: C, pool: Arc<Pool<C>> },
}

/// What a client loop needs besides its source: its id and seed, and
/// what every client of its worker shares (one allocation per worker, not
/// per client: 10,000 clients each with their own copy of the target's
/// `Config` cost about 0.6 KB per client).
struct Ctx {
    /// The client's id.
    id: u32,
    /// Seed of the backoff and arrival generators.
    seed: u64,
    shared: Arc<Shared>,
}

/// What the clients of one worker share.
struct Shared {
    rec: Arc<Recorder>,
    retrier: Arc<Retrier>,
    stop: Arc<AtomicBool>,
    pacing: Pacing,
    /// Where to reconnect to, and the session's isolation default.
    db: Config,
    isolation: Isolation,
    faults: Arc<FaultLog>,
    unnamed: Option<Arc<StatementCache>>,
    /// End by count: each client's transactions.
    transactions: Option<u64>,
    running: Arc<Running>,
    /// A connection per transaction (own sessions only).
    connect_each: bool,
    /// Let the thread serve the others after each transaction.
    serve_between: bool,
    /// Closed loop: the latency limit late commits are counted against.
    closed_limit: Option<Duration>,
    log: Option<ThreadLog>,
    reads: Option<Arc<super::reads::Reads>>,
}

impl std::ops::Deref for Ctx {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// [`reconnect`] with the client's context: its target, isolation level,
/// stop flag and fault log. Boxed: opening a connection (startup,
/// authentication, preparing) is the largest state a client's loop could
/// be in, about 1.4 KB that every client would carry inline although
/// only a client that lost its connection ever needs it; a reconnect
/// allocates it instead.
async fn reconnect_ctx<C: WorkloadClient>(
    s: &mut Session<C>,
    ctx: &Ctx,
    rng: &mut rand::rngs::SmallRng,
) -> Option<()> {
    Box::pin(reconnect(
        s,
        &ctx.db,
        ctx.isolation,
        ctx.unnamed.as_ref(),
        &ctx.stop,
        &ctx.faults,
        rng,
    ))
    .await
}

impl<C: WorkloadClient> Source<C> {
    fn next_input(&mut self) -> C::Input {
        match self {
            Source::Own(s) => s.client.next_input(),
            Source::Pooled { inputs, .. } => inputs.next_input(),
        }
    }

    fn tx_type(&self, input: &C::Input) -> usize {
        match self {
            Source::Own(s) => s.client.tx_type(input),
            Source::Pooled { inputs, .. } => inputs.tx_type(input),
        }
    }

    fn read_only(&self, input: &C::Input) -> bool {
        match self {
            Source::Own(s) => s.client.read_only(input),
            Source::Pooled { inputs, .. } => inputs.read_only(input),
        }
    }

    fn pause_before(&mut self, input: &C::Input) -> Duration {
        match self {
            Source::Own(s) => s.client.pause_before(input),
            Source::Pooled { inputs, .. } => inputs.pause_before(input),
        }
    }

    /// Runs one attempt of `input` on a session (checked out of the pool
    /// and returned afterwards, the wait recorded; a pooled session whose
    /// connection was lost is reconnected first). On error, `after`
    /// decides, while the session is still held, whether to roll back or
    /// to tell the session's client that the outcome is unknown. `None`:
    /// the run stopped while reconnecting, nothing was attempted.
    /// `now`: the time, if the caller has just read the clock (a client
    /// of its own starts the attempt then, saving a clock read).
    async fn attempt(
        &mut self,
        input: &C::Input,
        ctx: &Ctx,
        rng: &mut rand::rngs::SmallRng,
        after: impl Fn(&crate::workload::AttemptError) -> AfterError,
        now: Option<Instant>,
        pos: Option<&mut super::reads::Position>,
    ) -> Option<Attempted> {
        let rec = &*ctx.rec;
        match self {
            Source::Own(s) => {
                let start = now.unwrap_or_else(Instant::now);
                let mut a = routed(s, input, &after, start, ctx, pos).await;
                a.set_failed_step(record_steps(&mut s.client, input, rec));
                Some(a)
            }
            Source::Pooled { pool, .. } => {
                let (mut lease, waited) = pool.checkout().await;
                rec.pool_wait(waited.as_micros() as u64);
                let s = lease.session();
                if s.conn.is_closed() {
                    reconnect_ctx(s, ctx, rng).await?;
                }
                let mut a = routed(s, input, &after, Instant::now(), ctx, pos).await;
                a.set_failed_step(record_steps(&mut s.client, input, rec));
                a.pool_wait = waited;
                Some(a)
            }
        }
    }

    /// The client instance whose ledger holds this client's counts (the
    /// sessions' ledgers are merged separately).
    fn into_client(self) -> C {
        match self {
            Source::Own(s) => s.client,
            Source::Pooled { inputs, .. } => inputs,
        }
    }
}

/// [`run_attempt`], or with `--read-from standby|any` where the route
/// sends it ([`super::reads::attempt`]). A plain function handing back the
/// attempt's future: an `async fn` here would keep a copy of its
/// arguments in every client's state, one more cache line written and
/// read per transaction.
fn routed<'a, C: WorkloadClient>(
    s: &'a mut Session<C>,
    input: &'a C::Input,
    after: &'a impl Fn(&crate::workload::AttemptError) -> AfterError,
    start: Instant,
    ctx: &'a Ctx,
    pos: Option<&'a mut super::reads::Position>,
) -> impl Future<Output = Attempted> + 'a {
    use futures_util::future::Either;
    match (ctx.reads.as_deref(), pos) {
        // Boxed: the routed path's state (a standby's statements, its
        // position queries) would otherwise sit in every client's loop.
        (Some(reads), Some(pos)) => Either::Left(Box::pin(super::reads::attempt(
            s, input, after, start, reads, pos,
        ))),
        _ => Either::Right(run_attempt(s, input, after, start)),
    }
}

/// Records the per-command latencies `client` kept of its last attempt
/// (none for most workloads) and clears them; returns the command that
/// raised the error ending the attempt, if one did.
fn record_steps<C: WorkloadClient>(
    client: &mut C,
    input: &C::Input,
    rec: &Recorder,
) -> Option<usize> {
    let ty = client.tx_type(input);
    let times = client.step_times().filter(|t| !t.is_empty())?;
    rec.steps(ty, times);
    let failed = times.iter().find(|t| t.failed).map(|t| t.step);
    times.clear();
    failed
}

/// One client until `stop`: draw inputs, pace (open loop), run attempts
/// until one commits or the retry policy gives up, record. A lost
/// connection is logged and opened again ([`reconnect`]; a pooled
/// session's at its next checkout). Returns the client instance (for its
/// ledger), with an error when the client stopped early.
async fn client_loop<C: WorkloadClient>(
    mut source: Source<C>,
    ctx: Ctx,
) -> (C, Result<(), StopReason>) {
    let _leaving = Leaving(ctx.running.clone());
    let mut state = DriveState::new(&ctx);
    let result = loop {
        match drive(&mut source, &ctx, &mut state).await {
            Ok(()) => break Ok(()),
            Err(Halt::Stop(reason)) => break Err(reason),
            Err(Halt::Lost) => {
                let Source::Own(s) = &mut source else {
                    unreachable!("pooled clients reconnect at checkout");
                };
                if reconnect_ctx(s, &ctx, &mut state.reconnect_rng)
                    .await
                    .is_none()
                {
                    break Ok(());
                }
            }
        }
    };
    (source.into_client(), result)
}

/// Why [`drive`] returned before the run stopped.
enum Halt {
    /// The client's own connection was lost (and logged): reconnect and
    /// drive on.
    Lost,
    /// The client stops for good.
    Stop(StopReason),
}

/// What a client keeps across reconnects: its retry backoff, reconnect
/// backoff and arrival generators, and the SQLSTATEs whose first failure
/// it reported.
struct DriveState {
    backoff_rng: rand::rngs::SmallRng,
    reconnect_rng: rand::rngs::SmallRng,
    /// Open loop only (allocated once per client: a closed-loop client
    /// carries no schedule).
    open: Option<Box<OpenLoop>>,
    reported: Vec<SqlState>,
    /// Transactions ended so far (for an end by count, and the log).
    ended: u64,
    /// Open loop: the running transaction's schedule lag, µs (for the log).
    lag_us: u64,
    /// `--read-from standby|any`: the session's positions (allocated
    /// only then).
    reads: Option<Box<super::reads::Position>>,
}

/// An open-loop client's arrivals, and a timer precise enough to start
/// each transaction on time (see `pace`).
struct OpenLoop {
    schedule: pace::Schedule,
    timer: Option<pace::HrTimer>,
}

impl DriveState {
    fn new(ctx: &Ctx) -> Self {
        use rand::SeedableRng;
        let open = match ctx.pacing {
            Pacing::Closed => None,
            Pacing::Open {
                rate_per_client, ..
            } => Some(Box::new(OpenLoop {
                schedule: pace::Schedule::new(
                    Instant::now(),
                    rate_per_client,
                    arrival_seed(ctx.seed),
                ),
                timer: pace::HrTimer::new().ok(),
            })),
        };
        DriveState {
            backoff_rng: rand::rngs::SmallRng::seed_from_u64(ctx.seed),
            reconnect_rng: rand::rngs::SmallRng::seed_from_u64(ctx.seed.rotate_left(17)),
            open,
            reported: Vec::new(),
            ended: 0,
            lag_us: 0,
            reads: ctx
                .reads
                .as_ref()
                .map(|_| Box::new(super::reads::Position::new(ctx.id, ctx.seed))),
        }
    }

    /// One transaction of type `ty` ended (`end`, after `tries`, with
    /// `latency_us` when it committed): counted, and logged when there is
    /// a log.
    fn ended(&mut self, ctx: &Ctx, ty: usize, end: TxEnd, tries: u32, latency_us: u64) {
        self.ended += 1;
        if let Some(log) = &ctx.log {
            log.record(&TxRecord {
                client: ctx.id,
                number: self.ended,
                ty,
                at: std::time::SystemTime::now(),
                end,
                latency_us,
                lag_us: self.lag_us,
                tries,
            });
        }
    }

    /// Whether the client has run all its transactions (end by count).
    fn counted_out(&self, ctx: &Ctx) -> bool {
        ctx.transactions.is_some_and(|n| self.ended >= n)
    }
}

/// The seed of a client's arrival schedule, from its backoff seed.
pub(super) fn arrival_seed(backoff_seed: u64) -> u64 {
    backoff_seed ^ 0xa076_1d64_78bd_642f
}

/// When an open loop's next transaction starts: its scheduled time on
/// `open`'s schedule, after waiting for it (the lag recorded, and kept in
/// `lag_us` for the log). `None`: skip this arrival (later than
/// `latency_limit` already); `Err(())`: the run stopped while waiting. (A
/// closed loop starts at once: [`drive`].)
async fn next_start(
    ctx: &Ctx,
    open: &mut OpenLoop,
    latency_limit: Option<Duration>,
    lag_us: &mut u64,
) -> Result<Option<Instant>, ()> {
    let scheduled = open.schedule.next_arrival();
    let stop = &*ctx.stop;
    let on_time = pace::wait_until(
        open.timer.as_ref(),
        scheduled,
        Duration::from_millis(50),
        || stop.load(Ordering::Relaxed),
    )
    .await;
    if !on_time {
        return Err(());
    }
    let lag = scheduled.elapsed();
    let skip = latency_limit.is_some_and(|l| lag > l);
    ctx.rec.lag(lag.as_micros() as u64, skip);
    *lag_us = lag.as_micros() as u64;
    Ok((!skip).then_some(scheduled))
}

/// Runs the client (see [`client_loop`]) until the run stops (`Ok`), its
/// connection is lost ([`Halt::Lost`], logged; a pooled client goes on,
/// its session reconnects at the next checkout) or it stops for good.
async fn drive<C: WorkloadClient>(
    source: &mut Source<C>,
    ctx: &Ctx,
    state: &mut DriveState,
) -> Result<(), Halt> {
    let (rec, retrier, stop) = (&*ctx.rec, &*ctx.retrier, &*ctx.stop);
    let after = |e: &crate::workload::AttemptError| match retrier.classify(e) {
        Verdict::Unknown(_) => AfterError::Unknown,
        _ if e.at_commit => AfterError::Nothing,
        Verdict::ConnectionLost(_) => AfterError::Nothing,
        _ => AfterError::Rollback,
    };
    let pooled = matches!(source, Source::Pooled { .. });
    while !stop.load(Ordering::Relaxed) && !state.counted_out(ctx) {
        // The transaction (its type) is chosen before its start, so that a
        // skipped one has its type too, as pgbench chooses the script
        // before it decides to skip.
        let input = source.next_input();
        let ty = source.tx_type(&input);
        // A closed loop starts now, and its commits slower than a latency
        // limit are late too (pgbench -L without -R); only an open loop
        // makes the future that waits (made at every transaction, it
        // would write its arguments into the client's state).
        let next = match (ctx.pacing, state.open.as_deref_mut()) {
            (Pacing::Open { latency_limit, .. }, Some(open)) => {
                next_start(ctx, open, latency_limit, &mut state.lag_us)
                    .await
                    .map(|s| s.map(|at| (at, latency_limit)))
            }
            _ => Ok(Some((Instant::now(), ctx.closed_limit))),
        };
        let (start, limit) = match next {
            Ok(Some(s)) => s,
            Ok(None) => {
                // Skipped: one of pgbench -t's transactions too.
                state.ended(ctx, ty, TxEnd::Skipped, 0, 0);
                continue;
            }
            Err(()) => return Ok(()),
        };
        if ctx.connect_each
            && let Source::Own(s) = source
        {
            // pgbench -C: this transaction's own connection, its time
            // counted apart from the transaction's latency.
            let t = Instant::now();
            let opened = reopen(s, &ctx.db, ctx.isolation, ctx.unnamed.as_ref()).await;
            rec.connect_time(t.elapsed().as_micros() as u64);
            if opened.is_err() {
                ctx.faults.lost(ctx.id, CONNECTION_FAILURE);
                return Err(Halt::Lost);
            }
        }
        // The emulated user's keying and think time (TPC-C's `think=spec`):
        // closed loop only (an open loop's schedule spaces transactions
        // already), and not part of the transaction's latency.
        let start = match source.pause_before(&input) {
            p if p.is_zero() || !matches!(ctx.pacing, Pacing::Closed) => start,
            p => {
                let stop = &*ctx.stop;
                let slice = Duration::from_millis(50);
                let until = Instant::now() + p;
                // Closed loop: no precise timer (only an open loop has one).
                if !pace::wait_until(None, until, slice, || stop.load(Ordering::Relaxed)).await {
                    return Ok(());
                }
                Instant::now()
            }
        };
        let mut tries = 0u32;
        let mut wasted_us = 0u64;
        let mut pool_wait = Duration::ZERO;
        let (end, latency_us) = loop {
            tries += 1;
            // A closed loop's first attempt starts when the transaction
            // does: the clock was read just now (after any pause, before
            // no connection of `-C`).
            let now = (tries == 1 && matches!(ctx.pacing, Pacing::Closed) && !ctx.connect_each)
                .then_some(start);
            let Some(a) = source
                .attempt(
                    &input,
                    ctx,
                    &mut state.reconnect_rng,
                    after,
                    now,
                    state.reads.as_deref_mut(),
                )
                .await
            else {
                return Ok(()); // stopped while reconnecting
            };
            pool_wait += a.pool_wait;
            let fault = match &a.result {
                Ok(Ended::Committed) => {
                    // Closed loop: the latency leaves out pool waits; open
                    // loop: it counts from the scheduled start, so every
                    // wait is in it (coordinated omission corrected).
                    let elapsed = match a.ended_at {
                        Some(t) => t.saturating_duration_since(start),
                        None => start.elapsed(),
                    };
                    let latency = match ctx.pacing {
                        Pacing::Closed => elapsed.saturating_sub(pool_wait),
                        Pacing::Open { .. } => elapsed,
                    };
                    rec.commit_on(ty, a.host, latency.as_micros() as u64, tries, wasted_us);
                    ctx.faults.committed(a.host, || !source.read_only(&input));
                    if limit.is_some_and(|l| latency > l) {
                        rec.late();
                    }
                    break (TxEnd::Committed, latency.as_micros() as u64);
                }
                Ok(Ended::UserAbort) => {
                    rec.user_abort(ty, tries, wasted_us);
                    break (TxEnd::Failed(*b"P0004"), 0);
                }
                Err(f) => f,
            };
            wasted_us += fault.took.as_micros() as u64;
            let tx = Tries {
                ty,
                tries,
                wasted_us,
            };
            let failed = TxEnd::Failed(match &fault.error.error {
                crate::workload::Cause::Db(e) => e.code().unwrap_or(CONNECTION_FAILURE),
                crate::workload::Cause::Script(_) => SCRIPT_ERROR,
            });
            match after_failure(ctx, state, pooled, &tx, fault, a.host) {
                Next::Retry => {}
                Next::Transaction => break (failed, 0),
                Next::Halt(h) => {
                    state.ended(ctx, ty, failed, tries, 0);
                    return Err(h);
                }
            }
            let delay = retrier.delay(tries + 1, &mut state.backoff_rng);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        };
        state.ended(ctx, ty, end, tries, latency_us);
        if ctx.serve_between {
            pass::serve_others().await;
        }
    }
    Ok(())
}

/// A transaction's tries so far: its type, the tries made (the failed
/// one included) and the time (µs) spent in the failed ones.
struct Tries {
    ty: usize,
    tries: u32,
    wasted_us: u64,
}

/// What a client does after a failed attempt.
enum Next {
    /// Try the same input again (after the retry policy's delay).
    Retry,
    /// Give up on this transaction and go on with the next one.
    Transaction,
    /// Stop driving: the connection is lost, or the client stops for good.
    Halt(Halt),
}

/// Records the failed attempt `a` (on host `host`) of transaction `tx`
/// and decides what comes next: a lost connection or an unknown outcome
/// halts an own session's client (a pooled one goes on with the next
/// transaction, its session reconnects at checkout); a script error stops
/// it; a retryable SQLSTATE is retried until the tries run out or the run
/// stops; anything else fails the transaction, its first example kept per
/// SQLSTATE.
fn after_failure(
    ctx: &Ctx,
    state: &mut DriveState,
    pooled: bool,
    tx: &Tries,
    a: &Failed,
    host: usize,
) -> Next {
    let err = &a.error;
    let (rec, retrier) = (&*ctx.rec, &*ctx.retrier);
    let Tries {
        ty,
        tries,
        wasted_us,
    } = *tx;
    let lost = |code| {
        ctx.faults.lost(ctx.id, code);
        if pooled {
            Next::Transaction
        } else {
            Next::Halt(Halt::Lost)
        }
    };
    let (code, retryable) = match with_end_code(retrier.classify(err), a.ended) {
        Verdict::Unknown(code) => {
            rec.unknown(ty, tries, wasted_us);
            return lost(code);
        }
        Verdict::ConnectionLost(code) => {
            rec.fail_on(ty, host, code, tries, wasted_us);
            return lost(code);
        }
        Verdict::Abort(message) => {
            rec.fail_on(ty, host, SCRIPT_ERROR, tries, wasted_us);
            return Next::Halt(Halt::Stop(StopReason::Script(message)));
        }
        Verdict::Retry(c) => (c, true),
        Verdict::Fail(c) => (c, false),
    };
    if !retryable && !state.reported.contains(&code) {
        state.reported.push(code);
        rec.first_failure(code, || err.describe());
    }
    let key = ErrorKey {
        code,
        reason: err.reason(),
        step: a.step,
        statement: err.statement,
        at_commit: err.at_commit,
    };
    let gave_up = a.rollback_failed.is_some()
        || a.closed
        || !retryable
        || tries >= retrier.max_tries()
        || ctx.stop.load(Ordering::Relaxed);
    if !gave_up {
        rec.error(ty, key);
        return Next::Retry;
    }
    rec.fail_at_on(ty, host, key, tries, wasted_us);
    if a.closed {
        // The server closed the connection after the error.
        return lost(a.ended.unwrap_or(CONNECTION_FAILURE));
    }
    if let Some(e) = &a.rollback_failed {
        return Next::Halt(Halt::Stop(StopReason::RollbackFailed(e.to_string())));
    }
    Next::Transaction
}

/// `verdict` for a lost connection that the client only saw closed
/// (08006, no SQLSTATE from the server), with the SQLSTATE the
/// connection's I/O ended with instead, when the server sent one
/// ([`crate::wire::Conn::end_code`]: e.g. 57P01 from `pg_terminate_backend`).
fn with_end_code(verdict: Verdict, ended: Option<SqlState>) -> Verdict {
    match (verdict, ended) {
        (Verdict::ConnectionLost(CONNECTION_FAILURE), Some(code)) => Verdict::ConnectionLost(code),
        (Verdict::Unknown(CONNECTION_FAILURE), Some(code)) => Verdict::Unknown(code),
        (v, _) => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;
    use crate::workload::tpcb::{Tpcb, TpcbClient};

    /// A TPC-B client of a pooled closed loop, as `run_worker` makes it.
    fn pooled_tpcb_client() -> (Source<TpcbClient>, Ctx) {
        let setup = crate::workload::Setup::new(
            crate::workload::spec("tpcb").expect("registered"),
            Some(1),
            None,
            &Default::default(),
        )
        .expect("a valid setup");
        let w = Tpcb::new(&setup).expect("a valid workload");
        let shared = Arc::new(Shared {
            rec: Arc::new(Recorder::with_hosts(1, 1)),
            retrier: Arc::new(Retrier::new(&crate::model::RetryPolicy::default()).unwrap()),
            stop: Arc::new(AtomicBool::new(false)),
            pacing: Pacing::Closed,
            db: Config::new(),
            isolation: Isolation::ReadCommitted,
            faults: Arc::new(FaultLog::default()),
            unnamed: None,
            transactions: None,
            running: Arc::new(Running::new(1)),
            connect_each: false,
            serve_between: false,
            closed_limit: None,
            log: None,
            reads: None,
        });
        let source = Source::Pooled {
            inputs: w.client(0, 1),
            pool: Arc::new(Pool::new(Vec::new())),
        };
        (
            source,
            Ctx {
                id: 0,
                seed: 1,
                shared,
            },
        )
    }

    /// Issue #42: a client's whole state in a pooled closed loop is its
    /// loop's future (and a few pointers in `pass`). It was 3,160 bytes
    /// (the reconnect path inline, a copy of the target's `Config`, a
    /// whole session in a lease, the open loop's schedule); 10,000 clients
    /// held 63 MB of it at the start, twice. Unoptimised test builds make
    /// futures larger than release builds do, so this bound holds in both.
    #[test]
    fn a_pooled_clients_loop_stays_small() {
        let (source, ctx) = pooled_tpcb_client();
        assert_eq!(std::mem::size_of::<Ctx>(), 24, "a client's context");
        let f = client_loop(source, ctx);
        let size = std::mem::size_of_val(&f);
        assert!(size <= 2048, "a TPC-B client's loop is {size} bytes");
    }
}
