//! Register histories (Elle's rw-register: each key holds one value,
//! written whole and read whole; Kingsbury & Alvaro, VLDB 2020, section
//! 4.1), checked for the same classes as list-append's.
//!
//! What a register history reveals, and its limits: values are unique per
//! key, so a read names its writer (write-read dependencies are exact),
//! but a read does not show the versions before it, so the version order
//! is known only where a transaction read one value and then wrote
//! another (the read version came first), plus the initial nil before
//! every write; the order facts are closed transitively per key. Write-
//! write and read-write dependencies are inferred from those facts alone
//! (a read-write edge runs from a reader of `x` to the writer of every
//! `y` known to follow `x`, which shortcuts the true chain through the
//! versions in between without changing its number of anti-dependencies).
//! So the checker finds fewer cycles than list-append's would in the same
//! execution, never more: what it reports holds in every version order
//! consistent with the history. Facts that contradict each other (`x`
//! before `y` and `y` before `x`) are reported as `incompatible-order`.

use std::collections::{BTreeMap, BTreeSet};

use super::check::{Class, Found, Report, conclude};
use super::explain::{Explains, txn_line};
use super::graph::{Kinds, RW, WR, WW};
use super::history::{History, Key, Op, Value};
use super::infer::{IntMap, NONE};

/// A register history's writers and what its reads and writes imply.
struct RegIndex<'h> {
    history: &'h History,
    /// The transaction that wrote each value (its last write of the key
    /// in that transaction is its version; earlier ones are intermediate).
    writer: IntMap<(Key, Value), u32>,
    /// Per key, per value (`None`: the initial nil): the values known to
    /// come after it.
    after: BTreeMap<Key, BTreeMap<Option<Value>, BTreeSet<Value>>>,
}

impl RegIndex<'_> {
    fn writer_of(&self, key: Key, value: Value) -> u32 {
        self.writer.get(&(key, value)).copied().unwrap_or(NONE)
    }

    fn live(&self, t: u32) -> bool {
        t != NONE && !self.history.txns[t as usize].aborted()
    }
}

/// The external reads of transaction `t` (before it wrote the key).
fn external_reads(ops: &[Op]) -> Vec<(Key, Option<Value>)> {
    let mut written: BTreeSet<Key> = BTreeSet::new();
    let mut out = Vec::new();
    for op in ops {
        match op {
            Op::Write { key, .. } => {
                written.insert(*key);
            }
            Op::Get { key, value } if !written.contains(key) => out.push((*key, *value)),
            _ => {}
        }
    }
    out
}

/// The last write of each key in `ops`: the transaction's versions.
fn final_writes(ops: &[Op]) -> BTreeMap<Key, Value> {
    let mut out = BTreeMap::new();
    for op in ops {
        if let Op::Write { key, value } = op {
            out.insert(*key, *value);
        }
    }
    out
}

impl Explains for RegIndex<'_> {
    fn edge(&self, a: u32, b: u32, kind: Kinds) -> String {
        let ta = &self.history.txns[a as usize];
        let tb = &self.history.txns[b as usize];
        match kind {
            WR => {
                for (key, v) in external_reads(&tb.ops) {
                    if let Some(v) = v
                        && self.writer_of(key, v) == a
                    {
                        return format!("T{b} read k{key} = {v}, which T{a} wrote (wr)");
                    }
                }
                format!("T{b} read a value T{a} wrote (wr)")
            }
            WW => {
                for (key, x) in final_writes(&ta.ops) {
                    for (k2, y) in final_writes(&tb.ops) {
                        if k2 == key && self.known_before(key, Some(x), y) {
                            return format!(
                                "T{a} wrote {x} to k{key}, which is known to precede T{b}'s {y} (ww)"
                            );
                        }
                    }
                }
                format!("T{a} wrote a version that T{b} overwrote (ww)")
            }
            _ => {
                for (key, x) in external_reads(&ta.ops) {
                    for (k2, y) in final_writes(&tb.ops) {
                        if k2 == key && self.known_before(key, x, y) {
                            let read = x.map_or_else(|| "nil".to_string(), |v| v.to_string());
                            return format!(
                                "T{a} read k{key} = {read}, which is known to precede {y}, which T{b} wrote (rw)"
                            );
                        }
                    }
                }
                format!("T{a} did not see a version T{b} wrote (rw)")
            }
        }
    }

    fn txn_line(&self, t: u32) -> String {
        txn_line(&self.history.txns[t as usize], t)
    }
}

