//! Findings: rules that read the report model and say, one sentence each
//! with the numbers behind it, why a result is what it is and which
//! numbers to distrust. Each rule has a documented threshold; a new rule is
//! one more function in [`RULES`]. Shown first in report.md and as
//! headlines in the terminal summary.

use crate::report::analysis::cells::VsBaseline;
use crate::report::analysis::model::ReportModel;

mod capacity;
mod durability;
mod failures;
mod guarantee;
mod headlines;
mod integrity;
mod placement;
mod plans;
mod pooler;
mod routed_reads;

pub use capacity::{
    BEHIND_PCT, CLIENT_CORE_SHARE, LAG_GROWTH_MS, LOCK_WAIT_SHARE, POOL_WAIT_SHARE, STEAL_PCT,
};
use capacity::{behind, client_cpu, host_cpu, lag_growing, lock_waits, pool_wait};
pub(crate) use failures::dominant_reason;
pub use failures::{FAILURE_PCT, REASON_MIN_ATTEMPTS, REASON_MIN_PCT};
use failures::{failure_reasons, failures};
pub use guarantee::headlines as guarantee_headlines;
pub use headlines::{Headline, headlines};
pub use integrity::HISTORY_MISSING_MIN;
use integrity::{faults, history_missing, unknown};
use plans::{coarse_siread, plan_changes, plans_differ};
pub use pooler::POOLER_WAIT_PCT;
use pooler::pooler_wait;

/// One finding: what the rule saw, and what to try when there is a remedy.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The rule's name, e.g. `noise`.
    pub rule: &'static str,
    /// One sentence with its numbers.
    pub text: String,
    /// What to try, when there is something to try.
    pub advice: Option<String>,
}

type Rule = fn(&ReportModel) -> Vec<Finding>;

/// The rules, in the order their findings are shown.
pub const RULES: &[Rule] = &[
    guarantee::violations,
    guarantee::narrowing,
    cost,
    durability::durability,
    durability::failover,
    routed_reads::stale_reads,
    failures,
    failure_reasons,
    coarse_siread,
    plans_differ,
    plan_changes,
    noise,
    outliers,
    host_cpu,
    client_cpu,
    placement::shared_cpus,
    pool_wait,
    pooler_wait,
    lag_growing,
    behind,
    lock_waits,
    unknown,
    history_missing,
    faults,
];

/// Every rule's findings for `m`.
pub fn findings(m: &ReportModel) -> Vec<Finding> {
    RULES.iter().flat_map(|rule| rule(m)).collect()
}

/// Noise: a cell whose 95 % confidence interval of TPS is wider than
/// [`NOISE_REL`] of its mean (±), with the repetitions that would bring it
/// to ±5 %.
pub const NOISE_REL: f64 = 0.10;

fn noise(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(s) = c.tps.as_ref().filter(|s| s.n >= 2 && s.mean > 0.0) else {
            continue;
        };
        let rel = s.ci95 / s.mean;
        if rel.is_nan() || rel <= NOISE_REL {
            continue;
        }
        let advice = match s.repetitions_for(0.05) {
            Some(n) => {
                format!("about {n} repetitions (--repeat {n}) would give ±5 % at this spread")
            }
            None => "the runs spread too much for ±5 %: look for what changes between runs".into(),
        };
        out.push(Finding {
            rule: "noise",
            text: format!(
                "{}: TPS {:.0} ± {:.0} % (95 % CI, n = {}): differences smaller than that are not measured.",
                m.factors.short_labels[i],
                s.mean,
                100.0 * rel,
                s.n
            ),
            advice: Some(advice),
        });
    }
    out
}

fn outliers(m: &ReportModel) -> Vec<Finding> {
    if m.outlier_runs.is_empty() {
        return Vec::new();
    }
    let runs: Vec<String> = m.outlier_runs.iter().map(u32::to_string).collect();
    vec![Finding {
        rule: "outliers",
        text: format!(
            "run(s) {} are outliers in TPS within their cell (modified z-score above 3.5); they still count.",
            runs.join(", ")
        ),
        advice: Some("see Runs for what else differs (server version, errors)".into()),
    }]
}

