//! The closing sections, mostly tables: invariant checks, query plans,
//! every run, the external load's figures and the problems recorded.

use std::fmt::Write as _;

use super::Section;
use super::{esc, section, table_html};
use crate::report::model::ReportModel;
use crate::report::sections;

pub(super) fn invariants(m: &ReportModel) -> Option<Section> {
    if m.results.runs.iter().all(|run| run.invariants.is_empty()) {
        return None;
    }
    let html = format!(
        "<p class=\"note\">Checked after every run, interrupted ones included. A violation is an \
         anomaly the isolation level or strategy let through.</p>\n{}<details><summary>Every check \
         of every run</summary>\n{}</details>\n",
        table_html(&sections::invariant_summary(m)),
        table_html(&sections::invariant_checks(m))
    );
    section("invariants", "Invariants and anomalies", html)
}

pub(super) fn plans(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let groups = &m.plans;
    if groups.is_empty() && m.plan_changes.is_empty() {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut html = String::from(
        "<p class=\"note\">EXPLAIN of each workload statement at the start of the first complete run \
         of each cell; each distinct plan once. Every run EXPLAINs again when its window ends; plans \
         that changed are listed last.</p>\n",
    );
    for g in groups {
        let who = if g.cells.len() == cells.len() {
            "all cells".to_string()
        } else {
            g.cells
                .iter()
                .filter_map(|gc| cells.iter().position(|c| c.cell == *gc))
                .map(|i| labels[i].clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = write!(
            html,
            "<details class=\"plan\"><summary><strong>{}</strong> <span class=\"who\">({})</span></summary>\n\
             <pre class=\"sql\">{}</pre>\n<pre>{}</pre>\n</details>\n",
            esc(g.label),
            esc(&who),
            esc(g.sql),
            esc(g.plan)
        );
    }
    for (run, c) in &m.plan_changes {
        let _ = write!(
            html,
            "<details class=\"plan\" open><summary><strong>{}</strong> <span class=\"who\">(changed within run {run})</span></summary>\n\
             <p class=\"note\">When the window started:</p><pre>{}</pre>\n\
             <p class=\"note\">When it ended:</p><pre>{}</pre>\n</details>\n",
            esc(&c.label),
            esc(&c.start),
            esc(&c.end)
        );
    }
    section("plans", "Plans", html)
}

/// Runs that had faults; none when no run had any.
pub(super) fn faults(m: &ReportModel) -> Option<Section> {
    let t = sections::faults(m);
    if t.is_empty() {
        return None;
    }
    let html = format!(
        "<p class=\"note\">Runs whose clients lost connections (and reconnected) or whose server crashed \
         or restarted. They measured their whole window and count in the statistics. Outage: from the \
         first loss to the first commit after it; recovery: until a second of the window was back at 90 % \
         of the throughput before the loss.</p>\n\
         <p class=\"note\">Per cell (unknown outcomes and lost commits over all its runs; lost commits: \
         acknowledged commits missing from the database afterwards, n/a where the workload cannot tell):</p>\n{}\
         <p class=\"note\">Every faulted run:</p>\n{}",
        table_html(&sections::cell_faults(m)),
        table_html(&t)
    );
    section("faults", "Faults", html)
}

pub(super) fn runs(m: &ReportModel) -> Option<Section> {
    if m.results.runs.is_empty() {
        return None;
    }
    let outliers = if m.outlier_runs.is_empty() {
        ""
    } else {
        " (outlier): the run's TPS has a modified z-score |M| &gt; 3.5 among its cell's complete runs \
         (Iglewicz &amp; Hoaglin); it still counts in the statistics."
    };
    section(
        "runs",
        "Runs",
        format!(
            "<p class=\"note\">In execution order.{outliers}</p>\n{}",
            table_html(&sections::runs(m))
        ),
    )
}

/// The load tool's own figures per cell and the commands per run
/// (external loads only).
pub(super) fn external_load(m: &ReportModel) -> Option<Section> {
    let (by_cell, by_run) = sections::external_load(m)?;
    section(
        "external-load",
        "External load",
        format!(
            "<p class=\"note\">What the load command reported, per cell over its complete runs \
             (latency and bytes/s: mean of the runs' values; counts: summed). The server was observed \
             from the command's start to its end.</p>\n{}\n<h3>Commands</h3>\n<p class=\"note\">Per run, \
             as run (secrets shown as placeholders); output files are relative to the results directory.</p>\n{}",
            table_html(&by_cell),
            table_html(&by_run)
        ),
    )
}

pub(super) fn problems(m: &ReportModel) -> Option<Section> {
    let lines = sections::problems(m);
    if lines.is_empty() {
        return None;
    }
    let mut items = String::new();
    for l in lines {
        let _ = writeln!(items, "<li>{}</li>", esc(&l));
    }
    section(
        "problems",
        "Problems",
        format!("<ul class=\"problems\">\n{items}</ul>\n"),
    )
}
