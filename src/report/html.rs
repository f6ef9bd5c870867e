//! `report.html`: one self-contained page (inline CSS, inline SVG charts,
//! a few lines of optional JavaScript to sort tables; nothing loaded from
//! anywhere) with everything `report.md` has, plus charts: throughput
//! against each numeric factor with 95 % confidence intervals, latency
//! percentiles, failures and retries, per-second time series, server
//! counters over time, wait events, SIRead locks, pool wait and schedule
//! lag.
//!
//! Every string from the results is HTML-escaped; numbers go through the
//! formatters of [`super`] so they read as in the Markdown report. Charts
//! come from the private `charts` module (plotters' SVG backend). Sections
//! without data (no pool, no per-second series, no serializable cell, ...)
//! are left out.

mod charts;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use charts::{Axis, Bar, BarSeries, HBars, LegendItem, Line, Marker, Panel, Point, Style};
use charts::{GREY, ValueLabels};

use super::cells::CellSummary;
use super::model::ReportModel;
use super::table::{Align, Column, Mark, Table, Value};
use super::{NA, fmt_fixed, fmt_ms, fmt_opt, fmt_tps, sections};
use crate::model::Isolation;
use crate::model::sqlstate_name;
use crate::store::{Results, RunRecord, WaitSummary};

/// Wait events charted per cell before the rest is pooled as "other".
const WAIT_BUCKETS: usize = 7;
/// Wait events listed per cell in the table (as in `report.md`).
const TOP_WAIT_EVENTS: usize = 5;
/// Cells drawn as lines in one chart before a chart would be unreadable.
const MAX_LINES: usize = 8;
/// Chart widths, px (the page scales them to the column).
const WIDE: u32 = 1100;
const HALF: u32 = 560;

/// Renders `report.html` for `results`.
pub fn render(results: &Results) -> String {
    render_model(&ReportModel::new(results))
}

/// Renders `report.html` from an aggregated model.
pub fn render_model(m: &ReportModel) -> String {
    let results = m.results;
    let sections: Vec<Section> = [
        summary(m),
        external_load(m),
        throughput(m),
        latency(m),
        failures(m),
        transactions(m),
        commands(m),
        time_series(m),
        counters(m),
        wait_events(m),
        siread_locks(m),
        pool_and_lag(m),
        invariants(m),
        plans(m),
        runs(m),
        problems(m),
    ]
    .into_iter()
    .flatten()
    .collect();

    let mut out = String::with_capacity(256 * 1024);
    let title = format!(
        "isobench report: {}{}",
        results.config.workload,
        scale_text(results)
    );
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&title)
    );
    header(&mut out, results, &title);
    out.push_str("<nav class=\"toc\" aria-label=\"sections\"><ul>");
    for s in &sections {
        let _ = write!(out, "<li><a href=\"#{}\">{}</a></li>", s.id, esc(&s.title));
    }
    out.push_str("</ul></nav>\n<main>\n");
    if results.runs.is_empty() {
        out.push_str("<p class=\"note\">No runs recorded.</p>\n");
    }
    for s in &sections {
        let _ = write!(
            out,
            "<section id=\"{}\">\n<h2>{}</h2>\n{}\n</section>\n",
            s.id,
            esc(&s.title),
            s.html
        );
    }
    let _ = write!(
        out,
        "</main>\n<footer>isobench {} · results schema {} · this page is self-contained (no network \
         access); the script only sorts tables when a column header is clicked.</footer>\n\
         <script>{JS}</script>\n</body>\n</html>\n",
        esc(&results.isobench_version),
        results.schema_version
    );
    out
}

/// HTML-escapes text for element content and quoted attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One `<section>` of the page.
struct Section {
    id: &'static str,
    title: String,
    html: String,
}

fn section(id: &'static str, title: &str, html: String) -> Option<Section> {
    Some(Section {
        id,
        title: title.into(),
        html,
    })
}

/// A value as HTML: its short form when it has one (the full text on
/// hover), literal text in `<code>`, its mark as a class or sign, a
/// minibar under a figure.
fn value_html(v: &Value) -> String {
    let mut s = esc(v.short.as_deref().unwrap_or(&v.text));
    if v.code {
        s = format!("<code>{s}</code>");
    }
    let title = v
        .title
        .as_deref()
        .or(v.short.as_ref().map(|_| v.text.as_str()))
        .map_or_else(String::new, |t| format!(" title=\"{}\"", esc(t)));
    s = match v.mark {
        Mark::Good => format!("<span class=\"good\"{title}>{s}</span>"),
        Mark::Bad | Mark::Violation => format!("<span class=\"bad\"{title}>{s}</span>"),
        Mark::Baseline => format!("<strong>{s}</strong>"),
        Mark::Up => format!("<span class=\"up\"{title}>{s} ▲</span>"),
        Mark::Down => format!("<span class=\"down\"{title}>{s} ▼</span>"),
        Mark::NotSignificant => {
            format!("<span{title}>{s} <span class=\"ns\">n.s.</span></span>")
        }
        Mark::NoTest => format!("<span{title}>{s} <span class=\"ns\">(no test)</span></span>"),
        Mark::None if !title.is_empty() => format!("<span{title}>{s}</span>"),
        Mark::None => s,
    };
    if let Some(f) = v.bar {
        let _ = write!(
            s,
            "<span class=\"minibar\" aria-hidden=\"true\"><span style=\"width:{:.1}%\"></span></span>",
            100.0 * f
        );
    }
    s
}

/// The class attribute of a column's cells.
fn align_class(a: Align) -> &'static str {
    match a {
        Align::Text => "",
        Align::Num => " class=\"num\"",
        Align::Long => " class=\"long\"",
    }
}