/// What each cell's level (or other factor) costs in throughput: every
/// cell with a baseline to compare with gets one finding, however small
/// the difference, with the 95 % interval of the change and whether
/// Welch's test finds it significant ([`cost_text`]).
fn cost(m: &ReportModel) -> Vec<Finding> {
    (0..m.cells.len())
        .filter_map(|i| {
            let text = cost_text(m, i)?;
            let c = &m.cells[i];
            let base = c.baseline.map(|b| &m.cells[b]);
            let (Some(s), Some(b)) = (c.headline_tps(), base.and_then(|b| b.headline_tps())) else {
                return None;
            };
            let unit = m.throughput.1;
            Some(Finding {
                rule: "cost",
                text: format!(
                    "{}: {text}: {} against {} {unit} (mean of {} and {} complete runs).",
                    m.factors.short_labels[i],
                    crate::report::format::fmt_tps(s.mean),
                    crate::report::format::fmt_tps(b.mean),
                    s.n,
                    b.n
                ),
                advice: match c.vs_baseline.comparison() {
                    Some(cmp) if cmp.verdict.significant() => None,
                    Some(cmp) => Some(match cmp.caveat() {
                        Some(words) => format!(
                            "{words}; more repetitions (--repeat), or --precision, narrow the interval"
                        ),
                        None => "more repetitions (--repeat) narrow the interval; see the noise findings"
                            .into(),
                    }),
                    None => Some(
                        "more repetitions (--repeat) narrow the interval; see the noise findings"
                            .into(),
                    ),
                },
            })
        })
        .collect()
}

/// Cell `i`'s throughput against its baseline's, in words: `-65.7 %
/// TPS vs rc (95 % CI [-80.1%, -51.3%], significant: p < 0.001)`;
/// `None` for a baseline cell, or without a baseline or a change.
pub(crate) fn cost_text(m: &ReportModel, i: usize) -> Option<String> {
    let c = &m.cells[i];
    let VsBaseline::Change {
        pct: Some(pct),
        pct_ci,
        welch,
        verdict,
        n_min,
        mde_pct,
        ..
    } = &c.vs_baseline
    else {
        return None;
    };
    let base = m.factors.label_against(c.baseline?, i);
    // One method: the p-value is the interval's (stats::ratio_test), and
    // no verdict below 3 runs a side.
    let mde = mde_pct.map_or(String::new(), |m| {
        format!("; detectable change ±{}", crate::stats::fmt_mde(m))
    });
    let test = match welch {
        _ if *n_min < crate::stats::MIN_RUNS => format!(
            "too few runs for a verdict: {n_min} on the smaller side, {} needed",
            crate::stats::MIN_RUNS
        ),
        Some(w) if verdict.significant() => format!("significant: p {}{mde}", p_text(w)),
        Some(w) => format!("not significant: p {}{mde}", p_text(w)),
        None => "no test: neither side varies".into(),
    };
    let ci = match pct_ci {
        Some(_) => format!(
            "95 % CI {}, ",
            crate::report::format::fmt_pct_ci(pct_ci.as_ref()).replace('%', " %")
        ),
        None => String::new(),
    };
    let effective = c.effective_differs() || m.cells[c.baseline?].effective_differs();
    Some(format!(
        "{} {}{} vs {base} ({ci}{test})",
        crate::report::format::fmt_pct_change(*pct).replace('%', " %"),
        if effective { "effective " } else { "" },
        m.throughput.0
    ))
}

