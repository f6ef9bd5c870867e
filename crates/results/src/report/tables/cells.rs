//! The per-cell tables: Cells (the summary every format shows first: the
//! terminal too) and Cells in detail, with their notes; and how a cell is
//! named in the other tables ([`cell_value`]).

use super::table::{Column, Mark, Row, Table, Value, factor_column};
use super::{mean_value, opt_value};
use crate::report::analysis::cells::{CellSummary, VsBaseline, WaitStats};
use crate::report::analysis::model::ReportModel;
use crate::report::{
    format::NA, format::fmt_fixed, format::fmt_ms, format::fmt_p, format::fmt_pct_ci,
    format::fmt_tps, format::fmt_tps_ci,
};
use crate::stats;
use crate::store::{Cell, RunRecord, WaitSummary};

/// Cell `i` of the model: its full label, and its varying factors as the
/// short form.
pub fn cell_value(m: &ReportModel, i: usize) -> Value {
    Value {
        short: Some(m.factors.short_labels[i].clone()),
        ..Value::text(m.factors.labels[i].clone())
    }
}

/// A run's cell: [`cell_value`] when the cell is in the model.
pub(super) fn run_cell_value(m: &ReportModel, cell: &Cell) -> Value {
    m.cell_index(cell)
        .map_or_else(|| Value::text(cell.label()), |i| cell_value(m, i))
}

/// Which optional wait columns the study needs: pool wait (a pool
/// size factor), schedule lag (a rate factor), skipped/late (a latency
/// limit).
pub(super) struct WaitColumns {
    pool: bool,
    lag: bool,
    limit: bool,
}

impl WaitColumns {
    pub(super) fn of(m: &ReportModel) -> Self {
        let c = &m.results.config;
        WaitColumns {
            pool: !c.pool_size.is_empty(),
            lag: !c.rate.is_empty(),
            limit: !c.rate.is_empty() && c.latency_limit_ms.is_some(),
        }
    }

    /// Columns for the summary (`per_run` false) or the runs table.
    pub(super) fn columns(&self, per_run: bool) -> Vec<Column> {
        let (mean, p99) = if per_run {
            ("ms", "ms")
        } else {
            ("ms, mean of runs", "ms, worst run")
        };
        let mut h = Vec::new();
        if self.pool {
            h.push(Column::num(format!("pool wait mean ({mean})")));
            h.push(Column::num(format!("pool wait p99 ({p99})")));
        }
        if self.lag {
            h.push(Column::num(format!("schedule lag mean ({mean})")));
            h.push(Column::num(format!("schedule lag p99 ({p99})")));
        }
        if self.limit {
            h.push(Column::num("skipped (transactions)").short("skipped"));
            h.push(Column::num("late (transactions)").short("late"));
        }
        h
    }

    fn cell(&self, c: &CellSummary) -> Vec<Value> {
        let w = |s: &Option<WaitStats>| match s {
            Some(s) => [
                Value::num(s.mean_ms.mean, fmt_ms(s.mean_ms.mean)),
                Value::num(s.p99_max_ms, fmt_ms(s.p99_max_ms)),
            ],
            None => [NA.into(), NA.into()],
        };
        self.values(w(&c.pool_wait), w(&c.schedule_lag), c.skipped, c.late)
    }

    pub(super) fn run(&self, run: &RunRecord) -> Vec<Value> {
        let w = |s: &Option<WaitSummary>| match s {
            Some(s) => [
                Value::num(s.mean, fmt_ms(s.mean)),
                Value::num(s.p99, fmt_ms(s.p99)),
            ],
            None => [NA.into(), NA.into()],
        };
        self.values(
            w(&run.pool_wait_ms),
            w(&run.schedule_lag_ms),
            run.skipped,
            run.late,
        )
    }

    fn values(&self, pool: [Value; 2], lag: [Value; 2], skipped: u64, late: u64) -> Vec<Value> {
        let mut v = Vec::new();
        if self.pool {
            v.extend(pool);
        }
        if self.lag {
            v.extend(lag);
        }
        if self.limit {
            v.extend([Value::count(skipped), Value::count(late)]);
        }
        v
    }
}

