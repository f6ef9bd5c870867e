//! The regression gate of `isobench compare BASE NEW --fail-on-regression
//! 5%`: for every cell both sides have, whether NEW is worse than BASE
//! beyond the threshold with significance, could not have been told apart
//! at that size, or passes.
//!
//! "Worse" is TPS down, effective TPS down (when a history check gives
//! one), p99 latency up (the runs' own p99), or the share of failed
//! transactions up; each is compared with the one method of every verdict
//! (`stats::compare`: the test of the log ratio of the means, whose 95 %
//! interval is the one shown). Per cell and metric:
//! - **regression**: the verdict is significantly worse and the change is
//!   at least the threshold (TPS down by 5 % or more, p99 or failures up
//!   by 5 % or more); failures that appear (none in every BASE run, some
//!   in every one of at least 3 NEW runs) are a regression too;
//! - **cannot tell**: no significant regression, but the comparison's
//!   minimum detectable effect (80 % power, α = 0.05) is above the
//!   threshold, or the runs are too few for a verdict: a regression of the
//!   threshold's size could have gone unseen. Never passed silently: the
//!   command warns, naming the runs a threshold-sized MDE needs;
//! - **pass**: no significant regression of the threshold's size, and the
//!   study could have seen one (or NEW is significantly better, or worse
//!   by less than the threshold).

use super::cells::{self, CellSummary};
use super::compare::{Figure, calibrated, figure, p99_figure, pair, tps_figure};
use crate::report::{format::fmt_pct_change, format::fmt_pct_ci};
use crate::stats::{self, Better, Comparison, Summary, Verdict};
use crate::store::Results;

/// What the gate says of one metric of one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Regression,
    CannotTell,
    Pass,
}

impl Status {
    /// `REGRESSION`, `cannot tell`, `pass`.
    pub fn label(self) -> &'static str {
        match self {
            Status::Regression => "REGRESSION",
            Status::CannotTell => "cannot tell",
            Status::Pass => "pass",
        }
    }
}

/// One metric of one matched cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The cell's key (`isolation=rc strategy=... clients=16`).
    pub cell: String,
    /// `tps`, `effective_tps`, `p99_ms`, `failure_pct`.
    pub metric: &'static str,
    /// BASE's and NEW's means over complete runs (tx/s, ms, %).
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// NEW against BASE (`stats::compare`), when both have runs.
    pub comparison: Option<Comparison>,
    pub status: Status,
    /// Why, in words.
    pub why: String,
    /// The complete runs with this figure on the side with fewer (a
    /// verdict needs [`stats::MIN_RUNS`]).
    pub n_min: usize,
}

/// Whether the gate judged nothing: it has rows, none a regression, and
/// every one had too few runs on a side for a verdict.
pub fn too_few_runs_everywhere(rows: &[Row]) -> bool {
    !rows.is_empty()
        && rows
            .iter()
            .all(|r| r.status != Status::Regression && r.n_min < stats::MIN_RUNS)
}

/// The gate over every cell BASE and NEW share, `threshold_pct` the
/// smallest worsening that fails it (e.g. 5.0). Rows in the cells' order,
/// metrics in the order tps, effective_tps (when either side's history
/// check found lost commits), p99_ms, failure_pct.
pub fn evaluate(base: &Results, new: &Results, threshold_pct: f64) -> Vec<Row> {
    evaluate_with_noise(base, new, threshold_pct, None)
}

/// [`evaluate`], with the noise of a calibration (`isobench calibrate`,
/// `compare --noise DIR`): for a cell the calibration has (matched by A's
/// label), each side's standard deviation of TPS, effective TPS and p99 is
/// at least the calibrated CV (of TPS, or of p99) times its mean. A
/// few runs that happen to agree then neither pass a cell whose real
/// noise could hide a regression of the threshold's size ("cannot
/// tell"), nor turn drift between two studies into a regression.
pub fn evaluate_with_noise(
    base: &Results,
    new: &Results,
    threshold_pct: f64,
    noise: Option<&stats::noise::Noise>,
) -> Vec<Row> {
    let ca = cells::aggregate(base);
    let cb = cells::aggregate(new);
    let mut rows = Vec::new();
    for p in pair(base, new, &ca, &cb).pairs {
        let (key, x, y) = (p.key.as_str(), p.a, p.b);
        // The figures the tables above the gate show, from the same
        // function: with a calibration, each side's spread at least its CV.
        let (tps_cv, p99_cv) = calibrated(noise, &p);
        let mut metric = |name, f: Figure, cv: Option<f64>| {
            let mut r = row(key, name, f, threshold_pct);
            if let (Some(cv), Some(_)) = (cv, &r.comparison) {
                r.why = format!("at the calibrated CV of {:.1} %: {}", 100.0 * cv, r.why);
            }
            rows.push(r);
        };
        metric("tps", tps_figure(&p, reported, noise), tps_cv);
        if (x.effective_differs() || y.effective_differs())
            && x.effective_tps.is_some()
            && y.effective_tps.is_some()
        {
            metric(
                "effective_tps",
                tps_figure(&p, CellSummary::headline_tps, noise),
                tps_cv,
            );
        }
        metric("p99_ms", p99_figure(&p, noise), p99_cv);
        rows.push(failures(key, x, y, threshold_pct));
    }
    rows
}

