//! Statistics over the repetitions of a cell: mean, sample standard
//! deviation, the Student t confidence interval of the mean, relative
//! change against a baseline, Welch's unequal-variances t-test, the
//! confidence interval of a difference of means and of a ratio of means
//! in % (on the log scale, so never below -100 %), a
//! verdict (faster / slower / no significant difference / too few runs),
//! the smallest change a comparison could detect ([`power`]), repetitions
//! until a target precision ([`sequential`]), a proportion's exact
//! interval ([`proportion`]), rare events' rates with exact intervals and
//! the exact test of two rates ([`rate`]), and outlier repetitions by the
//! modified z-score.
//!
//! One method per verdict (issue #37): a comparison's interval, p-value
//! and verdict all come from one test of the log ratio of the means
//! ([`ratio_test`]), so "significant" holds exactly when the interval
//! excludes 0 %.
//!
//! Sources: NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.5.1
//! ("Measures of Location"), §1.3.5.6 ("Measures of Scale"), §7.2.2.1
//! ("Confidence interval for the mean"), §1.3.5.3 ("Two-Sample t-Test
//! for Equal Means", unequal-variances case), §7.3.1 ("Do two processes
//! have the same mean?") and §1.3.5.17 ("Detection of Outliers"); B. L.
//! Welch, "The generalization of 'Student's' problem when several different
//! population variances are involved", Biometrika 34 (1947) 28-35; F. E.
//! Satterthwaite, "An approximate distribution of estimates of variance
//! components", Biometrics Bulletin 2 (1946) 110-114; B. Iglewicz and D. C.
//! Hoaglin, "How to Detect and Handle Outliers", ASQC Quality Press (1993);
//! for the interval of a ratio ([`pct_ci95`]): G. Casella and R. L.
//! Berger, "Statistical Inference", 2nd ed. (2002), §5.5.4 (the delta
//! method), and V. H. Franz, "Ratios: A short guide to confidence limits
//! and proper use" (2007), arXiv:0710.2024.

// The floor below.
use isobench_model as model;

use statrs::distribution::{ContinuousCDF, StudentsT};

pub mod noise;
pub mod power;
pub mod proportion;
pub mod rate;
pub mod sequential;

/// The fewest complete runs on each side for a verdict: below it a
/// comparison says "too few runs" ([`Verdict::NotEnoughData`]). With 2
/// runs a side the interval has 1 to 2 degrees of freedom (t(0.975, 1) =
/// 12.7): a ±141 % interval is not a result.
pub const MIN_RUNS: usize = 3;

/// The change (%) a study should be able to detect: a "no significant
/// difference" verdict whose MDE is above it says so, with the
/// repetitions that would reach it ([`power::runs_for_mde`]).
pub const MDE_TARGET_PCT: f64 = 5.0;

/// Confidence level of [`Summary::ci95`].
pub const CONFIDENCE: f64 = 0.95;

/// Significance level of [`welch`] (two-sided).
pub const ALPHA: f64 = 0.05;

/// Summary of one metric over the repetitions of a cell.
///
/// With one value the sample standard deviation, and so `sd`, `ci95` and
/// `cv`, are undefined (n - 1 = 0 degrees of freedom): they are NaN, and
/// renderers show them as "n/a". Zero would claim a certainty that one run
/// cannot give. (NaN serializes to JSON `null`.)
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean, `x̄ = Σ xᵢ / n`, in the unit of the values.
    pub mean: f64,
    /// Sample standard deviation, `s = sqrt(Σ (xᵢ - x̄)² / (n - 1))`.
    pub sd: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student t):
    /// `t(0.975, n - 1) · s / sqrt(n)`, so the interval is `mean ± ci95`.
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation, `s / x̄` (a ratio, not %); NaN when the
    /// mean is 0.
    pub cv: f64,
}

impl Summary {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let nf = n as f64;
        let mean = values.iter().sum::<f64>() / nf;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (sd, ci95) = if n < 2 {
            (f64::NAN, f64::NAN)
        } else {
            let ss: f64 = values.iter().map(|x| (x - mean).powi(2)).sum();
            let sd = (ss / (nf - 1.0)).sqrt();
            (
                sd,
                t_quantile(0.5 + CONFIDENCE / 2.0, nf - 1.0) * sd / nf.sqrt(),
            )
        };
        let cv = if mean == 0.0 { f64::NAN } else { sd / mean };
        Some(Summary {
            n,
            mean,
            sd,
            ci95,
            min,
            max,
            cv,
        })
    }

    /// This summary with its standard deviation raised to at least `cv ·
    /// mean` (and its interval and CV with it): the spread of a few runs
    /// floored at a noise measured over many more (`isobench calibrate`).
    /// Unchanged with fewer than 2 values, or a `cv` that is not a
    /// positive number.
    pub fn with_cv_floor(&self, cv: f64) -> Summary {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if self.n < 2 || !positive(cv) || !positive(self.mean) {
            return *self;
        }
        let sd = self.sd.max(cv * self.mean);
        let nf = self.n as f64;
        Summary {
            sd,
            ci95: t_quantile(0.5 + CONFIDENCE / 2.0, nf - 1.0) * sd / nf.sqrt(),
            cv: sd / self.mean,
            ..*self
        }
    }

    /// Sample variance `s²`; NaN when n < 2.
    pub(crate) fn variance(&self) -> f64 {
        self.sd * self.sd
    }

    /// How many values, with this mean and standard deviation, would make
    /// the 95 % confidence interval's half-width at most `rel` of the mean
    /// (`t(0.975, n - 1) · s / sqrt(n) <= rel · x̄`); `None` when the mean
    /// is not positive or more than 1,000 would be needed.
    pub fn repetitions_for(&self, rel: f64) -> Option<usize> {
        if self.mean.is_nan() || self.mean <= 0.0 || !self.sd.is_finite() {
            return None;
        }
        (2..=1000).find(|&n| {
            let n = n as f64;
            t_quantile(0.975, n - 1.0) * self.sd / n.sqrt() <= rel * self.mean
        })
    }
}

