//! Per-cell aggregation shared by every renderer: runs grouped by
//! [`Cell`], statistics over the complete runs, and the comparison with the
//! baseline cell.
//!
//! Rules:
//! - Cells appear in the order of their first run in `results.runs`.
//! - Only complete runs count toward statistics; interrupted runs are
//!   kept (and counted in [`CellSummary::interrupted`]) but measured too
//!   short a window to compare.
//! - Invariant violations are counted over *all* runs: a violation is a
//!   fact about the data however long the run lasted.
//! - The baseline of a cell is the cell with the first isolation level of
//!   `results.config.isolation`, the first strategy of
//!   `results.config.strategies`, and otherwise the same factor values.

use std::collections::BTreeMap;

use crate::config::Isolation;
use crate::metrics::{LatencySummary, decode_histogram};
use crate::stats::{self, Summary, Welch};
use crate::store::{Cell, Results, RunRecord};

/// Statistics of one cell over its runs.
#[derive(Debug, Clone)]
pub struct CellSummary<'a> {
    pub cell: &'a Cell,
    /// Every run of the cell, complete or not, in execution order.
    pub runs: Vec<&'a RunRecord>,
    /// Number of complete runs (the `n` of the statistics).
    pub n: usize,
    /// Number of interrupted runs (left out of the statistics).
    pub interrupted: usize,
    /// Committed transactions per second over complete runs, tx/s.
    pub tps: Option<Summary>,
    /// Latency of committed transactions over the complete runs that
    /// committed anything (one value per run), ms.
    pub latency: LatencyStats,
    /// Σ retries / Σ committed over complete runs (pooled ratio).
    pub retries_per_commit: Option<f64>,
    /// 100 · Σ failed / Σ transactions (committed, user-aborted, failed,
    /// unknown) over complete runs, %.
    pub failure_pct: Option<f64>,
    /// Σ unknown outcomes over complete runs, transactions.
    pub unknown_outcome: u64,
    /// Σ failed transactions by SQLSTATE over complete runs.
    pub failures: BTreeMap<String, u64>,
    /// Invariant checks over all runs.
    pub invariants: InvariantTally,
    /// Σ anomalies (invariant violations) over all runs.
    pub anomalies: u64,
    /// The first violation: `invariant: detail`.
    pub anomaly_example: Option<String>,
    /// Σ wasted attempts / Σ attempts over complete runs.
    pub abort_ratio: Option<f64>,
    /// Mean over complete runs of the share of client time spent in
    /// attempts that did not commit, %.
    pub wasted_time_pct: Option<Summary>,
    /// Σ user aborts over complete runs.
    pub user_aborts: u64,
    /// Per transaction type, pooled over complete runs.
    pub types: Vec<TypeSummary>,
    pub vs_baseline: VsBaseline,
}

/// One transaction type of a cell, pooled over its complete runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeSummary {
    pub name: String,
    pub committed: u64,
    /// committed / Σ measured seconds, tx/s.
    pub tps: f64,
    pub user_aborts: u64,
    pub attempts: u64,
    pub failed: BTreeMap<String, u64>,
    /// Latency of the runs' merged histograms, ms (None without commits).
    pub latency: Option<LatencySummary>,
}

impl TypeSummary {
    /// Σ failed / (committed + user aborts + failed), %.
    pub fn failure_pct(&self) -> Option<f64> {
        let failed: u64 = self.failed.values().sum();
        let n = self.committed + self.user_aborts + failed;
        (n > 0).then(|| 100.0 * failed as f64 / n as f64)
    }
}

/// Per-run latency figures summarised over runs, ms.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyStats {
    pub mean: Option<Summary>,
    pub p50: Option<Summary>,
    pub p95: Option<Summary>,
    pub p99: Option<Summary>,
}

/// How many invariant checks ran and how many failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InvariantTally {
    pub checked: usize,
    pub violated: usize,
}

