//! Recording what clients do, without a central bottleneck.
//!
//! Each client thread owns a [`Recorder`]: a mutex that only that thread's
//! clients lock on their hot path (uncontended, ~20 ns) and that the engine's ticker locks
//! once a second to [`Recorder::drain_into`] an [`Interval`]. Latencies go
//! into HDR histograms (Gil Tene's HdrHistogram: fixed memory, 3
//! significant digits), so memory stays flat however long a run lasts and
//! histograms merge exactly across clients, ticks, and machines.

pub mod host;

use crate::model::{FailureReason, LatencySummary, Lifetime, SqlState};
use std::sync::Mutex;

use hdrhistogram::Histogram;

/// Failure counts by SQLSTATE; a short vector, since a run sees few codes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FailureCounts(Vec<(SqlState, u64)>);

impl FailureCounts {
    pub fn add(&mut self, code: SqlState, n: u64) {
        match self.0.iter_mut().find(|(c, _)| *c == code) {
            Some((_, count)) => *count += n,
            None => self.0.push((code, n)),
        }
    }

    pub fn merge(&mut self, other: &FailureCounts) {
        for (code, n) in &other.0 {
            self.add(*code, *n);
        }
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    pub fn clear(&mut self) {
        self.0.iter_mut().for_each(|(_, n)| *n = 0);
    }

    /// `(SQLSTATE, count)` pairs with a non-zero count, sorted by code.
    pub fn iter(&self) -> impl Iterator<Item = (String, u64)> + '_ {
        let mut v: Vec<(String, u64)> = self
            .0
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (String::from_utf8_lossy(c).into_owned(), *n))
            .collect();
        v.sort();
        v.into_iter()
    }
}

/// What one failed attempt failed with, and where: the key failures are
/// counted by in [`ErrorCounts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorKey {
    pub code: SqlState,
    /// [`FailureReason::of`] the server's error.
    pub reason: Option<FailureReason>,
    /// The command that raised it (index into the type's
    /// `Workload::step_names`), for a workload that times its commands.
    pub step: Option<usize>,
    /// The statement that raised it, for a workload that names its
    /// statements (`AttemptError::statement`).
    pub statement: Option<&'static str>,
    /// The error came from COMMIT (or an autocommit statement that is the
    /// transaction).
    pub at_commit: bool,
}

/// Failed attempts and given-up transactions by [`ErrorKey`]; a short
/// vector (a run sees few distinct keys), so counting one allocates
/// nothing once its key has been seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorCounts(Vec<(ErrorKey, ErrorCount)>);

/// Counts under one [`ErrorKey`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorCount {
    /// Attempts that failed with it, retried ones included.
    pub attempts: u64,
    /// Transactions that gave up after it.
    pub failed: u64,
}

impl ErrorCounts {
    pub fn add(&mut self, key: ErrorKey, n: ErrorCount) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, c)) => {
                c.attempts += n.attempts;
                c.failed += n.failed;
            }
            None => self.0.push((key, n)),
        }
    }

    pub fn merge(&mut self, other: &ErrorCounts) {
        for (k, n) in &other.0 {
            self.add(*k, *n);
        }
    }

    pub fn clear(&mut self) {
        self.0
            .iter_mut()
            .for_each(|(_, c)| *c = ErrorCount::default());
    }

    /// The keys with a non-zero count, most attempts first.
    pub fn iter(&self) -> impl Iterator<Item = (ErrorKey, ErrorCount)> + '_ {
        let mut v: Vec<(ErrorKey, ErrorCount)> = self
            .0
            .iter()
            .filter(|(_, c)| c.attempts > 0 || c.failed > 0)
            .copied()
            .collect();
        v.sort_by_key(|(_, c)| std::cmp::Reverse((c.attempts, c.failed)));
        v.into_iter()
    }
}

