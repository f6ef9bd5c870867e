//! A list-append history: the transactions one run executed, each with its
//! micro-operations, the values its reads returned, and how it ended.
//!
//! The shape follows Jepsen's list-append histories (Kingsbury & Alvaro,
//! "Elle: Inferring Isolation Anomalies from Experimental Observations",
//! VLDB 2020, section 4): a transaction is a list of `append(k, v)` and
//! `read(k) -> [v1 v2 ...]` operations; values are unique per key, so every
//! read names the transactions whose appends it saw, in order. The types
//! are plain serde data so that histories recorded elsewhere (Elle's JSON
//! histories, once converted to integer keys and values) can be checked by
//! the same code.

use serde::{Deserialize, Serialize};

/// A key of the list-append store.
pub type Key = u64;
/// An appended value: unique per key within one history.
pub type Value = u64;

/// One micro-operation of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "kebab-case")]
pub enum Op {
    /// Append `value` to the list at `key` (creating the key if absent).
    Append { key: Key, value: Value },
    /// Read the whole list at `key`; `values` is `None` when the read did
    /// not return (the transaction failed at or before it), `Some(vec![])`
    /// for an absent key.
    Read {
        key: Key,
        values: Option<Vec<Value>>,
    },
    /// Read every key from `lo` to `hi` that is `lo` plus a multiple of
    /// `stride` (a range scan of one table whose keys are spread over
    /// tables by their residue; a predicate read): `rows` are the keys
    /// found with their lists, in key order; `None` when the scan did not
    /// return. The checker reads it as a read of every such key that the
    /// history appends to, absent ones as empty lists
    /// ([`History::with_scans_as_reads`]).
    Scan {
        lo: Key,
        hi: Key,
        #[serde(default = "one")]
        stride: u64,
        rows: Option<Vec<(Key, Vec<Value>)>>,
    },
    /// A register write (Elle's rw-register): `key` now holds `value`.
    Write { key: Key, value: Value },
    /// A register read: the value `key` held, `None` for none (the key
    /// absent, Elle's nil). A read that did not return is not recorded.
    Get { key: Key, value: Option<Value> },
}

impl Op {
    /// The key the operation touches (a scan: its first).
    pub fn key(&self) -> Key {
        match self {
            Op::Append { key, .. }
            | Op::Read { key, .. }
            | Op::Write { key, .. }
            | Op::Get { key, .. } => *key,
            Op::Scan { lo, .. } => *lo,
        }
    }
}

fn one() -> u64 {
    1
}

/// How a transaction ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Status {
    /// COMMIT succeeded.
    #[default]
    Committed,
    /// The transaction failed and rolled back; `sqlstate` of the error when
    /// the server sent one (e.g. `40001`).
    Aborted { sqlstate: Option<String> },
    /// The connection broke during COMMIT: it may or may not have
    /// committed. Treated as possibly committed, as Elle treats `:info`
    /// operations: its appends may be observed, its reads are not used.
    Unknown,
}

/// One transaction attempt (a retried transaction is one `Txn` per
/// attempt, each appending fresh values).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Txn {
    /// The client (Jepsen's process) that ran it.
    pub process: u32,
    pub status: Status,
    pub ops: Vec<Op>,
    /// Declared read-only (`BEGIN ... READ ONLY`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The server process (backend pid) that ran it, when recorded: the
    /// key to its lines in the server log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// When its statements went out and came back, by the client's
    /// clock, when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
}

/// A transaction's client-side times: when BEGIN was sent (µs since the
/// Unix epoch), then each operation's statement sent and its answer
/// received, and COMMIT's, as µs after that. Enough to order the
/// statements of concurrent transactions as the clients saw them, and to
/// find them in the server's log.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timing {
    /// BEGIN sent, µs since the Unix epoch.
    pub begin_us: u64,
    /// Per operation, in the order of [`Txn::ops`]: `[sent, answered]`,
    /// µs after `begin_us` (an operation that got no answer has none).
    #[serde(default)]
    pub ops: Vec<[u32; 2]>,
    /// COMMIT `[sent, answered]`, µs after `begin_us`; `None` when the
    /// transaction ended before COMMIT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<[u32; 2]>,
}

impl Txn {
    pub fn committed(&self) -> bool {
        self.status == Status::Committed
    }

    pub fn aborted(&self) -> bool {
        matches!(self.status, Status::Aborted { .. })
    }
}

