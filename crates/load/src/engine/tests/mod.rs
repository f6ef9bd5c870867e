//! Tests of the engine loop without PostgreSQL.
//!
//! The engine is tested through the same code the benchmarks run: the
//! real [`run`](super::run), its client threads, retry loop, pool and
//! pacing, and the real tokio-postgres client with [`TxControl`]. Only the
//! server is fake: [`Server`] speaks just enough of the PostgreSQL wire
//! protocol (startup, simple query, Parse/Describe/Bind/Execute/Sync) on a
//! Unix socket, and a [`Fake`] workload tells it, through the SQL text of
//! the statements it runs, what each attempt does: commit, fail with a
//! SQLSTATE, fail at COMMIT, or lose the connection while COMMIT is in
//! flight. So the engine needs no seam of its own (its hot path is
//! untouched), and the errors it classifies are the ones tokio-postgres
//! really returns.
//!
//! Runs are short (a few hundred ms of real time: the engine's clocks are
//! `std::time::Instant` and a timerfd, which tokio's paused time does not
//! drive). The tests assert counts and relations that hold whatever the
//! machine's speed; the only timing bounds are lower bounds that sleeps
//! guarantee (a sleep never ends early).

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::retry::Retrier;
use super::{EngineOutcome, EngineParams, backoff_seed, pace, worker};
use crate::metrics::TxStats;
use crate::model::{Backoff, Isolation, Phase, RetryPolicy};

mod fake;
mod fake_server;

use fake::*;
use fake_server::*;

// ---------------------------------------------------------------------------
// Running the engine.

fn retrier(max_tries: u32, backoff: Backoff) -> Retrier {
    Retrier::new(&RetryPolicy {
        max_tries,
        retry_on: vec!["40001".into()],
        backoff,
    })
    .unwrap()
}

/// A closed-loop run of `clients` without warm-up, measured for 300 ms.
fn params(clients: u32) -> EngineParams {
    EngineParams {
        first_client: 0,
        first_connection: 0,
        clients,
        isolation: Isolation::Serializable,
        retrier: retrier(3, Backoff::None),
        warmup: Duration::ZERO,
        duration: Duration::from_millis(300),
        transactions: None,
        connect_per_transaction: false,
        serve_between_transactions: false,
        tx_log: None,
        seed: 42,
        threads: 1,
        pool_size: None,
        rate: None,
        latency_limit: None,
        host_policy: Default::default(),
        unnamed_statements: false,
        read_route: None,
        commits_by_host: false,
    }
}

struct Ran {
    outcome: EngineOutcome,
    ledger: FakeLedger,
    server: Arc<ServerStats>,
    /// Before the engine started.
    t0: Instant,
    /// The phase when the run returned.
    phase: Phase,
}

impl Ran {
    fn total(&self) -> TxStats {
        self.outcome.measured.total()
    }

    fn failed(&self, code: &str) -> u64 {
        self.total()
            .failed
            .iter()
            .find(|(c, _)| c == code)
            .map_or(0, |(_, n)| n)
    }
}

async fn run(plan: Plan, commit_delay: Duration, params: &EngineParams) -> Ran {
    run_fake(
        Fake {
            plan,
            pause: Duration::ZERO,
        },
        commit_delay,
        params,
    )
    .await
}

async fn run_fake(fake: Fake, commit_delay: Duration, params: &EngineParams) -> Ran {
    let server = Server::start(commit_delay);
    let (phase_tx, phase_rx) = watch::channel(Phase::Connecting);
    let cancel = CancellationToken::new();
    let t0 = Instant::now();
    let (outcome, ledger) = super::run(
        &fake,
        &server.config(),
        params,
        &cancel,
        &phase_tx,
        &mut |_| {},
    )
    .await
    .expect("the engine runs against the fake server");
    let phase = *phase_rx.borrow();
    Ran {
        outcome,
        ledger,
        server: server.stats.clone(),
        t0,
        phase,
    }
}

fn commit_all(_: u32, _: u64, _: u32) -> Act {
    Act::Commit
}

