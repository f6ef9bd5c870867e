//! How figures and factors read, shared by every renderer: number
//! formats (a figure reads the same everywhere), the factor headers and
//! values of a cell, and the study's setup in words.

use crate::stats::{PctCi, Summary, Welch};
use crate::store::{Cell, Results};

/// Names of the factor columns every per-cell table starts with:
/// workload or script (when a factor), isolation, strategy, each `--param` given, clients, then the factors
/// the study varied or set: scale (when it has more than one value),
/// pool_size, pooler, pooler_size, rate, max_tries, each server setting,
/// fault_plan, pg_bin.
pub fn factor_headers(results: &Results) -> Vec<String> {
    let c = &results.config;
    let mut h = work_factor(results).into_iter().collect::<Vec<_>>();
    h.push("isolation".to_string());
    // An external load without strategies has none.
    if !c.strategies.is_empty() {
        h.push("strategy".into());
    }
    h.extend(c.params.iter().map(|(k, _)| k.clone()));
    h.push("clients".into());
    if c.scale.len() > 1 {
        h.push("scale".into());
    }
    if !c.pool_size.is_empty() {
        h.push("pool_size".into());
    }
    if !c.pooler.is_empty() {
        h.push("pooler".into());
    }
    if !c.pooler_size.is_empty() {
        h.push("pooler_size".into());
    }
    if !c.rate.is_empty() {
        h.push("rate".into());
    }
    if !c.max_tries.is_empty() {
        h.push("max_tries".into());
    }
    h.extend(c.setting_factors.iter().map(|(k, _)| k.clone()));
    if !c.fault_plans.is_empty() {
        h.push("fault_plan".into());
    }
    if !c.pg_bin.is_empty() {
        h.push("pg_bin".into());
    }
    h
}

/// The name of the workload or script factor of `results`' study
/// (`workload`, `script`), `None` when neither is a factor.
pub fn work_factor(results: &Results) -> Option<String> {
    let c = &results.config;
    if !c.scripts.sets.is_empty() {
        Some("script".into())
    } else if !c.workloads.is_empty() {
        Some("workload".into())
    } else {
        None
    }
}

/// The study's workload as reports name it: the workload (`tpcb`), the
/// workload factor's values (`tpcb, ssibench`), the script factor's sets
/// (`pgbench-script (builtin:tpcb-like, f.sql)`), or the scripts of a
/// study of scripts (`pgbench-script (oncall.sql, builtin:select-only@3)`).
pub fn workload_text(results: &Results) -> String {
    let c = &results.config;
    let s = &c.scripts;
    if !s.sets.is_empty() {
        let sets: Vec<&str> = s.sets.iter().map(|s| s.label.as_str()).collect();
        format!("{} ({})", c.workload, sets.join(", "))
    } else if !s.files.is_empty() || !s.builtins.is_empty() {
        let weight = |w: u32| {
            if w == 1 {
                String::new()
            } else {
                format!("@{w}")
            }
        };
        let names: Vec<String> = s
            .files
            .iter()
            .map(|(f, w)| format!("{}{}", f.display(), weight(*w)))
            .chain(
                s.builtins
                    .iter()
                    .map(|(b, w)| format!("builtin:{b}{}", weight(*w))),
            )
            .collect();
        format!("{} ({})", c.workload, names.join(", "))
    } else if !c.workloads.is_empty() {
        c.workloads.join(", ")
    } else {
        c.workload.clone()
    }
}

