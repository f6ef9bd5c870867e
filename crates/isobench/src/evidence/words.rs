//! `cycle.txt` and `statements.txt`: a violation in words, and its
//! transactions' statements with the client's times.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Violation;
use crate::elle::{History, Key, Op, Txn, Value, show_ops, show_status};
use crate::workload::list_append::{Shape, literal};

/// The header both files start with: what broke which promise, where.
fn header(v: &Violation) -> String {
    let run = v.run.map_or_else(String::new, |r| format!(", run {r}"));
    format!(
        "{} at {}{run} ({})\n{}.\n\n",
        v.class,
        v.level.sql(),
        v.cell,
        crate::model::promise(v.level)
    )
}

/// `cycle.txt`: the cycle as arrows, each edge with the operations that
/// prove it, then each transaction as the history has it.
pub(super) fn cycle(h: &History, v: &Violation) -> String {
    let mut s = header(v);
    let _ = writeln!(s, "cycle: {}\n", v.cycle.arrows());
    for step in &v.cycle.steps {
        let _ = writeln!(
            s,
            "T{} -{}-> T{}: {}",
            step.from,
            step.kind.name(),
            step.to,
            step.why
        );
    }
    s.push_str("\ntransactions:\n");
    for t in v.cycle.txns() {
        let Some(txn) = h.txns.get(t as usize) else {
            let _ = writeln!(s, "T{t}: not in the history");
            continue;
        };
        let _ = writeln!(s, "T{t} {}: {}", who(txn), show_ops(txn));
    }
    s
}

/// `(client 3, backend 4242, committed)`.
fn who(t: &Txn) -> String {
    let backend = t
        .pid
        .map_or_else(String::new, |p| format!(", backend pid {p}"));
    let ro = if t.read_only { ", read only" } else { "" };
    format!(
        "(client {}{backend}{ro}, {})",
        t.process,
        show_status(&t.status)
    )
}

/// The statements of one operation as sent: with the tables' shape, the
/// SQL with its values (for `upsert=select-insert` the check and then the
/// update or the insert, as the key existed or not, which its place in
/// the version order `orders` tells); without, the operation itself.
pub(super) fn op_statements(
    op: &Op,
    shape: Option<&Shape>,
    orders: &BTreeMap<Key, Vec<Value>>,
) -> Vec<String> {
    let Some(shape) = shape else {
        return vec![show_ops(&Txn {
            ops: vec![op.clone()],
            ..Txn::default()
        })];
    };
    match op {
        Op::Append { key, value } => {
            let sql = shape.append_sql(shape.table(*key));
            let args = [*key as i64, *value as i64];
            if sql.len() == 1 {
                return vec![literal(&sql[0], &args)];
            }
            let existed = orders
                .get(key)
                .and_then(|o| o.iter().position(|v| v == value))
                .is_some_and(|p| p > 0);
            vec![
                literal(&sql[0], &args),
                literal(&sql[if existed { 1 } else { 2 }], &args),
            ]
        }
        Op::Read { key, .. } | Op::Get { key, .. } => {
            vec![literal(&shape.read_sql(shape.table(*key)), &[*key as i64])]
        }
        Op::Write { key, value } => {
            // A register's history does not say whether the key existed:
            // with select-insert, the check and then the insert.
            let sql = shape.append_sql(shape.table(*key));
            let args = [*key as i64, *value as i64];
            sql.iter()
                .enumerate()
                .filter(|(i, _)| sql.len() == 1 || *i != 1)
                .map(|(_, s)| literal(s, &args))
                .collect()
        }
        Op::Scan { lo, hi, .. } => vec![literal(
            &shape.scan_sql(shape.table(*lo)),
            &[*lo as i64, *hi as i64],
        )],
    }
}

/// `statements.txt`: per transaction, its BEGIN, statements and COMMIT
/// with the client's send and answer times (UTC, and ms after BEGIN), in
/// the cycle's order.
pub(super) fn statements(h: &History, v: &Violation, orders: &BTreeMap<Key, Vec<Value>>) -> String {
    let mut s = header(v);
    s.push_str(
        "Times are the client's clock: when a statement was sent and when its answer came back, \
         in ms after BEGIN was sent.\n",
    );
    for t in v.cycle.txns() {
        let Some(txn) = h.txns.get(t as usize) else {
            continue;
        };
        let _ = writeln!(s, "\nT{t} {}", who(txn));
        let begin = Shape::begin_sql(
            v.level,
            txn.read_only,
            v.shape.is_some_and(|s| s.deferrable),
        );
        let Some(timing) = &txn.timing else {
            let _ = writeln!(s, "  (no times recorded)\n  {begin}");
            for op in &txn.ops {
                for sql in op_statements(op, v.shape, orders) {
                    let _ = writeln!(s, "  {sql}");
                }
            }
            continue;
        };
        let at = |us: u64| {
            chrono::DateTime::from_timestamp_micros(us as i64)
                .map_or_else(|| us.to_string(), |d| d.format("%H:%M:%S%.6f").to_string())
        };
        let ms = |off: u32| format!("{:9.3}", f64::from(off) / 1e3);
        let _ = writeln!(
            s,
            "  BEGIN sent at {} UTC ({})",
            at(timing.begin_us),
            chrono::DateTime::from_timestamp_micros(timing.begin_us as i64)
                .map_or_else(String::new, |d| d.format("%Y-%m-%d").to_string())
        );
        let _ = writeln!(s, "  {}          {begin}", ms(0));
        for (i, op) in txn.ops.iter().enumerate() {
            let times = timing.ops.get(i).copied();
            for sql in op_statements(op, v.shape, orders) {
                match times {
                    Some([sent, answered]) => {
                        let _ = writeln!(s, "  {} {}  {sql}", ms(sent), ms(answered));
                    }
                    None => {
                        let _ = writeln!(s, "  (not answered)  {sql}");
                    }
                }
            }
        }
        match timing.commit {
            Some([sent, answered]) => {
                let _ = writeln!(s, "  {} {}  COMMIT", ms(sent), ms(answered));
            }
            None => s.push_str("  (ended before COMMIT)\n"),
        }
    }
    s
}