/// `< 0.001` or `= 0.330`.
fn p_text(w: &crate::stats::Welch) -> String {
    match crate::report::format::fmt_p(Some(w)) {
        p if p.starts_with('<') => format!("< {}", &p[1..]),
        p => format!("= {p}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CountStat;
    use crate::model::fixture;
    use crate::report::format::grouped;

    fn rules_of(m: &ReportModel) -> Vec<&'static str> {
        findings(m).iter().map(|f| f.rule).collect()
    }

    #[test]
    fn failures_name_the_dominant_sqlstate() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            run.failed = [("40001".to_string(), run.committed)].into();
        }
        let m = ReportModel::new(&r);
        let f: Vec<Finding> = findings(&m)
            .into_iter()
            .filter(|f| f.rule == "failures")
            .collect();
        assert!(!f.is_empty(), "{:?}", findings(&m));
        assert!(
            f[0].text.contains("40001 (serialization_failure)"),
            "{}",
            f[0].text
        );
        assert!(f[0].text.contains("100 % of the failures"), "{}", f[0].text);
    }

    #[test]
    fn a_quiet_cell_has_no_noise_finding_and_a_noisy_one_has() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            run.tps = if run.cell.isolation == crate::model::Isolation::Serializable {
                150.0
            } else {
                100.0
            };
        }
        let m = ReportModel::new(&r);
        assert!(!rules_of(&m).contains(&"noise"), "{:?}", findings(&m));
        for run in &mut r.runs {
            run.tps *= if run.repetition % 2 == 0 { 0.6 } else { 1.4 };
        }
        let m = ReportModel::new(&r);
        let noise: Vec<Finding> = findings(&m)
            .into_iter()
            .filter(|f| f.rule == "noise")
            .collect();
        assert!(!noise.is_empty(), "{:?}", findings(&m));
        assert!(
            noise[0].advice.as_deref().unwrap().contains("repetitions"),
            "{noise:?}"
        );
    }

    #[test]
    fn different_plans_for_one_statement_are_a_finding() {
        let mut r = fixture::results();
        let m = ReportModel::new(&r);
        assert!(!rules_of(&m).contains(&"plans"));
        let label = r.runs[0].server.plans[0].label.clone();
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::Serializable {
                run.server.plans[0].plan =
                    "Seq Scan on pgbench_branches  (cost=0.00..1.01 rows=1 width=4)".into();
            }
        }
        let m = ReportModel::new(&r);
        let f: Vec<Finding> = findings(&m)
            .into_iter()
            .filter(|f| f.rule == "plans")
            .collect();
        assert_eq!(f.len(), 1, "{:?}", findings(&m));
        assert!(
            f[0].text
                .contains(&format!("`{label}` ran with 2 different plans")),
            "{}",
            f[0].text
        );
        assert!(
            f[0].text.contains("Seq Scan on pgbench_branches in"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn the_dominant_serialization_failure_reason_and_statement() {
        // The fixture's serializable runs: 3/4 of the 40001 attempts are
        // `pivot, during commit attempt` at COMMIT.
        let r = fixture::results();
        let m = ReportModel::new(&r);
        let f: Vec<Finding> = findings(&m)
            .into_iter()
            .filter(|f| f.rule == "reasons")
            .collect();
        assert_eq!(f.len(), 1, "{:?}", findings(&m));
        let (pivot, total) = (930 * 3 / 4 + 1034 * 3 / 4, 930 + 1034);
        assert_eq!(
            f[0].text,
            format!(
                "ser: 75 % of serialization failures ({pivot} of {total} \
                 failed attempts, retried ones included): pivot, during commit attempt, at `COMMIT`."
            )
        );
        assert!(f[0].advice.as_deref().unwrap().contains("SIRead"));

        // Split over two statements: the larger one, with its share.
        let mut r = fixture::results();
        for run in &mut r.runs {
            for t in &mut run.transactions {
                let mut other = t.failure_reasons.clone();
                for (a, b) in t.failure_reasons.iter_mut().zip(&mut other) {
                    b.statement = Some("UPDATE pgbench_branches SET bbalance = 0;".into());
                    b.attempts /= 4;
                    a.attempts -= b.attempts;
                }
                t.failure_reasons.extend(other);
            }
        }
        let m = ReportModel::new(&r);
        let text = findings(&m)
            .into_iter()
            .find(|f| f.rule == "reasons")
            .unwrap()
            .text;
        assert!(
            text.contains("pivot, during commit attempt, 75 % of them at `COMMIT`."),
            "{text}"
        );

        // Below the thresholds: no finding.
        let mut r = fixture::results();
        for run in &mut r.runs {
            for t in &mut run.transactions {
                for f in &mut t.failure_reasons {
                    f.attempts = f.attempts.min(2);
                }
            }
        }
        let m = ReportModel::new(&r);
        assert!(!rules_of(&m).contains(&"reasons"), "{:?}", findings(&m));
    }

    #[test]
    fn repetitions_for_a_target_interval() {
        let s = crate::stats::Summary::of(&[90.0, 110.0, 100.0]).unwrap();
        let n = s.repetitions_for(0.05).unwrap();
        // s = 10, mean 100: t(0.975, n-1) * 10 / sqrt(n) <= 5 first at n = 18.
        assert_eq!(n, 18);
        assert_eq!(s.repetitions_for(10.0), Some(2));
    }

    fn of_rule(m: &ReportModel, rule: &str) -> Vec<Finding> {
        findings(m).into_iter().filter(|f| f.rule == rule).collect()
    }

    #[test]
    fn the_fixture_has_none_of_the_cpu_lag_lock_or_plan_change_findings() {
        let r = fixture::results();
        let m = ReportModel::new(&r);
        for rule in ["plan-change", "steal", "client-cpu", "lag", "lock-waits"] {
            assert!(of_rule(&m, rule).is_empty(), "{rule}: {:?}", findings(&m));
        }
    }

    #[test]
    fn a_plan_change_within_a_run_names_the_runs_and_both_steps() {
        let mut r = fixture::results();
        for i in [1, 3] {
            r.runs[i].server.plan_changes = vec![crate::model::PlanChange {
                label: "update branch".into(),
                sql: "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1".into(),
                start: "Update on pgbench_branches  (cost=0.00..1.01 rows=0 width=0)\n  ->  Seq Scan on pgbench_branches  (cost=0.00..1.01 rows=1 width=10)".into(),
                end: "Update on pgbench_branches  (cost=0.14..8.16 rows=0 width=0)\n  ->  Index Scan using pgbench_branches_pkey on pgbench_branches  (cost=0.14..8.16 rows=1 width=10)".into(),
            }];
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "plan-change");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].text,
            "`update branch` changed plan within runs 2, 4 (ser): Seq Scan on pgbench_branches at \
             the start, Index Scan using pgbench_branches_pkey on pgbench_branches at the end."
        );
        // Both cells started with the same plans: no plan difference.
        assert!(
            of_rule(&m, "plans").is_empty(),
            "{:?}",
            of_rule(&m, "plans")
        );
    }

    #[test]
    fn a_plan_difference_says_how_coarse_the_siread_locks_were() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::Serializable {
                run.server.plans[0].plan =
                    "Seq Scan on pgbench_branches  (cost=0.00..1.01 rows=1 width=4)".into();
                let g = &mut run.server.siread_locks.by_granularity;
                g.insert(
                    "relation".into(),
                    CountStat {
                        mean: 16.5,
                        max: 20,
                    },
                );
                run.server.siread_locks.by_relation.insert(
                    "pgbench_branches (relation)".into(),
                    CountStat {
                        mean: 16.5,
                        max: 20,
                    },
                );
            }
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "plans");
        assert_eq!(f.len(), 1, "{f:?}");
        // Mean over the two complete ser runs: relation 16.5, page 3.5,
        // tuple (13 + 14) / 2 = 13.5 of 33.5.
        assert!(
            f[0].text.contains("49 % relation, 10 % page, 40 % tuple")
                && f[0]
                    .text
                    .contains("coarser than a tuple on pgbench_branches (relation)"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn relation_level_siread_locks_are_explained_by_a_sequential_scan() {
        let mut r = fixture::results();
        let m = ReportModel::new(&r);
        assert!(of_rule(&m, "siread").is_empty(), "{:?}", findings(&m));
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::Serializable {
                run.server.plans[0].plan = "Update on pgbench_accounts  (cost=0.00..2.50 rows=0 width=0)\n  ->  Seq Scan on pgbench_accounts  (cost=0.00..2.50 rows=1 width=10)".into();
                let l = &mut run.server.siread_locks;
                l.by_granularity
                    .insert("relation".into(), CountStat { mean: 5.5, max: 8 });
                l.by_relation.insert(
                    "pgbench_accounts (relation)".into(),
                    CountStat { mean: 5.5, max: 8 },
                );
            }
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "siread");
        assert_eq!(f.len(), 1, "{f:?}");
        // relation 5.5 of 5.5 + 3.5 + (13 + 14) / 2 = 22.5.
        assert!(
            f[0].text.starts_with(
                "ser: 24 % of its SIRead locks were relation-level, on pgbench_accounts: \
                 `update account` ran as Seq Scan on pgbench_accounts (but Index Scan using \
                 pgbench_accounts_pkey on pgbench_accounts in rc)"
            ),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn a_guarantee_violation_is_the_first_finding_with_its_cycle_uncut() {
        let r = fixture::guarantee_violated();
        let m = ReportModel::new(&r);
        let f = findings(&m);
        assert_eq!(f[0].rule, "guarantee", "{f:?}");
        // rc admits its G2-items and G-singles: only ser's is a finding.
        assert_eq!(of_rule(&m, "guarantee").len(), 1);
        let text = &f[0].text;
        assert!(
            text.starts_with(
                "ser broke SERIALIZABLE's promise: 1 G2-item in 277,156 committed transactions \
                 (3.6 per million (95 % CI 0.091-20); run(s) 2). SERIALIZABLE promises"
            ),
            "{text}"
        );
        // The whole example, however long: the third edge's words end it.
        assert!(
            text.ends_with(
                "T110483 read k2846 = [38805] without 40021, which T13400 appended next (rw)"
            ),
            "{text}"
        );
        assert!(
            f[0].advice
                .as_ref()
                .unwrap()
                .starts_with("evidence in violations/1/")
        );
    }

    #[test]
    fn steal_above_the_threshold_names_the_runs() {
        let mut r = fixture::results();
        r.runs[2].host_cpu.as_mut().unwrap().steal_pct = STEAL_PCT + 7.0;
        r.runs[3].host_cpu.as_mut().unwrap().steal_pct = STEAL_PCT - 1.0;
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "steal");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].text.contains("run(s) 3 (up to 12 %)"), "{}", f[0].text);
    }

    #[test]
    fn a_client_using_a_third_of_a_core_is_a_finding() {
        let mut r = fixture::results();
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::Serializable {
                // 45 % of a core over the window.
                run.client_cpu_s = 0.45 * run.duration_s;
            }
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "client-cpu");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].text.contains("used 45 % of a core of a 2-CPU host"),
            "{}",
            f[0].text
        );
        assert!(
            f[0].text.starts_with(&m.factors.short_labels[1]),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn growing_schedule_lag_is_a_finding_and_steady_lag_is_not() {
        let mut r = fixture::results();
        let lag = |grow: bool| -> Vec<crate::model::SecondPoint> {
            (0..20)
                .map(|s| crate::model::SecondPoint {
                    t_s: f64::from(s + 1),
                    committed: 90,
                    tps: 90.0,
                    p99_ms: 5.0,
                    failed: 0,
                    lag_ms: Some(if grow { 2.0 + 10.0 * f64::from(s) } else { 2.0 }),
                })
                .collect()
        };
        for run in &mut r.runs {
            run.cell.rate = Some(crate::store::Rate(100.0));
            run.per_second = lag(false);
        }
        r.config.rate = vec![100.0];
        let m = ReportModel::new(&r);
        assert!(of_rule(&m, "lag").is_empty(), "{:?}", findings(&m));
        r.runs[1].per_second = lag(true);
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "lag");
        assert_eq!(f.len(), 1, "{f:?}");
        // First 5 s: 2 + 10·(0..5) → mean 22; last 5: 2 + 10·(15..20) → 172.
        assert!(
            f[0].text
                .contains("from 22.0 ms to 172.0 ms over run 2's window"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn lock_waits_above_half_of_the_samples_are_a_finding() {
        let mut r = fixture::results();
        let m = ReportModel::new(&r);
        assert!(of_rule(&m, "lock-waits").is_empty());
        for run in &mut r.runs {
            if run.cell.isolation == crate::model::Isolation::ReadCommitted {
                run.server
                    .wait_events
                    .counts
                    .insert("Lock:transactionid".into(), 400);
            }
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "lock-waits");
        assert_eq!(f.len(), 1, "{f:?}");
        // 400 of 150 + 60 + 30 + 400 = 640 samples.
        assert!(
            f[0].text
                .contains("62 % of backend samples waited on a lock (Lock:transactionid 62 %)"),
            "{}",
            f[0].text
        );
    }

    #[test]
    fn history_rows_missing_are_the_inflated_tps_trap() {
        let plain = fixture::results();
        let m_ok = ReportModel::new(&plain);
        assert!(
            !rules_of(&m_ok).contains(&"history"),
            "{:?}",
            findings(&m_ok)
        );
        let r = fixture::swallowed_history();
        let m = ReportModel::new(&r);
        let f: Vec<Finding> = findings(&m)
            .into_iter()
            .filter(|f| f.rule == "history")
            .collect();
        // Only the ser cell, whose 3 runs (2 complete, 1 interrupted) each
        // lost rows; rc's checks held.
        assert_eq!(f.len(), 1, "{f:?}");
        let ser_runs = r
            .runs
            .iter()
            .filter(|run| run.cell.isolation == crate::model::Isolation::Serializable)
            .count() as u64;
        assert!(
            f[0].text.ends_with(&format!(
                "{} transactions committed but pgbench_history gained {} rows (20 %, {ser_runs} run(s)): \
                 the script reports work that was rolled back.",
                grouped(27_150 * ser_runs),
                grouped(5_550 * ser_runs)
            )),
            "{}",
            f[0].text
        );
        assert_eq!(grouped(27_150), "27,150");
        assert_eq!(
            (grouped(0), grouped(999), grouped(1_000_000)),
            ("0".into(), "999".into(), "1,000,000".into())
        );
    }

    /// Open loop: skipped + late above 1 % of the scheduled transactions
    /// is a finding naming the rate, the counts and the limit; at 1 % or
    /// below, or without a latency limit, none.
    #[test]
    fn an_open_loop_cell_that_falls_behind_is_a_finding() {
        let mut r = fixture::results();
        r.config.rate = vec![200.0];
        r.config.latency_limit_ms = Some(50.0);
        let lag = crate::store::WaitSummary {
            count: 12_000,
            mean: 1.0,
            p50: 0.5,
            p99: 9.0,
            max: 60.0,
        };
        for run in &mut r.runs {
            run.cell.rate = Some(crate::store::Rate(200.0));
            run.schedule_lag_ms = Some(lag);
        }
        // ser: complete runs 2 and 4, 24,000 scheduled; 240 is 1 %.
        r.runs[1].skipped = 200;
        r.runs[3].late = 40;
        let behind = |r: &crate::store::Results| -> Vec<Finding> {
            findings(&ReportModel::new(r))
                .into_iter()
                .filter(|f| f.rule == "behind")
                .collect()
        };
        assert!(behind(&r).is_empty(), "{:?}", behind(&r));
        r.runs[3].late = 41;
        let f = behind(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].text.ends_with(
                "the server could not keep up with 200 tx/s: 200 skipped, 41 late (> 50 ms) of 24,000 \
                 scheduled transactions (1.0 %)."
            ),
            "{}",
            f[0].text
        );
        r.config.latency_limit_ms = None;
        assert!(behind(&r).is_empty());
    }

    #[test]
    fn faulted_runs_are_a_finding_with_outage_recovery_and_cause() {
        assert!(
            !findings(&ReportModel::new(&fixture::results()))
                .iter()
                .any(|f| f.rule == "faults")
        );
        let r = fixture::faulted();
        let f = findings(&ReportModel::new(&r));
        let f = f.iter().find(|f| f.rule == "faults").unwrap();
        assert_eq!(
            f.text,
            "run(s) 2 had faults: 4 connection(s) lost, the clients reconnected; longest outage 0.75 s (run 2); \
             slowest recovery to 90 % 1.50 s (run 2); the server went away in run 2: server process (PID 4242) \
             was terminated by signal 9: Killed; 3 commit(s) the clients saw acknowledged are not in the \
             database (run(s) 2)."
        );
    }
}
