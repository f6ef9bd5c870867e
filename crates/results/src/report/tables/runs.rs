//! Every run in execution order, and the errors runs recorded.

use super::cells::{WaitColumns, run_cell_value};
use super::table::{Column, Mark, Row, Table, Value};
use crate::report::analysis::model::ReportModel;
use crate::report::{format::NA, format::fmt_fixed, format::fmt_ms, format::fmt_tps};

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
    let tpmc = m.has_tpmc();
    if tpmc {
        cols.push(Column::num("tpmC (New-Order commits/min)"));
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
        if tpmc {
            row.push(Value::opt(
                run.tpmc,
                run.tpmc.map_or_else(|| NA.into(), fmt_tps),
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
