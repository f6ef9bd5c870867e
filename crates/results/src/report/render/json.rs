//! The per-cell statistics as JSON, for scripts and dashboards: the same
//! figures as the summary of report.md, with the unit in every field name
//! (`tps` is tx/s, `_ms` milliseconds, `_pct` percent; counts are
//! transactions unless named otherwise). A figure that does not exist
//! (NaN: one run has no standard deviation; no pool; no baseline) is
//! `null`.

use serde::Serialize;

use super::cell_row::CellRow;
use crate::stats;
use crate::store::Results;

/// The per-cell statistics of `results` as pretty-printed JSON (ends with
/// a newline):
///
/// ```text
/// { "workload", "complete", "confidence" (0.95), "alpha" (0.05),
///   "baseline" (the rule, in words),
///   "guarantees" (only when a cell has a history check: {"violated"
///     (a level broke its promise), "headlines" [text, the violations
///     first], "cells": [ {"label", "level", "promise", "checked"
///     (committed transactions examined), "runs", "classes": [ {"class",
///     "forbidden" (by the level: a case is a violation), "cases",
///     "per_million", "per_million_ci95" [low, high] (exact Poisson),
///     "runs" [run index], "cycles" [ {"run", "cycle" (`T1 -wr-> T2
///     -rw-> T1`), "evidence" (`violations/<n>` or null)} ]} ]} ]}),
///   "cells": [ { "label", "factors" {name: value}, "runs", "n",
///     "interrupted", "outlier_runs" [run index],
///     "tps" {n, mean, sd, ci95, min, max, cv},
///     "effective_tps" {n, mean, ...} (committed transactions whose work
///     is in the database; null when no history check applies),
///     "swallowed" (transactions counted as committed whose work is not
///     in the database), "tpmc" {n, mean, ...} (TPC-C's New-Order
///     commits per minute; absent for other workloads), "compared_on" ("effective_tps" or "tps": what
///     tps_vs_baseline_pct, p_value and verdict compare),
///     "is_baseline", "baseline_cell" (label or null),
///     "tps_vs_baseline_pct", "tps_vs_baseline_pct_ci95" [low, high],
///     "p_value", "verdict" ("baseline", "faster", "slower",
///     "no_significant_difference", "not_enough_data" (too few runs: fewer
///     than 3 complete runs a side), or null),
///     "tps_mde_pct" (the smallest change of the compared TPS this
///     comparison detects with 80 % power at α = 0.05, %),
///     "runs_for_5pct_mde" (complete runs per side for a 5 % MDE at the
///     observed noise), "verdict_caveat" (in words, when the verdict found
///     no difference and the MDE is above 5 % or the runs too few; else
///     null),
///     "precision" (with `--precision` only: {"target_pct", "reached",
///     "runs", "half_width_pct"}: whether the TPS reached the target by
///     the sequential rule, with how many complete runs, and the relative
///     half-width of its 95 % interval, %),
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
/// Statistics are over complete runs (see [`crate::report::analysis::cells`]); p-values are
/// from the two-sided test of the log ratio of the means whose interval is
/// `tps_vs_baseline_pct_ci95` (`stats::ratio_test`), verdicts at p < 0.05
/// (`stats::Verdict`).
pub fn cells(results: &Results) -> String {
    cells_of(&crate::report::analysis::model::ReportModel::new(results))
}

