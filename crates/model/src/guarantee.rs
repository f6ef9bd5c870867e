//! What each isolation level promises, as the anomaly classes it forbids,
//! and the cycles a history checker shows as evidence.
//!
//! Sources: Adya, "Weak Consistency: A Generalized Theory and Optimistic
//! Implementations for Distributed Transactions", MIT PhD thesis, 1999
//! (the phenomena G0, G1a-c, G-single, G2-item, G2 and the levels PL-1 to
//! PL-3 that proscribe them, sections 4.2-4.4 and 5); Berenson et al., "A
//! Critique of ANSI SQL Isolation Levels", SIGMOD 1995 (snapshot isolation
//! admits write skew); PostgreSQL's documentation, "Transaction
//! Isolation" (chapter 13.2): READ COMMITTED sees each statement's
//! snapshot, REPEATABLE READ is snapshot isolation, SERIALIZABLE is
//! serializable snapshot isolation (Ports and Grittner, VLDB 2012), which
//! promises that every set of committed serializable transactions has the
//! effect of running them one at a time.
//!
//! | level | forbids | admits |
//! |---|---|---|
//! | SERIALIZABLE (PL-3) | every cycle: G0, G1a, G1b, G1c, G-single, G2-item, G2 | nothing |
//! | REPEATABLE READ (snapshot isolation) | G0, G1, G-single (a snapshot cannot miss a write it read past) | G2-item, G2 (write skew) |
//! | READ COMMITTED (PL-2) | G0, G1 (no dirty write, no dirty or intermediate read, no cycle without an anti-dependency) | G-single, G2-item, G2; a transaction may see others' newer commits between its statements (the checker's `internal`) |
//!
//! `incompatible-order` (reads of one key that no version order
//! explains) is forbidden at every level: a list only grows by appends.
//! A class a level forbids that a history shows is a **guarantee
//! violation**: the level broke its promise (or the checker is wrong),
//! which a report says before anything else. A class a level admits is an
//! anomaly it allows, reported as what the level does not buy.

use serde::{Deserialize, Serialize};

use crate::Isolation;

/// Every class the history checkers count, in report order (the
/// invariant names of their results).
pub const ANOMALY_CLASSES: [&str; 8] = [
    "G0",
    "G1a",
    "G1b",
    "G1c",
    "G-single",
    "G2-item",
    "incompatible-order",
    "internal",
];

/// The classes of [`ANOMALY_CLASSES`] that `level` admits (see the module
/// docs for the sources).
pub fn admitted_classes(level: Isolation) -> &'static [&'static str] {
    match level {
        Isolation::ReadCommitted => &["G-single", "G2-item", "internal"],
        Isolation::RepeatableRead => &["G2-item"],
        Isolation::Serializable => &[],
    }
}

/// Whether a history showing `class` breaks `level`'s promise: `class`
/// is one the checkers count and `level` does not admit it.
pub fn forbids(level: Isolation, class: &str) -> bool {
    ANOMALY_CLASSES.contains(&class) && !admitted_classes(level).contains(&class)
}

/// `level`'s promise in a sentence, for the reports.
pub fn promise(level: Isolation) -> &'static str {
    match level {
        Isolation::Serializable => {
            "SERIALIZABLE promises that committed transactions could have run one at a time: no dependency cycle of any class (Adya's PL-3)"
        }
        Isolation::RepeatableRead => {
            "REPEATABLE READ (snapshot isolation) promises no dirty write or read and no cycle with a single anti-dependency (G0, G1, G-single); write skew (G2-item) is allowed"
        }
        Isolation::ReadCommitted => {
            "READ COMMITTED promises no dirty write and no dirty or intermediate read (G0, G1: Adya's PL-2)"
        }
    }
}

