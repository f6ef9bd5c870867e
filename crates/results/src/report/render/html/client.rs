//! Sections of what the clients measured: throughput against the factors,
//! latency percentiles, failures and retries, transaction types, script
//! commands, per-second time series, pool wait and schedule lag, with the
//! chart helpers (colours, legends) they share.

use std::collections::BTreeSet;

use maud::{Markup, PreEscaped, html};

use crate::model::Isolation;
use crate::model::sqlstate_name;
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::model::ReportModel;
use crate::report::render::html::charts;
use crate::report::render::html::charts::ValueLabels;
use crate::report::render::html::charts::{
    Axis, Bar, BarSeries, HBars, Line, Marker, Panel, Point, Style, XMark,
};
use crate::report::render::html::{HALF, Section, WIDE};
use crate::report::render::html::{figure, legend, note, section, series_style, table_html};
use crate::report::tables::table::{Column, Table, Value};
use crate::report::{format::NA, format::fmt_fixed, format::fmt_ms, format::fmt_tps, tables};
use crate::store::{RunRecord, WaitSummary};

/// `(mean - ci95, mean + ci95)` when the interval exists.
fn ci_of(s: &crate::stats::Summary) -> Option<(f64, f64)> {
    s.ci95
        .is_finite()
        .then_some((s.mean - s.ci95, s.mean + s.ci95))
}

pub(super) fn throughput(m: &ReportModel) -> Option<Section> {
    if m.cells.iter().all(|c| c.tps.is_none()) {
        return None;
    }
    let numeric = m.factors.numeric_varying();
    let html = if numeric.is_empty() {
        throughput_bars(m)
    } else {
        html! { @for &j in &numeric { (throughput_against(m, j)) } }
    };
    section("throughput", "Throughput", html)
}

/// The chart of throughput against numeric factor `j`: one line per
/// combination of the other varying factors.
fn throughput_against(m: &ReportModel, j: usize) -> Markup {
    let (cells, f) = (&m.cells[..], &m.factors);
    let name = &f.headers[j];
    // One line per combination of the other varying factors.
    let mut keys: Vec<String> = Vec::new();
    let mut points: Vec<Vec<Point>> = Vec::new();
    let mut xs: Vec<f64> = Vec::new();
    let mut y_max: f64 = 0.0;
    for (i, c) in cells.iter().enumerate() {
        let Some(&s) = c.headline_tps() else {
            continue;
        };
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
        y: Axis::from_zero(&throughput_axis(m), y_max),
        lines,
        marks: Vec::new(),
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
    figure(
        svg,
        html! {
            strong { "Throughput against " (name) "." } " Mean committed transactions per second \
             over each cell's complete runs" (effective_caption(m)) "; error bars: 95 % confidence \
             interval of the mean (none with a single run). One line per combination of the other \
             factors."
        },
    )
}

/// Throughput as one bar per cell, coloured by isolation level (when no
/// numeric factor varies).
fn throughput_bars(m: &ReportModel) -> Markup {
    let (cells, f) = (&m.cells[..], &m.factors);
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
                    let s = c.headline_tps().filter(|_| c.cell.isolation == *l)?;
                    let ci = ci_of(s);
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
            x: Axis::from_zero(&throughput_axis(m), max),
            labels: ValueLabels::AfterBar(fmt_tps),
            legend: true,
            width: WIDE,
        },
        "Throughput per cell",
    );
    figure(
        svg,
        html! {
            strong { "Throughput per cell." } " Mean committed transactions per second over each \
             cell's complete runs" (effective_caption(m)) ", coloured by isolation level; whiskers: \
             95 % confidence interval of the mean (none with a single run)."
        },
    )
}

/// The throughput charts' axis: effective throughput when a cell's
/// effective TPS is below its TPS (the charts plot
/// [`crate::report::analysis::cells::CellSummary::headline_tps`]).
fn throughput_axis(m: &ReportModel) -> String {
    if m.effective_differs() {
        "effective throughput (tx/s)".into()
    } else {
        "throughput (tx/s)".into()
    }
}

