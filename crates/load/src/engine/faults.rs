//! Lost connections: what a run's clients log when a connection breaks
//! (when, who, the SQLSTATE), the reconnects, and the first commit after
//! a burst of losses (the end of the outage); and the backoff between
//! reconnect attempts.
//!
//! Losses are rare, so the log is a mutex shared by every client thread.
//! The only thing on the hot path is one relaxed load of an atomic flag
//! per commit ([`FaultLog::committed`]), which is only ever set while an
//! outage is open.
//!
//! With a multi-host DSN and a failover planned, the log also keeps which
//! host acknowledged each read-write commit, as runs of commits in a row
//! on one host ([`HostRun`]): a failover's writes accepted by two
//! primaries are counted from them ([`writes_to_two_primaries`]). That
//! costs the mutex per commit, in those runs only.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::RngExt;

use crate::model::{ConnectionLoss, MAX_LOSSES_KEPT, SqlState};

/// Losses at most this far apart are one burst (a crash ends every
/// backend within milliseconds; `pg_terminate_backend` of all clients
/// likewise): the outage lasts until the first commit after the burst's
/// last loss, so that a commit that slipped in between does not end it.
const BURST: Duration = Duration::from_secs(1);

/// First wait before reconnecting, then doubled after every failed try.
pub(super) const RECONNECT_BASE: Duration = Duration::from_millis(10);

/// Longest wait between reconnect tries.
pub(super) const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// How long to wait before reconnect try `failed + 1`, after `failed`
/// failed tries (0 for the first): the cap is [`RECONNECT_BASE`] doubled
/// `failed` times, at most [`RECONNECT_MAX`]; the wait is uniform between
/// half the cap and the cap ("equal jitter"), so that clients that lost
/// their connections together do not all come back at once.
pub(super) fn reconnect_delay(failed: u32, rng: &mut impl rand::Rng) -> Duration {
    let cap = RECONNECT_BASE
        .saturating_mul(1u32 << failed.min(16))
        .min(RECONNECT_MAX);
    let half = cap.as_nanos() as u64 / 2;
    Duration::from_nanos(half + rng.random_range(0..=half))
}

/// Host runs kept in a run's log ([`FaultEvents::host_runs`]); a
/// history that switches hosts more often keeps its first ones, and the
/// commits after them are not counted.
pub const MAX_HOST_RUNS: usize = 100_000;

/// A run's connection losses and reconnects; see the module docs.
#[derive(Default)]
pub(super) struct FaultLog {
    /// Set at a loss, cleared by the first commit after it.
    awaiting_commit: AtomicBool,
    /// Whether commits are logged by host (a multi-host DSN and a
    /// failover planned).
    by_host: bool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    losses: Vec<(Instant, u32, SqlState)>,
    lost: u64,
    reconnects: u64,
    first_loss: Option<Instant>,
    /// The last loss of the first burst; `None` once it is over.
    burst_last: Option<Instant>,
    first_commit_after: Option<Instant>,
    /// (host, first commit, last commit, commits) in time order.
    host_runs: Vec<(usize, Instant, Instant, u64)>,
}

/// The log with times in s since the measured window began.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultEvents {
    pub losses: Vec<ConnectionLoss>,
    /// All losses (`losses` keeps the first [`MAX_LOSSES_KEPT`]).
    pub lost: u64,
    pub reconnects: u64,
    pub first_loss_s: Option<f64>,
    /// The first commit after the first burst of losses.
    pub first_commit_after_s: Option<f64>,
    /// The read-write commits by host, in time order, when kept (a
    /// multi-host DSN and a failover planned); empty otherwise.
    pub host_runs: Vec<HostRun>,
}

/// Read-write transactions that committed in a row on one host of a
/// multi-host DSN (host: its index in the DSN); times in s since the
/// measured window began.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostRun {
    pub host: usize,
    pub first_s: f64,
    pub last_s: f64,
    pub commits: u64,
}

