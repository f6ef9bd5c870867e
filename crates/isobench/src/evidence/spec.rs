//! `replay.spec`: an isolation-tester spec (PostgreSQL's
//! src/test/isolation format, which `isobench anomalies --spec` and
//! isolationtester both run) that replays a cycle's transactions, one
//! session each, in the order their clients sent the statements. A
//! COMMIT takes effect somewhere between being sent and its answer, so
//! where a cycle's anti-dependency says a transaction's snapshot missed
//! another's commit (`T1 -rw-> T2`: T1 read what was before T2's write)
//! but T2's COMMIT was sent before T1's first statement, the replay puts
//! that COMMIT right after T1's first statement, as long as T2's answer
//! had not come back by then (else the order sent stays).
//!
//! The setup creates the run's tables (its shape) and gives each key the
//! list the replay needs: for a key a cycle transaction appended to, the
//! versions before its first such append; for a key they only read, what
//! the first of them read. Appends by transactions outside the cycle are
//! not replayed, so a key two of them read in different states starts as
//! the first saw it (the spec says which).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::Violation;
use super::words::op_statements;
use crate::elle::{History, Key, Op, Value};
use crate::model::Dependency;
use crate::workload::list_append::Shape;

/// One step: when its statement was sent (µs since the Unix epoch, then
/// its place among statements sent at once), its session and text.
struct Step {
    at: (u64, usize),
    session: u64,
    name: String,
    sql: String,
}

/// When transaction `t`'s first statement after BEGIN was sent (µs since
/// the Unix epoch): where its snapshot was taken, at the latest.
fn first_sent(h: &History, t: u64) -> Option<u64> {
    let timing = h.txns.get(t as usize)?.timing.as_ref()?;
    Some(timing.begin_us + u64::from(timing.ops.first()?[0]))
}

/// The spec's text (see the module docs).
pub fn replay_spec(
    h: &History,
    v: &Violation,
    shape: &Shape,
    orders: &BTreeMap<Key, Vec<Value>>,
) -> String {
    let txns = v.cycle.txns();
    let mut steps: Vec<Step> = Vec::new();
    for &t in &txns {
        let Some(txn) = h.txns.get(t as usize) else {
            continue;
        };
        let begin_us = txn.timing.as_ref().map_or(0, |x| x.begin_us);
        let at = |off: Option<u32>, i: usize| (begin_us + u64::from(off.unwrap_or(0)), i);
        let mut push = |at: (u64, usize), name: String, sql: String| {
            steps.push(Step {
                at,
                session: t,
                name,
                sql,
            })
        };
        push(
            at(Some(0), 0),
            format!("t{t}_begin"),
            Shape::begin_sql(v.level, txn.read_only, shape.deferrable),
        );
        for (j, op) in txn.ops.iter().enumerate() {
            let sent = txn.timing.as_ref().and_then(|x| x.ops.get(j)).map(|s| s[0]);
            for (k, sql) in op_statements(op, Some(shape), orders)
                .into_iter()
                .enumerate()
            {
                // Without times, the statements in transaction order.
                let at = match sent {
                    Some(s) => at(Some(s), k),
                    None => (begin_us + 1 + (10 * j + k) as u64, 0),
                };
                // A second statement of one operation (select-insert's
                // update or insert after its check): `t7_2b`.
                let name = match k {
                    0 => format!("t{t}_{}", j + 1),
                    _ => format!("t{t}_{}b", j + 1),
                };
                push(at, name, sql);
            }
        }
        let commit = txn.timing.as_ref().and_then(|x| x.commit);
        let at = match commit {
            Some(c) => {
                let (sent, answered) = (begin_us + u64::from(c[0]), begin_us + u64::from(c[1]));
                // The latest first statement of a cycle transaction whose
                // snapshot missed this commit, while it was on its way.
                let missed = v
                    .cycle
                    .steps
                    .iter()
                    .filter(|e| e.to == t && e.kind == Dependency::Rw)
                    .filter_map(|e| first_sent(h, e.from))
                    .filter(|&s| s >= sent && s <= answered)
                    .max();
                // Right after that statement (its place among those sent
                // at once: after all of them).
                missed.map_or((sent, 0), |s| (s, usize::MAX))
            }
            None => (begin_us + 1_000_000_000, 0),
        };
        push(at, format!("t{t}_commit"), "COMMIT".into());
    }
    // Stable: a transaction's own steps keep their order at equal times.
    steps.sort_by_key(|s| s.at);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "# isobench: a replay of {} at {}{} ({})",
        v.class,
        v.level.sql(),
        v.run.map_or_else(String::new, |r| format!(" in run {r}")),
        v.cell
    );
    let _ = writeln!(out, "# cycle: {}", v.cycle.arrows());
    out.push_str(
        "# One session per transaction; the permutation is the order in which the clients sent\n\
         # the statements (their clocks), except a COMMIT still on its way when a transaction\n\
         # that missed it took its snapshot: it comes right after that transaction's first\n\
         # statement. Keys start as the first cycle transaction found them; appends of\n\
         # transactions outside the cycle are not replayed.\n\n",
    );
    out.push_str("setup\n{\n");
    for t in 0..shape.tables {
        for ddl in shape.ddl(t) {
            let _ = writeln!(out, "  {ddl};");
        }
    }
    for (key, list) in initial_state(h, &txns, orders) {
        if let Some(sql) = shape.insert_sql(key, &list) {
            let _ = writeln!(out, "  {sql};");
        }
    }
    out.push_str("}\n\nteardown\n{\n");
    let tables: Vec<String> = (0..shape.tables).map(|t| shape.table_name(t)).collect();
    let _ = writeln!(out, "  DROP TABLE {};", tables.join(", "));
    out.push_str("}\n");
    for &t in &txns {
        let _ = writeln!(out, "\nsession \"t{t}\"");
        for s in steps.iter().filter(|s| s.session == t) {
            let _ = writeln!(out, "step \"{}\" {{ {}; }}", s.name, s.sql);
        }
    }
    out.push_str("\npermutation");
    for s in &steps {
        let _ = write!(out, " \"{}\"", s.name);
    }
    out.push('\n');
    out
}

