//! The Faults section's tables: per cell, what the faults cost (outage,
//! recovery, unknown outcomes, lost commits), and every faulted run.

use super::super::model::ReportModel;
use super::super::table::{Column, Table, Value};
use super::super::{NA, fmt_fixed};
use super::{cell_value, run_cell_value};
use crate::model::{InjectedFault, RunFaults, RunRecord};

/// The commits a run's clients saw acknowledged that the database did not
/// hold afterwards, over its invariant checks; `None` when no check could
/// tell ([`crate::model::InvariantResult::lost_commits`]).
fn lost_commits(r: &RunRecord) -> Option<u64> {
    r.invariants
        .iter()
        .filter_map(|i| i.lost_commits)
        .reduce(|a, b| a + b)
}

/// Seconds to two decimals, or `none` when there is no figure.
fn secs(v: Option<f64>, none: &str) -> Value {
    Value::opt(v, v.map_or_else(|| none.to_string(), |v| fmt_fixed(v, 2)))
}

/// Per cell with at least one faulted run, in the model's order: faulted
/// runs of all, the mean and the longest outage and recovery to 90 % (s,
/// over the faulted runs that had one), the unknown outcomes and the lost
/// commits of its runs. Empty when no run had faults. The cost of a fault
/// plan per cell, next to the TPS the summary table gives it.
pub fn cell_faults(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("faulted runs"),
        Column::num("outage mean (s)"),
        Column::num("outage max (s)"),
        Column::num("recovery mean (s)"),
        Column::num("recovery max (s)"),
        Column::num("unknown outcomes"),
        Column::num("lost commits"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let faulted: Vec<&RunFaults> = c.runs.iter().filter_map(|r| r.faults.as_ref()).collect();
        if faulted.is_empty() {
            continue;
        }
        let stat = |get: fn(&RunFaults) -> Option<f64>| {
            let v: Vec<f64> = faulted.iter().filter_map(|f| get(f)).collect();
            let mean = (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            (mean, v.into_iter().reduce(f64::max))
        };
        let (outage_mean, outage_max) = stat(|f| f.outage_s);
        let (recovery_mean, recovery_max) = stat(|f| f.recovery_s);
        let unknown: u64 = c.runs.iter().map(|r| r.unknown_outcome).sum();
        let lost = c
            .runs
            .iter()
            .filter_map(|r| lost_commits(r))
            .reduce(|a, b| a + b);
        t.row(vec![
            cell_value(m, i),
            Value::text(format!("{} of {}", faulted.len(), c.runs.len())),
            secs(outage_mean, "-"),
            secs(outage_max, "-"),
            secs(recovery_mean, "-"),
            secs(recovery_max, "-"),
            Value::count(unknown),
            lost.map_or_else(|| Value::text(NA), Value::count),
        ]);
    }
    t
}

/// The runs that had faults (lost connections, a server that crashed or
/// restarted, faults isobench injected), in execution order; empty when
/// none did. The column `injected` only when some run had `--fault`
/// faults: each as `KIND at T s: what it did`. The column `lost commits`
/// only when a faulted run's workload can tell: the commits its clients
/// saw acknowledged that the database did not hold afterwards
/// ([`crate::model::InvariantResult::lost_commits`]).
pub fn faults(m: &ReportModel) -> Table {
    let faulted = || m.results.runs.iter().filter(|r| r.faults.is_some());
    let any_injected = faulted().any(|r| r.faults.as_ref().is_some_and(|f| !f.injected.is_empty()));
    let any_lost = faulted().any(|r| lost_commits(r).is_some());
    let mut cols = vec![
        Column::num("run"),
        Column::text("cell"),
        Column::num("repetition"),
    ];
    if any_injected {
        cols.push(Column::long("injected"));
    }
    cols.extend([
        Column::num("connections lost"),
        Column::num("reconnects"),
        Column::num("first loss (s)"),
        Column::num("outage (s)"),
        Column::num("recovery to 90 % (s)"),
        Column::num("server wait (s)"),
    ]);
    if any_lost {
        cols.push(Column::num("lost commits"));
    }
    cols.push(Column::long("cause"));
    let mut t = Table::new(cols);
    for run in &m.results.runs {
        let Some(f) = &run.faults else { continue };
        let mut row = vec![
            Value::count(run.index.into()),
            run_cell_value(m, &run.cell),
            Value::count(run.repetition.into()),
        ];
        if any_injected {
            row.push(Value::text(injected_text(&f.injected)));
        }
        let cause = match (&f.cause, f.connections_lost) {
            (Some(c), _) => c.clone(),
            (None, 0) => "-".into(),
            (None, _) => "connections lost".into(),
        };
        row.extend([
            Value::count(f.connections_lost),
            Value::count(f.reconnects),
            secs(f.losses.first().map(|l| l.t_s), "-"),
            secs(f.outage_s, "no commit after"),
            secs(f.recovery_s, "not recovered"),
            secs(f.server_wait_s, "-"),
        ]);
        if any_lost {
            row.push(match lost_commits(run) {
                Some(n) => Value::count(n),
                None => Value::text(NA),
            });
        }
        row.push(Value::text(cause));
        t.row(row);
    }
    t
}

/// Injected faults as `terminate at 1.00 s: terminated 4 client
/// connections; ...`, `-` when none.
fn injected_text(injected: &[InjectedFault]) -> String {
    if injected.is_empty() {
        return "-".into();
    }
    injected
        .iter()
        .map(|i| {
            format!(
                "{} at {} s: {}",
                i.kind.name(),
                fmt_fixed(i.t_s, 2),
                i.detail
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
