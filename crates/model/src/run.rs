//! What a run produces as it goes: its phase, per-second points, latency
//! summaries, invariant checks and load reports.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

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
    /// Open loop: mean schedule lag of the transactions that started in
    /// this interval, ms; `None` in a closed loop or when none started.
    #[serde(default)]
    pub lag_ms: Option<f64>,
}

/// Counts over a client's whole life (warm-up and drain included): what the
/// database must hold afterwards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Lifetime {
    pub committed: u64,
    pub unknown_outcome: u64,
}

/// Latency percentiles of committed transactions, in ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencySummary {
    /// Summarises a histogram of µs values; all zero when it is empty.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        }
    }
}

/// How long one command of an attempt took (pgbench `-r`): the command's
/// index in its transaction type's `Workload::step_names`, µs, and
/// whether it raised the error that ended the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepTime {
    pub step: usize,
    pub us: u64,
    pub failed: bool,
}

/// What the host's CPUs did during a run's measured window, from the
/// `cpu` line of `/proc/stat` (Linux; see proc(5)): shares of all CPUs'
/// time over the window, %.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Time not idle and not waiting for I/O (user, nice, system, irq,
    /// softirq, steal), % of all CPUs' time.
    pub busy_pct: f64,
    /// Time the hypervisor gave this virtual machine's CPUs to someone
    /// else (`steal`), % of all CPUs' time.
    pub steal_pct: f64,
    /// CPUs counted (online CPUs).
    pub cpus: u32,
}

/// The result of one invariant check after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvariantResult {
    pub name: String,
    pub ok: bool,
    /// How many violations (anomalies) the check found: 0 when `ok`; for a
    /// check that counts (shifts with nobody on call, dangling references)
    /// the count, else 1.
    #[serde(default)]
    pub violations: u64,
    /// The values compared, or an example of a violation, e.g.
    /// `sum(abalance)=-1234 sum(tbalance)=-1234`.
    pub detail: String,
    /// Commits the clients saw acknowledged that the database does not
    /// hold afterwards, for a check that can tell (the history check of
    /// TPC-B and of pgbench scripts over pgbench's tables: a script's
    /// function that swallowed a serialization failure loses its row too);
    /// `None` for the others. [`super::effective_tps`] follows from it. After a crash with `synchronous_commit=off`
    /// these are the commits the setting trades for speed, not an anomaly;
    /// with durable commits they are violations of the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_commits: Option<u64>,
    /// A check the study declared ([`super::CheckSpec`]: `[[check]]`,
    /// `--check`, `--check-file`), not one of the workload's own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declared: bool,
    /// A declared check's violating rows after the run (its first
    /// [`super::KEPT_ROWS`]); `None` for a count, a check without
    /// violations, and the workload's own checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<super::CheckRows>,
    /// A declared check with `during`: what its samples saw while the
    /// run's load ran. `violations` is then the most the check found at
    /// once, after the run or in any sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<super::DuringCheck>,
    /// For a history checker's class: the committed transactions it
    /// examined, the exposure of a violation rate; `None` for other
    /// checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<u64>,
    /// For a history checker's cycle class: the cycles it shows (its first
    /// cases, at most [`super::MAX_CYCLES`]), each edge with the operations
    /// that prove it; empty for other checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cycles: Vec<super::Cycle>,
    /// For the read-your-writes check of reads on standbys
    /// (`--read-from`): how stale the reads it examined were; `None` for
    /// other checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staleness: Option<Staleness>,
}

/// The names of the checks of the session guarantees that routed reads
/// can break (`--read-from standby|any`; Terry et al. 1994): the first
/// carries the [`Staleness`].
pub const READ_YOUR_WRITES: &str = "read-your-writes (standby reads)";
pub const MONOTONIC_READS: &str = "monotonic reads (routed reads)";

/// How far behind their client's last commit the standby reads of a run
/// were (`--read-from standby|any`; session guarantees after Terry et
/// al., "Session Guarantees for Weakly Consistent Replicated Data", PDIS
/// 1994): over the standby reads that followed a commit of their client.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Staleness {
    /// The reads examined.
    pub reads: u64,
    /// Bytes of WAL between the standby's replay LSN when the read began
    /// and the client's last commit LSN; 0 for a read that was caught up.
    pub bytes: Spread,
    /// Milliseconds from the client's COMMIT returning to the read's
    /// start, for a read that was behind (a lower bound of its snapshot's
    /// age); 0 for a read that was caught up.
    pub ms: Spread,
}

/// Percentiles and maximum of a distribution.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl InvariantResult {
    /// A pass/fail check: one violation when it fails.
    pub fn check(name: &str, ok: bool, detail: String) -> Self {
        InvariantResult {
            name: name.into(),
            ok,
            violations: u64::from(!ok),
            detail,
            lost_commits: None,
            declared: false,
            rows: None,
            during: None,
            checked: None,
            cycles: Vec::new(),
            staleness: None,
        }
    }

    /// A counting check: ok when `violations` is 0.
    pub fn count(name: &str, violations: u64, detail: String) -> Self {
        InvariantResult {
            name: name.into(),
            ok: violations == 0,
            violations,
            detail,
            lost_commits: None,
            declared: false,
            rows: None,
            during: None,
            checked: None,
            cycles: Vec::new(),
            staleness: None,
        }
    }
}

/// How long loading one template took and what it wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// The data variant loaded (`Workload::data_key`).
    #[serde(default)]
    pub data: String,
    #[serde(with = "super::duration_ms", rename = "load_ms")]
    pub elapsed: Duration,
    pub rows: u64,
}