impl InvariantTally {
    /// `ok`, `2 violated`, or `n/a` when nothing was checked.
    pub fn label(&self) -> String {
        match (self.checked, self.violated) {
            (0, _) => super::NA.into(),
            (_, 0) => "ok".into(),
            (_, v) => format!("{v} violated"),
        }
    }
}

/// Mean TPS of a cell compared with its baseline cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VsBaseline {
    /// This cell is the baseline.
    Baseline,
    /// No baseline cell with the same factor values was run.
    Missing,
    /// [`stats::pct_change`] of the mean TPS (None when either mean is
    /// missing or the baseline's is 0), and Welch's t-test of the two
    /// samples when both have at least 2 complete runs.
    Change {
        pct: Option<f64>,
        welch: Option<Welch>,
    },
}

impl CellSummary<'_> {
    /// The complete runs, in execution order.
    pub fn complete_runs(&self) -> impl Iterator<Item = &RunRecord> + '_ {
        self.runs.iter().copied().filter(|r| r.complete)
    }

    /// `2` or `2 (+1 interrupted)`.
    pub fn runs_label(&self) -> String {
        match self.interrupted {
            0 => self.n.to_string(),
            i => format!("{} (+{i} interrupted)", self.n),
        }
    }
}

/// Groups `results.runs` by cell and computes each cell's statistics.
pub fn aggregate(results: &Results) -> Vec<CellSummary<'_>> {
    let mut groups: Vec<(&Cell, Vec<&RunRecord>)> = Vec::new();
    for run in &results.runs {
        match groups.iter_mut().find(|(cell, _)| **cell == run.cell) {
            Some((_, runs)) => runs.push(run),
            None => groups.push((&run.cell, vec![run])),
        }
    }
    let cells: Vec<CellSummary> = groups
        .into_iter()
        .map(|(cell, runs)| summarise(cell, runs))
        .collect();
    let baseline = (
        results.config.isolation.first().copied(),
        results.config.strategies.first().cloned(),
    );
    let vs: Vec<VsBaseline> = cells
        .iter()
        .map(|c| compare(c, &cells, &baseline))
        .collect();
    cells
        .into_iter()
        .zip(vs)
        .map(|(c, vs_baseline)| CellSummary { vs_baseline, ..c })
        .collect()
}

/// Statistics of one cell's runs (baseline left [`VsBaseline::Missing`]).
fn summarise<'a>(cell: &'a Cell, runs: Vec<&'a RunRecord>) -> CellSummary<'a> {
    let complete: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.complete).collect();
    let with_commits: Vec<&RunRecord> = complete
        .iter()
        .copied()
        .filter(|r| r.committed > 0)
        .collect();
    let lat = |f: fn(&RunRecord) -> f64| {
        Summary::of(&with_commits.iter().map(|r| f(r)).collect::<Vec<_>>())
    };
    let committed: u64 = complete.iter().map(|r| r.committed).sum();
    let retries: u64 = complete.iter().map(|r| r.retries).sum();
    let unknown_outcome: u64 = complete.iter().map(|r| r.unknown_outcome).sum();
    let user_aborts: u64 = complete.iter().map(|r| r.user_aborts).sum();
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    for r in &complete {
        for (code, n) in &r.failed {
            *failures.entry(code.clone()).or_default() += n;
        }
    }
    let failed: u64 = failures.values().sum();
    let transactions = committed + user_aborts + failed + unknown_outcome;
    let invariants =
        runs.iter()
            .flat_map(|r| &r.invariants)
            .fold(InvariantTally::default(), |t, i| InvariantTally {
                checked: t.checked + 1,
                violated: t.violated + usize::from(!i.ok),
            });
    let anomaly_example = runs
        .iter()
        .flat_map(|r| &r.invariants)
        .find(|i| !i.ok)
        .map(|i| format!("{}: {}", i.name, i.detail));
    let attempts: u64 = complete.iter().map(|r| r.attempts).sum();
    let wasted: u64 = complete.iter().map(|r| r.wasted_attempts).sum();
    CellSummary {
        anomalies: runs.iter().map(|r| r.anomalies).sum(),
        anomaly_example,
        abort_ratio: (attempts > 0).then(|| wasted as f64 / attempts as f64),
        wasted_time_pct: Summary::of(
            &complete
                .iter()
                .map(|r| r.wasted_time_pct)
                .collect::<Vec<_>>(),
        ),
        user_aborts,
        types: type_summaries(&complete),
        cell,
        n: complete.len(),
        interrupted: runs.len() - complete.len(),
        tps: Summary::of(&complete.iter().map(|r| r.tps).collect::<Vec<_>>()),
        latency: LatencyStats {
            mean: lat(|r| r.latency_ms.mean),
            p50: lat(|r| r.latency_ms.p50),
            p95: lat(|r| r.latency_ms.p95),
            p99: lat(|r| r.latency_ms.p99),
        },
        retries_per_commit: (committed > 0).then(|| retries as f64 / committed as f64),
        failure_pct: (transactions > 0).then(|| 100.0 * failed as f64 / transactions as f64),
        unknown_outcome,
        failures,
        invariants,
        vs_baseline: VsBaseline::Missing,
        runs,
    }
}

