//! Lost connections: what a run's clients log when a connection breaks
//! (when, who, the SQLSTATE), the reconnects, and the first commit after
//! a burst of losses (the end of the outage); and the backoff between
//! reconnect attempts.
//!
//! Losses are rare, so the log is a mutex shared by every client thread.
//! The only thing on the hot path is one relaxed load of an atomic flag
//! per commit ([`FaultLog::committed`]), which is only ever set while an
//! outage is open.

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

/// A run's connection losses and reconnects; see the module docs.
#[derive(Default)]
pub(super) struct FaultLog {
    /// Set at a loss, cleared by the first commit after it.
    awaiting_commit: AtomicBool,
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
}

impl FaultLog {
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

    /// A transaction committed: ends an open outage. One relaxed load
    /// unless an outage is open.
    #[inline]
    pub(super) fn committed(&self) {
        if self.awaiting_commit.load(Ordering::Relaxed) {
            let now = Instant::now();
            let mut g = self.inner();
            if g.first_commit_after.is_none() && g.first_loss.is_some() {
                g.first_commit_after = Some(now);
            }
            self.awaiting_commit.store(false, Ordering::Relaxed);
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
        log.committed(); // no loss yet: nothing to end
        assert_eq!(log.events(t0).first_commit_after_s, None);
        log.lost(1, *b"57P02");
        log.committed(); // a commit that slipped in ...
        std::thread::sleep(Duration::from_millis(20));
        log.lost(2, *b"57P02"); // ... before the burst's last loss
        std::thread::sleep(Duration::from_millis(20));
        log.committed();
        log.reconnected();
        let e = log.events(t0);
        assert_eq!(e.lost, 2);
        assert_eq!(e.reconnects, 1);
        assert_eq!(e.losses[1].client, 2);
        assert_eq!(e.losses[1].sqlstate, "57P02");
        let first = e.first_loss_s.unwrap();
        let end = e.first_commit_after_s.unwrap();
        assert!(end - first >= 0.040, "{first} .. {end}");
    }
}