impl RegIndex<'_> {
    fn known_before(&self, key: Key, x: Option<Value>, y: Value) -> bool {
        x.is_none()
            || self
                .after
                .get(&key)
                .and_then(|m| m.get(&x))
                .is_some_and(|s| s.contains(&y))
    }
}

/// Checks a register history for every class of [`Class::ALL`].
pub fn check(history: &History) -> Report {
    let mut found = Found::new();
    let mut writer: IntMap<(Key, Value), u32> = IntMap::default();
    // Direct facts: per key, x (None: nil) before y.
    let mut facts: BTreeMap<Key, BTreeSet<(Option<Value>, Value)>> = BTreeMap::new();
    for (i, t) in history.txns.iter().enumerate() {
        for op in &t.ops {
            if let Op::Write { key, value } = op {
                writer.entry((*key, *value)).or_insert(i as u32);
            }
        }
    }
    for (i, t) in history.txns.iter().enumerate() {
        if !t.committed() {
            continue;
        }
        let i = i as u32;
        let finals = final_writes(&t.ops);
        for (key, x) in external_reads(&t.ops) {
            if let Some(y) = finals.get(&key) {
                facts.entry(key).or_default().insert((x, *y));
            }
            let Some(x) = x else { continue };
            let w = writer.get(&(key, x)).copied().unwrap_or(NONE);
            if w != NONE && history.txns[w as usize].aborted() {
                found.add(Class::G1a, [i, w], || {
                    format!(
                        "T{i} read k{key} = {x}, which T{w} wrote and aborted. {}; {}",
                        txn_line(t, i),
                        txn_line(&history.txns[w as usize], w)
                    )
                });
            } else if w != NONE
                && w != i
                && final_writes(&history.txns[w as usize].ops).get(&key) != Some(&x)
            {
                found.add(Class::G1b, [i, w], || {
                    format!(
                        "T{i} read k{key} = {x}, an intermediate value: T{w} wrote k{key} again after it. {}; {}",
                        txn_line(t, i),
                        txn_line(&history.txns[w as usize], w)
                    )
                });
            }
        }
        // A read after the transaction's own write sees that write.
        let mut own: BTreeMap<Key, Value> = BTreeMap::new();
        for op in &t.ops {
            match op {
                Op::Write { key, value } => {
                    own.insert(*key, *value);
                }
                Op::Get { key, value } => {
                    if let Some(w) = own.get(key)
                        && *value != Some(*w)
                    {
                        found.add(Class::Internal, [i, i], || {
                            format!(
                                "T{i} read k{key} = {value:?} after writing {w} to it. {}",
                                txn_line(t, i)
                            )
                        });
                    }
                }
                _ => {}
            }
        }
    }
    // Close the facts per key; a value after itself is a contradiction.
    let mut after: BTreeMap<Key, BTreeMap<Option<Value>, BTreeSet<Value>>> = BTreeMap::new();
    for (key, pairs) in &facts {
        let mut next: BTreeMap<Option<Value>, Vec<Value>> = BTreeMap::new();
        for &(x, y) in pairs {
            next.entry(x).or_default().push(y);
        }
        let mut closed: BTreeMap<Option<Value>, BTreeSet<Value>> = BTreeMap::new();
        for &start in next.keys() {
            let mut seen: BTreeSet<Value> = BTreeSet::new();
            let mut stack: Vec<Value> = next[&start].clone();
            while let Some(v) = stack.pop() {
                if seen.insert(v) {
                    stack.extend(next.get(&Some(v)).into_iter().flatten().copied());
                }
            }
            if let Some(x) = start
                && seen.contains(&x)
            {
                found.add(Class::IncompatibleOrder, [NONE, NONE], || {
                    format!("k{key}: {x} is both before and after another value written to it")
                });
            }
            closed.insert(start, seen);
        }
        after.insert(*key, closed);
    }
    let idx = RegIndex {
        history,
        writer,
        after,
    };
    let mut edges: Vec<(u32, u32, Kinds)> = Vec::new();
    let mut push = |a: u32, b: u32, k: Kinds| {
        if a != b && idx.live(a) && idx.live(b) {
            edges.push((a, b, k));
        }
    };
    // Writers of each key's values, for reads of nil.
    let mut writers_of_key: BTreeMap<Key, Vec<Value>> = BTreeMap::new();
    for t in &history.txns {
        if t.aborted() {
            continue;
        }
        for (key, v) in final_writes(&t.ops) {
            writers_of_key.entry(key).or_default().push(v);
        }
    }
    for (key, pairs) in &facts {
        for &(x, y) in pairs {
            if let Some(x) = x {
                push(idx.writer_of(*key, x), idx.writer_of(*key, y), WW);
            }
        }
    }
    for (i, t) in history.txns.iter().enumerate() {
        if !t.committed() {
            continue;
        }
        let i = i as u32;
        for (key, x) in external_reads(&t.ops) {
            if let Some(v) = x {
                push(idx.writer_of(key, v), i, WR);
            }
            let later: Vec<Value> = match x {
                None => writers_of_key.get(&key).cloned().unwrap_or_default(),
                Some(_) => idx
                    .after
                    .get(&key)
                    .and_then(|m| m.get(&x))
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default(),
            };
            for y in later {
                push(i, idx.writer_of(key, y), RW);
            }
        }
    }
    conclude(history, &idx, edges, found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Status, Txn};

    fn ok(ops: Vec<Op>) -> Txn {
        Txn {
            ops,
            ..Txn::default()
        }
    }
    fn w(key: Key, value: Value) -> Op {
        Op::Write { key, value }
    }
    fn r(key: Key, value: Option<Value>) -> Op {
        Op::Get { key, value }
    }

    #[test]
    fn write_skew_on_registers_is_a_g2_item() {
        // Both read nil, each writes the key the other read.
        let h = History {
            txns: vec![
                ok(vec![r(1, None), w(2, 10)]),
                ok(vec![r(2, None), w(1, 20)]),
            ],
        };
        let rep = check(&h);
        assert_eq!(rep.count(Class::G2Item), 1, "{}", rep.render());
        assert_eq!(rep.total(), 1, "{}", rep.render());
    }

    /// A lost update: T1 and T2 both read T0's 1 and each wrote a new
    /// value (1 < 2 and 1 < 3): each read-writes to the other's write, a
    /// cycle of two anti-dependencies. (The version order of 2 and 3 is
    /// unknown to a register history, so this is G2-item, not the
    /// G-single that list-append would show with the order known.)
    #[test]
    fn a_lost_update_is_a_cycle_of_anti_dependencies() {
        let h = History {
            txns: vec![
                ok(vec![w(1, 1)]),
                ok(vec![r(1, Some(1)), w(1, 2)]),
                ok(vec![r(1, Some(1)), w(1, 3)]),
            ],
        };
        let rep = check(&h);
        assert_eq!(rep.count(Class::G2Item), 1, "{}", rep.render());
        assert_eq!(rep.total(), 1, "{}", rep.render());
    }

    #[test]
    fn serial_register_histories_have_no_anomaly() {
        let h = History {
            txns: vec![
                ok(vec![r(1, None), w(1, 1)]),
                ok(vec![r(1, Some(1)), w(1, 2), r(1, Some(2))]),
                ok(vec![r(1, Some(2)), r(2, None)]),
                Txn {
                    status: Status::Aborted { sqlstate: None },
                    ..ok(vec![w(2, 9)])
                },
            ],
        };
        let rep = check(&h);
        assert_eq!(rep.total(), 0, "{}", rep.render());
    }

    #[test]
    fn dirty_and_intermediate_reads() {
        let h = History {
            txns: vec![
                Txn {
                    status: Status::Aborted { sqlstate: None },
                    ..ok(vec![w(1, 5)])
                },
                ok(vec![r(1, Some(5))]),
                ok(vec![w(2, 6), w(2, 7)]),
                ok(vec![r(2, Some(6))]),
                ok(vec![w(3, 8), r(3, Some(9))]),
            ],
        };
        let rep = check(&h);
        assert_eq!(rep.count(Class::G1a), 1, "{}", rep.render());
        assert_eq!(rep.count(Class::G1b), 1, "{}", rep.render());
        assert_eq!(rep.count(Class::Internal), 1, "{}", rep.render());
    }
}