/// What the transactions of one type did during one tick (or a whole run,
/// once merged).
#[derive(Debug, Clone)]
pub struct TxStats {
    /// Latency of committed transactions, first attempt start to commit, µs.
    pub latency_us: Histogram<u64>,
    pub committed: u64,
    /// Transactions the application rolled back by design (not failures).
    pub user_aborts: u64,
    /// Tries, including the ones that committed.
    pub attempts: u64,
    /// Transactions that ended (however) after more than one try:
    /// pgbench's "transactions retried".
    pub retried: u64,
    /// Transactions that gave up, by SQLSTATE of their last error.
    pub failed: FailureCounts,
    /// Transactions whose COMMIT outcome is unknown (connection lost).
    pub unknown_outcome: u64,
    /// Time spent in attempts that did not commit, µs (wasted work).
    pub wasted_us: u64,
    /// Per command of the type, when the workload reports them (pgbench
    /// `-r`); indexed by [`crate::model::StepTime::step`].
    pub steps: Vec<StepStats>,
    /// Failed attempts with a server error, by SQLSTATE, reason and
    /// statement.
    pub errors: ErrorCounts,
}

/// One command's executions (every attempt's), the total time of those
/// that completed, and how many raised the error that ended their
/// attempt. A failed execution's time is left out of the total, as
/// pgbench `-r` leaves it out of a command's latency (it records a
/// command's time only when the command ends without error,
/// `CSTATE_END_COMMAND`): a statement that waits for a lock and then fails
/// would otherwise raise its mean by the wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepStats {
    pub executions: u64,
    pub total_us: u64,
    pub failures: u64,
}

impl Default for TxStats {
    fn default() -> Self {
        TxStats {
            latency_us: crate::model::new_histogram(),
            committed: 0,
            user_aborts: 0,
            attempts: 0,
            retried: 0,
            failed: FailureCounts::default(),
            unknown_outcome: 0,
            wasted_us: 0,
            steps: Vec::new(),
            errors: ErrorCounts::default(),
        }
    }
}

impl TxStats {
    /// Adds `other` to `self` (histograms merge exactly).
    pub fn merge(&mut self, other: &TxStats) {
        self.latency_us
            .add(&other.latency_us)
            .expect("auto-resizing histogram");
        self.committed += other.committed;
        self.user_aborts += other.user_aborts;
        self.attempts += other.attempts;
        self.retried += other.retried;
        self.failed.merge(&other.failed);
        self.unknown_outcome += other.unknown_outcome;
        self.wasted_us += other.wasted_us;
        if self.steps.len() < other.steps.len() {
            self.steps.resize(other.steps.len(), StepStats::default());
        }
        for (a, b) in self.steps.iter_mut().zip(&other.steps) {
            a.executions += b.executions;
            a.total_us += b.total_us;
            a.failures += b.failures;
        }
        self.errors.merge(&other.errors);
    }

    /// Zeroes every counter without freeing memory.
    pub fn reset(&mut self) {
        self.latency_us.reset();
        self.committed = 0;
        self.user_aborts = 0;
        self.attempts = 0;
        self.retried = 0;
        self.failed.clear();
        self.unknown_outcome = 0;
        self.wasted_us = 0;
        self.steps.fill(StepStats::default());
        self.errors.clear();
    }

    /// Transactions that ended: committed, user-aborted, failed, unknown.
    pub fn transactions(&self) -> u64 {
        self.committed + self.user_aborts + self.failed.total() + self.unknown_outcome
    }

    /// Attempts that did not end their transaction (retried ones) plus the
    /// last attempts of failed transactions: attempts - committed - user
    /// aborts.
    pub fn wasted_attempts(&self) -> u64 {
        self.attempts
            .saturating_sub(self.committed + self.user_aborts)
    }

    /// Latency summary in ms.
    pub fn latency_summary(&self) -> LatencySummary {
        LatencySummary::of(&self.latency_us)
    }
}

/// Waits outside transactions: for a pooled connection, and (open loop)
/// behind schedule.
#[derive(Debug, Clone)]
pub struct Waits {
    /// Time to check a connection out of the pool, one value per attempt,
    /// µs (only recorded with a pool).
    pub pool_us: Histogram<u64>,
    /// Open loop: how late each transaction started after its scheduled
    /// time, µs (pgbench's schedule lag).
    pub lag_us: Histogram<u64>,
    /// Open loop: transactions skipped because they were already later
    /// than the latency limit.
    pub skipped: u64,
    /// Committed transactions slower than the latency limit.
    pub late: u64,
    /// A connection per transaction (pgbench `-C`): the time spent opening
    /// and closing them, µs.
    pub connect_us: u64,
}

