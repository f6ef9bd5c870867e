//! The report model: everything the renderers show, aggregated once from a
//! [`Results`]. [`ReportModel::new`] groups the runs into cells with their
//! statistics and baseline comparison ([`cells::aggregate`]), names the
//! factor columns and each cell's values, aggregates the server
//! observations per cell ([`server`]) and the failure reasons
//! ([`reasons`]); [`crate::report::tables`] builds the report's tables from it,
//! and the renderers (Markdown, HTML, terminal, CSV, JSON) only write them
//! out.

use std::collections::BTreeMap;

use crate::model::{CountStat, PlanChange};
use crate::report::analysis::cells::{self, CellSummary};
pub use crate::report::analysis::factors::Factors;
use crate::report::analysis::guarantee::{self, CellGuarantee};
use crate::report::analysis::plans::ChangeGroup;
use crate::report::analysis::plans::{self, PlanGroup};
use crate::report::analysis::reasons::{self, ReasonTally};
use crate::report::analysis::routed_reads::{self, RoutedReads};
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
    /// (`requests/s`, `req/s`) ([`crate::report::format::throughput_label`]).
    pub throughput: (&'static str, &'static str),
    /// What "% vs baseline" compares: `effective TPS` when a cell's
    /// effective TPS is below its TPS ([`Self::effective_differs`]), else
    /// the throughput's name (`TPS`).
    pub compared_on: String,
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
    /// The cells whose runs routed reads to standbys (`--read-from`):
    /// their reads behind, staleness and monotonic-read violations
    /// ([`routed_reads::tally`]).
    pub routed_reads: Vec<RoutedReads>,
}

impl<'a> ReportModel<'a> {
    /// The plans that changed within runs, grouped by statement and the
    /// steps that changed, in execution order.
    pub fn plan_change_groups(&self) -> Vec<ChangeGroup> {
        let mut out: Vec<ChangeGroup> = Vec::new();
        for (run, c) in &self.plan_changes {
            let (start, end) = plans::first_difference(&c.start, &c.end);
            let cell = self
                .results
                .runs
                .iter()
                .find(|r| r.index == *run)
                .and_then(|r| self.cell_index(&r.cell))
                .map(|i| self.factors.short_labels[i].clone());
            let g = match out
                .iter_mut()
                .find(|g| g.label == c.label && g.start == start && g.end == end)
            {
                Some(g) => g,
                None => {
                    out.push(ChangeGroup {
                        label: c.label.clone(),
                        start,
                        end,
                        runs: Vec::new(),
                        cells: Vec::new(),
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            g.runs.push(*run);
            if let Some(cell) = cell
                && !g.cells.contains(&cell)
            {
                g.cells.push(cell);
            }
        }
        out
    }

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
        let throughput = crate::report::format::throughput_label(results);
        let compared_on = if cells.iter().any(CellSummary::effective_differs) {
            format!("effective {}", throughput.0)
        } else {
            throughput.0.to_string()
        };
        ReportModel {
            results,
            factors,
            baseline: cells::baseline_description(results),
            throughput,
            compared_on,
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
            routed_reads: routed_reads::tally(&cells),
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

    /// Whether any cell lost acknowledged commits in runs through a
    /// failover or crash ([`CellSummary::lost_acknowledged`]).
    pub fn lost_acknowledged(&self) -> bool {
        self.cells.iter().any(|c| c.lost_acknowledged > 0)
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
