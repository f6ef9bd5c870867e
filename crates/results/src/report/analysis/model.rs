//! The report model: everything the renderers show, aggregated once from a
//! [`Results`]. [`ReportModel::new`] groups the runs into cells with their
//! statistics and baseline comparison ([`cells::aggregate`]), names the
//! factor columns and each cell's values, aggregates the server
//! observations per cell ([`server`]) and the failure reasons
//! ([`reasons`]); [`crate::report::tables`] builds the report's tables from it,
//! and the renderers (Markdown, HTML, terminal, CSV, JSON) only write them
//! out.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{CountStat, PlanChange};
use crate::report::analysis::cells::{self, CellSummary};
use crate::report::analysis::guarantee::{self, CellGuarantee};
use crate::report::analysis::plans::{self, PlanGroup};
use crate::report::analysis::reasons::{self, ReasonTally};
use crate::report::analysis::server::{self, WaitShare};
use crate::stats::{self, noise::Noise};
use crate::store::{Cell, Results};

/// Everything a report shows, computed once per report.
pub struct ReportModel<'a> {
    pub results: &'a Results,
    /// The cells with their statistics, in the order of their first run.
    pub cells: Vec<CellSummary<'a>>,
    /// The factor columns and each cell's values.
    pub factors: Factors,
    /// The baseline rule in words ([`cells::baseline_description`]).
    pub baseline: String,
    /// What the throughput column counts: (`TPS`, `tx/s`) or
    /// (`requests/s`, `req/s`) ([`crate::report::throughput_label`]).
    pub throughput: (&'static str, &'static str),
    /// Run indexes of every outlier run (see [`CellSummary::outliers`]).
    pub outlier_runs: Vec<u32>,
    /// The distinct server versions of the runs, in order of first run.
    pub server_versions: Vec<String>,
    /// Per cell: mean `pg_stat_database` rates ([`server::counter_rates`]).
    pub counter_rates: Vec<BTreeMap<String, f64>>,
    /// The counters to show ([`server::counter_names`]).
    pub counter_names: Vec<String>,
    /// Per cell: the total of backend observations and every wait event's
    /// share, most frequent first ([`server::top_wait_events`]).
    pub wait_events: Vec<(u64, Vec<WaitShare>)>,
    /// Per cell: SIRead locks by granularity
    /// ([`server::siread_by_granularity`]).
    pub siread: Vec<BTreeMap<String, CountStat>>,
    /// Each distinct plan with the cells that ran it and when
    /// ([`plans::distinct_plans`]).
    pub plans: Vec<PlanGroup<'a>>,
    /// Plans that changed within a run: (run index, the change), in
    /// execution order.
    pub plan_changes: Vec<(u32, &'a PlanChange)>,
    /// Per cell: failed attempts by transaction type, statement, SQLSTATE
    /// and reason ([`reasons::pooled`]).
    pub failure_reasons: Vec<Vec<ReasonTally>>,
    /// A calibration's noise (`isobench calibrate`, [`stats::noise`]);
    /// `None` for other studies.
    pub noise: Option<Noise>,
    /// The cells with a history check: their level's promise against what
    /// the checks found ([`guarantee::tally`]).
    pub guarantees: Vec<CellGuarantee<'a>>,
}

impl<'a> ReportModel<'a> {
    /// Aggregates `results` (see the module docs).
    pub fn new(results: &'a Results) -> Self {
        let cells = cells::aggregate(results);
        let factors = Factors::new(results, &cells);
        let counter_rates: Vec<_> = cells.iter().map(server::counter_rates).collect();
        let counter_names = server::counter_names(&counter_rates);
        let mut server_versions: Vec<String> = Vec::new();
        for run in &results.runs {
            if !server_versions.contains(&run.server_version) {
                server_versions.push(run.server_version.clone());
            }
        }
        ReportModel {
            results,
            factors,
            baseline: cells::baseline_description(results),
            throughput: crate::report::throughput_label(results),
            outlier_runs: cells.iter().flat_map(|c| c.outliers.clone()).collect(),
            server_versions,
            counter_rates,
            counter_names,
            wait_events: cells
                .iter()
                .map(|c| server::top_wait_events(c, usize::MAX))
                .collect(),
            siread: cells.iter().map(server::siread_by_granularity).collect(),
            plans: plans::distinct_plans(&cells),
            plan_changes: results
                .runs
                .iter()
                .flat_map(|r| r.server.plan_changes.iter().map(|c| (r.index, c)))
                .collect(),
            failure_reasons: cells.iter().map(reasons::pooled).collect(),
            noise: stats::noise::of(results),
            guarantees: guarantee::tally(&cells),
            cells,
        }
    }

