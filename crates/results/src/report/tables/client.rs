//! What the clients measured per cell: merged-histogram latency against
//! the baseline, transactions by type, and per-command latency of
//! pgbench scripts.

use super::opt_value;
use super::table::{Column, Table, Value, factor_columns, factor_values};
use crate::model::LatencySummary;
use crate::report::analysis::cells::{CellSummary, VsBaseline};
use crate::report::analysis::model::ReportModel;
use crate::report::{
    format::NA, format::fmt_ms, format::fmt_p, format::fmt_pct_change, format::fmt_tps,
};

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
                Value::text(crate::report::format::fmt_failures(&ty.failed)),
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