/// A cell's reported TPS.
fn reported<'a>(c: &'a CellSummary<'a>) -> Option<&'a Summary> {
    c.tps.as_ref()
}

/// The gate's row for a metric whose figure (BASE's and NEW's summaries
/// and NEW against BASE) is `f`.
fn row(key: &str, metric: &'static str, f: Figure, threshold: f64) -> Row {
    let (Some(sx), Some(sy), Some(c)) = (f.a, f.b, f.comparison) else {
        return Row {
            cell: key.into(),
            metric,
            base: f.a.map(|s| s.mean),
            new: f.b.map(|s| s.mean),
            comparison: None,
            status: Status::CannotTell,
            why: "a side has no complete run with this figure".into(),
            n_min: 0,
        };
    };
    let need = stats::power::runs_for_mde(sy.cv, sx.cv, threshold);
    let (status, why) = judge(&c, better_of(metric), threshold, need);
    Row {
        cell: key.into(),
        metric,
        base: Some(sx.mean),
        new: Some(sy.mean),
        comparison: Some(c),
        status,
        why,
        n_min: c.n_min,
    }
}

/// Which way metric `metric` is better.
fn better_of(metric: &str) -> Better {
    match metric {
        "tps" | "effective_tps" => Better::Higher,
        _ => Better::Lower,
    }
}

/// The status of comparison `c` (NEW against BASE) at `threshold` %;
/// `need`: the runs per side whose MDE would be the threshold.
fn judge(c: &Comparison, better: Better, threshold: f64, need: Option<usize>) -> (Status, String) {
    let worse_by = c.pct.map(|p| match better {
        Better::Higher => -p,
        Better::Lower => p,
    });
    let t = stats::fmt_mde(threshold);
    match (c.verdict, worse_by) {
        (Verdict::Slower, Some(w)) if w >= threshold => (
            Status::Regression,
            format!(
                "significantly worse by {} (95 % CI {}), at least the threshold {t}",
                fmt_pct_change(w).trim_start_matches('+'),
                fmt_pct_ci(c.pct_ci.as_ref())
            ),
        ),
        (Verdict::Slower, _) => (
            Status::Pass,
            format!("significantly worse, but by less than {t}"),
        ),
        (Verdict::Faster, _) => (Status::Pass, "significantly better".into()),
        _ => match c.mde_pct {
            Some(m) if m <= threshold && c.n_min >= stats::MIN_RUNS => (
                Status::Pass,
                format!(
                    "no significant change; a change of {t} would have been seen (MDE {})",
                    stats::fmt_mde(m)
                ),
            ),
            mde => {
                let mde = mde.map_or("no MDE: no variance estimate".into(), |m| {
                    format!("MDE {}", stats::fmt_mde(m))
                });
                let runs = if c.n_min < stats::MIN_RUNS {
                    format!(
                        "too few runs ({} on the smaller side, a verdict needs {}); ",
                        c.n_min,
                        stats::MIN_RUNS
                    )
                } else {
                    String::new()
                };
                let need = need.map_or(String::new(), |n| {
                    format!("; {n} runs per side would detect {t} (or use --precision)")
                });
                (
                    Status::CannotTell,
                    format!("{runs}a {t} regression could go unseen ({mde}){need}"),
                )
            }
        },
    }
}

