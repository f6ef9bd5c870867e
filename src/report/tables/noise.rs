//! A calibration's noise as tables (`isobench calibrate`,
//! [`crate::stats::noise`]): per cell and metric the coefficients of
//! variation between runs and within a run, the smallest change a study
//! of the planned runs detects, the runs a side the target MDE needs and
//! the false-positive rate of isobench's verdict over the A/A pairs; and,
//! for `isobench compare --noise DIR`, what that noise means at the
//! comparison's own numbers of runs.

use super::table::{Column, Mark, Table, Value};
use crate::report::NA;
use crate::report::analysis::compare::Pair;
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

/// `1 of 20 (5.0 %, 95 % CI 0.1-24.9 %)`: marked bad when the interval
/// lies above 5 % (the verdict's level is not kept).
fn false_positives(p: Option<Proportion>) -> Value {
    match p {
        None => Value::text(NA),
        Some(p) => Value::num(
            100.0 * p.rate,
            format!(
                "{} of {} ({:.1} %, 95 % CI {:.1}-{:.1} %)",
                p.x,
                p.n,
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
    }
}

/// The metrics of a cell, with their names and units.
fn metrics(c: &stats::noise::NoiseCell) -> [(&'static str, &MetricNoise); 4] {
    [
        ("TPS (tx/s)", &c.tps),
        ("p50 latency (ms)", &c.latency_p50_ms),
        ("p99 latency (ms)", &c.latency_p99_ms),
        ("failures (% of transactions)", &c.failure_pct),
    ]
}

/// One row per cell and metric: the mean, the CV between runs and within
/// a run (per second), the MDE of a study of `per_side` runs a side, the
/// runs a side the target MDE needs, and the false positives of the
/// verdict (TPS and p99).
pub fn noise(n: &Noise) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
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
        Column::long("false positives of the verdict (A/A pairs)").short("false positives"),
    ]);
    t.id = Some("noise");
    for c in &n.cells {
        for (name, m) in metrics(c) {
            let runs = m.runs_for_target.map_or_else(
                || Value::text(format!("> {}", power::MAX_RUNS)),
                |r| Value::count(r as u64),
            );
            t.row(vec![
                Value::text(c.cell.clone()),
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
                if m.cv_between_pct.is_finite() {
                    runs
                } else {
                    Value::text(NA)
                },
                if name.starts_with("TPS") || name.starts_with("p99") {
                    false_positives(m.false_positives)
                } else {
                    Value::text("")
                },
            ]);
        }
    }
    t
}

/// For `compare --noise DIR`: per cell both sides have, the calibrated
/// CV of TPS between runs (the cell of the calibration with A's label),
/// the verdict's false positives there, and the MDE at this comparison's
/// runs (A's n and B's n) at that CV.
pub fn compare_noise(n: &Noise, pairs: &[Pair]) -> Table {
    let mut t = Table::new(vec![
        Column::text("cell"),
        Column::num("TPS CV between runs (calibrated)"),
        Column::long("false positives (A/A pairs)"),
        Column::num("runs (A, B)"),
        Column::num("MDE at these runs"),
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
        let cv = c.tps.cv_between_pct / 100.0;
        t.row(vec![
            Value::text(p.key.clone()),
            pct(c.tps.cv_between_pct),
            false_positives(c.tps.false_positives),
            Value::text(format!("{}, {}", p.a.n, p.b.n)),
            mde(power::mde_pct(cv, p.a.n, cv, p.b.n)),
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
         different; at a 5 % level about 1 in 20, its 95 % interval exact (Clopper-Pearson).",
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
        assert_eq!(t.rows.len(), 4);
        let tps = &t.rows[0].values;
        assert_eq!(tps[3].text, "10.0 %");
        // 6 of 20: the interval (11.9-54.3 %) lies above 5 %.
        assert!(
            tps[7].text.starts_with("6 of 20 (30.0 %"),
            "{}",
            tps[7].text
        );
        assert_eq!(tps[7].mark, Mark::Bad);
        assert_eq!(t.rows[2].values[7].mark, Mark::None);
        // No CV: no MDE, no runs.
        assert_eq!(t.rows[3].values[5].text, NA);
        assert_eq!(t.rows[3].values[6].text, NA);
    }
}
