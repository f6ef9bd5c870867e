//! The setup list: the study's configuration and environment as (label,
//! value) items, built once for report.md's Setup section and
//! report.html's header, so that both say the same thing with the same
//! labels.

use std::collections::BTreeMap;

use crate::model::{Isolation, Order};
use crate::report::{
    format::NA, format::build_versions, format::fmt_builds, format::fmt_load, format::fmt_ms,
    format::fmt_param_factors, format::fmt_retry, format::fmt_runs, format::scale_text,
    format::workload_text,
};
use crate::store::{Results, StoredConfig};

/// One line of the setup list.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub label: &'static str,
    pub value: String,
}

/// The setup list of `r`, in this order: status, what ran (workload,
/// runs, repetitions, order, seed), the factors (isolation levels,
/// strategies, clients, parameters, then pool sizes, rates, the latency
/// limit, max_tries, server setting factors and server builds when the
/// study has them), the retry policy and baseline, where it ran (target,
/// server versions, host, server settings, `--set`), and isobench's
/// version, start, finish and study file.
pub fn items(r: &Results) -> Vec<Item> {
    let c = &r.config;
    let e = &r.environment;
    let list = |v: Vec<String>| v.join(", ");
    let numbers = |v: Vec<String>| (!v.is_empty()).then(|| v.join(", "));
    let status = if r.complete {
        format!("complete ({} runs)", r.runs.len())
    } else {
        format!(
            "INCOMPLETE (interrupted): {} of {} planned runs recorded",
            r.runs.len(),
            c.planned_runs()
        )
    };
    let mut items: Vec<(&'static str, Option<String>)> = vec![
        ("Status", Some(status)),
        (
            "Workload",
            Some(format!(
                "{}{}; load {}",
                workload_text(r),
                scale_text(r),
                fmt_load(&r.load)
            )),
        ),
        ("Runs", Some(fmt_runs(c))),
        ("Repetitions", Some(format!("{} per cell", c.repeat))),
        (
            "Order",
            Some(
                match c.order {
                    Order::Interleaved => "interleaved",
                    Order::Random => "random (seeded)",
                }
                .to_string(),
            ),
        ),
        ("Seed", Some(c.seed.to_string())),
        (
            "Isolation levels",
            Some(list(
                c.isolation.iter().map(|i| i.short().to_string()).collect(),
            )),
        ),
        ("Strategies", Some(list(c.strategies.clone()))),
        (
            "Clients",
            Some(list(c.clients.iter().map(u32::to_string).collect())),
        ),
        ("Parameters (factors)", Some(fmt_param_factors(&c.params))),
        ("Parameter defaults", Some(settings(&c.param_defaults))),
        (
            "Pool sizes (connections)",
            numbers(c.pool_size.iter().map(u32::to_string).collect()),
        ),
        (
            "Target rates (tx/s, open loop)",
            numbers(c.rate.iter().map(f64::to_string).collect()),
        ),
        (
            "Latency limit",
            c.latency_limit_ms.map(|l| format!("{} ms", fmt_ms(l))),
        ),
        (
            "max_tries (factor)",
            numbers(c.max_tries.iter().map(u32::to_string).collect()),
        ),
        (
            "Server settings (factors)",
            numbers(
                c.setting_factors
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.join(",")))
                    .collect(),
            ),
        ),
    ];
    if let Some((label, builds)) = fmt_builds(r) {
        items.push((label, Some(builds)));
    }
    items.extend([
        ("Retry policy", Some(fmt_retry(&c.retry))),
        ("Baseline", Some(baseline_text(c))),
        ("Target", Some(c.target.clone())),
        (
            "Server",
            Some(format!("PostgreSQL {}", server_versions(r).join(", "))),
        ),
        (
            "Host",
            Some(format!("{} ({}, {} CPUs)", e.host, e.os, e.cpus)),
        ),
        ("Server settings", Some(settings(&e.server_settings))),
        ("--set", Some(settings(&c.settings))),
        ("isobench", Some(r.isobench_version.clone())),
        ("Started", Some(r.started_at.clone())),
        (
            "Finished",
            Some(r.finished_at.clone().unwrap_or_else(|| NA.into())),
        ),
        ("Study file", c.file.clone()),
    ]);
    items
        .into_iter()
        .filter_map(|(label, value)| value.map(|value| Item { label, value }))
        .collect()
}

/// `k=v, k=v`, or `none`.
fn settings(m: &BTreeMap<String, String>) -> String {
    if m.is_empty() {
        "none".into()
    } else {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Server versions the runs saw, each with its build's label when builds
/// are a factor (`16.4 (stock), 18.1 (finer-lock)`; the label, never the
/// directory: see [`fmt_builds`]); the environment's when no run recorded
/// one.
fn server_versions(r: &Results) -> Vec<String> {
    if r.config.pg_bin.is_empty() {
        let versions = build_versions(r, None);
        if versions.is_empty() {
            return vec![r.environment.server_version.clone()];
        }
        return versions.into_iter().map(str::to_string).collect();
    }
    let mut versions: Vec<String> = Vec::new();
    for run in &r.runs {
        let v = match &run.cell.pg_bin {
            Some(label) => format!("{} ({label})", run.server_version),
            None => run.server_version.clone(),
        };
        if !run.server_version.is_empty() && !versions.contains(&v) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        versions.push(r.environment.server_version.clone());
    }
    versions
}

/// The baseline cell as configured, or the default one described.
fn baseline_text(c: &StoredConfig) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    fn value<'a>(items: &'a [Item], label: &str) -> Option<&'a str> {
        items
            .iter()
            .find(|i| i.label == label)
            .map(|i| i.value.as_str())
    }

    /// Factor items only when the study has the factor; the server's
    /// versions as its runs reported them.
    #[test]
    fn optional_items_and_versions() {
        let items = items(&fixture::results());
        assert_eq!(items[0].label, "Status");
        for absent in ["Pool sizes (connections)", "Latency limit", "Study file"] {
            assert_eq!(value(&items, absent), None, "{absent}");
        }
        assert_eq!(value(&items, "Repetitions"), Some("3 per cell"));
        let outliers = super::items(&fixture::with_outliers());
        assert_eq!(value(&outliers, "Server"), Some("PostgreSQL 16.4, 17.2"));
        let builds = super::items(&fixture::with_builds());
        assert_eq!(
            value(&builds, "Server"),
            Some("PostgreSQL 16.4 (stock), 18.1 (finer-lock)")
        );
    }
}
