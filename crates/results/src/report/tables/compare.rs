//! `isobench compare`'s tables: per matched cell, A's and B's TPS (or
//! effective TPS) and p99 latency, the change from A to B with its test
//! and the smallest change the comparison could detect (MDE), and a
//! geometric-mean row over the cells both sides have; and the "cannot
//! tell" lines under them ([`caveats`]). Each figure is the one the
//! regression gate tests ([`crate::report::analysis::compare::Figure`]).

use super::table::{Column, Row, Table, Value};
use crate::report::analysis::cells::CellSummary;
use crate::report::analysis::compare::{Pair, geomean, p99_figure, tps_figure};
use crate::report::{
    format::NA, format::fmt_ms, format::fmt_p, format::fmt_pct_change, format::fmt_pct_ci,
    format::fmt_tps,
};
use crate::stats::{self, Comparison, Summary, noise::Noise};

/// `1234.5 ± 12.3 (n=5)`.
pub fn tps_text(s: Option<&Summary>) -> String {
    match s {
        None => NA.into(),
        Some(s) => format!("{} ± {} (n={})", fmt_tps(s.mean), fmt_tps(s.ci95), s.n),
    }
}

/// delta, its CI, p, verdict and MDE of a comparison (`n/a` without
/// one).
fn comparison_values(c: Option<&Comparison>, with_ci: bool) -> Vec<Value> {
    let pct = c.and_then(|c| c.pct);
    let mut v = vec![Value::opt(
        pct,
        pct.map_or_else(|| NA.into(), fmt_pct_change),
    )];
    if with_ci {
        v.push(Value::text(fmt_pct_ci(c.and_then(|c| c.pct_ci.as_ref()))));
    }
    let p = c.and_then(|c| c.welch.as_ref());
    v.push(Value::opt(p.map(|w| w.p), fmt_p(p)));
    v.push(Value::text(
        c.map_or_else(|| NA.to_string(), |c| c.verdict.label().into()),
    ));
    let mde = c.and_then(|c| c.mde_pct);
    v.push(Value::opt(
        mde,
        mde.map_or_else(|| NA.into(), |m| format!("±{}", stats::fmt_mde(m))),
    ));
    v
}

/// One line per pair whose TPS comparison found no difference and could
/// not have seen a 5 % one: `- KEY: cannot tell: too few runs (2 on the
/// smaller side; ...)` (`Comparison::caveat`).
pub fn caveats<'a>(
    pairs: &[Pair<'a>],
    tps: fn(&'a CellSummary<'a>) -> Option<&'a Summary>,
    noise: Option<&Noise>,
) -> Vec<String> {
    pairs
        .iter()
        .filter_map(|p| {
            let words = tps_figure(p, tps, noise).comparison?.caveat()?;
            Some(format!("{}: cannot tell: {words}", p.key))
        })
        .collect()
}

/// The geomean row over the pairs where both values are positive: A's and
/// B's geometric means and the change between them; `cols` values.
fn geomean_row(pairs: &[(f64, f64)], fmt: fn(f64) -> String, cols: usize) -> Row {
    let ok: Vec<(f64, f64)> = pairs
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
        .collect();
    let ga = geomean(ok.iter().map(|p| p.0));
    let gb = geomean(ok.iter().map(|p| p.1));
    let change = match (ga, gb) {
        (Some(x), Some(y)) => Some(100.0 * (y / x - 1.0)),
        _ => None,
    };
    let mut values = vec![
        Value::text(format!("geomean ({} cells)", ok.len())),
        Value::opt(ga, ga.map_or_else(|| NA.into(), fmt)),
        Value::opt(gb, gb.map_or_else(|| NA.into(), fmt)),
        Value::opt(change, change.map_or_else(|| NA.into(), fmt_pct_change)),
    ];
    values.resize(cols, Value::text(""));
    Row {
        values,
        class: "geomean",
    }
}

/// A's and B's `tps` (a cell's reported or effective TPS) per pair, the
/// change of the mean with its 95 % interval (`stats::pct_ci95`), the
/// test of that log ratio (its p), the verdict and the MDE at 80 % power;
/// then the geomean row. With a calibration (`noise`) each side's spread
/// is at least the calibrated CV, as in the gate.
pub fn tps<'a>(
    pairs: &[Pair<'a>],
    tps: fn(&'a CellSummary<'a>) -> Option<&'a Summary>,
    noise: Option<&Noise>,
) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("A (tx/s)"),
        Column::num("B (tx/s)"),
        Column::num("delta"),
        Column::num("95% CI of delta"),
        Column::num("p"),
        Column::text("verdict"),
        Column::num("MDE"),
    ]);
    for p in pairs {
        let f = tps_figure(p, tps, noise);
        let side = |s: Option<Summary>| Value::opt(s.map(|s| s.mean), tps_text(s.as_ref()));
        let mut row = vec![Value::text(p.key.clone()), side(f.a), side(f.b)];
        row.extend(comparison_values(f.comparison.as_ref(), true));
        t.row(row);
    }
    let means: Vec<(f64, f64)> = pairs
        .iter()
        .filter_map(|p| Some((tps(p.a)?.mean, tps(p.b)?.mean)))
        .collect();
    let cols = t.columns.len();
    t.rows.push(geomean_row(&means, fmt_tps, cols));
    t
}

/// Each side's p99 latency per pair: every complete run's own p99,
/// their mean (what the gate tests), the change of that mean, its test,
/// verdict and MDE; then the geomean row. With a calibration (`noise`)
/// each side's spread is at least the calibrated CV, as in the gate.
pub fn p99(pairs: &[Pair], noise: Option<&Noise>) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("A (ms)"),
        Column::num("B (ms)"),
        Column::num("delta"),
        Column::num("p"),
        Column::text("verdict"),
        Column::num("MDE"),
    ]);
    let mut means = Vec::new();
    for p in pairs {
        let f = p99_figure(p, noise);
        let ms = |s: Option<Summary>| {
            Value::opt(
                s.map(|s| s.mean),
                s.map_or_else(|| NA.into(), |s| fmt_ms(s.mean)),
            )
        };
        let mut row = vec![Value::text(p.key.clone()), ms(f.a), ms(f.b)];
        row.extend(comparison_values(f.comparison.as_ref(), false));
        t.row(row);
        if let (Some(x), Some(y)) = (f.a, f.b) {
            means.push((x.mean, y.mean));
        }
    }
    let cols = t.columns.len();
    t.rows.push(geomean_row(&means, fmt_ms, cols));
    t
}
