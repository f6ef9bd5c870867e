//! What a list-append history reveals (Kingsbury & Alvaro, VLDB 2020,
//! sections 4.1-4.3): the writer of every value, the version order of
//! every key (its longest read: every other read of the key must be a
//! prefix of it; or, for a key that one committed transaction alone
//! appended to and no read saw, that append), and from them the write-write, write-read and read-write
//! dependencies between transactions.
//!
//! Only committed transactions' reads are used; a transaction whose
//! outcome is unknown is a possible writer (its appends may be read) but
//! its reads say nothing, as Elle treats `:info` operations. Aborted
//! transactions are never nodes of a dependency: reading their values is
//! G1a, reported apart.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::graph::{Kinds, RW, WR, WW};
use super::history::{History, Key, Op, Value};

/// Not a transaction / not in the version order.
pub const NONE: u32 = u32::MAX;

/// A multiplicative hasher for integer keys (the FxHash of rustc): the
/// maps below hold one entry per appended value, and SipHash would be a
/// third of the check's time.
#[derive(Default, Clone, Copy)]
pub struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

pub type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// Where a value came from and where it sits.
#[derive(Debug, Clone, Copy)]
pub struct Slot {
    /// The transaction that appended it, [`NONE`] if none did.
    pub txn: u32,
    /// Its position in its key's version order, [`NONE`] if no read saw it.
    pub pos: u32,
}

/// The writers and version orders of a history.
pub struct Index<'h> {
    pub history: &'h History,
    pub slots: IntMap<(Key, Value), Slot>,
    /// The longest read of each key (by a committed transaction): the
    /// version order as far as it was observed.
    pub order: IntMap<Key, &'h [Value]>,
    /// Keys whose reads are not all prefixes of one order, with an example
    /// of two incompatible reads `(txn, txn)` (the first is the longest).
    pub incompatible: Vec<(Key, u32, u32)>,
}

