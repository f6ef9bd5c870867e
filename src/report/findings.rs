//! Findings: rules that read the report model and say, one sentence each
//! with the numbers behind it, why a result is what it is and which
//! numbers to distrust. Each rule has a documented threshold; a new rule is
//! one more function in [`RULES`]. Shown first in report.md and as
//! headlines in the terminal summary.

use super::model::ReportModel;
use crate::model::sqlstate_name;

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
    failures,
    plans_differ,
    noise,
    outliers,
    pool_wait,
    unknown,
    failure_reasons,
];

/// Every rule's findings for `m`.
pub fn findings(m: &ReportModel) -> Vec<Finding> {
    RULES.iter().flat_map(|rule| rule(m)).collect()
}

/// Failures dominate a cell: more than [`FAILURE_PCT`] % of its
/// transactions failed; names the most frequent SQLSTATE and its share.
pub const FAILURE_PCT: f64 = 10.0;

fn failures(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(pct) = c.failure_pct.filter(|p| *p > FAILURE_PCT) else {
            continue;
        };
        let total: u64 = c.failures.values().sum();
        let Some((code, n)) = c.failures.iter().max_by_key(|(_, n)| **n) else {
            continue;
        };
        let share = 100.0 * *n as f64 / total.max(1) as f64;
        let retried = m.results.config.retry.retry_on.contains(code);
        out.push(Finding {
            rule: "failures",
            text: format!(
                "{}: {pct:.0} % of transactions failed; {share:.0} % of the failures are {code} ({}){}.",
                m.factors.labels[i],
                sqlstate_name(code),
                if retried { ", after every try" } else { ", which is not retried" }
            ),
            advice: Some(if retried {
                "more tries (--max-tries) or a backoff (--backoff exp) turn some into commits; the Failures table says at which statement".into()
            } else {
                "a failure that is not retried is usually an error in the workload or its data: see Problems".into()
            }),
        });
    }
    out
}

/// A statement ran with plans of different shapes in different cells
/// (estimates aside): the comparison mixes a plan effect with the factor's
/// effect (under SERIALIZABLE a sequential scan takes a relation-level
/// SIRead lock that every writer conflicts with).
fn plans_differ(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for p in &m.plans {
        if !labels.contains(&p.label) {
            labels.push(p.label);
        }
    }
    for label in labels {
        // Shapes, each with the cells whose plan has it.
        let mut shapes: Vec<(Vec<String>, Vec<String>)> = Vec::new();
        for g in m.plans.iter().filter(|p| p.label == label) {
            let shape = shape(g.plan);
            let cells = g
                .cells
                .iter()
                .filter_map(|c| m.cell_index(c).map(|i| m.factors.labels[i].clone()));
            match shapes.iter_mut().find(|(s, _)| *s == shape) {
                Some((_, c)) => c.extend(cells),
                None => shapes.push((shape, cells.collect())),
            }
        }
        if shapes.len() < 2 {
            continue;
        }
        // The first plan line where the shapes part.
        let at = (0..)
            .find(|&k| shapes.iter().any(|(s, _)| s.get(k) != shapes[0].0.get(k)))
            .unwrap_or(0);
        let described: Vec<String> = shapes
            .iter()
            .map(|(s, cells)| {
                let line = s.get(at).map_or("(no such step)", String::as_str);
                format!("{line} in {}", cells.join("; "))
            })
            .collect();
        out.push(Finding {
            rule: "plans",
            text: format!(
                "`{label}` ran with {} different plans: {}.",
                shapes.len(),
                described.join(" but ")
            ),
            advice: Some(
                "the cells differ in plan as well as in the factor; see Plans (ANALYZE, or equal data before each run)".into(),
            ),
        });
    }
    out
}

