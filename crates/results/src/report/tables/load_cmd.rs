//! The "External load" tables: what the load tool reported (autocannon's
//! requests, latency percentiles, bytes/s, status classes, errors and
//! timeouts; pgbench's transactions, latency, failures and retries), per
//! cell over its complete runs and per run.

use crate::model::LoadFigures;
use crate::store::{Results, RunRecord};

use super::table::{Column, Table, Value, factor_columns, factor_values};
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::model::ReportModel;
use crate::report::{format::NA, format::fmt_fixed, format::fmt_ms};

/// How a figure is pooled over a cell's runs.
#[derive(Clone, Copy)]
enum Pool {
    /// The mean of the runs' values.
    Mean,
    /// The sum of the runs' values.
    Sum,
}

type Figure = fn(&LoadFigures) -> Option<f64>;

/// A column of tool figures: header, getter, pooling, format.
type FigureColumn = (&'static str, Figure, Pool, fn(f64) -> String);

/// The tool figures, in column order.
const FIGURES: [FigureColumn; 16] = [
    (
        "latency mean (ms)",
        |f| f.latency_mean_ms,
        Pool::Mean,
        fmt_ms,
    ),
    (
        "latency stddev (ms)",
        |f| f.latency_stddev_ms,
        Pool::Mean,
        fmt_ms,
    ),
    ("p50 (ms)", |f| f.latency_p50_ms, Pool::Mean, fmt_ms),
    ("p90 (ms)", |f| f.latency_p90_ms, Pool::Mean, fmt_ms),
    ("p99 (ms)", |f| f.latency_p99_ms, Pool::Mean, fmt_ms),
    ("max (ms)", |f| f.latency_max_ms, Pool::Mean, fmt_ms),
    (
        "throughput (bytes/s)",
        |f| f.bytes_per_s,
        Pool::Mean,
        |v| fmt_fixed(v, 0),
    ),
    (
        "2xx (responses)",
        |f| f.responses_2xx.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    (
        "non-2xx (responses)",
        |f| f.non_2xx.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    ("errors", |f| f.errors.map(|n| n as f64), Pool::Sum, count),
    (
        "timeouts",
        |f| f.timeouts.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    (
        "failed (tx)",
        |f| f.failed.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    (
        "serialization failures",
        |f| f.serialization_failures.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    (
        "deadlock failures",
        |f| f.deadlock_failures.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    (
        "retried (tx)",
        |f| f.retried.map(|n| n as f64),
        Pool::Sum,
        count,
    ),
    ("retries", |f| f.retries.map(|n| n as f64), Pool::Sum, count),
];

fn count(v: f64) -> String {
    format!("{v:.0}")
}

/// Whether any run of `r` was driven by an external load.
pub fn any(r: &Results) -> bool {
    r.runs.iter().any(|x| x.load.is_some())
}

/// The throughput unit of `r`'s runs ([`crate::report::format::throughput_unit`]).
pub fn unit(r: &Results) -> &'static str {
    crate::report::format::throughput_unit(r)
}

fn figures(run: &RunRecord) -> Option<&LoadFigures> {
    run.load.as_ref()?.figures.as_ref()
}

/// The load tool's figures per cell and the commands per run (external
/// loads only).
pub fn external_load(m: &ReportModel) -> Option<(Table, Table)> {
    Some((cell_table(m.results, &m.cells)?, run_table(m.results)?))
}

/// Per cell: runs, failed runs, the mean wall time and the tool's
/// figures pooled over complete runs; only the figure columns that some
/// run reported. `None` without external runs.
pub fn cell_table(r: &Results, cells: &[CellSummary]) -> Option<Table> {
    if !any(r) {
        return None;
    }
    let used: Vec<usize> = (0..FIGURES.len())
        .filter(|&i| {
            r.runs
                .iter()
                .filter_map(figures)
                .any(|f| FIGURES[i].1(f).is_some())
        })
        .collect();
    let mut cols = factor_columns(&crate::report::format::factor_headers(r));
    cols.extend(
        ["runs (n)", "failed runs", "load wall time mean (s)"]
            .into_iter()
            .chain(used.iter().map(|&i| FIGURES[i].0))
            .map(Column::num),
    );
    let mut t = Table::new(cols);
    for c in cells {
        let complete: Vec<&RunRecord> = c.complete_runs().collect();
        let failed = c
            .runs
            .iter()
            .filter(|x| !x.complete && !x.errors.is_empty())
            .count();
        let walls: Vec<f64> = complete
            .iter()
            .filter_map(|x| x.load.as_ref().map(|l| l.wall_s))
            .collect();
        let mut row = factor_values(&crate::report::format::factor_values(r, c.cell));
        let wall = mean(&walls);
        row.extend([
            Value::count(c.n as u64),
            Value::count(failed as u64),
            Value::opt(wall, wall.map_or_else(|| NA.into(), |v| fmt_fixed(v, 2))),
        ]);
        for &i in &used {
            let (_, get, pool, fmt) = FIGURES[i];
            let values: Vec<f64> = complete
                .iter()
                .filter_map(|x| figures(x).and_then(get))
                .collect();
            let v = match pool {
                Pool::Mean => mean(&values),
                Pool::Sum => (!values.is_empty()).then(|| values.iter().sum()),
            };
            row.push(Value::opt(v, v.map_or_else(|| NA.into(), fmt)));
        }
        t.row(row);
    }
    Some(t)
}

/// Per run: the command as run (literal text), its exit status, wall
/// time, readiness wait, throughput and output directory. `None` without
/// external runs.
pub fn run_table(r: &Results) -> Option<Table> {
    if !any(r) {
        return None;
    }
    let mut t = Table::new(vec![
        Column::num("run"),
        Column::text("cell"),
        Column::long("command"),
        Column::text("format"),
        Column::num("exit status"),
        Column::num("wall time (s)"),
        Column::num("ready after (s)"),
        Column::num("throughput"),
        Column::text("output"),
    ]);
    for run in &r.runs {
        let Some(l) = run.load.as_ref() else {
            continue;
        };
        t.row(vec![
            Value::count(run.index.into()),
            Value::text(run.cell.label()),
            Value::code(l.command.clone()),
            Value::text(l.format.name()),
            l.exit_code.map_or_else(
                || Value::text("signal"),
                |c| Value::num(c.into(), c.to_string()),
            ),
            Value::num(l.wall_s, fmt_fixed(l.wall_s, 2)),
            Value::opt(
                l.ready_s,
                l.ready_s.map_or_else(|| NA.into(), |s| fmt_fixed(s, 2)),
            ),
            l.figures.as_ref().map_or_else(
                || Value::text(NA),
                |f| Value::num(f.throughput, format!("{:.1} {}", f.throughput, f.unit)),
            ),
            Value::text(l.output_dir.clone()),
        ]);
    }
    Some(t)
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}
