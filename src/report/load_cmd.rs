//! The "External load" tables: what the load tool reported (autocannon's
//! requests, latency percentiles, bytes/s, status classes, errors and
//! timeouts; pgbench's transactions, latency, failures and retries), per
//! cell over its complete runs and per run. Shared by the Markdown and
//! HTML reports as plain text cells.

use crate::model::LoadFigures;
use crate::store::{Results, RunRecord};

use super::cells::CellSummary;
use super::{NA, fmt_fixed, fmt_ms};

/// A table: column headers (with whether the column is numeric) and rows
/// of plain text.
pub struct PlainTable {
    pub header: Vec<(String, bool)>,
    pub rows: Vec<Vec<String>>,
}

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
type Column = (&'static str, Figure, Pool, fn(f64) -> String);

/// The tool figures, in column order.
const FIGURES: [Column; 16] = [
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

/// The throughput unit of `r`'s runs: `req/s` when every run with tool
/// figures counted requests, else `tx/s`.
pub fn unit(r: &Results) -> &'static str {
    let mut units = r
        .runs
        .iter()
        .filter_map(|x| x.load.as_ref()?.figures.as_ref().map(|f| f.unit.as_str()))
        .peekable();
    if units.peek().is_some() && units.all(|u| u == "req/s") {
        "req/s"
    } else {
        "tx/s"
    }
}

fn figures(run: &RunRecord) -> Option<&LoadFigures> {
    run.load.as_ref()?.figures.as_ref()
}

/// Per cell: runs, failed runs, the mean wall time and the tool's
/// figures pooled over complete runs; only the figure columns that some
/// run reported. `None` without external runs.
pub fn cell_table(r: &Results, cells: &[CellSummary]) -> Option<PlainTable> {
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
    let mut header: Vec<(String, bool)> = super::factor_headers(r)
        .into_iter()
        .map(|h| (h, false))
        .collect();
    header.extend([
        ("runs (n)".to_string(), true),
        ("failed runs".to_string(), true),
        ("load wall time mean (s)".to_string(), true),
    ]);
    header.extend(used.iter().map(|&i| (FIGURES[i].0.to_string(), true)));
    let rows = cells
        .iter()
        .map(|c| {
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
            let mut row = super::factor_values(r, c.cell);
            row.extend([
                c.n.to_string(),
                failed.to_string(),
                mean(&walls).map_or_else(|| NA.into(), |v| fmt_fixed(v, 2)),
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
                row.push(v.map_or_else(|| NA.into(), fmt));
            }
            row
        })
        .collect();
    Some(PlainTable { header, rows })
}

/// Per run: the command as run, its exit status, wall time, readiness
/// wait, throughput and output directory. `None` without external runs.
pub fn run_table(r: &Results) -> Option<PlainTable> {
    if !any(r) {
        return None;
    }
    let header = [
        ("run", true),
        ("cell", false),
        ("command", false),
        ("format", false),
        ("exit status", true),
        ("wall time (s)", true),
        ("ready after (s)", true),
        ("throughput", true),
        ("output", false),
    ]
    .map(|(h, n)| (h.to_string(), n))
    .to_vec();
    let rows = r
        .runs
        .iter()
        .filter_map(|run| {
            let l = run.load.as_ref()?;
            Some(vec![
                run.index.to_string(),
                run.cell.label(),
                l.command.clone(),
                l.format.name().to_string(),
                l.exit_code
                    .map_or_else(|| "signal".into(), |c| c.to_string()),
                fmt_fixed(l.wall_s, 2),
                l.ready_s.map_or_else(|| NA.into(), |s| fmt_fixed(s, 2)),
                l.figures
                    .as_ref()
                    .map_or_else(|| NA.into(), |f| format!("{:.1} {}", f.throughput, f.unit)),
                l.output_dir.clone(),
            ])
        })
        .collect();
    Some(PlainTable { header, rows })
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}