/// Quantile `p` of Student's t distribution with `df` degrees of freedom.
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// A distribution-free confidence interval of the median of `values`,
/// with at least `level` coverage (e.g. 0.95): `(x₍ⱼ₎, x₍ₙ₊₁₋ⱼ₎)`, the
/// j-th smallest and j-th largest value, for the largest `j` whose
/// coverage `1 - 2·P(B ≤ j - 1)`, `B ~ Binomial(n, ½)`, is still at least
/// `level` (W. J. Conover, "Practical Nonparametric Statistics", 3rd ed.,
/// 1999, §3.2; NIST e-Handbook §7.2.6.1 for percentiles in general).
/// It assumes independent runs and nothing about their distribution, which
/// suits ratios of alternating benchmark rounds. For n = 6 it is the
/// range (coverage 96.9 %), for n = 12 the 3rd to 10th values (96.1 %).
///
/// `None` when no pair of ranks reaches `level` (at 95 %, fewer than 6
/// values: for n = 5 the range covers 93.75 %) or `level` is not in
/// (0, 1). NaNs sort last.
pub fn median_interval(values: &[f64], level: f64) -> Option<(f64, f64)> {
    let n = values.len();
    if !(level > 0.0 && level < 1.0) || n == 0 {
        return None;
    }
    // P(B <= k) for B ~ Binomial(n, 1/2), summed term by term.
    let mut term = 0.5f64.powi(n as i32); // P(B = 0)
    let mut cdf = 0.0;
    let mut j = 0; // the largest j found so far (0: none)
    for k in 0..n / 2 {
        cdf += term;
        // Ranks j = k + 1 and n - k cover 1 - 2·P(B <= k).
        if 1.0 - 2.0 * cdf >= level {
            j = k + 1;
        } else {
            break;
        }
        term *= (n - k) as f64 / (k + 1) as f64;
    }
    if j == 0 {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((sorted[j - 1], sorted[n - j]))
}

/// Relative change of `value` against `baseline`, in %:
/// `100 · (value - baseline) / baseline`. `None` when the baseline is 0 or
/// either number is not finite.
pub fn pct_change(value: f64, baseline: f64) -> Option<f64> {
    if baseline == 0.0 || !baseline.is_finite() || !value.is_finite() {
        return None;
    }
    Some(100.0 * (value - baseline) / baseline)
}

/// The outcome of Welch's t-test for equal means of two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// `t = (x̄₁ - x̄₂) / sqrt(s₁²/n₁ + s₂²/n₂)`.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom:
    /// `ν = (s₁²/n₁ + s₂²/n₂)² / ((s₁²/n₁)²/(n₁-1) + (s₂²/n₂)²/(n₂-1))`.
    pub df: f64,
    /// Two-sided p-value, `2 · (1 - F_ν(|t|))`.
    pub p: f64,
}

impl Welch {
    /// Whether the means differ at the 5 % level ([`ALPHA`]).
    pub fn significant(&self) -> bool {
        self.p < ALPHA
    }
}

/// Welch's unequal-variances t-test of `a` against `b` (Welch 1947; NIST
/// e-Handbook §1.3.5.3). `None` when either sample has fewer than 2 values,
/// or both have zero variance (the statistic is undefined).
pub fn welch(a: &Summary, b: &Summary) -> Option<Welch> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let va = a.variance() / a.n as f64;
    let vb = b.variance() / b.n as f64;
    let se2 = va + vb;
    if se2.is_nan() || se2 <= 0.0 {
        return None;
    }
    let t = (a.mean - b.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n as f64 - 1.0) + vb * vb / (b.n as f64 - 1.0));
    let p = StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |d| 2.0 * (1.0 - d.cdf(t.abs())));
    Some(Welch { t, df, p })
}

/// Confidence interval of the difference of two means, `x̄₁ - x̄₂`, from
/// two independent samples with possibly unequal variances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DiffCi {
    /// `x̄₁ - x̄₂`, in the unit of the values.
    pub diff: f64,
    /// Half-width of the 95 % interval: `t(0.975, ν) · sqrt(s₁²/n₁ + s₂²/n₂)`
    /// with ν the Welch–Satterthwaite degrees of freedom, so the interval
    /// is `diff ± half_width`.
    pub half_width: f64,
    /// Welch–Satterthwaite degrees of freedom ν (see [`Welch::df`]).
    pub df: f64,
}

impl DiffCi {
    /// Lower end of the interval.
    pub fn low(&self) -> f64 {
        self.diff - self.half_width
    }

    /// Upper end of the interval.
    pub fn high(&self) -> f64 {
        self.diff + self.half_width
    }
}

/// The 95 % confidence interval of `a.mean - b.mean` (Welch 1947;
/// Satterthwaite 1946; NIST e-Handbook §7.3.1 and §1.3.5.3, unequal
/// variances): `(x̄₁ - x̄₂) ± t(0.975, ν) · sqrt(s₁²/n₁ + s₂²/n₂)`. It is the
/// inversion of [`welch`]: it excludes 0 exactly when Welch's two-sided
/// p-value is below [`ALPHA`]. `None` where [`welch`] is undefined (fewer
/// than 2 values in a sample, or zero variance in both).
///
/// The reports no longer show it: "% vs baseline" uses the interval of the
/// ratio ([`pct_ci95`]); the tests keep it as the reference it replaced.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn diff_ci95(a: &Summary, b: &Summary) -> Option<DiffCi> {
    let w = welch(a, b)?;
    let se = (a.variance() / a.n as f64 + b.variance() / b.n as f64).sqrt();
    Some(DiffCi {
        diff: a.mean - b.mean,
        half_width: t_quantile(0.5 + CONFIDENCE / 2.0, w.df) * se,
        df: w.df,
    })
}

/// A relative difference with its 95 % confidence interval, in %.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PctCi {
    /// `100 · (x̄₁ - x̄₂) / x̄₂`, %.
    pub pct: f64,
    /// Lower end of the 95 % interval, %.
    pub low: f64,
    /// Upper end of the 95 % interval, %.
    pub high: f64,
}

