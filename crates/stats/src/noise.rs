//! The noise of a calibration (`isobench calibrate`): the same cell run as
//! A and as B, interleaved, in `pairs` A/A comparisons of `per_side` runs
//! a side ([`Calibration::slot`]). Per cell and metric (TPS, p50 and p99
//! latency, the failure share) the coefficient of variation between
//! repetitions and within a run's per-second series; the false-positive
//! rate of isobench's own verdict ([`super::compare`] of B against A)
//! over the pairs, with its exact binomial interval; the MDE of a study of
//! `per_side` runs a side at this noise, and the runs a side the target
//! MDE needs ([`super::power`]). `results.json` carries it as `noise`, and
//! `isobench compare --noise DIR` reads it.

use serde::{Deserialize, Serialize};

use super::proportion::Proportion;
use super::{Better, MIN_RUNS, Summary, compare, power};
use crate::model::{Calibration, Results, RunRecord};

/// The noise section of a calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub pairs: u32,
    pub per_side: u32,
    /// The MDE repetitions are planned for, %.
    pub target_mde_pct: f64,
    pub cells: Vec<NoiseCell>,
}

impl Noise {
    /// The noise of the cell labelled `label` (`Cell::label`), if the
    /// calibration ran it.
    pub fn cell(&self, label: &str) -> Option<&NoiseCell> {
        self.cells.iter().find(|c| c.cell == label)
    }
}

/// One cell's noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseCell {
    /// The cell's label (`isolation=rc strategy=optimistic clients=16`).
    pub cell: String,
    /// Complete runs counted.
    pub runs: usize,
    pub tps: MetricNoise,
    pub latency_p50_ms: MetricNoise,
    pub latency_p99_ms: MetricNoise,
    pub failure_pct: MetricNoise,
}

/// One metric's noise: its coefficients of variation, %, NaN (null in
/// JSON) where undefined; what a study of `per_side` runs a side can
/// detect at the CV between runs, and the runs a side the target MDE
/// needs; for TPS and p99, the false-positive rate of isobench's verdict
/// over the A/A pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MetricNoise {
    /// Mean over the runs, in the metric's unit.
    pub mean: f64,
    /// `sd / mean` of the runs' values, %.
    pub cv_between_pct: f64,
    /// Mean over runs of the CV of the run's per-second series, %; null
    /// for a metric without a per-second series (p50).
    pub cv_within_pct: Option<f64>,
    /// The MDE of a comparison of `per_side` runs against as many at
    /// this CV, % (80 % power, α = 0.05, [`power::mde_pct`]).
    pub mde_pct: Option<f64>,
    /// Runs a side whose MDE is the target ([`power::runs_for_mde`];
    /// null above [`power::MAX_RUNS`] or without a CV).
    pub runs_for_target: Option<usize>,
    /// A/A comparisons with at least 3 complete runs a side, and how
    /// many of them isobench's verdict (`stats::compare`: faster or
    /// slower at p < 0.05) called significant: the false-positive rate,
    /// with its 95 % Clopper–Pearson interval. TPS and p99 only; null
    /// without such a comparison.
    pub false_positives: Option<Proportion>,
}

impl MetricNoise {
    fn of(values: &[f64], within: Option<Vec<f64>>, cal: Calibration) -> MetricNoise {
        let s = Summary::of(values);
        let cv = s.map_or(f64::NAN, |s| s.cv);
        let per_side = cal.per_side as usize;
        MetricNoise {
            mean: s.map_or(f64::NAN, |s| s.mean),
            cv_between_pct: 100.0 * cv,
            cv_within_pct: within.and_then(|w| {
                let w: Vec<f64> = w.into_iter().filter(|x| x.is_finite()).collect();
                Summary::of(&w).map(|s| 100.0 * s.mean)
            }),
            mde_pct: power::mde_pct(cv, per_side, cv, per_side),
            runs_for_target: power::runs_for_mde(cv, cv, cal.target_mde_pct),
            false_positives: None,
        }
    }
}

/// The CV (a ratio) of `values`; NaN with fewer than 2 or a zero mean.
fn cv(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    Summary::of(&v).map_or(f64::NAN, |s| s.cv)
}

