//! One row per cell, for cells.json and cells.csv alike: the cell's
//! summary mapped once to the figures both write. cells.json serializes
//! the row as it is (see [`super::json::cells`] for its fields);
//! cells.csv flattens it into the columns [`CellRow::csv_header`] names
//! (see [`super::csv::cells`]).

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::report::analysis::cells::{CellSummary, VsBaseline, WaitStats};
use crate::report::analysis::reasons::ReasonTally;
use crate::report::format::NA;
use crate::stats::Summary;
use crate::store::Results;

/// Factor names and values, in the order of [`crate::report::format::factor_headers`].
pub struct Factors(pub Vec<(String, String)>);

impl Serialize for Factors {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A cell's figures (units in the field names, as cells.json says).
#[derive(Serialize)]
pub struct CellRow {
    /// `failure_reasons` in one line (cells.csv's `failure_reasons`).
    #[serde(skip)]
    pub reasons_line: String,
    pub label: String,
    pub factors: Factors,
    pub runs: usize,
    pub n: usize,
    pub interrupted: usize,
    pub outlier_runs: Vec<u32>,
    pub tps: Option<Summary>,
    pub effective_tps: Option<Summary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tpmc: Option<Summary>,
    pub swallowed: u64,
    /// Acknowledged commits lost in runs through a failover or crash
    /// ([`crate::report::analysis::cells::CellSummary::lost_acknowledged`]).
    pub acknowledged_lost: u64,
    pub compared_on: &'static str,
    pub is_baseline: bool,
    pub baseline_cell: Option<String>,
    pub tps_vs_baseline_pct: Option<f64>,
    pub tps_vs_baseline_pct_ci95: Option<[f64; 2]>,
    pub p_value: Option<f64>,
    pub verdict: Option<&'static str>,
    pub tps_mde_pct: Option<f64>,
    pub runs_for_5pct_mde: Option<usize>,
    pub verdict_caveat: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionJson>,
    pub latency_mean_ms: Option<f64>,
    pub latency_p50_ms: Option<f64>,
    pub latency_p95_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_p999_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    pub latency_p50_vs_baseline_pct: Option<f64>,
    pub latency_p95_vs_baseline_pct: Option<f64>,
    pub latency_p99_vs_baseline_pct: Option<f64>,
    pub latency_p99_runs_p_value: Option<f64>,
    pub latency_p99_runs_verdict: Option<&'static str>,
    pub latency_p99_ms_runs: Option<Summary>,
    pub retries_per_commit: Option<f64>,
    pub failure_pct: Option<f64>,
    pub abort_ratio: Option<f64>,
    pub failed_by_sqlstate: std::collections::BTreeMap<String, u64>,
    pub failure_reasons: Vec<ReasonJson>,
    pub unknown_outcome: u64,
    pub user_aborts: u64,
    /// `None` when no check covers the cell: not checked.
    pub anomalies: Option<u64>,
    pub anomaly_example: Option<String>,
    pub checks: Vec<CheckJson>,
    pub pool_wait_mean_ms: Option<Summary>,
    pub pool_wait_p99_max_ms: Option<f64>,
    pub schedule_lag_mean_ms: Option<Summary>,
    pub schedule_lag_p99_max_ms: Option<f64>,
    pub skipped: u64,
    pub late: u64,
}

/// `--precision`: the target, whether the cell reached it, with how many
/// complete runs, and the relative half-width of its 95 % interval of TPS.
#[derive(Serialize)]
pub struct PrecisionJson {
    pub target_pct: f64,
    pub reached: bool,
    pub runs: usize,
    pub half_width_pct: f64,
}

/// One check over a cell's runs
/// ([`crate::report::analysis::coverage::CheckTally`]).
#[derive(Serialize)]
pub struct CheckJson {
    pub name: String,
    /// Declared by the study, not the workload's own.
    pub declared: bool,
    /// Counts in the cell's anomalies.
    pub covers: bool,
    /// Over all runs.
    pub violations: u64,
    pub runs_violated: usize,
    pub runs_checked: usize,
}

/// A cell's failed attempts of one transaction type, statement, SQLSTATE
/// and reason ([`ReasonTally`]).
#[derive(Serialize)]
pub struct ReasonJson {
    pub transaction: String,
    pub statement: Option<String>,
    pub sqlstate: String,
    pub reason: Option<String>,
    pub attempts: u64,
    pub failed: u64,
}

impl CellRow {
    /// Cell `c` of `all` (the cells of `results`), with its failure
    /// reasons.
    pub fn new(
        results: &Results,
        all: &[CellSummary],
        c: &CellSummary,
        reasons: &[ReasonTally],
    ) -> CellRow {
        let (pct, ci, p, verdict) = match &c.vs_baseline {
            VsBaseline::Baseline => (None, None, None, Some("baseline")),
            VsBaseline::Missing => (None, None, None, None),
            VsBaseline::Change {
                pct,
                pct_ci,
                welch,
                verdict,
                ..
            } => (
                *pct,
                pct_ci.map(|c| [c.low, c.high]),
                welch.map(|w| w.p),
                Some(verdict.token()),
            ),
        };
        let cmp = c.vs_baseline.comparison();
        let l = c.merged_latency;
        let lc = c.latency_vs_baseline;
        let p99_runs = lc.and_then(|l| l.p99_runs);
        let wait = |w: Option<WaitStats>| (w.map(|w| w.mean_ms), w.map(|w| w.p99_max_ms));
        let (pool_mean, pool_p99) = wait(c.pool_wait);
        let (lag_mean, lag_p99) = wait(c.schedule_lag);
        CellRow {
            reasons_line: crate::report::analysis::reasons::summary_line(reasons),
            label: c.cell.label(),
            factors: Factors(
                crate::report::format::factor_headers(results)
                    .into_iter()
                    .zip(crate::report::format::factor_values(results, c.cell))
                    .collect(),
            ),
            runs: c.runs.len(),
            n: c.n,
            interrupted: c.interrupted,
            outlier_runs: c.outliers.clone(),
            tps: c.tps,
            effective_tps: c.effective_tps,
            tpmc: c.tpmc,
            swallowed: c.swallowed,
            acknowledged_lost: c.lost_acknowledged,
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
            tps_mde_pct: cmp.and_then(|c| c.mde_pct),
            runs_for_5pct_mde: cmp.and_then(|c| c.runs_for_target),
            verdict_caveat: cmp.and_then(|c| c.caveat()),
            precision: c.precision.map(|p| PrecisionJson {
                target_pct: p.target_pct,
                reached: p.reached,
                runs: p.n,
                half_width_pct: p.half_width_pct,
            }),
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
}

impl CellRow {
    /// cells.csv's header: the factors (`factors`), then the figures of
    /// [`CellRow::csv_record`].
    pub fn csv_header(factors: Vec<String>) -> Vec<String> {
        let mut header = factors;
        header.extend(
            [
                "n",
                "interrupted",
                "tps_mean",
                "tps_sd",
                "tps_ci95",
                "tps_min",
                "tps_max",
                "tps_cv",
                "effective_tps_mean",
                "effective_tps_ci95",
                "swallowed",
                "acknowledged_lost",
                "vs_baseline_pct",
                "vs_baseline_pct_ci95_low",
                "vs_baseline_pct_ci95_high",
                "p_value",
                "verdict",
                "tps_mde_pct",
                "outlier_runs",
                "latency_p50_ms",
                "latency_p95_ms",
                "latency_p99_ms",
                "retries_per_commit",
                "failure_pct",
                "anomalies",
                "checks",
                "failure_reasons",
            ]
            .map(String::from),
        );
        header
    }

    /// The row as cells.csv's fields, in [`CellRow::csv_header`]'s order:
    /// numbers as Rust prints them ([`csv_num`]), a figure that does not
    /// exist (and a factor without a value) as an empty field.
    pub fn csv_record(&self) -> Vec<String> {
        let opt = |v: Option<f64>| v.map_or_else(String::new, csv_num);
        let mut row: Vec<String> = self
            .factors
            .0
            .iter()
            .map(|(_, v)| if v == NA { String::new() } else { v.clone() })
            .collect();
        row.extend([self.n.to_string(), self.interrupted.to_string()]);
        match &self.tps {
            Some(s) => row.extend([s.mean, s.sd, s.ci95, s.min, s.max, s.cv].map(csv_num)),
            None => row.extend(std::iter::repeat_n(String::new(), 6)),
        }
        let ci = self.tps_vs_baseline_pct_ci95;
        row.extend([
            opt(self.effective_tps.map(|s| s.mean)),
            opt(self.effective_tps.map(|s| s.ci95)),
            self.swallowed.to_string(),
            self.acknowledged_lost.to_string(),
            opt(self.tps_vs_baseline_pct),
            opt(ci.map(|c| c[0])),
            opt(ci.map(|c| c[1])),
            opt(self.p_value),
            self.verdict.unwrap_or_default().to_string(),
            opt(self.tps_mde_pct),
            self.outlier_runs
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" "),
            opt(self.latency_p50_ms),
            opt(self.latency_p95_ms),
            opt(self.latency_p99_ms),
            opt(self.retries_per_commit),
            opt(self.failure_pct),
            self.anomalies.map_or_else(String::new, |a| a.to_string()),
            self.checks
                .iter()
                .filter(|t| t.covers)
                .map(|t| format!("{}={}", t.name, t.violations))
                .collect::<Vec<_>>()
                .join("; "),
            self.reasons_line.clone(),
        ]);
        row
    }
}

/// A number as Rust prints it (shortest form that reads back the same);
/// empty when not finite.
pub fn csv_num(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}
