//! `report.md`: the experiment's configuration, the per-cell summary, and
//! the detail behind it (failures, server counters, wait events, SIRead
//! locks, plans, invariants, every run). Every figure says its unit.

use std::fmt::Write as _;

use super::cells::{self, CellSummary};
use super::{
    NA, fmt_fixed, fmt_mean, fmt_ms, fmt_opt, fmt_tps, fmt_tps_ci, fmt_vs_baseline, server,
};
use crate::config::Backoff;
use crate::engine::retry::sqlstate_name;
use crate::store::Results;

/// Wait events listed per cell.
const TOP_WAIT_EVENTS: usize = 5;

/// Renders report.md.
pub fn render(results: &Results) -> String {
    let cells = cells::aggregate(results);
    let mut out = String::new();
    header(&mut out, results);
    summary(&mut out, results, &cells);
    transactions(&mut out, results, &cells);
    failures(&mut out, &cells);
    counters(&mut out, &cells);
    wait_events(&mut out, &cells);
    siread_locks(&mut out, &cells);
    plans(&mut out, &cells);
    invariants(&mut out, results);
    runs(&mut out, results);
    problems(&mut out, results);
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// Appends a Markdown table; `|` in cells is escaped, newlines flattened.
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&line(header.iter().map(|h| esc(h)).collect()));
    out.push_str(&line(header.iter().map(|_| "---".to_string()).collect()));
    for r in rows {
        out.push_str(&line(r.iter().map(|c| esc(c)).collect()));
    }
    out.push('\n');
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn header(out: &mut String, r: &Results) {
    let c = &r.config;
    let e = &r.environment;
    let scale = match c.scale.as_slice() {
        [] => String::new(),
        [s] => format!(", scale {s}"),
        many => format!(
            ", scale {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
    };
    let _ = writeln!(out, "# isobench report: {}{scale}\n", c.workload);
    let planned = c.planned_runs();
    let status = if r.complete {
        format!("complete ({} runs)", r.runs.len())
    } else {
        format!(
            "INCOMPLETE (interrupted): {} of {planned} planned runs recorded",
            r.runs.len()
        )
    };
    let list = |v: Vec<String>| v.join(", ");
    let mut retry = format!(
        "up to {} tries per transaction, retrying {}",
        c.retry.max_tries,
        list(
            c.retry
                .retry_on
                .iter()
                .map(|s| format!("{s} ({})", sqlstate_name(s)))
                .collect()
        )
    );
    match c.retry.backoff {
        Backoff::None => retry.push_str("; no backoff"),
        Backoff::Exponential { base, max } => {
            let _ = write!(
                retry,
                "; exponential backoff with full jitter, {} to {}",
                humantime::format_duration(base),
                humantime::format_duration(max)
            );
        }
    }
    let load = if r.load.is_empty() {
        NA.to_string()
    } else {
        list(
            r.load
                .iter()
                .map(|l| {
                    let what = if l.data.is_empty() {
                        String::new()
                    } else {
                        format!("{}: ", l.data)
                    };
                    format!("{what}{:.2} s ({} rows)", l.elapsed.as_secs_f64(), l.rows)
                })
                .collect(),
        )
    };
    let params = if c.params.is_empty() {
        "none given".to_string()
    } else {
        list(
            c.params
                .iter()
                .map(|(k, v)| format!("{k}={}", v.join(",")))
                .collect(),
        )
    };
    let settings = |m: &std::collections::BTreeMap<String, String>| {
        if m.is_empty() {
            "none".into()
        } else {
            list(m.iter().map(|(k, v)| format!("{k}={v}")).collect())
        }
    };
    let items = [
        ("Status", status),
        ("isobench", r.isobench_version.clone()),
        ("Started", r.started_at.clone()),
        (
            "Finished",
            r.finished_at.clone().unwrap_or_else(|| NA.into()),
        ),
        ("Target", c.target.clone()),
        (
            "Server",
            format!(
                "PostgreSQL {} on {} ({}, {} CPUs)",
                e.server_version, e.host, e.os, e.cpus
            ),
        ),
        ("Server settings", settings(&e.server_settings)),
        ("`--set`", settings(&c.settings)),
        ("Workload", format!("{}{scale}; load {load}", c.workload)),
        ("Parameters (factors)", params),
        ("Parameter defaults", settings(&c.param_defaults)),
        ("Strategies", list(c.strategies.clone())),
        (
            "Isolation levels",
            list(c.isolation.iter().map(|i| i.short().to_string()).collect()),
        ),
        (
            "Clients",
            list(c.clients.iter().map(u32::to_string).collect()),
        ),
        ("Repetitions", format!("{} per cell", c.repeat)),
        (
            "Runs",
            format!(
                "{} s measured after {} s warm-up; server counters sampled every {} s",
                c.duration_s, c.warmup_s, c.sample_interval_s
            ),
        ),
        ("Retry policy", retry),
        ("Seed", c.seed.to_string()),
    ];
    for (k, v) in items {
        let _ = writeln!(out, "- **{k}:** {v}");
    }
    out.push('\n');
}

fn summary(out: &mut String, r: &Results, cells: &[CellSummary]) {
    out.push_str("## Summary\n\n");
    out.push_str(
        "Statistics over complete runs only (interrupted runs are listed but not counted). \
         ± is the half-width of the 95 % confidence interval of the mean (Student t, n - 1 degrees of freedom; \
         n/a with one run). % vs baseline compares mean TPS (goodput: committed transactions per second) with \
         the cell of the first isolation level and first strategy at the same other factor values; \
         (significant) / (n.s.): Welch's t-test at the 5 % level. Latencies are means over runs of each \
         run's figure. Abort ratio: attempts that neither committed nor were rolled back by the workload \
         on purpose (retried and failed attempts) / attempts. Wasted time: share of client \
         time spent in attempts that did not commit. Anomalies: invariant violations summed over all runs, \
         with the first example.\n\n",
    );
    let ssibench = matches!(r.config.workload.as_str(), "ssibench" | "simple-ssibench");
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut row = super::factor_values(r, c.cell);
            row.extend([
                c.runs_label(),
                fmt_tps_ci(c.tps.as_ref()),
                fmt_vs_baseline(&c.vs_baseline),
            ]);
            if ssibench {
                row.push(fmt_mean(c.tps.as_ref(), |v| fmt_fixed(v / 1000.0, 3)));
            }
            row.extend([
                fmt_mean(c.latency.mean.as_ref(), fmt_ms),
                fmt_mean(c.latency.p50.as_ref(), fmt_ms),
                fmt_mean(c.latency.p95.as_ref(), fmt_ms),
                fmt_mean(c.latency.p99.as_ref(), fmt_ms),
                fmt_opt(c.retries_per_commit, 3),
                fmt_opt(c.failure_pct, 2),
                fmt_opt(c.abort_ratio, 3),
                fmt_mean(c.wasted_time_pct.as_ref(), |v| fmt_fixed(v, 1)),
                c.unknown_outcome.to_string(),
                super::fmt_anomalies(c.anomalies, c.anomaly_example.as_deref(), 200),
            ]);
            row
        })
        .collect();
    let mut header = super::factor_headers(r);
    header.extend(
        [
            "runs (n)",
            "TPS mean ± 95% CI (tx/s)",
            "% vs baseline (TPS)",
        ]
        .map(String::from),
    );
    if ssibench {
        header.push("KTPS (1000 tx/s)".into());
    }
    header.extend(
        [
            "latency mean (ms)",
            "p50 (ms)",
            "p95 (ms)",
            "p99 (ms)",
            "retries per commit (ratio)",
            "failed (% of transactions)",
            "abort ratio (attempts)",
            "wasted time (% of client time)",
            "unknown outcomes (transactions)",
            "anomalies (violations)",
        ]
        .map(String::from),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(out, &header, &rows);
}

