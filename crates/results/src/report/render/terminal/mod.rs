//! The end-of-study summary for the terminal (`isobench run`,
//! `report`, `merge`): the headlines (as in report.md), then the Cells
//! table of report.md ([`tables::summary`], with skipped and late
//! transactions beside it in an open-loop study with a latency limit),
//! then the legend and the first findings. Everything fits the width it
//! is given ([`fit`]): the table by dropping columns in [`DROP_ORDER`],
//! prose by wrapping. No colors, so `NO_COLOR` and pipes need nothing
//! special.

pub mod fit;

use std::fmt::Write as _;

pub use fit::{DEFAULT_WIDTH, MIN_WIDTH, wrap};

use crate::report::analysis::model::ReportModel;
use crate::report::tables::{self, Table};
use crate::store::Results;

/// The end-of-study summary at `width` columns; ends with a
/// newline.
pub fn summary(results: &Results, width: usize) -> String {
    summary_of(&ReportModel::new(results), width)
}

/// Findings shown under the table; the rest are in report.md.
const FINDINGS_SHOWN: usize = 5;

/// Rules whose findings say the data is wrong: always printed (issue #30:
/// a swallowed-failure finding hidden behind "(5 more findings ...)").
const INTEGRITY_RULES: [&str; 2] = ["history", "forbidden"];

/// Headlines shown above the table; the rest are in report.md.
const HEADLINES_SHOWN: usize = 12;

/// The Cells table's columns the terminal leaves out, in this order, when
/// the table is wider than the terminal (headers as in
/// [`tables::summary`]): the first [`DROP_WHOLE`] leave while the figures
/// would otherwise wrap; the others only when the table does not fit even
/// with every figure wrapped at its spaces ([`fit::table`]). The factors,
/// the throughput, "% vs baseline" and the anomalies are never left out.
pub const DROP_ORDER: [&str; 7] = [
    "p50 (ms)",
    "retries per commit",
    "late (transactions)",
    "skipped (transactions)",
    "p99 (ms)",
    "runs (n)",
    "failed (% of transactions)",
];

/// How many of [`DROP_ORDER`] leave before a figure wraps: p50 (p99
/// stays).
pub const DROP_WHOLE: usize = 1;

/// The Cells table as the terminal shows it: [`tables::summary`], with
/// TPC-C's tpmC after the throughput, and skipped and late transactions (from [`tables::cell_details`]) before
/// the anomalies in an open-loop study with a latency limit.
pub fn cells_table(m: &ReportModel) -> Table {
    let mut t = tables::summary(m);
    let c = &m.results.config;
    if m.has_tpmc() {
        let details = tables::cell_details(m);
        let tps = t
            .columns
            .iter()
            .position(|c| c.header.contains("mean ± 95% CI"));
        if let (Some(at), Some(i)) = (tps, details.column_index("tpmC (New-Order commits/min)")) {
            t.insert_column_from(at + 1, &details, i);
        }
    }
    if !c.rate.is_empty() && c.latency_limit_ms.is_some() {
        let details = tables::cell_details(m);
        let mut at = t.columns.len() - 1;
        for h in ["skipped (transactions)", "late (transactions)"] {
            if let Some(i) = details.column_index(h) {
                t.insert_column_from(at, &details, i);
                at += 1;
            }
        }
    }
    t
}

