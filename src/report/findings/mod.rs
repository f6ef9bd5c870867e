//! Findings: rules that read the report model and say, one sentence each
//! with the numbers behind it, why a result is what it is and which
//! numbers to distrust. Each rule has a documented threshold; a new rule is
//! one more function in [`RULES`]. Shown first in report.md and as
//! headlines in the terminal summary.

use super::cells::VsBaseline;
use super::model::ReportModel;

mod headlines;
mod integrity;
mod plans;
mod pooler;

use crate::model::sqlstate_name;
pub use headlines::{Headline, headlines};
pub use integrity::{ANOMALY_CLASSES, HISTORY_MISSING_MIN, admitted_classes};
use integrity::{faults, forbidden_anomalies, history_missing, unknown};
use plans::{coarse_siread, plan_changes, plans_differ};
use pooler::pooler_wait;
pub use pooler::POOLER_WAIT_PCT;

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
    cost,
    failures,
    forbidden_anomalies,
    failure_reasons,
    coarse_siread,
    plans_differ,
    plan_changes,
    noise,
    outliers,
    host_cpu,
    client_cpu,
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
                m.factors.short_labels[i],
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
                    m.factors.short_labels[i], w.mean_ms.mean, l.mean
                ),
                advice: Some("a larger --pool-size, or fewer clients".into()),
            });
        }
    }
    out
}

/// CPU steal: a run in which the hypervisor took more than
/// [`STEAL_PCT`] % of the host's CPU time (`/proc/stat` steal over the
/// measured window): the machine's capacity changed under the run.
pub const STEAL_PCT: f64 = 5.0;

fn host_cpu(m: &ReportModel) -> Vec<Finding> {
    let stolen: Vec<(u32, f64)> = m
        .results
        .runs
        .iter()
        .filter_map(|r| Some((r.index, r.host_cpu?.steal_pct)))
        .filter(|(_, steal)| *steal > STEAL_PCT)
        .collect();
    let Some(worst) = stolen.iter().map(|(_, s)| *s).reduce(f64::max) else {
        return Vec::new();
    };
    let runs: Vec<String> = stolen.iter().map(|(i, _)| i.to_string()).collect();
    vec![Finding {
        rule: "steal",
        text: format!(
            "the hypervisor stole more than {STEAL_PCT:.0} % of the CPU time in run(s) {} (up to {worst:.0} %): those runs had less machine than the others.",
            runs.join(", ")
        ),
        advice: Some("a dedicated machine, or more repetitions interleaved (--repeat)".into()),
    }]
}

/// A busy load generator: isobench's own CPU time over a cell's measured
/// windows is more than [`CLIENT_CORE_SHARE`] of one core. On a machine
/// that also runs the server, that CPU is taken from the server, and a
/// saturated client delays its own transactions (BENCHMARKS.md).
pub const CLIENT_CORE_SHARE: f64 = 0.30;

fn client_cpu(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let runs: Vec<&crate::store::RunRecord> =
            c.complete_runs().filter(|r| r.load.is_none()).collect();
        let (cpu, secs): (f64, f64) = runs.iter().fold((0.0, 0.0), |(a, b), r| {
            (a + r.client_cpu_s, b + r.duration_s)
        });
        if secs <= 0.0 || cpu / secs <= CLIENT_CORE_SHARE {
            continue;
        }
        let committed: u64 = runs.iter().map(|r| r.committed).sum();
        let per_tx = if committed > 0 {
            format!(" ({:.0} µs per commit)", cpu * 1e6 / committed as f64)
        } else {
            String::new()
        };
        let host = runs
            .iter()
            .find_map(|r| r.host_cpu)
            .map(|h| format!(" of a {}-CPU host", h.cpus))
            .unwrap_or_default();
        out.push(Finding {
            rule: "client-cpu",
            text: format!(
                "{}: isobench itself used {:.0} % of a core{host}{per_tx}: the load generator competes with the server for CPU.",
                m.factors.short_labels[i],
                100.0 * cpu / secs
            ),
            advice: Some(
                "run isobench on another machine (--dsn), or compare tools at equal client threads (--threads)".into(),
            ),
        });
    }
    out
}

/// Open loop above capacity: in a run with a rate, the mean schedule lag
/// of the last quarter of the window's seconds is more than twice that
/// of the first quarter and above [`LAG_GROWTH_MS`]: transactions start
/// ever later, so the rate is more than the system sustains and latency
/// from the schedule grows with the run's length.
pub const LAG_GROWTH_MS: f64 = 10.0;

