//! The per-cell statistics as JSON, for scripts and dashboards: the same
//! figures as the summary of report.md, with the unit in every field name
//! (`tps` is tx/s, `_ms` milliseconds, `_pct` percent; counts are
//! transactions unless named otherwise). A figure that does not exist
//! (NaN: one run has no standard deviation; no pool; no baseline) is
//! `null`.

use serde::Serialize;
use serde::ser::SerializeMap;

use super::cells::{CellSummary, VsBaseline, WaitStats};
use super::reasons::ReasonTally;
use crate::stats::{self, Summary};
use crate::store::Results;

/// The per-cell statistics of `results` as pretty-printed JSON (ends with
/// a newline):
///
/// ```text
/// { "workload", "complete", "confidence" (0.95), "alpha" (0.05),
///   "baseline" (the rule, in words),
///   "cells": [ { "label", "factors" {name: value}, "runs", "n",
///     "interrupted", "outlier_runs" [run index],
///     "tps" {n, mean, sd, ci95, min, max, cv},
///     "effective_tps" {n, mean, ...} (committed transactions whose work
///     is in the database; null when no history check applies),
///     "swallowed" (transactions counted as committed whose work is not
///     in the database), "compared_on" ("effective_tps" or "tps": what
///     tps_vs_baseline_pct, p_value and verdict compare),
///     "is_baseline", "baseline_cell" (label or null),
///     "tps_vs_baseline_pct", "tps_vs_baseline_pct_ci95" [low, high],
///     "p_value", "verdict" ("baseline", "faster", "slower",
///     "no_significant_difference", "not_enough_data", or null),
///     "latency_{mean,p50,p95,p99,p999,max}_ms" (merged histograms),
///     "latency_{p50,p95,p99}_vs_baseline_pct",
///     "latency_p99_runs_p_value", "latency_p99_runs_verdict",
///     "latency_p99_ms_runs" {n, mean, ...} (the runs' own p99),
///     "retries_per_commit", "failure_pct", "abort_ratio",
///     "failed_by_sqlstate" {SQLSTATE: transactions},
///     "failure_reasons" [ {"transaction", "statement" (or null),
///       "sqlstate", "reason" (or null), "attempts" (failed attempts,
///       retried ones included), "failed" (transactions that gave up
///       after it)} ] (most attempts first), "unknown_outcome",
///     "user_aborts", "anomalies" (null when no check covers the cell:
///     not checked), "anomaly_example",
///     "checks" [ {"name", "declared" (by the study, not the workload's
///       own), "covers" (counts in anomalies), "violations" (over all
///       runs), "runs_violated", "runs_checked"} ],
///     "pool_wait_mean_ms" {n, mean, ...}, "pool_wait_p99_max_ms",
///     "schedule_lag_mean_ms" {...}, "schedule_lag_p99_max_ms",
///     "skipped", "late" } ] }
/// ```
///
/// Statistics are over complete runs (see [`super::cells`]); p-values are from
/// Welch's two-sided t-test, verdicts at p < 0.05 (`stats::Verdict`).
pub fn cells(results: &Results) -> String {
    cells_of(&super::model::ReportModel::new(results))
}

/// [`cells`] from an aggregated model.
pub fn cells_of(m: &super::model::ReportModel) -> String {
    let (results, cells) = (m.results, &m.cells);
    let doc = Doc {
        workload: &results.config.workload,
        complete: results.complete,
        confidence: stats::CONFIDENCE,
        alpha: stats::ALPHA,
        baseline: m.baseline.clone(),
        cells: cells
            .iter()
            .zip(&m.failure_reasons)
            .map(|(c, reasons)| cell(results, cells, c, reasons))
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("JSON of plain data");
    s.push('\n');
    s
}

#[derive(Serialize)]
struct Doc<'a> {
    workload: &'a str,
    complete: bool,
    confidence: f64,
    alpha: f64,
    baseline: String,
    cells: Vec<CellJson>,
}

/// Factor names and values, in the order of [`super::factor_headers`].
struct Factors(Vec<(String, String)>);

