//! The page's header (title, completeness banner, the study's
//! configuration and environment as a definition list) and the summary
//! section: what a reader sees first, apart from the sections below.

use maud::{Markup, html};

use crate::report::analysis::model::ReportModel;
use crate::report::render::html::Section;
use crate::report::render::html::{note, section, table_html};
use crate::report::tables;
use crate::store::Results;

/// The page's `<header>`: title, completeness banner and the
/// configuration/environment list, collapsed.
pub(super) fn header(r: &Results, title: &str) -> Markup {
    let planned = r.config.planned_runs();
    html! {
        header {
            h1 { (title) }
            @if r.complete {
                p.banner.ok { "Complete: " (r.runs.len()) " runs recorded." }
            } @else if r.runs.is_empty() && r.finished_at.is_some() {
                p.banner.bad {
                    strong { "No run started" } ": the study stopped before its first run ("
                    (planned) " planned)."
                }
            } @else {
                p.banner.bad {
                    strong { "INCOMPLETE" } " (interrupted): " (r.runs.len()) " of " (planned)
                    " planned runs recorded. Cells with fewer complete runs than planned have \
                     wider intervals or none."
                }
            }
            // The setup, collapsed: the answer comes first.
            details.meta {
                summary { "Setup: workload, server, factors, settings, versions" }
                dl.meta {
                    @for item in tables::setup::items(r) {
                        div { dt { (item.label) } dd { (item.value) } }
                    }
                }
            }
        }
    }
}

/// The answer first: one headline per cell compared with a baseline
/// ([`crate::report::analysis::findings::headlines`]).
pub(super) fn headlines(m: &ReportModel) -> Option<Section> {
    let h = crate::report::analysis::findings::headlines(m);
    if h.is_empty() {
        return None;
    }
    section(
        "headlines",
        "Headlines",
        html! {
            ul.headlines {
                @for h in &h {
                    @if h.guarantee && h.text.starts_with("GUARANTEE VIOLATED") {
                        li.violation { strong { (crate::report::render::html::code_spans(&h.text)) } }
                    } @else {
                        li { (crate::report::render::html::code_spans(&h.text)) }
                    }
                }
            }
        },
    )
}

/// The Cells table, right after the headlines.
pub(super) fn summary(m: &ReportModel) -> Option<Section> {
    if m.cells.is_empty() {
        return None;
    }
    section(
        "summary",
        "Cells",
        html! {
            (note(html! { (tables::cells_note(m)) }))
            (table_html(&tables::summary(m)))
            @let notes = tables::cells::verdict_notes(m);
            @if !notes.is_empty() {
                ul.notes { @for n in &notes { li { (n) } } }
            }
        },
    )
}

/// A calibration's noise (`isobench calibrate`).
pub(super) fn noise(m: &ReportModel) -> Option<Section> {
    let n = m.noise.as_ref()?;
    section(
        "noise",
        &tables::noise::noise_title(n),
        html! { (note(html! { (tables::noise::noise_note(n)) })) (table_html(&tables::noise::noise(n))) },
    )
}

/// The per-cell figures the Cells table leaves out.
pub(super) fn cell_details(m: &ReportModel) -> Option<Section> {
    if m.cells.is_empty() {
        return None;
    }
    let text = html! {
        (tables::CELL_DETAILS_NOTE)
        @for n in tables::summary_notes(m) { " " (n) }
    };
    section(
        "cell-details",
        "Cells in detail",
        html! { (note(text)) (table_html(&tables::cell_details(m))) },
    )
}

/// Each checked level's promise, the rates of what its history checks
/// found, and what a report of a violation needs ([`tables::guarantee`]).
pub(super) fn guarantees(m: &ReportModel) -> Option<Section> {
    let t = tables::guarantee::guarantees(m);
    if t.is_empty() {
        return None;
    }
    let how = tables::guarantee::how_to_report(m);
    section(
        "guarantees",
        "Guarantees",
        html! {
            ul.notes { @for p in tables::guarantee::promises(m) { li { (p) "." } } }
            (note(html! {
                "Cases per class as the history checker counts them, per million committed \
                 transactions checked, with the exact 95 % Poisson interval."
            }))
            (table_html(&t))
            @if !how.is_empty() {
                h3 { "How to report this" }
                ul.notes { @for line in &how { li { (crate::report::render::html::code_spans(line)) } } }
            }
        },
    )
}
