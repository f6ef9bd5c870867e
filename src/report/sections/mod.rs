//! The report's tables, built once from the [`ReportModel`] and written
//! out by `report.md` and `report.html` alike: the per-cell summary,
//! merged latency, transactions by type, commands, failures, server
//! counters, wait events, SIRead locks, invariant checks, runs, and the
//! external load's figures. A table's text is the same in every renderer;
//! the renderers add only presentation (see [`super::table`]).

use super::cells::{CellSummary, VsBaseline, WaitStats};
use super::model::ReportModel;
use super::table::{Column, Mark, Row, Table, Value, factor_columns, factor_values};
use super::{
    NA, fmt_fixed, fmt_mean, fmt_ms, fmt_opt, fmt_p, fmt_pct_change, fmt_pct_ci, fmt_tps,
    fmt_tps_ci, fmt_verdict, fmt_vs_baseline_pct,
};
use crate::model::LatencySummary;
use crate::model::sqlstate_name;
use crate::stats::Summary;
use crate::store::{Cell, RunRecord, WaitSummary};

mod checks;
mod faults;
mod hosts;
mod server;

pub use checks::{invariant_checks, invariant_summary};
pub use faults::{cell_faults, faults};
pub use hosts::{host_note, hosts};
pub use server::{counters, pooler, siread_locks, wait_events};

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

/// A mean of a summary, formatted by `f`.
fn mean_value(s: Option<&Summary>, f: fn(f64) -> String) -> Value {
    Value::opt(s.map(|s| s.mean), fmt_mean(s, f))
}

/// An optional figure with `decimals` decimals.
fn opt_value(v: Option<f64>, decimals: usize) -> Value {
    Value::opt(v, fmt_opt(v, decimals))
}

/// Which optional wait columns the experiment needs: pool wait (a pool
/// size factor), schedule lag (a rate factor), skipped/late (a latency
/// limit).
struct WaitColumns {
    pool: bool,
    lag: bool,
    limit: bool,
}

impl WaitColumns {
    fn of(m: &ReportModel) -> Self {
        let c = &m.results.config;
        WaitColumns {
            pool: !c.pool_size.is_empty(),
            lag: !c.rate.is_empty(),
            limit: !c.rate.is_empty() && c.latency_limit_ms.is_some(),
        }
    }

