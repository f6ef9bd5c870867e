//! `report.md`: the experiment's configuration, the per-cell summary, and
//! the detail behind it (failures, server counters, wait events, SIRead
//! locks, plans, invariants, every run). Every figure says its unit.

use std::fmt::Write as _;

use super::cells::{self, CellSummary, VsBaseline, WaitStats};
use super::{
    NA, fmt_fixed, fmt_mean, fmt_ms, fmt_opt, fmt_p, fmt_pct_change, fmt_pct_ci, fmt_tps,
    fmt_tps_ci, fmt_verdict, fmt_vs_baseline_pct, server,
};
use crate::model::sqlstate_name;
use crate::store::{Results, RunRecord, WaitSummary};

/// Wait events listed per cell.
const TOP_WAIT_EVENTS: usize = 5;

/// Renders report.md.
pub fn render(results: &Results) -> String {
    let cells = cells::aggregate(results);
    let mut out = String::new();
    header(&mut out, results);
    summary(&mut out, results, &cells);
    external_load(&mut out, results, &cells);
    latency(&mut out, results, &cells);
    transactions(&mut out, results, &cells);
    commands(&mut out, results, &cells);
    failures(&mut out, &cells);
    counters(&mut out, &cells);
    wait_events(&mut out, &cells);
    siread_locks(&mut out, &cells);
    plans(&mut out, &cells);
    invariants(&mut out, results);
    runs(&mut out, results, &cells);
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
    let retry = super::fmt_retry(&c.retry);
    let load = super::fmt_load(&r.load);
    let params = super::fmt_param_factors(&c.params);
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
        ("Runs", super::fmt_runs(c)),
        ("Retry policy", retry),
        ("Seed", c.seed.to_string()),
    ];
    let numbers = |v: Vec<String>| (!v.is_empty()).then(|| v.join(", "));
    let factor_items = [
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
        ("Server builds (pg_bin)", numbers(c.pg_bin.clone())),
    ];
    let run_versions = versions(r);
    let factor_items = factor_items
        .into_iter()
        .chain([(
            "Server versions of the runs",
            (run_versions.len() > 1).then(|| run_versions.join(", ")),
        )])
        .filter_map(|(k, v)| v.map(|v| (k, v)));
    for (k, v) in items.into_iter().chain(factor_items) {
        let _ = writeln!(out, "- **{k}:** {v}");
    }
    out.push('\n');
}

/// The distinct `server_version`s of the runs, in order of first run.
fn versions(r: &Results) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for run in &r.runs {
        if !v.contains(&run.server_version) {
            v.push(run.server_version.clone());
        }
    }
    v
}

/// Which optional wait columns the experiment needs: pool wait (a pool
/// size factor), schedule lag (a rate factor), skipped/late (a latency
/// limit).
struct WaitColumns {
    pool: bool,
    lag: bool,
    limit: bool,
}

impl WaitColumns {
    fn of(r: &Results) -> Self {
        let c = &r.config;
        WaitColumns {
            pool: !c.pool_size.is_empty(),
            lag: !c.rate.is_empty(),
            limit: !c.rate.is_empty() && c.latency_limit_ms.is_some(),
        }
    }

    /// Column names for the summary (`per_run` false) or the runs table.
    fn headers(&self, per_run: bool) -> Vec<String> {
        let (mean, p99) = if per_run {
            ("ms", "ms")
        } else {
            ("ms, mean of runs", "ms, worst run")
        };
        let mut h = Vec::new();
        if self.pool {
            h.push(format!("pool wait mean ({mean})"));
            h.push(format!("pool wait p99 ({p99})"));
        }
        if self.lag {
            h.push(format!("schedule lag mean ({mean})"));
            h.push(format!("schedule lag p99 ({p99})"));
        }
        if self.limit {
            h.push("skipped (transactions)".into());
            h.push("late (transactions)".into());
        }
        h
    }

    fn cell(&self, c: &CellSummary) -> Vec<String> {
        let w = |s: &Option<WaitStats>| match s {
            Some(s) => [fmt_ms(s.mean_ms.mean), fmt_ms(s.p99_max_ms)],
            None => [NA.into(), NA.into()],
        };
        self.values(w(&c.pool_wait), w(&c.schedule_lag), c.skipped, c.late)
    }

    fn run(&self, run: &RunRecord) -> Vec<String> {
        let w = |s: &Option<WaitSummary>| match s {
            Some(s) => [fmt_ms(s.mean), fmt_ms(s.p99)],
            None => [NA.into(), NA.into()],
        };
        self.values(
            w(&run.pool_wait_ms),
            w(&run.schedule_lag_ms),
            run.skipped,
            run.late,
        )
    }