/// The note above the Cells table (report.md and report.html): what a
/// row is, what the intervals and marks mean, the baseline, and the
/// factors left out because every cell has the same value
/// ([`cells_legend`]); then effective TPS ([`EFFECTIVE_NOTE`]) when a
/// cell has one below its TPS, and where the other figures are.
pub fn cells_note(m: &ReportModel) -> String {
    let mut effective = if m.effective_differs() {
        format!(" {EFFECTIVE_NOTE}")
    } else {
        String::new()
    };
    if m.lost_acknowledged() {
        effective.push_str(
            " In runs through a failover or a crash it is in Cells in detail as acknowledged commits lost.",
        );
    }
    format!(
        "{}{effective} More figures per cell, and how each is computed: Cells in detail.",
        cells_legend(m)
    )
}

/// What every Cells table needs said, the terminal's too: what a row is,
/// the factors the same in every cell, the intervals, what "% vs
/// baseline" compares against which cell, and its marks; what the
/// anomalies column counts ([`crate::report::analysis::coverage`]).
pub fn cells_legend(m: &ReportModel) -> String {
    let mut checks = crate::report::analysis::coverage::column_note(
        &m.results.config.workload,
        m.cells.iter().map(|c| c.checks.as_slice()),
    );
    checks[..1].make_ascii_uppercase();
    let same = constant_factors(m);
    let same = if same.is_empty() {
        String::new()
    } else {
        format!(" Same in every cell: {same}.")
    };
    format!(
        "One row per cell, over its complete runs.{same} ± and [ ]: 95 % confidence intervals. % vs \
         baseline: mean {} against {}; ▲/▼: significantly higher/lower (the t-test of the log ratio whose \
         interval is shown, p < 0.05), n.s.: not significant, (too few runs): fewer than 3 complete runs \
         on a side. {checks}.",
        m.compared_on, m.baseline,
    )
}

/// What the Cells tables say when a cell's effective TPS is below its
/// TPS (report.md, report.html; the terminal words its own).
pub const EFFECTIVE_NOTE: &str = "Effective TPS: committed transactions whose work is in the database, \
     per second (the history check counts their pgbench_history rows; where a call swallowed a \
     serialization failure and returned as if committed, its row is missing); a cell where it is below \
     the reported TPS shows the reported figure after it, and % vs baseline and the verdict compare \
     effective TPS. The difference is under Failures as swallowed.";

/// The Cells in detail column of acknowledged commits a failover or
/// crash lost ([`crate::report::analysis::cells::CellSummary::lost_acknowledged`]).
pub const LOST_COLUMN: &str = "acknowledged commits lost (transactions)";

/// What the Cells tables say about [`LOST_COLUMN`].
pub const LOST_NOTE: &str = "Acknowledged commits lost: in runs through a failover, a crash or a \
     backend kill, transactions counted as committed whose work is not in the database afterwards (the \
     history check); the server acknowledged them and lost them (asynchronous commits, or what the \
     promoted standby had not received). The history check cannot tell them from failures a function \
     swallowed: in such runs every missing transaction counts here, not as swallowed.";

/// A cell's transactions counted as committed that left no work in the
/// database, by cause: `12 swallowed; 3 acknowledged commits lost to a
/// failover or crash`.
fn missing_text(c: &crate::report::analysis::cells::CellSummary) -> String {
    let mut parts = Vec::new();
    if c.swallowed > 0 {
        parts.push(format!("{} swallowed", c.swallowed));
    }
    if c.lost_acknowledged > 0 {
        parts.push(format!(
            "{} acknowledged commits lost to a failover or crash",
            c.lost_acknowledged
        ));
    }
    format!(
        "transactions counted as committed left no work in the database: {}",
        parts.join("; ")
    )
}

/// How the figures of the Cells tables are computed (report.md's Cells
/// in detail; report.html's likewise).
pub const CELL_DETAILS_NOTE: &str = "The figures of Cells and more, per cell. ± is the half-width of the \
     95 % confidence interval of the mean (Student t, n - 1 degrees of freedom; n/a with one run). % vs \
     baseline compares mean TPS (goodput: committed transactions per second; effective TPS where a history \
     check gives one) with the baseline cell's; its 95 % CI is that of the ratio of the means, taken on the \
     log scale (delta method, Welch–Satterthwaite degrees of freedom), so it never goes below -100 %. p: the \
     two-sided t-test of that log ratio, so p < 0.05 exactly when the interval excludes 0; verdict: faster or \
     slower when p < 0.05, else no significant difference (the runs do not show one); too few runs with fewer \
     than 3 complete runs on a side. MDE: the smallest change of the compared TPS this comparison detects with \
     80 % power at α = 0.05 (noncentral t at the observed variances and runs). Precision (with --precision): \
     whether the cell's 95 % interval of TPS reached the target half-width by the sequential rule, and with \
     how many runs. Latencies are means over runs of each run's figure (see Latency for the \
     merged histograms). Abort ratio: attempts that neither committed nor were rolled back by the workload \
     on purpose (retried and failed attempts) / attempts. Wasted time: share of client time spent in \
     attempts that did not commit. Anomalies: invariant violations summed over all runs, with the first \
     example.";

