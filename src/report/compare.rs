//! A/B comparison of two results directories, cell by cell, in the manner
//! of benchstat: for each cell both sides' TPS with its 95 % interval, the
//! change from A to B in % with its 95 % interval, Welch's p-value and a
//! verdict; the same for p99 latency; a geometric mean over cells at the
//! end of each table.
//!
//! Matching rule: a cell of A and a cell of B are the same cell when they
//! have the same isolation level, strategy, clients, pool size and rate
//! (none is a value too: no pool, closed loop), and the same value of
//! every factor that either side varied: each `--param` given as a factor
//! (a side that did not vary it ran at its own default), the scale (when
//! either side had several), `max_tries` (when either side varied it; else
//! the retry policy's), each server setting factor (else the side's `--set`
//! value, else `default`), the fault plan (when either side varied it;
//! else the side's `--fault` plan, or `none`). The server build (`pg_bin`) and the server
//! version are never matched on, because comparing two builds or versions
//! of PostgreSQL on the same experiment is what A/B is mostly for. Setup
//! that neither side varied (duration, scale, parameter defaults, retry
//! policy, `--set` settings, ...) is not matched on either; where A and B
//! differ in it, the output lists it under "Setup differences", because it
//! may explain a change as well as the build does.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::cells::{self, CellSummary};
use super::{NA, fmt_ms, fmt_p, fmt_pct_change, fmt_pct_ci, fmt_tps};
use crate::model::{Backoff, RetryPolicy};
use crate::stats::{self, Better, Comparison, Summary};
use crate::store::{Cell, Results};

