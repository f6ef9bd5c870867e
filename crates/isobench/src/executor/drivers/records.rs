//! A run's records for the store from the engine's counters: per
//! transaction type, its commands and its failures by SQLSTATE.

use crate::metrics::Interval;
use crate::model::encode_histogram;
use crate::store::{self, TxTypeRecord};
use crate::workload::Workload;

/// Per-transaction-type records of the measured window `measured`, named
/// by the workload.
pub(super) fn tx_type_records<W: Workload>(workload: &W, measured: &Interval) -> Vec<TxTypeRecord> {
    let type_names = workload.tx_types();
    measured
        .types
        .iter()
        .zip(&type_names)
        .enumerate()
        .map(|(i, (t, name))| {
            let steps = workload.step_names(i);
            TxTypeRecord {
                name: name.to_string(),
                committed: t.committed,
                user_aborts: t.user_aborts,
                attempts: t.attempts,
                failed: t.failed.iter().collect(),
                unknown_outcome: t.unknown_outcome,
                wasted_ms: t.wasted_us as f64 / 1000.0,
                latency_ms: t.latency_summary(),
                latency_histogram: encode_histogram(&t.latency_us),
                commands: command_records(&steps, &t.steps),
                failure_reasons: failure_reason_records(&steps, &t.errors),
            }
        })
        .collect()
}

/// Per-command records from the measured window's step counts, named by
/// the workload (empty when it times no commands).
pub(super) fn command_records(
    names: &[String],
    steps: &[crate::metrics::StepStats],
) -> Vec<store::CommandRecord> {
    names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let s = steps.get(k).copied().unwrap_or_default();
            let completed = s.executions.saturating_sub(s.failures);
            store::CommandRecord {
                command: name.clone(),
                executions: s.executions,
                mean_ms: if completed > 0 {
                    s.total_us as f64 / completed as f64 / 1000.0
                } else {
                    0.0
                },
                failures: s.failures,
            }
        })
        .collect()
}

/// A transaction type's failed attempts by SQLSTATE, reason and
/// statement (named from `names`, the type's commands, or by the label the
/// workload gave the statement; `COMMIT` for a failed COMMIT of a workload
/// that names neither), most attempts first.
pub(super) fn failure_reason_records(
    names: &[String],
    errors: &crate::metrics::ErrorCounts,
) -> Vec<store::FailureReasonRecord> {
    let mut out: Vec<store::FailureReasonRecord> = Vec::new();
    for (key, n) in errors.iter() {
        let statement = match (key.step, key.statement) {
            (Some(k), _) => names.get(k).cloned(),
            (None, Some(s)) => Some(s.to_string()),
            (None, None) if key.at_commit => Some("COMMIT".to_string()),
            (None, None) => None,
        };
        let r = store::FailureReasonRecord {
            sqlstate: String::from_utf8_lossy(&key.code).into_owned(),
            reason: key.reason.map(|r| r.as_str().to_string()),
            statement,
            attempts: n.attempts,
            failed: n.failed,
        };
        // Keys that differ only in what the record does not show (COMMIT
        // of a timed command) are one record.
        match out.iter_mut().find(|o| {
            (&o.sqlstate, &o.reason, &o.statement) == (&r.sqlstate, &r.reason, &r.statement)
        }) {
            Some(o) => {
                o.attempts += r.attempts;
                o.failed += r.failed;
            }
            None => out.push(r),
        }
    }
    out.sort_by_key(|r| std::cmp::Reverse((r.attempts, r.failed)));
    out
}
