//! pgbench 15's output: the `-P` progress lines (`printProgressReport`)
//! and the summary (`printResults`), from the engine's ticks and the run's
//! record.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::flags::{End, Invocation, builtin_desc};
use crate::engine::Tick;
use crate::model::{Phase, QueryMode, RunRecord};

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
}

impl Acc {
    fn add(&mut self, t: &Tick) {
        let n = t.committed as f64;
        self.committed += t.committed;
        self.sum += n * t.lat_mean_ms;
        self.sum2 += n * (t.lat_stddev_ms.powi(2) + t.lat_mean_ms.powi(2));
        self.failed += t.failed;
        self.retried_tx += t.retried_tx;
        self.retries += t.retried;
        self.skipped += t.skipped;
        self.lag_sum += n * t.lag_ms;
    }
}

/// pgbench's `-P` lines from the engine's ticks, and the window's totals
/// pgbench prints that results.json does not hold (transactions retried).
pub(super) struct Progress {
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
}

impl Progress {
    /// The progress of `inv`'s run (`-P`, `--progress-timestamp`).
    pub(super) fn new(inv: &Invocation) -> Self {
        Progress {
            every_s: inv.progress_s,
            timestamp: inv.progress_timestamp,
            max_tries: inv.max_tries,
            rate: inv.rate.is_some(),
            limit: inv.latency_limit_ms.is_some(),
            state: Mutex::new(ProgressState::default()),
        }
    }

    /// Transactions the measured window retried (pgbench's "retried").
    pub(super) fn retried(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .total
            .retried_tx
    }

