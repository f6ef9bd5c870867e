//! An isolation checker for list-append histories in the style of Jepsen's
//! Elle (Kingsbury & Alvaro, "Elle: Inferring Isolation Anomalies from
//! Experimental Observations", VLDB 2020), classifying what it finds by
//! Adya's phenomena (Adya, "Weak Consistency: A Generalized Theory and
//! Optimistic Implementations for Distributed Transactions", MIT PhD
//! thesis, 1999).
//!
//! Why: invariants after a run see only what the final state shows, and
//! fixed interleavings (`isobench anomalies`) only what they were written
//! for. With list-append transactions every read reveals the order of the
//! appends to its key, so the dependencies between transactions of a run
//! at full concurrency can be inferred and their cycles classified.
//!
//! Pure code over a recorded [`History`]: the `list-append` workload
//! records one per run, and histories recorded elsewhere can be read into
//! the same types. Checking is near-linear in the history (sorting the
//! edges is the n log n part); the memory is a few machine words per
//! operation.

#[cfg(test)]
mod brute;
mod check;
mod explain;
mod graph;
mod history;
mod infer;
mod read;
pub mod register;

pub use check::{Class, Dep, Finding, MAX_CYCLES, NONE, Report, Step};
pub use history::{History, Key, Op, Status, Timing, Txn, Value, show_list, show_ops, show_status};
pub use read::{ReadError, parse};

/// Checks `history` for every class of [`Class::ALL`]: a register
/// history by what registers can prove ([`register::check`]), a
/// list-append one by its lists' version orders (range scans read as
/// reads of the keys in their range, [`History::with_scans_as_reads`]).
pub fn check(history: &History) -> Report {
    if history.is_register() {
        register::check(history)
    } else {
        check::check_lists(history)
    }
}

#[cfg(test)]
mod tests;
