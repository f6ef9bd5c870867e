//! YCSB's keys: how a record number becomes a key, the shared sequence
//! of inserted record numbers, and the request distributions that pick
//! the record an operation touches.
//!
//! Source: YCSB's `CoreWorkload` (`buildKeyName`, `nextKeynum`,
//! `transactioninsertkeysequence`) and `AcknowledgedCounterGenerator`.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{Rng, RngExt};

use crate::workload::dist::{Hotspot, Latest, ScrambledZipfian, fnv_hash64};

/// How record numbers become keys (`insertorder`, `zeropadding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyFormat {
    /// `insertorder=ordered`: the record number itself; `hashed` (YCSB's
    /// default): its FNV-1 hash, so consecutive inserts scatter over the
    /// key space.
    pub ordered: bool,
    /// The number is left-padded with zeros to this many digits.
    pub zeropadding: u32,
}

impl KeyFormat {
    /// `user` + the (hashed) number, zero-padded (YCSB's `buildKeyName`).
    pub fn key(&self, keynum: u64) -> String {
        let n = if self.ordered {
            keynum as i64
        } else {
            fnv_hash64(keynum as i64)
        };
        let mut buf = itoa::Buffer::new();
        let digits = buf.format(n);
        let pad = (self.zeropadding as usize).saturating_sub(digits.len());
        let mut key = String::with_capacity(4 + pad + digits.len());
        key.push_str("user");
        key.extend(std::iter::repeat_n('0', pad));
        key.push_str(digits);
        key
    }
}

/// The record numbers of a run's inserts, shared by its clients (YCSB's
/// `AcknowledgedCounterGenerator`): numbers are handed out from
/// `recordcount` on, and a number is *acknowledged* once the transaction
/// that inserted it has ended (committed or given up). Reads only pick
/// records up to [`InsertSeq::last`], below which every number is
/// acknowledged, so they never look for a record still being inserted.
#[derive(Debug)]
pub struct InsertSeq {
    next: AtomicU64,
    last: AtomicU64,
    /// Acknowledged numbers above `last` (a later insert ended first).
    pending: Mutex<BTreeSet<u64>>,
}

impl InsertSeq {
    /// For a table loaded with records `0 .. recordcount`.
    pub fn new(recordcount: u64) -> Self {
        InsertSeq {
            next: AtomicU64::new(recordcount),
            last: AtomicU64::new(recordcount - 1),
            pending: Mutex::new(BTreeSet::new()),
        }
    }

    /// The next record number to insert.
    pub fn allocate(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The transaction that inserted `keynum` has ended.
    pub fn acknowledge(&self, keynum: u64) {
        let mut pending = self.pending.lock().expect("insert sequence lock");
        pending.insert(keynum);
        let mut last = self.last.load(Ordering::Relaxed);
        while pending.remove(&(last + 1)) {
            last += 1;
        }
        self.last.store(last, Ordering::Release);
    }

    /// The highest record number below which every insert has ended.
    pub fn last(&self) -> u64 {
        self.last.load(Ordering::Acquire)
    }
}

/// Hands each run its own [`InsertSeq`]: every run starts from a fresh
/// copy of the loaded data, so its inserts number from `recordcount`
/// again. The engine builds each of a run's clients once, by a distinct
/// id, so a client id seen before means a new run.
#[derive(Debug)]
pub struct RunSeqs {
    recordcount: u64,
    state: Mutex<(HashSet<u32>, Arc<InsertSeq>)>,
}

impl RunSeqs {
    pub fn new(recordcount: u64) -> Self {
        RunSeqs {
            recordcount,
            state: Mutex::new((HashSet::new(), Arc::new(InsertSeq::new(recordcount)))),
        }
    }

    /// The sequence of the run client `client_id` belongs to.
    pub fn for_client(&self, client_id: u32) -> Arc<InsertSeq> {
        let mut st = self.state.lock().expect("run sequences lock");
        if !st.0.insert(client_id) {
            st.0.clear();
            st.0.insert(client_id);
            st.1 = Arc::new(InsertSeq::new(self.recordcount));
        }
        Arc::clone(&st.1)
    }
}

/// `requestdistribution`: how an operation picks its record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestDist {
    Uniform,
    /// YCSB's `zipfian`: the scrambled zipfian (constant 0.99).
    Zipfian,
    Latest,
    Hotspot {
        data_fraction: f64,
        opn_fraction: f64,
    },
}