/// A cell's values for [`factor_headers`].
pub fn factor_values(results: &Results, cell: &Cell) -> Vec<String> {
    let c = &results.config;
    let mut v = Vec::new();
    if work_factor(results).is_some() {
        v.push(cell.workload.clone());
    }
    v.push(cell.isolation.short().to_string());
    if !c.strategies.is_empty() {
        v.push(cell.strategy.clone());
    }
    v.extend(
        c.params
            .iter()
            .map(|(k, _)| cell.params.get(k).cloned().unwrap_or_else(|| NA.into())),
    );
    v.push(cell.clients.to_string());
    let opt = |x: Option<String>| x.unwrap_or_else(|| NA.into());
    if c.scale.len() > 1 {
        v.push(opt(cell.scale.map(|s| s.to_string())));
    }
    if !c.pool_size.is_empty() {
        v.push(opt(cell.pool_size.map(|s| s.to_string())));
    }
    if !c.pooler.is_empty() {
        v.push(opt(cell.pooler.map(|p| p.to_string())));
    }
    if !c.pooler_size.is_empty() {
        v.push(opt(cell.pooler_size.map(|s| s.to_string())));
    }
    if !c.rate.is_empty() {
        v.push(opt(cell.rate.map(|s| s.to_string())));
    }
    if !c.max_tries.is_empty() {
        v.push(opt(cell.max_tries.map(|s| s.to_string())));
    }
    v.extend(
        c.setting_factors
            .iter()
            .map(|(k, _)| opt(cell.settings.get(k).cloned())),
    );
    if !c.fault_plans.is_empty() {
        v.push(opt(cell.fault_plan.clone()));
    }
    if !c.pg_bin.is_empty() {
        v.push(opt(cell.pg_bin.clone()));
    }
    v
}

/// The throughput unit of `r`'s runs: `req/s` when every run with an
/// external load's figures counted requests, else `tx/s`.
pub fn throughput_unit(r: &Results) -> &'static str {
    let mut units = r
        .runs
        .iter()
        .filter_map(|x| x.load.as_ref()?.figures.as_ref().map(|f| f.unit.as_str()))
        .peekable();
    if units.peek().is_some() && units.all(|u| u == "req/s") {
        "req/s"
    } else {
        "tx/s"
    }
}

/// What the throughput column counts: (`TPS`, `tx/s`), or (`requests/s`,
/// `req/s`) for an external load that sent HTTP requests.
pub fn throughput_label(r: &Results) -> (&'static str, &'static str) {
    match throughput_unit(r) {
        "req/s" => ("requests/s", "req/s"),
        _ => ("TPS", "tx/s"),
    }
}

/// `0`, or `12 (shift-covered: 2 of 10 shifts ...)` with the example cut to
/// `max_example` characters.
pub fn fmt_anomalies(count: u64, example: Option<&str>, max_example: usize) -> String {
    match example {
        Some(e) if count > 0 => {
            let e: String = if e.chars().count() > max_example {
                let cut: String = e.chars().take(max_example.saturating_sub(1)).collect();
                format!("{cut}…")
            } else {
                e.to_string()
            };
            format!("{count} ({e})")
        }
        _ => count.to_string(),
    }
}

/// The retry policy in words: `up to 10 tries per transaction, retrying
/// 40001 (serialization_failure), ...; no backoff`.
pub fn fmt_retry(retry: &crate::model::RetryPolicy) -> String {
    use crate::model::Backoff;
    let codes: Vec<String> = retry
        .retry_on
        .iter()
        .map(|s| format!("{s} ({})", crate::model::sqlstate_name(s)))
        .collect();
    let backoff = match retry.backoff {
        Backoff::None => "no backoff".to_string(),
        Backoff::Exponential { base, max } => format!(
            "exponential backoff with full jitter, {} to {}",
            humantime::format_duration(base),
            humantime::format_duration(max)
        ),
    };
    format!(
        "up to {} tries per transaction, retrying {}; {backoff}",
        retry.max_tries,
        codes.join(", ")
    )
}

/// What a run is: `10 s measured after 2 s warm-up; ...`, or the load
/// command of an external load.
pub fn fmt_runs(c: &crate::store::StoredConfig) -> String {
    match &c.load.cmd {
        Some(cmd) => format!(
            "one load command per run: {cmd} ({{duration_s}} = {}); server observed while it runs, counters every {} s",
            c.duration_s, c.sample_interval_s
        ),
        None => format!(
            "{} s measured after {} s warm-up; server counters sampled every {} s",
            c.duration_s, c.warmup_s, c.sample_interval_s
        ),
    }
}