    /// The index of `cell` among [`Self::cells`].
    pub fn cell_index(&self, cell: &Cell) -> Option<usize> {
        self.cells.iter().position(|c| c.cell == cell)
    }

    /// Whether any cell's effective TPS is below its TPS (transactions
    /// counted as committed whose work is not in the database): the
    /// reports then show effective TPS beside TPS and say that % vs
    /// baseline is on it.
    pub fn effective_differs(&self) -> bool {
        self.cells.iter().any(CellSummary::effective_differs)
    }

    /// Whether any cell has an effective TPS (a history check applies).
    pub fn has_effective(&self) -> bool {
        self.cells.iter().any(|c| c.effective_tps.is_some())
    }

    /// Whether any cell has TPC-C's tpmC (New-Order commits per minute):
    /// the reports then show it beside TPS.
    pub fn has_tpmc(&self) -> bool {
        self.cells.iter().any(|c| c.tpmc.is_some())
    }

    /// Whether any cell broke its level's promise.
    pub fn violated(&self) -> bool {
        self.guarantees
            .iter()
            .any(|g| g.violations().next().is_some())
    }

    /// Whether the workload is ssibench (its summary adds KTPS).
    pub fn ssibench(&self) -> bool {
        matches!(
            self.results.config.workload.as_str(),
            "ssibench" | "simple-ssibench"
        )
    }
}

/// The factor columns of the cells ([`crate::report::factor_headers`]), each
/// cell's values ([`crate::report::factor_values`]), which columns vary, and short
/// labels built from the varying ones (`ser · clients=8`).
pub struct Factors {
    pub headers: Vec<String>,
    /// Per cell, in the order of [`ReportModel::cells`].
    pub values: Vec<Vec<String>>,
    pub varying: Vec<bool>,
    /// Per cell: [`Cell::label`].
    pub labels: Vec<String>,
    /// Per cell: [`Factors::label`].
    pub short_labels: Vec<String>,
}

impl Factors {
    fn new(results: &Results, cells: &[CellSummary]) -> Factors {
        let headers = crate::report::factor_headers(results);
        let values: Vec<Vec<String>> = cells
            .iter()
            .map(|c| crate::report::factor_values(results, c.cell))
            .collect();
        let varying = (0..headers.len())
            .map(|j| values.iter().map(|v| &v[j]).collect::<BTreeSet<_>>().len() > 1)
            .collect();
        let mut f = Factors {
            headers,
            values,
            varying,
            labels: cells.iter().map(|c| c.cell.label()).collect(),
            short_labels: Vec::new(),
        };
        f.short_labels = (0..f.values.len()).map(|i| f.label(i)).collect();
        f
    }

    /// Cell `i`'s varying factors except column `skip`: isolation and
    /// strategy by value, the others as `name=value`; isolation and
    /// strategy when nothing else varies.
    pub fn label_without(&self, i: usize, skip: Option<usize>) -> String {
        let parts: Vec<String> = (0..self.headers.len())
            .filter(|j| self.varying[*j] && Some(*j) != skip)
            .map(|j| {
                if j < 2 {
                    self.values[i][j].clone()
                } else {
                    format!("{}={}", self.headers[j], self.values[i][j])
                }
            })
            .collect();
        if parts.is_empty() {
            format!("{} · {}", self.values[i][0], self.values[i][1])
        } else {
            parts.join(" · ")
        }
    }

    /// Cell `b`'s label as seen from cell `i`: only the factors in which
    /// the two differ (`rc` for the baseline of `ser · clients=8` at 8
    /// clients); [`Self::label`] when they differ in none.
    pub fn label_against(&self, b: usize, i: usize) -> String {
        let parts: Vec<String> = (0..self.headers.len())
            .filter(|&j| self.varying[j] && self.values[b][j] != self.values[i][j])
            .map(|j| {
                if j < 2 {
                    self.values[b][j].clone()
                } else {
                    format!("{}={}", self.headers[j], self.values[b][j])
                }
            })
            .collect();
        if parts.is_empty() {
            self.label(b)
        } else {
            parts.join(" · ")
        }
    }

    /// Cell `i`'s short label.
    pub fn label(&self, i: usize) -> String {
        self.label_without(i, None)
    }

    /// Columns other than isolation and strategy whose values all parse
    /// as numbers and take more than one value, `clients` first.
    pub fn numeric_varying(&self) -> Vec<usize> {
        let mut cols: Vec<usize> = (2..self.headers.len())
            .filter(|j| {
                self.varying[*j]
                    && self
                        .values
                        .iter()
                        .all(|v| v[*j].parse::<f64>().is_ok_and(f64::is_finite))
            })
            .collect();
        cols.sort_by_key(|j| self.headers[*j] != "clients");
        cols
    }
}