/// The notes of the summary table about its optional columns: pool wait,
/// schedule lag, skipped/late, reported TPS and swallowed, outlier runs
/// (in that order, each when its columns are shown).
pub fn summary_notes(m: &ReportModel) -> Vec<&'static str> {
    let waits = WaitColumns::of(m);
    let mut notes = Vec::new();
    if waits.pool {
        notes.push(
            "Pool wait: time a client waited for a pooled connection per checkout, mean over runs of each \
             run's mean, and the largest p99 of any run.",
        );
    }
    if waits.lag {
        notes.push(
            "Schedule lag (open loop): how late a transaction started after its scheduled time, mean over \
             runs of each run's mean, and the largest p99 of any run.",
        );
    }
    if waits.limit {
        notes.push(
            "Skipped: transactions not started because they were already later than the latency limit; \
             late: committed transactions slower than it (summed over complete runs).",
        );
    }
    if m.has_effective() {
        notes.push(
            "TPS reported: committed transactions per second as the clients counted them; swallowed: those \
             of them whose work is not in the database (the history check; see Failures). % vs baseline \
             and the verdict compare effective TPS, the reported TPS less the swallowed, and the same \
             where nothing was swallowed.",
        );
    }
    if m.lost_acknowledged() {
        notes.push(LOST_NOTE);
    }
    if !m.outlier_runs.is_empty() {
        notes.push(
            "Outlier runs: runs whose TPS has a modified z-score |M| > 3.5 within their cell (Iglewicz & \
             Hoaglin); they are counted all the same: look at them (see Runs).",
        );
    }
    notes
}

/// The "% vs baseline" value: the change with its 95 % interval
/// (`baseline`, `+50.0% [+37.8%, +62.2%]`, n/a), marked by the verdict
/// (the test of the log ratio whose interval is shown; no mark below 3
/// complete runs a side), the test and the smallest detectable change in
/// its title.
fn vs_baseline_value(v: &VsBaseline) -> Value {
    let mut text = v.pct_text();
    if let VsBaseline::Change {
        pct: Some(_),
        pct_ci: Some(ci),
        ..
    } = v
    {
        text = format!("{text} {}", fmt_pct_ci(Some(ci)));
    }
    let caveat = v.comparison().and_then(|c| c.caveat());
    match v {
        VsBaseline::Baseline => Value::text(text).mark(Mark::Baseline),
        VsBaseline::Missing | VsBaseline::Change { pct: None, .. } => Value::text(text),
        VsBaseline::Change {
            pct: Some(p),
            welch: Some(w),
            verdict,
            n_min,
            mde_pct,
            ..
        } if *n_min >= stats::MIN_RUNS => {
            let title = format!(
                "t-test of the log ratio (the interval's): t = {:.3}, df = {:.1}, p = {:.4}",
                w.t, w.df, w.p
            );
            let (mark, sig) = match (verdict.significant(), *p >= 0.0) {
                (true, true) => (Mark::Up, "significant"),
                (true, false) => (Mark::Down, "significant"),
                (false, _) => (Mark::NotSignificant, "not significant"),
            };
            let mde = mde_pct.map_or(String::new(), |m| {
                format!("; detectable change ±{}", stats::fmt_mde(m))
            });
            let caveat = caveat.map_or(String::new(), |c| format!("; {c}"));
            Value::num(*p, text)
                .mark(mark)
                .title(format!("{title} ({sig} at 5 %){mde}{caveat}"))
        }
        VsBaseline::Change { pct: Some(p), .. } => {
            Value::num(*p, text)
                .mark(Mark::NoTest)
                .title(caveat.unwrap_or_else(|| {
                    format!(
                        "too few runs: a verdict needs {} complete runs a side",
                        stats::MIN_RUNS
                    )
                }))
        }
    }
}

