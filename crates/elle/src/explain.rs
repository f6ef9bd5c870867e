//! Step-by-step explanations of anomalies, in the words of Elle's reports
//! (Kingsbury & Alvaro, VLDB 2020, section 5: "T1 read k3 = [1 2]; T2
//! appended 3 to k3 ..."), so that a reader can follow a cycle back to the
//! operations that prove each dependency.

use super::graph::{Kinds, RW, WR, WW};
use super::history::{Key, Op, Value, show_list, show_ops, show_status};
use super::infer::{Index, external};

/// What a checker's inference can say in words: why an edge holds, and a
/// transaction as a line. List-append's [`Index`] and the register
/// checker's index each say it from what their reads reveal.
pub trait Explains {
    /// Why there is an edge of `kind` from `a` to `b`, as one clause.
    fn edge(&self, a: u32, b: u32, kind: Kinds) -> String;
    /// `T<i> (client c, committed): ops`.
    fn txn_line(&self, t: u32) -> String;
}

impl Explains for Index<'_> {
    fn edge(&self, a: u32, b: u32, kind: Kinds) -> String {
        edge(self, a, b, kind)
    }

    fn txn_line(&self, t: u32) -> String {
        txn_line(&self.history.txns[t as usize], t)
    }
}

/// `T<i> (client c, committed): ops`.
pub fn txn_line(txn: &super::history::Txn, t: u32) -> String {
    format!(
        "T{t} (client {}, {}): {}",
        txn.process,
        show_status(&txn.status),
        show_ops(txn)
    )
}

/// The external reads of `t`: `(key, values)`.
fn reads<'h>(idx: &Index<'h>, t: u32) -> impl Iterator<Item = (Key, &'h [Value])> {
    let txn = &idx.history.txns[t as usize];
    txn.ops
        .iter()
        .enumerate()
        .filter_map(move |(j, op)| match op {
            Op::Read {
                key,
                values: Some(v),
            } if external(txn, j) => Some((*key, v.as_slice())),
            _ => None,
        })
}

/// Why there is an edge of `kind` from `a` to `b`, as one clause.
pub fn edge(idx: &Index<'_>, a: u32, b: u32, kind: Kinds) -> String {
    match kind {
        WW => {
            for op in &idx.history.txns[a as usize].ops {
                let Op::Append { key, value } = op else {
                    continue;
                };
                let Some(s) = idx.slots.get(&(*key, *value)) else {
                    continue;
                };
                let order = idx.order.get(key).copied().unwrap_or_default();
                if let Some(&next) = order.get(s.pos.wrapping_add(1) as usize)
                    && idx.writer(*key, next) == b
                {
                    return format!(
                        "T{a} appended {value} to k{key}; T{b} appended {next} right after it (ww)"
                    );
                }
            }
            format!("T{a} wrote a version that T{b} overwrote (ww)")
        }
        WR => {
            for (key, v) in reads(idx, b) {
                if let Some(&last) = v.last()
                    && idx.writer(key, last) == a
                {
                    return format!(
                        "T{b} read k{key} = {}, whose last value {last} T{a} appended (wr)",
                        show_list(v)
                    );
                }
            }
            format!("T{b} read a version T{a} wrote (wr)")
        }
        _ => {
            for (key, v) in reads(idx, a) {
                if idx.compatible(key, v)
                    && let Some(next) = idx.next_after(key, v)
                    && idx.writer(key, next) == b
                {
                    return format!(
                        "T{a} read k{key} = {} without {next}, which T{b} appended next (rw)",
                        show_list(v)
                    );
                }
            }
            format!("T{a} did not see a version T{b} wrote (rw)")
        }
    }
}

/// The kind to explain an edge by: the closing kind for the first edge,
/// else the first of ww, wr, rw that `kinds` has within `mask`.
pub fn pick(kinds: Kinds, mask: Kinds) -> Kinds {
    [WW, WR, RW]
        .into_iter()
        .find(|k| kinds & mask & k != 0)
        .unwrap_or(RW)
}

/// A cycle `steps` (`(from, to, kind)`), its clauses, then each
/// transaction's operations.
pub fn cycle(ex: &dyn Explains, steps: &[(u32, u32, Kinds)]) -> String {
    let mut names: Vec<String> = steps.iter().map(|s| format!("T{}", s.0)).collect();
    names.push(format!("T{}", steps[0].0));
    let clauses: Vec<String> = steps.iter().map(|&(a, b, k)| ex.edge(a, b, k)).collect();
    let txns: Vec<String> = steps.iter().map(|s| ex.txn_line(s.0)).collect();
    format!(
        "cycle {}: {}. Transactions: {}",
        names.join(" -> "),
        clauses.join("; "),
        txns.join("; ")
    )
}