/// Per transaction type, pooled over `complete` runs (types in the order
/// of the first run).
fn type_summaries(complete: &[&RunRecord]) -> Vec<TypeSummary> {
    let seconds: f64 = complete.iter().map(|r| r.duration_s).sum();
    let mut out: Vec<(TypeSummary, Option<hdrhistogram::Histogram<u64>>)> = Vec::new();
    for r in complete {
        for t in &r.transactions {
            let i = match out.iter().position(|(s, _)| s.name == t.name) {
                Some(i) => i,
                None => {
                    out.push((
                        TypeSummary {
                            name: t.name.clone(),
                            committed: 0,
                            tps: 0.0,
                            user_aborts: 0,
                            attempts: 0,
                            failed: BTreeMap::new(),
                            latency: None,
                        },
                        None,
                    ));
                    out.len() - 1
                }
            };
            let (s, h) = &mut out[i];
            s.committed += t.committed;
            s.user_aborts += t.user_aborts;
            s.attempts += t.attempts;
            for (code, n) in &t.failed {
                *s.failed.entry(code.clone()).or_default() += n;
            }
            if let Ok(run_h) = decode_histogram(&t.latency_histogram) {
                match h {
                    Some(h) => {
                        let _ = h.add(&run_h);
                    }
                    None => *h = Some(run_h),
                }
            }
        }
    }
    out.into_iter()
        .map(|(mut s, h)| {
            s.tps = if seconds > 0.0 {
                s.committed as f64 / seconds
            } else {
                0.0
            };
            s.latency = h.filter(|h| !h.is_empty()).map(|h| LatencySummary::of(&h));
            s
        })
        .collect()
}

