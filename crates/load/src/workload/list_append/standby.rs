//! Standby reads checked (issue #50). A read-only transaction routed to a
//! standby (`--read-from standby|any`) sees a committed prefix of the
//! primary's WAL: a state the primary was in, maybe an old one. It is
//! kept in a history of its own and, after the primary's history has been
//! checked alone, checked with it: the primary's transactions first, the
//! committed standby reads after them (their indexes in the checker's
//! examples count on from the primary's).
//!
//! Counted, for `standby-reads-consistent`, are what no committed prefix
//! can show:
//! - G1a: a standby read showing an aborted append;
//! - G1b: a standby read ending at an intermediate version (a value its
//!   writer appended to after, in the same transaction);
//! - incompatible-order: a key whose reads disagree where one of the two
//!   reads named is a standby read (a list that is not a prefix of the
//!   key's version order);
//! - never-appended: a value in a standby read that no transaction of the
//!   run appended;
//! - G0 and G1c: cycles of the mixed history beyond the primary's. A
//!   standby transaction only reads, so its only outgoing edges are
//!   anti-dependencies and no cycle of write-write and write-read
//!   dependencies passes through it; these count only cycles among the
//!   primary's transactions that a standby read's longer list revealed.
//!
//! Not counted: G-single and G2-item cycles through a standby read. A
//! stale snapshot has an anti-dependency to every write it missed, and a
//! hot standby runs SERIALIZABLE as REPEATABLE READ, so its reads may
//! show the read-only anomaly SSI prevents on the primary (Fekete,
//! O'Neil and O'Neil, SIGMOD Record 2004). Nor is internal consistency: at
//! READ COMMITTED each statement of a standby transaction takes its own
//! snapshot. Staleness itself is counted by the session-guarantee checks
//! (`engine::reads`).

use std::collections::HashSet;

use crate::elle::{self, Class, History, Op, Report, Txn};
use crate::model::InvariantResult;

/// The invariant's name.
pub const NAME: &str = "standby-reads-consistent";

/// The invariant over `mixed`: the primary's history (its first
/// `primary` transactions, whose report alone is `alone`) followed by
/// committed standby reads, checked as `report`.
pub(super) fn consistent(
    mixed: &History,
    primary: usize,
    alone: &Report,
    report: &Report,
) -> InvariantResult {
    let standby = |t: u32| t != elle::NONE && t as usize >= primary;
    let mut kinds: Vec<String> = Vec::new();
    let mut total = 0u64;
    let mut example: Option<String> = None;
    for class in [Class::G1a, Class::G1b, Class::IncompatibleOrder] {
        let f = report.finding(class);
        let mut cases = f.txns.iter().filter(|c| c.iter().any(|&t| standby(t)));
        let Some(first) = cases.next() else { continue };
        let n = 1 + cases.count() as u64;
        total += n;
        kinds.push(format!("{} {n}", class.name()));
        example.get_or_insert_with(|| {
            let reader = if standby(first[0]) {
                first[0]
            } else {
                first[1]
            };
            let other = if reader == first[0] {
                first[1]
            } else {
                first[0]
            };
            let mut s = format!("{}: {}", class.name(), line(mixed, reader, primary));
            if other != elle::NONE && other != reader {
                s.push_str(&format!("; {}", line(mixed, other, primary)));
            }
            s
        });
    }
    for class in [Class::G0, Class::G1c] {
        let n = report.count(class).saturating_sub(alone.count(class));
        if n > 0 {
            total += n;
            kinds.push(format!("{} {n}", class.name()));
            example.get_or_insert_with(|| {
                let e = report.finding(class).example.clone().unwrap_or_default();
                format!("{}: {e}", class.name())
            });
        }
    }
    let (never, first) = never_appended(mixed, primary);
    if let Some((t, key, value)) = first {
        total += never;
        kinds.push(format!("never-appended {never}"));
        example.get_or_insert_with(|| {
            format!(
                "never-appended: {value} in k{key}: {}",
                line(mixed, t, primary)
            )
        });
    }
    let reads = mixed.len() - primary;
    let mut detail = format!(
        "{reads} committed standby read transactions checked with the primary's {primary}: G-single and G2-item cycles through them are expected (a stale snapshot), not counted"
    );
    if let Some(e) = example {
        detail = format!("{total} found ({}); e.g. {e}; {detail}", kinds.join(", "));
    }
    let mut inv = InvariantResult::count(NAME, total, detail);
    inv.checked = Some(reads as u64);
    inv
}

/// Values in committed standby reads (the transactions of `mixed` from
/// `primary` on) that no transaction before `primary` appended to their
/// key: how many, and the first as (transaction, key, value).
fn never_appended(mixed: &History, primary: usize) -> (u64, Option<(u32, u64, u64)>) {
    let appended: HashSet<(u64, u64)> = mixed.txns[..primary]
        .iter()
        .flat_map(|t| t.ops.iter())
        .filter_map(|op| match op {
            Op::Append { key, value } => Some((*key, *value)),
            _ => None,
        })
        .collect();
    let (mut n, mut first) = (0u64, None);
    for (i, t) in mixed.txns.iter().enumerate().skip(primary) {
        for (key, values) in t.ops.iter().flat_map(read_lists) {
            for &v in values {
                if !appended.contains(&(key, v)) {
                    n += 1;
                    first.get_or_insert((i as u32, key, v));
                }
            }
        }
    }
    (n, first)
}

