//! What a probe expects and when it shows its anomaly, as data: the
//! conditions of `@anomaly` lines and the expectations of `@expect`
//! lines ([`super::directive`] parses them), and rows as written.

use std::collections::BTreeSet;
use std::fmt;

use crate::model::Isolation;

/// A step by position: `probe.sessions[session].steps[step]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepRef {
    pub session: usize,
    pub step: usize,
}
pub use crate::model::probes::Outcome;

/// How a level kept (or failed to keep) the anomaly out.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mechanism {
    /// A step waited on a lock held by another session.
    Blocked,
    /// A step failed with this SQLSTATE.
    Error(String),
    /// Neither: reads came from a snapshot that excluded the other writes.
    Snapshot,
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mechanism::Blocked => f.write_str("blocked"),
            Mechanism::Error(code) => f.write_str(code),
            Mechanism::Snapshot => f.write_str("snapshot"),
        }
    }
}

/// `@expect LEVEL OUTCOME [HOW...]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    pub level: Isolation,
    pub outcome: Outcome,
    /// `None`: any mechanism.
    pub how: Option<BTreeSet<Mechanism>>,
    pub line: u32,
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.outcome.name())?;
        if let Some(how) = &self.how {
            let how: Vec<String> = how.iter().map(ToString::to_string).collect();
            write!(f, " ({})", how.join(", "))?;
        }
        Ok(())
    }
}

/// What a condition term looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    Step(StepRef),
    Final,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`: exactly these rows, in this order.
    Is,
    /// `!=`
    IsNot,
    /// `has`: every listed row is among the result's rows.
    Has,
    /// `lacks`: none of the listed rows is among them.
    Lacks,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub subject: Subject,
    pub op: Op,
    /// Normalised rows: columns joined by `,` without spaces.
    pub rows: Vec<String>,
}

impl Term {
    /// Whether the term holds for a result.
    pub fn holds(&self, result: &[String]) -> bool {
        match self.op {
            Op::Is => result == self.rows.as_slice(),
            Op::IsNot => result != self.rows.as_slice(),
            Op::Has => self.rows.iter().all(|r| result.contains(r)),
            Op::Lacks => !self.rows.iter().any(|r| result.contains(r)),
        }
    }
}

/// One `@anomaly` line: all its terms must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub text: String,
    pub line: u32,
    pub terms: Vec<Term>,
}

/// Normalises a `ROWS` text: rows split at `;`, columns at `,`, spaces
/// around both removed; empty text is no rows.
pub fn parse_rows(text: &str) -> Vec<String> {
    if text.trim().is_empty() {
        return Vec::new();
    }
    text.split(';')
        .map(|row| row.split(',').map(str::trim).collect::<Vec<_>>().join(","))
        .collect()
}

/// Rows as written in reports: `1,10; 2,20`, or `(no rows)`.
pub fn show_rows(rows: &[String]) -> String {
    if rows.is_empty() {
        "(no rows)".into()
    } else {
        rows.join("; ")
    }
}