fn transactions(out: &mut String, r: &Results, cells: &[CellSummary]) {
    out.push_str(
        "## Transactions by type\n\nPooled over each cell's complete runs: counts summed, latency from the \
         runs' merged histograms. User aborts are rollbacks the workload makes on purpose (e.g. an overdraft \
         refused), not failures.\n\n",
    );
    let mut rows = Vec::new();
    for c in cells {
        for t in &c.types {
            let failed = if t.failed.is_empty() {
                "0".to_string()
            } else {
                t.failed
                    .iter()
                    .map(|(code, n)| format!("{n} {} ({code})", sqlstate_name(code)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut row = super::factor_values(r, c.cell);
            row.extend([
                t.name.clone(),
                t.committed.to_string(),
                fmt_tps(t.tps),
                t.user_aborts.to_string(),
                failed,
                fmt_opt(t.failure_pct(), 2),
                t.latency.map_or_else(|| NA.into(), |l| fmt_ms(l.p50)),
                t.latency.map_or_else(|| NA.into(), |l| fmt_ms(l.p99)),
            ]);
            rows.push(row);
        }
    }
    if rows.is_empty() {
        out.push_str("No transactions recorded.\n\n");
        return;
    }
    let mut header = super::factor_headers(r);
    header.extend(
        [
            "transaction",
            "committed (transactions)",
            "TPS (tx/s)",
            "user aborts (transactions)",
            "failed (by SQLSTATE)",
            "failed (%)",
            "p50 (ms)",
            "p99 (ms)",
        ]
        .map(String::from),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(out, &header, &rows);
}

fn failures(out: &mut String, cells: &[CellSummary]) {
    out.push_str("## Failures by SQLSTATE\n\nTransactions that gave up, by the SQLSTATE of their last error, summed over complete runs.\n\n");
    let rows: Vec<Vec<String>> = cells
        .iter()
        .flat_map(|c| {
            c.failures.iter().map(|(code, n)| {
                vec![
                    c.cell.label(),
                    code.clone(),
                    sqlstate_name(code).to_string(),
                    n.to_string(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        out.push_str("No transaction failed.\n\n");
    } else {
        table(
            out,
            &["cell", "SQLSTATE", "name", "failed (transactions)"],
            &rows,
        );
    }
}

fn counters(out: &mut String, cells: &[CellSummary]) {
    out.push_str(
        "## Server counters (pg_stat_database)\n\nMean rate per second: time-weighted over each run's sample \
         intervals, then averaged over complete runs. Counters can lag by up to ~1 s (PostgreSQL 15+ flushes \
         backend statistics about once a second).\n\n",
    );
    let rates: Vec<_> = cells.iter().map(server::counter_rates).collect();
    let names = server::counter_names(&rates);
    if names.is_empty() {
        out.push_str("No pg_stat_database samples.\n\n");
        return;
    }
    let labels: Vec<String> = cells.iter().map(|c| c.cell.label()).collect();
    let mut header = vec!["counter (per s)"];
    header.extend(labels.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|n| {
            let mut row = vec![n.clone()];
            row.extend(rates.iter().map(|r| fmt_opt(r.get(n).copied(), 1)));
            row
        })
        .collect();
    table(out, &header, &rows);
}

fn wait_events(out: &mut String, cells: &[CellSummary]) {
    let _ = write!(
        out,
        "## Wait events\n\nTop {TOP_WAIT_EVENTS} per cell of the workload's backends, sampled once a second \
         (`CPU`: active, not waiting); share of all observations of the cell's complete runs.\n\n"
    );
    let mut rows = Vec::new();
    for c in cells {
        let (total, top) = server::top_wait_events(c, TOP_WAIT_EVENTS);
        for w in top {
            rows.push(vec![
                c.cell.label(),
                w.event,
                format!("{} of {total}", w.count),
                fmt_fixed(w.pct, 1),
            ]);
        }
    }
    if rows.is_empty() {
        out.push_str("No wait-event samples.\n\n");
    } else {
        table(
            out,
            &[
                "cell",
                "wait event",
                "observations (backend samples)",
                "share (%)",
            ],
            &rows,
        );
    }
}

fn siread_locks(out: &mut String, cells: &[CellSummary]) {
    out.push_str(
        "## SIRead locks\n\nPredicate locks (`pg_locks`, mode SIReadLock) sampled once a second: mean count \
         averaged over complete runs, and the largest count of any sample.\n\n",
    );
    let mut rows = Vec::new();
    for c in cells {
        let by = server::siread_by_granularity(c);
        if by.is_empty() {
            rows.push(vec![
                c.cell.label(),
                "none".into(),
                "0.0".into(),
                "0".into(),
            ]);
        }
        for (gran, s) in by {
            rows.push(vec![
                c.cell.label(),
                gran,
                fmt_fixed(s.mean, 1),
                s.max.to_string(),
            ]);
        }
    }
    table(
        out,
        &["cell", "granularity", "mean (locks)", "max (locks)"],
        &rows,
    );
}

fn plans(out: &mut String, cells: &[CellSummary]) {
    out.push_str("## Plans\n\nEXPLAIN of each workload statement at the start of the first complete run of each cell; each distinct plan once.\n\n");
    let groups = server::distinct_plans(cells);
    if groups.is_empty() {
        out.push_str("No plans recorded.\n\n");
    }
    for g in groups {
        let who = if g.cells.len() == cells.len() {
            "all cells".to_string()
        } else {
            g.cells
                .iter()
                .map(|c| c.label())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = writeln!(
            out,
            "### {} ({who})\n\n```sql\n{}\n```\n\n```\n{}\n```\n",
            g.label, g.sql, g.plan
        );
    }
}

fn invariants(out: &mut String, r: &Results) {
    out.push_str("## Invariants\n\nChecked after every run, interrupted ones included.\n\n");
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.invariants.iter().map(|i| {
                vec![
                    run.index.to_string(),
                    run.cell.label(),
                    run.repetition.to_string(),
                    i.name.clone(),
                    if i.ok {
                        "ok".into()
                    } else {
                        format!("**VIOLATED** ({})", i.violations)
                    },
                    format!("`{}`", i.detail),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        out.push_str("No invariant was checked.\n\n");
    } else {
        table(
            out,
            &["run", "cell", "repetition", "invariant", "result", "detail"],
            &rows,
        );
    }
}

fn runs(out: &mut String, r: &Results) {
    out.push_str("## Runs\n\nIn execution order.\n\n");
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|run| {
            vec![
                run.index.to_string(),
                run.cell.label(),
                run.repetition.to_string(),
                fmt_fixed(run.duration_s, 1),
                fmt_tps(run.tps),
                fmt_ms(run.latency_ms.p99),
                run.retries.to_string(),
                run.failed.values().sum::<u64>().to_string(),
                fmt_fixed(run.client_cpu_us_per_tx, 1),
                if run.complete {
                    "yes".into()
                } else {
                    "no (interrupted)".into()
                },
            ]
        })
        .collect();
    table(
        out,
        &[
            "run",
            "cell",
            "repetition",
            "measured (s)",
            "TPS (tx/s)",
            "p99 (ms)",
            "retries (attempts)",
            "failed (transactions)",
            "client CPU (µs/tx)",
            "complete",
        ],
        &rows,
    );
}

fn problems(out: &mut String, r: &Results) {
    let lines: Vec<String> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.errors.iter().map(move |e| {
                format!(
                    "- run {} ({}, repetition {}): {}",
                    run.index,
                    run.cell.label(),
                    run.repetition,
                    e
                )
            })
        })
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(out, "## Problems\n\n{}\n", lines.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// The rows of the summary table (header and separator excluded).
    fn summary_rows(md: &str) -> Vec<&str> {
        let section = md
            .split("## Summary")
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
        assert!(
            rows[0].starts_with("| rc | optimistic | 4 | 2 | 100.0 ± ")
                && rows[0].contains("| baseline |"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].starts_with("| ser | optimistic | 4 | 2 (+1 interrupted) | 150.0 ± "),
            "{}",
            rows[1]
        );
        assert!(rows[1].contains("| +50.0% faster |"), "{}", rows[1]);
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
}