/// A plan's lines without the planner's estimates (`  (cost=...)`) and
/// arrows: what the executor does, not what it expected.
fn shape(plan: &str) -> Vec<String> {
    plan.lines()
        .map(|l| {
            let l = l.trim().trim_start_matches("->").trim();
            l.split("  (cost=").next().unwrap_or(l).to_string()
        })
        .filter(|l| !l.is_empty())
        .collect()
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
                m.factors.labels[i],
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

/// Saturation of a pool: the mean wait for a connection is more than
/// [`POOL_WAIT_SHARE`] of the mean latency.
pub const POOL_WAIT_SHARE: f64 = 0.5;

fn pool_wait(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let (Some(w), Some(l)) = (&c.pool_wait, &c.merged_latency) else {
            continue;
        };
        if l.mean > 0.0 && w.mean_ms.mean > POOL_WAIT_SHARE * l.mean {
            out.push(Finding {
                rule: "pool",
                text: format!(
                    "{}: clients waited {:.2} ms for a pooled connection on average, against {:.2} ms of latency: the pool is the bottleneck.",
                    m.factors.labels[i], w.mean_ms.mean, l.mean
                ),
                advice: Some("a larger --pool-size, or fewer clients".into()),
            });
        }
    }
    out
}

fn unknown(m: &ReportModel) -> Vec<Finding> {
    let n: u64 = m.cells.iter().map(|c| c.unknown_outcome).sum();
    if n == 0 {
        return Vec::new();
    }
    vec![Finding {
        rule: "unknown",
        text: format!(
            "{n} transaction(s) have an unknown outcome (the connection broke during COMMIT): they may or may not have committed, and the invariant checks allow for them."
        ),
        advice: Some("see Problems for the connection errors".into()),
    }]
}

/// A cell's serialization failures have a dominant reason: the rule
/// speaks for a cell with at least [`REASON_MIN_ATTEMPTS`] attempts that
/// failed with 40001 (retried ones included) making up at least
/// [`REASON_MIN_PCT`] % of its attempts, and names the reason most of
/// them gave, its share (%), and the statement where most of those were
/// raised (when known). Reasons: [`crate::model::FailureReason`].
pub const REASON_MIN_ATTEMPTS: u64 = 10;

/// See [`REASON_MIN_ATTEMPTS`]: % of the cell's attempts.
pub const REASON_MIN_PCT: f64 = 1.0;

fn failure_reasons(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, (c, tallies)) in m.cells.iter().zip(&m.failure_reasons).enumerate() {
        let ser: Vec<_> = tallies.iter().filter(|r| r.sqlstate == "40001").collect();
        let total: u64 = ser.iter().map(|r| r.attempts).sum();
        let attempts: u64 = c.complete_runs().map(|r| r.attempts).sum();
        if total < REASON_MIN_ATTEMPTS || (100.0 * total as f64) < REASON_MIN_PCT * attempts as f64
        {
            continue;
        }
        let Some((_, Some(reason), n)) = super::reasons::by_reason(tallies)
            .into_iter()
            .find(|(code, _, _)| *code == "40001")
        else {
            continue;
        };
        // The statement that raised most of this reason's failures.
        let mut at: Vec<(&str, u64)> = Vec::new();
        for r in ser.iter().filter(|r| r.reason.as_deref() == Some(reason)) {
            let Some(s) = r.statement.as_deref() else {
                continue;
            };
            match at.iter_mut().find(|(x, _)| *x == s) {
                Some((_, k)) => *k += r.attempts,
                None => at.push((s, r.attempts)),
            }
        }
        let statement = match at.iter().max_by_key(|(_, k)| *k) {
            Some((s, k)) if *k == n => format!(", at `{s}`"),
            Some((s, k)) => format!(", {:.0} % of them at `{s}`", 100.0 * *k as f64 / n as f64),
            None => String::new(),
        };
        let share = 100.0 * n as f64 / total as f64;
        let advice = if reason.contains("concurrent") {
            "these are write-write conflicts on the same rows (hot rows): a larger scale or fewer clients spreads them"
        } else {
            "these are read-write conflicts found by SSI's predicate locks: see SIRead locks (a relation- or page-level lock conflicts with every writer of it) and Plans (an index scan takes finer locks than a sequential scan); shorter transactions, or READ ONLY where they are, have fewer"
        };
        out.push(Finding {
            rule: "reasons",
            text: format!(
                "{}: {share:.0} % of serialization failures ({n} of {total} failed attempts, retried ones included): {reason}{statement}.",
                m.factors.labels[i]
            ),
            advice: Some(advice.into()),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

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
                "isolation=ser strategy=optimistic clients=4: 75 % of serialization failures ({pivot} of {total} \
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
}
