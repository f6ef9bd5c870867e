//! Open-loop pacing: when each transaction is due, and a timer precise
//! enough to start it then.
//!
//! Arrivals are a Poisson process per client (pgbench `-R` draws them the
//! same way): inter-arrival times are exponential with mean 1/rate, drawn
//! by inversion, `-ln(U) / rate` with `U` uniform in (0, 1]. Latency counts
//! from the scheduled start, so lateness is never hidden (no coordinated
//! omission) — which makes the timer part of the measurement: tokio's
//! timer wheel has a 1 ms tick, and an `epoll_wait` timeout is whole
//! milliseconds, so a transaction paced by `tokio::time::sleep` starts up
//! to a millisecond late and that lateness shows as latency. [`HrTimer`]
//! waits on a Linux `timerfd` (a high-resolution kernel timer with an
//! absolute deadline) registered with the runtime's reactor instead, so a
//! client wakes within microseconds of its schedule at the cost of one
//! `timerfd_settime` and one `read` per transaction (BENCHMARKS.md,
//! "Open loop").

use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use tokio::io::unix::AsyncFd;

/// One client's arrival schedule: a Poisson process of `rate` tx/s.
#[derive(Debug)]
pub(super) struct Schedule {
    rng: SmallRng,
    rate: f64,
    last: Instant,
}

impl Schedule {
    /// Arrivals at `rate` tx/s (> 0) from `start` on, drawn from `seed`.
    pub(super) fn new(start: Instant, rate: f64, seed: u64) -> Self {
        Schedule {
            rng: SmallRng::seed_from_u64(seed),
            rate,
            last: start,
        }
    }

    /// The next arrival: the previous one plus an exponential gap.
    pub(super) fn next_arrival(&mut self) -> Instant {
        let u: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
        self.last += Duration::from_secs_f64(-u.ln() / self.rate);
        self.last
    }
}

/// A timerfd, owned; `AsyncFd` needs `AsRawFd`.
struct Fd(TimerFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

/// A one-shot high-resolution timer of one client (see the module docs).
pub(super) struct HrTimer {
    fd: AsyncFd<Fd>,
}

impl HrTimer {
    /// A timer on `CLOCK_MONOTONIC` (the clock `Instant` reads on Linux),
    /// registered with the current runtime. Errors: the kernel refused a
    /// timerfd (the caller falls back to tokio's timer).
    pub(super) fn new() -> io::Result<Self> {
        let tfd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // SAFETY: `Fd` owns the timerfd, keeps it open until dropped and
        // always returns the same descriptor.
        let fd = unsafe { AsyncFd::register(Fd(tfd)) }.map_err(|e| e.into_parts().1)?;
        Ok(HrTimer { fd })
    }

    /// Returns at `deadline` or, by a few microseconds, after it; never
    /// before. Errors: the timerfd failed (not expected on Linux).
    pub(super) async fn sleep_until(&self, deadline: Instant) -> io::Result<()> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            // The absolute expiry on CLOCK_MONOTONIC: now on that clock
            // plus what is left. Read right after `now`; if the two reads
            // disagree by a few nanoseconds the loop just waits again.
            let mono = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)?;
            let at = TimeSpec::from(Duration::from(mono) + (deadline - now));
            self.fd.get_ref().0.set(
                Expiration::OneShot(at),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )?;
            let mut guard = self.fd.readable().await?;
            // Consume the expiration count; EAGAIN means readiness was stale.
            let mut buf = [0u8; 8];
            match guard.try_io(|fd| {
                nix::unistd::read(fd.get_ref().0.as_fd(), &mut buf).map_err(io::Error::from)
            }) {
                // Expired: forget the readiness, so the next wait does not
                // start with a read that can only fail.
                Ok(Ok(_)) => guard.clear_ready(),
                Err(_) => {}
                Ok(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => {}
                Ok(Err(e)) => return Err(e),
            }
        }
    }
}

/// Waits until `deadline` without ever returning early: on a [`HrTimer`]
/// when there is one, else on tokio's (millisecond) timer. Waits of more
/// than `slice` are cut into slices so the caller can check for the end
/// of the run between them; returns false when `stop()` became true.
pub(super) async fn wait_until(
    timer: Option<&HrTimer>,
    deadline: Instant,
    slice: Duration,
    stop: impl Fn() -> bool,
) -> bool {
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        let until = deadline.min(now + slice);
        let precise = match timer {
            Some(t) => t.sleep_until(until).await.is_ok(),
            None => false,
        };
        if !precise {
            tokio::time::sleep_until(until.into()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn poisson_gaps_have_the_rate_as_mean_and_are_reproducible() {
        let t0 = Instant::now();
        let mut a = Schedule::new(t0, 2000.0, 7);
        let mut b = Schedule::new(t0, 2000.0, 7);
        let n = 20_000;
        let mut prev = t0;
        let mut sum = 0.0;
        let mut sum_sq = 0.0;
        for _ in 0..n {
            let t = a.next_arrival();
            assert_eq!(t, b.next_arrival());
            assert!(t >= prev, "arrivals never go back in time");
            let gap = (t - prev).as_secs_f64();
            sum += gap;
            sum_sq += gap * gap;
            prev = t;
        }
        let mean = sum / f64::from(n);
        // Exponential: mean 1/rate = 0.5 ms, standard deviation equal to
        // the mean; the sample mean's standard error is 0.5 ms / sqrt(n).
        let se = 0.0005 / f64::from(n).sqrt();
        assert!((mean - 0.0005).abs() < 5.0 * se, "mean gap {mean}");
        let sd = (sum_sq / f64::from(n) - mean * mean).sqrt();
        assert!(
            (sd / mean - 1.0).abs() < 0.05,
            "coefficient of variation {}",
            sd / mean
        );
        assert_ne!(
            Schedule::new(t0, 2000.0, 8).next_arrival(),
            Schedule::new(t0, 2000.0, 7).next_arrival()
        );
    }

    #[test]
    fn the_timer_never_returns_before_its_deadline() {
        runtime().block_on(async {
            let timer = HrTimer::new().expect("timerfd");
            // Deadlines from 0 to 300 µs ahead, including ones already past.
            for i in 0..400u64 {
                let deadline =
                    Instant::now() + Duration::from_micros(i % 300) - Duration::from_micros(5);
                timer.sleep_until(deadline).await.unwrap();
                assert!(Instant::now() >= deadline, "woke before deadline {i}");
            }
        });
    }

    #[test]
    fn wait_until_slices_long_waits_and_honours_stop() {
        runtime().block_on(async {
            let timer = HrTimer::new().expect("timerfd");
            let deadline = Instant::now() + Duration::from_millis(30);
            let checks = std::cell::Cell::new(0u32);
            let done = wait_until(Some(&timer), deadline, Duration::from_millis(5), || {
                checks.set(checks.get() + 1);
                false
            })
            .await;
            assert!(done && Instant::now() >= deadline);
            // 30 ms in slices of 5 ms: the caller was asked at least 6 times.
            assert!(checks.get() >= 6, "{}", checks.get());
            let far = Instant::now() + Duration::from_secs(3600);
            let stopped = wait_until(Some(&timer), far, Duration::from_millis(1), || true).await;
            assert!(!stopped);
            // Without a timerfd, tokio's timer: still never early.
            let deadline = Instant::now() + Duration::from_millis(3);
            assert!(wait_until(None, deadline, Duration::from_millis(50), || false).await);
            assert!(Instant::now() >= deadline);
        });
    }
}
