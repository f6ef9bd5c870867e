//! How small a change a study could have seen: the minimum detectable
//! effect (MDE) of isobench's verdict at 80 % power and α = 0.05, and the
//! repetitions a target MDE needs.
//!
//! The verdict ([`super::ratio_test`]) is a two-sided t-test of the log
//! ratio of two means, `L = ln x̄₁ - ln x̄₂`, with standard error
//! `se_L = sqrt(cv₁²/n₁ + cv₂²/n₂)` (the delta method) and the
//! Welch–Satterthwaite degrees of freedom ν. Under a true log ratio δ the
//! statistic `L / se_L` follows (approximately) a noncentral t
//! distribution with ν degrees of freedom and noncentrality
//! `λ = δ / se_L`, so the power of the test is
//!
//! ```text
//! power(λ) = P(|T| > t(1 - α/2, ν)),  T ~ t'(ν, λ)
//!          = 1 - F'(c; ν, λ) + F'(-c; ν, λ),  c = t(0.975, ν)
//! ```
//!
//! and the MDE is the δ at which the power reaches 0.8, reported as the
//! relative change `100 · (exp(δ) - 1)` %. This is the power calculation
//! of the two-sample t-test (J. Cohen, "Statistical Power Analysis for the
//! Behavioral Sciences", 2nd ed. (1988), ch. 2; R's `power.t.test` and
//! G*Power compute the same noncentral t for equal variances), with
//! Welch's unequal-variances statistic and degrees of freedom in place of
//! the pooled ones (B. L. Welch, Biometrika 34 (1947) 28-35; F. E.
//! Satterthwaite, Biometrics Bulletin 2 (1946) 110-114).
//!
//! The noncentral t distribution function is computed from its integral
//! representation over the chi distribution of the denominator
//! (N. L. Johnson, S. Kotz and N. Balakrishnan, "Continuous Univariate
//! Distributions", vol. 2, 2nd ed. (1995), ch. 31, eq. 31.15):
//!
//! ```text
//! F'(x; ν, λ) = ∫₀^∞ Φ(x·s - λ) · g_ν(s) ds,
//! g_ν(s) = 2 (ν/2)^(ν/2) / Γ(ν/2) · s^(ν-1) · exp(-ν s² / 2)
//! ```
//!
//! (`s = sqrt(V/ν)`, `V ~ χ²_ν`), by composite Simpson's rule over the
//! range that holds all but a negligible part of `g_ν`. statrs has no
//! noncentral t; its normal distribution function and log-gamma are used.

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::gamma::ln_gamma;

use super::{ALPHA, t_quantile};

/// The power at which [`mde_log`] is taken.
pub const POWER: f64 = 0.80;

/// The largest number of repetitions per side [`runs_for_mde`] considers.
pub const MAX_RUNS: usize = 10_000;

/// Distribution function of the noncentral t distribution with `df`
/// degrees of freedom (≥ 1 here: Welch's ν is at least the smaller n - 1)
/// and noncentrality `ncp`, at `x` (see the module docs for the integral
/// and its source). NaN when `df` is not positive and finite.
pub fn noncentral_t_cdf(x: f64, df: f64, ncp: f64) -> f64 {
    if !(df.is_finite() && df > 0.0 && x.is_finite() && ncp.is_finite()) {
        return f64::NAN;
    }
    let phi = Normal::standard();
    // ln of the constant of g_ν.
    let half = df / 2.0;
    let ln_c = std::f64::consts::LN_2 + half * half.ln() - ln_gamma(half);
    let g = |s: f64| {
        if s <= 0.0 {
            // s^(ν-1) at 0: 1 when ν = 1, 0 when ν > 1.
            return if (df - 1.0).abs() < 1e-12 {
                ln_c.exp()
            } else {
                0.0
            };
        }
        (ln_c + (df - 1.0) * s.ln() - df * s * s / 2.0).exp()
    };
    // s is concentrated around 1 with standard deviation about
    // 1/sqrt(2ν) (0.71 at ν = 1, where s = |Z|): 12 of them on each side
    // leave less than 1e-12 of g_ν outside.
    let sd = (1.0 / (2.0 * df)).sqrt();
    let lo = (1.0 - 12.0 * sd).max(0.0);
    let hi = 1.0 + 12.0 * sd;
    let steps = 400usize; // even
    let h = (hi - lo) / steps as f64;
    let f = |s: f64| phi.cdf(x * s - ncp) * g(s);
    let mut sum = f(lo) + f(hi);
    for i in 1..steps {
        let s = lo + i as f64 * h;
        sum += if i % 2 == 1 { 4.0 } else { 2.0 } * f(s);
    }
    (sum * h / 3.0).clamp(0.0, 1.0)
}

/// Power of the two-sided t-test at level [`ALPHA`] with `df` degrees of
/// freedom when the true effect is `ncp` standard errors:
/// `P(|T| > t(1 - α/2, df))`, `T ~ t'(df, ncp)`.
pub fn power(df: f64, ncp: f64) -> f64 {
    let c = t_quantile(1.0 - ALPHA / 2.0, df);
    1.0 - noncentral_t_cdf(c, df, ncp) + noncentral_t_cdf(-c, df, ncp)
}