/// A [`Table`] as a sortable HTML table, every column shown.
fn table_html(t: &Table) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"sortable\"");
    if let Some(id) = t.id {
        let _ = write!(out, " id=\"{id}\"");
    }
    out.push_str("><thead><tr>");
    for c in &t.columns {
        let _ = write!(
            out,
            "<th scope=\"col\"{}>{}</th>",
            align_class(c.align),
            esc(&c.header)
        );
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        if row.class.is_empty() {
            out.push_str("<tr>");
        } else {
            let _ = write!(out, "<tr class=\"{}\">", row.class);
        }
        for (i, v) in row.values.iter().enumerate() {
            let a = t.columns.get(i).map_or(Align::Text, |c| c.align);
            let _ = write!(out, "<td{}>{}</td>", align_class(a), value_html(v));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    out
}

/// A chart in a `<figure>` with its caption (HTML), or the drawing error.
fn figure(svg: Result<String, String>, caption: &str) -> String {
    match svg {
        Ok(svg) => format!("<figure>\n{svg}<figcaption>{caption}</figcaption>\n</figure>\n"),
        Err(e) => format!("<p class=\"warn\">{}</p>\n", esc(&e)),
    }
}

fn scale_text(r: &Results) -> String {
    match r.config.scale.as_slice() {
        [] => String::new(),
        [s] => format!(", scale {s}"),
        many => format!(
            ", scale {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
    }
}

fn header(out: &mut String, r: &Results, title: &str) {
    let c = &r.config;
    let e = &r.environment;
    let planned = c.planned_runs();
    let _ = write!(out, "<header>\n<h1>{}</h1>\n", esc(title));
    if r.complete {
        let _ = writeln!(
            out,
            "<p class=\"banner ok\">Complete: {} runs recorded.</p>",
            r.runs.len()
        );
    } else {
        let _ = writeln!(
            out,
            "<p class=\"banner bad\"><strong>INCOMPLETE</strong> (interrupted): {} of {planned} \
             planned runs recorded. Cells with fewer complete runs than planned have wider \
             intervals or none.</p>",
            r.runs.len()
        );
    }
    let list = |v: Vec<String>| v.join(", ");
    let kv = |m: &BTreeMap<String, String>| {
        if m.is_empty() {
            "none".to_string()
        } else {
            list(m.iter().map(|(k, v)| format!("{k}={v}")).collect())
        }
    };
    let retry = super::fmt_retry(&c.retry);
    let load = super::fmt_load(&r.load);
    let params = super::fmt_param_factors(&c.params);
    // Server versions the runs saw (several when builds are a factor).
    let mut versions: Vec<String> = Vec::new();
    for run in &r.runs {
        let v = match &run.cell.pg_bin {
            Some(b) if !c.pg_bin.is_empty() => format!("{} ({b})", run.server_version),
            _ => run.server_version.clone(),
        };
        if !run.server_version.is_empty() && !versions.contains(&v) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        versions.push(e.server_version.clone());
    }
    let isolation = |i: Option<&Isolation>| i.map_or(NA, |i| i.short());
    let baseline = match &c.baseline {
        Some(b) => b.clone(),
        None => format!(
            "isolation={} strategy={}, other factors equal",
            isolation(c.isolation.first()),
            c.strategies.first().map_or(NA, String::as_str)
        ),
    };
    let mut items: Vec<(&str, String)> = vec![
        (
            "Workload",
            format!("{}{}; load {load}", c.workload, scale_text(r)),
        ),
        ("Server", format!("PostgreSQL {}", list(versions))),
        ("Target", c.target.clone()),
        ("Host", format!("{} ({}, {} CPUs)", e.host, e.os, e.cpus)),
        (
            "Runs",
            format!("{}; {} repetitions per cell", super::fmt_runs(c), c.repeat),
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
    if !c.pg_bin.is_empty() {
        items.push(("Server builds (factor)", list(c.pg_bin.clone())));
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
    out.push_str("<dl class=\"meta\">\n");
    for (k, v) in items {
        let _ = writeln!(out, "<div><dt>{}</dt><dd>{}</dd></div>", esc(k), esc(&v));
    }
    out.push_str("</dl>\n</header>\n");
}

fn summary(m: &ReportModel) -> Option<Section> {
    if m.cells.is_empty() {
        return None;
    }
    let mut notes = String::new();
    for n in sections::summary_notes(m) {
        notes.push(' ');
        notes.push_str(&esc(n));
    }
    let html = format!(
        "<p class=\"note\">One row per cell (combination of factor values). Statistics over complete \
         runs only (interrupted runs are listed but not counted). ± is the half-width of the 95 % \
         confidence interval of the mean (Student t, n − 1 degrees of freedom; n/a with one run). \
         <em>% vs baseline</em> compares mean TPS (committed transactions per second) with the \
         baseline: {} (<span class=\"baseline-swatch\">highlighted</span>); <span class=\"up\">▲</span>/<span \
         class=\"down\">▼</span>: significantly higher/lower by Welch's t-test at p &lt; 0.05 (hover \
         for t, df and p), <span class=\"ns\">n.s.</span>: not significant. Latencies are means over \
         runs of each run's figure. Abort ratio: retried and failed attempts / attempts. Wasted time: \
         share of client time spent in attempts that did not commit. Anomalies: invariant violations \
         over all runs, with the first example.{notes}</p>\n{}",
        esc(&m.baseline),
        table_html(&sections::summary(m))
    );
    section("summary", "Cells", html)
}

/// `(mean - ci95, mean + ci95)` when the interval exists.
fn ci_of(s: &crate::stats::Summary) -> Option<(f64, f64)> {
    s.ci95
        .is_finite()
        .then_some((s.mean - s.ci95, s.mean + s.ci95))
}

fn throughput(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    if cells.iter().all(|c| c.tps.is_none()) {
        return None;
    }
    let mut html = String::new();
    let numeric = f.numeric_varying();
    for &j in &numeric {
        let name = &f.headers[j];
        // One line per combination of the other varying factors.
        let mut keys: Vec<String> = Vec::new();
        let mut points: Vec<Vec<Point>> = Vec::new();
        let mut xs: Vec<f64> = Vec::new();
        let mut y_max: f64 = 0.0;
        for (i, c) in cells.iter().enumerate() {
            let Some(s) = c.tps else { continue };
            let x: f64 = f.values[i][j].parse().unwrap_or(f64::NAN);
            let key = f.label_without(i, Some(j));
            let k = match keys.iter().position(|k| *k == key) {
                Some(k) => k,
                None => {
                    keys.push(key);
                    points.push(Vec::new());
                    keys.len() - 1
                }
            };
            let ci = ci_of(&s);
            y_max = y_max.max(ci.map_or(s.mean, |c| c.1));
            points[k].push(Point { x, y: s.mean, ci });
            xs.push(x);
        }
        let styles: Vec<Style> = (0..keys.len()).map(series_style).collect();
        let lines: Vec<Line> = points
            .into_iter()
            .zip(&styles)
            .map(|(mut pts, style)| {
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                Line {
                    style: *style,
                    points: pts,
                }
            })
            .collect();
        let legend = legend(&keys, &styles, true);
        let x = Axis::at_values(&factor_desc(name), &xs);
        let panel = Panel {
            title: None,
            y: Axis::from_zero("throughput (tx/s)", y_max),
            lines,
        };
        let svg = charts::lines(
            &x,
            &[panel],
            &legend,
            1,
            WIDE,
            420,
            &format!("Throughput against {name}"),
        );
        html.push_str(&figure(
            svg,
            &format!(
                "<strong>Throughput against {}.</strong> Mean committed transactions per second over \
                 each cell's complete runs; error bars: 95 % confidence interval of the mean (none \
                 with a single run). One line per combination of the other factors.",
                esc(name)
            ),
        ));
    }
    if numeric.is_empty() {
        // No numeric factor varies: a bar per cell, coloured by isolation.
        let labels = f.short_labels.clone();
        let levels: Vec<Isolation> = Isolation::ALL
            .into_iter()
            .filter(|l| cells.iter().any(|c| c.cell.isolation == *l))
            .collect();
        let mut max: f64 = 0.0;
        let series: Vec<BarSeries> = levels
            .iter()
            .map(|l| BarSeries {
                name: l.sql().to_string(),
                color: isolation_color(*l),
                values: cells
                    .iter()
                    .map(|c| {
                        let s = c.tps.filter(|_| c.cell.isolation == *l)?;
                        let ci = ci_of(&s);
                        max = max.max(ci.map_or(s.mean, |c| c.1));
                        Some(Bar { value: s.mean, ci })
                    })
                    .collect(),
            })
            .collect();
        let svg = charts::hbars(
            &HBars {
                categories: &labels,
                series,
                stacked: true,
                x: Axis::from_zero("throughput (tx/s)", max),
                labels: ValueLabels::AfterBar(fmt_tps),
                legend: true,
                width: WIDE,
            },
            "Throughput per cell",
        );
        html.push_str(&figure(
            svg,
            "<strong>Throughput per cell.</strong> Mean committed transactions per second over each \
             cell's complete runs, coloured by isolation level; whiskers: 95 % confidence interval of \
             the mean (none with a single run).",
        ));
    }
    section("throughput", "Throughput", html)
}

/// `clients` → `clients (connections)`, and so on.
fn factor_desc(name: &str) -> String {
    match name {
        "clients" => "clients (concurrent sessions)".into(),
        "pool_size" => "pool size (connections)".into(),
        "rate" => "target rate (tx/s)".into(),
        "scale" => "scale factor".into(),
        "max_tries" => "max tries per transaction".into(),
        other => other.into(),
    }
}

/// Colour per isolation level, the same in every chart.
fn isolation_color(l: Isolation) -> plotters::style::RGBColor {
    match l {
        Isolation::ReadCommitted => charts::color(0),
        Isolation::RepeatableRead => charts::color(2),
        Isolation::Serializable => charts::color(1),
    }
}

/// Series `i`'s colour and marker (markers shift after a full palette so
/// that no two of the first 32 series look alike).
fn series_style(i: usize) -> Style {
    Style {
        color: charts::color(i),
        marker: Marker::nth(i + i / charts::PALETTE.len()),
    }
}

fn legend(names: &[String], styles: &[Style], line: bool) -> Vec<LegendItem> {
    names
        .iter()
        .zip(styles)
        .map(|(n, s)| LegendItem {
            name: n.clone(),
            style: *s,
            line,
        })
        .collect()
}

fn latency(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    if cells.iter().all(|c| c.latency.p50.is_none()) {
        return None;
    }
    let labels = f.short_labels.clone();
    let pick = [
        ("p50", charts::color(5)),
        ("p95", charts::color(0)),
        ("p99", charts::color(1)),
    ];
    let mut all = Vec::new();
    let series: Vec<BarSeries> = pick
        .iter()
        .map(|(name, color)| BarSeries {
            name: name.to_string(),
            color: *color,
            values: cells
                .iter()
                .map(|c| {
                    let s = match *name {
                        "p50" => c.latency.p50,
                        "p95" => c.latency.p95,
                        _ => c.latency.p99,
                    }?;
                    let ci = ci_of(&s);
                    all.push(s.mean);
                    all.push(ci.map_or(s.mean, |c| c.1));
                    Some(Bar { value: s.mean, ci })
                })
                .collect(),
        })
        .collect();
    let x = Axis::auto("latency of committed transactions (ms)", &all, 30.0);
    let log_note = if x.log {
        " The axis is logarithmic because the values span more than 30×."
    } else {
        ""
    };
    let svg = charts::hbars(
        &HBars {
            categories: &labels,
            series,
            stacked: false,
            x,
            labels: ValueLabels::AfterBar(fmt_ms),
            legend: true,
            width: WIDE,
        },
        "Latency percentiles per cell",
    );
    let html = figure(
        svg,
        &format!(
            "<strong>Latency percentiles per cell.</strong> p50, p95 and p99 of committed transactions \
             (first attempt start to commit, retries included), mean over complete runs of each run's \
             percentile; whiskers: 95 % confidence interval of that mean.{log_note}"
        ),
    );
    section("latency", "Latency", html)
}

fn failures(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let any_failed = cells.iter().any(|c| !c.failures.is_empty());
    let any_retry = cells
        .iter()
        .any(|c| c.retries_per_commit.unwrap_or(0.0) > 0.0);
    if !any_failed && !any_retry {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut html = String::from("<div class=\"grid2\">\n");
    if any_failed {
        let codes: BTreeSet<&str> = cells
            .iter()
            .flat_map(|c| c.failures.keys().map(String::as_str))
            .collect();
        let totals: Vec<(u64, f64)> = cells.iter().map(sections::failure_totals).collect();
        let series: Vec<BarSeries> = codes
            .iter()
            .enumerate()
            .map(|(k, code)| BarSeries {
                name: format!("{code} {}", sqlstate_name(code)),
                color: charts::color(k + 1),
                values: cells
                    .iter()
                    .zip(&totals)
                    .map(|(c, (tx, _))| {
                        let n = *c.failures.get(*code)?;
                        (*tx > 0).then(|| Bar {
                            value: 100.0 * n as f64 / *tx as f64,
                            ci: None,
                        })
                    })
                    .collect(),
            })
            .collect();
        let max = cells
            .iter()
            .filter_map(|c| c.failure_pct)
            .fold(0.0, f64::max);
        let svg = charts::hbars(
            &HBars {
                categories: &labels,
                series,
                stacked: true,
                x: Axis::from_zero("failed transactions (% of transactions)", max),
                labels: ValueLabels::Inside(|v| fmt_fixed(v, 2)),
                legend: true,
                width: HALF,
            },
            "Failed transactions by SQLSTATE per cell",
        );
        html.push_str(&figure(
            svg,
            "<strong>Failures by SQLSTATE.</strong> Transactions that gave up (retries exhausted or \
             error not retried), by the SQLSTATE of their last error, as % of all transactions of the \
             cell's complete runs; the stack is the cell's failure rate.",
        ));
    }
    if any_retry {
        let max = cells
            .iter()
            .filter_map(|c| c.retries_per_commit)
            .fold(0.0, f64::max);
        let svg = charts::hbars(
            &HBars {
                categories: &labels,
                series: vec![BarSeries {
                    name: "retries per commit".into(),
                    color: charts::color(3),
                    values: cells
                        .iter()
                        .map(|c| c.retries_per_commit.map(|v| Bar { value: v, ci: None }))
                        .collect(),
                }],
                stacked: false,
                x: Axis::from_zero("retries per committed transaction (ratio)", max),
                labels: ValueLabels::AfterBar(|v| fmt_fixed(v, 3)),
                legend: false,
                width: HALF,
            },
            "Retries per commit per cell",
        );
        html.push_str(&figure(
            svg,
            "<strong>Retries per commit.</strong> Σ retried attempts / Σ committed transactions over \
             the cell's complete runs: extra work per unit of goodput.",
        ));
    }
    html.push_str("</div>\n");
    if any_failed {
        html.push_str(&table_html(&sections::failures(m)));
    } else {
        html.push_str("<p class=\"note\">No transaction failed.</p>\n");
    }
    section("failures", "Failures and retries", html)
}

fn transactions(m: &ReportModel) -> Option<Section> {
    let t = sections::transactions(m);
    if t.is_empty() {
        return None;
    }
    let html = format!(
        "<p class=\"note\">Pooled over each cell's complete runs: counts summed, latency from the runs' \
         merged histograms. User aborts are rollbacks the workload makes on purpose (e.g. an overdraft \
         refused), not failures.</p>\n{}",
        table_html(&t)
    );
    section("types", "Transactions by type", html)
}

/// Per-command latency of pgbench scripts; only when a workload timed
/// commands.
fn commands(m: &ReportModel) -> Option<Section> {
    let t = sections::commands(m);
    if t.is_empty() {
        return None;
    }
    let html = format!(
        "<p class=\"note\">Like <code>pgbench -r</code>: every execution of each script command in the \
         measured window of a cell's complete runs, retried attempts included; mean time per execution. \
         Failures: executions that raised the error ending their attempt.</p>\n{}",
        table_html(&t)
    );
    section("commands", "Latency by command", html)
}

fn time_series(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    // Complete runs with a series; a cell without any shows its runs.
    let shown: Vec<(usize, Vec<&RunRecord>)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let mut runs: Vec<&RunRecord> = c
                .complete_runs()
                .filter(|r| !r.per_second.is_empty())
                .collect();
            if runs.is_empty() {
                runs = c
                    .runs
                    .iter()
                    .copied()
                    .filter(|r| !r.per_second.is_empty())
                    .collect();
            }
            (!runs.is_empty()).then_some((i, runs))
        })
        .collect();
    if shown.is_empty() {
        return None;
    }
    let all = shown
        .iter()
        .flat_map(|(_, runs)| runs.iter().flat_map(|r| &r.per_second));
    let (mut t_max, mut tps_max, mut p99_max) = (0.0f64, 0.0f64, 0.0f64);
    for p in all {
        t_max = t_max.max(p.t_s);
        tps_max = tps_max.max(p.tps);
        p99_max = p99_max.max(p.p99_ms);
    }
    let x = Axis::linear("time in the measured window (s)", 0.0, t_max.max(1.0));
    let mut html = String::from(
        "<p class=\"note\">Committed transactions per second and the p99 latency of each second's \
         commits, for every complete run of the cell overlaid (a cell without a complete run shows \
         its interrupted ones). All cells share the y axes, so heights compare across charts.</p>\n\
         <div class=\"grid2\">\n",
    );
    for (i, runs) in &shown {
        let styles: Vec<Style> = (0..runs.len())
            .map(|k| Style {
                color: charts::color(k),
                marker: Marker::None,
            })
            .collect();
        let names: Vec<String> = runs
            .iter()
            .map(|r| {
                format!(
                    "run {} (repetition {}){}",
                    r.index,
                    r.repetition,
                    if r.complete { "" } else { ", interrupted" }
                )
            })
            .collect();
        let series = |get: fn(&crate::model::SecondPoint) -> f64| -> Vec<Line> {
            runs.iter()
                .zip(&styles)
                .map(|(r, s)| Line {
                    style: *s,
                    points: r
                        .per_second
                        .iter()
                        .map(|p| Point {
                            x: p.t_s,
                            y: get(p),
                            ci: None,
                        })
                        .collect(),
                })
                .collect()
        };
        let panels = [
            Panel {
                title: Some("throughput".into()),
                y: Axis::from_zero("tx/s", tps_max),
                lines: series(|p| p.tps),
            },
            Panel {
                title: Some("p99 latency".into()),
                y: Axis::from_zero("ms", p99_max),
                lines: series(|p| p.p99_ms),
            },
        ];
        let label = f.label(*i);
        let svg = charts::lines(
            &x,
            &panels,
            &legend(&names, &styles, true),
            1,
            HALF,
            230,
            &format!("Per-second throughput and p99 latency of {label}"),
        );
        match svg {
            Ok(svg) => {
                let _ = write!(
                    html,
                    "<figure>\n<figcaption class=\"title\"><strong>{}</strong></figcaption>\n{svg}</figure>\n",
                    esc(&label)
                );
            }
            Err(e) => {
                let _ = writeln!(html, "<p class=\"warn\">{}</p>", esc(&e));
            }
        }
    }
    html.push_str("</div>\n");
    section("timeseries", "Per-second time series", html)
}

fn counters(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let (rates, names) = (&m.counter_rates, &m.counter_names);
    if names.is_empty() {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut html = String::from(
        "<p class=\"note\">pg_stat_database of the run's database, sampled every sample interval: \
         rate per second of each interval. Counters can lag by up to ~1 s (PostgreSQL 15+ flushes \
         backend statistics about once a second).</p>\n",
    );
    // Over time: one panel per counter that moved, one line per cell
    // (its first complete run).
    let firsts: Vec<(usize, &RunRecord)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            c.complete_runs()
                .find(|r| !r.server.stat_database.is_empty())
                .map(|r| (i, r))
        })
        .take(MAX_LINES)
        .collect();
    let moved: Vec<&String> = names
        .iter()
        .filter(|n| {
            firsts.iter().any(|(_, r)| {
                r.server
                    .stat_database
                    .iter()
                    .any(|s| s.rate.get(*n).is_some_and(|v| *v != 0.0))
            })
        })
        .collect();
    if !firsts.is_empty() && !moved.is_empty() {
        let styles: Vec<Style> = (0..firsts.len()).map(series_style).collect();
        let t_max = firsts
            .iter()
            .flat_map(|(_, r)| r.server.stat_database.iter().map(|s| s.t_s))
            .fold(1.0, f64::max);
        let x = Axis::linear("time (s)", 0.0, t_max);
        let panels: Vec<Panel> = moved
            .iter()
            .map(|name| {
                let lines: Vec<Line> = firsts
                    .iter()
                    .zip(&styles)
                    .map(|((_, r), s)| Line {
                        style: *s,
                        points: r
                            .server
                            .stat_database
                            .iter()
                            .map(|iv| Point {
                                x: iv.t_s,
                                y: iv.rate.get(*name).copied().unwrap_or(f64::NAN),
                                ci: None,
                            })
                            .collect(),
                    })
                    .collect();
                let max = lines
                    .iter()
                    .flat_map(|l| l.points.iter().map(|p| p.y))
                    .filter(|v| v.is_finite())
                    .fold(0.0, f64::max);
                Panel {
                    title: Some(format!("{name} (/s)")),
                    y: Axis::from_zero("per s", max.max(1.0)),
                    lines,
                }
            })
            .collect();
        let names: Vec<String> = firsts.iter().map(|(i, _)| labels[*i].clone()).collect();
        let svg = charts::lines(
            &x,
            &panels,
            &legend(&names, &styles, true),
            3,
            WIDE,
            210,
            "pg_stat_database rates over time",
        );
        let more = if cells.len() > firsts.len() {
            format!(
                " Lines for the first {} cells with samples; the table covers all.",
                firsts.len()
            )
        } else {
            String::new()
        };
        html.push_str(&figure(
            svg,
            &format!(
                "<strong>Server counters over time.</strong> Rate per second of each pg_stat_database \
                 counter that moved, per sample interval (x: end of the interval), in the first \
                 complete run of each cell.{more}"
            ),
        ));
    }
    // Few cells: a row per counter (as in report.md); many: a row per cell.
    let t = if cells.len() <= 6 {
        sections::counters(m, &labels)
    } else {
        let mut cols = vec![Column::text("cell")];
        cols.extend(names.iter().map(|n| Column::num(format!("{n} (/s)"))));
        let mut t = Table::new(cols);
        for (i, r) in rates.iter().enumerate() {
            let mut row = vec![sections::cell_value(m, i)];
            row.extend(names.iter().map(|n| {
                let v = r.get(n).copied();
                Value::opt(v, fmt_opt(v, 1))
            }));
            t.row(row);
        }
        t
    };
    let _ = write!(
        html,
        "<p class=\"note\">Mean rate per second: time-weighted over each run's sample intervals, then \
         averaged over complete runs.</p>\n{}",
        table_html(&t)
    );
    section("counters", "Server counters (pg_stat_database)", html)
}

fn wait_events(m: &ReportModel) -> Option<Section> {
    let f = &m.factors;
    let per_cell = &m.wait_events;
    if per_cell.iter().all(|(total, _)| *total == 0) {
        return None;
    }
    // The most frequent events overall get a colour; the rest is "other".
    let mut overall: BTreeMap<&str, f64> = BTreeMap::new();
    for (_, shares) in per_cell {
        for w in shares {
            *overall.entry(w.event.as_str()).or_default() += w.pct;
        }
    }
    let mut ranked: Vec<(&str, f64)> = overall.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let keep = if ranked.len() > WAIT_BUCKETS + 1 {
        WAIT_BUCKETS
    } else {
        ranked.len()
    };
    let named: Vec<&str> = ranked.iter().take(keep).map(|(e, _)| *e).collect();
    let mut series: Vec<BarSeries> = named
        .iter()
        .enumerate()
        .map(|(k, event)| BarSeries {
            name: event.to_string(),
            color: charts::color(k),
            values: per_cell
                .iter()
                .map(|(_, shares)| {
                    shares.iter().find(|w| w.event == *event).map(|w| Bar {
                        value: w.pct,
                        ci: None,
                    })
                })
                .collect(),
        })
        .collect();
    if ranked.len() > keep {
        series.push(BarSeries {
            name: "other".into(),
            color: GREY,
            values: per_cell
                .iter()
                .map(|(_, shares)| {
                    let v: f64 = shares
                        .iter()
                        .filter(|w| !named.contains(&w.event.as_str()))
                        .map(|w| w.pct)
                        .sum();
                    (v > 0.0).then_some(Bar { value: v, ci: None })
                })
                .collect(),
        });
    }
    let labels = f.short_labels.clone();
    let mut x = Axis::linear("share of backend samples (%)", 0.0, 100.0);
    x.hi = 100.0;
    let svg = charts::hbars(
        &HBars {
            categories: &labels,
            series,
            stacked: true,
            x,
            labels: ValueLabels::Inside(|v| format!("{v:.0}%")),
            legend: true,
            width: WIDE,
        },
        "Wait events per cell",
    );
    let mut html = figure(
        svg,
        "<strong>Wait events.</strong> Share of the workload's backend observations (pg_stat_activity \
         sampled once a second) by <code>wait_event_type:wait_event</code>, over each cell's complete \
         runs; <code>CPU</code>: active and not waiting. The most frequent events overall are named, the \
         rest is pooled as \"other\".",
    );
    let t = sections::wait_events(m, TOP_WAIT_EVENTS);
    let _ = write!(
        html,
        "<details><summary>Top {TOP_WAIT_EVENTS} wait events per cell (table)</summary>\n{}</details>\n",
        table_html(&t)
    );
    section("waits", "Wait events", html)
}

/// Mean over the cell's sampled complete runs of each relation's mean
/// SIRead lock count, and the largest count seen.
fn siread_by_relation(c: &CellSummary) -> Vec<(String, f64, u64)> {
    let sampled: Vec<&RunRecord> = c
        .complete_runs()
        .filter(|r| r.server.siread_locks.samples > 0)
        .collect();
    let mut out: BTreeMap<String, (f64, u64)> = BTreeMap::new();
    for run in &sampled {
        for (rel, s) in &run.server.siread_locks.by_relation {
            let e = out.entry(rel.clone()).or_default();
            e.0 += s.mean / sampled.len() as f64;
            e.1 = e.1.max(s.max);
        }
    }
    let mut v: Vec<(String, f64, u64)> = out.into_iter().map(|(k, (m, x))| (k, m, x)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn siread_locks(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let ser: Vec<usize> = (0..cells.len())
        .filter(|i| cells[*i].cell.isolation == Isolation::Serializable)
        .collect();
    if ser.is_empty() {
        return None;
    }
    let by: Vec<&BTreeMap<String, crate::model::CountStat>> =
        ser.iter().map(|i| &m.siread[*i]).collect();
    let mut grans: Vec<String> = ["relation", "page", "tuple"].map(String::from).to_vec();
    for by_gran in &by {
        for g in by_gran.keys() {
            if !grans.contains(g) {
                grans.push(g.clone());
            }
        }
    }
    grans.retain(|g| by.iter().any(|m| m.contains_key(g)));
    let labels: Vec<String> = ser.iter().map(|i| f.label(*i)).collect();
    let mut html = String::new();
    if !grans.is_empty() {
        let mut all = Vec::new();
        let series: Vec<BarSeries> = grans
            .iter()
            .enumerate()
            .map(|(k, g)| BarSeries {
                name: g.clone(),
                color: charts::color([0, 3, 1, 4][k % 4]),
                values: by
                    .iter()
                    .map(|m| {
                        m.get(g).map(|s| {
                            all.push(s.mean);
                            Bar {
                                value: s.mean,
                                ci: None,
                            }
                        })
                    })
                    .collect(),
            })
            .collect();
        let x = Axis::auto("SIRead locks held, mean count (locks)", &all, 30.0);
        let log = if x.log {
            " Logarithmic axis: the counts span more than 30×."
        } else {
            ""
        };
        let svg = charts::hbars(
            &HBars {
                categories: &labels,
                series,
                stacked: false,
                x,
                labels: ValueLabels::AfterBar(|v| fmt_fixed(v, 1)),
                legend: true,
                width: WIDE,
            },
            "SIRead locks by granularity per serializable cell",
        );
        html.push_str(&figure(
            svg,
            &format!(
                "<strong>SIRead (predicate) locks by granularity</strong>, serializable cells: \
                 pg_locks rows with mode SIReadLock sampled once a second, mean count over each run's \
                 samples averaged over complete runs. Many tuple locks promote to page and relation \
                 locks (max_pred_locks_per_*), which widens the conflicts SSI detects.{log}"
            ),
        ));
    }
    let t = sections::siread_locks(m, &ser);
    html.push_str(&table_html(&t));
    let mut rel = Table::new(vec![
        Column::text("cell"),
        Column::text("relation (granularity)"),
        Column::num("mean (locks)"),
        Column::num("max (locks)"),
    ]);
    for &i in &ser {
        for (name, mean, max) in siread_by_relation(&cells[i]).into_iter().take(10) {
            rel.row(vec![
                sections::cell_value(m, i),
                Value::text(name),
                Value::num(mean, fmt_fixed(mean, 1)),
                Value::count(max),
            ]);
        }
    }
    if !rel.rows.is_empty() {
        let _ = write!(
            html,
            "<details><summary>By relation (top 10 per cell)</summary>\n{}</details>\n",
            table_html(&rel)
        );
    }
    section("siread", "SIRead locks", html)
}

/// Mean over complete runs of a wait summary's `mean`, `p99`, `max` (max
/// of maxima) and summed count; None when no run has one.
fn wait_stats(
    c: &CellSummary,
    get: fn(&RunRecord) -> Option<WaitSummary>,
) -> Option<(f64, f64, f64, u64)> {
    let v: Vec<WaitSummary> = c.complete_runs().filter_map(get).collect();
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    Some((
        v.iter().map(|w| w.mean).sum::<f64>() / n,
        v.iter().map(|w| w.p99).sum::<f64>() / n,
        v.iter().map(|w| w.max).fold(0.0, f64::max),
        v.iter().map(|w| w.count).sum(),
    ))
}

fn pool_and_lag(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let pool: Vec<Option<(f64, f64, f64, u64)>> = cells
        .iter()
        .map(|c| wait_stats(c, |r| r.pool_wait_ms))
        .collect();
    let lag: Vec<Option<(f64, f64, f64, u64)>> = cells
        .iter()
        .map(|c| wait_stats(c, |r| r.schedule_lag_ms))
        .collect();
    let has_pool = pool.iter().any(Option::is_some);
    let has_lag = lag.iter().any(Option::is_some);
    if !has_pool && !has_lag {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut series = Vec::new();
    let mut all = Vec::new();
    let mut add = |name: &str, color, data: &[Option<(f64, f64, f64, u64)>], p99: bool| {
        series.push(BarSeries {
            name: name.into(),
            color,
            values: data
                .iter()
                .map(|d| {
                    d.map(|(mean, p, _, _)| {
                        let value = if p99 { p } else { mean };
                        all.push(value);
                        Bar { value, ci: None }
                    })
                })
                .collect(),
        });
    };
    if has_pool {
        add("pool wait mean", charts::color(5), &pool, false);
        add("pool wait p99", charts::color(0), &pool, true);
    }
    if has_lag {
        add("schedule lag mean", charts::color(3), &lag, false);
        add("schedule lag p99", charts::color(1), &lag, true);
    }
    let x = Axis::auto("wait (ms)", &all, 30.0);
    let log = if x.log {
        " Logarithmic axis: the values span more than 30×."
    } else {
        ""
    };
    let svg = charts::hbars(
        &HBars {
            categories: &labels,
            series,
            stacked: false,
            x,
            labels: ValueLabels::AfterBar(fmt_ms),
            legend: true,
            width: WIDE,
        },
        "Pool wait and schedule lag per cell",
    );
    let mut html = figure(
        svg,
        &format!(
            "<strong>Pool wait and schedule lag.</strong> Pool wait: time a client waited for a pooled \
             connection, per checkout. Schedule lag (open loop): how late transactions started after \
             their scheduled arrival. Mean over complete runs of each run's mean and p99.{log}"
        ),
    );
    let mut cols = vec![Column::text("cell")];
    if has_pool {
        cols.extend(
            [
                "pool wait mean (ms)",
                "pool wait p99 (ms)",
                "pool wait max (ms)",
                "checkouts",
            ]
            .map(Column::num),
        );
    }
    if has_lag {
        cols.extend(
            [
                "schedule lag mean (ms)",
                "schedule lag p99 (ms)",
                "schedule lag max (ms)",
                "skipped (transactions)",
                "late (transactions)",
            ]
            .map(Column::num),
        );
    }
    let mut t = Table::new(cols);
    let ms = |v: f64| Value::num(v, fmt_ms(v));
    let waits = |d: Option<(f64, f64, f64, u64)>| match d {
        Some((mean, p99, max, n)) => vec![ms(mean), ms(p99), ms(max), Value::count(n)],
        None => vec![Value::text(NA); 4],
    };
    for (i, c) in cells.iter().enumerate() {
        let mut row = vec![sections::cell_value(m, i)];
        if has_pool {
            row.extend(waits(pool[i]));
        }
        if has_lag {
            row.extend(waits(lag[i]).into_iter().take(3));
            row.extend([Value::count(c.skipped), Value::count(c.late)]);
        }
        t.row(row);
    }
    html.push_str(&table_html(&t));
    section("pool", "Pool wait and schedule lag", html)
}

/// Per cell and invariant: how many runs checked it, how many violated
/// it, and an example.
fn invariant_summary(m: &ReportModel) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::text("invariant"),
        Column::text("result"),
        Column::num("runs checked"),
        Column::num("violations"),
        Column::long("example (first violation, else last check)"),
    ]);
    for (i, c) in m.cells.iter().enumerate() {
        let mut names: Vec<&str> = Vec::new();
        for run in &c.runs {
            for inv in &run.invariants {
                if !names.contains(&inv.name.as_str()) {
                    names.push(&inv.name);
                }
            }
        }
        for name in names {
            let checks: Vec<_> = c
                .runs
                .iter()
                .flat_map(|run| run.invariants.iter().filter(|x| x.name == name))
                .collect();
            let bad: Vec<_> = checks.iter().filter(|x| !x.ok).collect();
            let violations: u64 = bad.iter().map(|x| x.violations).sum();
            let result = if bad.is_empty() {
                Value::text("ok").mark(Mark::Good)
            } else {
                let text = format!("VIOLATED in {} of {} runs", bad.len(), checks.len());
                Value::text(text).mark(Mark::Bad)
            };
            let example = bad
                .first()
                .map(|x| &x.detail)
                .or(checks.last().map(|x| &x.detail))
                .map_or_else(Value::default, |d| Value::code(d.clone()));
            t.row(vec![
                sections::cell_value(m, i),
                Value::text(name),
                result,
                Value::count(checks.len() as u64),
                Value::count(violations),
                example,
            ]);
        }
    }
    t
}

fn invariants(m: &ReportModel) -> Option<Section> {
    if m.results.runs.iter().all(|run| run.invariants.is_empty()) {
        return None;
    }
    let html = format!(
        "<p class=\"note\">Checked after every run, interrupted ones included. A violation is an \
         anomaly the isolation level or strategy let through.</p>\n{}<details><summary>Every check \
         of every run</summary>\n{}</details>\n",
        table_html(&invariant_summary(m)),
        table_html(&sections::invariant_checks(m))
    );
    section("invariants", "Invariants and anomalies", html)
}

fn plans(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let groups = &m.plans;
    if groups.is_empty() {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut html = String::from(
        "<p class=\"note\">EXPLAIN of each workload statement at the start of the first complete run \
         of each cell; each distinct plan once.</p>\n",
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
    section("plans", "Plans", html)
}

fn runs(m: &ReportModel) -> Option<Section> {
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
fn external_load(m: &ReportModel) -> Option<Section> {
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

fn problems(m: &ReportModel) -> Option<Section> {
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

/// The report's stylesheet (its own file, so it reads and lints as CSS).
const CSS: &str = include_str!("html/style.css");

/// Sorts a table by the clicked column (numbers by value, else text).
const JS: &str = include_str!("html/sort.js");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The `<tbody>` rows of the table with `id`.
    fn table_rows(html: &str, id: &str) -> usize {
        let start = html
            .find(&format!("<table class=\"sortable\" id=\"{id}\""))
            .unwrap();
        let body = &html[start..];
        let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
        body.matches("<tr").count()
    }

    fn assert_self_contained(html: &str) {
        assert!(!html.contains("http://") && !html.contains("https://"));
        for attr in ["src=", "href="] {
            for (i, _) in html.match_indices(attr) {
                let v = &html[i + attr.len()..];
                assert!(
                    v.starts_with("\"#"),
                    "{attr} to a resource: {}",
                    &v[..v.len().min(60)]
                );
            }
        }
        assert!(!html.contains("@import") && !html.contains("url("));
        assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    }

    #[test]
    fn fixture_renders_self_contained() {
        let r = fixture::results();
        let html = render(&r);
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert_self_contained(&html);
        assert!(html.contains("INCOMPLETE"));
        assert!(html.matches("<svg").count() >= 4, "charts");
        assert_eq!(table_rows(&html, "cells"), 2);
        // The baseline row is marked, the other cell significantly higher.
        assert!(html.contains("<tr class=\"baseline\">"));
        assert!(html.contains("+50.0% ▲"), "significance mark");
        // Same formatters as the Markdown report.
        assert!(html.contains(&crate::report::fmt_tps_ci(
            crate::report::cells::aggregate(&r)[1].tps.as_ref()
        )));
        // No numeric factor varies: throughput as bars, not against clients.
        assert!(html.contains("Throughput per cell"));
        assert!(!html.contains("Throughput against"));
        // Sections without data are left out.
        assert!(!html.contains("id=\"pool\"") && !html.contains("id=\"timeseries\""));
        for id in [
            "latency",
            "failures",
            "counters",
            "waits",
            "siread",
            "invariants",
            "plans",
        ] {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
    }

    #[test]
    fn strings_from_results_are_escaped() {
        let mut r = fixture::results();
        let evil = "<script>alert(\"x\")</script>";
        for run in &mut r.runs {
            run.cell.strategy = evil.into();
            run.server.plans[0].sql = format!("SELECT '{evil}'");
            run.errors.push(evil.into());
        }
        r.config.strategies = vec![evil.into()];
        r.config.target = evil.into();
        let html = render(&r);
        assert!(!html.contains("<script>alert"), "unescaped payload");
        assert!(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
        assert_eq!(
            html.matches("<script>").count(),
            1,
            "only the page's own script"
        );
        assert_self_contained(&html);
    }

    #[test]
    fn throughput_against_clients_when_clients_vary() {
        let r = fixture::with_clients(fixture::results());
        let html = render(&r);
        assert_self_contained(&html);
        assert!(html.contains("aria-label=\"Throughput against clients\""));
        assert!(!html.contains("Throughput per cell"));
        assert!(
            html.contains("clients (concurrent sessions)"),
            "x axis label"
        );
        assert!(html.contains("throughput (tx/s)"), "y axis label");
        assert_eq!(table_rows(&html, "cells"), 6);
        // Each clients value's cells have their own baseline.
        assert_eq!(html.matches("<tr class=\"baseline\">").count(), 3);
        // One line per isolation level: the legend names them.
        let chart = &html[html.find("Throughput against clients").unwrap()..];
        let chart = &chart[..chart.find("</svg>").unwrap()];
        assert!(chart.contains(">\nrc\n</text>") && chart.contains(">\nser\n</text>"));
    }

    #[test]
    fn optional_sections_render_with_data() {
        let html = render(&fixture::rich());
        assert_self_contained(&html);
        for id in ["timeseries", "pool", "siread"] {
            assert!(html.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
        assert!(html.contains("pool wait p99 (ms)"));
        assert!(html.contains("pgbench_accounts (tuple)"));
    }

    #[test]
    fn empty_results_render() {
        let mut r = fixture::results();
        r.runs.clear();
        r.load.clear();
        let html = render(&r);
        assert!(html.contains("No runs recorded."));
        assert!(!html.contains("<svg"));
        assert_self_contained(&html);
    }

    /// Writes the fixture's and the rich variant's pages (and screenshots)
    /// to `$ISOBENCH_HTML_OUT` for a person to look at.
    #[test]
    #[ignore = "writes sample pages for manual inspection"]
    fn write_sample_pages() {
        let dir = std::path::PathBuf::from(
            std::env::var("ISOBENCH_HTML_OUT").unwrap_or_else(|_| "/tmp/isobench-html".into()),
        );
        std::fs::create_dir_all(&dir).unwrap();
        for (name, r) in [
            ("fixture", fixture::results()),
            ("rich", fixture::rich()),
            ("big", fixture::big()),
        ] {
            let page = dir.join(format!("{name}.html"));
            std::fs::write(&page, render(&r)).unwrap();
            let png = dir.join(format!("{name}.png"));
            let profile = tempfile::tempdir().unwrap();
            let status = browser::run(
                &[
                    &format!("--window-size=1280,{}", 2400),
                    &format!("--screenshot={}", png.display()),
                    &format!("file://{}", page.display()),
                ],
                profile.path(),
                None,
            );
            assert!(status.success());
        }
    }

    mod browser {
        //! Loads the page in headless Chromium.
        use std::path::Path;
        use std::process::{Command, ExitStatus, Stdio};
        use std::time::{Duration, Instant};

        pub const CHROMIUM: &str = "/usr/bin/chromium";
        const TIMEOUT: Duration = Duration::from_secs(60);

        /// Runs Chromium headless with `args`, a fresh profile in
        /// `profile`, stdout to `stdout` (a file: a DOM dump outgrows a
        /// pipe); killed after 60 s.
        pub fn run(args: &[&str], profile: &Path, stdout: Option<&Path>) -> ExitStatus {
            let out = match stdout {
                Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
                None => Stdio::null(),
            };
            let mut child = Command::new(CHROMIUM)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                ])
                .arg(format!("--user-data-dir={}", profile.display()))
                .args(args)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {CHROMIUM}: {e}"));
            let start = Instant::now();
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    return status;
                }
                if start.elapsed() > TIMEOUT {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("{CHROMIUM} did not finish within {TIMEOUT:?}: killed");
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }

        /// (width, height, distinct RGB colours, share of non-white pixels).
        pub fn png_stats(path: &Path) -> (u32, u32, usize, f64) {
            let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
            let mut decoder = png::Decoder::new(file);
            decoder.set_transformations(png::Transformations::EXPAND);
            let mut reader = decoder.read_info().unwrap();
            let mut buf = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut buf).unwrap();
            assert_eq!(info.bit_depth, png::BitDepth::Eight, "{info:?}");
            let spp = info.color_type.samples();
            assert!(spp >= 3, "{info:?}");
            let mut colours = std::collections::HashSet::new();
            let mut non_white = 0usize;
            let pixels = buf[..info.buffer_size()].chunks_exact(spp);
            let n = pixels.len();
            for p in pixels {
                colours.insert((p[0], p[1], p[2]));
                if p[..3].iter().any(|v| *v < 240) {
                    non_white += 1;
                }
            }
            (
                info.width,
                info.height,
                colours.len(),
                non_white as f64 / n as f64,
            )
        }
    }

    /// The fixture's page in a real browser: it loads, draws, and parses
    /// into the expected DOM.
    #[test]
    fn renders_in_headless_chromium() {
        if std::env::var("ISOBENCH_SKIP_BROWSER").is_ok_and(|v| v == "1") {
            eprintln!("ISOBENCH_SKIP_BROWSER=1: browser check skipped");
            return;
        }
        assert!(
            Path::new(browser::CHROMIUM).exists(),
            "{} is missing: install it with `apt-get install chromium` (or set \
             ISOBENCH_SKIP_BROWSER=1 to skip this check)",
            browser::CHROMIUM
        );
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("report.html");
        std::fs::write(&page, render(&fixture::results())).unwrap();
        let url = format!("file://{}", page.display());
        let png = dir.path().join("page.png");

        let profile = tempfile::tempdir().unwrap();
        let status = browser::run(
            &[
                "--window-size=1280,2400",
                &format!("--screenshot={}", png.display()),
                &url,
            ],
            profile.path(),
            None,
        );
        assert!(status.success(), "chromium --screenshot: {status}");
        assert!(png.exists(), "no screenshot written");
        let (w, h, colours, ink) = browser::png_stats(&png);
        assert_eq!((w, h), (1280, 2400));
        assert!(
            colours > 100,
            "only {colours} distinct colours: a blank page?"
        );
        assert!(ink > 0.03, "only {:.1} % non-white pixels", ink * 100.0);

        let profile = tempfile::tempdir().unwrap();
        let dom = dir.path().join("dom.html");
        let status = browser::run(&["--dump-dom", &url], profile.path(), Some(&dom));
        assert!(status.success(), "chromium --dump-dom: {status}");
        let dom = std::fs::read_to_string(&dom).unwrap();
        assert!(
            dom.contains("<table class=\"sortable\" id=\"cells\""),
            "cell table"
        );
        assert!(dom.matches("<svg").count() >= 4, "svg charts");
        assert!(dom.contains("<text"), "chart text");
        // The script ran: every sortable header is in place, nothing broke
        // the parse (the footer is the last element).
        assert!(dom.contains("<footer>"));
    }

    use std::path::Path;
}