impl Default for Waits {
    fn default() -> Self {
        Waits {
            pool_us: crate::model::new_histogram(),
            lag_us: crate::model::new_histogram(),
            skipped: 0,
            late: 0,
            connect_us: 0,
        }
    }
}

impl Waits {
    pub fn merge(&mut self, other: &Waits) {
        self.pool_us
            .add(&other.pool_us)
            .expect("auto-resizing histogram");
        self.lag_us
            .add(&other.lag_us)
            .expect("auto-resizing histogram");
        self.skipped += other.skipped;
        self.late += other.late;
        self.connect_us += other.connect_us;
    }

    pub fn reset(&mut self) {
        self.pool_us.reset();
        self.lag_us.reset();
        self.skipped = 0;
        self.late = 0;
        self.connect_us = 0;
    }
}

/// What the transactions run on one host of a DSN with several hosts
/// did (`--host-policy`): counted by the host of the connection that ran
/// the transaction's last attempt.
#[derive(Debug, Clone)]
pub struct HostStats {
    /// Latency of committed transactions, first attempt start to commit, µs.
    pub latency_us: Histogram<u64>,
    pub committed: u64,
    /// Transactions that gave up (any SQLSTATE).
    pub failed: u64,
}

impl Default for HostStats {
    fn default() -> Self {
        HostStats {
            latency_us: crate::model::new_histogram(),
            committed: 0,
            failed: 0,
        }
    }
}

impl HostStats {
    /// Adds `other` to `self` (histograms merge exactly).
    pub fn merge(&mut self, other: &HostStats) {
        self.latency_us
            .add(&other.latency_us)
            .expect("auto-resizing histogram");
        self.committed += other.committed;
        self.failed += other.failed;
    }

    fn reset(&mut self) {
        self.latency_us.reset();
        self.committed = 0;
        self.failed = 0;
    }
}

/// What clients did during one tick (or a whole run, once merged), per
/// transaction type, and the waits around the transactions.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Indexed by transaction type.
    pub types: Vec<TxStats>,
    pub waits: Waits,
    /// Indexed by host of the DSN, when it has more than one; empty with
    /// one host (nothing is tallied per host then).
    pub hosts: Vec<HostStats>,
}

impl Interval {
    /// An empty interval for `types` transaction types (at least 1).
    pub fn new(types: usize) -> Self {
        Interval::with_hosts(types, 1)
    }

    /// An empty interval for `types` transaction types and, when `hosts`
    /// is more than 1, a tally per host.
    pub fn with_hosts(types: usize, hosts: usize) -> Self {
        Interval {
            types: (0..types.max(1)).map(|_| TxStats::default()).collect(),
            waits: Waits::default(),
            hosts: if hosts > 1 {
                (0..hosts).map(|_| HostStats::default()).collect()
            } else {
                Vec::new()
            },
        }
    }

    pub fn merge(&mut self, other: &Interval) {
        for (a, b) in self.types.iter_mut().zip(&other.types) {
            a.merge(b);
        }
        self.waits.merge(&other.waits);
        if self.hosts.len() < other.hosts.len() {
            self.hosts
                .resize_with(other.hosts.len(), HostStats::default);
        }
        for (a, b) in self.hosts.iter_mut().zip(&other.hosts) {
            a.merge(b);
        }
    }

    pub fn reset(&mut self) {
        self.types.iter_mut().for_each(TxStats::reset);
        self.waits.reset();
        self.hosts.iter_mut().for_each(HostStats::reset);
    }

    /// All types together.
    pub fn total(&self) -> TxStats {
        let mut t = TxStats::default();
        for s in &self.types {
            t.merge(s);
        }
        t
    }
}

#[derive(Debug)]
struct RecorderInner {
    interval: Interval,
    lifetime: Lifetime,
    /// The first failure's message per SQLSTATE not retried (see
    /// [`Recorder::first_failure`]); a short vector.
    first_failures: Vec<(SqlState, String)>,
}

/// The recorder of one client thread's clients (see the module docs).
#[derive(Debug)]
pub struct Recorder(Mutex<RecorderInner>);

impl Recorder {
    /// A recorder for `types` transaction types.
    #[cfg(test)]
    pub fn new(types: usize) -> Self {
        Recorder::with_hosts(types, 1)
    }