/// [`summary`] from an aggregated model.
pub fn summary_of(m: &ReportModel, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let results = m.results;
    // The answer first: the headlines (all of them are in report.md).
    let mut out = String::new();
    // The levels' promises first and whole, however many; then the
    // cells' headlines up to HEADLINES_SHOWN.
    let (promises, headlines): (Vec<_>, Vec<_>) = crate::report::analysis::findings::headlines(m)
        .into_iter()
        .partition(|h| h.guarantee);
    for h in &promises {
        out.push_str(&wrap(&h.text, width, "  "));
    }
    for h in headlines.iter().take(HEADLINES_SHOWN) {
        out.push_str(&wrap(&h.text, width, "  "));
    }
    if headlines.len() > HEADLINES_SHOWN {
        let _ = writeln!(
            out,
            "({} more headlines in report.md)",
            headlines.len() - HEADLINES_SHOWN
        );
    }
    let t = cells_table(m);
    let index = |hs: &[&str]| hs.iter().filter_map(|h| t.column_index(h)).collect();
    let drop = fit::DropOrder {
        whole: index(&DROP_ORDER[..DROP_WHOLE]),
        squeeze: index(&DROP_ORDER[DROP_WHOLE..]),
    };
    out.push_str(
        &fit::table(&t, width, &drop).with_note(width, "in report.md; or a wider --width"),
    );
    out.push_str(&wrap(
        &format!(
            "{} More figures per cell: report.md.",
            tables::cells::cells_legend(m)
        ),
        width,
        "",
    ));
    // The smallest change each comparison could see, when it found none
    // and could not have seen 5 %; and --precision per cell.
    for line in tables::cells::verdict_notes(m) {
        out.push_str(&wrap(&line, width, "  "));
    }
    if m.effective_differs() {
        let swallowed: u64 = m.cells.iter().map(|c| c.swallowed).sum();
        let lost: u64 = m.cells.iter().map(|c| c.lost_acknowledged).sum();
        let name = m.throughput.0;
        let mut missing = Vec::new();
        if swallowed > 0 {
            missing.push(format!(
                "{swallowed} transaction(s) counted as committed were swallowed failures (see Failures in report.md)"
            ));
        }
        if lost > 0 {
            missing.push(format!(
                "{lost} acknowledged commit(s) were lost to a failover or crash (see Cells in detail in report.md)"
            ));
        }
        out.push_str(&wrap(
            &format!(
                "effective {name}: committed transactions whose work is in the database \
                 (pgbench_history rows), per second; {}.",
                missing.join("; ")
            ),
            width,
            "",
        ));
    }
    if !results.config.rate.is_empty() && results.config.latency_limit_ms.is_none() {
        out.push_str(&wrap(
            "open loop without --latency-limit: no transaction is skipped or counted late; \
             schedule lag is in report.md.",
            width,
            "",
        ));
    }
    // The findings' sentences (what to try is in report.md); the
    // throughput cost is in the headlines already.
    // Findings that say the data is wrong (an invariant a level should
    // keep, commits missing from the history) are always shown, first;
    // then the others up to FINDINGS_SHOWN in all.
    let mut found: Vec<_> = crate::report::analysis::findings::findings(m)
        .into_iter()
        .filter(|f| f.rule != "cost")
        .collect();
    found.sort_by_key(|f| !INTEGRITY_RULES.contains(&f.rule));
    let integrity = found
        .iter()
        .filter(|f| INTEGRITY_RULES.contains(&f.rule))
        .count();
    let shown = integrity.max(FINDINGS_SHOWN.min(found.len()));
    for f in &found[..shown] {
        out.push_str(&wrap(&format!("finding: {}", f.text), width, "  "));
    }
    if found.len() > shown {
        let _ = writeln!(out, "({} more findings in report.md)", found.len() - shown);
    }
    if results.runs.is_empty() && results.finished_at.is_some() && !results.complete {
        out.push_str("No run started: the study stopped before its first run.\n");
    } else if !results.complete {
        out.push_str("INCOMPLETE (interrupted): statistics cover the runs recorded so far.\n");
    }
    out
}