// ---------------------------------------------------------------------------
// Tests.

#[tokio::test]
async fn warmup_transactions_are_not_measured() {
    // One client, each commit ≥ 10 ms: the measured window can hold at
    // most measured_s / 10 ms commits (+1 in flight as it opened). Had the
    // 1.3 s of warm-up (a tick during it, one as it ends) been kept, there
    // would be about five times as many.
    let p = EngineParams {
        clients: 1,
        warmup: Duration::from_millis(1300),
        ..params(1)
    };
    let r = run(commit_all, Duration::from_millis(10), &p).await;
    let measured = r.total().committed;
    let bound = (r.outcome.measured_s / 0.010).floor() as u64 + 1;
    assert!(measured > 0 && measured <= bound, "{measured} > {bound}");
    assert!(
        r.outcome.lifetime.committed > measured,
        "the warm-up's commits count for the invariants: {:?}",
        r.outcome.lifetime
    );
    let per_second: u64 = r.outcome.per_second.iter().map(|s| s.committed).sum();
    assert_eq!(per_second, measured);
    assert!(r.outcome.measured_s >= 0.3 && r.outcome.measured_s < 10.0);
}

/// A workload's pause before each transaction (TPC-C's keying and think
/// times) spaces a closed loop's transactions and stays out of their
/// latency: one client pausing 40 ms before transactions that take 2 ms
/// commits at most one per 40 ms, each in well under 40 ms.
#[tokio::test]
async fn a_pause_before_each_transaction_spaces_them_outside_their_latency() {
    let fake = Fake {
        plan: commit_all,
        pause: Duration::from_millis(40),
    };
    let r = run_fake(fake, Duration::from_millis(2), &params(1)).await;
    let t = r.total();
    let bound = (r.outcome.measured_s / 0.040).ceil() as u64 + 1;
    assert!(
        t.committed > 0 && t.committed <= bound,
        "{} > {bound}",
        t.committed
    );
    assert!(
        t.latency_us.max() < 30_000,
        "the pause is not latency: max {} µs",
        t.latency_us.max()
    );
    // Without the pause the same second holds many more.
    let r = run(commit_all, Duration::from_millis(2), &params(1)).await;
    assert!(r.total().committed > 3 * bound, "{}", r.total().committed);
}

