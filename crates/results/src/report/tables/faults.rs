//! The Faults section's tables: per cell, what the faults cost (outage,
//! recovery, unknown outcomes, lost commits), and every faulted run.

use super::cells::{cell_value, run_cell_value};
use crate::model::{InjectedFault, RunFaults, RunRecord, recovery_measurable, recovery_start_s};
use crate::report::analysis::model::ReportModel;
use crate::report::tables::table::{Column, Table, Value};
use crate::report::{format::NA, format::fmt_fixed};

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

/// A run's recovery to 90 % (s); without one, `not recovered` when the
/// window showed whole seconds after the fault and none was back, `not
/// measured` when it could not tell (the window ended within the second
/// of the fault, or no whole second before the fault to compare with:
/// [`recovery_measurable`]).
fn recovery(run: &RunRecord, f: &RunFaults) -> Value {
    let none = match recovery_start_s(f) {
        Some(l) if recovery_measurable(&run.per_second, l) => "not recovered",
        _ => "not measured",
    };
    secs(f.recovery_s, none)
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
            recovery(run, f),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SecondPoint;
    use crate::model::fixture;

    /// The `recovery to 90 % (s)` of the faulted run (run 2, its first
    /// loss at 2.5 s) with these per-second throughputs and no recovery.
    fn recovery_text(tps: &[f64]) -> String {
        let mut r = fixture::faulted();
        let run = &mut r.runs[1];
        run.faults.as_mut().unwrap().recovery_s = None;
        run.per_second = tps
            .iter()
            .enumerate()
            .map(|(i, &tps)| SecondPoint {
                t_s: (i + 1) as f64,
                committed: tps as u64,
                tps,
                p99_ms: 1.0,
                failed: 0,
                lag_ms: None,
            })
            .collect();
        let m = ReportModel::new(&r);
        let t = faults(&m);
        let col = t
            .columns
            .iter()
            .position(|c| c.header == "recovery to 90 % (s)")
            .unwrap();
        t.rows[0].values[col].text.clone()
    }

    #[test]
    fn a_window_that_ended_before_recovery_could_be_seen_is_not_measured() {
        // The window ended 0.5 s after the loss: no whole second after it.
        assert_eq!(recovery_text(&[100.0, 100.0, 100.0]), "not measured");
        // No per-second series at all (nothing to compare with).
        assert_eq!(recovery_text(&[]), "not measured");
        // Two whole seconds after the loss, both below 90 %: not recovered.
        assert_eq!(
            recovery_text(&[100.0, 100.0, 20.0, 30.0, 40.0]),
            "not recovered"
        );
        // A recovery that was seen is a number.
        let mut r = fixture::faulted();
        r.runs[1].per_second.clear();
        let m = ReportModel::new(&r);
        let t = faults(&m);
        assert!(t.rows[0].values.iter().any(|v| v.text == "1.50"));
    }
}