/// The relative difference of `value` against `baseline` in %, with a
/// 95 % interval that respects the bounds of a ratio of positive
/// quantities: it never goes below -100 %.
///
/// The point estimate is the ratio of the means, `pct = 100 · (x̄₁/x̄₂ - 1)`.
/// The interval is taken on the log scale and transformed back
/// (the delta method for the log of a ratio of independent means):
///
/// ```text
/// L     = ln x̄₁ - ln x̄₂
/// uᵢ    = sᵢ² / (nᵢ · x̄ᵢ²)               (≈ Var(ln x̄ᵢ), delta method)
/// se_L  = sqrt(u₁ + u₂)
/// ν     = (u₁ + u₂)² / (u₁²/(n₁-1) + u₂²/(n₂-1))   (Welch–Satterthwaite)
/// CI    = 100 · (exp(L ± t(0.975, ν) · se_L) - 1)  %
/// ```
///
/// `exp` is positive, so the lower end is above -100 % however noisy the
/// runs; the interval is asymmetric around `pct` (it is symmetric around
/// `L` on the log scale) and always contains it. For small coefficients
/// of variation it agrees with the linear interval `100 · (diff ±
/// half_width) / x̄₂` of `diff_ci95` to first order; for noisy samples
/// the linear one could report impossible values (a study with n = 3
/// printed [-129.8 %, -52.2 %] for throughput), which is why it is not
/// used. Unlike the linear interval it also counts the baseline mean's own
/// uncertainty in the denominator.
///
/// The p-value and the [`Verdict`] are the test of the same statistic
/// ([`ratio_test`]), so the interval excludes 0 exactly when the verdict
/// is significant. (Before issue #37 the p-value was Welch's test of the
/// raw means, and seed 002's report printed `+239.6 % (95 % CI
/// [-48.4 %, +2132.8 %], significant: p = 0.011)`.)
///
/// Sources: the delta method, G. Casella and R. L. Berger, "Statistical
/// Inference", 2nd ed. (2002), §5.5.4; the log-ratio interval for a ratio
/// of means and its comparison with Fieller's, V. H. Franz, "Ratios: A
/// short guide to confidence limits and proper use" (2007),
/// arXiv:0710.2024; the degrees of freedom, Satterthwaite (1946) and
/// Welch (1947) as for [`welch`]. Fieller's interval (E. C. Fieller,
/// "Some problems in interval estimation", J. Royal Statistical Society B
/// 16 (1954) 175-185) is not used: its lower end can be negative (a ratio
/// below 0, i.e. below -100 %) when the value's mean is small against its
/// noise, and it is unbounded when the baseline's is.
///
/// `None` when either sample has fewer than 2 values, either mean is not
/// positive and finite (the log is undefined; throughput and latency
/// means are positive), or both samples have zero variance.
pub fn pct_ci95(value: &Summary, baseline: &Summary) -> Option<PctCi> {
    let log = log_ratio_ci95(value, baseline)?;
    Some(PctCi {
        pct: 100.0 * (value.mean / baseline.mean - 1.0),
        low: 100.0 * log.low().exp_m1(),
        high: 100.0 * log.high().exp_m1(),
    })
}

/// The 95 % interval of `ln(x̄₁ / x̄₂)` by the delta method with Welch–
/// Satterthwaite degrees of freedom (see [`pct_ci95`] for the formula
/// and sources), as a [`DiffCi`] on the log scale.
pub(crate) fn log_ratio_ci95(value: &Summary, baseline: &Summary) -> Option<DiffCi> {
    let (a, b) = (value, baseline);
    if a.n < 2 || b.n < 2 {
        return None;
    }
    if !(a.mean.is_finite() && b.mean.is_finite() && a.mean > 0.0 && b.mean > 0.0) {
        return None;
    }
    let ua = a.variance() / (a.n as f64 * a.mean * a.mean);
    let ub = b.variance() / (b.n as f64 * b.mean * b.mean);
    let se2 = ua + ub;
    if se2.is_nan() || se2 <= 0.0 {
        return None;
    }
    let df = se2 * se2 / (ua * ua / (a.n as f64 - 1.0) + ub * ub / (b.n as f64 - 1.0));
    Some(DiffCi {
        diff: a.mean.ln() - b.mean.ln(),
        half_width: t_quantile(0.5 + CONFIDENCE / 2.0, df) * se2.sqrt(),
        df,
    })
}

/// The test behind every verdict: the two-sided t-test of the log ratio
/// of the means, `t = L / se_L` with `L = ln x̄₁ - ln x̄₂`, `se_L =
/// sqrt(s₁²/(n₁x̄₁²) + s₂²/(n₂x̄₂²))` (the delta method) and the
/// Welch–Satterthwaite degrees of freedom ν of [`pct_ci95`];
/// `p = 2 · (1 − F_ν(|t|))`. It is the inversion of the interval of
/// [`pct_ci95`]: `p < 0.05` exactly when that interval excludes 0 %. Its `t` has the sign
/// of `x̄₁ - x̄₂`. On a ratio scale, as benchmark figures are (a change of
/// +10 % is the same whatever the TPS), it is Welch's test (Welch 1947)
/// applied to the logarithm of the means; for small coefficients of
/// variation it agrees with [`welch`] on the raw means, and for noisy
/// samples it stays consistent with the interval where that one did not.
/// Sources: as [`pct_ci95`].
///
/// `None` where [`pct_ci95`] is.
pub fn ratio_test(value: &Summary, baseline: &Summary) -> Option<Welch> {
    let ci = log_ratio_ci95(value, baseline)?;
    let se = ci.half_width / t_quantile(0.5 + CONFIDENCE / 2.0, ci.df);
    let t = ci.diff / se;
    let p = StudentsT::new(0.0, 1.0, ci.df).map_or(f64::NAN, |d| 2.0 * (1.0 - d.cdf(t.abs())));
    Some(Welch { t, df: ci.df, p })
}

/// Which direction of a metric is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Throughput (TPS, goodput): more is better.
    Higher,
    /// Latency, wait time: less is better.
    Lower,
}

/// What a comparison of two samples concludes, at the 5 % level
/// ([`ALPHA`], the two-sided test of [`ratio_test`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly better than the baseline: higher TPS, or lower
    /// latency.
    Faster,
    /// Significantly worse than the baseline.
    Slower,
    /// p ≥ 0.05: the data do not show a difference (which is not proof
    /// that there is none).
    NoSignificantDifference,
    /// Too few runs: fewer than [`MIN_RUNS`] complete runs on a side (the
    /// interval is too wide to read), or the test is undefined (zero
    /// variance on both sides, a mean that is not positive). Labelled "too
    /// few runs"; the JSON token stays `not_enough_data`.
    NotEnoughData,
}

impl Verdict {
    /// The verdict of a test of `value` against `baseline` (its `t` has
    /// the sign of `value - baseline`; [`ratio_test`]): `p < ALPHA` and a
    /// difference in the `better` direction is [`Verdict::Faster`].
    /// [`Verdict::NotEnoughData`] without a test; see [`Verdict::of_runs`]
    /// for the rule on the number of runs.
    pub fn of(welch: Option<&Welch>, better: Better) -> Verdict {
        match welch {
            None => Verdict::NotEnoughData,
            Some(w) if !w.significant() => Verdict::NoSignificantDifference,
            Some(w) => match (w.t > 0.0, better) {
                (true, Better::Higher) | (false, Better::Lower) => Verdict::Faster,
                _ => Verdict::Slower,
            },
        }
    }

    /// [`Verdict::of`] for samples of `n1` and `n2` runs: fewer than
    /// [`MIN_RUNS`] on either side is [`Verdict::NotEnoughData`] ("too few
    /// runs"), whatever the test says.
    pub fn of_runs(welch: Option<&Welch>, better: Better, n1: usize, n2: usize) -> Verdict {
        if n1.min(n2) < MIN_RUNS {
            Verdict::NotEnoughData
        } else {
            Verdict::of(welch, better)
        }
    }

    /// `faster`, `slower`, `no significant difference`, `too few runs`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::NotEnoughData => "too few runs",
        }
    }

    /// Whether the verdict found a difference.
    pub fn significant(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower)
    }

    /// `faster`, `slower`, `no_significant_difference`, `not_enough_data`
    /// (the JSON and CSV spelling).
    pub fn token(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no_significant_difference",
            Verdict::NotEnoughData => "not_enough_data",
        }
    }
}

