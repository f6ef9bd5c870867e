//! PostgreSQL's pseudo-random number generator (`src/common/pg_prng.c`)
//! and the random draws pgbench builds on it (`src/bin/pgbench/pgbench.c`:
//! `getrand`, `getExponentialRand`, `getGaussianRand`, `getZipfianRand`,
//! `permute`).
//!
//! Why a copy rather than the `rand` crate: a pgbench script run with
//! `--random-seed N` must draw the same numbers under isobench as under
//! pgbench, so every step below is bit-identical to PostgreSQL 15-18: the
//! generator is xoroshiro128** 1.0 (Blackman and Vigna,
//! <https://prng.di.unimi.it/>), its 128-bit state filled from a 64-bit
//! seed by two splitmix64 steps; ranges use bitmask rejection; doubles
//! take the top 52 bits. The floating-point steps call the same libm
//! functions (`exp`, `log`, `pow`, `sin`, `sqrt`) in the same order as
//! the C code, so results match pgbench built against the same libm.
//!
//! How pgbench seeds (for `-c 1`): `base = seed(S)` from `--random-seed S`;
//! the client's generator is `seed(base.next_u64())`; then the
//! `default_seed` variable is `base.next_u64()` as a signed integer.

use std::f64::consts::PI;

/// Smallest parameter of `random_gaussian` (pgbench's `MIN_GAUSSIAN_PARAM`).
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// Smallest parameter of `random_zipfian` (`MIN_ZIPFIAN_PARAM`).
pub const MIN_ZIPFIAN_PARAM: f64 = 1.001;
/// Largest parameter of `random_zipfian` (`MAX_ZIPFIAN_PARAM`).
pub const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// A xoroshiro128** generator state (pg_prng_state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

/// One splitmix64 step: advances `state` and returns the next output.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut v = *state;
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

impl Prng {
    /// The generator seeded from `seed` (pg_prng_seed): two splitmix64
    /// outputs; an all-zero state (a fixed point) is replaced by Knuth's
    /// LCG constants, as PostgreSQL does.
    pub fn seed(seed: u64) -> Prng {
        let mut s = seed;
        let s0 = splitmix64(&mut s);
        let s1 = splitmix64(&mut s);
        if s0 == 0 && s1 == 0 {
            Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            }
        } else {
            Prng { s0, s1 }
        }
    }

    /// The next 64 uniformly distributed bits (pg_prng_uint64).
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// Uniform in `[min, max]` (pg_prng_uint64_range); `min` when the
    /// range is empty. Draws the top bits of the next outputs until one
    /// falls in range (fewer than two draws on average).
    pub(crate) fn u64_range(&mut self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        let range = max - min;
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return min + v;
            }
        }
    }

    /// Uniform in `[0, 1)` with 52 random bits (pg_prng_double).
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 / (1u64 << 52) as f64
    }

    /// Standard normal (mean 0, standard deviation 1) by the Box-Muller
    /// transform over two draws in `(0, 1]` (pg_prng_double_normal).
    pub(crate) fn double_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).sin()
    }

    /// pgbench's `random(min, max)`: uniform in `[min, max]` (getrand).
    /// The caller checks `min <= max` and that `max - min + 1` fits an i64.
    pub fn random(&mut self, min: i64, max: i64) -> i64 {
        let span = max.wrapping_sub(min) as u64;
        min.wrapping_add(self.u64_range(0, span) as i64)
    }

    /// pgbench's `random_exponential(min, max, parameter)`
    /// (getExponentialRand): a truncated exponential over `[min, max]`
    /// whose density at `max` is `exp(-parameter)` times that at `min`.
    /// The caller checks `parameter > 0`.
    pub fn exponential(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        let cut = (-parameter).exp();
        let uniform = 1.0 - self.double();
        let rand = -(cut + (1.0 - cut) * uniform).ln() / parameter;
        scale_to(min, max, rand)
    }

    /// pgbench's `random_gaussian(min, max, parameter)` (getGaussianRand):
    /// a normal draw, redrawn until within `[-parameter, parameter)`,
    /// mapped linearly onto `[min, max]`, so the mean is the middle of the
    /// range and the standard deviation `(max - min + 1) / (2 parameter)`.
    /// The caller checks `parameter >= MIN_GAUSSIAN_PARAM`.
    pub fn gaussian(&mut self, min: i64, max: i64, parameter: f64) -> i64 {
        let stdev = loop {
            let z = self.double_normal();
            if !(z < -parameter || z >= parameter) {
                break z;
            }
        };
        let rand = (stdev + parameter) / (parameter * 2.0);
        scale_to(min, max, rand)
    }

    /// pgbench's `random_zipfian(min, max, s)` (getZipfianRand): value
    /// `min + k - 1` with probability proportional to `1 / k^s`, drawn by
    /// rejection (L. Devroye, "Non-Uniform Random Variate Generation",
    /// Springer 1986, pp. 550-551). The caller checks
    /// `MIN_ZIPFIAN_PARAM <= s <= MAX_ZIPFIAN_PARAM`.
    pub fn zipfian(&mut self, min: i64, max: i64, s: f64) -> i64 {
        let n = max.wrapping_sub(min).wrapping_add(1);
        min.wrapping_sub(1)
            .wrapping_add(self.iterative_zipfian(n, s))
    }

    fn iterative_zipfian(&mut self, n: i64, s: f64) -> i64 {
        let b = 2.0f64.powf(s - 1.0);
        if n <= 1 {
            return 1;
        }
        loop {
            let u = self.double();
            let v = self.double();
            let x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                return x as i64;
            }
        }
    }
}