/// The server builds a header lists, as (what, value): the builds of the
/// factor as `Server builds (pg_bin)`, or the one build named by
/// `--pg-bin NAME=DIR` as `Server build`; `None` when neither. Each build
/// as `stock: PostgreSQL 15.14 from /usr/lib/postgresql/15/bin`: its
/// label, the server versions its runs reported (none before its first
/// run), and its directory (not repeated when the label is the directory:
/// a store written before builds had labels), `; ` between builds.
pub fn fmt_builds(r: &Results) -> Option<(&'static str, String)> {
    let c = &r.config;
    let one = |label: &str, dir: &str, versions: Vec<&str>| {
        let version = format!("PostgreSQL {}", versions.join(", "));
        match (versions.is_empty(), dir == label) {
            (false, false) => format!("{label}: {version} from {dir}"),
            (false, true) => format!("{label}: {version}"),
            (true, false) => format!("{label}: {dir}"),
            (true, true) => label.to_string(),
        }
    };
    if !c.pg_bin.is_empty() {
        let builds: Vec<String> = c
            .pg_bin
            .iter()
            .map(|l| one(l, c.pg_bin_dir(l), build_versions(r, Some(l))))
            .collect();
        return Some(("Server builds (pg_bin)", builds.join("; ")));
    }
    let t = &c.target_options;
    let (label, dir) = (t.pg_bin_label.as_deref()?, t.pg_bin.as_deref()?);
    Some(("Server build", one(label, dir, build_versions(r, None))))
}

/// The distinct server versions that the runs of the build labelled
/// `label` reported (`None`: every run), in order of first run.
pub fn build_versions<'a>(r: &'a Results, label: Option<&str>) -> Vec<&'a str> {
    let mut versions: Vec<&str> = Vec::new();
    for run in &r.runs {
        let v = run.server_version.as_str();
        if !v.is_empty()
            && (label.is_none() || run.cell.pg_bin.as_deref() == label)
            && !versions.contains(&v)
        {
            versions.push(v);
        }
    }
    versions
}

