//! `report.md`: the study's configuration, the per-cell summary, and
//! the detail behind it (failures, server counters, wait events, SIRead
//! locks, plans, invariants, every run). Every figure says its unit. The
//! tables come from [`crate::report::tables`]; this module writes them out.

use std::fmt::Write as _;

use super::pipe;
use crate::report::analysis::model::ReportModel;
use crate::report::tables;
use crate::report::tables::Table;
use crate::store::Results;

/// Wait events listed per cell.
const TOP_WAIT_EVENTS: usize = 5;

/// Renders report.md.
pub fn render(results: &Results) -> String {
    render_model(&ReportModel::new(results))
}

/// Renders report.md from an aggregated model.
pub fn render_model(m: &ReportModel) -> String {
    let mut out = String::new();
    title(&mut out, m);
    headlines(&mut out, m);
    guarantees(&mut out, m);
    summary(&mut out, m);
    noise(&mut out, m);
    findings(&mut out, m);
    cell_details(&mut out, m);
    external_load(&mut out, m);
    latency(&mut out, m);
    transactions(&mut out, m);
    commands(&mut out, m);
    failures(&mut out, m);
    failure_reasons(&mut out, m);
    counters(&mut out, m);
    wait_events(&mut out, m);
    siread_locks(&mut out, m);
    pooler(&mut out, m);
    standbys(&mut out, m);
    plans(&mut out, m);
    invariants(&mut out, m);
    faults(&mut out, m);
    failovers(&mut out, m);
    hosts(&mut out, m);
    runs(&mut out, m);
    problems(&mut out, m);
    setup(&mut out, m);
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The title and one line on how complete the results are; the setup
/// (configuration and environment) is the last section.
fn title(out: &mut String, m: &ReportModel) {
    let r = m.results;
    let _ = writeln!(
        out,
        "# isobench report: {}{}\n",
        crate::report::format::workload_text(r),
        crate::report::format::scale_text(r)
    );
    let status = if r.complete {
        format!("Complete: {} runs", r.runs.len())
    } else if r.runs.is_empty() && r.finished_at.is_some() {
        format!(
            "**No run started**: the study stopped before its first run ({} planned)",
            r.config.planned_runs()
        )
    } else {
        format!(
            "**INCOMPLETE** (interrupted): {} of {} planned runs recorded",
            r.runs.len(),
            r.config.planned_runs()
        )
    };
    let _ = writeln!(
        out,
        "{status}; {}. Configuration and environment: [Setup](#setup), at the end.\n",
        crate::report::format::fmt_runs(&r.config)
    );
}

/// The answer first: one headline per cell compared with a baseline
/// ([`crate::report::analysis::findings::headlines`]).
fn headlines(out: &mut String, m: &ReportModel) {
    let h = crate::report::analysis::findings::headlines(m);
    if h.is_empty() {
        return;
    }
    out.push_str("## Headlines\n\n");
    for h in &h {
        match h.text.strip_prefix("GUARANTEE VIOLATED: ") {
            Some(rest) if h.guarantee => {
                let _ = writeln!(out, "- **GUARANTEE VIOLATED:** {rest}");
            }
            _ => {
                let _ = writeln!(out, "- {}", h.text);
            }
        }
    }
    out.push('\n');
}

/// Each checked level's promise, what its history checks found against
/// it as rates per million committed transactions, and what a report of
/// a violation needs ([`tables::guarantee`]).
fn guarantees(out: &mut String, m: &ReportModel) {
    let t = tables::guarantee::guarantees(m);
    if t.is_empty() {
        return;
    }
    out.push_str("## Guarantees\n\n");
    for p in tables::guarantee::promises(m) {
        let _ = writeln!(out, "- {p}.");
    }
    out.push_str(
        "\nCases per class as the history checker counts them (one per group of transactions \
         whose dependencies hold a cycle of the class), per million committed transactions \
         checked, with the exact 95 % Poisson interval:\n\n",
    );
    table(out, &t);
    out.push('\n');
    let how = tables::guarantee::how_to_report(m);
    if !how.is_empty() {
        out.push_str("### How to report this\n\n");
        for line in how {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
}

/// The findings, after the Cells table: one bullet each, with what to
/// try.
fn findings(out: &mut String, m: &ReportModel) {
    let found = crate::report::analysis::findings::findings(m);
    if found.is_empty() {
        return;
    }
    out.push_str("## Findings\n\n");
    for f in &found {
        out.push_str(&format!("- {}", f.text));
        if let Some(a) = &f.advice {
            out.push_str(&format!(" Try: {a}."));
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Appends `t` as a Markdown table ([`pipe::Layout::Plain`]).
fn table(out: &mut String, t: &Table) {
    out.push_str(&pipe::table(t, pipe::Layout::Plain));
}

/// The configuration and the environment, last (the title says how
/// complete the results are): [`tables::setup::items`].
fn setup(out: &mut String, m: &ReportModel) {
    out.push_str("## Setup\n\n");
    for item in tables::setup::items(m.results) {
        let _ = writeln!(out, "- **{}:** {}", item.label, item.value);
    }
    out.push('\n');
}

/// The Cells table, right after the headlines.
fn summary(out: &mut String, m: &ReportModel) {
    out.push_str("## Cells\n\n");
    if m.cells.is_empty() {
        out.push_str("No runs recorded.\n\n");
        return;
    }
    out.push_str(&tables::cells_note(m));
    out.push_str("\n\n");
    table(out, &tables::summary(m));
    let notes = tables::cells::verdict_notes(m);
    if !notes.is_empty() {
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
        out.push('\n');
    }
}

/// A calibration's noise (`isobench calibrate`), after the Cells table.
fn noise(out: &mut String, m: &ReportModel) {
    let Some(n) = &m.noise else {
        return;
    };
    let _ = writeln!(out, "## {}\n", tables::noise::noise_title(n));
    out.push_str(&tables::noise::noise_note(n));
    out.push_str("\n\n");
    table(out, &tables::noise::noise(n));
}

/// The per-cell figures the Cells table leaves out, and how all of them
/// are computed.
fn cell_details(out: &mut String, m: &ReportModel) {
    if m.cells.is_empty() {
        return;
    }
    out.push_str("## Cells in detail\n\n");
    out.push_str(tables::CELL_DETAILS_NOTE);
    for note in tables::summary_notes(m) {
        out.push(' ');
        out.push_str(note);
    }
    out.push_str("\n\n");
    table(out, &tables::cell_details(m));
}

/// The load tool's own figures, per cell and per run (external loads).
fn external_load(out: &mut String, m: &ReportModel) {
    let Some((by_cell, by_run)) = tables::external_load(m) else {
        return;
    };
    out.push_str(
        "## External load

What the load command reported, per cell over its complete runs (latency and \
         bytes/s: mean of the runs' values; counts: summed). The server was observed from the command's \
         start to its end. Failed runs (a command failed or its output did not parse) are kept but left \
         out of the statistics; see Problems.\n\n",
    );
    table(out, &by_cell);
    out.push_str("### Commands\n\nPer run, as run (secrets shown as placeholders); output files are relative to the results directory.\n\n");
    table(out, &by_run);
}

fn latency(out: &mut String, m: &ReportModel) {
    out.push_str(
        "## Latency (merged histograms)\n\nEvery committed transaction of a cell's complete runs, from the runs' \
         merged HdrHistograms (first attempt start to commit; a run weighs by its transactions, unlike the \
         summary's means over runs). % vs baseline: change of the merged percentile against the baseline \
         cell's (lower is better). p and verdict: Welch's t-test on the runs' own p99 (one value per complete \
         run), since one merged histogram per cell has no run-to-run spread to test; faster means a lower p99.\n\n",
    );
    let t = tables::latency(m);
    if t.is_empty() {
        out.push_str("No runs recorded.\n\n");
    } else {
        table(out, &t);
    }
}

fn transactions(out: &mut String, m: &ReportModel) {
    out.push_str(
        "## Transactions by type\n\nPooled over each cell's complete runs: counts summed, latency from the \
         runs' merged histograms. User aborts are rollbacks the workload makes on purpose (e.g. an overdraft \
         refused), not failures.\n\n",
    );
    let t = tables::transactions(m);
    if t.is_empty() {
        out.push_str("No transactions recorded.\n\n");
    } else {
        table(out, &t);
    }
}

/// Per-command latency of pgbench scripts (like `pgbench -r`); only when
/// a workload timed commands.
fn commands(out: &mut String, m: &ReportModel) {
    let t = tables::commands(m);
    if t.is_empty() {
        return;
    }
    out.push_str(
        "## Latency by command\n\nLike `pgbench -r`: every execution of each script command in the measured \
         window of a cell's complete runs, retried attempts included; mean time per execution. Failures: \
         executions that raised the error ending their attempt.\n\n",
    );
    table(out, &t);
}

fn failures(out: &mut String, m: &ReportModel) {
    out.push_str("## Failures by SQLSTATE\n\nTransactions that gave up, by the SQLSTATE of their last error, summed over complete runs.");
    if m.effective_differs() {
        out.push_str(&format!(" {}", tables::SWALLOWED_NOTE));
    }
    out.push_str("\n\n");
    let t = tables::failures(m);
    if t.is_empty() {
        out.push_str("No transaction failed.\n\n");
    } else {
        table(out, &t);
    }
}

/// Failed attempts by reason and statement; only when an attempt failed
/// (and the results record reasons).
fn failure_reasons(out: &mut String, m: &ReportModel) {
    let t = tables::failures::reasons(m);
    if t.is_empty() {
        return;
    }
    out.push_str(&format!(
        "## Failures by reason

{}

",
        tables::failures::REASONS_NOTE
    ));
    table(out, &t);
}

fn counters(out: &mut String, m: &ReportModel) {
    out.push_str(
        "## Server counters (pg_stat_database)\n\nMean rate per second: time-weighted over each run's sample \
         intervals, then averaged over complete runs. Counters can lag by up to ~1 s (PostgreSQL 15+ flushes \
         backend statistics about once a second).\n\n",
    );
    if m.counter_names.is_empty() {
        out.push_str("No pg_stat_database samples.\n\n");
        return;
    }
    table(out, &tables::counters(m, &m.factors.labels));
}

fn wait_events(out: &mut String, m: &ReportModel) {
    let _ = write!(
        out,
        "## Wait events\n\nTop {TOP_WAIT_EVENTS} per cell of the workload's backends, sampled once a second \
         (`CPU`: active, not waiting); share of all observations of the cell's complete runs.\n\n"
    );
    let t = tables::wait_events(m, TOP_WAIT_EVENTS);
    if t.is_empty() {
        out.push_str("No wait-event samples.\n\n");
    } else {
        table(out, &t);
    }
}

fn siread_locks(out: &mut String, m: &ReportModel) {
    out.push_str(
        "## SIRead locks\n\nPredicate locks (`pg_locks`, mode SIReadLock) sampled every sample interval (`--sample-interval`) under SERIALIZABLE: mean count \
         averaged over complete runs, and the largest count of any sample.\n\n",
    );
    let all: Vec<usize> = (0..m.cells.len()).collect();
    table(out, &tables::siread_locks(m, &all));
}

fn pooler(out: &mut String, m: &ReportModel) {
    let t = tables::pooler(m);
    if t.is_empty() {
        return;
    }
    let _ = write!(out, "## pgbouncer\n\n{}\n\n", tables::POOLER_NOTE);
    table(out, &t);
}

/// Only when a run went through a failover.
fn failovers(out: &mut String, m: &ReportModel) {
    let t = tables::failovers(m);
    if t.is_empty() {
        return;
    }
    let _ = write!(out, "## Failovers\n\n{}\n\n", tables::FAILOVERS_NOTE);
    table(out, &t);
}

/// Only when the server had standbys.
fn standbys(out: &mut String, m: &ReportModel) {
    let t = tables::standbys(m);
    if t.is_empty() {
        return;
    }
    let _ = write!(out, "## Standbys\n\n{}\n\n", tables::STANDBYS_NOTE);
    table(out, &t);
}

fn plans(out: &mut String, m: &ReportModel) {
    out.push_str(&format!("## Plans\n\n{PLANS_NOTE}\n\n"));
    if m.plans.is_empty() {
        out.push_str("No plans recorded.\n\n");
    }
    for g in &m.plans {
        let _ = writeln!(
            out,
            "### {} ({})\n\n```sql\n{}\n```\n\n```\n{}\n```\n",
            g.label,
            g.who(&m.factors.short_labels),
            g.sql,
            g.plan
        );
    }
    let changes = m.plan_change_groups();
    if !changes.is_empty() {
        out.push_str(&format!(
            "### Plans that changed within a run\n\n{PLAN_CHANGES_NOTE}\n\n"
        ));
        for g in &changes {
            let _ = writeln!(out, "- {}.", g.text());
        }
        out.push('\n');
    }
}

/// What the Plans section shows (report.md and report.html).
pub(super) const PLANS_NOTE: &str = "EXPLAIN of each workload statement when each run's measured window \
     started and again when it ended; each distinct plan (estimates aside; those shown are from its \
     first EXPLAIN) once, with the cells that ran it. A cell named alone ran that plan at the start and \
     at the end of every one of its runs; otherwise the runs are named.";

/// What the list of plans that changed within a run says.
pub(super) const PLAN_CHANGES_NOTE: &str = "EXPLAIN when the window ended gave another plan than when \
     it started (estimates aside): the first step where the two part.";

fn invariants(out: &mut String, m: &ReportModel) {
    out.push_str("## Invariants\n\nChecked after every run, interrupted ones included.\n\n");
    let t = tables::invariant_checks(m);
    if t.is_empty() {
        out.push_str("No invariant was checked.\n\n");
    } else {
        out.push_str("Per cell: runs that checked each invariant, violations (anomalies) in all and per 1,000 transactions committed in those runs' measured windows (warm-up and drain commits are checked too, so this slightly overstates the rate), and an example.\n\n");
        table(out, &tables::invariant_summary(m));
        out.push_str("Every check of every run:\n\n");
        table(out, &t);
    }
}

/// Only when a run had faults.
fn faults(out: &mut String, m: &ReportModel) {
    let t = tables::faults(m);
    if t.is_empty() {
        return;
    }
    out.push_str(
        "## Faults\n\nRuns whose clients lost connections (and reconnected) or whose server crashed or restarted. \
         They measured their whole window and count in the statistics. Outage: from the first loss to the first \
         commit after it; recovery: until a second of the window was back at 90 % of the throughput before the loss.\n\n",
    );
    let c = &m.results.config;
    if !c.faults.is_empty() {
        out.push_str(&format!(
            "Faults injected into every run (`--fault`): {}; injected: when each was injected (s since the \
             measured window began) and what it did.\n\n",
            c.faults.join(", ")
        ));
    } else if !c.fault_plans.is_empty() {
        out.push_str(&format!(
            "The fault plan is a factor (`--fault-plan`, column fault_plan of the tables): {}; injected: \
             when each fault was injected (s since the measured window began) and what it did.\n\n",
            c.fault_plans.join(", ")
        ));
    }
    out.push_str(
        "Per cell (unknown outcomes and lost commits over all its runs; lost commits: acknowledged commits \
         missing from the database afterwards, n/a where the workload cannot tell):\n\n",
    );
    table(out, &tables::cell_faults(m));
    out.push_str("Every faulted run:\n\n");
    table(out, &t);
}

/// Only when a run had more than one host (`--host-policy`).
fn hosts(out: &mut String, m: &ReportModel) {
    let t = tables::hosts(m);
    if t.is_empty() {
        return;
    }
    out.push_str("## Per host\n\n");
    out.push_str(&tables::host_note(m));
    out.push_str("\n\n");
    table(out, &t);
}

fn runs(out: &mut String, m: &ReportModel) {
    out.push_str("## Runs\n\nIn execution order.");
    if !m.outlier_runs.is_empty() {
        out.push_str(
            " (outlier): the run's TPS has a modified z-score |M| > 3.5 among its cell's complete runs \
             (Iglewicz & Hoaglin, `M = 0.6745 (x - median) / MAD`); it still counts in the statistics.",
        );
    }
    out.push_str("\n\n");
    table(out, &tables::runs(m));
}

fn problems(out: &mut String, m: &ReportModel) {
    let lines = tables::problems(m);
    if !lines.is_empty() {
        let _ = writeln!(out, "## Problems\n\n- {}\n", lines.join("\n- "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;
    use crate::store::WaitSummary;

    /// The rows of the Cells table (header and separator excluded).
    fn summary_rows(md: &str) -> Vec<&str> {
        let section = md
            .split("## Cells\n")
            .nth(1)
            .unwrap()
            .split("\n## ")
            .next()
            .unwrap();
        section
            .lines()
            .filter(|l| l.starts_with("| "))
            .skip(1)
            .filter(|l| !l.starts_with("| ---"))
            .collect()
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&fixture::results()));
    }

    #[test]
    fn one_summary_row_per_cell_with_pct_vs_baseline() {
        let md = render(&fixture::results());
        let rows = summary_rows(&md);
        assert_eq!(rows.len(), 2, "{rows:#?}");
        // Only the varying factor (isolation); the others are named once.
        assert!(
            md.contains("Same in every cell: strategy optimistic, clients 4."),
            "{md}"
        );
        assert!(
            rows[0].starts_with("| rc | 2 | 100.0 ± ") && rows[0].contains("| baseline |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].starts_with("| ser | 2 (+1 interrupted) | 150.0 ± "),
            "{}",
            rows[1]
        );
        // ser 148, 152 against rc 98, 102 on the log scale
        // (stats::pct_ci95): u = 8 / (2 · 150²) and 8 / (2 · 100²),
        // ν = 1.742268, t(0.975, ν) = 4.974031, half-width 0.11956082
        // around ln 1.5: [+33.097 %, +69.050 %].
        // Two complete runs a side: the interval, but no verdict.
        assert!(
            rows[1].contains("| +50.0% [+33.1%, +69.1%] (too few runs) |"),
            "{}",
            rows[1]
        );
        let details = section_rows(&md, "Cells in detail");
        assert!(details[2].contains("| too few runs |"), "{}", details[2]);
        // A third run a side: significantly higher.
        let md = render(&fixture::third_runs(fixture::results()));
        let rows = section_rows(&md, "Cells");
        let ser = rows.iter().find(|r| r.starts_with("| ser ")).unwrap();
        assert!(ser.contains("▲ |"), "{ser}");
        let details = section_rows(&md, "Cells in detail");
        let ser = details.iter().find(|r| r.starts_with("| ser ")).unwrap();
        assert!(ser.contains("| faster |"), "{ser}");
    }

    /// Issue #31: report.md opens with the answer: its first section is
    /// the headlines, one per compared cell with the interval of its
    /// throughput change and the share of failed transactions; then the
    /// Cells table; the setup is the last section.
    #[test]
    fn the_first_section_is_the_headlines_then_cells() {
        let md = render(&fixture::with_clients(fixture::results()));
        let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert_eq!(headings[..3], ["## Headlines", "## Cells", "## Findings"]);
        assert_eq!(headings.last(), Some(&"## Setup"));
        let section = md.split("## Headlines\n\n").nth(1).unwrap();
        let items: Vec<&str> = section.split("\n\n").next().unwrap().lines().collect();
        // 6 cells, one baseline (rc) per clients value: 3 headlines.
        assert_eq!(items.len(), 3, "{items:#?}");
        for (item, clients) in items.iter().zip([1, 4, 8]) {
            assert!(
                item.starts_with(&format!("- ser · clients={clients}: +")),
                "{item}"
            );
            assert!(
                item.contains(" vs rc (95 % CI [") && item.contains("% of transactions failed"),
                "{item}"
            );
        }
    }

    /// The rows of the section titled `title` (header included, separator
    /// excluded).
    fn section_rows<'a>(md: &'a str, title: &str) -> Vec<&'a str> {
        md.split(&format!("## {title}\n"))
            .nth(1)
            .unwrap()
            .split("\n## ")
            .next()
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| ---"))
            .collect()
    }

    #[test]
    fn pool_rate_columns_only_when_factors() {
        let md = render(&fixture::results());
        assert!(!md.contains("pool wait") && !md.contains("schedule lag"));
        let mut r = fixture::results();
        r.config.pool_size = vec![2];
        r.config.rate = vec![120.0];
        r.config.latency_limit_ms = Some(50.0);
        for run in &mut r.runs {
            run.cell.pool_size = Some(2);
            run.cell.rate = Some(crate::store::Rate(120.0));
            run.pool_wait_ms = Some(WaitSummary {
                count: 100,
                mean: 1.5,
                p50: 1.0,
                p99: 7.25,
                max: 9.0,
            });
            run.schedule_lag_ms = Some(WaitSummary {
                count: 100,
                mean: 0.25,
                p50: 0.125,
                p99: 3.5,
                max: 4.0,
            });
            run.skipped = 2;
            run.late = 1;
        }
        let md = render(&r);
        let summary = section_rows(&md, "Cells in detail");
        assert!(
            summary[0].contains(
                "| pool wait mean (ms, mean of runs) | pool wait p99 (ms, worst run) | schedule lag mean (ms, mean of runs) | schedule lag p99 (ms, worst run) | skipped (transactions) | late (transactions) |"
            ),
            "{}",
            summary[0]
        );
        // ser: complete runs 2 and 4 only.
        assert!(
            summary[2].contains("| 1.500 | 7.250 | 0.250 | 3.500 | 4 | 2 |"),
            "{}",
            summary[2]
        );
        let runs = section_rows(&md, "Runs");
        assert!(
            runs[0]
                .contains("| pool wait mean (ms) | pool wait p99 (ms) | schedule lag mean (ms) |")
        );
        assert!(
            runs[1].contains("| 1.500 | 7.250 | 0.250 | 3.500 | 2 | 1 |"),
            "{}",
            runs[1]
        );
        assert!(md.contains("- **Pool sizes (connections):** 2\n"));
        assert!(md.contains("- **Target rates (tx/s, open loop):** 120\n"));
    }

    #[test]
    fn outliers_and_server_versions_in_runs() {
        assert!(!render(&fixture::results()).contains("server version"));
        // rc: 98, 102, 100, 99, 150 tx/s: 150 is an outlier (M = 16.86).
        let r = fixture::with_outliers();
        let md = render(&r);
        let runs = section_rows(&md, "Runs");
        assert!(runs[0].starts_with("| run | cell | repetition | server version |"));
        assert!(runs[1].contains("| 16.4 | 60.0 | 98.0 |"), "{}", runs[1]);
        assert!(
            runs[8].contains("| 17.2 | 60.0 | 150.0 (outlier) |"),
            "{}",
            runs[8]
        );
        assert_eq!(md.matches("(outlier) |").count(), 1);
        let summary = section_rows(&md, "Cells in detail");
        assert!(summary[0].contains("| outlier runs (TPS) |"));
        // rc (the baseline) lists run 8; ser has none.
        assert!(
            summary[1].contains("| baseline | n/a | 8 |"),
            "{}",
            summary[1]
        );
        // ser has 2 complete runs: too few for a verdict, but an MDE.
        assert!(summary[2].contains("| too few runs | ±"), "{}", summary[2]);
        assert!(summary[2].contains(" | none |"), "{}", summary[2]);
        // The Server item lists every version the runs reported.
        assert!(md.contains("- **Server:** PostgreSQL 16.4, 17.2\n"));
    }

    /// Builds named in `pg_bin` appear by label (with their server version
    /// and, once, their directory in the header), never as a path in the
    /// tables.
    #[test]
    fn builds_by_label() {
        let md = render(&fixture::with_builds());
        insta::assert_snapshot!(md);
        assert!(md.contains(
            "- **Server builds (pg_bin):** stock: PostgreSQL 16.4 from /usr/lib/postgresql/16/bin; \
             finer-lock: PostgreSQL 18.1 from /opt/pg-patched/bin\n"
        ));
        let summary = summary_rows(&md);
        assert!(summary[0].starts_with("| rc | stock |"), "{summary:?}");
        assert!(summary[2].starts_with("| rc | finer-lock |"), "{summary:?}");
        let runs = section_rows(&md, "Runs");
        assert!(
            runs.iter().any(|r| r.contains("pg_bin=finer-lock")),
            "{runs:?}"
        );
        let tables: String = md
            .lines()
            .filter(|l| l.starts_with('|'))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!tables.contains("/opt/pg-patched"), "{tables}");
    }

    /// A store written before builds had labels: its cells and `pg_bin`
    /// hold the directories, and `pg_bin_dirs` is empty.
    #[test]
    fn builds_of_an_older_store_by_directory() {
        let mut r = fixture::with_builds();
        let dirs = std::mem::take(&mut r.config.pg_bin_dirs);
        for l in &mut r.config.pg_bin {
            *l = dirs[l.as_str()].clone();
        }
        for run in &mut r.runs {
            let label = run.cell.pg_bin.take().unwrap();
            run.cell.pg_bin = Some(dirs[&label].clone());
        }
        let md = render(&r);
        assert!(md.contains(
            "- **Server builds (pg_bin):** /usr/lib/postgresql/16/bin: PostgreSQL 16.4; \
             /opt/pg-patched/bin: PostgreSQL 18.1\n"
        ));
        assert!(md.contains("clients=4 pg_bin=/opt/pg-patched/bin"));
    }

    /// Issue #31: a plan that changed within a run is told the same way
    /// in the findings and in Plans: `update teller` ran as a Seq Scan
    /// at the start of both rc runs and at the end of run 3, as an Index
    /// Scan at the end of run 1.
    #[test]
    fn a_plan_that_changed_within_a_run_is_one_story_in_findings_and_plans() {
        assert!(!render(&fixture::results()).contains("Plans that changed within a run"));
        let md = render(&fixture::plan_changed());
        let section = |title: &str| {
            let from = md.find(&format!("\n## {title}\n")).unwrap() + 1;
            let len = md[from + 3..]
                .find("\n## ")
                .map_or(md.len() - from, |l| l + 3);
            &md[from..from + len]
        };
        let (findings, plans) = (section("Findings"), section("Plans"));
        let index = "Index Scan using pgbench_tellers_pkey on pgbench_tellers";
        // The SIRead finding: ser's Seq Scan, and rc's two plans with when.
        let rc = format!(
            "(but in rc: Seq Scan on pgbench_tellers at the start of every run and at the end of run 3, \
             {index} at the end of run 1)"
        );
        assert!(
            findings.contains(&format!(
                "`update teller` ran as Seq Scan on pgbench_tellers {rc}"
            )),
            "{findings}"
        );
        assert!(!findings.contains(&format!("{index} in rc")), "{findings}");
        // Plans: each plan with the same cells and times.
        for (who, step) in [
            (
                "rc at the start of every run and at the end of run 3; ser",
                "Seq Scan on pgbench_tellers",
            ),
            ("rc at the end of run 1", index),
        ] {
            let h = format!("### update teller ({who})\n");
            let at = plans.find(&h).unwrap_or_else(|| panic!("{h}: {plans}"));
            let block = &plans[at + h.len()..];
            let block = &block[..block.find("\n### ").unwrap_or(block.len())];
            assert!(block.contains(step), "{block}");
        }
        // The change: one sentence, in both.
        let change = format!(
            "`update teller` changed plan within run 1 (rc): Seq Scan on pgbench_tellers at the \
             start, {index} at the end."
        );
        assert!(findings.contains(&change), "{findings}");
        let changes = &plans[plans.find("### Plans that changed within a run").unwrap()..];
        assert!(changes.contains(&format!("- {change}")), "{changes}");
    }

    #[test]
    fn empty_results_render() {
        let mut r = fixture::results();
        r.runs.clear();
        r.load.clear();
        let md = render(&r);
        assert!(summary_rows(&md).is_empty());
        assert!(md.contains("No transaction failed.") && md.contains("No plans recorded."));
    }

    /// Results whose second run spread its clients over two hosts.
    fn two_hosts() -> crate::store::Results {
        let mut r = fixture::results();
        let run = &mut r.runs[1];
        run.committed = 400;
        let host =
            |host: &str, clients, refused, committed, tps, p99_ms| crate::model::HostRecord {
                host: host.into(),
                clients,
                refused,
                committed,
                tps,
                p50_ms: 1.5,
                p99_ms,
                failed: 2,
                latency_histogram: String::new(),
            };
        run.hosts = vec![
            host("/var/run/postgresql:5432", 2, 0, 300, 30.0, 4.25),
            host("127.0.0.1:5432", 2, 1, 100, 10.0, 12.5),
        ];
        r
    }

    #[test]
    fn a_per_host_section_only_when_a_run_had_several_hosts() {
        assert!(!render(&fixture::results()).contains("## Per host"));
        let r = two_hosts();
        let md = render(&r);
        let section = md.split("## Per host").nth(1).unwrap();
        let section = section.split("## Runs").next().unwrap();
        let rows: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with(&format!("| {} ", r.runs[1].index)))
            .collect();
        assert_eq!(rows.len(), 2, "{section}");
        // Host, clients, refused, committed, share of the run, tps, p50, p99, failed.
        assert!(
            rows[0].ends_with(
                "| `/var/run/postgresql:5432` | 2 | 0 | 300 | 75.0 | 30.0 | 1.500 | 4.250 | 2 |"
            ),
            "{}",
            rows[0]
        );
        assert!(
            rows[1]
                .ends_with("| `127.0.0.1:5432` | 2 | 1 | 100 | 25.0 | 10.0 | 1.500 | 12.50 | 2 |"),
            "{}",
            rows[1]
        );
        assert!(section.contains("--host-policy"), "{section}");
    }

    #[test]
    fn a_faults_section_only_when_a_run_had_faults() {
        assert!(!render(&fixture::results()).contains("## Faults"));
        let md = render(&fixture::faulted());
        let section = md.split("## Faults").nth(1).unwrap();
        let section = section.split("## Runs").next().unwrap();
        let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| 2 ")).collect();
        assert_eq!(rows.len(), 1, "{section}");
        for cell in [
            "| 4 | 4 | 2.50 | 0.75 | 1.50 | 0.40 | 3 |",
            "terminated by signal 9",
        ] {
            assert!(rows[0].contains(cell), "{cell}: {}", rows[0]);
        }
        // Per cell: the faulted run among its cell's runs, its outage and
        // recovery as mean and max, the 3 lost commits.
        let per_cell: Vec<&str> = section.lines().filter(|l| l.contains(" 1 of ")).collect();
        assert_eq!(per_cell.len(), 1, "{section}");
        assert!(
            per_cell[0].ends_with("| 0.75 | 0.75 | 1.50 | 1.50 | 1 | 3 |"),
            "{}",
            per_cell[0]
        );
        let runs = md.split("## Runs").nth(1).unwrap();
        assert!(runs.contains("yes (faulted, see Faults)"), "{runs}");
    }

    #[test]
    fn exclude_faulted_leaves_faulted_runs_out_of_the_statistics() {
        let r = fixture::faulted();
        let faulted = r.runs.iter().find(|run| run.faults.is_some()).unwrap();
        let cell = crate::report::analysis::cells::aggregate(&r)
            .into_iter()
            .find(|c| *c.cell == faulted.cell)
            .unwrap();
        assert!(cell.complete_runs().any(|x| x.index == faulted.index));
        let n = cell.n;
        let mut ex = r.clone();
        ex.config.exclude_faulted = true;
        let cells = crate::report::analysis::cells::aggregate(&ex);
        let cell = cells.iter().find(|c| *c.cell == faulted.cell).unwrap();
        assert_eq!(cell.n, n - 1);
        assert!(!cell.complete_runs().any(|x| x.index == faulted.index));
        let md = render(&ex);
        let runs = md.split("## Runs").nth(1).unwrap();
        assert!(
            runs.contains("yes (faulted, excluded from the statistics)"),
            "{runs}"
        );
    }
}