/// `min + (i64)((max - min + 1) * rand)` for `rand` in `[0, 1)`, the last
/// step of pgbench's exponential and gaussian draws.
fn scale_to(min: i64, max: i64, rand: f64) -> i64 {
    let width = max.wrapping_sub(min).wrapping_add(1) as f64;
    min.wrapping_add((width * rand) as i64)
}

/// pgbench's `permute(i, size, seed)`: the position of `i mod size` in a
/// pseudorandom permutation of `[0, size)` chosen by `seed`; 0 when
/// `size < 2`. Six rounds of an odd multiply, xor and rotate on
/// overlapping lower and upper power-of-two halves, then a random offset,
/// with the round constants drawn from `Prng::seed(seed)`. The caller
/// checks `size > 0`.
pub fn permute(val: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut rng = Prng::seed(seed as u64);
    let size = size as u64;
    let mut v = (val as u64) % size;
    // Work modulo the largest power of two <= size.
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (bits - 1))
    };
    for _ in 0..6 {
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }
        let r = rng.u64_range(0, size - 1);
        v = v.wrapping_add(r) % size;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by pgbench 15.18 and 18.6 with `--random-seed 42 -c 1`:
    /// `debug(:default_seed)` and the first `random(1, 1000000)`.
    #[test]
    fn seeding_matches_pgbench() {
        let mut base = Prng::seed(42);
        let mut client = Prng::seed(base.next_u64());
        assert_eq!(base.next_u64() as i64, 4306334408478191133);
        assert_eq!(client.random(1, 1_000_000), 668251);
    }

    #[test]
    fn xoroshiro_step_follows_the_reference() {
        // Reference algorithm by hand: result = rotl(s0 * 5, 7) * 9.
        let mut g = Prng { s0: 1, s1: 2 };
        assert_eq!(g.next_u64(), 5760);
        // s0' = rotl(1, 24) ^ 3 ^ (3 << 16); s1' = rotl(3, 37).
        assert_eq!(g.s0, (1 << 24) ^ 3 ^ (3 << 16));
        assert_eq!(g.s1, 3u64 << 37);
    }

    #[test]
    fn splitmix_first_output_of_zero_seed() {
        // splitmix64 from state 0: the widely published first output.
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn ranges_stay_in_bounds_and_cover_them() {
        let mut g = Prng::seed(7);
        let mut seen = [false; 6];
        for _ in 0..1000 {
            let v = g.random(-2, 3);
            assert!((-2..=3).contains(&v), "{v}");
            seen[(v + 2) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(g.u64_range(5, 5), 5);
        assert_eq!(g.u64_range(9, 3), 9, "an empty range gives its minimum");
        for _ in 0..1000 {
            let d = g.double();
            assert!((0.0..1.0).contains(&d));
        }
    }

    #[test]
    fn distributions_have_the_documented_shape() {
        let mut g = Prng::seed(1);
        let n = 20_000;
        // Gaussian over [1, 100] with parameter 5: mean 50.5, sd 100/10.
        let xs: Vec<f64> = (0..n).map(|_| g.gaussian(1, 100, 5.0) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - 50.5).abs() < 0.3, "gaussian mean {mean}");
        assert!((sd - 10.0).abs() < 0.3, "gaussian sd {sd}");
        // Exponential over [0, 999] with parameter 3: x = floor(1000 r)
        // with r of density ~ e^(-3r) on [0, 1), so
        // P(x < k) = (1 - e^(-3k/1000)) / (1 - e^-3); k = 231 gives ~0.5263.
        let k = 231;
        let below = (0..n).filter(|_| g.exponential(0, 999, 3.0) < k).count();
        let p = below as f64 / n as f64;
        let want = (1.0 - (-3.0 * k as f64 / 1000.0).exp()) / (1.0 - (-3f64).exp());
        assert!((p - want).abs() < 0.015, "{p} vs {want}");
        // Zipfian s = 2 over [1, 1000]: P(1) = 1 / H(1000, 2) ~ 0.6086.
        let h: f64 = (1..=1000).map(|k| 1.0 / (k as f64).powi(2)).sum();
        let ones = (0..n).filter(|_| g.zipfian(1, 1000, 2.0) == 1).count();
        let p = ones as f64 / n as f64;
        assert!((p - 1.0 / h).abs() < 0.015, "{p}");
    }

    #[test]
    fn permute_is_a_bijection_for_every_small_size() {
        for size in 1..=67i64 {
            let mut seen = vec![false; size as usize];
            for i in 0..size {
                let p = permute(i, size, 12345);
                assert!((0..size).contains(&p), "permute({i}, {size}) = {p}");
                assert!(!seen[p as usize], "permute(_, {size}) repeats {p}");
                seen[p as usize] = true;
            }
        }
        // Inputs are taken modulo size (negative ones as unsigned).
        assert_eq!(permute(7 + 10, 10, 3), permute(7, 10, 3));
        assert_eq!(permute(-1, 10, 3), permute((u64::MAX % 10) as i64, 10, 3));
        // Different seeds give different permutations.
        let a: Vec<i64> = (0..20).map(|i| permute(i, 20, 1)).collect();
        let b: Vec<i64> = (0..20).map(|i| permute(i, 20, 2)).collect();
        assert_ne!(a, b);
    }
}