/// The lists an operation read: a read's, or each row of a scan.
fn read_lists(op: &Op) -> Vec<(u64, &[u64])> {
    match op {
        Op::Read {
            key,
            values: Some(v),
        } => vec![(*key, v.as_slice())],
        Op::Scan { rows: Some(r), .. } => r.iter().map(|(k, v)| (*k, v.as_slice())).collect(),
        _ => Vec::new(),
    }
}

/// `T<t> (standby|primary, client c, status): ops`.
fn line(mixed: &History, t: u32, primary: usize) -> String {
    let txn: &Txn = &mixed.txns[t as usize];
    format!(
        "T{t} ({}, client {}, {}): {}",
        if t as usize >= primary {
            "standby"
        } else {
            "primary"
        },
        txn.process,
        elle::show_status(&txn.status),
        elle::show_ops(txn)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elle::Status;

    fn txn(process: u32, status: Status, ops: Vec<Op>) -> Txn {
        Txn {
            process,
            status,
            ops,
            ..Txn::default()
        }
    }

    fn append(key: u64, value: u64) -> Op {
        Op::Append { key, value }
    }

    fn read(key: u64, values: &[u64]) -> Op {
        Op::Read {
            key,
            values: Some(values.to_vec()),
        }
    }

    /// The primary's transactions on keys 1 (x) and 2 (y): T0 creates
    /// both; T1 reads both and appends to y while T2 appends to x (T1
    /// -rw-> T2, no cycle); T3 reads both lists at the end; T4 appends 3
    /// to x and aborts.
    fn primary() -> Vec<Txn> {
        vec![
            txn(0, Status::Committed, vec![append(1, 1), append(2, 10)]),
            txn(
                1,
                Status::Committed,
                vec![read(1, &[1]), read(2, &[10]), append(2, 20)],
            ),
            txn(2, Status::Committed, vec![append(1, 2)]),
            txn(
                3,
                Status::Committed,
                vec![read(1, &[1, 2]), read(2, &[10, 20])],
            ),
            txn(
                4,
                Status::Aborted {
                    sqlstate: Some("40001".into()),
                },
                vec![append(1, 3)],
            ),
        ]
    }

    /// Checks `primary()` alone, then with `standby` appended.
    fn check(standby: Vec<Txn>) -> (Report, InvariantResult) {
        let mut h = History { txns: primary() };
        let n = h.len();
        let alone = elle::check(&h);
        h.txns.extend(standby);
        let report = elle::check(&h);
        let inv = consistent(&h, n, &alone, &report);
        (report, inv)
    }

    /// A standby read of x after T2 and of y before T1 (Fekete's
    /// read-only anomaly): T1 -rw-> T2 -wr-> S -rw-> T1, a G2-item cycle
    /// through the standby read, which a stale snapshot may show: not
    /// counted. A standby read showing T4's aborted append is G1a:
    /// counted.
    #[test]
    fn a_stale_read_is_not_counted_and_an_aborted_append_is() {
        let stale = txn(5, Status::Committed, vec![read(1, &[1, 2]), read(2, &[10])]);
        let (report, inv) = check(vec![stale.clone()]);
        assert_eq!(report.count(Class::G2Item), 1, "{}", report.render());
        assert_eq!((inv.ok, inv.violations), (true, 0), "{}", inv.detail);
        assert_eq!(inv.checked, Some(1));

        let dirty = txn(6, Status::Committed, vec![read(1, &[1, 2, 3])]);
        let (report, inv) = check(vec![stale, dirty]);
        assert_eq!(report.count(Class::G2Item), 1, "{}", report.render());
        assert_eq!((inv.ok, inv.violations), (false, 1), "{}", inv.detail);
        assert!(inv.detail.contains("G1a 1"), "{}", inv.detail);
        assert!(
            inv.detail.contains("T6 (standby, client 6"),
            "{}",
            inv.detail
        );
        assert!(inv.detail.contains("T4 (primary"), "{}", inv.detail);
    }

    /// The primary's own G1a would be the primary's invariant's, not
    /// this one's: a primary read of T4's append counts 0 here.
    #[test]
    fn the_primarys_own_anomalies_are_not_counted() {
        let mut txns = primary();
        txns.push(txn(5, Status::Committed, vec![read(1, &[1, 2, 3])]));
        let mut h = History { txns };
        let n = h.len();
        let alone = elle::check(&h);
        assert_eq!(alone.count(Class::G1a), 1);
        h.txns.push(txn(6, Status::Committed, vec![read(1, &[1])]));
        let report = elle::check(&h);
        let inv = consistent(&h, n, &alone, &report);
        assert_eq!((inv.ok, inv.violations), (true, 0), "{}", inv.detail);
    }

    /// A standby read with a value never appended, not a prefix of the
    /// key's order: never-appended and incompatible-order, one each.
    #[test]
    fn a_value_never_appended_is_counted() {
        let garbage = txn(5, Status::Committed, vec![read(2, &[10, 99])]);
        let (_, inv) = check(vec![garbage]);
        assert_eq!(inv.violations, 2, "{}", inv.detail);
        assert!(inv.detail.contains("never-appended 1"), "{}", inv.detail);
        assert!(
            inv.detail.contains("incompatible-order 1"),
            "{}",
            inv.detail
        );
    }
}