    /// A recorder for `types` transaction types that, when `hosts` is
    /// more than 1, also tallies per host (see [`HostStats`]).
    pub fn with_hosts(types: usize, hosts: usize) -> Self {
        Recorder(Mutex::new(RecorderInner {
            interval: Interval::with_hosts(types, hosts),
            lifetime: Lifetime::default(),
            first_failures: Vec::new(),
        }))
    }

    fn with<R>(&self, ty: usize, f: impl FnOnce(&mut TxStats, &mut Lifetime) -> R) -> R {
        self.on(ty, usize::MAX, |s, l, _| f(s, l))
    }

    /// [`Recorder::with`], and the tally of host `host` when the
    /// recorder keeps one for it.
    fn on<R>(
        &self,
        ty: usize,
        host: usize,
        f: impl FnOnce(&mut TxStats, &mut Lifetime, Option<&mut HostStats>) -> R,
    ) -> R {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *g;
        f(
            &mut inner.interval.types[ty],
            &mut inner.lifetime,
            inner.interval.hosts.get_mut(host),
        )
    }

    /// A transaction of type `ty` committed after `attempts` tries,
    /// `latency_us` after its first attempt started; `wasted_us` were spent
    /// in the failed tries.
    #[cfg(test)]
    pub fn commit(&self, ty: usize, latency_us: u64, attempts: u32, wasted_us: u64) {
        self.commit_on(ty, usize::MAX, latency_us, attempts, wasted_us)
    }

    /// A commit (as the test helper `Recorder::commit`) of a transaction
    /// whose last attempt ran on host `host` of the DSN (tallied per host when there are several).
    pub fn commit_on(
        &self,
        ty: usize,
        host: usize,
        latency_us: u64,
        attempts: u32,
        wasted_us: u64,
    ) {
        self.on(ty, host, |s, l, h| {
            if let Some(h) = h {
                h.committed += 1;
                h.latency_us.saturating_record(latency_us.max(1));
            }
            s.latency_us.saturating_record(latency_us.max(1));
            s.committed += 1;
            s.attempts += u64::from(attempts);
            s.retried += u64::from(attempts > 1);
            s.wasted_us += wasted_us;
            l.committed += 1;
        })
    }

    /// The application rolled a transaction back on purpose.
    pub fn user_abort(&self, ty: usize, attempts: u32, wasted_us: u64) {
        self.with(ty, |s, _| {
            s.user_aborts += 1;
            s.attempts += u64::from(attempts);
            s.retried += u64::from(attempts > 1);
            s.wasted_us += wasted_us;
        })
    }

    /// A transaction whose last attempt ran on host `host` (tallied per
    /// host when there are several) gave up with `code` after `attempts`
    /// tries.
    pub fn fail_on(&self, ty: usize, host: usize, code: SqlState, attempts: u32, wasted_us: u64) {
        self.on(ty, host, |s, _, h| {
            if let Some(h) = h {
                h.failed += 1;
            }
            failed(s, code, attempts, wasted_us)
        })
    }

    /// A transaction gave up after `attempts` tries, the last failing with
    /// the server error `key`: [`Recorder::fail_on`] and the error counted
    /// together (one tick holds both).
    #[cfg(test)]
    pub fn fail_at(&self, ty: usize, key: ErrorKey, attempts: u32, wasted_us: u64) {
        self.fail_at_on(ty, usize::MAX, key, attempts, wasted_us)
    }

    /// A failure with its server error (as the test helper
    /// `Recorder::fail_at`) of a transaction whose last attempt ran on
    /// host `host` (tallied per host when there are several).
    pub fn fail_at_on(&self, ty: usize, host: usize, key: ErrorKey, attempts: u32, wasted_us: u64) {
        self.on(ty, host, |s, _, h| {
            if let Some(h) = h {
                h.failed += 1;
            }
            failed(s, key.code, attempts, wasted_us);
            s.errors.add(
                key,
                ErrorCount {
                    attempts: 1,
                    failed: 1,
                },
            );
        })
    }

    /// An attempt of a type-`ty` transaction failed with the server error
    /// `key` and will be retried.
    pub fn error(&self, ty: usize, key: ErrorKey) {
        self.with(ty, |s, _| {
            s.errors.add(
                key,
                ErrorCount {
                    attempts: 1,
                    failed: 0,
                },
            )
        })
    }