/// The lines under the Cells table (report.md, report.html, the
/// terminal): one per cell whose comparison found no difference and could
/// not have seen a 5 % one (`Comparison::caveat`: "cannot tell", with the
/// runs a 5 % MDE needs), then, in a `--precision` study, one per cell:
/// whether its TPS reached the target, and with how many runs.
pub fn verdict_notes(m: &ReportModel) -> Vec<String> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        if let Some(words) = c.vs_baseline.comparison().and_then(|x| x.caveat()) {
            out.push(format!(
                "{}: cannot tell: {words}.",
                m.factors.short_labels[i]
            ));
        }
    }
    for (i, c) in m.cells.iter().enumerate() {
        if let Some(p) = c.precision {
            out.push(format!(
                "{}: precision {}.",
                m.factors.short_labels[i],
                p.label()
            ));
        }
    }
    out
}

/// The factors the Cells tables leave out, as `strategy optimistic,
/// clients 16`: the same in every cell.
pub fn constant_factors(m: &ReportModel) -> String {
    let shown = &m.factors.shown;
    let f = &m.factors;
    let Some(values) = f.values.first() else {
        return String::new();
    };
    (0..f.headers.len())
        .filter(|j| !shown.contains(j))
        .map(|j| format!("{} {}", f.headers[j], values[j]))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns of the factors the Cells tables show ([`Factors::shown`]).
///
/// [`Factors::shown`]: crate::report::analysis::factors::Factors::shown
fn shown_factor_columns(m: &ReportModel) -> Vec<Column> {
    m.factors
        .shown
        .iter()
        .map(|&j| factor_column(&m.factors.headers[j]))
        .collect()
}

fn shown_factor_values(m: &ReportModel, i: usize, shown: &[usize]) -> Vec<Value> {
    shown
        .iter()
        .map(|&j| Value::text(m.factors.values[i][j].clone()))
        .collect()
}

/// The Cells table: what a reader needs first, narrow enough for a
/// 1400 px page (at most [`CELLS_MAX_COLUMNS`] columns besides the
/// varying factors): runs, throughput with its interval, the change
/// against the baseline with its interval (marked by Welch's test),
/// latency p50 and p99, retries, failures and anomalies. The rest is in
/// [`cell_details`].
pub fn summary(m: &ReportModel) -> Table {
    let tp_unit = m.throughput.1;
    let on = &m.compared_on;
    let mut cols = shown_factor_columns(m);
    // Short headers for the terminal: its legend says what ± and [ ]
    // are, and what failed and anomalies count.
    cols.extend([
        Column::num("runs (n)"),
        Column::num(format!("{on} mean ± 95% CI ({tp_unit})")).short(format!("{on} ({tp_unit})")),
        Column::num(format!("% vs baseline ({on}) [95% CI]")).short("% vs baseline"),
        Column::num("p50 (ms)"),
        Column::num("p99 (ms)"),
        Column::num("retries per commit"),
        Column::num("failed (% of transactions)").short("failed (%)"),
        Column::num("anomalies (violations)").short("anomalies"),
    ]);
    let mut t = Table::new(cols);
    t.id = Some("cells");
    let shown = &m.factors.shown;
    let max_tps = m
        .cells
        .iter()
        .filter_map(|c| c.headline_tps().map(|s| s.mean))
        .fold(0.0, f64::max);
    for (i, c) in m.cells.iter().enumerate() {
        let mut row = shown_factor_values(m, i, shown);
        let headline = c.headline_tps();
        let mut tps = mean_value(headline, fmt_tps);
        tps.text = fmt_tps_ci(headline);
        if let (true, Some(reported)) = (c.effective_differs(), &c.tps) {
            tps.text = format!("{} ({} reported)", tps.text, fmt_tps(reported.mean));
            tps = tps.mark(Mark::Bad).title(missing_text(c));
        }
        tps.bar = headline
            .filter(|s| max_tps > 0.0 && s.mean.is_finite())
            .map(|s| s.mean / max_tps);
        let anomalies = if !c.checked() {
            Value::text(crate::report::analysis::coverage::NOT_CHECKED).title(
                "no check covers this cell's transactions: declare the rule they must keep \
                 (--check, [[check]]; see Declared checks in the user guide)",
            )
        } else {
            let v = Value::count(c.anomalies);
            match (&c.anomaly_example, c.anomalies > 0) {
                (Some(e), true) => v.mark(Mark::Bad).title(e.clone()),
                _ => v,
            }
        };
        row.extend([
            Value::num(c.n as f64, c.runs_label()),
            tps,
            vs_baseline_value(&c.vs_baseline),
            mean_value(c.latency.p50.as_ref(), fmt_ms),
            mean_value(c.latency.p99.as_ref(), fmt_ms),
            opt_value(c.retries_per_commit, 3),
            opt_value(c.failure_pct, 2),
            anomalies,
        ]);
        t.rows.push(Row {
            values: row,
            class: row_class(c),
        });
    }
    t
}

/// Columns of the Cells table besides the varying factors.
pub const CELLS_MAX_COLUMNS: usize = 8;

fn row_class(c: &CellSummary) -> &'static str {
    if c.vs_baseline == VsBaseline::Baseline {
        "baseline"
    } else {
        ""
    }
}

