//! The page's header (title, completeness banner, the experiment's
//! configuration and environment as a definition list) and the summary
//! section: what a reader sees first, apart from the sections below.

use std::collections::BTreeMap;

use maud::{Markup, html};

use super::Section;
use super::{note, section, table_html};
use crate::model::Isolation;
use crate::report::model::ReportModel;
use crate::report::{NA, sections};
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
                    @for (k, v) in header_items(r) {
                        div { dt { (k) } dd { (v) } }
                    }
                }
            }
        }
    }
}

/// The header's definition list: the configuration and the environment.
fn header_items(r: &Results) -> Vec<(&'static str, String)> {
    let c = &r.config;
    let e = &r.environment;
    let list = |v: Vec<String>| v.join(", ");
    let kv = |m: &BTreeMap<String, String>| {
        if m.is_empty() {
            "none".to_string()
        } else {
            list(m.iter().map(|(k, v)| format!("{k}={v}")).collect())
        }
    };
    let retry = crate::report::fmt_retry(&c.retry);
    let load = crate::report::fmt_load(&r.load);
    let params = crate::report::fmt_param_factors(&c.params);
    let versions = server_versions(r);
    let baseline = baseline_text(c);
    let mut items: Vec<(&str, String)> = vec![
        (
            "Workload",
            format!(
                "{}{}; load {load}",
                super::super::workload_text(r),
                super::super::scale_text(r)
            ),
        ),
        ("Server", format!("PostgreSQL {}", list(versions))),
        ("Target", c.target.clone()),
        ("Host", format!("{} ({}, {} CPUs)", e.host, e.os, e.cpus)),
        (
            "Runs",
            format!(
                "{}; {} repetitions per cell",
                crate::report::fmt_runs(c),
                c.repeat
            ),
        ),
        (
            "Order",
            match c.order {
                crate::model::Order::Interleaved => "interleaved".to_string(),
                crate::model::Order::Random => "random (seeded)".to_string(),
            },
        ),
        ("Seed", c.seed.to_string()),
        (
            "Isolation levels",
            list(c.isolation.iter().map(|i| i.short().to_string()).collect()),
        ),
        ("Strategies", list(c.strategies.clone())),
        (
            "Clients",
            list(c.clients.iter().map(u32::to_string).collect()),
        ),
        ("Parameters (factors)", params),
        ("Parameter defaults", kv(&c.param_defaults)),
    ];
    if !c.pool_size.is_empty() {
        items.push((
            "Pool sizes",
            list(c.pool_size.iter().map(u32::to_string).collect()),
        ));
    }
    if !c.rate.is_empty() {
        items.push((
            "Target rates (tx/s, open loop)",
            list(c.rate.iter().map(f64::to_string).collect()),
        ));
    }
    if let Some(l) = c.latency_limit_ms {
        items.push(("Latency limit", format!("{l} ms")));
    }
    if !c.max_tries.is_empty() {
        items.push((
            "max_tries (factor)",
            list(c.max_tries.iter().map(u32::to_string).collect()),
        ));
    }
    for (k, v) in &c.setting_factors {
        items.push(("Server setting (factor)", format!("{k}={}", v.join(","))));
    }
    if let Some(builds) = crate::report::fmt_builds(r) {
        items.push(builds);
    }
    items.extend([
        ("Retry policy", retry),
        ("Baseline", baseline),
        ("Server settings", kv(&e.server_settings)),
        ("--set", kv(&c.settings)),
        ("isobench", r.isobench_version.clone()),
        ("Started", r.started_at.clone()),
        (
            "Finished",
            r.finished_at.clone().unwrap_or_else(|| NA.into()),
        ),
    ]);
    if let Some(file) = &c.file {
        items.push(("Experiment file", file.clone()));
    }
    items
}

/// Server versions the runs saw (several when builds are a factor), the
/// environment's when no run recorded one.
fn server_versions(r: &Results) -> Vec<String> {
    let c = &r.config;
    let e = &r.environment;
    let mut versions: Vec<String> = Vec::new();
    for run in &r.runs {
        // The build's label, not its directory (see `fmt_builds`).
        let v = match &run.cell.pg_bin {
            Some(label) if !c.pg_bin.is_empty() => format!("{} ({label})", run.server_version),
            _ => run.server_version.clone(),
        };
        if !run.server_version.is_empty() && !versions.contains(&v) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        versions.push(e.server_version.clone());
    }
    versions
}

/// The baseline cell as configured, or the default one described.
fn baseline_text(c: &crate::store::StoredConfig) -> String {
    let isolation = |i: Option<&Isolation>| i.map_or(NA, |i| i.short());
    match &c.baseline {
        Some(b) => b.clone(),
        None => format!(
            "isolation={} strategy={}, other factors equal",
            isolation(c.isolation.first()),
            c.strategies.first().map_or(NA, String::as_str)
        ),
    }
}

/// The answer first: one headline per cell compared with a baseline
/// ([`crate::report::findings::headlines`]).
pub(super) fn headlines(m: &ReportModel) -> Option<Section> {
    let h = crate::report::findings::headlines(m);
    if h.is_empty() {
        return None;
    }
    section(
        "headlines",
        "Headlines",
        html! {
            ul.headlines {
                @for h in &h { li { (super::code_spans(&h.text)) } }
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
        html! { (note(html! { (sections::cells_note(m)) })) (table_html(&sections::summary(m))) },
    )
}

/// The per-cell figures the Cells table leaves out.
pub(super) fn cell_details(m: &ReportModel) -> Option<Section> {
    if m.cells.is_empty() {
        return None;
    }
    let text = html! {
        (sections::CELL_DETAILS_NOTE)
        @for n in sections::summary_notes(m) { " " (n) }
    };
    section(
        "cell-details",
        "Cells in detail",
        html! { (note(text)) (table_html(&sections::cell_details(m))) },
    )
}
