//! Repetitions until a target precision (`--precision 2%`): a sequential
//! rule that decides after each repetition whether a cell's mean is known
//! to within ±r of itself at 95 % confidence.
//!
//! The naive rule, "stop as soon as the 95 % interval is narrower than
//! the target", stops early exactly when the first runs happen to agree
//! (a sample standard deviation that is small by chance), and the interval
//! it stops with then covers the true mean less often than 95 % (about
//! 90 % in the simulation below). The rule here is the fixed-width
//! sequential procedure of Y. S. Chow and H. Robbins, "On the asymptotic
//! theory of fixed-width sequential confidence intervals for the mean",
//! Annals of Mathematical Statistics 36 (1965) 457-462, in its relative
//! form (A. Nádas, "An extension of a theorem of Chow and Robbins on
//! sequential confidence intervals for the mean", Annals of Mathematical
//! Statistics 40 (1969) 667-671): with a first stage of at least
//! [`FIRST_STAGE`] repetitions, stop at the first `n` with
//!
//! ```text
//! n ≥ (a_n / d_n)² · (s_n² + c · d_n² / n),   d_n = r · x̄_n
//! ```
//!
//! where `a_n = t(0.975, n - 1)` (Student's quantile, which tends to the
//! normal one as Chow and Robbins require), and the interval is then
//! `x̄_N ± r · x̄_N`. The `c / n` term is Chow and Robbins' `n⁻¹` guard
//! against a variance estimate that is small by chance, written in units
//! of `d_n²` so that the rule does not depend on the unit of the values;
//! `c` = [`GUARD`]. Their theorem gives coverage tending to 95 % as the
//! target narrows; the unit test below measures it at the sizes isobench
//! meets (normal runs with a coefficient of variation of 5-10 %, targets
//! of 2-5 %): 93.5-95 %, where the naive rule gives 90-91 %.

use super::{CONFIDENCE, Summary, t_quantile};

/// The fewest repetitions the rule stops at (its first stage).
pub const FIRST_STAGE: usize = 5;

/// Chow and Robbins' `n⁻¹` term, in units of the squared target
/// half-width (see the module docs).
pub const GUARD: f64 = 2.0;

/// Whether the values of `s` (one per repetition) reach the relative
/// precision `rel` (e.g. 0.02 for ±2 %) by the sequential rule of the
/// module docs: at least [`FIRST_STAGE`] values, a positive mean, and
/// `t(0.975, n-1)² · (s²/n + GUARD · d²/n²) ≤ d²` with `d = rel · x̄`.
pub fn reached(s: &Summary, rel: f64) -> bool {
    if s.n < FIRST_STAGE || !(s.mean > 0.0 && rel > 0.0 && s.sd.is_finite()) {
        return false;
    }
    let n = s.n as f64;
    let d = rel * s.mean;
    let a = t_quantile(0.5 + CONFIDENCE / 2.0, n - 1.0);
    a * a * (s.variance() / n + GUARD * d * d / (n * n)) <= d * d
}

/// The relative half-width of the Student t 95 % interval of the mean,
/// `ci95 / mean` (a ratio); NaN with fewer than 2 values or a mean that
/// is not positive.
pub fn relative_half_width(s: &Summary) -> f64 {
    if s.mean > 0.0 {
        s.ci95 / s.mean
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn the_rule_needs_the_first_stage_and_a_narrow_interval() {
        // Four equal-ish values are never enough, however narrow.
        let four = Summary::of(&[100.0, 100.1, 99.9, 100.0]).unwrap();
        assert!(!reached(&four, 0.05));
        // Five: s = 0.070711 (values 100 ± 0.1), d = 2 at 2 %,
        // t(0.975, 4)² = 7.708647; 7.708647 · (0.005/5 + 2 · 4/25) =
        // 2.474 ≤ 4: reached. At 1 % (d = 1): 7.708647 · (0.001 + 0.08)
        // = 0.624 ≤ 1: reached; at 0.5 % (d = 0.5): 7.708647 · (0.001 +
        // 0.02) = 0.162 ≤ 0.25: reached; at 0.3 % (d = 0.3): 7.708647 ·
        // (0.001 + 0.0072) = 0.0632 ≤ 0.09 still; at 0.1 % (d = 0.1):
        // 7.708647 · (0.001 + 0.0008) = 0.0139 > 0.01: not reached.
        let five = Summary::of(&[100.0, 100.1, 99.9, 100.0, 100.0]).unwrap();
        assert!(reached(&five, 0.02) && reached(&five, 0.003));
        assert!(!reached(&five, 0.001));
        // Noisy runs (CV 10 %) at 3 %: t² · s²/n alone is 7.708647 ·
        // 100/5 = 154 > 9.
        let noisy = Summary::of(&[90.0, 100.0, 110.0, 95.0, 105.0]).unwrap();
        assert!(!reached(&noisy, 0.03));
        assert!(relative_half_width(&noisy) > 0.03);
        let zero = Summary::of(&[0.0; 6]).unwrap();
        assert!(!reached(&zero, 0.5));
    }

    /// A standard normal draw (Box–Muller), from `rng`.
    fn normal(rng: &mut rand::rngs::SmallRng) -> f64 {
        let u1: f64 = rng.random::<f64>().max(1e-300);
        let u2: f64 = rng.random();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Coverage of the interval `x̄_N ± r · x̄_N` around the true mean 1
    /// over `trials` sequences of normal runs with coefficient of
    /// variation `cv`, stopped by `stop` (at most 1,000 runs).
    fn coverage(cv: f64, r: f64, trials: usize, stop: impl Fn(&[f64], &Summary) -> bool) -> f64 {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(41);
        let mut covered = 0;
        for _ in 0..trials {
            let mut v: Vec<f64> = Vec::new();
            loop {
                v.push(1.0 + cv * normal(&mut rng));
                let s = Summary::of(&v).unwrap();
                if stop(&v, &s) || v.len() == 1000 {
                    covered += usize::from((s.mean - 1.0).abs() <= r * s.mean);
                    break;
                }
            }
        }
        covered as f64 / trials as f64
    }

    /// The A/A simulation of issue #41: the same cell run again and
    /// again, stopped by each rule, and how often the interval it stops
    /// with holds the true mean. Three cases where the stop is decided by
    /// the data rather than by the first stage (expected stops at about
    /// 17, 25 and 43 runs). Chow and Robbins' rule stays within 93-97 %;
    /// the naive rule (from n = 2, no guard) falls to about 90-91 %.
    #[test]
    fn sequential_coverage_stays_near_95_percent_where_naive_stopping_does_not() {
        let trials = 4000;
        for (cv, r) in [(0.10, 0.05), (0.05, 0.02), (0.10, 0.03)] {
            let honest = coverage(cv, r, trials, |_, s| reached(s, r));
            let naive = coverage(cv, r, trials, |_, s| {
                s.n >= 2 && relative_half_width(s) <= r
            });
            assert!(
                (0.93..=0.97).contains(&honest),
                "cv {cv}, target {r}: Chow-Robbins coverage {honest}"
            );
            assert!(
                naive < 0.925 && naive < honest - 0.015,
                "cv {cv}, target {r}: naive coverage {naive} (Chow-Robbins {honest})"
            );
        }
    }
}