/// The per-cell figures the Cells table leaves out: the test against
/// the baseline (p, verdict, the smallest detectable change), whether a
/// `--precision` target was reached, outlier runs, KTPS (ssibench), latency
/// mean and p95, pool wait and schedule lag, abort ratio, wasted time,
/// unknown outcomes, the anomalies' first example and the invariants.
pub fn cell_details(m: &ReportModel) -> Table {
    let mut cols = shown_factor_columns(m);
    cols.extend([
        Column::num("p"),
        Column::text(format!("verdict ({})", m.compared_on)),
        Column::num("MDE (80 % power)").short("MDE"),
    ]);
    if m.results.config.precision.is_some() {
        cols.push(Column::text("precision (95% CI of TPS)").short("precision"));
    }
    if m.has_effective() {
        cols.push(Column::num(format!(
            "{} reported ({})",
            m.throughput.0, m.throughput.1
        )));
        cols.push(Column::num("swallowed (transactions)"));
        if m.lost_acknowledged() {
            cols.push(Column::num(LOST_COLUMN));
        }
    }
    if !m.outlier_runs.is_empty() {
        cols.push(Column::text("outlier runs (TPS)"));
    }
    if m.ssibench() {
        cols.push(Column::num("KTPS (1000 tx/s)"));
    }
    if m.has_tpmc() {
        cols.push(Column::num("tpmC (New-Order commits/min)"));
    }
    cols.extend(["latency mean (ms)", "p95 (ms)"].map(Column::num));
    cols.extend(WaitColumns::of(m).columns(false));
    cols.extend(
        [
            "abort ratio (attempts)",
            "wasted time (% of client time)",
            "unknown outcomes (transactions)",
        ]
        .map(Column::num),
    );
    cols.push(Column::long("anomalies (first example)"));
    cols.push(Column::text("invariants").detail());
    let mut t = Table::new(cols);
    t.id = Some("cells-more");
    let waits = WaitColumns::of(m);
    let shown = &m.factors.shown;
    for (i, c) in m.cells.iter().enumerate() {
        let mut row = shown_factor_values(m, i, shown);
        let p = match &c.vs_baseline {
            VsBaseline::Change { welch, .. } => fmt_p(welch.as_ref()),
            VsBaseline::Baseline => "baseline".into(),
            VsBaseline::Missing => NA.into(),
        };
        let mde = c.vs_baseline.comparison().and_then(|c| c.mde_pct);
        let mut mde = Value::opt(
            mde,
            mde.map_or_else(|| NA.into(), |m| format!("±{}", stats::fmt_mde(m))),
        );
        if let Some(n) = c.vs_baseline.comparison().and_then(|c| c.runs_for_target) {
            mde = mde.title(format!(
                "{n} complete runs a side would detect a {} change",
                stats::fmt_mde(stats::MDE_TARGET_PCT)
            ));
        }
        row.extend([p.into(), c.vs_baseline.verdict_text().into(), mde]);
        if m.results.config.precision.is_some() {
            row.push(c.precision.map_or_else(
                || Value::text(NA),
                |p| Value::text(p.label()).mark(if p.reached { Mark::Good } else { Mark::Bad }),
            ));
        }
        if m.has_effective() {
            let mut reported = mean_value(c.tps.as_ref(), fmt_tps);
            reported.text = fmt_tps_ci(c.tps.as_ref());
            row.push(reported);
            for (n, shown) in [
                (c.swallowed, true),
                (c.lost_acknowledged, m.lost_acknowledged()),
            ] {
                if shown {
                    row.push(Value::count(n).mark(if n > 0 { Mark::Bad } else { Mark::None }));
                }
            }
        }
        if !m.outlier_runs.is_empty() {
            row.push(if c.outliers.is_empty() {
                "none".into()
            } else {
                let runs: Vec<String> = c.outliers.iter().map(u32::to_string).collect();
                runs.join(", ").into()
            });
        }
        if m.ssibench() {
            row.push(mean_value(c.tps.as_ref(), |v| fmt_fixed(v / 1000.0, 3)));
        }
        if m.has_tpmc() {
            let mut tpmc = mean_value(c.tpmc.as_ref(), fmt_tps);
            tpmc.text = fmt_tps_ci(c.tpmc.as_ref());
            row.push(tpmc);
        }
        row.extend([
            mean_value(c.latency.mean.as_ref(), fmt_ms),
            mean_value(c.latency.p95.as_ref(), fmt_ms),
        ]);
        row.extend(waits.cell(c));
        row.extend([
            opt_value(c.abort_ratio, 3),
            mean_value(c.wasted_time_pct.as_ref(), |v| fmt_fixed(v, 1)),
            Value::count(c.unknown_outcome),
            Value {
                text: c.anomalies_text(200),
                mark: if c.anomalies > 0 {
                    Mark::Bad
                } else {
                    Mark::None
                },
                ..Value::count(c.anomalies)
            },
            Value::text(c.invariants.label()).mark(match c.invariants {
                i if i.violated > 0 => Mark::Bad,
                i if i.checked == 0 => Mark::None,
                _ => Mark::Good,
            }),
        ]);
        t.rows.push(Row {
            values: row,
            class: row_class(c),
        });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FailoverOutcome, FaultKind, InjectedFault, RunFaults, fixture};

    /// The ser runs of [`fixture::swallowed_history`] (21,600 commits
    /// missing in each one's life) as if a failover, not a function, had
    /// lost them.
    fn failed_over_history() -> crate::store::Results {
        let mut r = fixture::swallowed_history();
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::Serializable {
                run.faults = Some(RunFaults {
                    injected: vec![InjectedFault {
                        kind: FaultKind::Failover,
                        t_s: 2.0,
                        detail: "SIGKILL to node n1".into(),
                        failover: Some(FailoverOutcome {
                            killed: "n1".into(),
                            promoted: Some("n2".into()),
                            promoted_s: Some(4.5),
                            unavailable_s: Some(5.0),
                            split_brain_writes: None,
                        }),
                    }],
                    ..Default::default()
                });
            }
        }
        r
    }

    fn column(t: &Table, header: &str) -> Option<Vec<String>> {
        let j = t.columns.iter().position(|c| c.header == header)?;
        Some(t.rows.iter().map(|r| r.values[j].text.clone()).collect())
    }

    /// Missing commits in runs through a failover are acknowledged
    /// commits lost, in their own column, not swallowed failures: not
    /// in the swallowed column, the Failures table or the history
    /// finding; without a failover they stay swallowed.
    #[test]
    fn a_failover_loses_acknowledged_commits_a_function_swallows_failures() {
        let r = fixture::swallowed_history();
        let m = ReportModel::new(&r);
        let swallowed = m.cells[1].swallowed;
        assert!(swallowed > 0);
        let t = cell_details(&m);
        assert_eq!(
            column(&t, "swallowed (transactions)").unwrap(),
            ["0".to_string(), swallowed.to_string()]
        );
        assert!(column(&t, LOST_COLUMN).is_none());
        assert!(!summary_notes(&m).contains(&LOST_NOTE));

        let r = failed_over_history();
        let m = ReportModel::new(&r);
        let ser = &m.cells[1];
        assert_eq!((ser.swallowed, ser.lost_acknowledged), (0, swallowed));
        assert!(ser.effective_differs());
        let t = cell_details(&m);
        assert_eq!(column(&t, "swallowed (transactions)").unwrap(), ["0", "0"]);
        assert_eq!(
            column(&t, LOST_COLUMN).unwrap(),
            ["0".to_string(), swallowed.to_string()]
        );
        assert!(summary_notes(&m).contains(&LOST_NOTE));
        assert!(cells_note(&m).contains("acknowledged commits lost"));
        let failures = super::super::failures(&m);
        assert!(
            failures
                .rows
                .iter()
                .all(|row| row.values[2].text != super::super::SWALLOWED),
            "{failures:?}"
        );
        let findings = crate::report::analysis::findings::findings(&m);
        assert!(findings.iter().all(|f| f.rule != "history"), "{findings:?}");
        let title = summary(&m).rows[1]
            .values
            .iter()
            .find_map(|v| v.title.clone());
        assert_eq!(
            title.unwrap(),
            format!(
                "transactions counted as committed left no work in the database: \
                 {swallowed} acknowledged commits lost to a failover or crash"
            )
        );
    }
}
