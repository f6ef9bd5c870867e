//! Statistics over the repetitions of a cell: mean, sample standard
//! deviation, the Student t confidence interval of the mean, relative
//! change against a baseline, and Welch's unequal-variances t-test.
//!
//! Sources: NIST/SEMATECH e-Handbook of Statistical Methods, §1.3.5.1
//! ("Measures of Location"), §1.3.5.6 ("Measures of Scale"), §7.2.2.1
//! ("Confidence interval for the mean") and §1.3.5.3 ("Two-Sample t-Test
//! for Equal Means", unequal-variances case); B. L. Welch, "The
//! generalization of 'Student's' problem when several different population
//! variances are involved", Biometrika 34 (1947) 28-35.

use statrs::distribution::{ContinuousCDF, StudentsT};

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

    /// Sample variance `s²`; NaN when n < 2.
    pub fn variance(&self) -> f64 {
        self.sd * self.sd
    }
}

/// Quantile `p` of Student's t distribution with `df` degrees of freedom.
fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::NAN, |t| t.inverse_cdf(p))
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

#[cfg(test)]
mod tests {
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
}
