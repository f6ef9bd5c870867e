//! The durability finding (issue #50): what each `synchronous_commit`
//! level costs against `local` in throughput and p99 latency, as a ratio
//! with its interval, and the standby lag that explains it
//! ([`crate::report::analysis::durability`]).

use super::Finding;
use crate::report::analysis::durability::{costs, cost_text};
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
