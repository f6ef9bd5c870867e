//! Rates of rare events with exact intervals, and the exact test of two
//! rates: how often an isolation level broke its promise, per committed
//! transaction, and whether one build (or setting) breaks it more often
//! than another.
//!
//! Events (violations) over an exposure (committed transactions checked)
//! are modelled as Poisson counts; with one violation in about 500,000
//! transactions the binomial and the Poisson model give the same figures.
//!
//! - The interval is Garwood's exact Poisson interval (F. Garwood, "Fiducial
//!   limits for the Poisson distribution", Biometrika 28 (1936) 437-442):
//!   for `k` events, the mean count lies in
//!   `[χ²(α/2; 2k) / 2, χ²(1 - α/2; 2k + 2) / 2]` (0 as the lower end when
//!   `k` = 0), divided by the exposure for a rate. It covers at least 95 %
//!   for every true rate. With no event the upper end is
//!   `χ²(0.975; 2) / 2 = ln 40 ≈ 3.69` over the exposure: the bound a hunt
//!   that found nothing reports.
//! - Two rates are compared by the conditional (exact) binomial test
//!   (J. Przyborowski and H. Wileński, "Homogeneity of results in testing
//!   samples from Poisson series", Biometrika 31 (1940) 313-323; K. J.
//!   Rothman and S. Greenland, "Modern Epidemiology", 3rd ed., chapter 14):
//!   given `k1 + k2` events, under equal rates `k1` is binomial with
//!   `p = n1 / (n1 + n2)`; the two-sided p-value sums the probabilities of
//!   the outcomes no more likely than the one observed (the minimum
//!   likelihood method). The verdict is "fewer" or "more" at p < 0.05.
//! - When it cannot tell, [`RateComparison::needed`] says how many
//!   transactions a verdict would take if the rates stayed as observed:
//!   the smallest multiple of both exposures whose expected counts the
//!   same test calls significant.

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete};

use super::CONFIDENCE;

/// `events` in `exposure` with the exact 95 % interval of the rate, per
/// unit of exposure (per committed transaction).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    pub events: u64,
    pub exposure: u64,
    /// `events / exposure`.
    pub rate: f64,
    /// Lower end of the 95 % interval (0 when no event).
    pub low: f64,
    /// Upper end of the 95 % interval.
    pub high: f64,
}

impl Rate {
    /// `events` in `exposure`; `None` when `exposure` is 0 (nothing was
    /// checked, nothing can be said).
    pub fn of(events: u64, exposure: u64) -> Option<Rate> {
        if exposure == 0 {
            return None;
        }
        let (low, high) = poisson_interval(events);
        let n = exposure as f64;
        Some(Rate {
            events,
            exposure,
            rate: events as f64 / n,
            low: low / n,
            high: high / n,
        })
    }

    /// The rate and its interval per million units: `(rate, low, high)`.
    pub fn per_million(&self) -> (f64, f64, f64) {
        (self.rate * 1e6, self.low * 1e6, self.high * 1e6)
    }
}

/// Garwood's exact 95 % interval of a Poisson mean, given `k` events
/// (module docs).
pub fn poisson_interval(k: u64) -> (f64, f64) {
    let a = 1.0 - CONFIDENCE;
    let k = k as f64;
    let low = if k == 0.0 {
        0.0
    } else {
        chi2_quantile(2.0 * k, a / 2.0) / 2.0
    };
    let high = chi2_quantile(2.0 * k + 2.0, 1.0 - a / 2.0) / 2.0;
    (low, high)
}

fn chi2_quantile(freedom: f64, p: f64) -> f64 {
    ChiSquared::new(freedom)
        .expect("positive degrees of freedom")
        .inverse_cdf(p)
}

/// What the test of two rates says of the first against the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateVerdict {
    /// The first rate is significantly lower.
    Fewer,
    /// The first rate is significantly higher.
    More,
    /// No significant difference at these counts.
    CannotTell,
}

