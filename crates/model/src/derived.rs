//! The figures of a run record that follow from its counts: one
//! definition, used by the run that measures them
//! (`executor::drivers::builtin`) and by `isobench merge`, which sums
//! the counts of several records and must not keep any one input's
//! figures.

use super::{RunRecord, effective_tps, tpmc};

/// `a / b`, or 0 when `b` is not positive.
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

impl RunRecord {
    /// Recomputes every figure that follows from the record's counts, its
    /// measured window `duration_s` and the `clients` that ran it (the
    /// cell's, a shard's share, or the sum of independent runs'):
    ///
    /// - `tps` = committed / duration_s, tx/s;
    /// - `effective_tps` from `tps`, `lifetime` and the history check's
    ///   lost commits ([`effective_tps`]);
    /// - `failure_pct` = 100 · Σ failed / (committed + user aborts + Σ
    ///   failed + unknown outcomes), %;
    /// - `retries_per_commit` = retries / committed;
    /// - `abort_ratio` = wasted attempts / attempts;
    /// - `wasted_time_pct` = 100 · wasted_ms / (clients · duration_s ·
    ///   1000), %;
    /// - `client_cpu_us_per_tx` = client_cpu_s · 10⁶ / committed, µs;
    /// - `tpmc` = New-Order commits · 60 / duration_s ([`tpmc`]; TPC-C
    ///   only).
    ///
    /// Ratios with a zero denominator are 0. An external load's record
    /// keeps the throughput its tool reported (`load` is set): only
    /// `effective_tps` is recomputed.
    pub fn derive_figures(&mut self, clients: f64) {
        if self.load.is_none() {
            let failed: u64 = self.failed.values().sum();
            let transactions = self.committed + self.user_aborts + failed + self.unknown_outcome;
            let committed = self.committed as f64;
            self.tps = ratio(committed, self.duration_s);
            self.failure_pct = 100.0 * ratio(failed as f64, transactions as f64);
            self.retries_per_commit = ratio(self.retries as f64, committed);
            self.abort_ratio = ratio(self.wasted_attempts as f64, self.attempts as f64);
            self.wasted_time_pct =
                100.0 * ratio(self.wasted_ms, clients * self.duration_s * 1000.0);
            self.client_cpu_us_per_tx = ratio(self.client_cpu_s * 1e6, committed);
            self.tpmc = tpmc(&self.transactions, self.duration_s);
        }
        self.effective_tps = effective_tps(self.tps, &self.lifetime, &self.invariants);
    }
}