/// The noise of `results` when it is a calibration
/// (`config.calibrate`); `None` otherwise. Runs counted as in the
/// reports: complete, and without faults when `exclude_faulted`.
pub fn of(results: &Results) -> Option<Noise> {
    let cal = results.config.calibrate?;
    let exclude = results.config.exclude_faulted;
    let counted = |r: &&RunRecord| r.complete && !(exclude && r.faults.is_some());
    let mut cells: Vec<&crate::model::Cell> = Vec::new();
    for r in &results.runs {
        if !cells.contains(&&r.cell) {
            cells.push(&r.cell);
        }
    }
    let cells = cells
        .into_iter()
        .map(|cell| {
            let runs: Vec<&RunRecord> = results
                .runs
                .iter()
                .filter(|r| r.cell == *cell)
                .filter(counted)
                .collect();
            cell_noise(cell.label(), &runs, cal)
        })
        .collect();
    Some(Noise {
        pairs: cal.pairs,
        per_side: cal.per_side,
        target_mde_pct: cal.target_mde_pct,
        cells,
    })
}

fn cell_noise(label: String, runs: &[&RunRecord], cal: Calibration) -> NoiseCell {
    let values = |f: fn(&RunRecord) -> f64| runs.iter().map(|r| f(r)).collect::<Vec<_>>();
    let within = |f: fn(&crate::model::SecondPoint) -> f64| {
        Some(
            runs.iter()
                .map(|r| cv(r.per_second.iter().map(f)))
                .collect(),
        )
    };
    // Latency only where the run committed something.
    let committed: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.committed > 0).collect();
    let lat = |f: fn(&RunRecord) -> f64| committed.iter().map(|r| f(r)).collect::<Vec<_>>();
    let mut tps = MetricNoise::of(&values(|r| r.tps), within(|p| p.tps), cal);
    tps.false_positives = false_positives(runs, cal, |r| r.tps, Better::Higher);
    let mut p99 = MetricNoise::of(&lat(|r| r.latency_ms.p99), within(|p| p.p99_ms), cal);
    p99.false_positives = false_positives(&committed, cal, |r| r.latency_ms.p99, Better::Lower);
    NoiseCell {
        cell: label,
        runs: runs.len(),
        latency_p50_ms: MetricNoise::of(&lat(|r| r.latency_ms.p50), None, cal),
        latency_p99_ms: p99,
        failure_pct: MetricNoise::of(
            &values(|r| r.failure_pct),
            within(|p| {
                let all = p.committed + p.failed;
                if all == 0 {
                    f64::NAN
                } else {
                    100.0 * p.failed as f64 / all as f64
                }
            }),
            cal,
        ),
        tps,
    }
}