/// [`cells`] from an aggregated model.
pub fn cells_of(m: &crate::report::analysis::model::ReportModel) -> String {
    let (results, cells) = (m.results, &m.cells);
    let doc = Doc {
        workload: &results.config.workload,
        complete: results.complete,
        confidence: stats::CONFIDENCE,
        alpha: stats::ALPHA,
        baseline: m.baseline.clone(),
        guarantees: Guarantees::of(m),
        cells: cells
            .iter()
            .zip(&m.failure_reasons)
            .map(|(c, reasons)| CellRow::new(results, cells, c, reasons))
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
    /// Before the cells: a broken promise leads every output.
    #[serde(skip_serializing_if = "Option::is_none")]
    guarantees: Option<Guarantees>,
    cells: Vec<CellRow>,
}

/// The levels' promises against the history checks (absent when no cell
/// has one).
#[derive(Serialize)]
struct Guarantees {
    /// Whether any cell's level broke its promise.
    violated: bool,
    /// The headlines about promises, in report order.
    headlines: Vec<String>,
    cells: Vec<GuaranteeCell>,
}

#[derive(Serialize)]
struct GuaranteeCell {
    label: String,
    level: &'static str,
    promise: &'static str,
    /// Committed transactions the history checks examined.
    checked: u64,
    runs: usize,
    classes: Vec<GuaranteeClass>,
}

#[derive(Serialize)]
struct GuaranteeClass {
    class: &'static str,
    /// Whether the level forbids it: a case is a violation.
    forbidden: bool,
    cases: u64,
    per_million: f64,
    per_million_ci95: [f64; 2],
    /// Runs (indexes) that found cases.
    runs: Vec<u32>,
    cycles: Vec<GuaranteeCycle>,
}

#[derive(Serialize)]
struct GuaranteeCycle {
    run: u32,
    /// `T1 -wr-> T2 -rw-> T1`.
    cycle: String,
    /// `violations/<n>` in the results directory, when written.
    evidence: Option<String>,
}

impl Guarantees {
    fn of(m: &crate::report::analysis::model::ReportModel) -> Option<Guarantees> {
        if m.guarantees.is_empty() {
            return None;
        }
        Some(Guarantees {
            violated: m.violated(),
            headlines: crate::report::analysis::findings::guarantee_headlines(m)
                .into_iter()
                .map(|h| h.text)
                .collect(),
            cells: m
                .guarantees
                .iter()
                .map(|g| GuaranteeCell {
                    label: m.factors.labels[g.cell].clone(),
                    level: g.level.name(),
                    promise: g.promise(),
                    checked: g.checked,
                    runs: g.runs,
                    classes: g
                        .classes
                        .iter()
                        .map(|c| {
                            let (rate, low, high) = c.rate.per_million();
                            GuaranteeClass {
                                class: c.class,
                                forbidden: c.forbidden,
                                cases: c.rate.events,
                                per_million: rate,
                                per_million_ci95: [low, high],
                                runs: c.runs.clone(),
                                cycles: c
                                    .cycles
                                    .iter()
                                    .map(|(run, cy)| GuaranteeCycle {
                                        run: *run,
                                        cycle: cy.arrows(),
                                        evidence: cy.evidence.clone(),
                                    })
                                    .collect(),
                            }
                        })
                        .collect(),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(cells(&fixture::results()));
    }

    #[test]
    fn a_violation_comes_before_the_cells() {
        let text = cells(&fixture::guarantee_violated());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let g = &v["guarantees"];
        assert_eq!(g["violated"], true);
        assert!(
            g["headlines"][0]
                .as_str()
                .unwrap()
                .starts_with("GUARANTEE VIOLATED: ser broke SERIALIZABLE's promise")
        );
        let ser = &g["cells"][1];
        assert_eq!(ser["level"], "serializable");
        let g2 = ser["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == "G2-item")
            .unwrap();
        assert_eq!(
            (g2["forbidden"].as_bool(), g2["cases"].as_u64()),
            (Some(true), Some(1))
        );
        assert_eq!(
            g2["cycles"][0]["cycle"],
            "T13400 -wr-> T54663 -rw-> T110483 -rw-> T13400"
        );
        assert_eq!(g2["cycles"][0]["evidence"], "violations/1");
        // In the text, before the cells.
        assert!(text.find("\"guarantees\"").unwrap() < text.find("\"cells\"").unwrap());
        // Studies without a history check have no such section.
        assert!(!cells(&fixture::results()).contains("\"guarantees\""));
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