/// A calibration's noise (`isobench calibrate`) at `width` columns:
/// [`tables::noise::noise`] with its note; the figures that do not fit
/// leave in the order CV within a run, MDE, runs needed.
pub fn noise(n: &crate::stats::noise::Noise, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let t = tables::noise::noise(n);
    let index = |hs: &[&str]| {
        hs.iter()
            .filter_map(|h| t.columns.iter().position(|c| c.header.starts_with(h)))
            .collect()
    };
    let drop = fit::DropOrder {
        whole: index(&["CV within a run"]),
        squeeze: index(&["MDE at", "runs a side for"]),
    };
    let mut out = format!("{}:\n", tables::noise::noise_title(n));
    out.push_str(
        &fit::table(&t, width, &drop).with_note(width, "in report.md and results.json's noise"),
    );
    out.push_str(&wrap(&tables::noise::noise_note(n), width, ""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    /// Wide enough that nothing wraps.
    const WIDE: usize = 10_000;

    /// TPC-C: a tpmC column beside TPS, the mean of the runs' tpmC; none
    /// for other workloads. The Runs and Cells-in-detail tables too.
    #[test]
    fn tpmc_beside_tps_for_tpcc() {
        let mut r = fixture::results();
        for (k, run) in r.runs.iter_mut().enumerate() {
            run.tpmc = Some(600.0 + 60.0 * (k % 2) as f64);
        }
        let m = ReportModel::new(&r);
        assert!(m.has_tpmc());
        let text = summary_of(&m, WIDE);
        assert!(
            text.contains("tpmC") && text.contains("600.0 ± 0.0"),
            "{text}"
        );
        let tpmc = m.cells[0].tpmc.unwrap();
        assert!((600.0..=660.0).contains(&tpmc.mean), "{tpmc:?}");
        let runs = tables::runs(&m);
        assert!(runs.columns.iter().any(|c| c.header.starts_with("tpmC")));
        let details = tables::cell_details(&m);
        assert!(details.columns.iter().any(|c| c.header.starts_with("tpmC")));
        assert!(!summary(&fixture::results(), WIDE).contains("tpmC"));
    }

    /// The cells of a table line, trimmed.
    fn cells(line: &str) -> Vec<&str> {
        line.trim_matches(|c| c == '│' || c == ' ')
            .split('┆')
            .map(str::trim)
            .collect()
    }

    /// Issue #30: the finding that committed transactions left fewer
    /// history rows than they insert is printed, first, however many other
    /// findings there are.
    #[test]
    fn integrity_findings_are_always_printed_first() {
        let r = fixture::swallowed_history();
        let m = ReportModel::new(&r);
        let all = crate::report::analysis::findings::findings(&m);
        let rules: Vec<&str> = all
            .iter()
            .map(|f| f.rule)
            .filter(|r| *r != "cost")
            .collect();
        // Other findings come before it in the rules' order.
        assert!(
            rules.iter().position(|r| *r == "history") > Some(0),
            "{rules:?}"
        );
        let text = summary_of(&m, WIDE);
        let first = text
            .lines()
            .find(|l| l.starts_with("finding: "))
            .expect("findings printed");
        let history = all.iter().find(|f| f.rule == "history").unwrap();
        assert_eq!(first, format!("finding: {}", history.text));
    }

    /// Issue #30: with a cell whose calls swallowed failures, the table
    /// compares effective TPS (ser reads significantly slower, not +50 %
    /// faster), shows the reported TPS beside it, and a line says how many
    /// were swallowed.
    #[test]
    fn effective_tps_column_and_comparison() {
        let r = fixture::swallowed_history();
        let m = ReportModel::new(&r);
        let text = summary_of(&m, WIDE);
        assert!(text.contains("effective TPS (tx/s) ┆"), "{text}");
        let ser = text
            .lines()
            .find(|l| l.starts_with("│ ser "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(ser.contains("30.7 ± 5.2 (150.0 reported)"), "{ser}");
        // Two complete runs a side: the interval, no verdict (issue #41).
        assert!(
            ser.contains("-69.3% [") && ser.contains("] (too few runs)"),
            "{ser}"
        );
        assert!(
            text.contains(
                "ser: cannot tell: too few runs (2 on the smaller side; a verdict needs 3)"
            ),
            "{text}"
        );
        // A third run a side: significantly lower.
        let r3 = fixture::third_runs(fixture::swallowed_history());
        let text3 = summary(&r3, WIDE);
        let ser3 = text3.lines().find(|l| l.starts_with("│ ser ")).unwrap();
        assert!(ser3.contains("-69.3% [") && ser3.contains("] ▼"), "{ser3}");
        let swallowed = m.cells[1].swallowed;
        assert!(
            text.contains(&format!(
                "{swallowed} transaction(s) counted as committed were swallowed failures"
            )),
            "{text}"
        );
        assert!(
            text.contains("% vs baseline: mean effective TPS against"),
            "{text}"
        );
        // Without swallowed commits: no such column or line.
        let plain = summary(&fixture::results(), WIDE);
        assert!(!plain.contains("effective"), "{plain}");
    }

    /// Open loop with a latency limit: skipped and late per cell, before
    /// the anomalies.
    #[test]
    fn open_loop_shows_skipped_and_late() {
        let mut r = fixture::results();
        r.config.rate = vec![200.0];
        r.config.latency_limit_ms = Some(50.0);
        for run in &mut r.runs {
            run.cell.rate = Some(crate::store::Rate(200.0));
        }
        r.runs[1].skipped = 120;
        r.runs[3].late = 30;
        let s = summary(&r, WIDE);
        let header = cells(s.lines().find(|l| l.starts_with("│ isolation")).unwrap());
        let n = header.len();
        assert_eq!(header[n - 3..], ["skipped", "late", "anomalies"], "{s}");
        let ser = cells(s.lines().find(|l| l.starts_with("│ ser ")).unwrap());
        assert_eq!(ser[n - 3..], ["120", "30", "0"], "{s}");
        // Without a limit nothing is skipped or late: a line says so.
        r.config.latency_limit_ms = None;
        let s = summary(&r, WIDE);
        assert!(!s.contains("┆ skipped ┆"), "{s}");
        assert!(s.contains("open loop without --latency-limit"), "{s}");
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(summary(&fixture::results(), DEFAULT_WIDTH));
    }

    /// The terminal shows report.md's Cells table: the same text in
    /// every cell (with the marks as report.md writes them), under the
    /// columns' short headers.
    #[test]
    fn the_cells_table_is_report_md_s() {
        let r = fixture::third_runs(fixture::results());
        let s = summary(&r, WIDE);
        assert!(s.ends_with('\n'));
        let md = crate::report::render::markdown::render(&r);
        let md_rows: Vec<Vec<&str>> = md
            .split("## Cells\n")
            .nth(1)
            .unwrap()
            .split("\n## ")
            .next()
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("| rc ") || l.starts_with("| ser "))
            .map(|l| {
                l.trim_matches(|c| c == '|' || c == ' ')
                    .split(" | ")
                    .collect()
            })
            .collect();
        let rows: Vec<Vec<&str>> = s
            .lines()
            .filter(|l| l.starts_with("│ rc ") || l.starts_with("│ ser "))
            .map(cells)
            .collect();
        assert_eq!(rows.len(), 2, "{s}");
        assert_eq!(rows, md_rows, "{s}\n{md}");
        assert_eq!(rows[1][3], "+50.0% [+44.0%, +56.3%] ▲");
        assert!(
            s.contains(
                "% vs baseline: mean TPS against the cell with isolation=rc and strategy=optimistic"
            ),
            "{s}"
        );
        assert!(
            s.contains("Same in every cell: strategy optimistic, clients 4."),
            "{s}"
        );
    }

    #[test]
    fn numeric_factors_right_aligned() {
        let s = summary(&fixture::with_clients(fixture::results()), WIDE);
        // isolation (left) and clients (right, as wide as its header).
        assert!(s.contains("│ rc        ┆       1 ┆"), "{s}");
        assert!(s.contains("│ ser       ┆       8 ┆"), "{s}");
    }

    /// Issue #37: at 100 columns (a pipe's width) no line of the summary
    /// is longer, for the default study and for seed 002's (whose Cells
    /// table was 142 and 177 columns wide, and whose finding lines ran to
    /// 615 characters); the columns left out are named, in
    /// [`DROP_ORDER`]; a wide terminal gets every column.
    #[test]
    fn the_summary_fits_100_columns() {
        for (name, r) in [
            ("default", fixture::default_study()),
            ("seed 002", fixture::seed_002()),
            ("fixture", fixture::results()),
            ("swallowed", fixture::swallowed_history()),
            ("builds", fixture::with_builds()),
        ] {
            let m = ReportModel::new(&r);
            let text = summary_of(&m, 100);
            for line in text.lines() {
                assert!(
                    line.chars().count() <= 100,
                    "{name}: {} columns: {line}\n{text}",
                    line.chars().count()
                );
            }
            // One row per cell: each begins with the cell's isolation.
            let first_lines = text
                .lines()
                .filter(|l| {
                    ["│ rc ", "│ rr ", "│ ser "]
                        .iter()
                        .any(|p| l.starts_with(p))
                })
                .count();
            assert_eq!(first_lines, m.cells.len(), "{name}: {text}");
            assert!(text.contains("finding: "), "{name}: {text}");
            let wide = summary_of(&m, 250);
            assert!(!wide.contains("Not shown at"), "{name}: {wide}");
        }
        let seed = summary_of(&ReportModel::new(&fixture::seed_002()), 100);
        // The variant and foreign-keys factors vary: shown, not dropped.
        assert!(seed.contains("single-statement"), "{seed}");
        let dropped = seed
            .lines()
            .find(|l| l.starts_with("Not shown at 100 columns: "))
            .unwrap_or_else(|| panic!("{seed}"));
        assert!(
            dropped.starts_with("Not shown at 100 columns: p50 (ms)"),
            "{dropped}"
        );
    }

    /// At 100 columns the default study's table loses only p50 (before
    /// any figure wraps); retries and p99 stay.
    #[test]
    fn the_default_study_loses_only_p50_at_100() {
        let text = summary(&fixture::default_study(), 100);
        assert!(
            text.contains("Not shown at 100 columns: p50 (ms) (in report.md"),
            "{text}"
        );
        assert!(
            text.contains("┆ retries ┆") && text.contains("   p99 ┆"),
            "{text}"
        );
    }
}
