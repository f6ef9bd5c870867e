//! Findings about failures: a cell whose transactions mostly fail, and
//! the serialization failure reason (and statement) that dominates a
//! cell's failed attempts.

use super::Finding;
use crate::model::sqlstate_name;
use crate::report::analysis::model::ReportModel;

/// Failures dominate a cell: more than [`FAILURE_PCT`] % of its
/// transactions failed; names the most frequent SQLSTATE and its share.
pub const FAILURE_PCT: f64 = 10.0;

pub(super) fn failures(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(pct) = c.failure_pct.filter(|p| *p > FAILURE_PCT) else {
            continue;
        };
        let total: u64 = c.failures.values().sum();
        let Some((code, n)) = c.failures.iter().max_by_key(|(_, n)| **n) else {
            continue;
        };
        let share = 100.0 * *n as f64 / total.max(1) as f64;
        let retried = m.results.config.retry.retry_on.contains(code);
        out.push(Finding {
            rule: "failures",
            text: format!(
                "{}: {pct:.0} % of transactions failed; {share:.0} % of the failures are {code} ({}){}.",
                m.factors.short_labels[i],
                sqlstate_name(code),
                if retried { ", after every try" } else { ", which is not retried" }
            ),
            advice: Some(if retried {
                "more tries (--max-tries) or a backoff (--backoff exp) turn some into commits; the Failures table says at which statement".into()
            } else {
                "a failure that is not retried is usually an error in the workload or its data: see Problems".into()
            }),
        });
    }
    out
}

/// A cell's serialization failures have a dominant reason: the rule
/// speaks for a cell with at least [`REASON_MIN_ATTEMPTS`] attempts that
/// failed with 40001 (retried ones included) making up at least
/// [`REASON_MIN_PCT`] % of its attempts, and names the reason most of
/// them gave, its share (%), and the statement where most of those were
/// raised (when known). Reasons: [`crate::model::FailureReason`].
pub const REASON_MIN_ATTEMPTS: u64 = 10;

/// See [`REASON_MIN_ATTEMPTS`]: % of the cell's attempts.
pub const REASON_MIN_PCT: f64 = 1.0;

/// The reason most of cell `i`'s serialization failures gave, where it
/// passes [`REASON_MIN_ATTEMPTS`] and [`REASON_MIN_PCT`].
pub(crate) struct DominantReason<'a> {
    pub reason: &'a str,
    /// Attempts that failed with 40001 and this reason.
    pub n: u64,
    /// Attempts that failed with 40001.
    pub total: u64,
    /// Where most of them were raised: `` , at `s` ``, `` , 75 % of them
    /// at `s` ``, or nothing when the statement is not known.
    pub at: String,
}

impl DominantReason<'_> {
    /// The reason's share of the serialization failures, %.
    pub fn share(&self) -> f64 {
        100.0 * self.n as f64 / self.total as f64
    }
}

/// [`DominantReason`] of cell `i`.
pub(crate) fn dominant_reason<'a>(m: &'a ReportModel, i: usize) -> Option<DominantReason<'a>> {
    let (c, tallies) = (&m.cells[i], &m.failure_reasons[i]);
    let ser: Vec<_> = tallies.iter().filter(|r| r.sqlstate == "40001").collect();
    let total: u64 = ser.iter().map(|r| r.attempts).sum();
    let attempts: u64 = c.complete_runs().map(|r| r.attempts).sum();
    if total < REASON_MIN_ATTEMPTS || (100.0 * total as f64) < REASON_MIN_PCT * attempts as f64 {
        return None;
    }
    let (_, Some(reason), n) = crate::report::analysis::reasons::by_reason(tallies)
        .into_iter()
        .find(|(code, _, _)| *code == "40001")?
    else {
        return None;
    };
    // The statement that raised most of this reason's failures.
    let mut at: Vec<(&str, u64)> = Vec::new();
    for r in ser.iter().filter(|r| r.reason.as_deref() == Some(reason)) {
        let Some(s) = r.statement.as_deref() else {
            continue;
        };
        match at.iter_mut().find(|(x, _)| *x == s) {
            Some((_, k)) => *k += r.attempts,
            None => at.push((s, r.attempts)),
        }
    }
    let at = match at.iter().max_by_key(|(_, k)| *k) {
        Some((s, k)) if 1000 * *k >= 995 * n => format!(", at `{s}`"),
        Some((s, k)) => format!(", {:.0} % of them at `{s}`", 100.0 * *k as f64 / n as f64),
        None => String::new(),
    };
    Some(DominantReason {
        reason,
        n,
        total,
        at,
    })
}

pub(super) fn failure_reasons(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for i in 0..m.cells.len() {
        let Some(d) = dominant_reason(m, i) else {
            continue;
        };
        let advice = if crate::model::is_write_write(d.reason) {
            "these are write-write conflicts on the same rows (hot rows): a larger scale or fewer clients spreads them"
        } else {
            "these are read-write conflicts found by SSI's predicate locks: see SIRead locks (a relation- or page-level lock conflicts with every writer of it) and Plans (an index scan takes finer locks than a sequential scan); shorter transactions, or READ ONLY where they are, have fewer"
        };
        out.push(Finding {
            rule: "reasons",
            text: format!(
                "{}: {:.0} % of serialization failures ({} of {} failed attempts, retried ones included): {}{}.",
                m.factors.short_labels[i],
                d.share(),
                d.n,
                d.total,
                d.reason,
                d.at
            ),
            advice: Some(advice.into()),
        });
    }
    out
}