/// The failure share's row: per run `failure_pct`, lower is better. When
/// BASE had no failures at all the ratio has no base: failures in every
/// one of at least 3 NEW runs are a regression ("failures appeared").
fn failures(key: &str, x: &CellSummary, y: &CellSummary, threshold: f64) -> Row {
    let shares = |c: &CellSummary| {
        let v: Vec<f64> = c.complete_runs().map(|r| r.failure_pct).collect();
        Summary::of(&v)
    };
    let (sx, sy) = (shares(x), shares(y));
    match (sx, sy) {
        (Some(a), Some(b)) if a.mean == 0.0 && b.mean == 0.0 => Row {
            cell: key.into(),
            metric: "failure_pct",
            base: Some(0.0),
            new: Some(0.0),
            comparison: None,
            status: Status::Pass,
            why: "no failed transaction on either side".into(),
            n_min: a.n.min(b.n),
        },
        (Some(a), Some(b)) if a.mean == 0.0 => {
            let every = y.complete_runs().all(|r| r.failure_pct > 0.0);
            let (status, why) = if every && b.n >= stats::MIN_RUNS {
                (
                    Status::Regression,
                    format!(
                        "failures appeared: none in BASE, {:.2} % of transactions in every NEW run",
                        b.mean
                    ),
                )
            } else {
                (
                    Status::CannotTell,
                    "failures in some NEW runs and none in BASE: too few runs to tell".into(),
                )
            };
            Row {
                cell: key.into(),
                metric: "failure_pct",
                base: Some(0.0),
                new: Some(b.mean),
                comparison: None,
                status,
                why,
                n_min: a.n.min(b.n),
            }
        }
        (Some(a), Some(b)) if b.mean == 0.0 => Row {
            cell: key.into(),
            metric: "failure_pct",
            base: Some(a.mean),
            new: Some(0.0),
            comparison: None,
            status: Status::Pass,
            why: "no failed transaction in NEW".into(),
            n_min: a.n.min(b.n),
        },
        _ => row(
            key,
            "failure_pct",
            figure(sx.as_ref(), sy.as_ref(), None, Better::Lower),
            threshold,
        ),
    }
}