    /// Keeps `message()` as the example of failures with `code` (one the
    /// retry policy does not retry) unless this recorder has one already:
    /// the message is built once per code, not per failure. Clients call
    /// it only for a code they have not reported yet.
    pub fn first_failure(&self, code: SqlState, message: impl FnOnce() -> String) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !g.first_failures.iter().any(|(c, _)| *c == code) {
            g.first_failures.push((code, message()));
        }
    }

    /// The first failure's message per SQLSTATE (see
    /// [`Recorder::first_failure`]).
    pub fn first_failures(&self) -> Vec<(SqlState, String)> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first_failures
            .clone()
    }

    /// The connection broke during COMMIT: the outcome is unknown.
    pub fn unknown(&self, ty: usize, attempts: u32, wasted_us: u64) {
        self.with(ty, |s, l| {
            s.unknown_outcome += 1;
            s.attempts += u64::from(attempts);
            s.retried += u64::from(attempts > 1);
            s.wasted_us += wasted_us;
            l.unknown_outcome += 1;
        })
    }

    /// The per-command latencies of one attempt of a type-`ty` transaction.
    pub fn steps(&self, ty: usize, times: &[crate::model::StepTime]) {
        self.with(ty, |s, _| {
            for t in times {
                if s.steps.len() <= t.step {
                    s.steps.resize(t.step + 1, StepStats::default());
                }
                let st = &mut s.steps[t.step];
                st.executions += 1;
                if t.failed {
                    st.failures += 1;
                } else {
                    st.total_us += t.us;
                }
            }
        })
    }

    /// A pooled connection was checked out after waiting `us` µs.
    pub fn pool_wait(&self, us: u64) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.interval.waits.pool_us.saturating_record(us);
    }

    /// Open loop: a transaction started `us` µs after its scheduled time,
    /// or (`skipped`) was not started since that is beyond the limit.
    pub fn lag(&self, us: u64, skipped: bool) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let w = &mut g.interval.waits;
        w.lag_us.saturating_record(us);
        w.skipped += u64::from(skipped);
    }

    /// A transaction's own connection (pgbench `-C`) took `us` µs to open
    /// or close.
    pub fn connect_time(&self, us: u64) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.interval.waits.connect_us += us;
    }

    /// A committed transaction was slower than the latency limit.
    pub fn late(&self) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.interval.waits.late += 1;
    }

    /// Adds this tick's counts to `into` and starts a new tick.
    pub fn drain_into(&self, into: &mut Interval) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        into.merge(&g.interval);
        g.interval.reset();
    }

    pub fn lifetime(&self) -> Lifetime {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).lifetime
    }

    /// A count that grows each time a transaction ends (committed, gave
    /// up, or unknown): the lifetime's committed and unknown outcomes plus
    /// the attempts of the tick not yet drained. Only its changes mean
    /// anything: that clients are still ending transactions.
    pub fn ended(&self) -> u64 {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.lifetime.committed + g.lifetime.unknown_outcome + g.interval.total().attempts
    }
}