impl RateVerdict {
    pub fn name(self) -> &'static str {
        match self {
            RateVerdict::Fewer => "fewer",
            RateVerdict::More => "more",
            RateVerdict::CannotTell => "cannot tell",
        }
    }
}

/// The exact test of rate `a` against rate `b` (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateComparison {
    /// Two-sided p-value of equal rates.
    pub p: f64,
    pub verdict: RateVerdict,
    /// When the verdict is "cannot tell": the transactions (both sides
    /// together) a verdict would take at the observed rates; `None` when
    /// a verdict was reached, or none is in sight: the rates are equal as
    /// observed (both sides found none, for example) or a verdict would
    /// take more than [`MAX_EXPECTED_EVENTS`] events.
    pub needed: Option<u64>,
}

/// Compares `a` with `b` by the conditional binomial test.
pub fn compare_rates(a: &Rate, b: &Rate) -> RateComparison {
    let p = exact_p(a.events, b.events, a.exposure, b.exposure);
    let verdict = if p < 1.0 - CONFIDENCE {
        if a.rate < b.rate {
            RateVerdict::Fewer
        } else {
            RateVerdict::More
        }
    } else {
        RateVerdict::CannotTell
    };
    let needed = (verdict == RateVerdict::CannotTell)
        .then(|| needed(a, b))
        .flatten();
    RateComparison { p, verdict, needed }
}

/// Two-sided p-value of `k1` of `k1 + k2` events on side 1 when side 1
/// holds `n1 / (n1 + n2)` of the exposure.
fn exact_p(k1: u64, k2: u64, n1: u64, n2: u64) -> f64 {
    let k = k1 + k2;
    if k == 0 {
        return 1.0;
    }
    let share = n1 as f64 / (n1 as f64 + n2 as f64);
    let b = Binomial::new(share, k).expect("a share in [0, 1]");
    let observed = b.pmf(k1);
    // Outcomes no more likely than the observed one (with a relative
    // tolerance for rounding, as R's binom.test).
    let tolerance = 1.0 + 1e-7;
    let p: f64 = (0..=k)
        .map(|x| b.pmf(x))
        .filter(|&px| px <= observed * tolerance)
        .sum();
    p.min(1.0)
}

/// The most events [`RateComparison::needed`] projects: rates so close
/// that a verdict needs more are "not in sight".
pub const MAX_EXPECTED_EVENTS: f64 = 10_000.0;