/// How many rows have `status`.
pub fn count(rows: &[Row], status: Status) -> usize {
    rows.iter().filter(|r| r.status == status).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Isolation;
    use crate::model::fixture;

    /// Five complete runs per cell, rc 98..102 tx/s, ser 148..152.
    fn five() -> Results {
        let mut r = fixture::third_runs(fixture::results());
        for (i, (from, tps)) in [(0usize, 99.0), (1, 149.0), (0, 101.0), (1, 151.0)]
            .into_iter()
            .enumerate()
        {
            let mut run = r.runs[from].clone();
            run.index = 8 + i as u32;
            run.repetition = 5 + i as u32;
            run.tps = tps;
            r.runs.push(run);
        }
        r
    }

    fn status(rows: &[Row], iso: &str, metric: &str) -> Status {
        rows.iter()
            .find(|r| r.cell.starts_with(&format!("isolation={iso} ")) && r.metric == metric)
            .unwrap_or_else(|| panic!("{iso} {metric}: {rows:?}"))
            .status
    }

    #[test]
    fn a_real_slowdown_fails_the_gate_and_a_small_one_passes() {
        let base = five();
        let mut new = five();
        for run in &mut new.runs {
            if run.cell.isolation == Isolation::ReadCommitted {
                run.tps *= 0.80;
            } else {
                run.tps *= 0.99;
            }
        }
        let rows = evaluate(&base, &new, 5.0);
        assert_eq!(status(&rows, "rc", "tps"), Status::Regression);
        let rc = rows
            .iter()
            .find(|r| r.cell.starts_with("isolation=rc "))
            .unwrap();
        assert!(
            rc.why.starts_with("significantly worse by 20.0%"),
            "{}",
            rc.why
        );
        // ser: -1 % is within the threshold: a pass whether or not the
        // test finds it (its MDE at CV 1.1 % and 5 runs is about 2 %).
        assert_eq!(status(&rows, "ser", "tps"), Status::Pass);
        // The same p99 on both sides, but the runs' p99 (8, 9, 8, 8, 8 ms:
        // CV 5.4 %) could hide a 5 % rise: cannot tell, not a pass.
        assert_eq!(status(&rows, "rc", "p99_ms"), Status::CannotTell);
        // No failures on either side: pass.
        assert_eq!(status(&rows, "rc", "failure_pct"), Status::Pass);
        assert_eq!(count(&rows, Status::Regression), 1);
    }

    /// Noisy runs whose MDE is above the threshold are "cannot tell",
    /// never a silent pass; so are cells with too few runs.
    #[test]
    fn an_underpowered_cell_is_cannot_tell() {
        let mut noisy = five();
        for (i, run) in noisy.runs.iter_mut().enumerate() {
            run.tps *= [0.8, 1.2, 1.0, 0.9, 1.1, 1.15, 0.85, 1.05, 0.95][i % 9];
        }
        let rows = evaluate(&noisy, &noisy, 5.0);
        assert_eq!(status(&rows, "rc", "tps"), Status::CannotTell);
        let rc = rows
            .iter()
            .find(|r| r.cell.starts_with("isolation=rc "))
            .unwrap();
        assert!(
            rc.why
                .starts_with("a 5.0 % regression could go unseen (MDE ")
                && rc.why.contains("runs per side would detect 5.0 %"),
            "{}",
            rc.why
        );
        // The fixture's two runs a side: too few.
        let two = fixture::results();
        let rows = evaluate(&two, &two, 5.0);
        let ser = rows
            .iter()
            .find(|r| r.cell.starts_with("isolation=ser "))
            .unwrap();
        assert_eq!(ser.status, Status::CannotTell);
        assert!(
            ser.why.starts_with("too few runs (2 on the smaller side"),
            "{}",
            ser.why
        );
    }

    /// A calibration of the fixture's cells at a TPS CV of `cv_pct`.
    fn noise(r: &Results, cv_pct: f64) -> stats::noise::Noise {
        use stats::noise::{MetricNoise, Noise, NoiseCell};
        let m = MetricNoise {
            mean: 100.0,
            cv_between_pct: cv_pct,
            cv_within_pct: None,
            mde_pct: None,
            runs_for_target: None,
            false_positives: None,
        };
        let mut cells: Vec<String> = r.runs.iter().map(|x| x.cell.label()).collect();
        cells.dedup();
        Noise {
            pairs: 20,
            per_side: 3,
            target_mde_pct: 5.0,
            cells: cells
                .into_iter()
                .map(|cell| NoiseCell {
                    cell,
                    runs: 120,
                    tps: m,
                    latency_p50_ms: m,
                    latency_p99_ms: m,
                    failure_pct: m,
                })
                .collect(),
        }
    }

    /// The runs of a calibration say how noisy a cell really is: a 10 %
    /// drop between two quiet-looking studies is a regression at the
    /// studies' own spread (CV about 1-2 %), but not at a calibrated CV of
    /// 30 %, where it is "cannot tell"; the same studies' equal TPS pass
    /// at their own spread and cannot tell at the calibrated one. A
    /// calibration as quiet as the runs changes nothing.
    #[test]
    fn a_calibration_floors_the_spread_of_either_side() {
        let base = five();
        let mut new = five();
        for run in &mut new.runs {
            if run.cell.isolation == Isolation::ReadCommitted {
                run.tps *= 0.90;
            }
        }
        assert_eq!(
            status(&evaluate(&base, &new, 5.0), "rc", "tps"),
            Status::Regression
        );
        let noisy = noise(&base, 30.0);
        let rows = evaluate_with_noise(&base, &new, 5.0, Some(&noisy));
        assert_eq!(status(&rows, "rc", "tps"), Status::CannotTell);
        let rc = rows
            .iter()
            .find(|r| r.cell.starts_with("isolation=rc "))
            .unwrap();
        assert!(
            rc.why
                .starts_with("at the calibrated CV of 30.0 %: a 5.0 % regression could go unseen"),
            "{}",
            rc.why
        );
        // ser: no change. At its own spread (148..152) a pass; at 30 %,
        // cannot tell.
        assert_eq!(
            status(&evaluate(&base, &new, 5.0), "ser", "tps"),
            Status::Pass
        );
        assert_eq!(status(&rows, "ser", "tps"), Status::CannotTell);
        // A calibration as quiet as the runs: the same verdicts.
        let quiet = evaluate_with_noise(&base, &new, 5.0, Some(&noise(&base, 0.5)));
        assert_eq!(status(&quiet, "rc", "tps"), Status::Regression);
        assert_eq!(status(&quiet, "ser", "tps"), Status::Pass);
    }

    #[test]
    fn failures_that_appear_are_a_regression() {
        let base = five();
        let mut new = five();
        for run in &mut new.runs {
            if run.cell.isolation == Isolation::ReadCommitted {
                run.failure_pct = 2.0;
            }
        }
        let rows = evaluate(&base, &new, 5.0);
        assert_eq!(status(&rows, "rc", "failure_pct"), Status::Regression);
    }
}