/// The noncentrality at which the two-sided test with `df` degrees of
/// freedom reaches power `target` (by bisection; power grows with it).
/// NaN for a `df` that is not positive.
pub fn ncp_for_power(df: f64, target: f64) -> f64 {
    if !(df.is_finite() && df > 0.0 && target > ALPHA && target < 1.0) {
        return f64::NAN;
    }
    // Start from the usual approximation λ ≈ t(1 - α/2, ν) + t(power, ν)
    // and bracket the root around it.
    let guess = t_quantile(1.0 - ALPHA / 2.0, df) + t_quantile(target, df);
    let (mut lo, mut hi) = (0.0f64, guess.max(1.0));
    while power(df, hi) < target {
        lo = hi;
        hi *= 1.5;
        if hi > 1e6 {
            return f64::NAN;
        }
    }
    if power(df, 0.7 * hi) < target {
        lo = lo.max(0.7 * hi);
    } else {
        hi *= 0.7;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if power(df, mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-8 * hi {
            break;
        }
    }
    (lo + hi) / 2.0
}

/// The standard error and Welch–Satterthwaite degrees of freedom of the
/// log ratio of two means with coefficients of variation `cv1`, `cv2`
/// (ratios, not %) over `n1`, `n2` values: `u = cv²/n`, `se = sqrt(u₁ +
/// u₂)`, `ν = (u₁ + u₂)² / (u₁²/(n₁-1) + u₂²/(n₂-1))`. `None` with fewer
/// than 2 values on a side, or no variance at all.
pub fn log_se_df(cv1: f64, n1: usize, cv2: f64, n2: usize) -> Option<(f64, f64)> {
    if n1 < 2 || n2 < 2 || !cv1.is_finite() || !cv2.is_finite() {
        return None;
    }
    let u1 = cv1 * cv1 / n1 as f64;
    let u2 = cv2 * cv2 / n2 as f64;
    let se2 = u1 + u2;
    if se2 <= 0.0 {
        return None;
    }
    let df = se2 * se2 / (u1 * u1 / (n1 as f64 - 1.0) + u2 * u2 / (n2 as f64 - 1.0));
    Some((se2.sqrt(), df))
}

/// The minimum detectable log ratio at [`POWER`] and [`ALPHA`] for two
/// samples with coefficients of variation `cv1`, `cv2` over `n1`, `n2`
/// repetitions: `δ = λ₀.₈(ν) · se_L` (see the module docs). `None` as
/// [`log_se_df`].
pub fn mde_log(cv1: f64, n1: usize, cv2: f64, n2: usize) -> Option<f64> {
    let (se, df) = log_se_df(cv1, n1, cv2, n2)?;
    let ncp = ncp_for_power(df, POWER);
    ncp.is_finite().then_some(ncp * se)
}

/// [`mde_log`] as a relative change, %: `100 · (exp(δ) - 1)`. A change of
/// this size upwards (or of `100 · (1 - exp(-δ))` % downwards) is detected
/// with 80 % probability.
pub fn mde_pct(cv1: f64, n1: usize, cv2: f64, n2: usize) -> Option<f64> {
    mde_log(cv1, n1, cv2, n2).map(|d| 100.0 * d.exp_m1())
}

/// The fewest repetitions per side (the same on both) whose
/// [`mde_pct`] at coefficients of variation `cv1`, `cv2` is at most
/// `target_pct`; `None` when more than [`MAX_RUNS`] would be needed, or
/// the inputs are not usable (a CV that is not finite, a target that is
/// not positive). With no variance at all, 2 (the fewest a test takes).
pub fn runs_for_mde(cv1: f64, cv2: f64, target_pct: f64) -> Option<usize> {
    if !(cv1.is_finite() && cv2.is_finite() && target_pct > 0.0) {
        return None;
    }
    if cv1 == 0.0 && cv2 == 0.0 {
        return Some(2);
    }
    let ok = |n: usize| mde_pct(cv1, n, cv2, n).is_some_and(|m| m <= target_pct);
    // The MDE shrinks as n grows. Start at the normal approximation
    // n ≈ (z₀.₉₇₅ + z₀.₈)² (cv₁² + cv₂²) / ln(1 + target)², which the t
    // quantiles only raise, and step to the first n that is ok.
    let z = 1.959964 + 0.841621;
    let d = (target_pct / 100.0).ln_1p();
    let approx = (z * z * (cv1 * cv1 + cv2 * cv2) / (d * d)).ceil();
    if approx > MAX_RUNS as f64 || !ok(MAX_RUNS) {
        return None;
    }
    let mut n = (approx as usize).clamp(2, MAX_RUNS);
    while n > 2 && ok(n - 1) {
        n -= 1;
    }
    while !ok(n) {
        n += 1;
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn the_noncentral_t_reduces_to_student_and_normal() {
        // λ = 0: Student's t (statrs), e.g. F(2.776445; 4) = 0.975.
        assert!(close(noncentral_t_cdf(2.776445, 4.0, 0.0), 0.975, 1e-6));
        assert!(close(noncentral_t_cdf(-1.0, 1.0, 0.0), 0.25, 1e-6));
        assert!(close(noncentral_t_cdf(0.0, 7.0, 0.0), 0.5, 1e-9));
        // Large ν: the normal shifted by λ, Φ(1.5 - 1) = 0.691462.
        assert!(close(noncentral_t_cdf(1.5, 1e5, 1.0), 0.691462, 1e-4));
    }

    /// Reference values computed independently with SciPy 1.17
    /// (`scipy.stats.nct`, Boost's algorithm, not this integral):
    /// `nct.cdf(2.0, 4, 1.5)` = 0.6189289, `nct.cdf(-1.0, 2, 0.5)` =
    /// 0.1032786, `nct.cdf(3.0, 10, 2.0)` = 0.7791720.
    #[test]
    fn the_noncentral_t_matches_an_independent_implementation() {
        assert!(close(noncentral_t_cdf(2.0, 4.0, 1.5), 0.6189289, 2e-6));
        assert!(close(noncentral_t_cdf(-1.0, 2.0, 0.5), 0.1032786, 2e-6));
        assert!(close(noncentral_t_cdf(3.0, 10.0, 2.0), 0.7791720, 2e-6));
    }

    /// R's documentation of `power.t.test` (package stats) gives
    /// `power.t.test(n = 20, delta = 1)` = 0.8689528 (sd 1, two-sided,
    /// α = 0.05; R counts the upper rejection region only, which is
    /// 2e-7 less than both: SciPy's nct gives 0.8689530 for both): the pooled two-sample t-test with ν = 38 and
    /// λ = 1 / sqrt(2/20) = 3.162278. With equal variances and equal n,
    /// Welch's ν is the pooled 2(n - 1), so [`power`] must agree.
    #[test]
    fn power_matches_r_power_t_test() {
        let p = power(38.0, 1.0 / (2.0f64 / 20.0).sqrt());
        assert!(close(p, 0.8689528, 2e-6), "{p}");
        // `power.t.test(power = .90, delta = 1)` gives n = 22.02110 per
        // group: at that n the power is 0.90.
        let n = 22.02110f64;
        let p = power(2.0 * (n - 1.0), 1.0 / (2.0 / n).sqrt());
        assert!(close(p, 0.90, 2e-5), "{p}");
    }

    /// The MDE of 3 runs against 3 with a coefficient of variation of 10 %
    /// on each side: se_L = sqrt(2 · 0.01 / 3) = 0.0816497, ν = 4, and the
    /// noncentrality for 80 % power at ν = 4 is 3.7611 (SciPy:
    /// brentq over `nct.sf(t.ppf(.975, 4), 4, λ) + nct.cdf(-t.ppf(.975,
    /// 4), 4, λ)` = 0.8 gives λ = 3.761060): δ = 0.307090, so the MDE is
    /// 100 · (exp(0.307090) - 1) = 35.95 %, the "±32-41 %" an A/A study at
    /// the default 3 repetitions showed (issue #41).
    #[test]
    fn mde_at_the_default_three_repetitions() {
        let ncp = ncp_for_power(4.0, POWER);
        assert!(close(ncp, 3.761060, 1e-4), "{ncp}");
        let m = mde_pct(0.10, 3, 0.10, 3).unwrap();
        assert!(close(m, 35.95, 0.02), "{m}");
        // More runs, smaller MDE; and none without a variance estimate.
        assert!(mde_pct(0.10, 10, 0.10, 10).unwrap() < m);
        assert_eq!(mde_pct(0.10, 1, 0.10, 3), None);
        assert_eq!(mde_pct(0.0, 3, 0.0, 3), None);
    }

    #[test]
    fn runs_for_a_target_mde() {
        // CV 10 % on both sides: n per side for a 5 % MDE. At large n,
        // δ ≈ (z₀.₉₇₅ + z₀.₈) · 0.1 · sqrt(2/n) = ln 1.05 gives
        // n ≈ 2 · (2.801585 · 0.1 / 0.0487902)² = 65.9; the t quantiles
        // add a little: 67 (the first n whose MDE is at most 5 %).
        let n = runs_for_mde(0.10, 0.10, 5.0).unwrap();
        assert_eq!(n, 67);
        assert!(mde_pct(0.10, n, 0.10, n).unwrap() <= 5.0);
        assert!(mde_pct(0.10, n - 1, 0.10, n - 1).unwrap() > 5.0);
        assert_eq!(runs_for_mde(0.0, 0.0, 5.0), Some(2));
        assert_eq!(runs_for_mde(5.0, 5.0, 0.01), None);
        assert_eq!(runs_for_mde(f64::NAN, 0.1, 5.0), None);
    }
}