    fn values(&self, pool: [String; 2], lag: [String; 2], skipped: u64, late: u64) -> Vec<String> {
        let mut v = Vec::new();
        if self.pool {
            v.extend(pool);
        }
        if self.lag {
            v.extend(lag);
        }
        if self.limit {
            v.extend([skipped.to_string(), late.to_string()]);
        }
        v
    }
}

fn summary(out: &mut String, r: &Results, cells: &[CellSummary]) {
    out.push_str("## Summary\n\n");
    let (tp_name, tp_unit) = super::throughput_label(r);
    let _ = write!(
        out,
        "Statistics over complete runs only (interrupted runs are listed but not counted). \
         ± is the half-width of the 95 % confidence interval of the mean (Student t, n - 1 degrees of freedom; \
         n/a with one run). % vs baseline compares mean TPS (goodput: committed transactions per second) with \
         the baseline: {}. Its 95 % CI is that of the difference of the means (Welch–Satterthwaite degrees of \
         freedom) divided by the baseline's mean, which it treats as exact. p: Welch's two-sided t-test; \
         verdict: faster or slower when p < 0.05, else no significant difference (the runs do not show one); \
         not enough data with fewer than 2 complete runs on a side. Latencies here are means over runs of each \
         run's figure (see the next section for the merged histograms). Abort ratio: attempts that neither \
         committed nor were rolled back by the workload on purpose (retried and failed attempts) / attempts. \
         Wasted time: share of client time spent in attempts that did not commit. Anomalies: invariant \
         violations summed over all runs, with the first example.",
        cells::baseline_description(r)
    );
    let waits = WaitColumns::of(r);
    if waits.pool {
        out.push_str(
            " Pool wait: time a client waited for a pooled connection per checkout, mean over runs of each \
             run's mean, and the largest p99 of any run.",
        );
    }
    if waits.lag {
        out.push_str(
            " Schedule lag (open loop): how late a transaction started after its scheduled time, mean over \
             runs of each run's mean, and the largest p99 of any run.",
        );
    }
    if waits.limit {
        out.push_str(
            " Skipped: transactions not started because they were already later than the latency limit; \
             late: committed transactions slower than it (summed over complete runs).",
        );
    }
    let any_outlier = cells.iter().any(|c| !c.outliers.is_empty());
    if any_outlier {
        out.push_str(
            " Outlier runs: runs whose TPS has a modified z-score |M| > 3.5 within their cell (Iglewicz & \
             Hoaglin); they are counted all the same: look at them (see Runs).",
        );
    }
    out.push_str("\n\n");
    let ssibench = matches!(r.config.workload.as_str(), "ssibench" | "simple-ssibench");
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut row = super::factor_values(r, c.cell);
            let (ci, p) = match &c.vs_baseline {
                VsBaseline::Change { pct_ci, welch, .. } => {
                    (fmt_pct_ci(pct_ci.as_ref()), fmt_p(welch.as_ref()))
                }
                VsBaseline::Baseline => ("baseline".into(), "baseline".into()),
                VsBaseline::Missing => (NA.into(), NA.into()),
            };
            row.extend([
                c.runs_label(),
                fmt_tps_ci(c.tps.as_ref()),
                fmt_vs_baseline_pct(&c.vs_baseline),
                ci,
                p,
                fmt_verdict(&c.vs_baseline),
            ]);
            if any_outlier {
                row.push(if c.outliers.is_empty() {
                    "none".into()
                } else {
                    c.outliers
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                });
            }
            if ssibench {
                row.push(fmt_mean(c.tps.as_ref(), |v| fmt_fixed(v / 1000.0, 3)));
            }
            row.extend([
                fmt_mean(c.latency.mean.as_ref(), fmt_ms),
                fmt_mean(c.latency.p50.as_ref(), fmt_ms),
                fmt_mean(c.latency.p95.as_ref(), fmt_ms),
                fmt_mean(c.latency.p99.as_ref(), fmt_ms),
            ]);
            row.extend(waits.cell(c));
            row.extend([
                fmt_opt(c.retries_per_commit, 3),
                fmt_opt(c.failure_pct, 2),
                fmt_opt(c.abort_ratio, 3),
                fmt_mean(c.wasted_time_pct.as_ref(), |v| fmt_fixed(v, 1)),
                c.unknown_outcome.to_string(),
                super::fmt_cell_anomalies(c, 200),
            ]);
            row
        })
        .collect();
    let mut header = super::factor_headers(r);
    header.extend(
        [
            "runs (n)",
            &format!("{tp_name} mean ± 95% CI ({tp_unit})"),
            "% vs baseline (TPS)",
            "95% CI of % (TPS)",
            "p (Welch)",
            "verdict (TPS)",
        ]
        .map(String::from),
    );
    if any_outlier {
        header.push("outlier runs (TPS)".into());
    }
    if ssibench {
        header.push("KTPS (1000 tx/s)".into());
    }
    header.extend(["latency mean (ms)", "p50 (ms)", "p95 (ms)", "p99 (ms)"].map(String::from));
    header.extend(waits.headers(false));
    header.extend(
        [
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

/// The load tool's own figures, per cell and per run (external loads).
fn external_load(out: &mut String, r: &Results, cells: &[CellSummary]) {
    let (Some(by_cell), Some(by_run)) = (
        super::external::cell_table(r, cells),
        super::external::run_table(r),
    ) else {
        return;
    };
    out.push_str(
        "## External load

What the load command reported, per cell over its complete runs (latency and \
         bytes/s: mean of the runs' values; counts: summed). The server was observed from the command's \
         start to its end. Failed runs (a command failed or its output did not parse) are kept but left \
         out of the statistics; see Problems.\n\n",
    );
    let header: Vec<&str> = by_cell.header.iter().map(|(h, _)| h.as_str()).collect();
    table(out, &header, &by_cell.rows);
    out.push_str("### Commands\n\nPer run, as run (secrets shown as placeholders); output files are relative to the results directory.\n\n");
    let header: Vec<&str> = by_run.header.iter().map(|(h, _)| h.as_str()).collect();
    let rows: Vec<Vec<String>> = by_run
        .rows
        .into_iter()
        .map(|mut row| {
            row[2] = format!("`{}`", row[2].replace('`', "'"));
            row
        })
        .collect();
    table(out, &header, &rows);
}

fn latency(out: &mut String, r: &Results, cells: &[CellSummary]) {
    out.push_str(
        "## Latency (merged histograms)\n\nEvery committed transaction of a cell's complete runs, from the runs' \
         merged HdrHistograms (first attempt start to commit; a run weighs by its transactions, unlike the \
         summary's means over runs). % vs baseline: change of the merged percentile against the baseline \
         cell's (lower is better). p and verdict: Welch's t-test on the runs' own p99 (one value per complete \
         run), since one merged histogram per cell has no run-to-run spread to test; faster means a lower p99.\n\n",
    );
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut row = super::factor_values(r, c.cell);
            let l = c.merged_latency;
            let ms = |f: fn(&crate::model::LatencySummary) -> f64| {
                l.as_ref().map_or_else(|| NA.into(), |l| fmt_ms(f(l)))
            };
            row.extend([ms(|l| l.p50), ms(|l| l.p95), ms(|l| l.p99)]);
            match (&c.vs_baseline, &c.latency_vs_baseline) {
                (VsBaseline::Baseline, _) => {
                    row.extend(std::iter::repeat_n("baseline".to_string(), 5));
                }
                (_, Some(ch)) => {
                    let pct = |p: Option<f64>| p.map_or_else(|| NA.into(), fmt_pct_change);
                    row.extend([
                        pct(ch.p50_pct),
                        pct(ch.p95_pct),
                        pct(ch.p99_pct),
                        ch.p99_runs
                            .as_ref()
                            .map_or_else(|| NA.into(), |c| fmt_p(c.welch.as_ref())),
                        ch.p99_runs
                            .as_ref()
                            .map_or_else(|| NA.into(), |c| c.verdict.label().into()),
                    ]);
                }
                (_, None) => row.extend(std::iter::repeat_n(NA.to_string(), 5)),
            }
            row
        })
        .collect();
    if rows.is_empty() {
        out.push_str("No runs recorded.\n\n");
        return;
    }
    let mut header = super::factor_headers(r);
    header.extend(
        [
            "p50 (ms)",
            "p95 (ms)",
            "p99 (ms)",
            "p50 % vs baseline",
            "p95 % vs baseline",
            "p99 % vs baseline",
            "p (Welch, runs' p99)",
            "verdict (p99)",
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
            let failed = super::fmt_failures(&t.failed);
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

/// Per-command latency of pgbench scripts (like `pgbench -r`), pooled
/// over each cell's complete runs; only when a workload timed commands.
fn commands(out: &mut String, r: &Results, cells: &[CellSummary]) {
    let mut rows = Vec::new();
    for c in cells {
        // Per transaction type: per command (executions, Σ ms, failures).
        // (script, [(command, executions, Σ ms, failures)])
        type Pooled = (String, Vec<(String, u64, f64, u64)>);
        let mut pooled: Vec<Pooled> = Vec::new();
        for run in c.runs.iter().filter(|run| run.complete) {
            for t in run.transactions.iter().filter(|t| !t.commands.is_empty()) {
                let k = match pooled.iter().position(|(n, _)| *n == t.name) {
                    Some(k) => k,
                    None => {
                        pooled.push((t.name.clone(), Vec::new()));
                        pooled.len() - 1
                    }
                };
                let steps = &mut pooled[k].1;
                for (i, cmd) in t.commands.iter().enumerate() {
                    if steps.len() <= i {
                        steps.push((cmd.command.clone(), 0, 0.0, 0));
                    }
                    let s = &mut steps[i];
                    s.1 += cmd.executions;
                    s.2 += cmd.mean_ms * cmd.executions as f64;
                    s.3 += cmd.failures;
                }
            }
        }
        for (name, steps) in pooled {
            for (i, (command, n, total_ms, failures)) in steps.into_iter().enumerate() {
                let mut row = super::factor_values(r, c.cell);
                row.extend([
                    name.clone(),
                    (i + 1).to_string(),
                    format!("`{command}`"),
                    n.to_string(),
                    if n > 0 {
                        format!("{:.3}", total_ms / n as f64)
                    } else {
                        NA.into()
                    },
                    failures.to_string(),
                ]);
                rows.push(row);
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "## Latency by command\n\nLike `pgbench -r`: every execution of each script command in the measured \
         window of a cell's complete runs, retried attempts included; mean time per execution. Failures: \
         executions that raised the error ending their attempt.\n\n",
    );
    let mut header = super::factor_headers(r);
    header.extend(
        [
            "script",
            "#",
            "command",
            "executions",
            "mean (ms)",
            "failures",
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

fn runs(out: &mut String, r: &Results, cells: &[CellSummary]) {
    out.push_str("## Runs\n\nIn execution order.");
    let outliers: Vec<u32> = cells.iter().flat_map(|c| c.outliers.clone()).collect();
    if !outliers.is_empty() {
        out.push_str(
            " (outlier): the run's TPS has a modified z-score |M| > 3.5 among its cell's complete runs \
             (Iglewicz & Hoaglin, `M = 0.6745 (x - median) / MAD`); it still counts in the statistics.",
        );
    }
    out.push_str("\n\n");
    let waits = WaitColumns::of(r);
    let show_version = versions(r).len() > 1;
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|run| {
            let tps = if outliers.contains(&run.index) {
                format!("{} (outlier)", fmt_tps(run.tps))
            } else {
                fmt_tps(run.tps)
            };
            let mut row = vec![
                run.index.to_string(),
                run.cell.label(),
                run.repetition.to_string(),
            ];
            if show_version {
                row.push(run.server_version.clone());
            }
            row.extend([
                fmt_fixed(run.duration_s, 1),
                tps,
                run.reported_latency().p99.map_or_else(|| NA.into(), fmt_ms),
            ]);
            row.extend(waits.run(run));
            row.extend([
                run.retries.to_string(),
                run.failed.values().sum::<u64>().to_string(),
                fmt_fixed(run.client_cpu_us_per_tx, 1),
                if run.complete {
                    "yes".into()
                } else if run.load.is_some() && !run.errors.is_empty() {
                    "no (failed, see Problems)".into()
                } else {
                    "no (interrupted)".into()
                },
            ]);
            row
        })
        .collect();
    let mut header: Vec<String> = ["run", "cell", "repetition"].map(String::from).to_vec();
    if show_version {
        header.push("server version".into());
    }
    header.extend(["measured (s)", "TPS (tx/s)", "p99 (ms)"].map(String::from));
    header.extend(waits.headers(true));
    header.extend(
        [
            "retries (attempts)",
            "failed (transactions)",
            "client CPU (µs/tx)",
            "complete",
        ]
        .map(String::from),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    table(out, &header, &rows);
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
        assert!(
            rows[1].contains("| +50.0% | [+37.8%, +62.2%] | 0.003 | faster |"),
            "{}",
            rows[1]
        );
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
        let summary = section_rows(&md, "Summary");
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
        let mut r = fixture::results();
        assert!(!render(&r).contains("server version"));
        // rc: 98, 102, 100, 99, 150 tx/s: 150 is an outlier (M = 16.86).
        for (i, tps) in [100.0, 99.0, 150.0].into_iter().enumerate() {
            let mut run = r.runs[0].clone();
            run.index = 6 + i as u32;
            run.repetition = 3 + i as u32;
            run.tps = tps;
            run.server_version = "17.2".into();
            r.runs.push(run);
        }
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
        let summary = section_rows(&md, "Summary");
        assert!(summary[0].contains("| outlier runs (TPS) |"));
        // rc (the baseline) lists run 8; ser has none.
        assert!(summary[1].contains("| baseline | 8 |"), "{}", summary[1]);
        assert!(summary[2].contains("| faster | none |"), "{}", summary[2]);
        assert!(md.contains("- **Server versions of the runs:** 16.4, 17.2\n"));
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