fn lag_growing(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let Some(rate) = c.cell.rate else { continue };
        let grew: Vec<(u32, f64, f64)> = c
            .complete_runs()
            .filter_map(|r| {
                let lags: Vec<f64> = r.per_second.iter().filter_map(|p| p.lag_ms).collect();
                let q = lags.len() / 4;
                if q == 0 {
                    return None;
                }
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                let (first, last) = (mean(&lags[..q]), mean(&lags[lags.len() - q..]));
                (last > 2.0 * first && last > LAG_GROWTH_MS).then_some((r.index, first, last))
            })
            .collect();
        let Some(&(run, first, last)) = grew.first() else {
            continue;
        };
        let tps = c.tps.as_ref().map_or(String::new(), |s| {
            format!(
                " ({:.0} tx/s committed against a rate of {:.0} tx/s)",
                s.mean, rate.0
            )
        });
        out.push(Finding {
            rule: "lag",
            text: format!(
                "{}: schedule lag grew from {first:.1} ms to {last:.1} ms over run {run}'s window{tps}{}: the rate is above capacity, so latency from the schedule grows with the run's length.",
                m.factors.short_labels[i],
                if grew.len() > 1 { format!(" and in {} more run(s)", grew.len() - 1) } else { String::new() }
            ),
            advice: Some("compare at rates below the closed-loop throughput".into()),
        });
    }
    out
}

/// Open loop behind schedule: in a cell with a rate and a latency limit,
/// the transactions skipped (already later than the limit when due) and
/// those committed later than the limit are more than [`BEHIND_PCT`] % of
/// the scheduled transactions (complete runs): the server could not keep
/// up with the rate, so the throughput is not the rate and the latency
/// leaves out what was skipped.
pub const BEHIND_PCT: f64 = 1.0;

fn behind(m: &ReportModel) -> Vec<Finding> {
    let Some(limit) = m.results.config.latency_limit_ms else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in m.cells.iter().enumerate() {
        let (Some(rate), Some(lag)) = (c.cell.rate, c.schedule_lag.as_ref()) else {
            continue;
        };
        // Every scheduled transaction records a schedule lag, skipped
        // ones included.
        let scheduled = lag.count;
        let n = c.skipped + c.late;
        if scheduled == 0 || (100.0 * n as f64) <= BEHIND_PCT * scheduled as f64 {
            continue;
        }
        out.push(Finding {
            rule: "behind",
            text: format!(
                "{}: the server could not keep up with {} tx/s: {} skipped, {} late (> {limit} ms) of {} scheduled transactions ({:.1} %).",
                m.factors.short_labels[i],
                rate.0,
                integrity::grouped(c.skipped),
                integrity::grouped(c.late),
                integrity::grouped(scheduled),
                100.0 * n as f64 / scheduled as f64
            ),
            advice: Some(
                "compare at a rate the cell sustains (below its closed-loop throughput), or with a larger --latency-limit".into(),
            ),
        });
    }
    out
}

/// Lock waits dominate: more than [`LOCK_WAIT_SHARE`] of a cell's backend
/// samples wait on a heavyweight lock (`Lock:*`, e.g. `Lock:transactionid`:
/// a row another transaction has updated): contention, not the server's
/// speed, sets the throughput.
pub const LOCK_WAIT_SHARE: f64 = 0.5;

fn lock_waits(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, (total, shares)) in m.wait_events.iter().enumerate() {
        let locks: Vec<_> = shares
            .iter()
            .filter(|w| w.event.starts_with("Lock:"))
            .collect();
        let n: u64 = locks.iter().map(|w| w.count).sum();
        if *total == 0 || (n as f64) <= LOCK_WAIT_SHARE * *total as f64 {
            continue;
        }
        let top = locks
            .iter()
            .take(2)
            .map(|w| format!("{} {:.0} %", w.event, w.pct));
        out.push(Finding {
            rule: "lock-waits",
            text: format!(
                "{}: {:.0} % of backend samples waited on a lock ({}): contention sets the throughput.",
                m.factors.short_labels[i],
                100.0 * n as f64 / *total as f64,
                top.collect::<Vec<_>>().join(", ")
            ),
            advice: Some(
                "fewer clients on the same rows, or more rows to spread them over (scale); see Wait events".into(),
            ),
        });
    }
    out
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

/// The reason most of cell `i`'s serialization failures gave, where it
/// passes [`REASON_MIN_ATTEMPTS`] and [`REASON_MIN_PCT`].
pub(crate) struct DominantReason<'a> {
    pub reason: &'a str,
    /// Attempts that failed with 40001 and this reason.
    pub n: u64,
    /// Attempts that failed with 40001.
    pub total: u64,
    /// Where most of them were raised: `` , at `s` ``, `` , 75 % of them
    /// at `s` ``, or nothing when the statement is not known.
    pub at: String,
}

impl DominantReason<'_> {
    /// The reason's share of the serialization failures, %.
    pub fn share(&self) -> f64 {
        100.0 * self.n as f64 / self.total as f64
    }
}

/// [`DominantReason`] of cell `i`.
pub(crate) fn dominant_reason<'a>(m: &'a ReportModel, i: usize) -> Option<DominantReason<'a>> {
    let (c, tallies) = (&m.cells[i], &m.failure_reasons[i]);
    let ser: Vec<_> = tallies.iter().filter(|r| r.sqlstate == "40001").collect();
    let total: u64 = ser.iter().map(|r| r.attempts).sum();
    let attempts: u64 = c.complete_runs().map(|r| r.attempts).sum();
    if total < REASON_MIN_ATTEMPTS || (100.0 * total as f64) < REASON_MIN_PCT * attempts as f64 {
        return None;
    }
    let (_, Some(reason), n) = super::reasons::by_reason(tallies)
        .into_iter()
        .find(|(code, _, _)| *code == "40001")?
    else {
        return None;
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
    let at = match at.iter().max_by_key(|(_, k)| *k) {
        Some((s, k)) if 1000 * *k >= 995 * n => format!(", at `{s}`"),
        Some((s, k)) => format!(", {:.0} % of them at `{s}`", 100.0 * *k as f64 / n as f64),
        None => String::new(),
    };
    Some(DominantReason {
        reason,
        n,
        total,
        at,
    })
}