#[tokio::test]
async fn drain_stops_every_client_and_loses_no_count() {
    let p = EngineParams {
        threads: 2,
        ..params(3)
    };
    let r = run(commit_all, Duration::from_millis(2), &p).await;
    assert_eq!(r.phase, Phase::Draining);
    assert!(
        r.outcome.client_errors.is_empty(),
        "{:?}",
        r.outcome.client_errors
    );
    assert!(r.outcome.ledger_complete && !r.outcome.interrupted);
    // What the server committed, the clients saw and the ledger holds.
    let server_commits = r.server.commits.load(Relaxed);
    assert_eq!(r.outcome.lifetime.committed, server_commits);
    assert_eq!(r.ledger.committed, server_commits);
    assert!(r.total().committed <= server_commits);
    for c in 0..3 {
        assert!(r.ledger.tried.iter().any(|t| t.client == c), "client {c}");
    }
    // Stopped: no transaction begins after the run returned.
    let begins = r.server.begins.load(Relaxed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(r.server.begins.load(Relaxed), begins);
    assert_eq!(begins, r.ledger.tried.len() as u64);
}

/// Odd inputs always fail with 40001; inputs 0, 4, 8... fail twice before
/// COMMIT, then commit; inputs 2, 6, 10... fail once at COMMIT, then commit.
fn serialization_failures(_: u32, n: u64, try_no: u32) -> Act {
    match n % 4 {
        1 | 3 => Act::Fail("40001"),
        0 if try_no < 3 => Act::Fail("40001"),
        2 if try_no < 2 => Act::FailAtCommit("40001"),
        _ => Act::Commit,
    }
}

/// pgbench -t: each of 4 clients ends after exactly 25 transactions,
/// committed or failed (retries are tries of one transaction, not more
/// transactions), and the run ends when the last one has; the duration
/// (here far longer than the run) is not used.
#[tokio::test]
async fn a_run_by_count_ends_after_each_clients_transactions() {
    let p = EngineParams {
        transactions: Some(25),
        duration: Duration::from_secs(3600),
        threads: 2,
        ..params(4)
    };
    let started = Instant::now();
    let r = run(serialization_failures, Duration::ZERO, &p).await;
    // Ends with the clients' transactions (well under a second against
    // the fake server), not at the hour-long duration.
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(!r.outcome.interrupted);
    let t = r.total();
    // Inputs 0..25 of each client: 13 commit (0, 2, 4, ...; n % 4 in 0, 2),
    // 12 fail (odd ones) after 3 tries each.
    assert_eq!(t.committed, 4 * 13, "{t:?}");
    assert_eq!(r.failed("40001"), 4 * 12, "{t:?}");
    assert_eq!(t.retried, 4 * (7 + 6 + 12), "{t:?}");
    // Tries: 7 inputs n%4==0 (3 tries), 6 inputs n%4==2 (2), 12 odd (3).
    assert_eq!(t.attempts, 4 * (7 * 3 + 6 * 2 + 12 * 3), "{t:?}");
    for c in 0..4 {
        let inputs = r.ledger.tries_of(c);
        assert_eq!(inputs.len(), 25, "client {c}: {inputs:?}");
        assert_eq!(inputs.last().unwrap().0, 24);
    }
    assert!(r.outcome.measured_s > 0.0 && r.outcome.measured_s < 60.0);
}

#[tokio::test]
async fn serialization_failures_are_retried_up_to_max_tries() {
    let r = run(serialization_failures, Duration::ZERO, &params(2)).await;
    assert!(
        r.outcome.client_errors.is_empty(),
        "{:?}",
        r.outcome.client_errors
    );
    for c in 0..2 {
        let inputs = r.ledger.tries_of(c);
        assert!(inputs.len() > 4, "client {c}: {inputs:?}");
        // The last input may have been cut short by the end of the run.
        for &(n, tries) in &inputs[..inputs.len() - 1] {
            let want = match n % 4 {
                2 => 2,
                _ => 3,
            };
            assert_eq!(tries, want, "client {c} input {n}");
        }
    }
    let t = r.total();
    assert!(t.committed > 0 && r.failed("40001") > 0, "{t:?}");
    assert_eq!(t.failed.total(), r.failed("40001"));
    assert!(t.attempts > t.committed + t.failed.total());
    assert!(t.attempts <= 3 * (t.committed + t.failed.total()));
    // Every failed attempt is counted with its reason (the fake server's
    // message, numbers stripped) and where it failed; the given-up ones
    // add up to the failures.
    let errors: Vec<_> = t.errors.iter().collect();
    assert!(errors.iter().any(|(k, _)| k.at_commit), "{errors:?}");
    assert!(errors.iter().any(|(k, _)| !k.at_commit), "{errors:?}");
    for (k, _) in &errors {
        assert_eq!(&k.code, b"40001");
        assert_eq!(k.reason.map(|r| r.as_str()), Some("fake failure"));
    }
    let gave_up: u64 = errors.iter().map(|(_, n)| n.failed).sum();
    assert_eq!(gave_up, t.failed.total());
    assert!(errors.iter().map(|(_, n)| n.attempts).sum::<u64>() > gave_up);
    // Rolled back after every error before COMMIT, never after a failed
    // COMMIT (which ended the transaction).
    let body_errors = r
        .ledger
        .tried
        .iter()
        .filter(|a| {
            matches!(
                serialization_failures(a.client, a.n, a.try_no),
                Act::Fail(_)
            )
        })
        .count() as u64;
    assert_eq!(r.server.rollbacks.load(Relaxed), body_errors);
}

#[tokio::test]
async fn other_sqlstates_fail_at_once() {
    fn plan(_: u32, n: u64, _: u32) -> Act {
        if n.is_multiple_of(2) {
            Act::Fail("23505")
        } else {
            Act::Fail("40P01") // retryable by default, not by this policy
        }
    }
    let p = EngineParams {
        retrier: retrier(5, Backoff::None),
        ..params(1)
    };
    let r = run(plan, Duration::ZERO, &p).await;
    assert!(
        r.outcome.client_errors.is_empty(),
        "failures do not stop a client"
    );
    assert!(r.ledger.tried.len() > 2);
    assert!(r.ledger.tried.iter().all(|t| t.try_no == 1));
    let t = r.total();
    assert_eq!(t.committed, 0);
    assert!(r.failed("23505") > 0 && r.failed("40P01") > 0, "{t:?}");
    assert_eq!(t.attempts, t.failed.total());
    assert_eq!(
        r.server.rollbacks.load(Relaxed),
        r.ledger.tried.len() as u64
    );
}

#[tokio::test]
async fn retries_wait_the_policys_backoff() {
    fn plan(_: u32, _: u64, _: u32) -> Act {
        Act::Fail("40001")
    }
    let backoff = Backoff::Exponential {
        base: Duration::from_millis(4),
        max: Duration::from_millis(16),
    };
    let p = EngineParams {
        retrier: retrier(4, backoff),
        ..params(1)
    };
    let r = run(plan, Duration::ZERO, &p).await;
    // The engine draws each retry's delay from the client's backoff
    // generator; replay the draws: every retry started at least its delay
    // after the try before it.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(backoff_seed(p.seed, 0));
    let mut retries = 0;
    let mut waited = Duration::ZERO;
    for w in r.ledger.tried.windows(2) {
        let (prev, next) = (w[0], w[1]);
        if next.try_no < 2 {
            continue;
        }
        assert_eq!((next.n, next.try_no), (prev.n, prev.try_no + 1));
        let delay = p.retrier.delay(next.try_no, &mut rng);
        assert!(
            next.at - prev.at >= delay,
            "retry {} of input {} after {:?}, before its backoff {delay:?}",
            next.try_no,
            next.n,
            next.at - prev.at
        );
        retries += 1;
        waited += delay;
    }
    assert!(retries > 3, "{retries} retries");
    assert!(waited > Duration::from_millis(10), "{waited:?}");
    assert!(r.ledger.tried.iter().all(|t| t.try_no <= 4));
}

#[tokio::test]
async fn a_connection_lost_at_commit_is_an_unknown_outcome_and_the_client_reconnects() {
    fn plan(client: u32, n: u64, _: u32) -> Act {
        if client == 0 && n == 3 {
            Act::BreakAtCommit
        } else {
            Act::Commit
        }
    }
    let r = run(plan, Duration::from_millis(1), &params(2)).await;
    let errors = &r.outcome.client_errors;
    assert!(
        errors.is_empty(),
        "a lost connection stops no client: {errors:?}"
    );
    assert_eq!(r.outcome.lifetime.unknown_outcome, 1);
    assert_eq!(r.total().unknown_outcome, 1);
    assert_eq!(r.ledger.unknown, 1, "the workload client was told");
    // Client 0 did not retry the lost COMMIT's input: it reconnected and
    // went on with the next; client 1 never noticed.
    let tries = r.ledger.tries_of(0);
    assert_eq!(tries[..5], [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1)]);
    assert!(tries.len() > 10, "{tries:?}");
    assert!(r.ledger.tries_of(1).len() > 10);
    assert_eq!(r.outcome.lifetime.committed, r.server.commits.load(Relaxed));
    let f = &r.outcome.faults;
    assert_eq!((f.lost, f.reconnects), (1, 1), "{f:?}");
    assert_eq!(f.losses[0].client, 0);
    assert_eq!(f.losses[0].sqlstate, "08006");
    assert_eq!(
        r.server.connections.load(Relaxed),
        3,
        "2 clients + 1 reconnect"
    );
    let (loss, back) = (f.first_loss_s.unwrap(), f.first_commit_after_s.unwrap());
    assert!(back >= loss, "{loss} .. {back}");
}

