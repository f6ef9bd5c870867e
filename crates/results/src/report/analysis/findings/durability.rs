//! The durability finding (issue #50): what each `synchronous_commit`
//! level costs against `local` in throughput and p99 latency, as a ratio
//! with its interval, and the standby lag that explains it
//! ([`crate::report::analysis::durability`]).

use super::Finding;
use crate::report::analysis::durability::{cost_text, costs};
use crate::report::analysis::model::ReportModel;

/// One finding per cell whose `synchronous_commit` is not `local` and
/// that has a `local` cell to compare with; none without that factor.
pub(super) fn durability(m: &ReportModel) -> Vec<Finding> {
    costs(m)
        .iter()
        .map(|d| Finding {
            rule: "durability",
            text: format!("{}.", cost_text(m, d)),
            advice: d.tps.caveat().map(|_| {
                "more repetitions (--repeat) narrow the interval; the cells run interleaved, so the \
                 machine's drift spreads over all of them"
                    .to_string()
            }),
        })
        .collect()
}

/// One finding per cell whose runs went through failovers: the
/// acknowledged commits lost per failover with their interval, the write
/// unavailability and the manager's promotion time
/// ([`crate::report::analysis::failover`]).
pub(super) fn failover(m: &ReportModel) -> Vec<Finding> {
    use crate::report::analysis::failover::{failovers, lost_text, unavailable_text};
    failovers(m)
        .iter()
        .map(|f| {
            let mut parts: Vec<String> = Vec::new();
            parts.extend(lost_text(f));
            parts.extend(unavailable_text(f));
            if let Some(p) = &f.promoted_s {
                parts.push(format!(
                    "the manager promoted the standby {:.1} s after the kill on average",
                    p.mean
                ));
            }
            if f.not_promoted > 0 {
                parts.push(format!(
                    "{} failover(s) promoted no node within the limit",
                    f.not_promoted
                ));
            }
            if f.lost.is_none() {
                parts.push(
                    "the workload's checks do not count lost commits (tpcb's history-matches-commits and list-append's acknowledged-appends-kept do)"
                        .into(),
                );
            }
            Finding {
                rule: "failover",
                text: format!(
                    "{}: {} failover(s): {}.",
                    m.factors.short_labels[f.cell],
                    f.failovers,
                    parts.join("; ")
                ),
                advice: None,
            }
        })
        .collect()
}
