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
//! of PostgreSQL on the same study is what A/B is mostly for. Setup
//! that neither side varied (duration, scale, parameter defaults, retry
//! policy, `--set` settings, ...) is not matched on either; where A and B
//! differ in it, the output lists it under "Setup differences", because it
//! may explain a change as well as the build does.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::model::{Backoff, RetryPolicy};
use crate::report::analysis::cells::{self, CellSummary};
use crate::report::format::NA;
use crate::stats::{self, Better, Comparison, Summary, noise::Noise};
use crate::store::{Cell, Results};

/// Checks that `a` and `b` can be compared cell by cell.
///
/// Errors: the workloads differ (both are named); a side has several cells
/// that differ only in `pg_bin` (a study that varied the server
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
                     server build per side (isobench report compares builds within one study)",
                    r.config.pg_bin.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// A cell both sides have: its key (also its label) and each side's
/// summary.
pub struct Pair<'a> {
    pub key: String,
    pub a: &'a CellSummary<'a>,
    pub b: &'a CellSummary<'a>,
}

/// The cells of A and B matched by key (see the module docs): the pairs
/// in A's order, and the keys only one side has. A second cell of one
/// key (a second `pg_bin` of a side, see [`check`]) is left out.
pub struct Pairing<'a> {
    pub pairs: Vec<Pair<'a>>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// B's key of each of B's cells, in their order (the names B's cells
    /// go by in `compare --format bmf|gab`).
    pub keys_b: Vec<String>,
}

impl Pairing<'_> {
    /// Whether a history check found lost commits on either side of a
    /// pair (issue #30): then effective TPS is compared first.
    pub fn effective_differs(&self) -> bool {
        self.pairs
            .iter()
            .any(|p| p.a.effective_differs() || p.b.effective_differs())
    }
}

/// Pairs the cells `ca` of `a` with the cells `cb` of `b`
/// ([`cells::aggregate`] of each).
pub fn pair<'a>(
    a: &Results,
    b: &Results,
    ca: &'a [CellSummary<'a>],
    cb: &'a [CellSummary<'a>],
) -> Pairing<'a> {
    let m = Matcher::new(a, b);
    let keys_a: Vec<String> = ca.iter().map(|c| m.key(a, c.cell)).collect();
    let keys_b: Vec<String> = cb.iter().map(|c| m.key(b, c.cell)).collect();
    let mut pairs = Vec::new();
    let mut only_a = Vec::new();
    for (i, k) in keys_a.iter().enumerate() {
        if keys_a[..i].contains(k) {
            continue; // a second pg_bin of A (see `check`)
        }
        match keys_b.iter().position(|kb| kb == k) {
            Some(j) => pairs.push(Pair {
                key: k.clone(),
                a: &ca[i],
                b: &cb[j],
            }),
            None => only_a.push(k.clone()),
        }
    }
    let mut only_b = Vec::new();
    for (j, k) in keys_b.iter().enumerate() {
        if !keys_a.contains(k) && !keys_b[..j].contains(k) {
            only_b.push(k.clone());
        }
    }
    Pairing {
        pairs,
        only_a,
        only_b,
        keys_b,
    }
}

/// One figure of a matched cell as `compare` shows it, in every table
/// and in the regression gate alike (one figure per fact): A's and B's
/// summaries over their complete runs, each side's spread raised to at
/// least a calibration's CV when `--noise` gives one, and B against A.
#[derive(Debug, Clone, Copy)]
pub struct Figure {
    pub a: Option<Summary>,
    pub b: Option<Summary>,
    pub comparison: Option<Comparison>,
}

/// [`Figure`] of A's `a` and B's `b` (`better`: which way is better), each
/// side's standard deviation at least `cv` (a ratio) times its mean when
/// `cv` is given.
pub fn figure(a: Option<&Summary>, b: Option<&Summary>, cv: Option<f64>, better: Better) -> Figure {
    let floor = |s: Option<&Summary>| s.map(|s| cv.map_or(*s, |cv| s.with_cv_floor(cv)));
    let (a, b) = (floor(a), floor(b));
    let comparison = match (&a, &b) {
        (Some(x), Some(y)) => Some(stats::compare(y, x, better)),
        _ => None,
    };
    Figure { a, b, comparison }
}

/// The calibrated CVs between runs of pair `p`'s cell in `noise` (the
/// calibration's cell with A's label), as ratios: of TPS, and of p99.
pub fn calibrated(noise: Option<&Noise>, p: &Pair) -> (Option<f64>, Option<f64>) {
    let finite = |pct: f64| (pct.is_finite() && pct > 0.0).then_some(pct / 100.0);
    match noise.and_then(|n| n.cell(&p.a.cell.label())) {
        Some(c) => (
            finite(c.tps.cv_between_pct),
            finite(c.latency_p99_ms.cv_between_pct),
        ),
        None => (None, None),
    }
}

/// Pair `p`'s TPS as `tps` picks it (reported, or effective), compared as
/// every table and the gate compare it.
pub fn tps_figure<'a>(
    p: &Pair<'a>,
    tps: fn(&'a CellSummary<'a>) -> Option<&'a Summary>,
    noise: Option<&Noise>,
) -> Figure {
    figure(tps(p.a), tps(p.b), calibrated(noise, p).0, Better::Higher)
}

/// Pair `p`'s p99 latency: each complete run's own p99 (from its
/// histogram), their mean per side, compared as every table and the gate
/// compare it.
pub fn p99_figure(p: &Pair, noise: Option<&Noise>) -> Figure {
    figure(
        p.a.latency.p99.as_ref(),
        p.b.latency.p99.as_ref(),
        calibrated(noise, p).1,
        Better::Lower,
    )
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
pub fn side(r: &Results, name: &str) -> String {
    let mut versions = crate::report::format::build_versions(r, None);
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
            .map(
                |l| match crate::report::format::build_versions(r, Some(l)).as_slice() {
                    [] => l.clone(),
                    v => format!("{l}: PostgreSQL {}", v.join(", ")),
                },
            )
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
pub fn setup_differences(a: &Results, b: &Results) -> Vec<String> {
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

/// The geometric mean of the positive, finite `values`; `None` without
/// any.
pub fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let logs: Vec<f64> = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(f64::ln)
        .collect();
    (!logs.is_empty()).then(|| (logs.iter().sum::<f64>() / logs.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fixture;

    #[test]
    fn check_workloads() {
        let mut other = fixture::results();
        other.config.workload = "smallbank".into();
        let e = check(&fixture::results(), &other).unwrap_err();
        assert!(e.contains("A ran tpcb, B ran smallbank"), "{e}");
    }

    #[test]
    fn geomean_cases() {
        assert_eq!(geomean([].into_iter()), None);
        // sqrt(2 · 8) = 4; non-positive values are left out.
        assert!((geomean([2.0, 8.0, 0.0, -1.0].into_iter()).unwrap() - 4.0).abs() < 1e-12);
    }
}