/// Each key the cycle's transactions touch, with the list the replay
/// starts it at (empty: no row).
fn initial_state(
    h: &History,
    txns: &[u64],
    orders: &BTreeMap<Key, Vec<Value>>,
) -> BTreeMap<Key, Vec<Value>> {
    let cycle: Vec<&crate::elle::Txn> = txns
        .iter()
        .filter_map(|&t| h.txns.get(t as usize))
        .collect();
    // Values the cycle appended, per key.
    let mut appended: BTreeMap<Key, BTreeSet<Value>> = BTreeMap::new();
    // What the cycle's reads saw, per key, earliest read first.
    let mut seen: BTreeMap<Key, Vec<(u64, Vec<Value>)>> = BTreeMap::new();
    for t in &cycle {
        let begin = t.timing.as_ref().map_or(0, |x| x.begin_us);
        for (j, op) in t.ops.iter().enumerate() {
            let at = begin
                + t.timing
                    .as_ref()
                    .and_then(|x| x.ops.get(j))
                    .map_or(j as u64, |s| u64::from(s[0]));
            match op {
                Op::Append { key, value } => {
                    appended.entry(*key).or_default().insert(*value);
                }
                Op::Read {
                    key,
                    values: Some(v),
                } => seen.entry(*key).or_default().push((at, v.clone())),
                // A register: what the read saw, as a one-value list (its
                // writes have no order to start from).
                Op::Get { key, value } => seen
                    .entry(*key)
                    .or_default()
                    .push((at, value.iter().copied().collect())),
                Op::Scan {
                    lo,
                    hi,
                    stride,
                    rows: Some(rows),
                } => {
                    for (&key, _) in orders
                        .range(*lo..=*hi)
                        .filter(|(k, _)| (**k - *lo) % (*stride).max(1) == 0)
                    {
                        let v = rows
                            .iter()
                            .find(|(k, _)| *k == key)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default();
                        seen.entry(key).or_default().push((at, v));
                    }
                }
                _ => {}
            }
        }
    }
    let keys: BTreeSet<Key> = appended.keys().chain(seen.keys()).copied().collect();
    keys.into_iter()
        .map(|key| {
            let order = orders.get(&key);
            let first_own = appended
                .get(&key)
                .and_then(|vals| order.and_then(|o| o.iter().position(|v| vals.contains(v))));
            let earliest = seen
                .get(&key)
                .and_then(|s| s.iter().min_by_key(|(at, _)| *at));
            let list = match (first_own, order, earliest) {
                (Some(p), Some(o), _) => o[..p].to_vec(),
                (_, _, Some((_, v))) => v.clone(),
                _ => Vec::new(),
            };
            (key, list)
        })
        .collect()
}
