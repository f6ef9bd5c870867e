//! The closing sections, mostly tables: invariant checks, query plans,
//! every run, the external load's figures and the problems recorded.

use maud::html;

use crate::report::analysis::model::ReportModel;
use crate::report::render::html::Section;
use crate::report::render::html::{note, section, table_html};
use crate::report::tables;

pub(super) fn invariants(m: &ReportModel) -> Option<Section> {
    if m.results.runs.iter().all(|run| run.invariants.is_empty()) {
        return None;
    }
    section(
        "invariants",
        "Invariants and anomalies",
        html! {
            (note(html! {
                "Checked after every run, interrupted ones included. A violation is an anomaly the \
                 isolation level or strategy let through."
            }))
            (table_html(&tables::invariant_summary(m)))
            details {
                summary { "Every check of every run" }
                (table_html(&tables::invariant_checks(m)))
            }
        },
    )
}

pub(super) fn plans(m: &ReportModel) -> Option<Section> {
    let groups = &m.plans;
    let changes = m.plan_change_groups();
    if groups.is_empty() && changes.is_empty() {
        return None;
    }
    let labels = &m.factors.short_labels;
    section(
        "plans",
        "Plans",
        html! {
            (note(html! { (crate::report::render::markdown::PLANS_NOTE) }))
            @for g in groups {
                // A plan that did not hold throughout is shown open.
                details.plan open[g.cells.iter().any(|(_, w)| !w.always())] {
                    summary { strong { (g.label) } " " span.who { "(" (g.who(labels)) ")" } }
                    pre.sql { (g.sql) }
                    pre { (g.plan) }
                }
            }
            @if !changes.is_empty() {
                h3 { "Plans that changed within a run" }
                (note(html! { (crate::report::render::markdown::PLAN_CHANGES_NOTE) }))
                ul.changes {
                    @for g in &changes {
                        li { (crate::report::render::html::code_spans(&g.text())) "." }
                    }
                }
            }
        },
    )
}

/// Runs that had faults; none when no run had any.
pub(super) fn faults(m: &ReportModel) -> Option<Section> {
    let t = tables::faults(m);
    if t.is_empty() {
        return None;
    }
    section(
        "faults",
        "Faults",
        html! {
            (note(html! {
                "Runs whose clients lost connections (and reconnected) or whose server crashed or \
                 restarted. They measured their whole window and count in the statistics. Outage: \
                 from the first loss to the first commit after it; recovery: until a second of the \
                 window was back at 90 % of the throughput before the loss."
            }))
            (note(html! {
                "Per cell (unknown outcomes and lost commits over all its runs; lost commits: \
                 acknowledged commits missing from the database afterwards, n/a where the workload \
                 cannot tell):"
            }))
            (table_html(&tables::cell_faults(m)))
            (note(html! { "Every faulted run:" }))
            (table_html(&t))
        },
    )
}

/// Only when a run had more than one host (`--host-policy`).
pub(super) fn hosts(m: &ReportModel) -> Option<Section> {
    let t = tables::hosts(m);
    if t.is_empty() {
        return None;
    }
    section(
        "hosts",
        "Per host",
        html! {
            (note(html! { (tables::host_note(m)) }))
            (table_html(&t))
        },
    )
}

pub(super) fn runs(m: &ReportModel) -> Option<Section> {
    if m.results.runs.is_empty() {
        return None;
    }
    section(
        "runs",
        "Runs",
        html! {
            (note(html! {
                "In execution order."
                @if !m.outlier_runs.is_empty() {
                    " (outlier): the run's TPS has a modified z-score |M| > 3.5 among its cell's \
                     complete runs (Iglewicz & Hoaglin); it still counts in the statistics."
                }
            }))
            (table_html(&tables::runs(m)))
        },
    )
}

/// The load tool's own figures per cell and the commands per run
/// (external loads only).
pub(super) fn external_load(m: &ReportModel) -> Option<Section> {
    let (by_cell, by_run) = tables::external_load(m)?;
    section(
        "external-load",
        "External load",
        html! {
            (note(html! {
                "What the load command reported, per cell over its complete runs (latency and \
                 bytes/s: mean of the runs' values; counts: summed). The server was observed from \
                 the command's start to its end."
            }))
            (table_html(&by_cell))
            h3 { "Commands" }
            (note(html! {
                "Per run, as run (secrets shown as placeholders); output files are relative to the \
                 results directory."
            }))
            (table_html(&by_run))
        },
    )
}

pub(super) fn problems(m: &ReportModel) -> Option<Section> {
    let lines = tables::problems(m);
    if lines.is_empty() {
        return None;
    }
    section(
        "problems",
        "Problems",
        html! { ul.problems { @for l in &lines { li { (l) } } } },
    )
}
