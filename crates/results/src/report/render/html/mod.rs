//! `report.html`: one self-contained page (inline CSS, inline SVG charts,
//! a few lines of optional JavaScript to sort tables; nothing loaded from
//! anywhere) with everything `report.md` has, plus charts: throughput
//! against each numeric factor with 95 % confidence intervals, latency
//! percentiles, failures and retries, per-second time series, server
//! counters over time, wait events, SIRead locks, pool wait and schedule
//! lag.
//!
//! The page is built with maud, so every string from the results is
//! HTML-escaped by construction (only the charts' SVG, the stylesheet and
//! the script go in as they are); numbers go through the formatters of
//! [`super`] so they read as in the Markdown report. Charts
//! come from the private `charts` module (plotters' SVG backend). Sections
//! without data (no pool, no per-second series, no serializable cell, ...)
//! are left out.
//!
//! This file holds the page skeleton ([`render_model`]) and the helpers
//! the sections share (tables, figures, notes, series styles); the
//! sections live in `header` (header, summary), `client` (what the clients
//! measured), `server` (what the observer sampled) and `details` (checks,
//! plans, runs, problems).

mod charts;
mod client;
mod details;
mod header;
mod server;
mod table;

use crate::report::{format::scale_text, format::workload_text};
use client::{commands, failures, latency, pool_and_lag, throughput, time_series, transactions};
use details::{external_load, faults, hosts, invariants, plans, problems, runs};
use header::{cell_details, guarantees, header, headlines, noise, summary};
use server::{counters, failovers, pooler, siread_locks, standbys, wait_events};
use table::table_html;

use maud::{DOCTYPE, Markup, PreEscaped, html};

use charts::{LegendItem, Marker, Style};

use crate::report::analysis::model::ReportModel;
use crate::store::Results;

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
        headlines(m),
        guarantees(m),
        summary(m),
        noise(m),
        findings(m),
        cell_details(m),
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
        pooler(m),
        standbys(m),
        pool_and_lag(m),
        invariants(m),
        plans(m),
        faults(m),
        failovers(m),
        hosts(m),
        runs(m),
        problems(m),
    ]
    .into_iter()
    .flatten()
    .collect();
    let title = format!(
        "isobench report: {}{}",
        workload_text(results),
        scale_text(results)
    );
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(CSS)) }
            }
            body {
                (header(results, &title))
                nav.toc aria-label="sections" {
                    ul {
                        @for s in &sections {
                            li { a href={ "#" (s.id) } { (s.title) } }
                        }
                    }
                }
                main {
                    @if results.runs.is_empty() {
                        p.note { "No runs recorded." }
                    }
                    @for s in &sections {
                        section id=(s.id) {
                            h2 { (s.title) }
                            (s.html)
                        }
                    }
                }
                footer {
                    "isobench " (results.isobench_version) " · results schema "
                    (results.schema_version) " · this page is self-contained (no network \
                     access); the script only sorts tables when a column header is clicked."
                }
                script { (PreEscaped(JS)) }
            }
        }
    };
    let mut out = page.into_string();
    out.push('\n');
    out
}

/// The findings ([`crate::report::analysis::findings`]), after the Cells table.
fn findings(m: &ReportModel) -> Option<Section> {
    let found = crate::report::analysis::findings::findings(m);
    if found.is_empty() {
        return None;
    }
    section(
        "findings",
        "Findings",
        html! {
            ul.findings {
                @for f in &found {
                    li {
                        (code_spans(&f.text))
                        @if let Some(a) = &f.advice {
                            " " em { "Try: " (code_spans(a)) "." }
                        }
                    }
                }
            }
        },
    )
}

/// `text` with its Markdown code spans (`` `x` ``) as `<code>` (an odd
/// backtick stays a backtick).
fn code_spans(text: &str) -> Markup {
    let paired = text.matches('`').count().is_multiple_of(2);
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if paired && i % 2 == 1 {
                code { (part) }
            } @else {
                @if i > 0 && !paired { "`" }
                (part)
            }
        }
    }
}

/// One `<section>` of the page.
struct Section {
    id: &'static str,
    title: String,
    html: Markup,
}

fn section(id: &'static str, title: &str, html: Markup) -> Option<Section> {
    Some(Section {
        id,
        title: title.into(),
        html,
    })
}