impl<'h> Index<'h> {
    /// Indexes `history`: O(total operations and values read).
    pub fn new(history: &'h History) -> Self {
        let mut slots: IntMap<(Key, Value), Slot> = IntMap::default();
        let mut longest: IntMap<Key, (u32, &'h [Value])> = IntMap::default();
        for (i, t) in history.txns.iter().enumerate() {
            for op in &t.ops {
                match op {
                    Op::Append { key, value } => {
                        slots.entry((*key, *value)).or_insert(Slot {
                            txn: i as u32,
                            pos: NONE,
                        });
                    }
                    Op::Read {
                        key,
                        values: Some(v),
                    } if t.committed() => {
                        let e = longest.entry(*key).or_insert((i as u32, v));
                        if v.len() > e.1.len() {
                            *e = (i as u32, v);
                        }
                    }
                    // Checked histories have their scans as reads
                    // (`History::with_scans_as_reads`).
                    // Register operations are checked by `register`.
                    Op::Read { .. } | Op::Scan { .. } | Op::Write { .. } | Op::Get { .. } => {}
                }
            }
        }
        // A key that one committed transaction alone appended to has one
        // possible version order even if no read saw past its absence:
        // that append, first. (An unknown outcome is not assumed
        // committed here; an aborted append is never a version.)
        let mut single: IntMap<Key, Option<(u32, &'h Value)>> = IntMap::default();
        for (i, t) in history.txns.iter().enumerate() {
            if t.aborted() {
                continue;
            }
            for op in &t.ops {
                if let Op::Append { key, value } = op {
                    single
                        .entry(*key)
                        .and_modify(|s| *s = None)
                        .or_insert_with(|| t.committed().then_some((i as u32, value)));
                }
            }
        }
        for (key, s) in single {
            let Some((i, value)) = s else { continue };
            let e = longest.entry(key).or_insert((i, &[]));
            if e.1.is_empty() {
                *e = (i, std::slice::from_ref(value));
            }
        }
        let mut bad: IntMap<Key, (u32, u32)> = IntMap::default();
        for (&key, &(t, values)) in &longest {
            for (p, &v) in values.iter().enumerate() {
                let s = slots.entry((key, v)).or_insert(Slot {
                    txn: NONE,
                    pos: NONE,
                });
                if s.pos != NONE {
                    // A value twice in one list: no order explains it.
                    bad.entry(key).or_insert((t, t));
                }
                s.pos = p as u32;
            }
        }
        for (i, t) in history.txns.iter().enumerate() {
            if !t.committed() {
                continue;
            }
            for op in &t.ops {
                if let Op::Read {
                    key,
                    values: Some(v),
                } = op
                {
                    let (lt, order) = longest[key];
                    if !order.starts_with(v) {
                        bad.entry(*key).or_insert((lt, i as u32));
                    }
                }
            }
        }
        let mut incompatible: Vec<(Key, u32, u32)> =
            bad.into_iter().map(|(k, (a, b))| (k, a, b)).collect();
        incompatible.sort_unstable();
        Index {
            history,
            slots,
            order: longest.into_iter().map(|(k, (_, v))| (k, v)).collect(),
            incompatible,
        }
    }

    /// The transaction that appended `value` to `key` ([`NONE`] if none).
    pub fn writer(&self, key: Key, value: Value) -> u32 {
        self.slots.get(&(key, value)).map_or(NONE, |s| s.txn)
    }

    /// Whether `txn` is a possible writer: committed or outcome unknown.
    pub fn live(&self, txn: u32) -> bool {
        txn != NONE && !self.history.txns[txn as usize].aborted()
    }

    /// Whether the read `values` of `key` fits the version order.
    pub fn compatible(&self, key: Key, values: &[Value]) -> bool {
        match values.last() {
            None => true,
            Some(&v) => self
                .slots
                .get(&(key, v))
                .is_some_and(|s| s.pos as usize + 1 == values.len()),
        }
    }

    /// The value after the state `values` of `key` in its version order.
    pub fn next_after(&self, key: Key, values: &[Value]) -> Option<Value> {
        self.order.get(&key)?.get(values.len()).copied()
    }

    /// Every dependency edge `(from, to, kind)` between live transactions:
    /// ww from consecutive versions of each key, wr from the last value of
    /// each external read ([`external`]), rw from each external read to the writer of the
    /// next version. Self-edges are left out.
    pub fn edges(&self) -> Vec<(u32, u32, Kinds)> {
        let mut edges = Vec::new();
        let mut push = |a: u32, b: u32, k: Kinds| {
            if a != b && self.live(a) && self.live(b) {
                edges.push((a, b, k));
            }
        };
        for (&key, order) in &self.order {
            for w in order.windows(2) {
                push(self.writer(key, w[0]), self.writer(key, w[1]), WW);
            }
        }
        for (i, t) in self.history.txns.iter().enumerate() {
            if !t.committed() {
                continue;
            }
            let i = i as u32;
            for (j, op) in t.ops.iter().enumerate() {
                let Op::Read {
                    key,
                    values: Some(v),
                } = op
                else {
                    continue;
                };
                if !external(t, j) {
                    continue;
                }
                if let Some(&last) = v.last() {
                    push(self.writer(*key, last), i, WR);
                }
                if self.compatible(*key, v)
                    && let Some(next) = self.next_after(*key, v)
                {
                    push(i, self.writer(*key, next), RW);
                }
            }
        }
        edges
    }
}

/// Whether op `j` of `t` is an external read: a read of a key `t` has not
/// appended to before it, so that it shows other transactions' state.
pub fn external(t: &super::history::Txn, j: usize) -> bool {
    let key = t.ops[j].key();
    matches!(t.ops[j], Op::Read { .. })
        && !t.ops[..j]
            .iter()
            .any(|o| matches!(o, Op::Append { key: k, .. } if *k == key))
}