/// Writes accepted by two primaries (split brain) after a failover at
/// `kill_s`, from the run's `runs` of commits by host, up to `until_s`
/// (the next failover, or the end): the host of the first run after the
/// kill on another host than the one that was writing is the new
/// primary; every commit on any other host after the new primary's first
/// is a write that a second primary accepted. `None` when no host took
/// writes after the kill, or the log was not kept.
///
/// A commit acknowledged by the old primary after the kill but before
/// the new primary's first commit is not counted: it was in flight when
/// the old primary died and only one primary took it.
pub fn writes_to_two_primaries(runs: &[HostRun], kill_s: f64, until_s: f64) -> Option<u64> {
    let writing = runs
        .iter()
        .rev()
        .find(|r| r.first_s < kill_s)
        .map(|r| r.host);
    let (at, new) = runs
        .iter()
        .enumerate()
        .find(|(_, r)| r.first_s >= kill_s && r.first_s < until_s && Some(r.host) != writing)?;
    Some(
        runs[at + 1..]
            .iter()
            .take_while(|r| r.first_s < until_s)
            .filter(|r| r.host != new.host)
            .map(|r| r.commits)
            .sum(),
    )
}

impl FaultLog {
    /// A log that keeps commits by host when `by_host` (a multi-host DSN
    /// and a failover planned).
    pub(super) fn new(by_host: bool) -> Self {
        FaultLog {
            by_host,
            ..FaultLog::default()
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Client `client` lost its connection with SQLSTATE `code`.
    pub(super) fn lost(&self, client: u32, code: SqlState) {
        let now = Instant::now();
        let mut g = self.inner();
        g.lost += 1;
        if g.losses.len() < MAX_LOSSES_KEPT {
            g.losses.push((now, client, code));
        }
        match (g.first_loss, g.burst_last) {
            (None, _) => {
                g.first_loss = Some(now);
                g.burst_last = Some(now);
            }
            (Some(_), Some(last)) if now.duration_since(last) <= BURST => {
                g.burst_last = Some(now);
                g.first_commit_after = None;
            }
            _ => {
                g.burst_last = None;
                return;
            }
        }
        self.awaiting_commit.store(true, Ordering::Relaxed);
    }

    /// A client got a connection back.
    pub(super) fn reconnected(&self) {
        self.inner().reconnects += 1;
    }

    /// A transaction committed on DSN host `host` (`writes` says whether
    /// it was a read-write one, asked only when commits are logged by
    /// host): ends an open outage, and extends the host runs. Otherwise
    /// one relaxed load unless an outage is open.
    #[inline]
    pub(super) fn committed(&self, host: usize, writes: impl FnOnce() -> bool) {
        if self.by_host && writes() {
            self.on_host(host);
        }
        if self.awaiting_commit.load(Ordering::Relaxed) {
            let now = Instant::now();
            let mut g = self.inner();
            if g.first_commit_after.is_none() && g.first_loss.is_some() {
                g.first_commit_after = Some(now);
            }
            self.awaiting_commit.store(false, Ordering::Relaxed);
        }
    }

    fn on_host(&self, host: usize) {
        let now = Instant::now();
        let mut g = self.inner();
        let runs = &mut g.host_runs;
        let kept = runs.len();
        match runs.last_mut() {
            Some((h, _, last, n)) if *h == host => {
                *last = now;
                *n += 1;
            }
            _ if kept < MAX_HOST_RUNS => runs.push((host, now, now, 1)),
            _ => {}
        }
    }

    /// The log relative to `window_start`.
    pub(super) fn events(&self, window_start: Instant) -> FaultEvents {
        let g = self.inner();
        let s = |t: Instant| match t.checked_duration_since(window_start) {
            Some(d) => d.as_secs_f64(),
            None => -window_start.duration_since(t).as_secs_f64(),
        };
        FaultEvents {
            losses: g
                .losses
                .iter()
                .map(|&(t, client, code)| ConnectionLoss {
                    t_s: s(t),
                    client,
                    sqlstate: String::from_utf8_lossy(&code).into_owned(),
                })
                .collect(),
            lost: g.lost,
            reconnects: g.reconnects,
            first_loss_s: g.first_loss.map(s),
            first_commit_after_s: g.first_commit_after.map(s),
            host_runs: g
                .host_runs
                .iter()
                .map(|&(host, first, last, commits)| HostRun {
                    host,
                    first_s: s(first),
                    last_s: s(last),
                    commits,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn reconnect_waits_double_from_10_ms_to_1_s_with_jitter() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for (failed, cap_ms) in [(0, 10), (1, 20), (2, 40), (6, 640), (7, 1000), (40, 1000)] {
            let cap = Duration::from_millis(cap_ms);
            let mut seen = Vec::new();
            for _ in 0..200 {
                let d = reconnect_delay(failed, &mut rng);
                assert!(d >= cap / 2 && d <= cap, "{failed}: {d:?} vs {cap:?}");
                seen.push(d);
            }
            seen.sort();
            seen.dedup();
            assert!(seen.len() > 100, "jittered, not fixed");
        }
    }

    #[test]
    fn the_outage_ends_at_the_first_commit_after_the_burst() {
        let log = FaultLog::default();
        let t0 = Instant::now();
        log.committed(0, || true); // no loss yet: nothing to end
        assert_eq!(log.events(t0).first_commit_after_s, None);
        log.lost(1, *b"57P02");
        log.committed(0, || true); // a commit that slipped in ...
        std::thread::sleep(Duration::from_millis(20));
        log.lost(2, *b"57P02"); // ... before the burst's last loss
        std::thread::sleep(Duration::from_millis(20));
        log.committed(0, || true);
        log.reconnected();
        let e = log.events(t0);
        assert_eq!(e.lost, 2);
        assert_eq!(e.reconnects, 1);
        assert_eq!(e.losses[1].client, 2);
        assert_eq!(e.losses[1].sqlstate, "57P02");
        let first = e.first_loss_s.unwrap();
        let end = e.first_commit_after_s.unwrap();
        assert!(end - first >= 0.040, "{first} .. {end}");
        // One host: no log by host.
        assert!(e.host_runs.is_empty());
    }

    #[test]
    fn commits_are_logged_by_host_with_several_hosts_reads_left_out() {
        let log = FaultLog::new(true);
        let t0 = Instant::now();
        for (host, writes) in [
            (0, true),
            (0, true),
            (1, false),
            (0, true),
            (1, true),
            (0, true),
        ] {
            log.committed(host, || writes);
        }
        let runs = log.events(t0).host_runs;
        let shape: Vec<(usize, u64)> = runs.iter().map(|r| (r.host, r.commits)).collect();
        assert_eq!(shape, [(0, 3), (1, 1), (0, 1)]);
        assert!(runs.windows(2).all(|w| w[0].last_s <= w[1].first_s));
    }

    fn run(host: usize, first_s: f64, last_s: f64, commits: u64) -> HostRun {
        HostRun {
            host,
            first_s,
            last_s,
            commits,
        }
    }

    #[test]
    fn writes_to_two_primaries_are_those_beside_the_new_primary() {
        // A clean failover at 5 s: host 0 writes, an in-flight commit is
        // acknowledged just after the kill, host 1 takes over.
        let clean = [run(0, 0.0, 5.001, 500), run(1, 7.0, 15.0, 800)];
        assert_eq!(writes_to_two_primaries(&clean, 5.0, f64::MAX), Some(0));
        // Nothing committed after the kill: not measured.
        assert_eq!(writes_to_two_primaries(&clean[..1], 5.0, f64::MAX), None);
        // Split brain: the old primary goes on taking writes beside the
        // new one.
        let split = [
            run(0, 0.0, 5.0, 500),
            run(1, 7.0, 7.5, 10),
            run(0, 7.6, 7.6, 1),
            run(1, 7.7, 8.0, 20),
            run(0, 8.1, 8.2, 3),
            run(1, 8.3, 15.0, 700),
        ];
        assert_eq!(writes_to_two_primaries(&split, 5.0, f64::MAX), Some(4));
        // A second failover at 10 s back to host 0: its writes after it
        // belong to that failover, not to the first.
        let back = [
            run(0, 0.0, 5.0, 500),
            run(1, 7.0, 10.0, 300),
            run(0, 12.0, 15.0, 300),
        ];
        assert_eq!(writes_to_two_primaries(&back, 5.0, 10.0), Some(0));
        assert_eq!(writes_to_two_primaries(&back, 10.0, f64::MAX), Some(0));
        // No host was writing before the kill: the first after it is the
        // new primary.
        assert_eq!(
            writes_to_two_primaries(&[run(1, 7.0, 8.0, 5)], 5.0, f64::MAX),
            Some(0)
        );
    }
}
