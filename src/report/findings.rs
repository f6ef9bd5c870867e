//! Findings: rules that read the report model and say, one sentence each
//! with the numbers behind it, why a result is what it is and which
//! numbers to distrust. Each rule has a documented threshold; a new rule is
//! one more function in [`RULES`]. Shown first in report.md and as
//! headlines in the terminal summary.

use super::model::ReportModel;
use crate::model::sqlstate_name;
use crate::model::{HISTORY_CHECK, HistoryCount};

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
    history_missing,
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

/// The inflated-TPS trap: a cell's runs counted more committed
/// transactions that insert a `pgbench_history` row than the table gained
/// rows (the history check, [`HISTORY_CHECK`], failed with missing rows;
/// its detail is read by [`HistoryCount::parse`]). Flagged when at least
/// [`HISTORY_MISSING_MIN`] rows are missing: the check already allows for
/// unknown outcomes, so every missing row is a transaction the client
/// counted whose work the database does not hold (typically a function
/// that catches `serialization_failure` and returns normally).
pub const HISTORY_MISSING_MIN: u64 = 1;

fn history_missing(m: &ReportModel) -> Vec<Finding> {
    // Per cell: expected rows, rows gained, runs with missing rows.
    let mut per_cell: Vec<(u64, u64, u32)> = vec![(0, 0, 0); m.cells.len()];
    for run in &m.results.runs {
        let Some(i) = m.cell_index(&run.cell) else {
            continue;
        };
        let missing = run
            .invariants
            .iter()
            .filter(|v| v.name == HISTORY_CHECK && !v.ok)
            .filter_map(|v| HistoryCount::parse(&v.detail))
            .find(|h| h.rows < h.expected_min);
        if let Some(h) = missing {
            let c = &mut per_cell[i];
            c.0 += h.expected_min;
            c.1 += h.rows;
            c.2 += 1;
        }
    }
    let mut out = Vec::new();
    for (i, (expected, rows, runs)) in per_cell.into_iter().enumerate() {
        if runs == 0 || expected - rows < HISTORY_MISSING_MIN {
            continue;
        }
        out.push(Finding {
            rule: "history",
            text: format!(
                "{}: {} transactions committed but pgbench_history gained {} rows ({:.0} %, {runs} run(s)): \
                 the script reports work that was rolled back.",
                m.factors.labels[i],
                grouped(expected),
                grouped(rows),
                100.0 * rows as f64 / expected as f64
            ),
            advice: Some(
                "a function that catches serialization_failure (EXCEPTION WHEN ...) and returns normally hides the \
                 rollback from the client: re-raise the error so that the transaction is retried or counted as \
                 failed, and trust the rows, not the calls"
                    .into(),
            ),
        });
    }
    out
}

/// `n` with thousands separated by commas: `27,150`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
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
    fn repetitions_for_a_target_interval() {
        let s = crate::stats::Summary::of(&[90.0, 110.0, 100.0]).unwrap();
        let n = s.repetitions_for(0.05).unwrap();
        // s = 10, mean 100: t(0.975, n-1) * 10 / sqrt(n) <= 5 first at n = 18.
        assert_eq!(n, 18);
        assert_eq!(s.repetitions_for(10.0), Some(2));
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
}
