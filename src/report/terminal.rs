//! The end-of-experiment summary for the terminal: the headlines (as in
//! report.md), then one row per cell with the figures of report.md's
//! Cells table, then the first findings. No colors (so `NO_COLOR`
//! and pipes need nothing special) and no wrapping, so the output does not
//! depend on the terminal.

use std::fmt::Write as _;

use comfy_table::{CellAlignment, Table, presets};

use super::{
    factor_headers, factor_values, fmt_mean, fmt_ms, fmt_opt, fmt_tps_ci, fmt_vs_baseline,
};
use crate::store::Results;

/// The end-of-experiment summary table for the terminal; ends with a
/// newline.
pub fn summary(results: &Results) -> String {
    summary_of(&super::model::ReportModel::new(results))
}

/// Findings shown under the table; the rest are in report.md.
const FINDINGS_SHOWN: usize = 5;

/// Rules whose findings say the data is wrong: always printed (issue #30:
/// a swallowed-failure finding hidden behind "(5 more findings ...)").
const INTEGRITY_RULES: [&str; 2] = ["history", "forbidden"];

/// Headlines shown above the table; the rest are in report.md.
const HEADLINES_SHOWN: usize = 12;

/// [`summary`] from an aggregated model.
pub fn summary_of(m: &super::model::ReportModel) -> String {
    let (results, cells) = (m.results, &m.cells);
    // The answer first: the headlines (all of them are in report.md).
    let mut out = String::new();
    let headlines = super::findings::headlines(m);
    for h in headlines.iter().take(HEADLINES_SHOWN) {
        let _ = writeln!(out, "{}", h.text);
    }
    if headlines.len() > HEADLINES_SHOWN {
        let _ = writeln!(
            out,
            "({} more headlines in report.md)",
            headlines.len() - HEADLINES_SHOWN
        );
    }
    let factors = factor_headers(results);
    let mut header = factors.clone();
    let (name, unit) = super::throughput_label(results);
    let effective = m.effective_differs();
    let on = super::sections::compared_on(m);
    header.extend(["n".to_string(), format!("{name} ± 95% CI ({unit})")]);
    if effective {
        header.push(format!("effective {name} ± 95% CI ({unit})"));
    }
    header.push(format!(
        "% vs baseline{}",
        if effective { " (effective)" } else { "" }
    ));
    header.extend(["p50 (ms)", "p99 (ms)", "retries/commit", "failed (%)"].map(String::from));
    // Open loop with a latency limit: what was skipped or late.
    let limit = results
        .config
        .latency_limit_ms
        .filter(|_| !results.config.rate.is_empty());
    if let Some(l) = limit {
        header.extend(["skipped".to_string(), format!("late (> {l} ms)")]);
    }
    header.push("anomalies".into());
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_header(header.clone());
    for c in cells {
        let mut row = factor_values(results, c.cell);
        row.extend([c.runs_label(), fmt_tps_ci(c.tps.as_ref())]);
        if effective {
            row.push(if c.effective_tps.is_some() {
                fmt_tps_ci(c.effective_tps.as_ref())
            } else {
                super::NA.into()
            });
        }
        row.extend([
            fmt_vs_baseline(&c.vs_baseline),
            fmt_mean(c.latency.p50.as_ref(), fmt_ms),
            fmt_mean(c.latency.p99.as_ref(), fmt_ms),
            fmt_opt(c.retries_per_commit, 3),
            fmt_opt(c.failure_pct, 2),
        ]);
        if limit.is_some() {
            row.extend([c.skipped.to_string(), c.late.to_string()]);
        }
        row.push(super::fmt_cell_anomalies(c, 60));
        t.add_row(row);
    }
    // Numbers right-aligned: the numeric factors and every figure but
    // "% vs baseline" (a verdict in words) and the anomalies.
    let f = factors.len();
    let right = header.iter().enumerate().filter(|(i, h)| {
        if *i < f {
            matches!(
                h.as_str(),
                "clients" | "scale" | "pool_size" | "pooler_size" | "rate" | "max_tries"
            )
        } else {
            !h.starts_with("% vs baseline") && h.as_str() != "anomalies" && h.as_str() != "n"
        }
    });
    for (i, _) in right {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    out.push_str(&t.to_string());
    out.push('\n');
    let _ = writeln!(
        out,
        "n: complete runs; ± 95% CI of the mean (Student t); % vs baseline: mean {on} against the baseline cell,\n\
         faster/slower when Welch's t-test gives p < 0.05, else no significant difference (not enough data: < 2 runs);\n\
         anomalies: invariant violations over all runs (see report.md)."
    );
    if effective {
        let swallowed: u64 = cells.iter().map(|c| c.swallowed).sum();
        let _ = writeln!(
            out,
            "effective {name}: committed transactions whose work is in the database (pgbench_history rows), per second;\n\
             {swallowed} transaction(s) counted as committed were swallowed failures (see Failures in report.md)."
        );
    }
    if !results.config.rate.is_empty() && limit.is_none() {
        out.push_str(
            "open loop without --latency-limit: no transaction is skipped or counted late; schedule lag is in report.md.\n",
        );
    }
    let _ = writeln!(out, "baseline: {}.", m.baseline);
    // The findings' sentences (what to try is in report.md); the
    // throughput cost is in the headlines already.
    // Findings that say the data is wrong (an invariant a level should
    // keep, commits missing from the history) are always shown, first;
    // then the others up to FINDINGS_SHOWN in all.
    let mut found: Vec<_> = super::findings::findings(m)
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
        let _ = writeln!(out, "finding: {}", f.text);
    }
    if found.len() > shown {
        let _ = writeln!(out, "({} more findings in report.md)", found.len() - shown);
    }
    if !results.complete {
        out.push_str("INCOMPLETE (interrupted): statistics cover the runs recorded so far.\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// Issue #30: the finding that committed transactions left fewer
    /// history rows than they insert is printed, first, however many other
    /// findings there are.
    #[test]
    fn integrity_findings_are_always_printed_first() {
        let r = fixture::swallowed_history();
        let m = crate::report::model::ReportModel::new(&r);
        let all = crate::report::findings::findings(&m);
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
        let text = summary_of(&m);
        let first = text
            .lines()
            .find(|l| l.starts_with("finding: "))
            .expect("findings printed");
        let history = all.iter().find(|f| f.rule == "history").unwrap();
        assert_eq!(first, format!("finding: {}", history.text));
    }

    /// Issue #30: with a cell whose calls swallowed failures, the table
    /// has an effective TPS column, "% vs baseline" compares it (ser reads
    /// slower, not +50 % faster), and a line says how many were swallowed.
    #[test]
    fn effective_tps_column_and_comparison() {
        let r = fixture::swallowed_history();
        let m = crate::report::model::ReportModel::new(&r);
        let text = summary_of(&m);
        assert!(
            text.contains("effective TPS ± 95% CI (tx/s)")
                && text.contains("% vs baseline (effective)"),
            "{text}"
        );
        let ser = text
            .lines()
            .find(|l| l.contains("│ ser "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(ser.contains("150.0 ± 25.4"), "reported TPS kept: {ser}");
        assert!(ser.contains("30.7 ± 5.2"), "effective TPS: {ser}");
        assert!(ser.contains("-69.3% slower"), "{ser}");
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
        let plain = summary(&fixture::results());
        assert!(!plain.contains("effective"), "{plain}");
    }

    /// Open loop with a latency limit: skipped and late per cell.
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
        let s = summary(&r);
        assert!(s.contains("┆ skipped ┆ late (> 50 ms) ┆"), "{s}");
        let ser = s.lines().find(|l| l.contains("│ ser ")).unwrap();
        assert!(ser.contains("┆     120 ┆             30 ┆"), "{ser}");
        // Without a limit nothing is skipped or late: a line says so.
        r.config.latency_limit_ms = None;
        let s = summary(&r);
        assert!(!s.contains("skipped ┆"), "{s}");
        assert!(s.contains("open loop without --latency-limit"), "{s}");
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(summary(&fixture::results()));
    }

    #[test]
    fn one_row_per_cell() {
        let s = summary(&fixture::results());
        assert!(s.ends_with('\n'));
        assert_eq!(
            s.lines()
                .filter(|l| l.contains("│ rc ") || l.contains("│ ser "))
                .count(),
            2,
            "{s}"
        );
        assert!(s.contains("┆ +50.0% faster ┆"), "{s}");
        assert!(s.contains("baseline: the cell with isolation=rc and strategy=optimistic"));
    }

    #[test]
    fn numeric_factors_right_aligned() {
        let mut r = fixture::results();
        r.config.pool_size = vec![2];
        for run in &mut r.runs {
            run.cell.pool_size = Some(2);
        }
        let s = summary(&r);
        // clients (width of "clients") and pool_size, both right-aligned.
        assert!(s.contains("┆       4 ┆         2 ┆"), "{s}");
    }
}
