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

/// One finding per cell whose runs went through failovers: writes two
/// primaries accepted (first, if any), the acknowledged commits lost per
/// failover with their interval, the write unavailability and the
/// manager's promotion time ([`crate::report::analysis::failover`]).
pub(super) fn failover(m: &ReportModel) -> Vec<Finding> {
    use crate::report::analysis::failover::{
        failovers, lost_text, split_brain_text, unavailable_text,
    };
    failovers(m)
        .iter()
        .map(|f| {
            let mut parts: Vec<String> = split_brain_text(f).into_iter().collect();
            parts.extend(lost_text(f));
            if let Some((0, n)) = f.split_brain {
                parts.push(format!("no write accepted by two primaries in {n} failover(s)"));
            }
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

/// The headline of a study whose cells lived through failovers in more
/// than one cell, or through failovers and a `synchronous_commit` factor
/// (issue #50: the cost and the loss side by side): each level's
/// throughput against `local`, then every cell's acknowledged commits
/// lost per failover with its interval, the baseline cell's too (the
/// cells' headlines leave the baseline out). `None` otherwise, or when
/// no check counts lost commits.
pub fn tradeoff(m: &ReportModel) -> Option<String> {
    use crate::report::analysis::failover::failovers;
    let lost: Vec<String> = failovers(m)
        .iter()
        .filter_map(|f| {
            let r = f.lost?;
            let label = &m.factors.short_labels[f.cell];
            Some(if r.events == 0 {
                format!(
                    "{label} 0 in {} (95 % upper bound {:.2} per failover)",
                    r.exposure, r.high
                )
            } else {
                format!(
                    "{label} {:.1} (95 % CI {:.1} to {:.1}, {} in {})",
                    r.rate, r.low, r.high, r.events, r.exposure
                )
            })
        })
        .collect();
    let costs: Vec<String> = costs(m)
        .iter()
        .map(|d| {
            let ci = d
                .tps
                .pct_ci
                .map(|c| format!(" [{:+.0} %, {:+.0} %]", c.low, c.high))
                .unwrap_or_default();
            format!(
                "{}: {} TPS vs synchronous_commit=local{ci}",
                m.factors.short_labels[d.cell],
                d.tps.pct.map_or("n/a".into(), |p| format!("{p:+.0} %"))
            )
        })
        .collect();
    if lost.is_empty() || (costs.is_empty() && lost.len() < 2) {
        return None;
    }
    let mut parts = costs;
    parts.push(format!(
        "acknowledged commits lost per failover: {}",
        lost.join(", ")
    ));
    Some(format!(
        "Durability and failover loss: {}.",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Isolation, SYNCHRONOUS_COMMIT};

    /// The fixture's failovers (rc lost 3 and 5 commits, ser none) as a
    /// durability study: rc at synchronous_commit=local, ser (made rc) at
    /// remote_apply. One headline gives the level's cost and both cells'
    /// loss, the baseline's too.
    #[test]
    fn the_cost_of_durability_beside_the_loss_of_failovers() {
        let mut r = crate::report::analysis::failover::tests::failed_over();
        r.config.setting_factors = vec![(
            SYNCHRONOUS_COMMIT.into(),
            vec!["local".into(), "remote_apply".into()],
        )];
        r.config.isolation = vec![Isolation::ReadCommitted];
        for run in &mut r.runs {
            let level = match run.cell.isolation {
                Isolation::Serializable => "remote_apply",
                _ => "local",
            };
            run.cell.isolation = Isolation::ReadCommitted;
            run.cell
                .settings
                .insert(SYNCHRONOUS_COMMIT.into(), level.into());
        }
        let m = ReportModel::new(&r);
        let t = tradeoff(&m).expect("a headline");
        assert!(
            t.starts_with(
                "Durability and failover loss: synchronous_commit=remote_apply: +50 % TPS vs \
                 synchronous_commit=local ["
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "; acknowledged commits lost per failover: synchronous_commit=local 4.0 (95 % CI "
            ) && t.contains(
                ", 8 in 2), synchronous_commit=remote_apply 0 in 2 (95 % upper bound 1.84 per failover)."
            ),
            "{t}"
        );
        let h = crate::report::analysis::findings::headlines(&m);
        assert!(h.iter().any(|h| h.cell.is_none() && h.text == t), "{h:?}");
        // Failovers in one cell and no durability factor: the cell's own
        // headline says it all.
        let mut one = crate::report::analysis::failover::tests::failed_over();
        one.runs
            .retain(|x| x.cell.isolation == Isolation::ReadCommitted);
        one.config.isolation = vec![Isolation::ReadCommitted];
        assert_eq!(tradeoff(&ReportModel::new(&one)), None);
        // Failovers in two cells: the losses side by side.
        let two = tradeoff(&ReportModel::new(
            &crate::report::analysis::failover::tests::failed_over(),
        ))
        .unwrap();
        assert!(
            two.starts_with(
                "Durability and failover loss: acknowledged commits lost per failover: rc 4.0"
            ),
            "{two}"
        );
    }
}
