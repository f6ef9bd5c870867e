//! Per-script counts that isobench's run record does not keep but pgbench
//! 15's `SQL script N:` blocks print (`accumStats` in pgbench.c): the
//! transactions retried, the retries, and the transactions skipped
//! (`-R` with `-L`), by script. They are counted from the engine's
//! per-transaction hook ([`crate::engine::txlog`]), in front of the `-l`
//! log files when there are some: each client thread counts in its own
//! sink and adds its counts to the run's when it finishes.

use std::sync::{Arc, Mutex};

use crate::engine::txlog::{TxEnd, TxLog, TxLogHook, TxRecord, TxSink};

/// One script's counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ScriptCounts {
    /// Transactions (committed or failed) that took more than one try.
    pub retried: u64,
    /// Tries after the first, summed over those transactions.
    pub retries: u64,
    /// Transactions skipped (open loop, already later than `-L`).
    pub skipped: u64,
}

impl ScriptCounts {
    fn add(&mut self, t: &TxRecord) {
        if t.end == TxEnd::Skipped {
            self.skipped += 1;
        } else if t.tries > 1 {
            self.retried += 1;
            self.retries += u64::from(t.tries - 1);
        }
    }

    fn merge(&mut self, o: &ScriptCounts) {
        self.retried += o.retried;
        self.retries += o.retries;
        self.skipped += o.skipped;
    }
}

/// The run's counts by script (index: pgbench's script number - 1), filled
/// as the client threads finish.
#[derive(Debug, Default)]
pub struct Tally(Mutex<Vec<ScriptCounts>>);

impl Tally {
    /// The counts so far, one per script of `scripts` (all threads have
    /// finished when the run's results are in).
    pub fn counts(&self, scripts: usize) -> Vec<ScriptCounts> {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.resize(scripts, ScriptCounts::default());
        v
    }

    fn merge(&self, local: &[ScriptCounts]) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() < local.len() {
            all.resize(local.len(), ScriptCounts::default());
        }
        for (a, l) in all.iter_mut().zip(local) {
            a.merge(l);
        }
    }
}

/// The hook that counts into `tally`, then hands each transaction to
/// `inner` (the `-l` files), if any.
pub fn hook(tally: Arc<Tally>, inner: Option<TxLogHook>) -> TxLogHook {
    TxLogHook(Arc::new(Counting { tally, inner }))
}

struct Counting {
    tally: Arc<Tally>,
    inner: Option<TxLogHook>,
}

impl TxLog for Counting {
    fn sink(&self, thread: usize, threads: usize) -> Box<dyn TxSink> {
        Box::new(ThreadCounts {
            tally: self.tally.clone(),
            local: Vec::new(),
            inner: self.inner.as_ref().map(|h| h.0.sink(thread, threads)),
        })
    }
}

struct ThreadCounts {
    tally: Arc<Tally>,
    local: Vec<ScriptCounts>,
    inner: Option<Box<dyn TxSink>>,
}

impl TxSink for ThreadCounts {
    fn record(&mut self, t: &TxRecord) {
        if self.local.len() <= t.ty {
            self.local.resize(t.ty + 1, ScriptCounts::default());
        }
        self.local[t.ty].add(t);
        if let Some(inner) = &mut self.inner {
            inner.record(t);
        }
    }

    fn finish(&mut self) {
        self.tally.merge(&std::mem::take(&mut self.local));
        if let Some(inner) = &mut self.inner {
            inner.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn tx(ty: usize, end: TxEnd, tries: u32) -> TxRecord {
        TxRecord {
            client: 0,
            number: 1,
            ty,
            at: SystemTime::now(),
            end,
            latency_us: 10,
            lag_us: 0,
            tries,
        }
    }

    /// Retried and retries count committed and failed transactions alike
    /// (pgbench's accumStats), skipped ones only as skipped; two threads'
    /// counts add up per script, and a script no transaction ran has zeros.
    #[test]
    fn counts_by_script_across_threads() {
        struct Seen(Arc<Mutex<u32>>);
        impl TxSink for Seen {
            fn record(&mut self, _: &TxRecord) {
                *self.0.lock().unwrap() += 1;
            }
            fn finish(&mut self) {}
        }
        struct Inner(Arc<Mutex<u32>>);
        impl TxLog for Inner {
            fn sink(&self, _: usize, _: usize) -> Box<dyn TxSink> {
                Box::new(Seen(self.0.clone()))
            }
        }
        let seen = Arc::new(Mutex::new(0));
        let tally = Arc::new(Tally::default());
        let h = hook(
            tally.clone(),
            Some(TxLogHook(Arc::new(Inner(seen.clone())))),
        );
        let mut a = h.0.sink(0, 2);
        let mut b = h.0.sink(1, 2);
        a.record(&tx(0, TxEnd::Committed, 1));
        a.record(&tx(0, TxEnd::Committed, 3));
        a.record(&tx(1, TxEnd::Failed(*b"40001"), 2));
        b.record(&tx(0, TxEnd::Skipped, 0));
        b.record(&tx(0, TxEnd::Failed(*b"40P01"), 4));
        a.finish();
        b.finish();
        let c = tally.counts(3);
        assert_eq!(
            c[0],
            ScriptCounts {
                retried: 2,
                retries: 5,
                skipped: 1
            }
        );
        assert_eq!(
            c[1],
            ScriptCounts {
                retried: 1,
                retries: 1,
                skipped: 0
            }
        );
        assert_eq!(c[2], ScriptCounts::default());
        assert_eq!(
            *seen.lock().unwrap(),
            5,
            "every transaction reaches -l's log"
        );
    }
}