/// `--hunt`: the study's cells run again and again, interleaved, until
/// every cell has found a guarantee violation, or the upper end of every
/// cell's violation rate (exact 95 % interval) is below `rate_bound`, or
/// `budget_s` has passed since the study started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Hunt {
    /// Violations per committed transaction (e.g. 1e-6, one per million).
    pub rate_bound: f64,
    /// The time budget, s.
    pub budget_s: f64,
}

/// `--rate-bound` by default: one violation per million committed
/// transactions.
pub const DEFAULT_RATE_BOUND: f64 = 1e-6;
/// `--hunt-for` by default, s.
pub const DEFAULT_HUNT_BUDGET_S: f64 = 1800.0;

/// The most cycles a history check keeps per class and run: its first
/// cases, the evidence a report and `violations/` show.
pub const MAX_CYCLES: usize = 8;

/// A dependency between two transactions of a history (Adya 1999,
/// section 3.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dependency {
    /// Write-write: the second overwrote (appended after) the first's write.
    Ww,
    /// Write-read: the second read what the first wrote.
    Wr,
    /// Read-write (anti-dependency): the second wrote a version after the
    /// one the first read.
    Rw,
}

impl Dependency {
    /// `ww`, `wr` or `rw`.
    pub fn name(self) -> &'static str {
        match self {
            Dependency::Ww => "ww",
            Dependency::Wr => "wr",
            Dependency::Rw => "rw",
        }
    }
}

/// One edge of a cycle: transaction `from` -> `to` (indexes into the run's
/// history, `T<i>` in explanations), and the operations that prove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CycleStep {
    pub from: u64,
    pub to: u64,
    pub kind: Dependency,
    /// The operations that prove the edge, e.g. `T7 read k3 = [1 2]
    /// without 5, which T9 appended next (rw)`.
    pub why: String,
}

/// A dependency cycle a history checker found: its edges in order (the
/// last one ends where the first starts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cycle {
    pub steps: Vec<CycleStep>,
    /// Where its evidence was written, relative to the results directory
    /// (`violations/<n>`), for a cycle that broke the run's level's
    /// promise; `None` otherwise or before it is written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl Cycle {
    /// `T1 -wr-> T2 -rw-> T3 -rw-> T1`.
    pub fn arrows(&self) -> String {
        let mut s = String::new();
        for step in &self.steps {
            s.push_str(&format!("T{} -{}-> ", step.from, step.kind.name()));
        }
        if let Some(first) = self.steps.first() {
            s.push_str(&format!("T{}", first.from));
        }
        s
    }

    /// The transactions on the cycle, in order.
    pub fn txns(&self) -> Vec<u64> {
        self.steps.iter().map(|s| s.from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializable_forbids_every_class_and_the_weaker_levels_admit_theirs() {
        for class in ANOMALY_CLASSES {
            assert!(forbids(Isolation::Serializable, class), "{class}");
        }
        assert!(!forbids(Isolation::RepeatableRead, "G2-item"));
        assert!(forbids(Isolation::RepeatableRead, "G-single"));
        assert!(forbids(Isolation::RepeatableRead, "internal"));
        assert!(!forbids(Isolation::ReadCommitted, "G-single"));
        assert!(forbids(Isolation::ReadCommitted, "G1c"));
        assert!(forbids(Isolation::ReadCommitted, "incompatible-order"));
        // A name that is not a checker's class is never a violation.
        assert!(!forbids(Isolation::Serializable, "no-negative-balance"));
    }

    #[test]
    fn a_cycle_reads_as_arrows() {
        let step = |from, to, kind| CycleStep {
            from,
            to,
            kind,
            why: String::new(),
        };
        let c = Cycle {
            steps: vec![
                step(13400, 54663, Dependency::Wr),
                step(54663, 110483, Dependency::Rw),
                step(110483, 13400, Dependency::Rw),
            ],
            evidence: None,
        };
        assert_eq!(c.arrows(), "T13400 -wr-> T54663 -rw-> T110483 -rw-> T13400");
        assert_eq!(c.txns(), [13400, 54663, 110483]);
    }
}