impl Serialize for Factors {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct CellJson {
    label: String,
    factors: Factors,
    runs: usize,
    n: usize,
    interrupted: usize,
    outlier_runs: Vec<u32>,
    tps: Option<Summary>,
    effective_tps: Option<Summary>,
    swallowed: u64,
    compared_on: &'static str,
    is_baseline: bool,
    baseline_cell: Option<String>,
    tps_vs_baseline_pct: Option<f64>,
    tps_vs_baseline_pct_ci95: Option<[f64; 2]>,
    p_value: Option<f64>,
    verdict: Option<&'static str>,
    latency_mean_ms: Option<f64>,
    latency_p50_ms: Option<f64>,
    latency_p95_ms: Option<f64>,
    latency_p99_ms: Option<f64>,
    latency_p999_ms: Option<f64>,
    latency_max_ms: Option<f64>,
    latency_p50_vs_baseline_pct: Option<f64>,
    latency_p95_vs_baseline_pct: Option<f64>,
    latency_p99_vs_baseline_pct: Option<f64>,
    latency_p99_runs_p_value: Option<f64>,
    latency_p99_runs_verdict: Option<&'static str>,
    latency_p99_ms_runs: Option<Summary>,
    retries_per_commit: Option<f64>,
    failure_pct: Option<f64>,
    abort_ratio: Option<f64>,
    failed_by_sqlstate: std::collections::BTreeMap<String, u64>,
    failure_reasons: Vec<ReasonJson>,
    unknown_outcome: u64,
    user_aborts: u64,
    anomalies: Option<u64>,
    anomaly_example: Option<String>,
    checks: Vec<CheckJson>,
    pool_wait_mean_ms: Option<Summary>,
    pool_wait_p99_max_ms: Option<f64>,
    schedule_lag_mean_ms: Option<Summary>,
    schedule_lag_p99_max_ms: Option<f64>,
    skipped: u64,
    late: u64,
}

/// A cell's failed attempts of one transaction type, statement, SQLSTATE
/// and reason ([`ReasonTally`]).
/// One check over a cell's runs ([`super::coverage::CheckTally`]).
#[derive(Serialize)]
struct CheckJson {
    name: String,
    declared: bool,
    covers: bool,
    violations: u64,
    runs_violated: usize,
    runs_checked: usize,
}

#[derive(Serialize)]
struct ReasonJson {
    transaction: String,
    statement: Option<String>,
    sqlstate: String,
    reason: Option<String>,
    attempts: u64,
    failed: u64,
}

fn cell(
    results: &Results,
    all: &[CellSummary],
    c: &CellSummary,
    reasons: &[ReasonTally],
) -> CellJson {
    let (pct, ci, p, verdict) = match &c.vs_baseline {
        VsBaseline::Baseline => (None, None, None, Some("baseline")),
        VsBaseline::Missing => (None, None, None, None),
        VsBaseline::Change {
            pct,
            pct_ci,
            welch,
            verdict,
        } => (
            *pct,
            pct_ci.map(|c| [c.low, c.high]),
            welch.map(|w| w.p),
            Some(verdict.token()),
        ),
    };
    let l = c.merged_latency;
    let lc = c.latency_vs_baseline;
    let p99_runs = lc.and_then(|l| l.p99_runs);
    let wait = |w: Option<WaitStats>| (w.map(|w| w.mean_ms), w.map(|w| w.p99_max_ms));
    let (pool_mean, pool_p99) = wait(c.pool_wait);
    let (lag_mean, lag_p99) = wait(c.schedule_lag);
    CellJson {
        label: c.cell.label(),
        factors: Factors(
            super::factor_headers(results)
                .into_iter()
                .zip(super::factor_values(results, c.cell))
                .collect(),
        ),
        runs: c.runs.len(),
        n: c.n,
        interrupted: c.interrupted,
        outlier_runs: c.outliers.clone(),
        tps: c.tps,
        effective_tps: c.effective_tps,
        swallowed: c.swallowed,
        compared_on: if c.effective_tps.is_some() {
            "effective_tps"
        } else {
            "tps"
        },
        is_baseline: c.vs_baseline == VsBaseline::Baseline,
        baseline_cell: c.baseline.map(|b| all[b].cell.label()),
        tps_vs_baseline_pct: pct,
        tps_vs_baseline_pct_ci95: ci,
        p_value: p,
        verdict,
        latency_mean_ms: l.map(|l| l.mean),
        latency_p50_ms: l.map(|l| l.p50),
        latency_p95_ms: l.map(|l| l.p95),
        latency_p99_ms: l.map(|l| l.p99),
        latency_p999_ms: l.map(|l| l.p999),
        latency_max_ms: l.map(|l| l.max),
        latency_p50_vs_baseline_pct: lc.and_then(|l| l.p50_pct),
        latency_p95_vs_baseline_pct: lc.and_then(|l| l.p95_pct),
        latency_p99_vs_baseline_pct: lc.and_then(|l| l.p99_pct),
        latency_p99_runs_p_value: p99_runs.and_then(|c| c.welch).map(|w| w.p),
        latency_p99_runs_verdict: p99_runs.map(|c| c.verdict.token()),
        latency_p99_ms_runs: c.latency.p99,
        retries_per_commit: c.retries_per_commit,
        failure_pct: c.failure_pct,
        abort_ratio: c.abort_ratio,
        failed_by_sqlstate: c.failures.clone(),
        failure_reasons: reasons
            .iter()
            .map(|r| ReasonJson {
                transaction: r.tx_type.clone(),
                statement: r.statement.clone(),
                sqlstate: r.sqlstate.clone(),
                reason: r.reason.clone(),
                attempts: r.attempts,
                failed: r.failed,
            })
            .collect(),
        unknown_outcome: c.unknown_outcome,
        user_aborts: c.user_aborts,
        anomalies: c.checked().then_some(c.anomalies),
        anomaly_example: c.anomaly_example.clone(),
        checks: c
            .checks
            .iter()
            .map(|t| CheckJson {
                name: t.name.clone(),
                declared: t.declared,
                covers: t.covers,
                violations: t.violations,
                runs_violated: t.runs_violated,
                runs_checked: t.runs_checked,
            })
            .collect(),
        pool_wait_mean_ms: pool_mean,
        pool_wait_p99_max_ms: pool_p99,
        schedule_lag_mean_ms: lag_mean,
        schedule_lag_p99_max_ms: lag_p99,
        skipped: c.skipped,
        late: c.late,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(cells(&fixture::results()));
    }

    #[test]
    fn nan_is_null_and_parses() {
        // One complete run per cell: sd, ci95 and cv are NaN → null.
        let mut r = fixture::results();
        r.runs.retain(|run| run.repetition == 1);
        let text = cells(&r);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let tps = &v["cells"][1]["tps"];
        assert_eq!(tps["n"], 1);
        assert!(tps["sd"].is_null() && tps["ci95"].is_null() && tps["cv"].is_null());
        assert_eq!(v["cells"][1]["verdict"], "not_enough_data");
        assert!(v["cells"][1]["p_value"].is_null());
        assert_eq!(v["cells"][1]["tps_vs_baseline_pct"], 51.02040816326531);
        assert!(!text.contains("NaN"));
    }
}
