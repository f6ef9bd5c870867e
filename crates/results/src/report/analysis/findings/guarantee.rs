//! Findings and headlines about promises: a class the cell's level forbids
//! that its history checks found (a guarantee violation, always shown
//! first, its cycle never cut), each level that kept its promise with the
//! bound its checks put on a violation's rate, and the factor values under
//! which violations are more or less frequent ([`guarantee::narrowing`]).

use crate::report::analysis::findings::{Finding, Headline};
use crate::report::analysis::guarantee::{self, CellGuarantee, ClassTally, rate_text};
use crate::report::analysis::model::ReportModel;
use crate::report::format::grouped;
use crate::stats::rate::RateVerdict;

/// `ser broke SERIALIZABLE's promise: 1 G2-item in 277,156 committed
/// transactions (...)`, the sentence a violation's headline and finding
/// share.
fn broken(m: &ReportModel, g: &CellGuarantee, t: &ClassTally) -> String {
    let runs: Vec<String> = t.runs.iter().map(u32::to_string).collect();
    format!(
        "{} broke {}'s promise: {} {} in {} committed transactions ({}; run(s) {})",
        m.factors.short_labels[g.cell],
        g.level.sql(),
        grouped(t.rate.events),
        t.class,
        grouped(g.checked),
        rate_text(&t.rate),
        runs.join(", ")
    )
}

/// Where a class's first cycles' evidence is, e.g. `evidence in
/// violations/1/, violations/2/`.
fn evidence(t: &ClassTally) -> Option<String> {
    let dirs: Vec<String> = t
        .cycles
        .iter()
        .filter_map(|(_, c)| c.evidence.as_ref().map(|d| format!("{d}/")))
        .collect();
    (!dirs.is_empty()).then(|| format!("evidence in {}", dirs.join(", ")))
}

/// The headlines about promises, shown before every other: one per class
/// that broke a cell's promise (with its first cycle as arrows and where
/// its evidence is), else one line saying that every checked level kept
/// its promise and how far the checks bound a violation's rate. Empty
/// when no cell has a history check.
pub fn headlines(m: &ReportModel) -> Vec<Headline> {
    let mut out = Vec::new();
    for g in &m.guarantees {
        for t in g.violations() {
            let mut text = format!("GUARANTEE VIOLATED: {}", broken(m, g, t));
            if let Some((_, c)) = t.cycles.first() {
                text.push_str(&format!(": {}", c.arrows()));
            }
            if let Some(e) = evidence(t) {
                text.push_str(&format!(" ({e})"));
            }
            text.push('.');
            out.push(Headline {
                cell: Some(g.cell),
                text,
                guarantee: true,
            });
        }
    }
    if out.is_empty() && !m.guarantees.is_empty() {
        let kept: Vec<String> = m
            .guarantees
            .iter()
            .map(|g| {
                format!(
                    "{} ({}) 0 in {} committed transactions ({})",
                    m.factors.short_labels[g.cell],
                    g.level.sql(),
                    grouped(g.checked),
                    rate_text(&g.violation_rate())
                )
            })
            .collect();
        out.push(Headline {
            cell: None,
            text: format!(
                "Every level kept its promise (no anomaly it forbids in the checked histories): {}.",
                kept.join("; ")
            ),
            guarantee: true,
        });
    }
    out
}

/// A finding per class that broke a cell's promise, with the level's
/// promise and the first case in full (never cut).
pub(super) fn violations(m: &ReportModel) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in &m.guarantees {
        for t in g.violations() {
            let mut text = format!("{}. {}.", broken(m, g, t), g.promise());
            if let Some(e) = t.example {
                text.push_str(&format!(" The first: {e}"));
            }
            let advice = match evidence(t) {
                Some(e) => format!(
                    "{e}: the transactions' statements with their times and backends, the history \
                     in Jepsen's EDN, and a replay as an isolation spec; see How to report this \
                     in report.md"
                ),
                None => "confirm it from the run's history (histories/) and the server log before \
                         calling it a bug; isobench check-history --level ser writes its evidence"
                    .into(),
            };
            out.push(Finding {
                rule: "guarantee",
                text,
                advice: Some(advice),
            });
        }
    }
    out
}

/// For each class that broke a promise, each varying factor's values
/// compared: their pooled rates, and the exact test of each value against
/// the first, with the transactions a verdict would need when it cannot
/// tell.
pub(super) fn narrowing(m: &ReportModel) -> Vec<Finding> {
    guarantee::narrowing(&m.guarantees, &m.factors)
        .into_iter()
        .map(|n| {
            let rates: Vec<String> = n
                .values
                .iter()
                .map(|(v, r)| {
                    format!(
                        "{v}: {} in {} ({})",
                        grouped(r.events),
                        grouped(r.exposure),
                        rate_text(r)
                    )
                })
                .collect();
            let tests: Vec<String> = n
                .values
                .iter()
                .skip(1)
                .zip(&n.tests)
                .map(|((v, _), t)| match t.verdict {
                    RateVerdict::CannotTell => match t.needed {
                        Some(k) => format!(
                            "{v} against {}: cannot tell (p = {:.2}); about {} committed \
                             transactions in all would tell at these rates",
                            n.values[0].0,
                            t.p,
                            grouped(k)
                        ),
                        None => format!(
                            "{v} against {}: cannot tell (p = {:.2}); no verdict in sight at these rates",
                            n.values[0].0, t.p
                        ),
                    },
                    verdict => format!(
                        "{v}: {} than {}, p = {:.3}",
                        verdict.name(),
                        n.values[0].0,
                        t.p
                    ),
                })
                .collect();
            Finding {
                rule: "narrowing",
                text: format!(
                    "{} at {} by {}: {}; {}.",
                    n.class,
                    n.level.sql(),
                    n.factor,
                    rates.join("; "),
                    tests.join("; ")
                ),
                advice: None,
            }
        })
        .collect()
}