/// Every transaction of a run; a transaction's index is its id (`T<i>` in
/// explanations).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub txns: Vec<Txn>,
}

impl History {
    pub fn len(&self) -> usize {
        self.txns.len()
    }

    /// Whether this is a register history (Elle's rw-register: writes and
    /// reads of single values), checked by [`crate::register`].
    pub fn is_register(&self) -> bool {
        self.txns.iter().any(|t| {
            t.ops
                .iter()
                .any(|o| matches!(o, Op::Write { .. } | Op::Get { .. }))
        })
    }

    /// Whether any transaction scanned a range of keys.
    pub fn has_scans(&self) -> bool {
        self.txns
            .iter()
            .any(|t| t.ops.iter().any(|o| matches!(o, Op::Scan { .. })))
    }

    /// The history with every scan replaced by reads of the keys in its
    /// range that some transaction appends to, in key order: a key the
    /// scan returned reads as its list, one it did not return as absent
    /// (`[]`), which is what the scan's predicate saw of it. Keys no
    /// transaction appends to are absent throughout and carry no
    /// dependency. So a phantom (a key created after a scan that did not
    /// see it) becomes an anti-dependency on the key's first append: the
    /// predicate's, checked item by item (Adya's G2 cycles show as
    /// G2-item here).
    pub fn with_scans_as_reads(&self) -> History {
        let appended: std::collections::BTreeSet<Key> = self
            .txns
            .iter()
            .flat_map(|t| t.ops.iter())
            .filter_map(|o| match o {
                Op::Append { key, .. } => Some(*key),
                _ => None,
            })
            .collect();
        let txns = self
            .txns
            .iter()
            .map(|t| {
                let mut ops = Vec::with_capacity(t.ops.len());
                for op in &t.ops {
                    let Op::Scan {
                        lo,
                        hi,
                        stride,
                        rows,
                    } = op
                    else {
                        ops.push(op.clone());
                        continue;
                    };
                    let covered = |k: &&Key| (**k - *lo).is_multiple_of((*stride).max(1));
                    for &key in appended.range(*lo..=*hi).filter(covered) {
                        let values = rows.as_ref().map(|rows| {
                            rows.iter()
                                .find(|(k, _)| *k == key)
                                .map(|(_, v)| v.clone())
                                .unwrap_or_default()
                        });
                        ops.push(Op::Read { key, values });
                    }
                }
                Txn {
                    ops,
                    timing: None,
                    ..t.clone()
                }
            })
            .collect();
        History { txns }
    }

    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }
}

/// Renders a list compactly: all elements up to 6, else the first one and
/// the last three with the count, e.g. `[1 .. 7 8 9] (9 values)`.
pub fn show_list(values: &[Value]) -> String {
    let join = |vs: &[Value]| {
        vs.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    if values.len() <= 6 {
        format!("[{}]", join(values))
    } else {
        format!(
            "[{} .. {}] ({} values)",
            values[0],
            join(&values[values.len() - 3..]),
            values.len()
        )
    }
}

/// Renders a transaction's operations, e.g. `r(k1)=[1 2] a(k3,7)`.
pub fn show_ops(txn: &Txn) -> String {
    txn.ops
        .iter()
        .map(|op| match op {
            Op::Append { key, value } => format!("a(k{key},{value})"),
            Op::Read {
                key,
                values: Some(v),
            } => format!("r(k{key})={}", show_list(v)),
            Op::Read { key, values: None } => format!("r(k{key})=?"),
            Op::Scan {
                lo,
                hi,
                rows: Some(rows),
                ..
            } => format!(
                "scan(k{lo}..k{hi})={{{}}}",
                rows.iter()
                    .map(|(k, v)| format!("k{k}:{}", show_list(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Op::Scan {
                lo, hi, rows: None, ..
            } => format!("scan(k{lo}..k{hi})=?"),
            Op::Write { key, value } => format!("w(k{key},{value})"),
            Op::Get {
                key,
                value: Some(v),
            } => format!("r(k{key})={v}"),
            Op::Get { key, value: None } => format!("r(k{key})=nil"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Renders a status: `committed`, `aborted (40001)`, `outcome unknown`.
pub fn show_status(status: &Status) -> String {
    match status {
        Status::Committed => "committed".into(),
        Status::Aborted { sqlstate: Some(s) } => format!("aborted ({s})"),
        Status::Aborted { sqlstate: None } => "aborted".into(),
        Status::Unknown => "outcome unknown".into(),
    }
}