/// Load times: `1.23 s (100011 rows)`, per data variant when several.
pub fn fmt_load(load: &[crate::model::LoadReport]) -> String {
    if load.is_empty() {
        return NA.to_string();
    }
    load.iter()
        .map(|l| {
            let what = if l.data.is_empty() {
                String::new()
            } else {
                format!("{}: ", l.data)
            };
            if l.rows == 0 {
                // An external load's setup command: no rows counted.
                format!("{what}{:.2} s", l.elapsed.as_secs_f64())
            } else {
                format!("{what}{:.2} s ({} rows)", l.elapsed.as_secs_f64(), l.rows)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Workload parameters given as factors: `rows=10,100, variant=a`, or
/// `none given`.
pub fn fmt_param_factors(params: &[(String, Vec<String>)]) -> String {
    if params.is_empty() {
        return "none given".to_string();
    }
    params
        .iter()
        .map(|(k, v)| format!("{k}={}", v.join(",")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Failures by SQLSTATE: `30 serialization_failure (40001), 1
/// deadlock_detected (40P01)`, or `0`.
pub fn fmt_failures(failed: &std::collections::BTreeMap<String, u64>) -> String {
    if failed.is_empty() {
        return "0".into();
    }
    failed
        .iter()
        .map(|(code, n)| format!("{n} {} ({code})", crate::model::sqlstate_name(code)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a renderer shows for a figure it does not have.
pub const NA: &str = "n/a";

/// Throughput, tx/s, with one decimal: `1234.5`.
pub fn fmt_tps(v: f64) -> String {
    fmt_fixed(v, 1)
}

/// A time in ms with 3 significant digits or more: `0.842`, `12.35`,
/// `123.5`, `1234.5`.
/// `, scale N` (or `N/M/...` for several), empty without a scale: the
/// report title's suffix; for scripts over their own schema (`--init-sql`
/// without pgbench's tables), `, --init-sql FILE` instead.
pub fn scale_text(r: &Results) -> String {
    let s = &r.config.scripts;
    if let (Some(init), false) = (&s.init_sql, s.workload_named) {
        return format!(", --init-sql {}", init.display());
    }
    match r.config.scale.as_slice() {
        [] => String::new(),
        [s] => format!(", scale {s}"),
        many => format!(
            ", scale {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
    }
}

pub fn fmt_ms(v: f64) -> String {
    let decimals = match v.abs() {
        x if x >= 100.0 => 1,
        x if x >= 10.0 => 2,
        _ => 3,
    };
    fmt_fixed(v, decimals)
}

/// `v` with `decimals` decimals, or [`NA`] when it is not finite.
pub fn fmt_fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        NA.into()
    }
}

/// An optional figure with `decimals` decimals.
pub fn fmt_opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| NA.into(), |v| fmt_fixed(v, decimals))
}

/// The mean of an optional summary formatted by `f`.
pub fn fmt_mean(s: Option<&Summary>, f: fn(f64) -> String) -> String {
    s.map_or_else(|| NA.into(), |s| f(s.mean))
}

/// `mean ± ci95` of a throughput summary: `1234.5 ± 12.3`; the interval is
/// `n/a` with a single run.
pub fn fmt_tps_ci(s: Option<&Summary>) -> String {
    match s {
        None => NA.into(),
        Some(s) => format!("{} ± {}", fmt_tps(s.mean), fmt_tps(s.ci95)),
    }
}

/// A signed percentage with one decimal: `+50.0%`, `-3.2%`.
pub fn fmt_pct_change(pct: f64) -> String {
    if pct.is_finite() {
        format!("{pct:+.1}%")
    } else {
        NA.into()
    }
}

/// A 95 % interval of a relative difference: `[+38.1%, +61.9%]`, or
/// `n/a`.
pub fn fmt_pct_ci(ci: Option<&PctCi>) -> String {
    match ci {
        Some(c) if c.low.is_finite() && c.high.is_finite() => {
            format!("[{}, {}]", fmt_pct_change(c.low), fmt_pct_change(c.high))
        }
        _ => NA.into(),
    }
}

/// A p-value with 3 decimals, `<0.001` below that, or `n/a`.
pub fn fmt_p(w: Option<&Welch>) -> String {
    match w {
        Some(w) if w.p.is_finite() && w.p < 0.001 => "<0.001".into(),
        Some(w) => fmt_fixed(w.p, 3),
        None => NA.into(),
    }
}

/// `n` with thousands separated by commas: `27,150`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, ch) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(fmt_tps(1234.56), "1234.6");
        assert_eq!(fmt_ms(0.84249), "0.842");
        assert_eq!(fmt_ms(12.345), "12.35");
        assert_eq!(fmt_ms(123.45), "123.5");
        assert_eq!(fmt_fixed(f64::NAN, 2), "n/a");
        assert_eq!(fmt_pct_change(50.0), "+50.0%");
        assert_eq!(fmt_pct_change(-3.24), "-3.2%");
        let one = Summary::of(&[100.0]).unwrap();
        assert_eq!(fmt_tps_ci(Some(&one)), "100.0 ± n/a");
        assert_eq!(fmt_tps_ci(None), "n/a");
        assert_eq!(fmt_anomalies(0, Some("x"), 10), "0");
        assert_eq!(fmt_anomalies(3, Some("abcdefghijkl"), 5), "3 (abcd…)");
        let ci = PctCi {
            pct: 50.0,
            low: 38.14,
            high: 61.86,
        };
        assert_eq!(fmt_pct_ci(Some(&ci)), "[+38.1%, +61.9%]");
        assert_eq!(fmt_pct_ci(None), "n/a");
        let w = |p| Welch { t: 1.0, df: 2.0, p };
        assert_eq!(fmt_p(Some(&w(0.0123))), "0.012");
        assert_eq!(fmt_p(Some(&w(0.0004))), "<0.001");
        assert_eq!(fmt_p(None), "n/a");
    }
}