/// Everything a renderer shows for "`value` against `baseline`".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// [`pct_change`] of the means, %.
    pub pct: Option<f64>,
    /// [`pct_ci95`]: the 95 % interval of the relative difference, %.
    pub pct_ci: Option<PctCi>,
    /// [`ratio_test`] of `value` against `baseline`: the test whose
    /// interval is `pct_ci`. (The field keeps its name: it is Welch's test
    /// on the log scale.)
    pub welch: Option<Welch>,
    pub verdict: Verdict,
    /// The minimum detectable effect at 80 % power and α = 0.05 for these
    /// runs and their coefficients of variation, % ([`power::mde_pct`]);
    /// `None` without a variance estimate on both sides.
    pub mde_pct: Option<f64>,
    /// Runs per side whose MDE would be at most [`MDE_TARGET_PCT`], at the
    /// observed coefficients of variation ([`power::runs_for_mde`]).
    pub runs_for_target: Option<usize>,
    /// The smaller number of runs of the two sides.
    pub n_min: usize,
}

impl Comparison {
    /// Whether the study could not have seen a change of
    /// [`MDE_TARGET_PCT`]: no significant difference (or too few runs)
    /// with an MDE above the target, or no MDE at all.
    pub fn underpowered(&self) -> bool {
        !self.verdict.significant() && self.mde_pct.is_none_or(|m| m > MDE_TARGET_PCT)
    }

    /// Words for a verdict that did not find a difference, e.g. `too few
    /// runs (2 per side; a verdict needs 3)` or `this study could detect
    /// changes of ±38 % or more; a 5 % change needs 67 runs per side`;
    /// `None` for a significant verdict, or one whose MDE is within the
    /// target.
    pub fn caveat(&self) -> Option<String> {
        if self.verdict.significant() {
            return None;
        }
        if self.n_min == 0 {
            // Nothing to estimate a noise from (issue #49: such a cell was
            // told a 5 % change needs more than 10,000 runs per side).
            return Some("no complete run on a side: nothing to compare".into());
        }
        // Runs a 5 % change needs, when the runs give a noise (two or more
        // a side) to reckon them from.
        let need = match self.runs_for_target {
            Some(n) => Some(format!(
                "a {MDE_TARGET_PCT:.0} % change needs {n} runs per side"
            )),
            None if self.n_min >= 2 => Some(format!(
                "a {MDE_TARGET_PCT:.0} % change needs more than {} runs per side at this noise",
                power::MAX_RUNS
            )),
            None => None,
        };
        let need_tail = need.as_ref().map_or(String::new(), |n| format!("; {n}"));
        if self.n_min < MIN_RUNS {
            return Some(format!(
                "too few runs ({} on the smaller side; a verdict needs {MIN_RUNS}){need_tail}",
                self.n_min
            ));
        }
        let need = need.unwrap_or_default();
        match self.mde_pct {
            Some(m) if m <= MDE_TARGET_PCT => None,
            Some(m) => Some(format!(
                "this study could detect changes of ±{} or more; {need}",
                fmt_mde(m)
            )),
            None => Some(format!(
                "no variance estimate: no detectable change to state; {need}"
            )),
        }
    }
}

/// An MDE in %: `38 %`, `4.2 %`, `0.71 %`.
pub fn fmt_mde(pct: f64) -> String {
    if pct >= 10.0 {
        format!("{pct:.0} %")
    } else if pct >= 1.0 {
        format!("{pct:.1} %")
    } else {
        format!("{pct:.2} %")
    }
}

/// Compares two samples: relative difference of the means with its 95 %
/// interval, the test of the same log ratio ([`ratio_test`]), the
/// [`Verdict`] for the `better` direction ("too few runs" below
/// [`MIN_RUNS`] a side), and the minimum detectable effect with the runs a
/// 5 % one needs ([`power`]).
pub fn compare(value: &Summary, baseline: &Summary, better: Better) -> Comparison {
    let test = ratio_test(value, baseline);
    let (cv1, cv2) = (value.sd / value.mean, baseline.sd / baseline.mean);
    Comparison {
        pct: pct_change(value.mean, baseline.mean),
        pct_ci: pct_ci95(value, baseline),
        verdict: Verdict::of_runs(test.as_ref(), better, value.n, baseline.n),
        welch: test,
        mde_pct: power::mde_pct(cv1, value.n, cv2, baseline.n),
        runs_for_target: power::runs_for_mde(cv1, cv2, MDE_TARGET_PCT),
        n_min: value.n.min(baseline.n),
    }
}

/// The median of `values` (the mean of the two middle values when n is
/// even; NIST e-Handbook §1.3.5.1); `None` when empty. NaNs sort last.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// |M| above which [`outliers`] flags a value (Iglewicz & Hoaglin 1993).
pub(crate) const OUTLIER_Z: f64 = 3.5;

/// Modified z-scores of Iglewicz & Hoaglin (1993; NIST e-Handbook
/// §1.3.5.17): `Mᵢ = 0.6745 · (xᵢ - x̃) / MAD`, where `x̃` is the median
/// and `MAD = median(|xᵢ - x̃|)` the median absolute deviation (0.6745 is
/// the 0.75 quantile of the standard normal, so that `MAD / 0.6745`
/// estimates σ for normal data). `None` when `values` is empty or MAD is 0
/// (more than half the values equal: every other value would score
/// infinity).
pub(crate) fn modified_z_scores(values: &[f64]) -> Option<Vec<f64>> {
    let m = median(values)?;
    let dev: Vec<f64> = values.iter().map(|x| (x - m).abs()).collect();
    let mad = median(&dev)?;
    if mad == 0.0 || !mad.is_finite() {
        return None;
    }
    Some(values.iter().map(|x| 0.6745 * (x - m) / mad).collect())
}