/// Compares `c` with its baseline among `cells`.
fn compare(
    c: &CellSummary,
    cells: &[CellSummary],
    baseline: &(Option<Isolation>, Option<String>),
) -> VsBaseline {
    let Some(iso) = baseline.0 else {
        return VsBaseline::Missing;
    };
    let strategy = baseline
        .1
        .clone()
        .unwrap_or_else(|| c.cell.strategy.clone());
    if c.cell.isolation == iso && c.cell.strategy == strategy {
        return VsBaseline::Baseline;
    }
    let key = Cell {
        isolation: iso,
        strategy,
        ..c.cell.clone()
    };
    let Some(base) = cells.iter().find(|b| *b.cell == key) else {
        return VsBaseline::Missing;
    };
    let pct = match (&c.tps, &base.tps) {
        (Some(v), Some(b)) => stats::pct_change(v.mean, b.mean),
        _ => None,
    };
    let welch = match (&c.tps, &base.tps) {
        (Some(v), Some(b)) => stats::welch(v, b),
        _ => None,
    };
    VsBaseline::Change { pct, welch }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    #[test]
    fn groups_in_first_appearance_order() {
        let r = fixture::results();
        let cells = aggregate(&r);
        let labels: Vec<String> = cells.iter().map(|c| c.cell.label()).collect();
        assert_eq!(
            labels,
            [
                "isolation=rc strategy=optimistic clients=4",
                "isolation=ser strategy=optimistic clients=4"
            ]
        );
        assert_eq!(cells[0].runs.len(), 2);
        assert_eq!((cells[1].n, cells[1].interrupted), (2, 1));
        assert_eq!(cells[1].runs_label(), "2 (+1 interrupted)");
    }

    #[test]
    fn statistics_use_complete_runs_only() {
        let r = fixture::results();
        let cells = aggregate(&r);
        let ser = &cells[1];
        let tps = ser.tps.unwrap();
        assert_eq!(tps.n, 2);
        assert!((tps.mean - 150.0).abs() < 1e-9);
        assert_eq!(ser.failures.get("40001"), Some(&(30 + 34)));
        // Interrupted runs' invariants still count.
        assert_eq!(
            cells[0].invariants,
            InvariantTally {
                checked: 4,
                violated: 1
            }
        );
        assert_eq!(cells[0].invariants.label(), "1 violated");
    }

    #[test]
    fn baseline_comparison() {
        let r = fixture::results();
        let cells = aggregate(&r);
        assert_eq!(cells[0].vs_baseline, VsBaseline::Baseline);
        let VsBaseline::Change { pct, welch } = cells[1].vs_baseline else {
            panic!("{:?}", cells[1].vs_baseline)
        };
        assert!((pct.unwrap() - 50.0).abs() < 1e-9);
        assert!(welch.unwrap().significant());
    }

    #[test]
    fn anomalies_and_types() {
        let r = fixture::results();
        let cells = aggregate(&r);
        assert_eq!(cells[0].anomalies, 1);
        assert!(
            cells[0]
                .anomaly_example
                .as_deref()
                .unwrap()
                .starts_with("balances-consistent: ")
        );
        assert_eq!(cells[1].anomalies, 0);
        // ser: complete runs 2 and 4 only.
        let t = &cells[1].types[0];
        assert_eq!(t.name, "tpcb-like");
        assert_eq!(t.committed, r.runs[1].committed + r.runs[3].committed);
        assert_eq!(t.failed.get("40001"), Some(&64));
        let p99 = t.latency.unwrap().p99;
        assert!((12.0..13.5).contains(&p99), "{p99}");
        let ratio = cells[1].abort_ratio.unwrap();
        let want = (900 + 30 + 1000 + 35) as f64 / (r.runs[1].attempts + r.runs[3].attempts) as f64;
        assert!((ratio - want).abs() < 1e-12, "{ratio} {want}");
    }

    #[test]
    fn baseline_is_first_isolation_and_first_strategy() {
        let mut r = fixture::results();
        r.config.strategies = vec!["optimistic".into(), "locking".into()];
        let mut locking: Vec<RunRecord> = r.runs.clone();
        for run in &mut locking {
            run.cell.strategy = "locking".into();
            run.tps *= 2.0;
        }
        r.runs.extend(locking);
        let cells = aggregate(&r);
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].vs_baseline, VsBaseline::Baseline);
        // rc/locking is compared with rc/optimistic: +100 %.
        let rc_locking = cells
            .iter()
            .find(|c| c.cell.strategy == "locking" && c.cell.isolation == Isolation::ReadCommitted)
            .unwrap();
        let VsBaseline::Change { pct, .. } = rc_locking.vs_baseline else {
            panic!("{:?}", rc_locking.vs_baseline)
        };
        assert!((pct.unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn missing_baseline() {
        let mut r = fixture::results();
        r.runs
            .retain(|run| run.cell.isolation != Isolation::ReadCommitted);
        assert_eq!(aggregate(&r)[0].vs_baseline, VsBaseline::Missing);
    }
}