impl RequestDist {
    pub const NAMES: [&'static str; 4] = ["uniform", "zipfian", "latest", "hotspot"];
}

/// One client's record chooser (YCSB's `keychooser` and `nextKeynum`).
#[derive(Debug, Clone)]
pub enum Chooser {
    Uniform { records: u64 },
    Zipfian(ScrambledZipfian),
    Latest(Latest),
    Hotspot(Hotspot),
}

impl Chooser {
    /// For `records` loaded records; the scrambled zipfian spans
    /// `expected_inserts` more (YCSB: twice `operationcount` times
    /// `insertproportion`), so the popular keys do not move as the table
    /// grows. `latest_zeta` gives ζ(records, 0.99) for `latest` (computed
    /// here when `None`: O(records)).
    pub fn new(
        dist: RequestDist,
        records: u64,
        expected_inserts: u64,
        latest_zeta: Option<f64>,
    ) -> Self {
        match dist {
            RequestDist::Uniform => Chooser::Uniform { records },
            RequestDist::Zipfian => {
                Chooser::Zipfian(ScrambledZipfian::new(0, records + expected_inserts))
            }
            RequestDist::Latest => Chooser::Latest(match latest_zeta {
                Some(z) => Latest::with_zeta(records - 1, z),
                None => Latest::new(records - 1),
            }),
            RequestDist::Hotspot {
                data_fraction,
                opn_fraction,
            } => Chooser::Hotspot(Hotspot::new(0, records - 1, data_fraction, opn_fraction)),
        }
    }

    /// A record number at most `last` (the highest acknowledged insert):
    /// the zipfian redraws beyond it, as YCSB does; latest counts back
    /// from it.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, last: u64) -> u64 {
        match self {
            Chooser::Uniform { records } => rng.random_range(0..*records),
            Chooser::Hotspot(h) => h.sample(rng),
            Chooser::Latest(l) => l.sample(rng, last),
            Chooser::Zipfian(z) => loop {
                let k = z.sample(rng);
                if k <= last {
                    return k;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    #[test]
    fn keys_are_ycsbs() {
        let hashed = KeyFormat {
            ordered: false,
            zeropadding: 1,
        };
        // "user" + fnvhash64(0) (see dist::tests::fnv_hash_is_ycsbs).
        assert_eq!(hashed.key(0), "user6284781860667377211");
        let ordered = KeyFormat {
            ordered: true,
            zeropadding: 8,
        };
        assert_eq!(ordered.key(5), "user00000005");
        assert_eq!(ordered.key(123_456_789), "user123456789");
    }

    #[test]
    fn the_sequence_advances_only_over_ended_inserts() {
        let s = InsertSeq::new(100);
        assert_eq!(s.last(), 99);
        let (a, b, c) = (s.allocate(), s.allocate(), s.allocate());
        assert_eq!((a, b, c), (100, 101, 102));
        s.acknowledge(b);
        assert_eq!(s.last(), 99, "101 ended, 100 still running");
        s.acknowledge(a);
        assert_eq!(s.last(), 101);
        s.acknowledge(c);
        assert_eq!(s.last(), 102);
    }

    #[test]
    fn a_client_id_seen_again_starts_a_new_runs_sequence() {
        let r = RunSeqs::new(10);
        let first = r.for_client(0);
        assert!(Arc::ptr_eq(&first, &r.for_client(1)));
        first.allocate();
        let again = r.for_client(0);
        assert!(!Arc::ptr_eq(&first, &again));
        assert_eq!(again.allocate(), 10);
        assert!(Arc::ptr_eq(&again, &r.for_client(1)));
    }

    #[test]
    fn choosers_stay_below_the_last_acknowledged_record() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut z = Chooser::new(RequestDist::Zipfian, 1000, 200, None);
        let mut l = Chooser::new(RequestDist::Latest, 1000, 0, None);
        let mut newest = 0;
        for _ in 0..20_000 {
            assert!(z.next(&mut rng, 999) <= 999);
            let k = l.next(&mut rng, 1050);
            assert!(k <= 1050);
            newest += usize::from(k == 1050);
        }
        assert!(newest > 1000, "latest favours record 1050: {newest}");
    }
}