    pub(super) fn tick(&self, t: &Tick) {
        if t.phase != Phase::Measuring && t.phase != Phase::Draining {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
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

/// The `transaction type:` of pgbench's summary.
fn transaction_type(inv: &Invocation) -> String {
    let scripts: Vec<String> = inv
        .files
        .iter()
        .map(|(f, _)| f.clone())
        .chain(
            inv.builtins
                .iter()
                .map(|(b, _)| builtin_desc(b).to_string()),
        )
        .collect();
    match scripts.as_slice() {
        [one] => one.clone(),
        _ => "multiple scripts".into(),
    }
}

/// Failed transactions as pgbench 15 counts them: serialization (40001),
/// deadlock (40P01) and all.
fn failures(failed: &BTreeMap<String, u64>) -> (u64, u64, u64) {
    let get = |c: &str| failed.get(c).copied().unwrap_or(0);
    (failed.values().sum(), get("40001"), get("40P01"))
}

/// pgbench's failure lines (`number of failed transactions: N (x%)`, and
/// by kind with `--failures-detailed`), each after `prefix` (`" - "` in a
/// script's block); the percentages are of `total` (0 when it is 0).
fn push_failures(
    o: &mut String,
    prefix: &str,
    counts: (u64, u64, u64),
    total: u64,
    detailed: bool,
) {
    let pct = |n: u64| {
        if total > 0 {
            100.0 * n as f64 / total as f64
        } else {
            0.0
        }
    };
    let (failed, ser, dead) = counts;
    o.push_str(&format!(
        "{prefix}number of failed transactions: {failed} ({:.3}%)\n",
        pct(failed)
    ));
    if detailed {
        o.push_str(&format!(
            "{prefix}number of serialization failures: {ser} ({:.3}%)\n",
            pct(ser)
        ));
        o.push_str(&format!(
            "{prefix}number of deadlock failures: {dead} ({:.3}%)\n",
            pct(dead)
        ));
    }
}

/// pgbench 15's summary (`printResults`) of run `r`: `retried` is the
/// number of transactions retried (from the ticks), `scale` the scale
/// reported.
pub fn summary(inv: &Invocation, r: &RunRecord, scale: u32, retried: u64) -> String {
    let mut o = String::new();
    let pct = |n: u64, of: u64| {
        if of > 0 {
            100.0 * n as f64 / of as f64
        } else {
            0.0
        }
    };
    let (failed, ser, dead) = failures(&r.failed);
    let total_cnt = r.committed + r.skipped + failed;
    o.push_str(&format!("transaction type: {}\n", transaction_type(inv)));
    o.push_str(&format!("scaling factor: {scale}\n"));
    o.push_str(&format!("query mode: {}\n", mode_name(inv.mode)));
    o.push_str(&format!("number of clients: {}\n", inv.clients));
    o.push_str(&format!("number of threads: {}\n", inv.threads));
    o.push_str(&format!("maximum number of tries: {}\n", inv.max_tries));
    match inv.end {
        End::Transactions(n) => {
            o.push_str(&format!("number of transactions per client: {n}\n"));
            o.push_str(&format!(
                "number of transactions actually processed: {}/{}\n",
                r.committed,
                u64::from(n) * u64::from(inv.clients)
            ));
        }
        End::Time(secs) => {
            o.push_str(&format!("duration: {secs} s\n"));
            o.push_str(&format!(
                "number of transactions actually processed: {}\n",
                r.committed
            ));
        }
    }
    push_failures(
        &mut o,
        "",
        (failed, ser, dead),
        total_cnt,
        inv.failures_detailed,
    );
    if inv.max_tries != 1 {
        o.push_str(&format!(
            "number of transactions retried: {retried} ({:.3}%)\n",
            pct(retried, total_cnt)
        ));
        o.push_str(&format!("total number of retries: {}\n", r.retries));
    }
    if r.committed + r.skipped == 0 {
        return o;
    }
    if inv.rate.is_some() && inv.latency_limit_ms.is_some() {
        o.push_str(&format!(
            "number of transactions skipped: {} ({:.3}%)\n",
            r.skipped,
            pct(r.skipped, total_cnt)
        ));
    }
    if let Some(limit) = inv.latency_limit_ms {
        o.push_str(&format!(
            "number of transactions above the {limit:.1} ms latency limit: {}/{} ({:.3}%)\n",
            r.late,
            r.committed,
            pct(r.late, r.committed)
        ));
    }
    if inv.rate.is_some() || inv.progress_s.is_some() || inv.latency_limit_ms.is_some() {
        let (mean, stddev) = mean_stddev(r);
        o.push_str(&format!("latency average = {mean:.3} ms\n"));
        o.push_str(&format!("latency stddev = {stddev:.3} ms\n"));
    } else {
        // pgbench: run time x clients / transactions, failures included.
        o.push_str(&format!(
            "latency average = {:.3} ms{}\n",
            1000.0 * r.duration_s * f64::from(inv.clients) / total_cnt as f64,
            if failed > 0 {
                " (including failures)"
            } else {
                ""
            }
        ));
    }
    if inv.rate.is_some() {
        let lag = r.schedule_lag_ms.unwrap_or_default();
        o.push_str(&format!(
            "rate limit schedule lag: avg {:.3} (max {:.3}) ms\n",
            lag.mean, lag.max
        ));
    }
    // isobench does not time the clients' connections (see the docs).
    o.push_str("initial connection time = 0.000 ms\n");
    o.push_str(&format!(
        "tps = {:.6} (without initial connection time)\n",
        r.tps
    ));
    let per_script = r.transactions.len() > 1;
    if per_script || inv.per_command {
        let weights: Vec<u32> = inv
            .files
            .iter()
            .map(|(_, w)| *w)
            .chain(inv.builtins.iter().map(|(_, w)| *w))
            .collect();
        let descs: Vec<String> = inv
            .files
            .iter()
            .map(|(f, _)| f.clone())
            .chain(
                inv.builtins
                    .iter()
                    .map(|(b, _)| builtin_desc(b).to_string()),
            )
            .collect();
        let total_weight: u32 = weights.iter().sum::<u32>().max(1);
        for (i, t) in r.transactions.iter().enumerate() {
            if per_script {
                let (sf, sser, sdead) = failures(&t.failed);
                let stotal = t.committed + sf;
                let w = weights.get(i).copied().unwrap_or(1);
                o.push_str(&format!(
                    "SQL script {}: {}\n - weight: {w} (targets {:.1}% of total)\n - {} transactions ({:.1}% of total, tps = {:.6})\n",
                    i + 1,
                    descs.get(i).cloned().unwrap_or_else(|| t.name.clone()),
                    100.0 * f64::from(w) / f64::from(total_weight),
                    t.committed,
                    pct(t.committed, r.committed),
                    t.committed as f64 / r.duration_s.max(1e-9)
                ));
                if stotal > 0 {
                    push_failures(
                        &mut o,
                        " - ",
                        (sf, sser, sdead),
                        stotal,
                        inv.failures_detailed,
                    );
                    if inv.max_tries != 1 {
                        // Per script, isobench counts retries but not the
                        // transactions retried (see the docs).
                        let retries = t
                            .attempts
                            .saturating_sub(t.committed + sf + t.user_aborts + t.unknown_outcome);
                        o.push_str(&format!(" - total number of retries: {retries}\n"));
                    }
                }
                if t.committed > 0 {
                    let (mean, stddev) =
                        hist_mean_stddev(&t.latency_histogram).unwrap_or((t.latency_ms.mean, 0.0));
                    o.push_str(&format!(" - latency average = {mean:.3} ms\n"));
                    o.push_str(&format!(" - latency stddev = {stddev:.3} ms\n"));
                }
            }
            if inv.per_command {
                o.push_str(&format!(
                    "{}statement latencies in milliseconds{}:\n",
                    if per_script { " - " } else { "" },
                    if inv.max_tries == 1 {
                        " and failures"
                    } else {
                        ", failures and retries"
                    }
                ));
                for c in &t.commands {
                    // Final failures and retries raised by this command.
                    let (mut failed_here, mut retries_here) = (0u64, 0u64);
                    let mut seen = false;
                    for f in t
                        .failure_reasons
                        .iter()
                        .filter(|f| f.statement.as_deref() == Some(c.command.as_str()))
                    {
                        seen = true;
                        failed_here += f.failed;
                        retries_here += f.attempts - f.failed;
                    }
                    if !seen {
                        failed_here = c.failures;
                    }
                    if inv.max_tries == 1 {
                        o.push_str(&format!(
                            "   {:>11.3}  {failed_here:>10}  {}\n",
                            c.mean_ms, c.command
                        ));
                    } else {
                        o.push_str(&format!(
                            "   {:>11.3}  {failed_here:>10}  {retries_here:>10}  {}\n",
                            c.mean_ms, c.command
                        ));
                    }
                }
            }
        }
    }
    o
}

fn mode_name(m: QueryMode) -> &'static str {
    match m {
        QueryMode::Simple => "simple",
        QueryMode::Extended => "extended",
        QueryMode::Prepared => "prepared",
    }
}

/// Mean and standard deviation (ms) of an encoded HdrHistogram of µs.
fn hist_mean_stddev(encoded: &str) -> Option<(f64, f64)> {
    let h = crate::metrics::decode_histogram(encoded).ok()?;
    (!h.is_empty()).then(|| (h.mean() / 1000.0, h.stdev() / 1000.0))
}

/// The run's committed latencies' mean and standard deviation, ms.
fn mean_stddev(r: &RunRecord) -> (f64, f64) {
    hist_mean_stddev(&r.latency_histogram).unwrap_or((r.latency_ms.mean, 0.0))
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
