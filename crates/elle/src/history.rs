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
}

impl Op {
    /// The key the operation touches.
    pub fn key(&self) -> Key {
        match self {
            Op::Append { key, .. } | Op::Read { key, .. } => *key,
        }
    }
}

/// How a transaction ended, as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Status {
    /// COMMIT succeeded.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txn {
    /// The client (Jepsen's process) that ran it.
    pub process: u32,
    pub status: Status,
    pub ops: Vec<Op>,
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
