//! A cycle's transactions as history excerpts: Jepsen's EDN, one
//! completed operation per line as Elle's list-append checker reads them
//! (`{:type :ok, :f :txn, :value [[:append 3 40] [:r 4 [1 2]]], ...}`,
//! Kingsbury & Alvaro, VLDB 2020), and isobench's JSON.

use std::fmt::Write as _;

use crate::elle::{History, Op, Status, Txn};

/// `[:append 3 40]`, `[:r 4 [1 2]]`, `[:r 4 nil]`; a scan as the reads
/// of the keys it returned (EDN has no range read).
fn micro(op: &Op, out: &mut Vec<String>) {
    let list = |v: &[u64]| {
        format!(
            "[{}]",
            v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
        )
    };
    match op {
        Op::Append { key, value } => out.push(format!("[:append {key} {value}]")),
        Op::Read {
            key,
            values: Some(v),
        } => out.push(format!("[:r {key} {}]", list(v))),
        Op::Read { key, values: None } => out.push(format!("[:r {key} nil]")),
        Op::Scan {
            rows: Some(rows), ..
        } => {
            for (k, v) in rows {
                out.push(format!("[:r {k} {}]", list(v)));
            }
        }
        Op::Scan { rows: None, .. } => {}
        Op::Write { key, value } => out.push(format!("[:w {key} {value}]")),
        Op::Get {
            key,
            value: Some(v),
        } => out.push(format!("[:r {key} {v}]")),
        Op::Get { key, value: None } => out.push(format!("[:r {key} nil]")),
    }
}

/// One completion operation of transaction `index`.
fn line(index: u64, t: &Txn) -> String {
    let kind = match t.status {
        Status::Committed => ":ok",
        Status::Aborted { .. } => ":fail",
        Status::Unknown => ":info",
    };
    let mut ops = Vec::new();
    for op in &t.ops {
        micro(op, &mut ops);
    }
    let mut s = format!(
        "{{:index {index}, :type {kind}, :f :txn, :process {}, :value [{}]",
        t.process,
        ops.join(" ")
    );
    if let Some(timing) = &t.timing {
        // Jepsen's :time is in nanoseconds.
        let _ = write!(s, ", :time {}", timing.begin_us * 1000);
    }
    if let Status::Aborted {
        sqlstate: Some(code),
    } = &t.status
    {
        let _ = write!(s, ", :error [:sqlstate \"{code}\"]");
    }
    s.push('}');
    s
}

/// `history.edn`: the transactions `txns` (history indexes), in that
/// order, one EDN map per line.
pub(super) fn excerpt(h: &History, txns: &[u64]) -> String {
    let mut s = String::from(
        ";; isobench: the transactions of one cycle, as completed operations \
         (Jepsen's list-append; :index is isobench's T<i>)\n",
    );
    for &i in txns {
        if let Some(t) = h.txns.get(i as usize) {
            s.push_str(&line(i, t));
            s.push('\n');
        }
    }
    s
}

/// `history.json`: `{"txns": [{"index": i, "txn": {...}}]}` with
/// isobench's transactions (`isobench check-history` reads the `txn`
/// objects one per line).
pub(super) fn json_excerpt(h: &History, txns: &[u64]) -> String {
    let items: Vec<serde_json::Value> = txns
        .iter()
        .filter_map(|&i| {
            let t = h.txns.get(i as usize)?;
            Some(serde_json::json!({ "index": i, "txn": t }))
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({ "txns": items }))
        .expect("JSON of plain data");
    s.push('\n');
    s
}