    /// Columns for the summary (`per_run` false) or the runs table.
    fn columns(&self, per_run: bool) -> Vec<Column> {
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
            h.push(Column::num("skipped (transactions)"));
            h.push(Column::num("late (transactions)"));
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

    fn run(&self, run: &RunRecord) -> Vec<Value> {
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
/// factors left out because every cell has the same value.
pub fn cells_note(m: &ReportModel) -> String {
    let same = constant_factors(m);
    let same = if same.is_empty() {
        String::new()
    } else {
        format!(" Same in every cell: {same}.")
    };
    let effective = if m.effective_differs() {
        format!(" {EFFECTIVE_NOTE}")
    } else {
        String::new()
    };
    format!(
        "One row per cell, over its complete runs.{same} ± and [ ]: 95 % confidence intervals. % vs \
         baseline: mean {} against {}; ▲/▼: significantly higher/lower (Welch's t-test, p < 0.05), n.s.: \
         not significant, (no test): fewer than 2 complete runs on a side.{effective} More figures per \
         cell, and how each is computed: Cells in detail.",
        compared_on(m),
        m.baseline
    )
}

/// What the Cells tables say when a cell's effective TPS is below its
/// TPS (report.md, report.html; the terminal words its own).
pub const EFFECTIVE_NOTE: &str = "Effective TPS: committed transactions whose work is in the database, \
     per second (the history check counts their pgbench_history rows; where a call swallowed a \
     serialization failure and returned as if committed, its row is missing); a cell where it is below \
     the reported TPS shows the reported figure after it, and % vs baseline and the verdict compare \
     effective TPS. The difference is under Failures as swallowed.";

/// What "% vs baseline" compares: `effective TPS` when a cell's effective
/// TPS is below its TPS ([`ReportModel::effective_differs`]), else the
/// throughput's name (`TPS`).
pub fn compared_on(m: &ReportModel) -> String {
    if m.effective_differs() {
        format!("effective {}", m.throughput.0)
    } else {
        m.throughput.0.to_string()
    }
}

/// How the figures of the Cells tables are computed (report.md's Cells
/// in detail; report.html's likewise).
pub const CELL_DETAILS_NOTE: &str = "The figures of Cells and more, per cell. ± is the half-width of the \
     95 % confidence interval of the mean (Student t, n - 1 degrees of freedom; n/a with one run). % vs \
     baseline compares mean TPS (goodput: committed transactions per second; effective TPS where a history \
     check gives one) with the baseline cell's; its 95 % CI is that of the ratio of the means, taken on the \
     log scale (delta method, Welch–Satterthwaite degrees of freedom), so it never goes below -100 %. p: Welch's two-sided t-test; verdict: faster or slower when \
     p < 0.05, else no significant difference (the runs do not show one); not enough data with fewer than 2 \
     complete runs on a side. Latencies are means over runs of each run's figure (see Latency for the \
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
    if !m.outlier_runs.is_empty() {
        notes.push(
            "Outlier runs: runs whose TPS has a modified z-score |M| > 3.5 within their cell (Iglewicz & \
             Hoaglin); they are counted all the same: look at them (see Runs).",
        );
    }
    notes
}

/// The "% vs baseline" value: the change with its 95 % interval
/// (`baseline`, `+50.0% [+37.8%, +62.2%]`, n/a), marked by Welch's test,
/// the test in its title.
fn vs_baseline_value(v: &VsBaseline) -> Value {
    let mut text = fmt_vs_baseline_pct(v);
    if let VsBaseline::Change {
        pct: Some(_),
        pct_ci: Some(ci),
        ..
    } = v
    {
        text = format!("{text} {}", fmt_pct_ci(Some(ci)));
    }
    match v {
        VsBaseline::Baseline => Value::text(text).mark(Mark::Baseline),
        VsBaseline::Missing | VsBaseline::Change { pct: None, .. } => Value::text(text),
        VsBaseline::Change {
            pct: Some(p),
            welch: Some(w),
            ..
        } => {
            let title = format!(
                "Welch's t-test: t = {:.3}, df = {:.1}, p = {:.4}",
                w.t, w.df, w.p
            );
            let (mark, sig) = match (w.significant(), *p >= 0.0) {
                (true, true) => (Mark::Up, "significant"),
                (true, false) => (Mark::Down, "significant"),
                (false, _) => (Mark::NotSignificant, "not significant"),
            };
            Value::num(*p, text)
                .mark(mark)
                .title(format!("{title} ({sig} at 5 %)"))
        }
        VsBaseline::Change {
            pct: Some(p),
            welch: None,
            ..
        } => Value::num(*p, text)
            .mark(Mark::NoTest)
            .title("no test: a cell has fewer than 2 complete runs, or neither varies"),
    }
}

/// The factor columns the Cells tables show: those whose value varies
/// between cells (isolation when none does); the others are the same in
/// every cell ([`constant_factors`]).
pub fn shown_factors(m: &ReportModel) -> Vec<usize> {
    let f = &m.factors;
    let shown: Vec<usize> = (0..f.headers.len()).filter(|&j| f.varying[j]).collect();
    if shown.is_empty() && !f.headers.is_empty() {
        vec![0]
    } else {
        shown
    }
}

/// The factors the Cells tables leave out, as `strategy optimistic,
/// clients 16`: the same in every cell.
pub fn constant_factors(m: &ReportModel) -> String {
    let shown = shown_factors(m);
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

/// [`shown_factors`]' columns and cell `i`'s values of them.
fn shown_factor_columns(m: &ReportModel) -> Vec<Column> {
    shown_factors(m)
        .into_iter()
        .map(|j| Column::text(m.factors.headers[j].clone()))
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
    let on = compared_on(m);
    let mut cols = shown_factor_columns(m);
    cols.extend([
        Column::num("runs (n)"),
        Column::num(format!("{on} mean ± 95% CI ({tp_unit})")),
        Column::num(format!("% vs baseline ({on}) [95% CI]")),
        Column::num("p50 (ms)"),
        Column::num("p99 (ms)"),
        Column::num("retries per commit"),
        Column::num("failed (% of transactions)"),
        Column::num("anomalies (violations)"),
    ]);
    let mut t = Table::new(cols);
    t.id = Some("cells");
    let shown = shown_factors(m);
    let max_tps = m
        .cells
        .iter()
        .filter_map(|c| c.headline_tps().map(|s| s.mean))
        .fold(0.0, f64::max);
    for (i, c) in m.cells.iter().enumerate() {
        let mut row = shown_factor_values(m, i, &shown);
        let headline = c.headline_tps();
        let mut tps = mean_value(headline, fmt_tps);
        tps.text = fmt_tps_ci(headline);
        if let (true, Some(reported)) = (c.effective_differs(), &c.tps) {
            tps.text = format!("{} ({} reported)", tps.text, fmt_tps(reported.mean));
            tps = tps.mark(Mark::Bad).title(format!(
                "{} transactions counted as committed left no work in the database (swallowed)",
                c.swallowed
            ));
        }
        tps.bar = headline
            .filter(|s| max_tps > 0.0 && s.mean.is_finite())
            .map(|s| s.mean / max_tps);
        let anomalies = if c.invariants.checked == 0 {
            Value::text(NA)
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
/// the baseline (p, verdict), outlier runs, KTPS (ssibench), latency
/// mean and p95, pool wait and schedule lag, abort ratio, wasted time,
/// unknown outcomes, the anomalies' first example and the invariants.
pub fn cell_details(m: &ReportModel) -> Table {
    let mut cols = shown_factor_columns(m);
    cols.extend([
        Column::num("p (Welch)"),
        Column::text(format!("verdict ({})", compared_on(m))),
    ]);
    if m.has_effective() {
        cols.push(Column::num(format!(
            "{} reported ({})",
            m.throughput.0, m.throughput.1
        )));
        cols.push(Column::num("swallowed (transactions)"));
    }
    if !m.outlier_runs.is_empty() {
        cols.push(Column::text("outlier runs (TPS)"));
    }
    if m.ssibench() {
        cols.push(Column::num("KTPS (1000 tx/s)"));
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
    let shown = shown_factors(m);
    for (i, c) in m.cells.iter().enumerate() {
        let mut row = shown_factor_values(m, i, &shown);
        let p = match &c.vs_baseline {
            VsBaseline::Change { welch, .. } => fmt_p(welch.as_ref()),
            VsBaseline::Baseline => "baseline".into(),
            VsBaseline::Missing => NA.into(),
        };
        row.extend([p.into(), fmt_verdict(&c.vs_baseline).into()]);
        if m.has_effective() {
            let mut reported = mean_value(c.tps.as_ref(), fmt_tps);
            reported.text = fmt_tps_ci(c.tps.as_ref());
            row.push(reported);
            row.push(Value::count(c.swallowed).mark(if c.swallowed > 0 {
                Mark::Bad
            } else {
                Mark::None
            }));
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
                text: super::fmt_cell_anomalies(c, 200),
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

/// Merged-histogram latency per cell and its change against the
/// baseline's; p and verdict from the runs' own p99.
pub fn latency(m: &ReportModel) -> Table {
    let mut cols = factor_columns(&m.factors.headers);
    cols.extend(
        [
            "p50 (ms)",
            "p95 (ms)",
            "p99 (ms)",
            "p50 % vs baseline",
            "p95 % vs baseline",
            "p99 % vs baseline",
            "p (Welch, runs' p99)",
        ]
        .map(Column::num),
    );
    cols.push(Column::text("verdict (p99)"));
    let mut t = Table::new(cols);
    for (i, c) in m.cells.iter().enumerate() {
        let mut row = factor_values(&m.factors.values[i]);
        let l = c.merged_latency;
        let ms = |f: fn(&LatencySummary) -> f64| {
            let v = l.as_ref().map(f);
            Value::opt(v, v.map_or_else(|| NA.into(), fmt_ms))
        };
        row.extend([ms(|l| l.p50), ms(|l| l.p95), ms(|l| l.p99)]);
        match (&c.vs_baseline, &c.latency_vs_baseline) {
            (VsBaseline::Baseline, _) => {
                row.extend(std::iter::repeat_n(Value::text("baseline"), 5));
            }
            (_, Some(ch)) => {
                let pct =
                    |p: Option<f64>| Value::opt(p, p.map_or_else(|| NA.into(), fmt_pct_change));
                let runs = ch.p99_runs.as_ref();
                row.extend([
                    pct(ch.p50_pct),
                    pct(ch.p95_pct),
                    pct(ch.p99_pct),
                    Value::opt(
                        runs.and_then(|c| c.welch.map(|w| w.p)),
                        runs.map_or_else(|| NA.into(), |c| fmt_p(c.welch.as_ref())),
                    ),
                    runs.map_or_else(|| NA.into(), |c| c.verdict.label().into()),
                ]);
            }
            (_, None) => row.extend(std::iter::repeat_n(Value::text(NA), 5)),
        }
        t.row(row);
    }
    t
}

/// Per cell and transaction type, pooled over complete runs.
pub fn transactions(m: &ReportModel) -> Table {
    let mut cols = factor_columns(&m.factors.headers);
    cols.extend([
        Column::text("transaction"),
        Column::num("committed (transactions)"),
        Column::num("TPS (tx/s)"),
        Column::num("user aborts (transactions)"),
        Column::long("failed (by SQLSTATE)"),
        Column::num("failed (%)"),
        Column::num("p50 (ms)"),
        Column::num("p99 (ms)"),
    ]);
    let mut t = Table::new(cols);
    for (i, c) in m.cells.iter().enumerate() {
        for ty in &c.types {
            let lat = |f: fn(&LatencySummary) -> f64| {
                let v = ty.latency.as_ref().map(f);
                Value::opt(v, v.map_or_else(|| NA.into(), fmt_ms))
            };
            let mut row = factor_values(&m.factors.values[i]);
            row.extend([
                Value::text(ty.name.clone()),
                Value::count(ty.committed),
                Value::num(ty.tps, fmt_tps(ty.tps)),
                Value::count(ty.user_aborts),
                Value::text(super::fmt_failures(&ty.failed)),
                opt_value(ty.failure_pct(), 2),
                lat(|l| l.p50),
                lat(|l| l.p99),
            ]);
            t.row(row);
        }
    }
    t
}

/// One script command pooled over a cell's complete runs: its text,
/// executions, Σ ms, failures.
type PooledCommand = (String, u64, f64, u64);

/// Per transaction type (script) of a cell: its commands pooled over the
/// complete runs, in script order.
fn pooled_commands(c: &CellSummary) -> Vec<(String, Vec<PooledCommand>)> {
    let mut pooled: Vec<(String, Vec<PooledCommand>)> = Vec::new();
    for run in c.complete_runs() {
        for t in run.transactions.iter().filter(|t| !t.commands.is_empty()) {
            let k = match pooled.iter().position(|(n, _)| *n == t.name) {
                Some(k) => k,
                None => {
                    pooled.push((t.name.clone(), Vec::new()));
                    pooled.len() - 1
                }
            };
            let steps = &mut pooled[k].1;
            for (i, cmd) in t.commands.iter().enumerate() {
                if steps.len() <= i {
                    steps.push((cmd.command.clone(), 0, 0.0, 0));
                }
                let s = &mut steps[i];
                s.1 += cmd.executions;
                s.2 += cmd.mean_ms * cmd.executions as f64;
                s.3 += cmd.failures;
            }
        }
    }
    pooled
}

/// Per-command latency of pgbench scripts (like `pgbench -r`), pooled
/// over each cell's complete runs; empty when no workload timed commands.
pub fn commands(m: &ReportModel) -> Table {
    let mut cols = factor_columns(&m.factors.headers);
    cols.extend([
        Column::text("script"),
        Column::num("#"),
        Column::long("command"),
        Column::num("executions"),
        Column::num("mean (ms)"),
        Column::num("failures"),
    ]);
    let mut t = Table::new(cols);
    for (i, c) in m.cells.iter().enumerate() {
        for (name, steps) in pooled_commands(c) {
            for (k, (command, n, total_ms, failures)) in steps.into_iter().enumerate() {
                let mean = (n > 0).then(|| total_ms / n as f64);
                let mut row = factor_values(&m.factors.values[i]);
                row.extend([
                    Value::text(name.clone()),
                    Value::count(k as u64 + 1),
                    Value::code(command),
                    Value::count(n),
                    Value::opt(mean, mean.map_or_else(|| NA.into(), |v| format!("{v:.3}"))),
                    Value::count(failures),
                ]);
                t.row(row);
            }
        }
    }
    t
}

/// Σ over a cell's complete runs: (transactions, measured s).
pub fn failure_totals(c: &CellSummary) -> (u64, f64) {
    let mut tx = 0;
    let mut secs = 0.0;
    for r in c.complete_runs() {
        tx += r.committed + r.user_aborts + r.unknown_outcome + r.failed.values().sum::<u64>();
        secs += r.duration_s;
    }
    (tx, secs)
}

/// Failed transactions by SQLSTATE per cell, summed over complete runs;
/// as rates in detail columns; then a cell's swallowed failures
/// ([`SWALLOWED`]) when it has any.
pub fn failures(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("SQLSTATE"),
        Column::text("name"),
        Column::num("failed (transactions)"),
        Column::num("failed (tx/s)").detail(),
        Column::num("failed (% of transactions)").detail(),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let (tx, secs) = failure_totals(c);
        for (code, n) in &c.failures {
            let per_s = (secs > 0.0).then(|| *n as f64 / secs);
            let pct = (tx > 0).then(|| 100.0 * *n as f64 / tx as f64);
            t.row(vec![
                cell_value(m, i),
                Value::text(code.clone()),
                Value::text(sqlstate_name(code)),
                Value::count(*n),
                opt_value(per_s, 2),
                opt_value(pct, 2),
            ]);
        }
        if c.swallowed > 0 {
            // Counted as committed, so not among the transactions above:
            // as a share of all transactions, the reported ones.
            let n = c.swallowed;
            t.row(vec![
                cell_value(m, i),
                Value::text(NA),
                Value::text(SWALLOWED),
                Value::count(n).mark(Mark::Bad),
                opt_value((secs > 0.0).then(|| n as f64 / secs), 2),
                opt_value((tx > 0).then(|| 100.0 * n as f64 / tx as f64), 2),
            ]);
        }
    }
    t
}

/// What the Failures tables say about [`SWALLOWED`] rows.
pub const SWALLOWED_NOTE: &str = "Swallowed: transactions counted as committed in the measured window \
     whose work is not in the database (the history check found their pgbench_history rows missing: \
     typically a function that caught the serialization failure and returned normally); no SQLSTATE \
     reached the client, and they are not in failed (%).";

/// The name of the Failures row of transactions counted as committed whose
/// work is not in the database ([`CellSummary::swallowed`]).
pub const SWALLOWED: &str = "swallowed (counted as committed, work not in the database)";

/// A share of the host's CPU time, %, to one decimal; `n/a` when not
/// measured.
fn host_pct(v: Option<f64>) -> Value {
    Value::opt(v, v.map_or_else(|| NA.into(), |v| fmt_fixed(v, 1)))
}

/// Every run in execution order.
pub fn runs(m: &ReportModel) -> Table {
    let waits = WaitColumns::of(m);
    let show_version = m.server_versions.len() > 1;
    let mut cols = vec![
        Column::num("run"),
        Column::text("cell"),
        Column::num("repetition"),
        Column::text("started").detail(),
    ];
    if show_version {
        cols.push(Column::text("server version"));
    }
    cols.extend(["measured (s)", "TPS (tx/s)"].map(Column::num));
    let effective = m.effective_differs();
    if effective {
        cols.push(Column::num("effective TPS (tx/s)"));
    }
    cols.push(Column::num("p99 (ms)"));
    cols.extend(waits.columns(true));
    cols.extend(
        [
            "retries (attempts)",
            "failed (transactions)",
            "client CPU (µs/tx)",
        ]
        .map(Column::num),
    );
    cols.push(Column::num("host CPU busy (%)").detail());
    cols.push(Column::num("CPU steal (%)").detail());
    cols.push(Column::text("complete"));
    let mut t = Table::new(cols);
    for run in &m.results.runs {
        let mut tps = Value::num(run.tps, fmt_tps(run.tps));
        if m.outlier_runs.contains(&run.index) {
            tps.text.push_str(" (outlier)");
        }
        let p99 = run.reported_latency().p99;
        let mut row = vec![
            Value::count(run.index.into()),
            run_cell_value(m, &run.cell),
            Value::count(run.repetition.into()),
            Value::text(run.started_at.clone()),
        ];
        if show_version {
            row.push(Value::text(run.server_version.clone()));
        }
        row.extend([
            Value::num(run.duration_s, fmt_fixed(run.duration_s, 1)),
            tps,
        ]);
        if effective {
            row.push(Value::opt(
                run.effective_tps,
                run.effective_tps.map_or_else(|| NA.into(), fmt_tps),
            ));
        }
        row.push(Value::opt(p99, p99.map_or_else(|| NA.into(), fmt_ms)));
        row.extend(waits.run(run));
        row.extend([
            Value::count(run.retries),
            Value::count(run.failed.values().sum::<u64>()),
            Value::num(
                run.client_cpu_us_per_tx,
                fmt_fixed(run.client_cpu_us_per_tx, 1),
            ),
            host_pct(run.host_cpu.map(|h| h.busy_pct)),
            host_pct(run.host_cpu.map(|h| h.steal_pct)),
            if run.complete && run.faults.is_some() && m.results.config.exclude_faulted {
                Value::text("yes (faulted, excluded from the statistics)").mark(Mark::Bad)
            } else if run.complete && run.faults.is_some() {
                Value::text("yes (faulted, see Faults)").mark(Mark::Bad)
            } else if run.complete {
                "yes".into()
            } else if run.load.is_some() && !run.errors.is_empty() {
                Value::text("no (failed, see Problems)").mark(Mark::Bad)
            } else {
                Value::text("no (interrupted)").mark(Mark::Bad)
            },
        ]);
        let class = if run.complete { "" } else { "interrupted" };
        t.rows.push(Row { values: row, class });
    }
    t
}

/// An external load's table ([`super::load_cmd`]) as a [`Table`]; column
/// `code` (if any) holds literal text.
fn from_plain(p: super::load_cmd::PlainTable, code: Option<usize>) -> Table {
    let cols = p
        .header
        .into_iter()
        .enumerate()
        .map(|(i, (h, num))| match (num, Some(i) == code) {
            (_, true) => Column::long(h),
            (true, _) => Column::num(h),
            _ => Column::text(h),
        })
        .collect();
    let mut t = Table::new(cols);
    for row in p.rows {
        t.row(
            row.into_iter()
                .enumerate()
                .map(|(i, v)| {
                    if Some(i) == code {
                        Value::code(v)
                    } else {
                        Value::text(v)
                    }
                })
                .collect(),
        );
    }
    t
}

/// The load tool's figures per cell and the commands per run (external
/// loads only).
pub fn external_load(m: &ReportModel) -> Option<(Table, Table)> {
    let by_cell = super::load_cmd::cell_table(m.results, &m.cells)?;
    let by_run = super::load_cmd::run_table(m.results)?;
    Some((from_plain(by_cell, None), from_plain(by_run, Some(2))))
}

/// One line per error of a run (its own, then the server observer's).
pub fn problems(m: &ReportModel) -> Vec<String> {
    let mut lines = Vec::new();
    for run in &m.results.runs {
        let errors = run.errors.iter().map(|e| e.to_string()).chain(
            run.server
                .errors
                .iter()
                .map(|e| format!("server observer: {e}")),
        );
        for e in errors {
            lines.push(format!(
                "run {} ({}, repetition {}): {e}",
                run.index,
                run.cell.label(),
                run.repetition
            ));
        }
    }
    lines
}
