//! A proportion with its exact binomial interval: how often isobench's
//! verdict called an A/A comparison (the same cell against itself)
//! significant, `isobench calibrate`'s false-positive rate.
//!
//! The interval is Clopper and Pearson's (C. J. Clopper and E. S.
//! Pearson, "The use of confidence or fiducial limits illustrated in the
//! case of the binomial", Biometrika 26 (1934) 404-413), from the beta
//! distribution's quantiles: for x successes in n trials,
//! `[B(α/2; x, n - x + 1), B(1 - α/2; x + 1, n - x)]`, with 0 as the
//! lower end when x = 0 and 1 as the upper end when x = n. It covers at
//! least 95 % for every true proportion (it is conservative).

use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF};

use super::CONFIDENCE;

/// `x` of `n` with its 95 % Clopper–Pearson interval, as fractions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Proportion {
    pub x: u64,
    pub n: u64,
    /// `x / n`.
    pub rate: f64,
    /// Lower end of the 95 % interval.
    pub low: f64,
    /// Upper end of the 95 % interval.
    pub high: f64,
}

impl Proportion {
    /// `x` of `n`; `None` when `n` is 0 or `x > n`.
    pub fn of(x: u64, n: u64) -> Option<Proportion> {
        if n == 0 || x > n {
            return None;
        }
        let a = 1.0 - CONFIDENCE;
        let (xf, nf) = (x as f64, n as f64);
        let low = if x == 0 {
            0.0
        } else {
            Beta::new(xf, nf - xf + 1.0).ok()?.inverse_cdf(a / 2.0)
        };
        let high = if x == n {
            1.0
        } else {
            Beta::new(xf + 1.0, nf - xf)
                .ok()?
                .inverse_cdf(1.0 - a / 2.0)
        };
        Some(Proportion {
            x,
            n,
            rate: xf / nf,
            low,
            high,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: SciPy 1.17 `beta.ppf` (an independent
    /// implementation); 0 of 20: upper end 1 - 0.025^(1/20) = 0.168433
    /// (closed form when x = 0); 1 of 20: [0.001265, 0.248733];
    /// 5 of 100: [0.016432, 0.112835].
    #[test]
    fn clopper_pearson_intervals() {
        let close = |a: f64, b: f64| (a - b).abs() < 2e-6;
        let p = Proportion::of(0, 20).unwrap();
        assert_eq!((p.rate, p.low), (0.0, 0.0));
        assert!(close(p.high, 1.0 - 0.025f64.powf(1.0 / 20.0)), "{p:?}");
        assert!(close(p.high, 0.168433), "{p:?}");
        let p = Proportion::of(1, 20).unwrap();
        assert!(close(p.low, 0.001265) && close(p.high, 0.248733), "{p:?}");
        let p = Proportion::of(5, 100).unwrap();
        assert!(close(p.low, 0.016432) && close(p.high, 0.112835), "{p:?}");
        let p = Proportion::of(20, 20).unwrap();
        assert_eq!(p.high, 1.0);
        assert_eq!(Proportion::of(1, 0), None);
        assert_eq!(Proportion::of(3, 2), None);
    }
}