/// The transactions a verdict would need if the rates stayed as observed
/// (see [`RateComparison::needed`]).
fn needed(a: &Rate, b: &Rate) -> Option<u64> {
    if a.rate == b.rate {
        return None;
    }
    let events = |f: f64| (a.events + b.events) as f64 * f;
    let significant = |f: f64| {
        let k1 = (a.rate * a.exposure as f64 * f).round() as u64;
        let k2 = (b.rate * b.exposure as f64 * f).round() as u64;
        exact_p(k1, k2, a.exposure, b.exposure) < 1.0 - CONFIDENCE
    };
    // Double until significant, then bisect the factor.
    let (mut low, mut high) = (1.0, 2.0);
    while !significant(high) {
        low = high;
        high *= 2.0;
        if events(high) > MAX_EXPECTED_EVENTS {
            return None;
        }
    }
    for _ in 0..40 {
        let mid = (low + high) / 2.0;
        if significant(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    Some(((a.exposure + b.exposure) as f64 * high).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-12)
    }

    /// Garwood's limits against published tables (e.g. the CDC's and
    /// Ulm's exact Poisson limits): k = 0: [0, 3.689]; k = 1: [0.0253,
    /// 5.572]; k = 10: [4.795, 18.39].
    #[test]
    fn garwood_limits_match_the_tables() {
        let (l, h) = poisson_interval(0);
        assert_eq!(l, 0.0);
        assert!(close(h, 3.6889, 1e-3), "{h}");
        let (l, h) = poisson_interval(1);
        assert!(close(l, 0.02532, 1e-3), "{l}");
        assert!(close(h, 5.5716, 1e-3), "{h}");
        let (l, h) = poisson_interval(10);
        assert!(close(l, 4.7954, 1e-3), "{l}");
        assert!(close(h, 18.390, 1e-3), "{h}");
    }

    #[test]
    fn a_rate_per_million_with_its_interval() {
        let r = Rate::of(1, 138_578).unwrap();
        let (rate, low, high) = r.per_million();
        assert!(close(rate, 7.216, 1e-3), "{rate}");
        assert!(low < rate && rate < high);
        assert!(close(high, 5.5716e6 / 138_578.0, 1e-3), "{high}");
        assert!(Rate::of(0, 0).is_none());
        // Nothing found in 2.1 million: at most about 1.76 per million.
        let r = Rate::of(0, 2_100_000).unwrap();
        assert!(
            close(r.per_million().2, 1.7566, 1e-3),
            "{:?}",
            r.per_million()
        );
    }

    /// The example: 0 in 2.1 M against 7 in 2.0 M. By hand: given
    /// 7 events, each falls on side A with p = 2.1 / 4.1; P(0 of 7) =
    /// (2.0/4.1)^7 = 0.00658, and every other outcome is more likely
    /// (P(7 of 7) = (2.1/4.1)^7 = 0.00929), so p = 0.00658.
    #[test]
    fn zero_against_seven_is_fewer_with_the_exact_p() {
        let a = Rate::of(0, 2_100_000).unwrap();
        let b = Rate::of(7, 2_000_000).unwrap();
        let c = compare_rates(&a, &b);
        assert_eq!(c.verdict, RateVerdict::Fewer);
        let expected = (2.0f64 / 4.1).powi(7);
        assert!(close(c.p, expected, 1e-6), "{} vs {expected}", c.p);
        assert_eq!(c.needed, None);
        assert_eq!(compare_rates(&b, &a).verdict, RateVerdict::More);
    }

    #[test]
    fn one_against_one_cannot_tell_and_says_how_many_it_would_take() {
        let a = Rate::of(1, 490_000).unwrap();
        let b = Rate::of(1, 489_000).unwrap();
        let c = compare_rates(&a, &b);
        assert_eq!(c.verdict, RateVerdict::CannotTell);
        assert!(close(c.p, 1.0, 1e-9), "{}", c.p);
        // Rates within 0.2 %: no verdict in sight.
        assert_eq!(c.needed, None);
        let a = Rate::of(1, 500_000).unwrap();
        let b = Rate::of(4, 500_000).unwrap();
        let c = compare_rates(&a, &b);
        assert_eq!(c.verdict, RateVerdict::CannotTell);
        let n = c.needed.unwrap();
        // At 2 and 8 per million, 1 vs 4 scaled by f is significant from
        // about 1 vs 8 (p = 0.039): about twice the exposure.
        assert!((1_500_000..=4_000_000).contains(&n), "{n}");
        // None found on either side: no verdict in sight.
        let z = Rate::of(0, 1_000_000).unwrap();
        assert_eq!(compare_rates(&z, &z).needed, None);
    }

    /// The p-value is a probability and does not depend on which side is
    /// first.
    #[test]
    fn the_test_is_symmetric() {
        for (k1, k2, n1, n2) in [(3, 9, 1_000, 1_500), (0, 5, 10, 10), (12, 12, 7, 3)] {
            let a = Rate::of(k1, n1).unwrap();
            let b = Rate::of(k2, n2).unwrap();
            let (ab, ba) = (compare_rates(&a, &b), compare_rates(&b, &a));
            assert!(close(ab.p, ba.p, 1e-9), "{ab:?} {ba:?}");
            assert!((0.0..=1.0).contains(&ab.p));
        }
    }
}