/// Counts a transaction that gave up with `code` into `s`.
fn failed(s: &mut TxStats, code: SqlState, attempts: u32, wasted_us: u64) {
    s.failed.add(code, 1);
    s.attempts += u64::from(attempts);
    s.retried += u64::from(attempts > 1);
    s.wasted_us += wasted_us;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Merging per-client recorders loses nothing: the merged histogram
        /// and counters equal those of recording everything in one place.
        #[test]
        fn merge_equals_single_recorder(values in proptest::collection::vec((1u64..10_000_000, 0usize..4), 0..300)) {
            let clients: Vec<Recorder> = (0..4).map(|_| Recorder::new(2)).collect();
            let single = Recorder::new(2);
            for (v, c) in &values {
                clients[*c].commit(c % 2, *v, 1, 0);
                single.commit(c % 2, *v, 1, 0);
            }
            let mut merged = Interval::new(2);
            for c in &clients { c.drain_into(&mut merged); }
            let mut all = Interval::new(2);
            single.drain_into(&mut all);
            prop_assert_eq!(merged.total().committed, values.len() as u64);
            prop_assert_eq!(merged.types[1].committed, values.iter().filter(|(_, c)| c % 2 == 1).count() as u64);
            prop_assert_eq!(merged.total().latency_us.len(), all.total().latency_us.len());
            prop_assert_eq!(merged.total().latency_summary(), all.total().latency_summary());
            // Draining resets the tick but not the lifetime counts.
            let mut again = Interval::new(2);
            clients[0].drain_into(&mut again);
            prop_assert_eq!(again.total().committed, 0);
            prop_assert_eq!(clients.iter().map(|c| c.lifetime().committed).sum::<u64>(), values.len() as u64);
        }
    }

    #[test]
    fn per_host_tally_only_with_several_hosts() {
        let key = ErrorKey {
            code: *b"40001",
            reason: None,
            step: None,
            statement: None,
            at_commit: false,
        };
        let rec = Recorder::with_hosts(1, 2);
        rec.commit_on(0, 0, 1000, 1, 0);
        rec.commit_on(0, 1, 3000, 1, 0);
        rec.commit_on(0, 1, 5000, 2, 10);
        rec.fail_on(0, 0, *b"40P01", 1, 5);
        rec.fail_at_on(0, 1, key, 3, 5);
        let mut i = Interval::new(1);
        rec.drain_into(&mut i);
        assert_eq!(i.hosts.len(), 2);
        assert_eq!((i.hosts[0].committed, i.hosts[0].failed), (1, 1));
        assert_eq!((i.hosts[1].committed, i.hosts[1].failed), (2, 1));
        assert_eq!(i.hosts[1].latency_us.len(), 2);
        assert_eq!(i.hosts[0].latency_us.max(), 1000);
        // The totals count every host's.
        assert_eq!(i.total().committed, 3);
        assert_eq!(i.total().failed.total(), 2);
        // One host: nothing tallied per host.
        let one = Recorder::with_hosts(1, 1);
        one.commit_on(0, 0, 1000, 1, 0);
        let mut j = Interval::new(1);
        one.drain_into(&mut j);
        assert!(j.hosts.is_empty());
        assert_eq!(j.total().committed, 1);
    }

    #[test]
    fn failure_counts_by_code() {
        let mut f = FailureCounts::default();
        f.add(*b"40001", 2);
        f.add(*b"40P01", 1);
        f.add(*b"40001", 3);
        assert_eq!(f.total(), 6);
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            vec![("40001".into(), 5), ("40P01".into(), 1)]
        );
        f.clear();
        assert_eq!(f.iter().count(), 0);
    }

    #[test]
    fn error_counts_by_key_most_attempts_first() {
        let key = |code: &[u8; 5], step| ErrorKey {
            code: *code,
            reason: None,
            step,
            statement: None,
            at_commit: false,
        };
        let rec = Recorder::new(1);
        rec.error(0, key(b"40001", Some(2)));
        rec.fail_at(0, key(b"40P01", None), 1, 10);
        rec.fail_at(0, key(b"40001", Some(2)), 2, 20);
        let mut i = Interval::new(1);
        rec.drain_into(&mut i);
        let got: Vec<_> = i.types[0].errors.iter().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, key(b"40001", Some(2)));
        assert_eq!(
            got[0].1,
            ErrorCount {
                attempts: 2,
                failed: 1
            }
        );
        // fail_at counted the failed transactions too.
        assert_eq!(
            i.types[0].failed.iter().collect::<Vec<_>>(),
            vec![("40001".into(), 1), ("40P01".into(), 1)]
        );
        assert_eq!(i.types[0].attempts, 3);
        // Draining cleared the recorder's counts.
        let mut again = Interval::new(1);
        rec.drain_into(&mut again);
        assert_eq!(again.types[0].errors.iter().count(), 0);
    }

    #[test]
    fn histogram_round_trip() {
        let mut h = crate::model::new_histogram();
        for v in [1, 10, 100, 1000, 123_456] {
            h.record(v).unwrap();
        }
        let back = crate::model::decode_histogram(&crate::model::encode_histogram(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.max(), h.max());
        assert_eq!(LatencySummary::of(&back), LatencySummary::of(&h));
    }

    #[test]
    fn latency_summary_in_ms() {
        let mut h = crate::model::new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap(); // 1..1000 ms
        }
        let s = LatencySummary::of(&h);
        assert!((s.p50 - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() < 1.0, "{s:?}");
    }
}