#[tokio::test]
async fn a_session_the_server_ended_while_idle_is_lost_under_the_servers_sqlstate() {
    // The FATAL 57P01 arrives while no request is in flight: the client's
    // next BEGIN only sees "connection closed"; the loss is still
    // recorded as 57P01 (what the server said), not 08006.
    fn plan(client: u32, n: u64, _: u32) -> Act {
        if client == 0 && n == 2 {
            Act::TerminateAfterCommit
        } else {
            Act::Commit
        }
    }
    let r = run(plan, Duration::from_millis(1), &params(2)).await;
    assert!(r.outcome.client_errors.is_empty());
    let f = &r.outcome.faults;
    assert_eq!((f.lost, f.reconnects), (1, 1), "{f:?}");
    assert_eq!(f.losses[0].client, 0);
    assert_eq!(f.losses[0].sqlstate, "57P01", "{f:?}");
    // The terminated session's COMMIT was acknowledged: not unknown.
    assert_eq!(r.outcome.lifetime.unknown_outcome, 0);
    assert_eq!(r.outcome.lifetime.committed, r.server.commits.load(Relaxed));
    // The next input ran on the new connection.
    let tries = r.ledger.tries_of(0);
    assert!(tries.iter().any(|&(n, _)| n == 3), "{tries:?}");
}

