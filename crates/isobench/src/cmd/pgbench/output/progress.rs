//! pgbench 15's `-P` progress lines (`printProgressReport`), from the
//! engine's ticks, and the measured window's totals that pgbench prints
//! and results.json does not hold (transactions retried, connection
//! times).

use std::sync::Mutex;

use super::super::flags::Invocation;
use crate::engine::Tick;
use crate::model::Phase;

/// Sums of the measured window's ticks since the last progress line.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Acc {
    committed: u64,
    /// Σ n·mean and Σ n·(stddev² + mean²) of the latencies, ms.
    sum: f64,
    sum2: f64,
    failed: u64,
    retried_tx: u64,
    retries: u64,
    skipped: u64,
    lag_sum: f64,
    /// `-C`: the connections' time, ms.
    connect_ms: f64,
}

impl Acc {
    fn add(&mut self, t: &Tick) {
        let n = t.committed as f64;
        self.committed += t.committed;
        self.sum += n * t.lat_mean_ms;
        self.sum2 += n * (t.lat_stddev_ms.powi(2) + t.lat_mean_ms.powi(2));
        // pgbench's failures: serialization failures and deadlocks (any
        // other error aborts the client).
        self.failed += t.failed_by_kind[0] + t.failed_by_kind[1];
        self.retried_tx += t.retried_tx;
        self.retries += t.retried;
        self.skipped += t.skipped;
        self.lag_sum += n * t.lag_ms;
        self.connect_ms += t.connect_ms;
    }
}

/// What the summary needs of the measured window's ticks.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    /// Transactions retried at least once (pgbench's "retried").
    pub retried_tx: u64,
    /// The clients' first connections, ms (`initial connection time`).
    pub initial_connect_ms: f64,
    /// `-C`: every transaction's connection and disconnection, ms.
    pub connect_ms: f64,
}

/// pgbench's `-P` lines from the engine's ticks, and the window's totals
/// pgbench prints that results.json does not hold (transactions retried).
pub struct Progress {
    every_s: Option<u32>,
    timestamp: bool,
    max_tries: u32,
    rate: bool,
    limit: bool,
    state: Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    since_line: Acc,
    total: Acc,
    /// `elapsed` of the last line (s).
    last_s: f64,
    initial_connect_ms: f64,
}

impl Progress {
    /// The progress of `inv`'s run (`-P`, `--progress-timestamp`).
    pub fn new(inv: &Invocation) -> Self {
        Progress {
            every_s: inv.progress_s,
            timestamp: inv.progress_timestamp,
            max_tries: inv.max_tries,
            rate: inv.rate.is_some(),
            limit: inv.latency_limit_ms.is_some(),
            state: Mutex::new(ProgressState::default()),
        }
    }

    /// The measured window's totals the summary needs.
    pub fn totals(&self) -> Totals {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Totals {
            retried_tx: s.total.retried_tx,
            initial_connect_ms: s.initial_connect_ms,
            connect_ms: s.total.connect_ms,
        }
    }

    /// One tick of the engine: its figures added, and a `progress:` line
    /// on stderr when one is due.
    pub fn tick(&self, t: &Tick) {
        if t.phase != Phase::Measuring && t.phase != Phase::Draining {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.initial_connect_ms = t.initial_connect_ms;
        s.since_line.add(t);
        s.total.add(t);
        let Some(every) = self.every_s else { return };
        let now = t.elapsed.as_secs_f64();
        // Ticks come about once a second: a line when the next multiple of
        // -P is reached (within a tick's jitter).
        let next = (s.last_s / f64::from(every)).round() * f64::from(every) + f64::from(every);
        if now + 0.05 < next {
            return;
        }
        let a = s.since_line;
        let run = (now - s.last_s).max(1e-9);
        let line = progress_line(
            a,
            run,
            now,
            self.timestamp,
            self.max_tries,
            self.rate,
            self.limit,
        );
        eprintln!("{line}");
        s.since_line = Acc::default();
        s.last_s = now;
    }
}

/// One `progress:` line of pgbench 15 (`printProgressReport`).
pub(super) fn progress_line(
    a: Acc,
    run_s: f64,
    elapsed_s: f64,
    timestamp: bool,
    max_tries: u32,
    rate: bool,
    limit: bool,
) -> String {
    let (lat, stddev, lag) = if a.committed > 0 {
        let n = a.committed as f64;
        let mean = a.sum / n;
        (
            mean,
            (a.sum2 / n - mean * mean).max(0.0).sqrt(),
            a.lag_sum / n,
        )
    } else {
        (0.0, 0.0, 0.0)
    };
    let tbuf = if timestamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        format!("{:.3} s", now.as_secs_f64())
    } else {
        format!("{elapsed_s:.1} s")
    };
    let mut line = format!(
        "progress: {tbuf}, {:.1} tps, lat {lat:.3} ms stddev {stddev:.3}, {} failed",
        a.committed as f64 / run_s,
        a.failed
    );
    if rate {
        line.push_str(&format!(", lag {lag:.3} ms"));
        if limit {
            line.push_str(&format!(", {} skipped", a.skipped));
        }
    }
    if max_tries != 1 {
        line.push_str(&format!(
            ", {} retried, {} retries",
            a.retried_tx, a.retries
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_are_pgbench_15s() {
        let a = Acc {
            committed: 10,
            sum: 10.0 * 2.0,
            sum2: 10.0 * (1.0 + 4.0),
            failed: 3,
            retried_tx: 4,
            retries: 6,
            skipped: 1,
            lag_sum: 10.0 * 0.5,
            connect_ms: 0.0,
        };
        assert_eq!(
            progress_line(a, 2.0, 4.0, false, 1, false, false),
            "progress: 4.0 s, 5.0 tps, lat 2.000 ms stddev 1.000, 3 failed"
        );
        assert_eq!(
            progress_line(a, 2.0, 4.0, false, 3, true, true),
            "progress: 4.0 s, 5.0 tps, lat 2.000 ms stddev 1.000, 3 failed, lag 0.500 ms, 1 skipped, 4 retried, 6 retries"
        );
    }
}
