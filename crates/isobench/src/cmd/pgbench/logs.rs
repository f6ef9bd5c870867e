//! pgbench's transaction logs (`-l`, pgbench 15's `doLog`): a file per
//! client thread, `PREFIX.PID` for the first and `PREFIX.PID.N` for
//! thread N, in the current directory (`--log-prefix` may name another).
//! Each line is one transaction (`--sampling-rate` keeps that fraction of
//! them):
//!
//! ```text
//! client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//! ```
//!
//! `time` is the latency in µs, or `skipped`, or `failed` (with
//! `--failures-detailed`: `serialization`, `deadlock`); `schedule_lag`
//! (µs) with `-R`, `retries` unless `--max-tries` is 1. With
//! `--aggregate-interval N`, one line per N seconds instead:
//!
//! ```text
//! interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency
//!     sum_lag sum_lag_2 min_lag max_lag skipped retried retries serialization_failures deadlock_failures
//! ```
//!
//! (the lag fields 0 without `-R`, skipped without `-L`, the retry fields
//! when `--max-tries` is 1, the failure fields without
//! `--failures-detailed`, as pgbench 15 writes them). Files are written
//! through a buffer per thread; the engine calls a thread's sink from that
//! thread only.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow};
use rand::{RngExt, SeedableRng};

use super::flags::{Invocation, LogOptions};
use crate::engine::txlog::{TxEnd, TxLog, TxLogHook, TxRecord, TxSink};

/// What the lines hold besides the transaction (pgbench's globals).
#[derive(Debug, Clone, Copy)]
struct Fields {
    rate: bool,
    limit: bool,
    retries: bool,
    detailed: bool,
}

/// The log files of a run, opened before it (pgbench stops at once when
/// one cannot be opened).
struct Logs {
    files: Mutex<Vec<Option<BufWriter<File>>>>,
    opts: LogOptions,
    fields: Fields,
}

/// The transaction log `inv` asks for (`-l`), its files opened: one per
/// client thread.
///
/// Errors: pgbench's `could not open logfile "...": ...`.
pub fn hook(inv: &Invocation) -> Result<Option<TxLogHook>> {
    let Some(opts) = &inv.log else {
        return Ok(None);
    };
    let pid = std::process::id();
    let mut files = Vec::new();
    for t in 0..inv.threads.max(1) {
        let path = if t == 0 {
            format!("{}.{pid}", opts.prefix)
        } else {
            format!("{}.{pid}.{t}", opts.prefix)
        };
        let f = File::create(&path)
            .map_err(|e| anyhow!("could not open logfile \"{path}\": {}", os_error(&e)))?;
        files.push(Some(BufWriter::with_capacity(64 * 1024, f)));
    }
    let fields = Fields {
        rate: inv.rate.is_some(),
        limit: inv.latency_limit_ms.is_some(),
        retries: inv.max_tries != 1,
        detailed: inv.failures_detailed,
    };
    Ok(Some(TxLogHook(Arc::new(Logs {
        files: Mutex::new(files),
        opts: opts.clone(),
        fields,
    }))))
}

/// An I/O error as C's `%m` words it.
fn os_error(e: &std::io::Error) -> String {
    e.raw_os_error()
        .map(|n| nix::errno::Errno::from_raw(n).desc().to_string())
        .unwrap_or_else(|| e.to_string())
}

impl TxLog for Logs {
    fn sink(&self, thread: usize, _threads: usize) -> Box<dyn TxSink> {
        let file = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(thread)
            .and_then(Option::take);
        let now = micros(SystemTime::now());
        Box::new(ThreadFile {
            file,
            sample: self.opts.sampling_rate,
            rng: rand::rngs::SmallRng::seed_from_u64(now ^ thread as u64),
            fields: self.fields,
            agg: self.opts.aggregate_s.map(|s| Agg {
                every_us: u64::from(s) * 1_000_000,
                // Intervals start on whole seconds of the thread's start.
                start_us: now / 1_000_000 * 1_000_000,
                ..Agg::default()
            }),
        })
    }
}

