//! TPC-C's random generators (TPC-C standard specification revision
//! 5.11): NURand and its C constants (clause 2.1.6), customer last names
//! from syllables (clause 4.3.2.3), a-strings, n-strings and zip codes
//! (clauses 4.3.2.2 and 4.3.2.7), and the keying and think times of an
//! emulated user (clause 5.2.5).
//!
//! Loaded data is deterministic: every table's rows come from a generator
//! seeded by (data seed, table, warehouse, district), so a warehouse's
//! rows can be loaded by any connection in any order and are always the
//! same; a value two tables must agree on (an order's line count) comes
//! from a hash of its key ([`order_line_count`]).

use std::time::Duration;

use bytes::{BufMut, BytesMut};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Seed of everything loaded: the data must not depend on the run.
pub const DATA_SEED: u64 = 0x7bcc_5eed_2010_0511;

/// NURand's `A` for customer last names, customer ids and item ids
/// (clause 2.1.6).
pub const A_C_LAST: i64 = 255;
pub const A_C_ID: i64 = 1023;
pub const A_OL_I_ID: i64 = 8191;

/// The non-uniform random function of clause 2.1.6:
/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`,
/// `random(a, b)` uniform over `a ..= b`, `C` the run's constant for the
/// field ([`CConstants`]).
pub fn nurand(rng: &mut Xoshiro256PlusPlus, a: i64, x: i64, y: i64, c: i64) -> i64 {
    (((rng.random_range(0..=a) | rng.random_range(x..=y)) + c) % (y - x + 1)) + x
}

/// The run-time constants `C` of NURand, one per field (clause 2.1.6):
/// each uniform within `0 ..= A` and the same for every emulated terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CConstants {
    /// For `C_LAST` (`A` = 255).
    pub c_last: i64,
    /// For `C_ID` (`A` = 1023).
    pub c_id: i64,
    /// For `OL_I_ID` (`A` = 8191).
    pub ol_i_id: i64,
}

impl CConstants {
    /// The constants the loader uses (`C_LOAD`), from `seed`.
    pub fn load(seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x10ad);
        CConstants {
            c_last: rng.random_range(0..=A_C_LAST),
            c_id: rng.random_range(0..=A_C_ID),
            ol_i_id: rng.random_range(0..=A_OL_I_ID),
        }
    }

    /// The constants of the measured runs (`C_RUN`), from `seed`: `C_ID`'s
    /// and `OL_I_ID`'s any value, `C_LAST`'s chosen so that its distance
    /// from the loader's, `C_DELTA = |C_RUN - C_LOAD|`, is within
    /// `65 ..= 119` and neither 96 nor 112 (clause 2.1.6.1): the last
    /// names looked up at run time are then not the same skew as those
    /// loaded.
    pub fn run(load: &CConstants, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0c0e_2012);
        let c_last = loop {
            let c = rng.random_range(0..=A_C_LAST);
            if c_delta_ok(load.c_last, c) {
                break c;
            }
        };
        CConstants {
            c_last,
            c_id: rng.random_range(0..=A_C_ID),
            ol_i_id: rng.random_range(0..=A_OL_I_ID),
        }
    }
}

/// Clause 2.1.6.1's rule for the `C_LAST` constants.
pub fn c_delta_ok(c_load: i64, c_run: i64) -> bool {
    let d = (c_run - c_load).abs();
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// The ten syllables of customer last names (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The last name of number `n` (0 ..= 999): the syllables of its three
/// digits, e.g. 371 is PRICALLYOUGHT (clause 4.3.2.3).
pub fn last_name(n: i64) -> String {
    let mut s = String::with_capacity(15);
    push_last_name(n, &mut s);
    s
}

/// Appends [`last_name`] of `n` to `out`.
pub fn push_last_name(n: i64, out: &mut String) {
    debug_assert!((0..=999).contains(&n), "last name number {n}");
    for digit in [n / 100, n / 10 % 10, n % 10] {
        out.push_str(SYLLABLES[digit as usize]);
    }
}

/// The characters of a-strings: letters, digits, space and period (none
/// needs escaping in COPY's text format). Clause 4.3.2.2 asks for a
/// character set of at least 128 characters; 64 are enough for what the
/// strings do here (fill rows to the specification's widths).
const ALPHABET: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .";

/// Appends a random a-string of `min ..= max` characters to `buf`.
pub fn a_string(rng: &mut Xoshiro256PlusPlus, min: usize, max: usize, buf: &mut BytesMut) {
    let len = rng.random_range(min..=max);
    fixed_a_string(rng, len, buf);
}

/// Appends a random a-string of exactly `len` characters to `buf`: ten
/// characters from each 64-bit draw.
pub fn fixed_a_string(rng: &mut Xoshiro256PlusPlus, len: usize, buf: &mut BytesMut) {
    let mut left = len;
    while left > 0 {
        let mut bits: u64 = rng.random();
        for _ in 0..left.min(10) {
            buf.put_u8(ALPHABET[(bits & 63) as usize]);
            bits >>= 6;
        }
        left -= left.min(10);
    }
}

/// Appends an a-string of `min ..= max` characters holding "ORIGINAL" at
/// a random position in one row of ten (clause 4.3.3.1, `I_DATA` and
/// `S_DATA`), else a plain one.
pub fn data_string(rng: &mut Xoshiro256PlusPlus, min: usize, max: usize, buf: &mut BytesMut) {
    let len = rng.random_range(min..=max);
    if rng.random_range(0..10) != 0 {
        return fixed_a_string(rng, len, buf);
    }
    let at = rng.random_range(0..=len - 8);
    fixed_a_string(rng, at, buf);
    buf.put_slice(b"ORIGINAL");
    fixed_a_string(rng, len - at - 8, buf);
}

/// Appends a random n-string (digits) of `len` characters to `buf`.
pub fn n_string(rng: &mut Xoshiro256PlusPlus, len: usize, buf: &mut BytesMut) {
    for _ in 0..len {
        buf.put_u8(b'0' + rng.random_range(0..10u8));
    }
}

/// Appends a zip code: four random digits and `11111` (clause 4.3.2.7).
pub fn zip(rng: &mut Xoshiro256PlusPlus, buf: &mut BytesMut) {
    n_string(rng, 4, buf);
    buf.put_slice(b"11111");
}

/// SplitMix64's finaliser (Steele, Lea, Flood, "Fast splittable
/// pseudorandom number generators", OOPSLA 2014): a well-mixed 64-bit
/// hash of `x`.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The generator of one loaded stream: `table` (a small number naming
/// it), warehouse `w` and district `d` (0 where the table has none).
pub fn stream(table: u64, w: i64, d: i64) -> Xoshiro256PlusPlus {
    let key = mix64(DATA_SEED ^ mix64(table << 48 ^ (w as u64) << 8 ^ d as u64));
    Xoshiro256PlusPlus::seed_from_u64(key)
}

/// The number of lines of loaded order `o` of district `(w, d)`,
/// uniform within `5 ..= 15` (clause 4.3.3.1, `O_OL_CNT`): a hash of the
/// key, so that ORDER and ORDER-LINE agree when loaded separately.
pub fn order_line_count(w: i64, d: i64, o: i64) -> i64 {
    let h = mix64(DATA_SEED ^ 0x0011_ce17 ^ ((w as u64) << 32 | (d as u64) << 16 | o as u64));
    5 + (h % 11) as i64
}

/// Minimum keying time and mean think time of each transaction type, s
/// (clause 5.2.5.7): New-Order, Payment, Order-Status, Delivery,
/// Stock-Level; and isobench's choice for TPC-C++'s Credit-Check, which
/// the specification does not have (Delivery's, a form of few fields).
pub const KEYING_S: [f64; 6] = [18.0, 3.0, 2.0, 2.0, 2.0, 2.0];
pub const THINK_MEAN_S: [f64; 6] = [12.0, 12.0, 10.0, 5.0, 5.0, 5.0];

/// A think time of mean `mean_s`: `-ln(r) * mean`, `r` uniform in
/// `(0, 1]`, cut at ten times the mean (clause 5.2.5.4).
pub fn think_time(rng: &mut Xoshiro256PlusPlus, mean_s: f64) -> Duration {
    let r = 1.0 - rng.random::<f64>();
    Duration::from_secs_f64((-r.ln() * mean_s).min(10.0 * mean_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact distribution of NURand(A, x, y) with constant `c`, by
    /// enumerating every pair of the two uniform draws.
    fn exact(a: i64, x: i64, y: i64, c: i64) -> Vec<f64> {
        let n = (y - x + 1) as usize;
        let mut p = vec![0.0; n];
        let pairs = ((a + 1) * (y - x + 1)) as f64;
        for r in 0..=a {
            for u in x..=y {
                p[((((r | u) + c) % (y - x + 1)) + x - x) as usize] += 1.0 / pairs;
            }
        }
        p
    }

    /// Pearson's chi-square statistic of `counts` against probabilities
    /// `p`.
    fn chi_square(counts: &[u64], p: &[f64]) -> f64 {
        let total: u64 = counts.iter().sum();
        counts
            .iter()
            .zip(p)
            .filter(|(_, p)| **p > 0.0)
            .map(|(&o, &p)| {
                let e = p * total as f64;
                (o as f64 - e).powi(2) / e
            })
            .sum()
    }

    /// NURand(255, 0, 999) against its exact distribution: the draws fit
    /// it (chi-square within its 99.9 % quantile for 999 degrees of
    /// freedom, about 1,143) and not the uniform distribution, nor the
    /// distribution without C or with AND instead of OR.
    #[test]
    fn nurand_follows_its_exact_distribution() {
        let (a, x, y, c) = (A_C_LAST, 0, 999, 173);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut counts = vec![0u64; 1000];
        for _ in 0..400_000 {
            let v = nurand(&mut rng, a, x, y, c);
            assert!((x..=y).contains(&v));
            counts[(v - x) as usize] += 1;
        }
        let fit = chi_square(&counts, &exact(a, x, y, c));
        assert!(
            fit < 1_143.0,
            "chi-square {fit} against the exact distribution"
        );
        let uniform = vec![1.0 / 1000.0; 1000];
        assert!(chi_square(&counts, &uniform) > 20_000.0, "too uniform");
        assert!(
            chi_square(&counts, &exact(a, x, y, 0)) > 20_000.0,
            "C ignored?"
        );
        // With AND the values would concentrate on few bit patterns.
        let mut and = vec![0.0; 1000];
        for r in 0..=a {
            for u in x..=y {
                and[(((r & u) + c) % 1000) as usize] += 1.0;
            }
        }
        let total: f64 = and.iter().sum();
        let and: Vec<f64> = and.iter().map(|v| v / total).collect();
        assert!(chi_square(&counts, &and) > 20_000.0);
    }

    /// NURand(1023, 1, 3000) and NURand(8191, 1, 100000) stay in range
    /// and are skewed: the most frequent customer id is drawn several
    /// times as often as the average one.
    #[test]
    fn nurand_ranges_and_skew() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut counts = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut rng, A_C_ID, 1, 3000, 259);
            counts[v as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        let max = *counts.iter().max().unwrap() as f64;
        assert!(max > 3.0 * 100.0, "max {max} vs mean 100");
        for _ in 0..100_000 {
            let v = nurand(&mut rng, A_OL_I_ID, 1, 100_000, 7911);
            assert!((1..=100_000).contains(&v));
        }
    }

    /// Clause 2.1.6.1: whatever the loader's constant, the run's C_LAST
    /// constant is 65 to 119 away from it, never 96 or 112.
    #[test]
    fn run_constant_keeps_its_distance_from_the_load_constant() {
        for seed in 0..2_000 {
            let load = CConstants::load(seed);
            let run = CConstants::run(&load, seed);
            let d = (run.c_last - load.c_last).abs();
            assert!(
                (65..=119).contains(&d) && d != 96 && d != 112,
                "{load:?} {run:?}"
            );
            assert!((0..=A_C_LAST).contains(&run.c_last));
            assert!((0..=A_C_ID).contains(&run.c_id));
            assert!((0..=A_OL_I_ID).contains(&run.ol_i_id));
        }
        assert!(c_delta_ok(0, 65) && c_delta_ok(200, 81));
        assert!(!c_delta_ok(0, 96) && !c_delta_ok(120, 8) && !c_delta_ok(10, 74));
        assert!(!c_delta_ok(100, 164) && !c_delta_ok(5, 125));
    }

    #[test]
    fn last_names_are_three_syllables() {
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(999), "EINGEINGEING");
        assert_eq!(last_name(40), "BARPRESBAR");
        // Every number gives a distinct name of 9 to 15 letters.
        let names: std::collections::BTreeSet<String> = (0..1000).map(last_name).collect();
        assert_eq!(names.len(), 1000);
        assert!(names.iter().all(|n| (9..=15).contains(&n.len())));
    }

    #[test]
    fn strings_have_their_lengths_and_original_in_one_in_ten() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let mut buf = BytesMut::new();
        let mut original = 0;
        for _ in 0..10_000 {
            buf.clear();
            data_string(&mut rng, 26, 50, &mut buf);
            assert!((26..=50).contains(&buf.len()));
            assert!(
                buf.iter()
                    .all(|b| ALPHABET.contains(b) || b"ORIGINAL".contains(b))
            );
            original += usize::from(buf.windows(8).any(|w| w == b"ORIGINAL"));
        }
        assert!((900..1_100).contains(&original), "{original}");
        buf.clear();
        zip(&mut rng, &mut buf);
        assert_eq!(buf.len(), 9);
        assert!(buf.ends_with(b"11111") && buf.iter().all(u8::is_ascii_digit));
    }

    #[test]
    fn order_line_counts_are_uniform_5_to_15_and_fixed_by_key() {
        let mut seen = [0u32; 16];
        for o in 1..=30_000 {
            let n = order_line_count(1, o % 10 + 1, o);
            assert_eq!(n, order_line_count(1, o % 10 + 1, o));
            seen[n as usize] += 1;
        }
        assert!(seen[..5].iter().all(|&c| c == 0));
        assert!(
            seen[5..].iter().all(|&c| (2_400..3_100).contains(&c)),
            "{seen:?}"
        );
    }

    #[test]
    fn think_times_have_their_mean_and_cut() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let n = 100_000;
        let total: f64 = (0..n)
            .map(|_| think_time(&mut rng, 12.0).as_secs_f64())
            .sum();
        let mean = total / n as f64;
        // The cut at 10x the mean takes e^-10 of the mass: the mean stays 12.
        assert!((11.8..12.2).contains(&mean), "{mean}");
        assert!((0..1000).all(|_| think_time(&mut rng, 5.0) <= Duration::from_secs(50)));
    }
}