fn failure_reasons(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for i in 0..m.cells.len() {
        let Some(d) = dominant_reason(m, i) else {
            continue;
        };
        let advice = if crate::model::is_write_write(d.reason) {
            "these are write-write conflicts on the same rows (hot rows): a larger scale or fewer clients spreads them"
        } else {
            "these are read-write conflicts found by SSI's predicate locks: see SIRead locks (a relation- or page-level lock conflicts with every writer of it) and Plans (an index scan takes finer locks than a sequential scan); shorter transactions, or READ ONLY where they are, have fewer"
        };
        out.push(Finding {
            rule: "reasons",
            text: format!(
                "{}: {:.0} % of serialization failures ({} of {} failed attempts, retried ones included): {}{}.",
                m.factors.short_labels[i],
                d.share(),
                d.n,
                d.total,
                d.reason,
                d.at
            ),
            advice: Some(advice.into()),
        });
    }
    out
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
                    super::fmt_tps(s.mean),
                    super::fmt_tps(b.mean),
                    s.n,
                    b.n
                ),
                advice: match &c.vs_baseline {
                    VsBaseline::Change { welch: Some(w), .. } if w.significant() => None,
                    _ => Some(
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
        ..
    } = &c.vs_baseline
    else {
        return None;
    };
    let base = m.factors.label_against(c.baseline?, i);
    let test = match welch {
        Some(w) if w.significant() => format!("significant: p {}", p_text(w)),
        Some(w) => format!("not significant: p {}", p_text(w)),
        None => "no test: fewer than 2 complete runs on a side".into(),
    };
    let ci = match pct_ci {
        Some(_) => format!(
            "95 % CI {}, ",
            super::fmt_pct_ci(pct_ci.as_ref()).replace('%', " %")
        ),
        None => String::new(),
    };
    let effective = c.effective_differs() || m.cells[c.baseline?].effective_differs();
    Some(format!(
        "{} {}{} vs {base} ({ci}{test})",
        super::fmt_pct_change(*pct).replace('%', " %"),
        if effective { "effective " } else { "" },
        m.throughput.0
    ))
}

/// `< 0.001` or `= 0.330`.
fn p_text(w: &crate::stats::Welch) -> String {
    match super::fmt_p(Some(w)) {
        p if p.starts_with('<') => format!("< {}", &p[1..]),
        p => format!("= {p}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CountStat;
    use crate::report::fixture;
    use integrity::grouped;

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
    fn an_anomaly_the_level_should_prevent_is_a_finding() {
        use crate::model::{InvariantResult, Isolation};
        let mut r = fixture::results();
        let cycle =
            "cycle T1 -> T2 -> T1: T1 read k1 = [1] without 2, which T2 appended next (rw); ...";
        for run in &mut r.runs {
            run.invariants
                .push(InvariantResult::count("G2-item", 3, cycle.into()));
        }
        let m = ReportModel::new(&r);
        let f = of_rule(&m, "forbidden");
        // rc admits G2-item (write skew); ser does not.
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].text.starts_with(&format!(
                "ser: 9 case(s) of G2-item, which SERIALIZABLE should prevent; the first: {cycle}"
            )),
            "{}",
            f[0].text
        );
        assert!(admitted_classes(Isolation::RepeatableRead).contains(&"G2-item"));
        assert!(!admitted_classes(Isolation::RepeatableRead).contains(&"G-single"));
    }

    /// The classes the list-append findings expect each level to admit are
    /// those whose built-in probe of `isobench anomalies` (same name)
    /// expects an anomaly at that level: the two tell the same story.
    #[test]
    fn admitted_classes_match_the_anomaly_probes_expectations() {
        use crate::model::Isolation;
        let probes = crate::probe::builtin().unwrap();
        let mut compared = 0;
        for class in ANOMALY_CLASSES {
            let Some(p) = probes.iter().find(|p| p.name == class) else {
                continue;
            };
            for level in [
                Isolation::ReadCommitted,
                Isolation::RepeatableRead,
                Isolation::Serializable,
            ] {
                let e = p
                    .expectation(level)
                    .expect("every built-in expects per level");
                let anomaly = e.outcome == crate::probe::directive::Outcome::Anomaly;
                assert_eq!(
                    admitted_classes(level).contains(&class),
                    anomaly,
                    "{class} at {level:?}: probe expects {e}"
                );
                compared += 1;
            }
        }
        // G0, G1a, G1b, G1c, G-single, G2-item at three levels.
        assert_eq!(compared, 18);
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