#[tokio::test]
async fn a_pooled_session_that_lost_its_connection_reconnects_at_checkout() {
    fn plan(client: u32, n: u64, _: u32) -> Act {
        if client == 1 && n == 2 {
            Act::BreakAtCommit
        } else {
            Act::Commit
        }
    }
    let p = EngineParams {
        pool_size: Some(1),
        ..params(3)
    };
    let r = run(plan, Duration::from_millis(1), &p).await;
    assert!(
        r.outcome.client_errors.is_empty(),
        "{:?}",
        r.outcome.client_errors
    );
    assert_eq!(r.outcome.lifetime.unknown_outcome, 1);
    let f = &r.outcome.faults;
    assert_eq!((f.lost, f.reconnects), (1, 1), "{f:?}");
    assert_eq!(f.losses[0].client, 1, "the client that saw it");
    for c in 0..3 {
        assert!(r.ledger.tries_of(c).len() > 5, "client {c} went on");
    }
    assert_eq!(
        r.server.connections.load(Relaxed),
        2,
        "1 session + 1 reconnect"
    );
}

#[tokio::test]
async fn clients_wait_for_a_pool_smaller_than_they_are() {
    let p = EngineParams {
        pool_size: Some(1),
        threads: 2, // clamped to the pool's size
        ..params(4)
    };
    let r = run(commit_all, Duration::from_millis(5), &p).await;
    assert!(
        r.outcome.client_errors.is_empty(),
        "{:?}",
        r.outcome.client_errors
    );
    assert_eq!(r.server.connections.load(Relaxed), 1);
    for c in 0..4 {
        assert!(r.ledger.tried.iter().any(|t| t.client == c), "client {c}");
    }
    // The attempts ran on the pool's session: its ledger was merged.
    assert_eq!(r.ledger.committed, r.server.commits.load(Relaxed));
    assert_eq!(r.outcome.lifetime.committed, r.ledger.committed);
    let t = r.total();
    let waits = &r.outcome.measured.waits.pool_us;
    // One wait per attempt (give or take the attempts in flight as the
    // window closed).
    assert!(
        waits.len().abs_diff(t.attempts) <= 4,
        "{} vs {}",
        waits.len(),
        t.attempts
    );
    // Four clients on one connection with 5 ms commits: someone waited
    // for at least one whole commit of another client.
    assert!(waits.max() >= 5_000, "max wait {} µs", waits.max());
    // Closed loop: the latency leaves the pool wait out.
    assert!(
        t.latency_us.value_at_quantile(0.5) < waits.value_at_quantile(0.5),
        "latency p50 {} µs, pool wait p50 {} µs",
        t.latency_us.value_at_quantile(0.5),
        waits.value_at_quantile(0.5)
    );
}

