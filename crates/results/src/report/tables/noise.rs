//! A calibration's noise as tables (`isobench calibrate`,
//! [`crate::stats::noise`]): per cell and metric the coefficients of
//! variation between runs and within a run, the smallest change a study
//! of the planned runs detects, the runs a side the target MDE needs and
//! the false-positive rate of isobench's verdict over the A/A pairs; and,
//! for `isobench compare --noise DIR`, what that noise means at the
//! comparison's own numbers of runs.

use super::table::{Column, Mark, Table, Value};
use crate::report::analysis::compare::{Pair, tps_figure};
use crate::report::format::NA;
use crate::stats::noise::{MetricNoise, Noise};
use crate::stats::proportion::Proportion;
use crate::stats::{self, power};

/// `12.3 %`, or n/a when not finite.
fn pct(v: f64) -> Value {
    if v.is_finite() {
        Value::num(v, format!("{v:.1} %"))
    } else {
        Value::text(NA)
    }
}

/// `±4.2 %`, or n/a.
fn mde(v: Option<f64>) -> Value {
    Value::opt(
        v,
        v.map_or_else(|| NA.into(), |m| format!("±{}", stats::fmt_mde(m))),
    )
}

/// `1 of 20` and `5.0 % [0.1, 24.9]`: the false positives and their rate
/// with its 95 % interval; the rate is marked bad when the interval lies
/// above 5 % (the verdict does not keep its level here).
fn false_positives(p: Option<Proportion>) -> [Value; 2] {
    match p {
        None => [Value::text(NA), Value::text(NA)],
        Some(p) => [
            Value::num(p.x as f64, format!("{} of {}", p.x, p.n)),
            Value::num(
                100.0 * p.rate,
                format!(
                    "{:.1} % [{:.1}, {:.1}]",
                    100.0 * p.rate,
                    100.0 * p.low,
                    100.0 * p.high
                ),
            )
            .mark(if p.low > stats::ALPHA {
                Mark::Bad
            } else {
                Mark::None
            }),
        ],
    }
}

/// The metrics of a cell, with their names and units; whether isobench
/// gives a verdict on it (TPS and p99).
fn metrics(c: &stats::noise::NoiseCell) -> [(&'static str, &MetricNoise, bool); 4] {
    [
        ("TPS (tx/s)", &c.tps, true),
        ("p50 latency (ms)", &c.latency_p50_ms, false),
        ("p99 latency (ms)", &c.latency_p99_ms, true),
        ("failures (% of transactions)", &c.failure_pct, false),
    ]
}

/// One row per cell and metric (the cell column only when the
/// calibration has several; else [`noise_title`] names it): the mean,
/// the CV between runs and within a run (per second), the MDE of a study
/// of `per_side` runs a side, the runs a side the target MDE needs, and
/// the verdict's false positives over the A/A pairs with their rate
/// (TPS and p99).
pub fn noise(n: &Noise) -> Table {
    let several = n.cells.len() > 1;
    let mut cols = Vec::new();
    if several {
        cols.push(Column::text("cell"));
    }
    cols.extend([
        Column::text("metric"),
        Column::num("mean"),
        Column::num("CV between runs").short("CV runs"),
        Column::num("CV within a run (per second)").short("CV within"),
        Column::num(format!("MDE at {} runs a side", n.per_side)).short("MDE"),
        Column::num(format!(
            "runs a side for ±{}",
            stats::fmt_mde(n.target_mde_pct)
        ))
        .short("runs needed"),
        Column::num("false positives (A/A pairs)").short("false pos."),
        Column::num("false-positive rate [95% CI]").short("rate [95% CI]"),
    ]);
    let mut t = Table::new(cols);
    t.id = Some("noise");
    for c in &n.cells {
        for (name, m, verdict) in metrics(c) {
            let mut row = Vec::new();
            if several {
                row.push(Value::text(c.cell.clone()));
            }
            let runs = match m.runs_for_target {
                _ if !m.cv_between_pct.is_finite() => Value::text(NA),
                None => Value::text(format!("> {}", power::MAX_RUNS)),
                Some(r) => Value::count(r as u64),
            };
            row.extend([
                Value::text(name),
                Value::opt(
                    m.mean.is_finite().then_some(m.mean),
                    if m.mean.is_finite() {
                        format!("{:.2}", m.mean)
                    } else {
                        NA.into()
                    },
                ),
                pct(m.cv_between_pct),
                m.cv_within_pct.map_or_else(|| Value::text(NA), pct),
                mde(m.mde_pct),
                runs,
            ]);
            if verdict {
                row.extend(false_positives(m.false_positives));
            } else {
                row.extend([Value::text(""), Value::text("")]);
            }
            t.row(row);
        }
    }
    t
}

/// `Noise (A/A calibration)`, with the cell's label when there is one
/// cell.
pub fn noise_title(n: &Noise) -> String {
    match n.cells.as_slice() {
        [one] => format!("Noise (A/A calibration of {})", one.cell),
        _ => "Noise (A/A calibration)".into(),
    }
}

/// For `compare --noise DIR`: per cell both sides have, the calibrated
/// CV of TPS between runs (the cell of the calibration with A's label),
/// the verdict's false positives there, and the MDE of the TPS
/// comparison at this comparison's complete runs (A's n and B's n), each
/// side's spread at least that CV: the figure the TPS table and the gate
/// show ([`crate::report::analysis::compare::tps_figure`]).
pub fn compare_noise(n: &Noise, pairs: &[Pair]) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("TPS CV between runs (calibrated)"),
        Column::num("false-positive rate [95% CI]"),
        Column::num("complete runs (A, B)"),
        Column::num("TPS MDE (as the gate tests it)"),
    ]);
    for p in pairs {
        let Some(c) = n.cell(&p.a.cell.label()) else {
            t.row(vec![
                Value::text(p.key.clone()),
                Value::text("not in the calibration"),
                Value::text(""),
                Value::text(""),
                Value::text(""),
            ]);
            continue;
        };
        let [_, rate] = false_positives(c.tps.false_positives);
        let f = tps_figure(p, |c| c.tps.as_ref(), Some(n));
        let runs = |s: Option<stats::Summary>| s.map_or_else(|| "0".into(), |s| s.n.to_string());
        t.row(vec![
            Value::text(p.key.clone()),
            pct(c.tps.cv_between_pct),
            rate,
            Value::text(format!("{}, {}", runs(f.a), runs(f.b))),
            mde(f.comparison.and_then(|c| c.mde_pct)),
        ]);
    }
    t
}

