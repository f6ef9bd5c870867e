//! Failures by reason: each cell's failed attempts by transaction type,
//! statement, SQLSTATE and reason (`TxTypeRecord::failure_reasons`),
//! pooled over its complete runs (the table is
//! [`crate::report::tables::failures::reasons`]). The reason explains a SQLSTATE (see [`crate::model::FailureReason`]);
//! the failures table by SQLSTATE stays the classification.

use std::collections::BTreeMap;

use crate::report::analysis::cells::CellSummary;

/// Failed attempts of one transaction type with one SQLSTATE and reason
/// at one statement, pooled over a cell's complete runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasonTally {
    pub tx_type: String,
    /// The statement that raised the error; `None` when not known.
    pub statement: Option<String>,
    pub sqlstate: String,
    /// `None` when the error gives no reason.
    pub reason: Option<String>,
    /// Σ attempts that failed so, retried ones included.
    pub attempts: u64,
    /// Σ transactions that gave up after it.
    pub failed: u64,
}

/// The failure reasons of `c`'s complete runs, pooled, most attempts
/// first (ties in order of first appearance).
pub fn pooled(c: &CellSummary) -> Vec<ReasonTally> {
    let mut out: Vec<ReasonTally> = Vec::new();
    for run in c.complete_runs() {
        for t in &run.transactions {
            for f in &t.failure_reasons {
                let same = |o: &&mut ReasonTally| {
                    o.tx_type == t.name
                        && o.statement == f.statement
                        && o.sqlstate == f.sqlstate
                        && o.reason == f.reason
                };
                match out.iter_mut().find(same) {
                    Some(o) => {
                        o.attempts += f.attempts;
                        o.failed += f.failed;
                    }
                    None => out.push(ReasonTally {
                        tx_type: t.name.clone(),
                        statement: f.statement.clone(),
                        sqlstate: f.sqlstate.clone(),
                        reason: f.reason.clone(),
                        attempts: f.attempts,
                        failed: f.failed,
                    }),
                }
            }
        }
    }
    out.sort_by_key(|r| std::cmp::Reverse(r.attempts));
    out
}

/// Σ attempts per SQLSTATE and reason over `tallies` (every type and
/// statement), most attempts first: `(SQLSTATE, reason, attempts)`.
pub fn by_reason(tallies: &[ReasonTally]) -> Vec<(&str, Option<&str>, u64)> {
    let mut sums: BTreeMap<(&str, Option<&str>), u64> = BTreeMap::new();
    for r in tallies {
        *sums
            .entry((r.sqlstate.as_str(), r.reason.as_deref()))
            .or_default() += r.attempts;
    }
    let mut v: Vec<_> = sums.into_iter().map(|((c, r), n)| (c, r, n)).collect();
    v.sort_by_key(|(_, _, n)| std::cmp::Reverse(*n));
    v
}

/// `40001 pivot, during commit attempt: 812; 40P01: 3`: [`by_reason`] as
/// one line (cells.csv).
pub fn summary_line(tallies: &[ReasonTally]) -> String {
    by_reason(tallies)
        .into_iter()
        .map(|(code, reason, n)| match reason {
            Some(r) => format!("{code} {r}: {n}"),
            None => format!("{code}: {n}"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::report::analysis::model::ReportModel;

    #[test]
    fn pooled_over_complete_runs_most_attempts_first() {
        let r = fixture::results();
        let m = ReportModel::new(&r);
        let ser = m
            .cells
            .iter()
            .position(|c| c.cell.isolation == crate::model::Isolation::Serializable)
            .unwrap();
        let t = &m.failure_reasons[ser];
        // Runs 2 and 4 (run 5 is interrupted): 40001 attempts = retries +
        // failed = 930 + 1034; 3/4 of each run's are the pivot.
        assert_eq!(t[0].reason.as_deref(), Some("pivot, during commit attempt"));
        assert_eq!(t[0].statement.as_deref(), Some("COMMIT"));
        assert_eq!(t[0].attempts, 930 * 3 / 4 + 1034 * 3 / 4);
        let total: u64 = t
            .iter()
            .filter(|r| r.sqlstate == "40001")
            .map(|r| r.attempts)
            .sum();
        assert_eq!(total, 930 + 1034);
        assert_eq!(
            summary_line(t),
            format!(
                "40001 pivot, during commit attempt: {}; 40001 concurrent update: {}; 40P01: 1",
                t[0].attempts,
                total - t[0].attempts
            )
        );
        let rc = 1 - ser;
        assert!(m.failure_reasons[rc].is_empty());
        let table = crate::report::tables::failures::reasons(&m);
        assert_eq!(table.rows.len(), t.len());
    }
}
