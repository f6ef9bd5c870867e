//! Sections of what the server observer sampled: `pg_stat_database`
//! counters over time, wait events, SIRead locks, and pgbouncer's pool.

use std::collections::BTreeMap;

use maud::{Markup, html};

use crate::model::Isolation;
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::model::ReportModel;
use crate::report::render::html::charts;
use crate::report::render::html::charts::{Axis, Bar, BarSeries, HBars, Line, Panel, Point, Style};
use crate::report::render::html::charts::{GREY, ValueLabels};
use crate::report::render::html::{MAX_LINES, Section, TOP_WAIT_EVENTS, WAIT_BUCKETS, WIDE};
use crate::report::render::html::{
    code_spans, figure, legend, note, section, series_style, table_html,
};
use crate::report::tables::table::{Column, Table, Value};
use crate::report::{format::fmt_fixed, format::fmt_opt, tables};
use crate::store::RunRecord;

/// How many points the counters' lines have: the sample interval and
/// the points per run, and when a run has fewer than 4 how to get more
/// (issue #31: 5 s samples in a 10 s window drew two points as a line).
fn sampling_note(interval_s: f64, runs: &[(usize, &RunRecord)]) -> String {
    let points = runs
        .iter()
        .map(|(_, r)| r.server.stat_database.len())
        .max()
        .unwrap_or(0);
    let mut note = format!(
        "Sampled every {} s: {points} {} per run, each marked.",
        fmt_fixed(interval_s, if interval_s.fract() == 0.0 { 0 } else { 1 }),
        if points == 1 { "point" } else { "points" }
    );
    if points < 4 {
        note.push_str(" For a finer curve run with a shorter --sample-interval, e.g. 1s.");
    }
    note
}

pub(super) fn counters(m: &ReportModel) -> Option<Section> {
    let (cells, f) = (&m.cells[..], &m.factors);
    let (rates, names) = (&m.counter_rates, &m.counter_names);
    if names.is_empty() {
        return None;
    }
    let labels = f.short_labels.clone();
    let mut html = note(html! {
        "pg_stat_database of the run's database, sampled every sample interval: rate per second of \
         each interval. Counters can lag by up to ~1 s (PostgreSQL 15+ flushes backend statistics \
         about once a second)."
    });
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
        let x = Axis::window(
            "time in the measured window (s)",
            m.results.config.duration_s,
            t_max,
        );
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
                    marks: Vec::new(),
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
        let caption = html! {
            strong { "Server counters over time." } " Rate per second of each pg_stat_database \
             counter that moved, per sample interval (x: end of the interval), in the first complete \
             run of each cell." (more) " " (sampling_note(m.results.config.sample_interval_s, &firsts))
        };
        html = html! { (html) (figure(svg, caption)) };
    }
    // Few cells: a row per counter (as in report.md); many: a row per cell.
    let t = if cells.len() <= 6 {
        tables::counters(m, &labels)
    } else {
        let mut cols = vec![Column::text("cell")];
        cols.extend(names.iter().map(|n| Column::num(format!("{n} (/s)"))));
        let mut t = Table::new(cols);
        for (i, r) in rates.iter().enumerate() {
            let mut row = vec![tables::cell_value(m, i)];
            row.extend(names.iter().map(|n| {
                let v = r.get(n).copied();
                Value::opt(v, fmt_opt(v, 1))
            }));
            t.row(row);
        }
        t
    };
    let html = html! {
        (html)
        (note(html! {
            "Mean rate per second: time-weighted over each run's sample intervals, then averaged over \
             complete runs."
        }))
        (table_html(&t))
    };
    section("counters", "Server counters (pg_stat_database)", html)
}

pub(super) fn wait_events(m: &ReportModel) -> Option<Section> {
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
    let caption = html! {
        strong { "Wait events." } " Share of the workload's backend observations (pg_stat_activity \
         sampled once a second) by " code { "wait_event_type:wait_event" } ", over each cell's \
         complete runs; " code { "CPU" } ": active and not waiting. The most frequent events overall \
         are named, the rest is pooled as \"other\"."
    };
    let t = tables::wait_events(m, TOP_WAIT_EVENTS);
    let html = html! {
        (figure(svg, caption))
        details {
            summary { "Top " (TOP_WAIT_EVENTS) " wait events per cell (table)" }
            (table_html(&t))
        }
    };
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

pub(super) fn siread_locks(m: &ReportModel) -> Option<Section> {
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
    let mut html: Markup = html! {};
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
        let log = charts::log_note(&x, "counts");
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
        let caption = html! {
            strong { "SIRead (predicate) locks by granularity" } ", serializable cells: pg_locks \
             rows with mode SIReadLock sampled every sample interval under SERIALIZABLE, mean count \
             over each run's samples averaged over complete runs. Many tuple locks promote to page \
             and relation locks (max_pred_locks_per_*), which widens the conflicts SSI detects." (log)
        };
        html = figure(svg, caption);
    }
    let t = tables::siread_locks(m, &ser);
    html = html! { (html) (table_html(&t)) };
    let mut rel = Table::new(vec![
        Column::text("cell"),
        Column::text("relation (granularity)"),
        Column::num("mean (locks)"),
        Column::num("max (locks)"),
    ]);
    for &i in &ser {
        for (name, mean, max) in siread_by_relation(&cells[i]).into_iter().take(10) {
            rel.row(vec![
                tables::cell_value(m, i),
                Value::text(name),
                Value::num(mean, fmt_fixed(mean, 1)),
                Value::count(max),
            ]);
        }
    }
    if !rel.rows.is_empty() {
        html = html! {
            (html)
            details { summary { "By relation (top 10 per cell)" } (table_html(&rel)) }
        };
    }
    section("siread", "SIRead locks", html)
}

/// pgbouncer's pool per cell that ran behind it ([`tables::pooler()`]).
pub(super) fn pooler(m: &ReportModel) -> Option<Section> {
    let t = tables::pooler(m);
    if t.is_empty() {
        return None;
    }
    let html = html! {
        (note(code_spans(tables::POOLER_NOTE)))
        (table_html(&t))
    };
    section("pooler", "pgbouncer", html)
}

/// Only when the server had standbys.
pub(super) fn standbys(m: &ReportModel) -> Option<Section> {
    let t = tables::standbys(m);
    if t.is_empty() {
        return None;
    }
    let html = html! {
        (note(code_spans(tables::STANDBYS_NOTE)))
        (table_html(&t))
    };
    section("standbys", "Standbys", html)
}

/// Only when a run went through a failover.
pub(super) fn failovers(m: &ReportModel) -> Option<Section> {
    let t = tables::failovers(m);
    if t.is_empty() {
        return None;
    }
    let html = html! {
        (note(code_spans(tables::FAILOVERS_NOTE)))
        (table_html(&t))
    };
    section("failovers", "Failovers", html)
}