/// Microseconds since the Unix epoch.
fn micros(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One thread's log file.
struct ThreadFile {
    /// `None` once a write failed (the run goes on, as pgbench's does).
    file: Option<BufWriter<File>>,
    sample: Option<f64>,
    rng: rand::rngs::SmallRng,
    fields: Fields,
    agg: Option<Agg>,
}

/// pgbench's `SimpleStats`: count, sum, sum of squares, min, max.
#[derive(Debug, Default, Clone, Copy)]
struct Simple {
    n: u64,
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
}

impl Simple {
    fn add(&mut self, v: f64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if self.n == 0 || v > self.max {
            self.max = v;
        }
        self.n += 1;
        self.sum += v;
        self.sum2 += v * v;
    }
}

/// The interval being aggregated (`--aggregate-interval`).
#[derive(Debug, Default, Clone, Copy)]
struct Agg {
    every_us: u64,
    start_us: u64,
    cnt: u64,
    latency: Simple,
    lag: Simple,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

impl Agg {
    /// pgbench's `accumStats`.
    fn add(&mut self, t: &TxRecord) {
        if t.end == TxEnd::Skipped {
            self.skipped += 1;
            return;
        }
        if t.tries > 1 {
            self.retries += u64::from(t.tries - 1);
            self.retried += 1;
        }
        match t.end {
            TxEnd::Committed => {
                self.cnt += 1;
                self.latency.add(t.latency_us as f64);
                self.lag.add(t.lag_us as f64);
            }
            TxEnd::Failed(code) if &code == b"40001" => self.serialization += 1,
            TxEnd::Failed(_) => self.deadlock += 1,
            TxEnd::Skipped => {}
        }
    }

    /// The interval's line.
    fn line(&self, f: Fields) -> String {
        let z = Simple::default();
        let lag = if f.rate { self.lag } else { z };
        format!(
            "{} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}\n",
            self.start_us / 1_000_000,
            self.cnt,
            self.latency.sum,
            self.latency.sum2,
            self.latency.min,
            self.latency.max,
            lag.sum,
            lag.sum2,
            lag.min,
            lag.max,
            if f.limit { self.skipped } else { 0 },
            if f.retries { self.retried } else { 0 },
            if f.retries { self.retries } else { 0 },
            if f.detailed { self.serialization } else { 0 },
            if f.detailed { self.deadlock } else { 0 },
        )
    }
}

impl ThreadFile {
    fn write(&mut self, line: &str) {
        if let Some(f) = &mut self.file
            && f.write_all(line.as_bytes()).is_err()
        {
            eprintln!("pgbench: error: could not write to the transaction log");
            self.file = None;
        }
    }

    /// The end of the run at `now_us`: pgbench writes the intervals that
    /// ended, not the one running.
    fn finish_at(&mut self, now_us: u64) {
        self.flush_intervals(now_us);
        if let Some(f) = &mut self.file {
            let _ = f.flush();
        }
    }

    /// Writes every interval that ended by `now_us`, empty ones too.
    fn flush_intervals(&mut self, now_us: u64) {
        while let Some(a) = self.agg
            && a.start_us + a.every_us <= now_us
        {
            let line = a.line(self.fields);
            self.write(&line);
            self.agg = Some(Agg {
                every_us: a.every_us,
                start_us: a.start_us + a.every_us,
                ..Agg::default()
            });
        }
    }
}

impl TxSink for ThreadFile {
    fn record(&mut self, t: &TxRecord) {
        // Aborted transactions (any other error) are not pgbench's to log.
        if matches!(t.end, TxEnd::Failed(c) if &c != b"40001" && &c != b"40P01") {
            return;
        }
        if let Some(rate) = self.sample
            && self.rng.random::<f64>() > rate
        {
            return;
        }
        let now = micros(t.at);
        if self.agg.is_some() {
            self.flush_intervals(now);
            if let Some(a) = &mut self.agg {
                a.add(t);
            }
            return;
        }
        let time = match t.end {
            TxEnd::Committed => t.latency_us.to_string(),
            TxEnd::Skipped => "skipped".into(),
            TxEnd::Failed(code) if self.fields.detailed => {
                if &code == b"40001" {
                    "serialization".into()
                } else {
                    "deadlock".into()
                }
            }
            TxEnd::Failed(_) => "failed".into(),
        };
        let mut line = format!(
            "{} {} {time} {} {} {}",
            t.client,
            t.number,
            t.ty,
            now / 1_000_000,
            now % 1_000_000
        );
        if self.fields.rate {
            line.push_str(&format!(" {}", t.lag_us));
        }
        if self.fields.retries {
            line.push_str(&format!(" {}", t.tries.saturating_sub(1)));
        }
        line.push('\n');
        self.write(&line);
    }

    fn finish(&mut self) {
        self.finish_at(micros(SystemTime::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(end: TxEnd, latency_us: u64, tries: u32, at_us: u64) -> TxRecord {
        TxRecord {
            client: 3,
            number: 7,
            ty: 1,
            at: UNIX_EPOCH + std::time::Duration::from_micros(at_us),
            end,
            latency_us,
            lag_us: 250,
            tries,
        }
    }

    /// A sink writing to a temporary file, removed when the path drops.
    fn sink(fields: Fields, agg_s: Option<u32>, start_us: u64) -> (ThreadFile, tempfile::TempPath) {
        let path = tempfile::NamedTempFile::new().unwrap().into_temp_path();
        let f = ThreadFile {
            file: Some(BufWriter::new(File::create(&path).unwrap())),
            sample: None,
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            fields,
            agg: agg_s.map(|s| Agg {
                every_us: u64::from(s) * 1_000_000,
                start_us,
                ..Agg::default()
            }),
        };
        (f, path)
    }

    /// pgbench 15's per-transaction lines, field by field.
    #[test]
    fn per_transaction_lines_are_pgbenchs() {
        let all = Fields {
            rate: true,
            limit: true,
            retries: true,
            detailed: true,
        };
        let (mut s, path) = sink(all, None, 0);
        s.record(&rec(TxEnd::Committed, 1234, 2, 1_700_000_000_123_456));
        s.record(&rec(TxEnd::Failed(*b"40001"), 0, 3, 1_700_000_001_000_001));
        s.record(&rec(TxEnd::Skipped, 0, 0, 1_700_000_002_000_000));
        s.record(&rec(TxEnd::Failed(*b"42P01"), 0, 1, 1_700_000_002_000_000));
        s.finish_at(1_700_000_003_000_000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "3 7 1234 1 1700000000 123456 250 1\n\
             3 7 serialization 1 1700000001 1 250 2\n\
             3 7 skipped 1 1700000002 0 250 0\n"
        );
        let plain = Fields {
            rate: false,
            limit: false,
            retries: false,
            detailed: false,
        };
        let (mut s, path) = sink(plain, None, 0);
        s.record(&rec(TxEnd::Committed, 99, 1, 5_000_000));
        s.record(&rec(TxEnd::Failed(*b"40P01"), 0, 1, 6_000_000));
        s.finish_at(7_000_000);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "3 7 99 1 5 0\n3 7 failed 1 6 0\n"
        );
    }

    /// `--aggregate-interval`: a line per interval that ended (empty ones
    /// too), 15 fields, the ones not asked for at 0.
    #[test]
    fn aggregated_lines_are_pgbenchs() {
        let f = Fields {
            rate: false,
            limit: false,
            retries: true,
            detailed: true,
        };
        let (mut s, path) = sink(f, Some(2), 10_000_000);
        s.record(&rec(TxEnd::Committed, 100, 1, 10_500_000));
        s.record(&rec(TxEnd::Committed, 300, 2, 11_000_000));
        s.record(&rec(TxEnd::Failed(*b"40001"), 0, 3, 11_500_000));
        // The next transaction is two intervals later: one empty line.
        s.record(&rec(TxEnd::Committed, 50, 1, 16_100_000));
        s.record(&rec(TxEnd::Committed, 70, 1, 17_100_000));
        // The run ends in the interval from 18 s: it is not written.
        s.finish_at(19_000_000);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "10 2 400 100000 100 300 0 0 0 0 0 2 3 1 0\n\
             12 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
             14 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
             16 2 120 7400 50 70 0 0 0 0 0 0 0 0 0\n"
        );
    }
}