/// What the noise table's figures are.
pub fn noise_note(n: &Noise) -> String {
    format!(
        "{} A/A pairs of {} run(s) a side, the same cell as A and as B, interleaved (A B A B ...). \
         CV between runs: standard deviation over mean of the runs' figures; within a run: the mean \
         over runs of the CV of each run's per-second series. MDE: the smallest change a study of {} \
         runs a side detects at this CV with 80 % power at α = 0.05 (noncentral t). False positives: \
         A/A pairs (3 or more complete runs a side) that isobench's verdict called significantly \
         different, for TPS and p99; at a 5 % level about 1 in 20; the rate's 95 % interval is exact \
         (Clopper-Pearson).",
        n.pairs, n.per_side, n.per_side
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::noise::NoiseCell;

    fn metric(cv: f64, fp: Option<Proportion>) -> MetricNoise {
        MetricNoise {
            mean: 100.0,
            cv_between_pct: cv,
            cv_within_pct: None,
            mde_pct: power::mde_pct(cv / 100.0, 3, cv / 100.0, 3),
            runs_for_target: power::runs_for_mde(cv / 100.0, cv / 100.0, 5.0),
            false_positives: fp,
        }
    }

    #[test]
    fn noise_rows_per_metric_and_a_broken_level_is_marked() {
        let n = Noise {
            pairs: 20,
            per_side: 3,
            target_mde_pct: 5.0,
            cells: vec![NoiseCell {
                cell: "isolation=rc".into(),
                runs: 120,
                tps: metric(10.0, Proportion::of(6, 20)),
                latency_p50_ms: metric(2.0, None),
                latency_p99_ms: metric(5.0, Proportion::of(1, 20)),
                failure_pct: metric(f64::NAN, None),
            }],
        };
        let t = noise(&n);
        // One cell: named in the title, not in a column.
        assert_eq!(t.columns[0].header, "metric");
        assert_eq!(noise_title(&n), "Noise (A/A calibration of isolation=rc)");
        assert_eq!(t.rows.len(), 4);
        let tps = &t.rows[0].values;
        assert_eq!(tps[2].text, "10.0 %");
        // 6 of 20: the interval (11.9-54.3 %) lies above 5 %.
        assert_eq!(tps[6].text, "6 of 20");
        assert_eq!(tps[7].text, "30.0 % [11.9, 54.3]");
        assert_eq!(tps[7].mark, Mark::Bad);
        // 1 of 20 [0.1, 24.9]: consistent with 5 %.
        assert_eq!(t.rows[2].values[7].mark, Mark::None);
        // CV 10 % at 3 runs a side: the MDE is far above 5 %, and many
        // runs are needed.
        assert!(tps[4].num.unwrap() > 20.0, "{:?}", tps[4]);
        assert!(tps[5].num.unwrap() > 30.0, "{:?}", tps[5]);
        // No CV: no MDE, no runs.
        assert_eq!(t.rows[3].values[4].text, NA);
        assert_eq!(t.rows[3].values[5].text, NA);
        // p50 gets no verdict: no false positives.
        assert_eq!(t.rows[1].values[6].text, "");
        // Two cells: a cell column.
        let mut two = n.clone();
        two.cells.push(two.cells[0].clone());
        two.cells[1].cell = "isolation=ser".into();
        assert_eq!(noise(&two).columns[0].header, "cell");
        assert_eq!(noise(&two).rows.len(), 8);
    }
}