#[tokio::test]
async fn open_loop_starts_no_transaction_before_its_schedule() {
    let p = EngineParams {
        rate: Some(100.0), // 50 tx/s per client
        duration: Duration::from_millis(400),
        ..params(2)
    };
    let r = run(commit_all, Duration::ZERO, &p).await;
    assert!(
        r.outcome.client_errors.is_empty(),
        "{:?}",
        r.outcome.client_errors
    );
    for c in 0..2 {
        // Client c's schedule starts when it does, after t0; its k-th
        // transaction is due at the start plus the first k gaps, which the
        // seed fixes.
        let seed = worker::arrival_seed(backoff_seed(p.seed, c));
        let mut earliest = pace::Schedule::new(r.t0, 50.0, seed);
        let starts: Vec<Instant> = r
            .ledger
            .tried
            .iter()
            .filter(|t| t.client == c)
            .map(|t| t.at)
            .collect();
        assert!(
            starts.len() > 3,
            "client {c}: {} transactions",
            starts.len()
        );
        for (k, at) in starts.iter().enumerate() {
            let due = earliest.next_arrival();
            assert!(*at >= due, "client {c}'s transaction {k} started early");
        }
    }
    // A lag per transaction started.
    let t = r.total();
    let lags = r.outcome.measured.waits.lag_us.len();
    assert!(
        lags.abs_diff(t.committed) <= 2,
        "{lags} lags, {} commits",
        t.committed
    );
    assert_eq!(r.outcome.measured.waits.skipped, 0);
}

#[tokio::test]
async fn open_loop_latency_counts_from_the_schedule() {
    // 200 tx/s offered, at most 50 tx/s served (20 ms commits): the client
    // falls ever further behind its schedule, and that lag is latency.
    let p = EngineParams {
        rate: Some(200.0),
        duration: Duration::from_millis(400),
        ..params(1)
    };
    let r = run(commit_all, Duration::from_millis(20), &p).await;
    let t = r.total();
    let lag = &r.outcome.measured.waits.lag_us;
    assert!(t.committed > 3);
    assert!(lag.max() >= 100_000, "max lag {} µs", lag.max());
    assert!(
        t.latency_us.max() >= 100_000,
        "max latency {} µs: the lag is left out",
        t.latency_us.max()
    );
    assert!(t.latency_us.value_at_quantile(0.5) >= 40_000);
}

#[tokio::test]
async fn open_loop_skips_transactions_beyond_the_latency_limit() {
    let p = EngineParams {
        rate: Some(200.0),
        latency_limit: Some(Duration::from_millis(30)),
        duration: Duration::from_millis(400),
        ..params(1)
    };
    let r = run(commit_all, Duration::from_millis(20), &p).await;
    let w = &r.outcome.measured.waits;
    let t = r.total();
    assert!(t.committed > 0);
    assert!(w.skipped > 0, "{w:?}");
    // A lag per arrival; skipped ones never start, so they are not among
    // the commits too.
    assert!(w.lag_us.len() >= w.skipped + t.committed);
    assert_eq!(r.ledger.tried.len() as u64, r.outcome.lifetime.committed);
    assert!(w.late <= t.committed);
}