/// Over the pairs with at least [`MIN_RUNS`] complete runs a side: how
/// many B-against-A verdicts on `metric` were significant.
fn false_positives(
    runs: &[&RunRecord],
    cal: Calibration,
    metric: fn(&RunRecord) -> f64,
    better: Better,
) -> Option<Proportion> {
    let (mut tests, mut significant) = (0u64, 0u64);
    for pair in 0..cal.pairs {
        let side = |a: bool| {
            let v: Vec<f64> = runs
                .iter()
                .filter(|r| cal.slot(r.repetition) == (pair, a))
                .map(|r| metric(r))
                .collect();
            Summary::of(&v)
        };
        let (Some(a), Some(b)) = (side(true), side(false)) else {
            continue;
        };
        if a.n < MIN_RUNS || b.n < MIN_RUNS {
            continue;
        }
        tests += 1;
        if compare(&b, &a, better).verdict.significant() {
            significant += 1;
        }
    }
    Proportion::of(significant, tests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SecondPoint;
    use crate::model::fixture;

    /// A calibration of the fixture's rc cell: 2 pairs of 3 runs a side
    /// (repetitions 1-12, A on the odd ones), TPS about 100 with ±1 %,
    /// and in pair 1 side B 30 % slower: the verdict calls pair 1 and not
    /// pair 0. Per-second series of 90, 110 (CV 14.1 %).
    fn calibration() -> Results {
        let mut r = fixture::results();
        let template = r.runs[0].clone();
        r.runs.clear();
        r.config.calibrate = Some(Calibration {
            pairs: 2,
            per_side: 3,
            target_mde_pct: 5.0,
        });
        let wiggle = [1.0, -1.0, 0.5, -0.5, 0.0, 0.8];
        for rep in 1..=12u32 {
            let mut run = template.clone();
            run.index = rep;
            run.repetition = rep;
            let (pair, a) = r.config.calibrate.unwrap().slot(rep);
            let slow = if pair == 1 && !a { 0.7 } else { 1.0 };
            run.tps = slow * (100.0 + wiggle[(rep as usize - 1) % 6]);
            run.per_second = [90.0, 110.0]
                .iter()
                .enumerate()
                .map(|(i, t)| SecondPoint {
                    t_s: i as f64 + 1.0,
                    committed: *t as u64,
                    tps: *t,
                    p99_ms: 8.0,
                    failed: 0,
                    lag_ms: None,
                })
                .collect();
            r.runs.push(run);
        }
        r
    }

    #[test]
    fn a_calibration_s_noise_per_metric_and_its_false_positives() {
        assert!(of(&fixture::results()).is_none(), "not a calibration");
        let n = of(&calibration()).unwrap();
        assert_eq!((n.pairs, n.per_side, n.cells.len()), (2, 3, 1));
        let c = &n.cells[0];
        assert_eq!(c.runs, 12);
        // Pair 1 differs, pair 0 does not: 1 of 2.
        let fp = c.tps.false_positives.unwrap();
        assert_eq!((fp.x, fp.n), (1, 2));
        // TPS: 9 runs near 100, 3 near 70.
        let tps: Vec<f64> = calibration().runs.iter().map(|r| r.tps).collect();
        let s = Summary::of(&tps).unwrap();
        assert!((c.tps.cv_between_pct - 100.0 * s.cv).abs() < 1e-9);
        assert!((c.tps.mean - s.mean).abs() < 1e-9);
        // Within a run: sd of (90, 110) over 100.
        let within = c.tps.cv_within_pct.unwrap();
        assert!(
            (within - 100.0 * 200f64.sqrt() / 100.0).abs() < 1e-9,
            "{within}"
        );
        // The MDE at 3 runs a side and the runs for 5 %, at that CV.
        let cv = s.cv;
        assert_eq!(c.tps.mde_pct, power::mde_pct(cv, 3, cv, 3));
        assert_eq!(c.tps.runs_for_target, power::runs_for_mde(cv, cv, 5.0));
        assert!(c.tps.runs_for_target.unwrap() > 3);
        // p99 the same in every run: no variance, no MDE, no false
        // positive (no test can be made).
        assert_eq!(c.latency_p99_ms.cv_between_pct, 0.0);
        // No failures: no CV (a zero mean).
        assert!(c.failure_pct.cv_between_pct.is_nan());
        assert!(c.failure_pct.false_positives.is_none());
        // A pair with a side short of 3 complete runs is left out.
        let mut r = calibration();
        r.runs[1].complete = false;
        let fp = of(&r).unwrap().cells[0].tps.false_positives.unwrap();
        assert_eq!((fp.x, fp.n), (1, 1));
    }

    /// Over many simulated A/A pairs of normal runs (CV 5 %, 3 runs a
    /// side), isobench's verdict is significant about 5 % of the time:
    /// the test keeps its level (the one method of every verdict).
    #[test]
    fn the_verdict_keeps_its_level_over_simulated_a_a_pairs() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(37);
        let mut normal = || {
            let u1: f64 = rng.random::<f64>().max(1e-300);
            let u2: f64 = rng.random();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        };
        let (pairs, mut hits) = (4000, 0);
        for _ in 0..pairs {
            let a: Vec<f64> = (0..3).map(|_| 1000.0 * (1.0 + 0.05 * normal())).collect();
            let b: Vec<f64> = (0..3).map(|_| 1000.0 * (1.0 + 0.05 * normal())).collect();
            // The verdict's own method (stats::compare without its MDE,
            // which this test does not need and would make slow).
            let (sb, sa) = (Summary::of(&b).unwrap(), Summary::of(&a).unwrap());
            let test = super::super::ratio_test(&sb, &sa);
            let c = super::super::Verdict::of_runs(test.as_ref(), Better::Higher, 3, 3);
            hits += usize::from(c.significant());
        }
        let rate = hits as f64 / pairs as f64;
        // Welch's test with n = 3 a side is slightly conservative.
        assert!((0.03..=0.065).contains(&rate), "false-positive rate {rate}");
    }
}