/// A chart (SVG from [`charts`]) in a `<figure>` with its caption, or the
/// drawing error.
fn figure(svg: Result<String, String>, caption: Markup) -> Markup {
    match svg {
        Ok(svg) => html! { figure { (PreEscaped(svg)) figcaption { (caption) } } },
        Err(e) => html! { p.warn { (e) } },
    }
}

/// A note paragraph: prose under a section's title.
fn note(text: Markup) -> Markup {
    html! { p.note { (text) } }
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

/// The report's stylesheet (its own file, so it reads and lints as CSS).
const CSS: &str = include_str!("style.css");

/// Sorts a table by the clicked column (numbers by value, else text).
const JS: &str = include_str!("sort.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_become_code_and_the_rest_is_escaped() {
        let code_spans = |t: &str| crate::report::render::html::code_spans(t).into_string();
        assert_eq!(
            code_spans("`update <b>` ran as Seq Scan & `x`"),
            "<code>update &lt;b&gt;</code> ran as Seq Scan &amp; <code>x</code>"
        );
        // An odd backtick stays a backtick.
        assert_eq!(code_spans("a ` b"), "a ` b");
    }
    use crate::model::fixture;

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
        // Failures by reason: the serializable cell's three.
        assert_eq!(table_rows(&html, "failure-reasons"), 3);
        assert!(html.contains("pivot, during commit attempt"));
        // The baseline row is marked, the other cell significantly higher.
        assert!(html.contains("<tr class=\"baseline\">"));
        assert!(
            html.contains("+50.0% [+33.1%, +69.1%] <span class=\"ns\">(too few runs)</span>"),
            "the change, its interval and, at 2 runs a side, no verdict"
        );
        assert!(
            render(&fixture::third_runs(fixture::results())).contains("+50.0% [+44.0%, +56.3%] ▲"),
            "the change, its interval and its significance mark"
        );
        // Same formatters as the Markdown report.
        assert!(
            html.contains(&crate::report::format::fmt_tps_ci(
                crate::report::analysis::cells::aggregate(&r)[1]
                    .tps
                    .as_ref()
            ))
        );
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
        let html = render(&fixture::evil());
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
    fn builds_by_label_in_the_header_and_tables() {
        let html = render(&fixture::with_builds());
        assert!(html.contains(
            "<dt>Server builds (pg_bin)</dt><dd>stock: PostgreSQL 16.4 from /usr/lib/postgresql/16/bin; \
             finer-lock: PostgreSQL 18.1 from /opt/pg-patched/bin</dd>"
        ));
        assert!(
            html.contains("<dt>Server</dt><dd>PostgreSQL 16.4 (stock), 18.1 (finer-lock)</dd>")
        );
        assert!(html.contains("pg_bin=finer-lock"));
        assert_eq!(
            html.matches("/opt/pg-patched").count(),
            1,
            "the path once, in the header"
        );
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
        // Each clients value's cells have their own baseline (in Cells and
        // in Cells in detail).
        assert_eq!(html.matches("<tr class=\"baseline\">").count(), 2 * 3);
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

    /// Issue #31: the per-second chart of a 10 s window ends at 10 s
    /// (it ran to 12.5 s when the last point fell just past 10 s), and
    /// the counters' caption says how often they were sampled and how
    /// few points that gives.
    #[test]
    fn time_axes_end_at_the_window_and_sampling_is_explained() {
        let mut r = fixture::rich();
        r.config.duration_s = 10.0;
        for run in &mut r.runs {
            run.duration_s = 10.0;
            run.per_second.truncate(10);
            let mut last = run.per_second[9];
            last.t_s = 10.02;
            run.per_second.push(last);
        }
        let html = render(&r);
        let section = |id: &str| {
            let from = html.find(&format!("<section id=\"{id}\">")).unwrap();
            let len = html[from..].find("</section>").unwrap();
            &html[from..from + len]
        };
        // The SVG's text labels, trimmed.
        let labels: Vec<&str> = section("timeseries")
            .split("</text>")
            .filter_map(|t| t.rsplit_once('>').map(|(_, l)| l.trim()))
            .collect();
        assert!(
            labels.contains(&"10") && labels.contains(&"8"),
            "{labels:?}"
        );
        assert!(
            !labels.contains(&"12.5") && !labels.contains(&"12"),
            "axis past the window: {labels:?}"
        );
        let counters = section("counters");
        assert!(
            counters.contains("Sampled every 5 s: 2 points per run, each marked.")
                && counters.contains("--sample-interval"),
            "{counters}"
        );
    }

    #[test]
    fn a_per_host_section_only_when_a_run_had_several_hosts() {
        assert!(!render(&fixture::results()).contains("<section id=\"hosts\">"));
        let mut r = fixture::results();
        let host = |name: &str| crate::model::HostRecord {
            host: name.into(),
            clients: 2,
            refused: 0,
            committed: 50,
            tps: 5.0,
            p50_ms: 1.0,
            p99_ms: 2.0,
            failed: 0,
            latency_histogram: String::new(),
        };
        r.runs[0].hosts = vec![host("/tmp/sock:5432"), host("127.0.0.1:5432")];
        let html = render(&r);
        assert_self_contained(&html);
        let section = html.split("<section id=\"hosts\">").nth(1).unwrap();
        let section = section.split("</section>").next().unwrap();
        assert!(section.contains("Per host"), "{section}");
        assert!(section.contains("/tmp/sock:5432") && section.contains("127.0.0.1:5432"));
    }

    /// A calibration (`isobench calibrate`) has a Noise section after
    /// Cells, with its table; other studies have none. report.md alike.
    #[test]
    fn a_noise_section_only_for_a_calibration() {
        assert!(!render(&fixture::results()).contains("<section id=\"noise\">"));
        let mut r = fixture::results();
        r.config.calibrate = Some(crate::model::Calibration {
            pairs: 1,
            per_side: 1,
            target_mde_pct: 5.0,
        });
        let html = render(&r);
        assert_self_contained(&html);
        let cells = html.find("<section id=\"summary\">").unwrap();
        let noise = html
            .find("<section id=\"noise\">")
            .expect("a noise section");
        assert!(cells < noise);
        assert!(html.contains("<table class=\"sortable\" id=\"noise\""));
        assert!(html.contains("Noise (A/A calibration)"));
        let md = crate::report::render::markdown::render(&r);
        assert!(md.contains("## Noise (A/A calibration)\n"), "{md}");
        assert!(!crate::report::render::markdown::render(&fixture::results()).contains("## Noise"));
    }

    #[test]
    fn a_faults_section_only_when_a_run_had_faults() {
        assert!(!render(&fixture::results()).contains("<section id=\"faults\">"));
        let html = render(&fixture::faulted());
        assert_self_contained(&html);
        assert!(html.contains("<section id=\"faults\">"));
        assert!(html.contains("was terminated by signal 9: Killed"));
        // The faulted run's per-second chart marks its outage and recovery
        // (twice: throughput and p99 panels); an injected fault by kind.
        let mut r = fixture::faulted();
        r.runs[1].per_second = (1..=5)
            .map(|s| crate::model::SecondPoint {
                t_s: f64::from(s),
                committed: 100,
                tps: 100.0,
                p99_ms: 2.0,
                failed: 0,
                lag_ms: None,
            })
            .collect();
        let html = render(&r);
        let series = html.split("<section id=\"timeseries\">").nth(1).unwrap();
        let series = series.split("</section>").next().unwrap();
        assert_eq!(series.matches("\noutage\n").count(), 2, "{series}");
        assert_eq!(series.matches("\nrecovered\n").count(), 2, "{series}");
        assert!(!series.contains("\ncrash\n"));
        let f = r.runs[1].faults.as_mut().unwrap();
        f.injected.push(crate::model::InjectedFault {
            kind: crate::model::FaultKind::Crash,
            t_s: 2.5,
            detail: "immediate shutdown and start".into(),
            failover: None,
        });
        let html = render(&r);
        assert_eq!(html.matches("\ncrash\n").count(), 2);
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
            ("plan-changed", fixture::plan_changed()),
            ("swallowed", fixture::swallowed_history()),
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

        /// The names Chromium's binary has: Debian's `chromium` package,
        /// Ubuntu's `chromium-browser`.
        const NAMES: [&str; 2] = ["chromium", "chromium-browser"];
        const TIMEOUT: Duration = Duration::from_secs(60);

        /// Chromium's binary on `PATH`, or a message naming the package
        /// to install (the README's set-up names it too).
        pub fn find() -> Result<std::path::PathBuf, String> {
            find_in(&std::env::var_os("PATH").unwrap_or_default())
        }

        /// [`find`] in the directories of `path` (a `PATH` value).
        pub fn find_in(path: &std::ffi::OsStr) -> Result<std::path::PathBuf, String> {
            NAMES
                .iter()
                .flat_map(|n| std::env::split_paths(path).map(move |d| d.join(n)))
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "Chromium is missing (no {} on PATH): the HTML report's test renders it \
                         in a headless browser; install it with `apt-get install chromium` (see \
                         the README's set-up), or set ISOBENCH_SKIP_BROWSER=1 to skip this check",
                        NAMES.join(" or ")
                    )
                })
        }

        /// Runs Chromium headless with `args`, a fresh profile in
        /// `profile`, stdout to `stdout` (a file: a DOM dump outgrows a
        /// pipe); killed after 60 s. `--no-sandbox`: as root (CI, a fresh
        /// container) Chromium refuses to start with its sandbox.
        pub fn run(args: &[&str], profile: &Path, stdout: Option<&Path>) -> ExitStatus {
            let chromium = find().unwrap_or_else(|e| panic!("{e}"));
            let out = match stdout {
                Some(p) => Stdio::from(std::fs::File::create(p).unwrap()),
                None => Stdio::null(),
            };
            let mut child = Command::new(&chromium)
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
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
            let start = Instant::now();
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    return status;
                }
                if start.elapsed() > TIMEOUT {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!(
                        "{} did not finish within {TIMEOUT:?}: killed",
                        chromium.display()
                    );
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

    /// Issue #31: the page opens with the answer: the headlines are the
    /// first section (one per compared cell, with its interval and the
    /// share of failed transactions), the Cells table the second, and the
    /// setup is collapsed.
    #[test]
    fn the_first_section_is_the_headlines_then_cells() {
        let r = fixture::with_clients(fixture::results());
        let html = render(&r);
        let ids: Vec<&str> = html
            .match_indices("<section id=\"")
            .map(|(i, m)| {
                let rest = &html[i + m.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect();
        assert_eq!(ids[..3], ["headlines", "summary", "findings"], "{ids:?}");
        let section = &html[html.find("<section id=\"headlines\">").unwrap()..];
        let section = &section[..section.find("</section>").unwrap()];
        // 6 cells, one baseline (rc) per clients value: 3 headlines.
        let items: Vec<&str> = section.split("<li>").skip(1).collect();
        assert_eq!(items.len(), 3, "{section}");
        for (item, clients) in items.iter().zip([1, 4, 8]) {
            assert!(
                item.starts_with(&format!("ser · clients={clients}: ")),
                "{item}"
            );
            assert!(
                item.contains(" vs rc (95 % CI [") && item.contains("% of transactions failed"),
                "{item}"
            );
        }
        // The setup is in the header, collapsed, before any section.
        let meta = html
            .find("<details class=\"meta\">")
            .expect("collapsed setup");
        assert!(meta < html.find("<section").unwrap());
        assert!(
            html[meta..].find("<dl class=\"meta\">").unwrap()
                < html[meta..].find("</details>").unwrap()
        );
    }

    /// Issue #31: Plans and the findings say the same of a plan that
    /// changed within a run.
    #[test]
    fn plans_and_findings_tell_one_story() {
        let html = render(&fixture::plan_changed());
        let section = |id: &str| {
            let from = html.find(&format!("<section id=\"{id}\">")).unwrap();
            let len = html[from..].find("</section>").unwrap();
            &html[from..from + len]
        };
        let (findings, plans) = (section("findings"), section("plans"));
        let index = "Index Scan using pgbench_tellers_pkey on pgbench_tellers";
        assert!(
            findings.contains(&format!("{index} at the end of run 1)")),
            "{findings}"
        );
        assert!(plans.contains("(rc at the end of run 1)"), "{plans}");
        assert!(
            plans.contains("(rc at the start of every run and at the end of run 3; ser)"),
            "{plans}"
        );
        let change = format!(
            "<code>update teller</code> changed plan within run 1 (rc): Seq Scan on \
             pgbench_tellers at the start, {index} at the end."
        );
        assert!(findings.contains(&change), "{findings}");
        assert!(plans.contains(&change), "{plans}");
    }

    /// Issue #31: the Cells table fits a 1400 px window without
    /// scrolling sideways, laid out by Chromium (its scroll container
    /// is no wider than the page's column), for the fixture, many cells
    /// with three varying factors, a pool and builds.
    #[test]
    fn the_cells_table_fits_1400_px() {
        if std::env::var("ISOBENCH_SKIP_BROWSER").is_ok_and(|v| v == "1") {
            eprintln!("ISOBENCH_SKIP_BROWSER=1: browser check skipped");
            return;
        }
        // Writes the overflow of the Cells table's scroll box into the
        // DOM, where --dump-dom shows it.
        const MEASURE: &str = "<script>{const t=document.getElementById('cells');\
            const s=t.closest('.scroll');document.body.setAttribute('data-cells-overflow',\
            String(s.scrollWidth-s.clientWidth));document.body.setAttribute('data-cells-width',\
            String(t.getBoundingClientRect().width));}</script>";
        let dir = tempfile::tempdir().unwrap();
        for (name, r) in [
            ("fixture", fixture::results()),
            ("big", fixture::big()),
            ("rich", fixture::rich()),
            ("builds", fixture::with_builds()),
            ("swallowed", fixture::swallowed_history()),
        ] {
            let html = render(&r).replace("</body>", &format!("{MEASURE}</body>"));
            let page = dir.path().join(format!("{name}.html"));
            std::fs::write(&page, html).unwrap();
            let dom = dir.path().join(format!("{name}.dom"));
            let profile = tempfile::tempdir().unwrap();
            let status = browser::run(
                &[
                    "--window-size=1400,900",
                    "--dump-dom",
                    &format!("file://{}", page.display()),
                ],
                profile.path(),
                Some(&dom),
            );
            assert!(status.success(), "{name}: chromium --dump-dom: {status}");
            let dom = std::fs::read_to_string(&dom).unwrap();
            let attr = |a: &str| -> f64 {
                let at = dom
                    .find(&format!("{a}=\""))
                    .unwrap_or_else(|| panic!("{name}: no {a}"));
                let v = &dom[at + a.len() + 2..];
                v[..v.find('"').unwrap()].parse().unwrap()
            };
            let (overflow, width) = (attr("data-cells-overflow"), attr("data-cells-width"));
            assert!(
                overflow <= 0.0,
                "{name}: the Cells table ({width} px) scrolls {overflow} px sideways at 1400 px"
            );
        }
    }

    /// The Cells table's columns: the varying factors and at most
    /// [`tables::CELLS_MAX_COLUMNS`] more, whatever optional figures the
    /// study has (a pool, a rate with a latency limit, outliers, ssibench).
    #[test]
    fn the_cells_table_has_a_bounded_number_of_columns() {
        let mut r = fixture::rich();
        r.config.rate = vec![100.0];
        r.config.latency_limit_ms = Some(50.0);
        r.config.workload = "ssibench".into();
        for run in &mut r.runs {
            run.cell.rate = Some(crate::store::Rate(100.0));
        }
        let m = ReportModel::new(&r);
        let t = crate::report::tables::summary(&m);
        let factors = m.factors.shown.clone();
        assert_eq!(
            factors
                .iter()
                .map(|&j| m.factors.headers[j].as_str())
                .collect::<Vec<_>>(),
            ["isolation", "clients"]
        );
        assert_eq!(
            t.columns.len(),
            factors.len() + crate::report::tables::CELLS_MAX_COLUMNS
        );
        // What it leaves out is in Cells in detail.
        let d = crate::report::tables::cell_details(&m);
        let headers: Vec<&str> = d.columns.iter().map(|c| c.header.as_str()).collect();
        for h in [
            "KTPS (1000 tx/s)",
            "pool wait mean (ms, mean of runs)",
            "schedule lag p99 (ms, worst run)",
            "abort ratio (attempts)",
        ] {
            assert!(headers.contains(&h), "{h}: {headers:?}");
        }
    }

    /// Issue #31: without Chromium the browser test fails with a message
    /// naming the package, not a bare "No such file".
    #[test]
    fn a_missing_chromium_names_the_package() {
        let empty = tempfile::tempdir().unwrap();
        let e = browser::find_in(empty.path().as_os_str()).unwrap_err();
        assert!(e.contains("`apt-get install chromium`"), "{e}");
        assert!(e.contains("README"), "{e}");
    }

    /// The fixture's page in a real browser: it loads, draws, and parses
    /// into the expected DOM.
    #[test]
    fn renders_in_headless_chromium() {
        if std::env::var("ISOBENCH_SKIP_BROWSER").is_ok_and(|v| v == "1") {
            eprintln!("ISOBENCH_SKIP_BROWSER=1: browser check skipped");
            return;
        }
        if let Err(e) = browser::find() {
            panic!("{e}");
        }
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
}