/// A shard's clients are numbered after the shards before it
/// (`first_client`) and round-robin over two hosts goes on from its first
/// connection: clients 3..6 of a 2-host DSN start at host 1; with a pool,
/// the pool's sessions are numbered after the clients and they get the
/// hosts, counted over the pool sessions only (shard 1 of pool 1 per
/// shard: its session is connection 1, host 1, whatever its id).
#[test]
fn a_shards_clients_are_numbered_from_its_first_id_and_spread_on() {
    let p = EngineParams {
        first_client: 3,
        first_connection: 3,
        threads: 2,
        ..params(3)
    };
    let w = Fake {
        plan: commit_all,
        pause: Duration::ZERO,
    };
    let (members, pooled) = super::deal(&w, &p, 2, 0, 2);
    let placed = |m: &[Vec<super::worker::Member<_>>]| -> Vec<(u32, usize)> {
        let mut v: Vec<(u32, usize)> = m.iter().flatten().map(|m| (m.id, m.home)).collect();
        v.sort();
        v
    };
    assert_eq!(placed(&members), [(3, 1), (4, 0), (5, 1)]);
    assert!(pooled.iter().all(Vec::is_empty));
    let pooled_from = |first_connection, pool| {
        let p = EngineParams {
            first_connection,
            ..p.clone()
        };
        let (members, pooled) = super::deal(&w, &p, 2, pool, 2);
        assert!(placed(&members).iter().all(|&(_, home)| home == 0));
        placed(&pooled)
    };
    assert_eq!(pooled_from(0, 2), [(6, 0), (7, 1)]);
    assert_eq!(pooled_from(1, 1), [(6, 1)]);
    assert_eq!(pooled_from(2, 1), [(6, 0)]);
}

/// Clients are dealt to threads in consecutive blocks as pgbench deals
/// them, the larger blocks first: 5 over 2 threads are 0..3 and 3..5, 7
/// over 3 are 0..3, 3..5, 5..7; fewer clients than threads leave the last
/// threads none.
#[test]
fn clients_are_dealt_in_pgbenchs_blocks() {
    let dealt = |n, t| super::blocks(n, t).collect::<Vec<_>>();
    assert_eq!(dealt(5, 2), [0..3, 3..5]);
    assert_eq!(dealt(7, 3), [0..3, 3..5, 5..7]);
    assert_eq!(dealt(2, 3), [0..1, 1..2, 2..2]);
    assert_eq!(dealt(4, 1).len(), 1);
    assert_eq!(dealt(4, 1)[0], 0..4);
}

/// A worker of 7 clients, and the sender of its end.
fn draining() -> (
    worker::Handle<()>,
    tokio::sync::oneshot::Sender<worker::Done<()>>,
) {
    let (tx, done) = tokio::sync::oneshot::channel();
    (worker::Handle { clients: 7, done }, tx)
}

/// Issue #51: 50,000 clients behind a pooler's pool of 50 take about
/// 50 s to end the transactions they have in flight when the window
/// closes. A drain that sees transactions ending waits for them, however
/// long that takes (up to the cap); one that sees none ending for the
/// stall time abandons the workers still busy, their clients' outcomes
/// unknown and the ledger incomplete.
#[tokio::test]
async fn stopping_waits_while_transactions_end_and_gives_up_when_none_do() {
    let stall = Duration::from_millis(200);
    let most = Duration::from_secs(60);

    // Ending transactions all along: done after 5 stall times, kept.
    let ended = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (handle, tx) = draining();
    let bump = ended.clone();
    let ticker = tokio::spawn(async move {
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            bump.fetch_add(1, Relaxed);
        }
        let _ = tx.send(worker::Done {
            errors: Vec::new(),
            ledger: (),
            ledger_complete: true,
        });
    });
    let t = Instant::now();
    let d = super::drain(vec![handle], || ended.load(Relaxed), stall, most).await;
    ticker.await.unwrap();
    assert!(t.elapsed() >= 4 * stall, "{:?}", t.elapsed());
    assert!(d.errors.is_empty(), "{:?}", d.errors.len());
    assert!(d.ledger_complete);
    assert_eq!(d.lifetime.unknown_outcome, 0);

    // Nothing ends: abandoned after the stall time, not the cap.
    let (handle, _tx) = draining();
    let t = Instant::now();
    let d = super::drain(vec![handle], || 42, stall, most).await;
    assert!(
        t.elapsed() >= stall && t.elapsed() < most / 10,
        "{:?}",
        t.elapsed()
    );
    assert!(!d.ledger_complete);
    assert_eq!(d.lifetime.unknown_outcome, 7);
    assert_eq!(d.errors.len(), 1);
}