/// Checks that `a` and `b` can be compared cell by cell.
///
/// Errors: the workloads differ (both are named); a side has several cells
/// that differ only in `pg_bin` (an experiment that varied the server
/// build: its builds are compared with `isobench report`, and `compare`
/// needs one build per side).
pub fn check(a: &Results, b: &Results) -> Result<(), String> {
    if a.config.workload != b.config.workload {
        return Err(format!(
            "the workloads differ: A ran {}, B ran {}; compare results of the same workload",
            a.config.workload, b.config.workload
        ));
    }
    let m = Matcher::new(a, b);
    for (side, r) in [("A", a), ("B", b)] {
        let cells = cells::aggregate(r);
        let mut seen = BTreeSet::new();
        for c in &cells {
            let key = m.key(r, c.cell);
            if !seen.insert(key.clone()) {
                return Err(format!(
                    "{side} has several cells for {key} (it varied pg_bin: {}); compare needs one \
                     server build per side (isobench report compares builds within one experiment)",
                    r.config.pg_bin.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// Markdown report of B against A (`a_name`, `b_name`: how to call them,
/// e.g. the directories). Columns are padded so that it reads as a table
/// in a terminal as well. Sections: which runs each side holds and the
/// setup differences; "TPS (tx/s, higher is better)": per matched cell A
/// and B as `mean ± 95% CI (n=runs)`, the change of the mean in % with its
/// 95 % interval (`stats::pct_ci95`), Welch's p and the verdict
/// (`stats::Verdict`), then the geometric means of A's and B's mean TPS
/// over the cells both have, and their ratio (the geometric mean of the
/// per-cell ratios) as a change in %; "p99 latency (ms, lower is better)":
/// each side's p99 of its merged histograms, the change in %, and Welch's
/// p and verdict over the runs' own p99 (one value per complete run), then
/// the geometric means; the cells that only one side has. When a history
/// check found lost commits on either side (the effective TPS is below the
/// reported, issue #30), "Effective TPS" leads, compared the same way on
/// [`CellSummary::headline_tps`], and "Reported TPS" follows it. See the
/// module docs for how cells are matched.
pub fn render(a: &Results, b: &Results, a_name: &str, b_name: &str) -> String {
    let m = Matcher::new(a, b);
    let ca = cells::aggregate(a);
    let cb = cells::aggregate(b);
    let keys_a: Vec<String> = ca.iter().map(|c| m.key(a, c.cell)).collect();
    let keys_b: Vec<String> = cb.iter().map(|c| m.key(b, c.cell)).collect();
    let mut pairs: Vec<(&str, &CellSummary, &CellSummary)> = Vec::new();
    let mut only_a: Vec<&str> = Vec::new();
    for (i, k) in keys_a.iter().enumerate() {
        if keys_a[..i].contains(k) {
            continue; // a second pg_bin of A (see `check`)
        }
        match keys_b.iter().position(|kb| kb == k) {
            Some(j) => pairs.push((k, &ca[i], &cb[j])),
            None => only_a.push(k),
        }
    }
    let mut only_b: Vec<&str> = Vec::new();
    for (j, k) in keys_b.iter().enumerate() {
        if !keys_a.contains(k) && !keys_b[..j].contains(k) {
            only_b.push(k);
        }
    }

    let mut out = String::new();
    let _ = writeln!(out, "# isobench compare: {}\n", a.config.workload);
    let _ = writeln!(out, "B against A, cell by cell.\n");
    let _ = writeln!(out, "- **A:** {}", side(a, a_name));
    let _ = writeln!(out, "- **B:** {}", side(b, b_name));
    let diffs = setup_differences(a, b);
    let _ = writeln!(
        out,
        "- **Setup differences:** {}\n",
        if diffs.is_empty() {
            "none".to_string()
        } else {
            diffs.join("; ")
        }
    );
    if pairs.is_empty() {
        out.push_str("No cell in common.\n\n");
    } else {
        if pairs
            .iter()
            .any(|(_, x, y)| x.effective_differs() || y.effective_differs())
        {
            tps_table(
                &mut out,
                &pairs,
                "## Effective TPS (tx/s whose work is in the database, higher is better)\n\n\
                 Some runs counted commits that left no work in the database (their history \
                 check found lost commits); the cells are compared on the work that remained. \
                 The reported TPS follows.\n\n",
                CellSummary::headline_tps,
            );
            tps_table(
                &mut out,
                &pairs,
                "## Reported TPS (tx/s as the clients counted commits)\n\n",
                |c| c.tps.as_ref(),
            );
        } else {
            tps_table(
                &mut out,
                &pairs,
                "## TPS (tx/s, higher is better)\n\n",
                |c| c.tps.as_ref(),
            );
        }
        p99_table(&mut out, &pairs);
        out.push_str(
            "A and B: mean over complete runs ± half-width of its 95 % confidence interval (Student t), \
             n complete runs. delta: change from A to B in %; its 95 % CI is that of the difference of \
             the means (Welch–Satterthwaite) divided by A's mean. p: Welch's two-sided t-test; verdict: \
             faster or slower when p < 0.05, else no significant difference (not enough data: fewer than \
             2 complete runs on a side). p99: from the merged histograms of the complete runs; its p and \
             verdict test the runs' own p99 values. geomean: geometric mean over the cells both sides \
             have; its delta is the geometric mean of the per-cell ratios. Cells are matched on isolation, \
             strategy, clients, pool size, rate and the factors either side varied, never on the server \
             build (pg_bin) or version.\n\n",
        );
    }
    for (label, name, only) in [("A", a_name, &only_a), ("B", b_name, &only_b)] {
        if !only.is_empty() {
            let _ = writeln!(out, "Only in {label} ({name}):\n");
            for k in only.iter() {
                let _ = writeln!(out, "- {k}");
            }
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// How cells of A and B are keyed (see the module docs).
struct Matcher {
    /// Parameters either side gave as factors.
    params: BTreeSet<String>,
    /// Server settings either side gave as factors.
    settings: BTreeSet<String>,
    /// Whether either side varied max_tries.
    max_tries: bool,
    /// Whether either side had several scales.
    scale: bool,
    /// Whether either side varied the fault plan.
    fault_plan: bool,
}

impl Matcher {
    fn new(a: &Results, b: &Results) -> Self {
        let both = [&a.config, &b.config];
        Matcher {
            params: both
                .iter()
                .flat_map(|c| c.params.iter().map(|(k, _)| k.clone()))
                .collect(),
            settings: both
                .iter()
                .flat_map(|c| c.setting_factors.iter().map(|(k, _)| k.clone()))
                .collect(),
            max_tries: both.iter().any(|c| !c.max_tries.is_empty()),
            scale: both.iter().any(|c| c.scale.len() > 1),
            fault_plan: both.iter().any(|c| !c.fault_plans.is_empty()),
        }
    }

    /// The cell's key, also its label: `isolation=rc strategy=locking
    /// clients=16 ...`; a factor without a value (the strategy of a
    /// script study) is left out rather than shown as `strategy=`.
    fn key(&self, r: &Results, c: &Cell) -> String {
        let cfg = &r.config;
        let mut k = format!("isolation={}", c.isolation.short());
        if !c.strategy.is_empty() {
            let _ = write!(k, " strategy={}", c.strategy);
        }
        for p in &self.params {
            let v = c.params.get(p).or_else(|| cfg.param_defaults.get(p));
            let _ = write!(k, " {p}={}", v.map_or(NA, String::as_str));
        }
        let _ = write!(k, " clients={}", c.clients);
        if self.scale {
            let s = c.scale.or_else(|| cfg.scale.first().copied());
            let _ = write!(
                k,
                " scale={}",
                s.map_or_else(|| NA.into(), |s| s.to_string())
            );
        }
        if let Some(p) = c.pool_size {
            let _ = write!(k, " pool_size={p}");
        }
        if let Some(p) = c.pooler {
            let _ = write!(k, " pooler={p}");
        }
        if let Some(p) = c.pooler_size {
            let _ = write!(k, " pooler_size={p}");
        }
        if let Some(rate) = c.rate {
            let _ = write!(k, " rate={rate}");
        }
        if self.max_tries {
            let _ = write!(
                k,
                " max_tries={}",
                c.max_tries.unwrap_or(cfg.retry.max_tries)
            );
        }
        for s in &self.settings {
            let v = c.settings.get(s).or_else(|| cfg.settings.get(s));
            let _ = write!(k, " {s}={}", v.map_or("default", String::as_str));
        }
        if self.fault_plan {
            let plan = c.fault_plan.clone().unwrap_or_else(|| {
                if cfg.faults.is_empty() {
                    "none".into()
                } else {
                    cfg.faults.join("+")
                }
            });
            let _ = write!(k, " fault_plan={plan}");
        }
        k
    }
}

/// `results/x: PostgreSQL 16.4; managed PostgreSQL from ...; 5 runs (4
/// complete), started ...`; with a named build `results/x: build stock,
/// PostgreSQL 16.4; ...`; with builds as a factor, each build's label and
/// version: `...; builds stock: PostgreSQL 15.14, patched: ...`.
fn side(r: &Results, name: &str) -> String {
    let mut versions = super::build_versions(r, None);
    if versions.is_empty() {
        versions.push(&r.environment.server_version);
    }
    let complete = r.runs.iter().filter(|x| x.complete).count();
    let versions = format!("PostgreSQL {}", versions.join(", "));
    let mut s = match &r.config.target_options.pg_bin_label {
        Some(label) => format!("{name}: build {label}, {versions}; {}", r.config.target),
        None => format!("{name}: {versions}; {}", r.config.target),
    };
    if !r.config.pg_bin.is_empty() {
        let builds: Vec<String> = r
            .config
            .pg_bin
            .iter()
            .map(|l| match super::build_versions(r, Some(l)).as_slice() {
                [] => l.clone(),
                v => format!("{l}: PostgreSQL {}", v.join(", ")),
            })
            .collect();
        let _ = write!(s, "; builds {}", builds.join(", "));
    }
    let _ = write!(
        s,
        "; {} runs ({complete} complete), started {}",
        r.runs.len(),
        r.started_at
    );
    if !r.complete {
        s.push_str(", INCOMPLETE (interrupted)");
    }
    s
}

/// Configuration and environment that A and B do not share, as `what: A
/// vs B` (factors are left out: their cells show them).
fn setup_differences(a: &Results, b: &Results) -> Vec<String> {
    let (x, y) = (&a.config, &b.config);
    let mut d = Vec::new();
    let mut diff = |what: &str, va: String, vb: String| {
        if va != vb {
            d.push(format!("{what}: {va} vs {vb}"));
        }
    };
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    diff("scale", list(&x.scale), list(&y.scale));
    diff(
        "measured",
        format!("{} s", x.duration_s),
        format!("{} s", y.duration_s),
    );
    diff(
        "warm-up",
        format!("{} s", x.warmup_s),
        format!("{} s", y.warmup_s),
    );
    diff("repetitions", x.repeat.to_string(), y.repeat.to_string());
    diff("retry policy", retry(&x.retry), retry(&y.retry));
    let limit = |l: Option<f64>| l.map_or_else(|| "none".into(), |l| format!("{l} ms"));
    diff(
        "latency limit",
        limit(x.latency_limit_ms),
        limit(y.latency_limit_ms),
    );
    diff(
        "client threads",
        x.threads.map_or("auto".into(), |t| t.to_string()),
        y.threads.map_or("auto".into(), |t| t.to_string()),
    );
    // Settings lists: only the names whose values differ.
    let mut diff_map =
        |what: &str, ma: &BTreeMap<String, String>, mb: &BTreeMap<String, String>| {
            let unset = |v: Option<&String>| v.map_or_else(|| "unset".to_string(), Clone::clone);
            for k in ma.keys().chain(mb.keys()).collect::<BTreeSet<_>>() {
                let (va, vb) = (ma.get(k), mb.get(k));
                if va != vb {
                    diff(&format!("{what} {k}"), unset(va), unset(vb));
                }
            }
        };
    diff_map("parameter default", &x.param_defaults, &y.param_defaults);
    diff_map("--set", &x.settings, &y.settings);
    let (e, f) = (&a.environment, &b.environment);
    diff_map("server setting", &e.server_settings, &f.server_settings);
    diff(
        "host",
        format!("{} ({}, {} CPUs)", e.host, e.os, e.cpus),
        format!("{} ({}, {} CPUs)", f.host, f.os, f.cpus),
    );
    diff(
        "isobench",
        a.isobench_version.clone(),
        b.isobench_version.clone(),
    );
    d
}

/// `10 tries, retrying 40001 40P01, no backoff`.
fn retry(r: &RetryPolicy) -> String {
    let backoff = match r.backoff {
        Backoff::None => "no backoff".to_string(),
        Backoff::Exponential { base, max } => format!(
            "backoff {} to {}",
            humantime::format_duration(base),
            humantime::format_duration(max)
        ),
    };
    format!(
        "{} tries, retrying {}, {backoff}",
        r.max_tries,
        r.retry_on.join(" ")
    )
}

/// `1234.5 ± 12.3 (n=5)`.
fn tps_cell(s: Option<&Summary>) -> String {
    match s {
        None => NA.into(),
        Some(s) => format!("{} ± {} (n={})", fmt_tps(s.mean), fmt_tps(s.ci95), s.n),
    }
}

/// delta, its CI, p, verdict of a comparison (`n/a` without one).
fn comparison_cells(c: Option<&Comparison>, with_ci: bool) -> Vec<String> {
    let mut v = vec![
        c.and_then(|c| c.pct)
            .map_or_else(|| NA.into(), fmt_pct_change),
    ];
    if with_ci {
        v.push(fmt_pct_ci(c.and_then(|c| c.pct_ci.as_ref())));
    }
    v.push(fmt_p(c.and_then(|c| c.welch.as_ref())));
    v.push(c.map_or_else(|| NA.into(), |c| c.verdict.label().into()));
    v
}

/// The geometric mean of the positive, finite `values`; `None` without
/// any.
fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(f64::ln)
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

/// The geomean row over the pairs where both values are positive: A's and
/// B's geometric means and the change between them.
fn geomean_row(pairs: &[(f64, f64)], fmt: fn(f64) -> String, cols: usize) -> Vec<String> {
    let ok: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .collect();
    let ga = geomean(ok.iter().map(|p| p.0));
    let gb = geomean(ok.iter().map(|p| p.1));
    let mut row = vec![
        format!("geomean ({} cells)", ok.len()),
        ga.map_or_else(|| NA.into(), fmt),
        gb.map_or_else(|| NA.into(), fmt),
        match (ga, gb) {
            (Some(x), Some(y)) => fmt_pct_change(100.0 * (y / x - 1.0)),
            _ => NA.into(),
        },
    ];
    row.resize(cols, String::new());
    row
}

/// A table of `tps` (a cell's reported or effective TPS) under `title`.
fn tps_table<'a>(
    out: &mut String,
    pairs: &[(&str, &'a CellSummary<'a>, &'a CellSummary<'a>)],
    title: &str,
    tps: fn(&'a CellSummary<'a>) -> Option<&'a Summary>,
) {
    out.push_str(title);
    let header = [
        "cell",
        "A (tx/s)",
        "B (tx/s)",
        "delta",
        "95% CI of delta",
        "p",
        "verdict",
    ];
    let mut rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|(k, x, y)| {
            let cmp = match (tps(x), tps(y)) {
                (Some(sx), Some(sy)) => Some(stats::compare(sy, sx, Better::Higher)),
                _ => None,
            };
            let mut row = vec![k.to_string(), tps_cell(tps(x)), tps_cell(tps(y))];
            row.extend(comparison_cells(cmp.as_ref(), true));
            row
        })
        .collect();
    let means: Vec<(f64, f64)> = pairs
        .iter()
        .filter_map(|(_, x, y)| Some((tps(x)?.mean, tps(y)?.mean)))
        .collect();
    rows.push(geomean_row(&means, fmt_tps, header.len()));
    aligned_table(out, &header, &rows);
}

fn p99_table(out: &mut String, pairs: &[(&str, &CellSummary, &CellSummary)]) {
    out.push_str("## p99 latency (ms, merged histograms, lower is better)\n\n");
    let header = [
        "cell",
        "A (ms)",
        "B (ms)",
        "delta",
        "p (runs' p99)",
        "verdict",
    ];
    let p99 = |c: &CellSummary| c.merged_latency.map(|l| l.p99);
    let mut rows: Vec<Vec<String>> = pairs
        .iter()
        .map(|(k, x, y)| {
            let runs = match (&x.latency.p99, &y.latency.p99) {
                (Some(sx), Some(sy)) => Some(stats::compare(sy, sx, Better::Lower)),
                _ => None,
            };
            // The delta is that of the merged p99, the test that of the
            // runs' p99.
            let delta = match (p99(x), p99(y)) {
                (Some(vx), Some(vy)) => stats::pct_change(vy, vx),
                _ => None,
            };
            let mut row = vec![
                k.to_string(),
                p99(x).map_or_else(|| NA.into(), fmt_ms),
                p99(y).map_or_else(|| NA.into(), fmt_ms),
            ];
            let mut rest = comparison_cells(runs.as_ref(), false);
            rest[0] = delta.map_or_else(|| NA.into(), fmt_pct_change);
            row.extend(rest);
            row
        })
        .collect();
    let values: Vec<(f64, f64)> = pairs
        .iter()
        .filter_map(|(_, x, y)| Some((p99(x)?, p99(y)?)))
        .collect();
    rows.push(geomean_row(&values, fmt_ms, header.len()));
    aligned_table(out, &header, &rows);
}

/// A Markdown table whose columns are padded to a common width (the
/// first and last, text, left-aligned; the others, numbers,
/// right-aligned), so that the raw text reads as a table too.
fn aligned_table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let last = header.len() - 1;
    let left = |i: usize| i == 0 || i == last;
    let esc = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let header: Vec<String> = header.iter().map(|h| esc(h)).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| esc(c)).collect())
        .collect();
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count(), 3])
            .max()
            .unwrap_or(3)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let pad = |i: usize, s: &str| {
        let fill = " ".repeat(widths[i] - s.chars().count());
        if left(i) {
            format!("{s}{fill}")
        } else {
            format!("{fill}{s}")
        }
    };
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&line(
        header.iter().enumerate().map(|(i, h)| pad(i, h)).collect(),
    ));
    out.push_str(&line(
        widths
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if left(i) {
                    format!(":{}", "-".repeat(w - 1))
                } else {
                    format!("{}:", "-".repeat(w - 1))
                }
            })
            .collect(),
    ));
    for r in &rows {
        out.push_str(&line(
            r.iter().enumerate().map(|(i, c)| pad(i, c)).collect(),
        ));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation;
    use crate::report::fixture;
    use crate::store::RunRecord;

    /// A with 5 complete rc runs (98, 102, 100, 99, 101 tx/s) and the
    /// fixture's ser runs.
    fn a() -> Results {
        let mut r = fixture::results();
        for (i, tps) in [100.0, 99.0, 101.0].into_iter().enumerate() {
            let mut run = r.runs[0].clone();
            run.index = 6 + i as u32;
            run.repetition = 3 + i as u32;
            run.tps = tps;
            r.runs.push(run);
        }
        r
    }

    /// B: another server build, named `pg17` (`--pg-bin pg17=...`); rc
    /// 10 % faster with little spread
    /// (109.8 .. 110.2 tx/s) and a 20 % lower p99; ser the same as A;
    /// plus a cell A does not have (rr).
    fn b() -> Results {
        let mut r = a();
        r.config.target = "managed PostgreSQL from /usr/lib/postgresql/17/bin".into();
        r.environment.server_version = "17.2".into();
        let rc_tps = [110.2, 109.8, 110.0, 110.1, 109.9];
        let mut i = 0;
        for run in &mut r.runs {
            run.server_version = "17.2".into();
            if run.cell.isolation == Isolation::ReadCommitted {
                run.tps = rc_tps[i];
                i += 1;
                let p99 = run.latency_ms.p99 * 0.8;
                run.latency_ms.p99 = p99;
                run.latency_histogram = fixture::histogram(p99);
            }
        }
        r.config.target_options.pg_bin = Some("/usr/lib/postgresql/17/bin".into());
        r.config.target_options.pg_bin_label = Some("pg17".into());
        let mut rr: RunRecord = r.runs[0].clone();
        rr.cell.isolation = Isolation::RepeatableRead;
        r.runs.push(rr);
        r
    }

    #[test]
    fn snapshot() {
        insta::assert_snapshot!(render(&a(), &b(), "results/pg16", "results/pg17"));
    }

    /// The trimmed cells of the row of `section` whose first cell is
    /// `first`.
    fn row(text: &str, section: &str, first: &str) -> Vec<String> {
        text.split(section)
            .nth(1)
            .unwrap()
            .lines()
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect::<Vec<_>>()
            })
            .find(|cells| cells[0] == first)
            .unwrap_or_else(|| panic!("{first} in {section}: {text}"))
    }

    /// Issue #30: A's ser function swallowed serialization failures (its
    /// effective TPS is 20.4 % of the 150 tx/s it reported), B's is fixed
    /// and commits the same 150 tx/s with its work in the database. On the
    /// reported TPS the two look equal; the first table compares the work
    /// that remained, and says B is ~4.9x A.
    #[test]
    fn compares_effective_tps_first_when_commits_were_lost() {
        let a = fixture::swallowed_history();
        let mut b = fixture::swallowed_history();
        for run in &mut b.runs {
            for inv in &mut run.invariants {
                inv.lost_commits = Some(0);
            }
            run.effective_tps = Some(run.tps);
        }
        let text = render(&a, &b, "A-dir", "B-dir");
        let (eff, rep) = ("## Effective TPS", "## Reported TPS");
        assert!(text.find(eff).unwrap() < text.find(rep).unwrap(), "{text}");
        assert!(!text.contains("## TPS"), "{text}");
        let ser = "isolation=ser strategy=optimistic clients=4";
        let kept = 5_550.0 / 27_150.0;
        let e = row(&text, eff, ser);
        assert_eq!(
            e[1],
            tps_cell(Some(&Summary::of(&[148.0 * kept, 152.0 * kept]).unwrap()))
        );
        assert_eq!(e[3], fmt_pct_change(100.0 * (1.0 / kept - 1.0)));
        assert_eq!(e[6], "faster");
        let r = row(&text, rep, ser);
        assert_eq!(
            r[3..].join(" | "),
            "+0.0% | [-7.8%, +8.5%] | 1.000 | no significant difference"
        );
        // Without lost commits on either side there is one TPS table.
        assert!(!render(&b, &b, "B", "B").contains(eff));
    }

    #[test]
    fn verdicts_and_matching() {
        let text = render(&a(), &b(), "A-dir", "B-dir");
        let (tps, p99) = ("## TPS", "## p99");
        let rc = row(&text, tps, "isolation=rc strategy=optimistic clients=4");
        // A: 98..102, mean 100, s = 1.581139; B: 109.8..110.2, mean 110,
        // s = 0.158114; se = sqrt(2.5/5 + 0.025/5) = 0.710634, t = 14.07.
        // The interval on the log scale (stats::pct_ci95): u_B = 0.025 /
        // (5 · 110²) = 4.132231e-7, u_A = 2.5 / (5 · 100²) = 5e-5,
        // ν = 4.066111, t(0.975, ν) = 2.758732, half-width 0.01958762
        // around ln 1.1: [+7.866 %, +12.176 %].
        assert_eq!(
            rc[3..].join(" | "),
            "+10.0% | [+7.9%, +12.2%] | <0.001 | faster"
        );
        // ser: 148 and 152 on both sides: u = 8 / (2 · 150²) each, ν = 2,
        // t(0.975, 2) = 4.302653, half-width 0.08113160 around ln 1 = 0:
        // [-7.793 %, +8.451 %] (asymmetric: a ratio, not a difference).
        let ser = row(&text, tps, "isolation=ser strategy=optimistic clients=4");
        assert_eq!(
            ser[3..].join(" | "),
            "+0.0% | [-7.8%, +8.5%] | 1.000 | no significant difference"
        );
        // Geomean: A sqrt(100 · 150) = 122.47, B sqrt(110 · 150) = 128.45:
        // +4.88 % (= sqrt(1.1) - 1).
        let g = row(&text, tps, "geomean (2 cells)");
        assert_eq!(g[1..4].join(" | "), "122.5 | 128.5 | +4.9%");
        let l = row(&text, p99, "isolation=rc strategy=optimistic clients=4");
        assert_eq!(l[3..].join(" | "), "-20.0% | <0.001 | faster");
        assert!(
            text.contains("Only in B (B-dir):\n\n- isolation=rr strategy=optimistic clients=4\n")
        );
        assert!(!text.contains("Only in A"));
        assert_eq!(check(&a(), &b()), Ok(()));
    }

    #[test]
    fn check_workloads() {
        let mut other = b();
        other.config.workload = "smallbank".into();
        let e = check(&a(), &other).unwrap_err();
        assert!(e.contains("A ran tpcb, B ran smallbank"), "{e}");
    }

    #[test]
    fn check_one_build_per_side() {
        let mut two = a();
        two.config.pg_bin = vec!["stock".into(), "patched".into()];
        two.config.pg_bin_dirs = [("stock", "/a/bin"), ("patched", "/b/bin")]
            .map(|(l, d)| (l.to_string(), d.to_string()))
            .into();
        let mut more: Vec<RunRecord> = two.runs.clone();
        for run in &mut two.runs {
            run.cell.pg_bin = Some("stock".into());
        }
        for run in &mut more {
            run.cell.pg_bin = Some("patched".into());
            run.server_version = "18.1".into();
        }
        two.runs.extend(more);
        let e = check(&two, &b()).unwrap_err();
        assert!(e.starts_with("A has several cells for isolation=rc"), "{e}");
        assert!(e.contains("(it varied pg_bin: stock, patched)"), "{e}");
        // Rendering anyway compares the first build.
        let text = render(&two, &b(), "a", "b");
        let rc = row(
            &text,
            "## TPS",
            "isolation=rc strategy=optimistic clients=4",
        );
        assert_eq!(rc[6], "faster");
        assert!(
            text.contains(
                "- **A:** a: PostgreSQL 16.4, 18.1; managed PostgreSQL from /usr/lib/postgresql/16/bin; \
                 builds stock: PostgreSQL 16.4, patched: PostgreSQL 18.1; "
            ),
            "{text}"
        );
    }

    #[test]
    fn fault_plans_are_matched_like_any_factor() {
        // A crossed its cells with the fault plans none and crash@2s; B
        // ran without faults: A's none cells match B's, its crash cells
        // have no partner.
        let mut x = fixture::results();
        x.config.fault_plans = vec!["none".into(), "crash@2s".into()];
        let mut crashed = x.runs.clone();
        for run in &mut x.runs {
            run.cell.fault_plan = Some("none".into());
        }
        for run in &mut crashed {
            run.cell.fault_plan = Some("crash@2s".into());
        }
        x.runs.extend(crashed);
        check(&x, &x).unwrap();
        let text = render(&x, &fixture::results(), "a", "b");
        let rc = row(
            &text,
            "## TPS",
            "isolation=rc strategy=optimistic clients=4 fault_plan=none",
        );
        assert_eq!(rc[6], "no significant difference", "{text}");
        assert!(
            text.contains("isolation=rc strategy=optimistic clients=4 fault_plan=crash@2s"),
            "{text}"
        );
    }

    #[test]
    fn params_at_defaults_match_param_factors() {
        // A varied `variant`; B ran at its default: the cells still match.
        let mut x = fixture::results();
        x.config.params = vec![("variant".into(), vec!["tpcb-like".into()])];
        for run in &mut x.runs {
            run.cell.params.insert("variant".into(), "tpcb-like".into());
        }
        let text = render(&x, &fixture::results(), "a", "b");
        assert!(
            text.contains("| isolation=rc strategy=optimistic variant=tpcb-like clients=4 "),
            "{text}"
        );
        assert!(!text.contains("Only in"), "{text}");
    }

    #[test]
    fn setup_differences_listed() {
        let mut y = fixture::results();
        y.config.duration_s = 30.0;
        y.config
            .settings
            .insert("synchronous_commit".into(), "off".into());
        let text = render(&fixture::results(), &y, "a", "b");
        assert!(
            text.contains(
                "- **Setup differences:** measured: 60 s vs 30 s; --set synchronous_commit: unset vs off\n"
            ),
            "{text}"
        );
        // Issue #31: of two settings lists only the settings that differ.
        let mut z = fixture::results();
        z.environment
            .server_settings
            .insert("shared_buffers".into(), "1GB".into());
        let mut w = z.clone();
        w.environment
            .server_settings
            .insert("shared_buffers".into(), "2GB".into());
        w.environment
            .server_settings
            .insert("work_mem".into(), "64MB".into());
        let text = render(&z, &w, "a", "b");
        assert!(
            text.contains(
                "- **Setup differences:** server setting shared_buffers: 1GB vs 2GB; server setting work_mem: unset vs 64MB\n"
            ),
            "{text}"
        );
        let same = render(&fixture::results(), &fixture::results(), "a", "b");
        assert!(same.contains("- **Setup differences:** none\n"));
    }

    /// Issue #31: a script study's cells have no strategy; their labels
    /// leave it out instead of printing `strategy=`.
    #[test]
    fn an_empty_strategy_is_left_out_of_the_cell_labels() {
        let mut x = fixture::results();
        for run in &mut x.runs {
            run.cell.strategy.clear();
        }
        let text = render(&x, &x.clone(), "a", "b");
        assert!(!text.contains("strategy="), "{text}");
        assert!(text.contains("| isolation=rc clients=4 "), "{text}");
    }

    #[test]
    fn geomean_cases() {
        assert_eq!(geomean([].into_iter()), None);
        // sqrt(2 · 8) = 4; non-positive values are left out.
        assert!((geomean([2.0, 8.0, 0.0, -1.0].into_iter()).unwrap() - 4.0).abs() < 1e-12);
    }
}