/// What the throughput captions add when a cell's effective TPS is below
/// its TPS.
fn effective_caption(m: &ReportModel) -> &'static str {
    if m.effective_differs() {
        " whose work is in the database (effective TPS: the history check found committed \
         transactions without their pgbench_history row; the reported TPS is in Cells)"
    } else {
        ""
    }
}

/// `clients` → `clients (connections)`, and so on.
fn factor_desc(name: &str) -> String {
    match name {
        "clients" => "clients (concurrent sessions)".into(),
        "pool_size" => "pool size (connections)".into(),
        "pooler" => "connection pooler".into(),
        "pooler_size" => "pgbouncer pool size (server connections)".into(),
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

pub(super) fn latency(m: &ReportModel) -> Option<Section> {
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
    let log_note = charts::log_note(&x, "values");
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
        html! {
            strong { "Latency percentiles per cell." } " p50, p95 and p99 of committed transactions \
             (first attempt start to commit, retries included), mean over complete runs of each \
             run's percentile; whiskers: 95 % confidence interval of that mean." (log_note)
        },
    );
    section("latency", "Latency", html)
}

pub(super) fn failures(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let any_failed = cells.iter().any(|c| !c.failures.is_empty());
    let any_retry = cells
        .iter()
        .any(|c| c.retries_per_commit.unwrap_or(0.0) > 0.0);
    let swallowed = m.effective_differs();
    if !any_failed && !any_retry && !swallowed {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut charts_html: Vec<Markup> = Vec::new();
    if any_failed {
        let codes: BTreeSet<&str> = cells
            .iter()
            .flat_map(|c| c.failures.keys().map(String::as_str))
            .collect();
        let totals: Vec<(u64, f64)> = cells.iter().map(tables::failure_totals).collect();
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
        charts_html.push(figure(
            svg,
            html! {
                strong { "Failures by SQLSTATE." } " Transactions that gave up (retries exhausted \
                 or error not retried), by the SQLSTATE of their last error, as % of all \
                 transactions of the cell's complete runs; the stack is the cell's failure rate."
            },
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
        charts_html.push(figure(
            svg,
            html! {
                strong { "Retries per commit." } " Σ retried attempts / Σ committed transactions \
                 over the cell's complete runs: extra work per unit of goodput."
            },
        ));
    }
    let mut reasons = tables::failures::reasons(m);
    reasons.id = Some("failure-reasons");
    let html = html! {
        div.grid2 { @for c in &charts_html { (c) } }
        @if any_failed || swallowed {
            @if swallowed { (note(html! { (tables::SWALLOWED_NOTE) })) }
            (table_html(&tables::failures(m)))
        } @else {
            (note(html! { "No transaction failed." }))
        }
        @if !reasons.is_empty() {
            h3 { "By reason" }
            (note(html! { (tables::failures::REASONS_NOTE) }))
            (table_html(&reasons))
        }
    };
    section("failures", "Failures and retries", html)
}

pub(super) fn transactions(m: &ReportModel) -> Option<Section> {
    let t = tables::transactions(m);
    if t.is_empty() {
        return None;
    }
    let html = html! {
        (note(html! {
            "Pooled over each cell's complete runs: counts summed, latency from the runs' merged \
             histograms. User aborts are rollbacks the workload makes on purpose (e.g. an overdraft \
             refused), not failures."
        }))
        (table_html(&t))
    };
    section("types", "Transactions by type", html)
}

/// Per-command latency of pgbench scripts; only when a workload timed
/// commands.
pub(super) fn commands(m: &ReportModel) -> Option<Section> {
    let t = tables::commands(m);
    if t.is_empty() {
        return None;
    }
    let html = html! {
        (note(html! {
            "Like " code { "pgbench -r" } ": every execution of each script command in the measured \
             window of a cell's complete runs, retried attempts included; mean time per execution. \
             Failures: executions that raised the error ending their attempt."
        }))
        (table_html(&t))
    };
    section("commands", "Latency by command", html)
}

pub(super) fn time_series(m: &ReportModel) -> Option<Section> {
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
    let x = Axis::window(
        "time in the measured window (s)",
        m.results.config.duration_s,
        t_max,
    );
    let intro = note(html! {
        "Committed transactions per second and the p99 latency of each second's commits, for every \
         complete run of the cell overlaid (a cell without a complete run shows its interrupted \
         ones). All cells share the y axes, so heights compare across charts. A run with faults has \
         them marked in its colour: each injected fault (dashed, named by its kind), the outage (a \
         band from the first lost connection to the first commit after it) and the recovery to 90 % \
         of the throughput before (dashed, " em { "recovered" } ")."
    });
    let mut figures: Vec<Markup> = Vec::new();
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
        let marks: Vec<XMark> = runs
            .iter()
            .zip(&styles)
            .flat_map(|(r, s)| fault_marks(r, s.color))
            .collect();
        let panels = [
            Panel {
                title: Some("throughput".into()),
                y: Axis::from_zero("tx/s", tps_max),
                lines: series(|p| p.tps),
                marks: marks.clone(),
            },
            Panel {
                title: Some("p99 latency".into()),
                y: Axis::from_zero("ms", p99_max),
                lines: series(|p| p.p99_ms),
                marks,
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
        figures.push(match svg {
            Ok(svg) => html! {
                figure { figcaption.title { strong { (label) } } (PreEscaped(svg)) }
            },
            Err(e) => html! { p.warn { (e) } },
        });
    }
    let html = html! { (intro) div.grid2 { @for f in &figures { (f) } } };
    section("timeseries", "Per-second time series", html)
}

/// The faults of run `r` on its per-second chart, in its colour: each
/// injected fault as a dashed line (`crash`), the outage as a band from
/// the first connection loss, and the recovery to 90 % as a dashed line
/// (`recovered`). None for a run without faults.
fn fault_marks(r: &RunRecord, color: plotters::style::RGBColor) -> Vec<XMark> {
    let Some(f) = &r.faults else {
        return Vec::new();
    };
    let mark = |from: f64, to: Option<f64>, label: &str| XMark {
        from,
        to,
        label: label.to_string(),
        color,
    };
    let mut marks: Vec<XMark> = f
        .injected
        .iter()
        .map(|i| mark(i.t_s, None, i.kind.name()))
        .collect();
    let start = f
        .losses
        .first()
        .map(|l| l.t_s)
        .or_else(|| f.injected.first().map(|i| i.t_s));
    if let (Some(loss), Some(outage)) = (f.losses.first().map(|l| l.t_s), f.outage_s) {
        marks.push(mark(loss, Some(loss + outage), "outage"));
    }
    if let (Some(start), Some(rec)) = (start, f.recovery_s) {
        marks.push(mark(start + rec, None, "recovered"));
    }
    marks
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

pub(super) fn pool_and_lag(m: &ReportModel) -> Option<Section> {
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
    let log = charts::log_note(&x, "values");
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
    let chart = figure(
        svg,
        html! {
            strong { "Pool wait and schedule lag." } " Pool wait: time a client waited for a pooled \
             connection, per checkout. Schedule lag (open loop): how late transactions started after \
             their scheduled arrival. Mean over complete runs of each run's mean and p99." (log)
        },
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
        let mut row = vec![tables::cell_value(m, i)];
        if has_pool {
            row.extend(waits(pool[i]));
        }
        if has_lag {
            row.extend(waits(lag[i]).into_iter().take(3));
            row.extend([Value::count(c.skipped), Value::count(c.late)]);
        }
        t.row(row);
    }
    section(
        "pool",
        "Pool wait and schedule lag",
        html! { (chart) (table_html(&t)) },
    )
}
