//! Findings about what the data says happened to the transactions:
//! unknown outcomes, faults and lost commits, and history rows missing
//! (the inflated-TPS trap). Anomaly classes a level should have prevented
//! are the guarantee findings ([`super::guarantee`]).

use crate::model::{HISTORY_CHECK, HistoryCount};
use crate::report::analysis::findings::Finding;
use crate::report::analysis::model::ReportModel;
use crate::report::format::grouped;

pub(super) fn unknown(m: &ReportModel) -> Vec<Finding> {
    let n: u64 = m.cells.iter().map(|c| c.unknown_outcome).sum();
    if n == 0 {
        return Vec::new();
    }
    vec![Finding {
        rule: "unknown",
        text: format!(
            "{n} transaction(s) have an unknown outcome (the connection broke during COMMIT): they may or may not have committed, and the invariant checks allow for them."
        ),
        advice: Some("see Faults for the lost connections".into()),
    }]
}

/// Runs that had faults: how many, the connections lost, the longest
/// outage and recovery, and the server's crash cause when it had one.
pub(super) fn faults(m: &ReportModel) -> Vec<Finding> {
    let faulted: Vec<_> = m
        .results
        .runs
        .iter()
        .filter_map(|r| r.faults.as_ref().map(|f| (r.index, f)))
        .collect();
    if faulted.is_empty() {
        return Vec::new();
    }
    let lost: u64 = faulted.iter().map(|(_, f)| f.connections_lost).sum();
    let runs: Vec<String> = faulted.iter().map(|(i, _)| i.to_string()).collect();
    let mut text = format!("run(s) {} had faults: ", runs.join(", "));
    if lost > 0 {
        text.push_str(&format!(
            "{lost} connection(s) lost, the clients reconnected"
        ));
    } else {
        text.push_str("no connection lost");
    }
    let injected: Vec<String> = faulted
        .iter()
        .flat_map(|(_, f)| f.injected.iter().map(|i| i.kind.name().to_string()))
        .fold(Vec::new(), |mut kinds, k| {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
            kinds
        });
    if !injected.is_empty() {
        text.push_str(&format!(" (injected: {})", injected.join(", ")));
    }
    let longest = |get: fn(&crate::model::RunFaults) -> Option<f64>| {
        faulted
            .iter()
            .filter_map(|(i, f)| get(f).map(|v| (*i, v)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    if let Some((i, s)) = longest(|f| f.outage_s) {
        text.push_str(&format!("; longest outage {s:.2} s (run {i})"));
    }
    if let Some((i, s)) = longest(|f| f.recovery_s) {
        text.push_str(&format!("; slowest recovery to 90 % {s:.2} s (run {i})"));
    }
    if let Some((i, cause)) = faulted
        .iter()
        .find_map(|(i, f)| f.cause.as_ref().map(|c| (i, c)))
    {
        text.push_str(&format!("; the server went away in run {i}: {cause}"));
    }
    let lost_commits: Vec<(u32, u64)> = m
        .results
        .runs
        .iter()
        .filter(|r| r.faults.is_some())
        .filter_map(|r| {
            let n: u64 = r.invariants.iter().filter_map(|i| i.lost_commits).sum();
            (n > 0).then_some((r.index, n))
        })
        .collect();
    if !lost_commits.is_empty() {
        let total: u64 = lost_commits.iter().map(|(_, n)| n).sum();
        let runs: Vec<String> = lost_commits.iter().map(|(i, _)| i.to_string()).collect();
        text.push_str(&format!(
            "; {total} commit(s) the clients saw acknowledged are not in the database (run(s) {})",
            runs.join(", ")
        ));
    }
    text.push('.');
    vec![Finding {
        rule: "faults",
        text,
        advice: Some(
            "faulted runs are kept and count in the statistics; see Faults in report.md".into(),
        ),
    }]
}

/// The inflated-TPS trap: a cell's runs counted more committed
/// transactions that insert a `pgbench_history` row than the table gained
/// rows (the history check, [`HISTORY_CHECK`], failed with missing rows;
/// its detail is read by [`HistoryCount::parse`]). Flagged when at least
/// [`HISTORY_MISSING_MIN`] rows are missing: the check already allows for
/// unknown outcomes, so every missing row is a transaction the client
/// counted whose work the database does not hold (typically a function
/// that catches `serialization_failure` and returns normally). Runs whose
/// server lost its memory (a failover, crash or backend kill) are left
/// out: their missing rows are acknowledged commits the server lost.
pub const HISTORY_MISSING_MIN: u64 = 1;

pub(super) fn history_missing(m: &ReportModel) -> Vec<Finding> {
    // Per cell: expected rows, rows gained, runs with missing rows.
    let mut per_cell: Vec<(u64, u64, u32)> = vec![(0, 0, 0); m.cells.len()];
    for run in &m.results.runs {
        let Some(i) = m.cell_index(&run.cell) else {
            continue;
        };
        // A failover or crash loses acknowledged commits: the failover
        // and faults findings say so; the rows cannot tell the causes
        // apart.
        if run.faults.as_ref().is_some_and(|f| f.may_lose_commits()) {
            continue;
        }
        let missing = run
            .invariants
            .iter()
            .filter(|v| v.name == HISTORY_CHECK && !v.ok)
            .filter_map(|v| HistoryCount::parse(&v.detail))
            .find(|h| h.rows < h.expected_min);
        if let Some(h) = missing {
            let c = &mut per_cell[i];
            c.0 += h.expected_min;
            c.1 += h.rows;
            c.2 += 1;
        }
    }
    let mut out = Vec::new();
    for (i, (expected, rows, runs)) in per_cell.into_iter().enumerate() {
        if runs == 0 || expected - rows < HISTORY_MISSING_MIN {
            continue;
        }
        out.push(Finding {
            rule: "history",
            text: format!(
                "{}: {} transactions committed but pgbench_history gained {} rows ({:.0} %, {runs} run(s)): \
                 the script reports work that was rolled back.",
                m.factors.short_labels[i],
                grouped(expected),
                grouped(rows),
                100.0 * rows as f64 / expected as f64
            ),
            advice: Some(
                "a function that catches serialization_failure (EXCEPTION WHEN ...) and returns normally hides the \
                 rollback from the client: re-raise the error so that the transaction is retried or counted as \
                 failed, and trust the rows, not the calls"
                    .into(),
            ),
        });
    }
    out
}