/// Indices (into `values`) of the outliers by the modified z-score:
/// `|Mᵢ| > 3.5` (`OUTLIER_Z`, the cut-off Iglewicz & Hoaglin recommend;
/// NIST e-Handbook §1.3.5.17). Nothing is flagged when MAD is 0 (see
/// `modified_z_scores`): with the few repetitions of a benchmark that
/// happens when most runs are equal, and calling every other run an
/// outlier would be noise. With 2 values nothing can be flagged (|M| =
/// 0.6745 for both).
///
/// A value must also be more than `OUTLIER_MIN_REL` (10 %) away from the
/// median: with the three repetitions a benchmark usually has, MAD is the
/// smaller of two deviations, so |M| > 3.5 alone flags a run 4 % off two
/// runs that happen to agree closely (seen in a real 27-run study: 5 of
/// 9 cells flagged, 4 of them within 6 % of their median).
///
/// Nothing is flagged below [`OUTLIER_MIN_N`] (5) values (issue #37): with
/// 3 or 4 runs the MAD is the smaller of one or two deviations, and the
/// modified z-score, whose 3.5 cut-off Iglewicz and Hoaglin derived for
/// samples of 10 and more, flags ordinary scatter.
pub fn outliers(values: &[f64]) -> Vec<usize> {
    if values.len() < OUTLIER_MIN_N {
        return Vec::new();
    }
    let Some(m) = median(values) else {
        return Vec::new();
    };
    modified_z_scores(values)
        .map(|z| {
            z.iter()
                .enumerate()
                .filter(|&(i, z)| {
                    z.abs() > OUTLIER_Z && (values[i] - m).abs() > OUTLIER_MIN_REL * m.abs()
                })
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default()
}

/// The fewest values among which [`outliers`] flags any.
pub const OUTLIER_MIN_N: usize = 5;

/// The least relative distance from the median of an outlier (see
/// [`outliers`]), as a fraction of the median.
pub(crate) const OUTLIER_MIN_REL: f64 = 0.10;

#[cfg(test)]
mod tests {

    #[test]
    fn the_median_interval_takes_the_ranks_binomial_coverage_allows() {
        // n = 6: only the range reaches 95 % (1 - 2/64 = 96.9 %).
        let six = [5.0, 1.0, 4.0, 2.0, 6.0, 3.0];
        assert_eq!(median_interval(&six, 0.95), Some((1.0, 6.0)));
        // n = 5: the range covers 1 - 2/32 = 93.75 %, below 95 %.
        assert_eq!(median_interval(&six[..5], 0.95), None);
        assert_eq!(median_interval(&six[..5], 0.90), Some((1.0, 6.0)));
        // n = 12: ranks 3 and 10 (96.1 %); ranks 4 and 9 would cover
        // only 85.4 %.
        let twelve: Vec<f64> = (1..=12).rev().map(f64::from).collect();
        assert_eq!(median_interval(&twelve, 0.95), Some((3.0, 10.0)));
        assert_eq!(median_interval(&twelve, 0.80), Some((4.0, 9.0)));
        // n = 100: ranks 40 and 61 (the textbook value for 95 %).
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_interval(&hundred, 0.95), Some((40.0, 61.0)));
        assert_eq!(median_interval(&[], 0.95), None);
        assert_eq!(median_interval(&twelve, 1.0), None);
    }
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn summary_hand_computed() {
        // mean 12; s² = (4 + 0 + 4) / 2 = 4, s = 2;
        // ci95 = t(0.975, 2) · 2 / sqrt(3) = 4.302653 · 1.154701 = 4.968275.
        let s = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(s.n, 3);
        assert!(close(s.mean, 12.0, 1e-12));
        assert!(close(s.sd, 2.0, 1e-12));
        assert!(close(s.ci95, 4.968275, 1e-5), "{s:?}");
        assert_eq!((s.min, s.max), (10.0, 14.0));
        assert!(close(s.cv, 2.0 / 12.0, 1e-12));
    }

    #[test]
    fn summary_large_sample_approaches_normal() {
        // 1..=100: s = 29.011492; t(0.975, 99) = 1.984217;
        // ci95 = 1.984217 · 29.011492 / 10 = 5.756509.
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = Summary::of(&v).unwrap();
        assert!(close(s.mean, 50.5, 1e-12));
        assert!(close(s.sd, 29.011492, 1e-6));
        assert!(close(s.ci95, 5.756509, 1e-5), "{s:?}");
    }

    #[test]
    fn summary_edge_cases() {
        assert_eq!(Summary::of(&[]), None);
        let one = Summary::of(&[7.0]).unwrap();
        assert_eq!((one.n, one.mean, one.min, one.max), (1, 7.0, 7.0, 7.0));
        assert!(one.sd.is_nan() && one.ci95.is_nan() && one.cv.is_nan());
        let same = Summary::of(&[3.0, 3.0]).unwrap();
        assert_eq!((same.sd, same.ci95, same.cv), (0.0, 0.0, 0.0));
        assert!(Summary::of(&[0.0, 0.0]).unwrap().cv.is_nan());
    }

    #[test]
    fn pct_change_cases() {
        assert_eq!(pct_change(150.0, 100.0), Some(50.0));
        assert_eq!(pct_change(75.0, 100.0), Some(-25.0));
        assert_eq!(pct_change(5.0, 0.0), None);
        assert_eq!(pct_change(f64::NAN, 1.0), None);
    }

    #[test]
    fn welch_hand_computed() {
        // a = [10, 12, 14]: x̄ 12, s² 4, s²/n = 4/3.
        // b = [20, 30, 40, 50]: x̄ 35, s² = 500/3, s²/n = 125/3.
        // se² = 43; t = -23 / sqrt(43) = -3.507467;
        // ν = 43² / ((4/3)²/2 + (125/3)²/3) = 1849 / 579.592593 = 3.190172.
        let a = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        let b = Summary::of(&[20.0, 30.0, 40.0, 50.0]).unwrap();
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, -3.507467, 1e-6), "{w:?}");
        assert!(close(w.df, 3.190172, 1e-6), "{w:?}");
        assert!(w.p > 0.03 && w.p < 0.04 && w.significant(), "{w:?}");
        // Symmetric in p, t changes sign.
        let r = welch(&b, &a).unwrap();
        assert!(close(r.t, -w.t, 1e-12) && close(r.p, w.p, 1e-12));
    }

    #[test]
    fn welch_equal_variances_reduces_to_student() {
        // a = [10, 12, 14], b = [14, 16, 18]: s²/n = 4/3 each, se² = 8/3,
        // t = -4 / 1.632993 = -2.449490, ν = (8/3)² / (2 · (4/3)² / 2) = 4;
        // two-sided p = 0.070484 (t table, 4 df): not significant.
        let a = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        let b = Summary::of(&[14.0, 16.0, 18.0]).unwrap();
        let w = welch(&a, &b).unwrap();
        assert!(close(w.t, -2.449490, 1e-6));
        assert!(close(w.df, 4.0, 1e-9));
        assert!(close(w.p, 0.070484, 1e-5), "{w:?}");
        assert!(!w.significant());
    }

    #[test]
    fn welch_undefined() {
        let one = Summary::of(&[1.0]).unwrap();
        let two = Summary::of(&[1.0, 2.0]).unwrap();
        assert_eq!(welch(&one, &two), None);
        let flat = Summary::of(&[2.0, 2.0]).unwrap();
        assert_eq!(welch(&flat, &flat), None);
    }

    #[test]
    fn diff_ci_equal_variances_hand_computed() {
        // a = [10, 12, 14], b = [14, 16, 18] (see the Welch test above):
        // diff = 12 - 16 = -4, se = sqrt(4/3 + 4/3) = 1.632993, ν = 4;
        // t(0.975, 4) = 2.776445 (t table), half-width = 2.776445 · 1.632993
        // = 4.533921; interval [-8.533921, 0.533921] holds 0, as p = 0.07.
        let a = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        let b = Summary::of(&[14.0, 16.0, 18.0]).unwrap();
        let d = diff_ci95(&a, &b).unwrap();
        assert!(close(d.diff, -4.0, 1e-12));
        assert!(close(d.df, 4.0, 1e-9));
        assert!(close(d.half_width, 4.533921, 1e-5), "{d:?}");
        assert!(d.low() < 0.0 && d.high() > 0.0);
        // In % of b's mean 16 (log ratio, see `pct_ci95`): -25 %;
        // u₁ = 4 / (3 · 144) = 0.00925926, u₂ = 4 / (3 · 256) = 0.00520833,
        // se_L = sqrt(0.01446759) = 0.12028130, ν = 0.01446759² /
        // ((u₁² + u₂²) / 2) = 3.709199, t(0.975, 3.709199) = 2.864435,
        // L = ln(12 / 16) = -0.28768207, half-width 0.34453793:
        // 100 · (exp(L ± 0.34453793) - 1) = [-46.858924, +5.850322].
        // (The linear interval was [-53.337, +3.337].)
        let p = pct_ci95(&a, &b).unwrap();
        assert!(close(p.pct, -25.0, 1e-9));
        assert!(close(p.low, -46.858924, 1e-4), "{p:?}");
        assert!(close(p.high, 5.850322, 1e-4), "{p:?}");
    }

    #[test]
    fn diff_ci_agrees_with_welch() {
        // The interval excludes 0 exactly when p < 0.05, e.g. the Welch
        // example above (p = 0.035): diff = -23, se = sqrt(43) = 6.557439,
        // ν = 3.190172, so half-width = t(0.975, 3.19) · 6.557439 < 23.
        let a = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        let b = Summary::of(&[20.0, 30.0, 40.0, 50.0]).unwrap();
        let d = diff_ci95(&a, &b).unwrap();
        assert!(close(d.diff, -23.0, 1e-12));
        assert!(d.high() < 0.0, "{d:?}");
        // t(0.975, ν) lies between the table's t(0.975, 4) = 2.776445 and
        // t(0.975, 3) = 3.182446.
        let t = d.half_width / 43f64.sqrt();
        assert!(t > 2.776445 && t < 3.182446, "{t}");
        // Swapped samples: the interval is mirrored.
        let r = diff_ci95(&b, &a).unwrap();
        assert!(close(r.low(), -d.high(), 1e-9) && close(r.high(), -d.low(), 1e-9));
        assert_eq!(diff_ci95(&Summary::of(&[1.0]).unwrap(), &b), None);
        assert_eq!(pct_ci95(&a, &Summary::of(&[0.0, 0.0, 0.0]).unwrap()), None);
    }

    #[test]
    fn pct_ci_of_a_tps_gain() {
        // value = [109, 110, 111]: x̄ 110, s² 1; baseline = [99, 100, 101]:
        // x̄ 100, s² 1. On the log scale: u₁ = 1 / (3 · 110²) = 2.754821e-5,
        // u₂ = 1 / (3 · 100²) = 3.333333e-5, ν = 3.964206,
        // t(0.975, ν) = 2.786360, half-width = 2.786360 · sqrt(6.088154e-5)
        // = 0.02174103; L = ln 1.1 = 0.09531018;
        // % = 100 · (exp(L ± 0.02174103) - 1) → [+7.634297, +12.417699]
        // (the linear interval, +10 ± 2.266954, differs in the second order).
        let v = Summary::of(&[109.0, 110.0, 111.0]).unwrap();
        let b = Summary::of(&[99.0, 100.0, 101.0]).unwrap();
        let c = compare(&v, &b, Better::Higher);
        assert!(close(c.pct.unwrap(), 10.0, 1e-9));
        let ci = c.pct_ci.unwrap();
        assert!(close(ci.pct, 10.0, 1e-9), "{ci:?}");
        assert!(
            close(ci.low, 7.634297, 1e-5) && close(ci.high, 12.417699, 1e-5),
            "{ci:?}"
        );
        assert_eq!(c.verdict, Verdict::Faster);
        // The same numbers as latencies: higher is worse.
        assert_eq!(compare(&v, &b, Better::Lower).verdict, Verdict::Slower);
        assert_eq!(compare(&b, &v, Better::Lower).verdict, Verdict::Faster);
        assert_eq!(compare(&b, &v, Better::Higher).verdict, Verdict::Slower);
    }

    #[test]
    fn ratio_ci_of_a_noisy_drop_stays_above_minus_100_percent() {
        // n = 3 on a noisy host: value = [20, 150, 100] (x̄ 90, s² 4300),
        // baseline = [1000, 1100, 900] (x̄ 1000, s² 10000); -91 %.
        // The linear interval of the difference divided by the baseline
        // mean, as isobench printed it before: diff = -910,
        // se = sqrt(4300/3 + 10000/3) = 69.041051, ν = 3.451599,
        // t(0.975, ν) = 2.959379, so 100 · (-910 ± 204.318621) / 1000 =
        // [-111.431862 %, -70.568138 %]: throughput cannot fall by more
        // than 100 %.
        let v = Summary::of(&[20.0, 150.0, 100.0]).unwrap();
        let b = Summary::of(&[1000.0, 1100.0, 900.0]).unwrap();
        let d = diff_ci95(&v, &b).unwrap();
        let old_low = 100.0 * d.low() / b.mean;
        assert!(close(old_low, -111.431862, 1e-4), "{old_low}");
        // On the log scale: u₁ = 4300 / (3 · 8100) = 0.17695473,
        // u₂ = 10000 / (3 · 10⁶) = 0.00333333, ν = 2.075322,
        // t(0.975, ν) = 4.156415, half-width = 4.156415 · sqrt(0.18028807)
        // = 1.76482820, L = ln 0.09 = -2.40794561:
        // 100 · (exp(L ± 1.76482820) - 1) = [-98.459054 %, -47.434880 %].
        let c = compare(&v, &b, Better::Higher);
        let ci = c.pct_ci.unwrap();
        assert!(ci.low > -100.0, "{ci:?}");
        assert!(close(ci.low, -98.459054, 1e-4), "{ci:?}");
        assert!(close(ci.high, -47.434880, 1e-4), "{ci:?}");
        // The point estimate is unchanged, and inside the interval.
        assert!(close(ci.pct, -91.0, 1e-9) && close(c.pct.unwrap(), -91.0, 1e-9));
        assert!(ci.low < ci.pct && ci.pct < ci.high);
        // However extreme: a value near 0 with huge noise stays above -100 %.
        let tiny = Summary::of(&[0.001, 5.0, 400.0]).unwrap();
        let ci = pct_ci95(&tiny, &b).unwrap();
        assert!(ci.low > -100.0 && ci.low.is_finite(), "{ci:?}");
        // No log of a mean that is not positive.
        let zero = Summary::of(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(pct_ci95(&zero, &b), None);
        assert_eq!(pct_ci95(&Summary::of(&[-1.0, 0.0, 1.0]).unwrap(), &b), None);
        assert_eq!(pct_ci95(&v, &zero), None);
    }

    #[test]
    fn verdicts() {
        let a = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
        let b = Summary::of(&[14.0, 16.0, 18.0]).unwrap();
        // p = 0.070 (above): no significant difference, either direction.
        assert_eq!(
            compare(&a, &b, Better::Higher).verdict,
            Verdict::NoSignificantDifference
        );
        assert_eq!(
            compare(&a, &b, Better::Lower).verdict,
            Verdict::NoSignificantDifference
        );
        let one = Summary::of(&[12.0]).unwrap();
        let c = compare(&one, &b, Better::Higher);
        assert_eq!(c.verdict, Verdict::NotEnoughData);
        // The point estimate is still there without a test.
        assert!(close(c.pct.unwrap(), -25.0, 1e-9) && c.pct_ci.is_none());
        assert_eq!(Verdict::of(None, Better::Lower), Verdict::NotEnoughData);
        assert_eq!(
            Verdict::NoSignificantDifference.label(),
            "no significant difference"
        );
        assert_eq!(Verdict::NotEnoughData.token(), "not_enough_data");
    }

    #[test]
    fn median_cases() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn modified_z_hand_computed() {
        // [10, 11, 12, 13, 50]: median 12; |x - 12| = 2, 1, 0, 1, 38, whose
        // median (MAD) is 1. M = 0.6745 · (x - 12) / 1:
        // -1.349, -0.6745, 0, 0.6745, 25.631 → only 50 (index 4) > 3.5.
        let v = [10.0, 11.0, 12.0, 13.0, 50.0];
        let z = modified_z_scores(&v).unwrap();
        let want = [-1.349, -0.6745, 0.0, 0.6745, 25.631];
        for (got, want) in z.iter().zip(want) {
            assert!(close(*got, want, 1e-9), "{z:?}");
        }
        assert_eq!(outliers(&v), vec![4]);
    }

    #[test]
    fn modified_z_threshold_and_low_side() {
        // [100, 101, 102, 103, 104, 95]: sorted 95 100 101 102 103 104,
        // median (101 + 102) / 2 = 101.5; |x - 101.5| = 1.5, 0.5, 0.5, 1.5,
        // 2.5, 6.5 → MAD = (1.5 + 1.5) / 2 = 1.5.
        // M(95) = 0.6745 · -6.5 / 1.5 = -2.922833: not an outlier.
        let v = [100.0, 101.0, 102.0, 103.0, 104.0, 95.0];
        assert!(close(modified_z_scores(&v).unwrap()[5], -2.922833, 1e-6));
        assert!(outliers(&v).is_empty());
        // [100, 101, 102, 103, 104, 80]: median 101.5; deviations 1.5, 0.5,
        // 0.5, 1.5, 2.5, 21.5 → MAD = 1.5; M(80) = 0.6745 · -21.5 / 1.5 =
        // -9.667833: a low outlier.
        let v = [100.0, 101.0, 102.0, 103.0, 104.0, 80.0];
        assert!(close(modified_z_scores(&v).unwrap()[5], -9.667833, 1e-6));
        assert_eq!(outliers(&v), vec![5]);
        // Near the cut-off: [0, 1, 2, 3, x] has median 2 and MAD 1, so
        // M(x) = 0.6745 · (x - 2), above 3.5 from x = 7.189 on:
        // M(7) = 3.3725 is kept, M(7.5) = 3.70975 is flagged.
        assert!(outliers(&[0.0, 1.0, 2.0, 3.0, 7.0]).is_empty());
        assert_eq!(outliers(&[0.0, 1.0, 2.0, 3.0, 7.5]), vec![4]);
    }

    #[test]
    fn modified_z_degenerate() {
        assert_eq!(modified_z_scores(&[]), None);
        assert!(outliers(&[]).is_empty());
        // MAD = 0 (three of four equal): nothing flagged, by rule.
        assert_eq!(modified_z_scores(&[5.0, 5.0, 5.0, 9.0]), None);
        assert!(outliers(&[5.0, 5.0, 5.0, 9.0]).is_empty());
        // Two values: |M| = 0.6745 each.
        let z = modified_z_scores(&[1.0, 100.0]).unwrap();
        assert!(close(z[0], -0.6745, 1e-12) && close(z[1], 0.6745, 1e-12));
        assert!(outliers(&[1.0, 100.0]).is_empty());
        // Three values: [10, 11, 20]: median 11, deviations 1, 0, 9 → MAD 1;
        // M(20) = 6.0705, but below 5 values nothing is flagged (issue #37).
        assert!(close(
            modified_z_scores(&[10.0, 11.0, 20.0]).unwrap()[2],
            6.0705,
            1e-9
        ));
        assert!(outliers(&[10.0, 11.0, 20.0]).is_empty());
        assert!(outliers(&[10.0, 11.0, 11.5, 20.0]).is_empty());
        // The same run among five: median 11, deviations 1, 0, 9, 0.5,
        // 0.5 → MAD 0.5, M(20) = 12.141: flagged.
        assert_eq!(outliers(&[10.0, 11.0, 20.0, 11.5, 10.5]), vec![2]);
    }

    #[test]
    fn outliers_need_ten_percent_from_the_median() {
        // A real cell: median 3745, deviations 18, 0, 163 → MAD 18,
        // M(3908) = 0.6745 · 163 / 18 = 6.11 > 3.5, but 163 / 3745 = 4.4 %:
        // kept.
        let z = modified_z_scores(&[3745.0, 3908.0, 3727.0]).unwrap();
        assert!(close(z[1], 6.107972, 1e-5), "{z:?}");
        assert!(outliers(&[3745.0, 3908.0, 3727.0]).is_empty());
        // Another: median 1725; 1012 is 41 % below it (M = -7.29), but
        // three runs are too few to call it an outlier; among five runs
        // (median 1725, deviations 713, 0, 66, 5, 25 → MAD 25,
        // M = -19.2) it is one.
        assert!(outliers(&[1012.0, 1725.0, 1791.0]).is_empty());
        assert_eq!(outliers(&[1012.0, 1725.0, 1791.0, 1730.0, 1700.0]), vec![0]);
    }

    /// Seed 002's report printed `+239.6 % TPS vs ser (95 % CI [-48.4 %,
    /// +2132.8 %], significant: p = 0.011)` (issue #37): an interval on
    /// the log ratio, a p-value from Welch's test of the raw means. Two
    /// runs a side reproduce it: ser [257.0, 373.0] (x̄ 315, s 82.024),
    /// rc [1021.7, 1117.8] (x̄ 1069.75, s 67.953). Independently (SciPy
    /// 1.17): Welch on the raw means t = 10.0208, ν = 1.9331, p = 0.0110;
    /// the log-ratio interval [-48.24 %, +2128.3 %], and the test of that
    /// log ratio p = 0.0805.
    #[test]
    fn seed_002_no_longer_calls_an_interval_across_zero_significant() {
        let ser = Summary::of(&[257.0, 373.0]).unwrap();
        let rc = Summary::of(&[1021.7, 1117.8]).unwrap();
        let raw = welch(&rc, &ser).unwrap();
        assert!(close(raw.p, 0.0110, 1e-3) && raw.significant(), "{raw:?}");
        let c = compare(&rc, &ser, Better::Higher);
        assert!(close(c.pct.unwrap(), 239.6, 0.05), "{c:?}");
        let ci = c.pct_ci.unwrap();
        assert!(
            close(ci.low, -48.24, 0.01) && close(ci.high, 2128.3, 0.1),
            "{ci:?}"
        );
        // The one method: its p is that of the interval, which holds 0.
        let w = c.welch.unwrap();
        assert!(close(w.p, 0.0805, 1e-3), "{w:?}");
        assert_eq!(w, ratio_test(&rc, &ser).unwrap());
        // And two runs a side are too few for any verdict.
        assert_eq!(c.verdict, Verdict::NotEnoughData);
        assert_eq!(c.verdict.label(), "too few runs");
        let caveat = c.caveat().unwrap();
        assert!(
            caveat.starts_with("too few runs (2 on the smaller side; a verdict needs 3)"),
            "{caveat}"
        );
        // With a third run on each side the same means are significant,
        // and the interval says so too.
        let ser3 = Summary::of(&[257.0, 373.0, 315.0]).unwrap();
        let rc3 = Summary::of(&[1021.7, 1117.8, 1069.75]).unwrap();
        let c = compare(&rc3, &ser3, Better::Higher);
        assert_eq!(c.verdict, Verdict::Faster);
        assert!(c.pct_ci.unwrap().low > 0.0, "{c:?}");
    }

    /// The ratio test is the interval's inversion: hand-computed for
    /// value [109, 110, 111] against [99, 100, 101] (see
    /// `pct_ci_of_a_tps_gain`): L = 0.09531018, se_L = sqrt(6.088154e-5)
    /// = 0.00780266, t = 12.215, ν = 3.964206.
    #[test]
    fn ratio_test_hand_computed() {
        let v = Summary::of(&[109.0, 110.0, 111.0]).unwrap();
        let b = Summary::of(&[99.0, 100.0, 101.0]).unwrap();
        let w = ratio_test(&v, &b).unwrap();
        assert!(
            close(w.t, 12.2152, 1e-3) && close(w.df, 3.964206, 1e-5),
            "{w:?}"
        );
        assert!(w.p < 0.001);
        let r = ratio_test(&b, &v).unwrap();
        assert!(close(r.t, -w.t, 1e-9) && close(r.p, w.p, 1e-12));
    }

    proptest::proptest! {
        /// Issue #37: for any two positive samples of 3 to 8 runs,
        /// "significant" holds exactly when the interval of the change
        /// excludes 0 (cases within 1e-9 of p = 0.05 aside, where
        /// rounding decides).
        #[test]
        fn significance_iff_the_interval_excludes_zero(
            a in proptest::collection::vec(1.0f64..10_000.0, 3..8),
            b in proptest::collection::vec(1.0f64..10_000.0, 3..8),
        ) {
            let (sa, sb) = (Summary::of(&a).unwrap(), Summary::of(&b).unwrap());
            let c = compare(&sa, &sb, Better::Higher);
            if let (Some(w), Some(ci)) = (c.welch, c.pct_ci) {
                proptest::prop_assume!((w.p - ALPHA).abs() > 1e-9);
                let excludes = ci.low > 0.0 || ci.high < 0.0;
                proptest::prop_assert_eq!(c.verdict.significant(), excludes);
                proptest::prop_assert_eq!(w.significant(), excludes);
                // The direction agrees with the point estimate.
                if c.verdict == Verdict::Faster {
                    proptest::prop_assert!(c.pct.unwrap() > 0.0 && ci.low > 0.0);
                }
                if c.verdict == Verdict::Slower {
                    proptest::prop_assert!(c.pct.unwrap() < 0.0 && ci.high < 0.0);
                }
            } else {
                proptest::prop_assert_eq!(c.verdict, Verdict::NotEnoughData);
            }
        }
    }

    #[test]
    fn the_mde_and_its_words() {
        // 3 runs a side at CV 10 %: MDE 35.95 % (see stats::power), a
        // 5 % change needs 67 runs a side.
        let a = Summary::of(&[90.0, 100.0, 110.0]).unwrap();
        let b = Summary::of(&[90.0, 100.0, 110.0]).unwrap();
        let c = compare(&a, &b, Better::Higher);
        assert_eq!(c.verdict, Verdict::NoSignificantDifference);
        assert!(close(c.mde_pct.unwrap(), 35.95, 0.02), "{c:?}");
        assert_eq!(c.runs_for_target, Some(67));
        assert!(c.underpowered());
        assert_eq!(
            c.caveat().unwrap(),
            "this study could detect changes of ±36 % or more; a 5 % change needs 67 runs per side"
        );
        // A precise study: no caveat.
        let a = Summary::of(&[99.9, 100.0, 100.1, 100.0]).unwrap();
        let c = compare(&a, &a, Better::Higher);
        assert!(c.mde_pct.unwrap() < 1.0 && c.caveat().is_none() && !c.underpowered());
        assert_eq!(fmt_mde(4.21), "4.2 %");
        assert_eq!(fmt_mde(0.713), "0.71 %");
    }

    /// Issue #49, finding 7: a side with no complete run (after Ctrl-C)
    /// was told "a 5 % change needs more than 10000 runs per side"; one
    /// run gives no noise to reckon runs from either.
    #[test]
    fn no_runs_or_one_get_no_runs_needed() {
        let none = Comparison {
            pct: None,
            pct_ci: None,
            welch: None,
            verdict: Verdict::NotEnoughData,
            mde_pct: None,
            runs_for_target: None,
            n_min: 0,
        };
        assert_eq!(
            none.caveat().unwrap(),
            "no complete run on a side: nothing to compare"
        );
        let one = Summary::of(&[100.0]).unwrap();
        let three = Summary::of(&[90.0, 100.0, 110.0]).unwrap();
        let c = compare(&one, &three, Better::Higher);
        assert_eq!(
            c.caveat().unwrap(),
            "too few runs (1 on the smaller side; a verdict needs 3)"
        );
    }
}
