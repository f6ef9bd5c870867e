//! Request distributions of the standard key-value and OLTP benchmarks,
//! for any workload to draw keys from: YCSB's zipfian, scrambled
//! zipfian, latest and hotspot generators, and sysbench's `special`,
//! `gaussian` and `pareto` distributions.
//!
//! Sources:
//! - J. Gray, P. Sundaresan, S. Englert, K. Baclawski, P. J. Weinberger,
//!   "Quickly Generating Billion-Record Synthetic Databases", SIGMOD 1994
//!   (the zipfian sampler YCSB uses).
//! - YCSB's core generators (`site.ycsb.generator`: `ZipfianGenerator`,
//!   `ScrambledZipfianGenerator`, `SkewedLatestGenerator`,
//!   `HotspotIntegerGenerator`; `site.ycsb.Utils.fnvhash64`), and
//!   B. F. Cooper et al., "Benchmarking Cloud Serving Systems with YCSB",
//!   SoCC 2010, section 4.1.
//! - sysbench 1.0.20, `src/sb_rand.c` (`sb_rand_special`,
//!   `sb_rand_gaussian`, `sb_rand_pareto`, `sb_rand_uniform`).
//!
//! Every generator draws from a caller's [`rand::Rng`], so a workload
//! client's seeded generator makes its inputs reproducible; none holds a
//! lock or shared state.

use rand::{Rng, RngExt};

/// The zipfian constant YCSB uses everywhere (`ZIPFIAN_CONSTANT`).
pub const YCSB_ZIPFIAN_CONSTANT: f64 = 0.99;

/// Items of the zipfian distribution behind YCSB's scrambled zipfian
/// (`ScrambledZipfianGenerator.ITEM_COUNT`, 10^16), and its zeta at
/// constant 0.99 (`ZETAN`), so that no generator sums 10^16 terms.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000_000_000;
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// FNV-1 offset basis and prime, 64 bits (Fowler, Noll, Vo).
const FNV_OFFSET_BASIS_64: u64 = 0xCBF2_9CE4_8422_2325;
const FNV_PRIME_64: u64 = 1_099_511_628_211;

/// YCSB's `Utils.fnvhash64`: FNV-1 over the 8 bytes of `val`, least
/// significant first, as a signed 64-bit value made non-negative
/// (`Math.abs`, which leaves `i64::MIN` negative, as Java does).
pub fn fnv_hash64(val: i64) -> i64 {
    let mut hash = FNV_OFFSET_BASIS_64 as i64;
    let mut v = val;
    for _ in 0..8 {
        let octet = v & 0xff;
        v >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(FNV_PRIME_64 as i64);
    }
    hash.wrapping_abs()
}

/// ζ(n, θ) = Σ_{i=1..n} 1 / i^θ, the normalising constant of a zipfian
/// distribution over `n` items.
pub fn zeta(n: u64, theta: f64) -> f64 {
    zeta_from(0, n, theta, 0.0)
}

/// ζ(n, θ) computed on from ζ(`from`, θ) = `sum`.
fn zeta_from(from: u64, n: u64, theta: f64, sum: f64) -> f64 {
    (from..n).fold(sum, |s, i| s + 1.0 / ((i + 1) as f64).powf(theta))
}

/// A zipfian distribution over items `0 .. items` (item 0 the most
/// popular): P(i) = (1 / (i + 1)^θ) / ζ(items, θ), sampled by Gray et
/// al.'s method in O(1) per draw after an O(items) ζ (exact for items 0
/// and 1, an approximation of the tail beyond them, as YCSB's).
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
    /// 1 + 0.5^θ: below it (times ζ) the draw is item 1.
    second: f64,
}

impl Zipfian {
    /// Over `items` (≥ 1) items with constant `theta` (0 < θ < 1; YCSB:
    /// 0.99). Computes ζ: O(items).
    pub fn new(items: u64, theta: f64) -> Self {
        Self::with_zeta(items, theta, zeta(items, theta))
    }

    /// Over `items` items with a precomputed ζ(items, θ) = `zetan`.
    pub fn with_zeta(items: u64, theta: f64, zetan: f64) -> Self {
        assert!(items >= 1, "a zipfian distribution needs an item");
        assert!(theta > 0.0 && theta < 1.0, "zipfian constant {theta}");
        let zeta2 = zeta(2, theta);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2,
            eta: 0.0,
            second: 1.0 + 0.5f64.powf(theta),
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    /// Grows the distribution to `items` items, adding the new terms to ζ
    /// (O(items - old)), as YCSB's generator does when asked for more
    /// items. Unlike YCSB, η is recomputed for the new count as well
    /// (YCSB keeps the η of the count it was built with). Never shrinks.
    pub fn grow(&mut self, items: u64) {
        if items <= self.items {
            return;
        }
        self.zetan = zeta_from(self.items, items, self.theta, self.zetan);
        self.items = items;
        self.eta = self.eta_for(items);
    }

    /// The probability of item `i` (0-based) under the distribution the
    /// sampler approximates.
    pub fn probability(&self, i: u64) -> f64 {
        if i >= self.items {
            return 0.0;
        }
        1.0 / ((i + 1) as f64).powf(self.theta) / self.zetan
    }

    /// One item, `0 .. items`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.second || self.items < 3 {
            return 1.min(self.items - 1);
        }
        let v = self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (v as u64).min(self.items - 1)
    }
}

/// YCSB's scrambled zipfian over `min ..= max`: a zipfian draw over
/// 10^16 items (constant 0.99, ζ precomputed), hashed with FNV-1 and
/// folded into the range, so the popular items are scattered over the
/// key space instead of clustered at its start. Item `i`'s popularity
/// rank is that of the zipfian item whose hash lands on it.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: u64,
    count: u64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// Over `min ..= max`.
    pub fn new(min: u64, max: u64) -> Self {
        assert!(max >= min, "scrambled zipfian over {min}..={max}");
        ScrambledZipfian {
            min,
            count: max - min + 1,
            // YCSB builds it over 0 ..= ITEM_COUNT: ITEM_COUNT + 1 items.
            zipf: Zipfian::with_zeta(
                SCRAMBLED_ITEM_COUNT + 1,
                YCSB_ZIPFIAN_CONSTANT,
                SCRAMBLED_ZETAN,
            ),
        }
    }

    /// Where zipfian item `i` (0 the most popular) lands in the range.
    pub fn slot_of(&self, i: u64) -> u64 {
        self.min + (fnv_hash64(i as i64).rem_euclid(self.count as i64)) as u64
    }

    /// One item, `min ..= max`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.slot_of(self.zipf.sample(rng))
    }
}

/// YCSB's "latest" (`SkewedLatestGenerator`): a zipfian over the distance
/// from the newest item, so the most recently inserted items are the
/// most popular. The newest item moves as items are inserted; the
/// zipfian grows with it (ζ extended incrementally).
///
/// YCSB draws `max - zipf(max)` over `max` items, so item 0 is never
/// drawn; here the zipfian spans `max + 1` items, so every item `0 ..=
/// max` can be.
#[derive(Debug, Clone)]
pub struct Latest {
    zipf: Zipfian,
}

impl Latest {
    /// For a newest item of at least `max`; grows as needed later.
    /// Computes ζ(max + 1): O(max).
    pub fn new(max: u64) -> Self {
        Self::with_zeta(max, zeta(max + 1, YCSB_ZIPFIAN_CONSTANT))
    }

    /// [`Latest::new`] with ζ(max + 1, 0.99) = `zetan` computed once
    /// elsewhere (clients of one workload share it).
    pub fn with_zeta(max: u64, zetan: f64) -> Self {
        Latest {
            zipf: Zipfian::with_zeta(max + 1, YCSB_ZIPFIAN_CONSTANT, zetan),
        }
    }

    /// One item in `0 ..= max`, `max` (the newest) the most popular.
    pub fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R, max: u64) -> u64 {
        self.zipf.grow(max + 1);
        let span = max + 1;
        // The zipfian may be larger than `span` (the newest item seen by
        // another client went further); redraw beyond it, as YCSB
        // redraws keys not yet inserted.
        loop {
            let d = self.zipf.sample(rng);
            if d < span {
                return max - d;
            }
        }
    }
}

/// YCSB's hotspot distribution (`HotspotIntegerGenerator`): a fraction
/// `opn_fraction` of draws fall uniformly in the hot set, the lowest
/// `data_fraction` of `lower ..= upper`; the rest uniformly in the cold
/// set above it.
#[derive(Debug, Clone, Copy)]
pub struct Hotspot {
    lower: u64,
    hot: u64,
    cold: u64,
    opn_fraction: f64,
}

impl Hotspot {
    /// Fractions in 0..=1 (YCSB's defaults: 0.2 of the data, 0.8 of the
    /// operations).
    pub fn new(lower: u64, upper: u64, data_fraction: f64, opn_fraction: f64) -> Self {
        assert!(upper >= lower);
        let interval = upper - lower + 1;
        let hot = (interval as f64 * data_fraction) as u64;
        Hotspot {
            lower,
            hot,
            cold: interval - hot,
            opn_fraction,
        }
    }

    /// Items in the hot set: `lower .. lower + hot_items()`.
    pub fn hot_items(&self) -> u64 {
        self.hot
    }

    /// One item. An empty hot (or cold) set sends every draw to the other
    /// (YCSB would divide by zero).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let hot = self.cold == 0 || (self.hot > 0 && rng.random::<f64>() < self.opn_fraction);
        if hot {
            self.lower + rng.random_range(0..self.hot)
        } else {
            self.lower + self.hot + rng.random_range(0..self.cold)
        }
    }
}

/// sysbench's `--rand-type`: the distribution of its `sysbench.rand.default`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SysbenchRand {
    Uniform,
    /// The mean of `iter` uniform draws over the range
    /// (`--rand-spec-iter`).
    Gaussian {
        iter: u32,
    },
    /// sysbench's default: `res` % of draws (`--rand-spec-res`, 75) fall
    /// uniformly in a window of `pct` % (`--rand-spec-pct`, 1) of the
    /// range at its centre, the rest are `Gaussian { iter }`.
    Special {
        iter: u32,
        pct: u32,
        res: u32,
    },
    /// `a + (b - a + 1) * u^(ln h / ln (1 - h))` (`--rand-pareto-h`).
    Pareto {
        h: f64,
    },
}

impl SysbenchRand {
    /// sysbench 1.0.20's default, `--rand-type=special` with
    /// `--rand-spec-iter=12 --rand-spec-pct=1 --rand-spec-res=75`.
    pub const DEFAULT: SysbenchRand = SysbenchRand::Special {
        iter: 12,
        pct: 1,
        res: 75,
    };

    /// One value in `a ..= b` (`sb_rand_default(a, b)`).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, a: u32, b: u32) -> u32 {
        match *self {
            SysbenchRand::Uniform => sysbench_uniform(rng, a, b),
            SysbenchRand::Gaussian { iter } => {
                let t = f64::from(b - a) + 1.0;
                let sum: f64 = (0..iter).map(|_| rng.random::<f64>() * t).sum();
                a + (sum / f64::from(iter)) as u32
            }
            SysbenchRand::Special { iter, pct, res } => {
                let t = f64::from(b - a);
                // Draws below t of t * 100 / (100 - res) are gaussian.
                let rnd: f64 = rng.random();
                if rnd * t * 100.0 / f64::from(100 - res.min(99)) < t {
                    let sum: f64 = (0..iter).map(|_| rng.random::<f64>()).sum();
                    return a + (sum * t / f64::from(iter)) as u32;
                }
                // The same `rnd` (so ≥ (100 - res) / 100) maps onto a
                // window of `pct` % of the range moved to its centre.
                let d = t * f64::from(pct) / 100.0;
                let v = rnd * (d + 1.0) + t / 2.0 - t * f64::from(pct) / 200.0;
                a + v as u32
            }
            SysbenchRand::Pareto { h } => {
                let power = h.ln() / (1.0 - h).ln();
                let v = (f64::from(b - a) + 1.0) * rng.random::<f64>().powf(power);
                a + v as u32
            }
        }
    }
}

/// sysbench's `sb_rand_uniform(a, b)`: `a + u * (b - a + 1)`, truncated.
pub fn sysbench_uniform<R: Rng + ?Sized>(rng: &mut R, a: u32, b: u32) -> u32 {
    let v = rng.random::<f64>() * (f64::from(b - a) + 1.0);
    a + (v as u32).min(b - a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::Xoshiro256PlusPlus;

    fn rng() -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(7)
    }

    /// P(item `i`) of Gray et al.'s sampler as [`Zipfian::sample`] runs
    /// it: items 0 and 1 by their thresholds on u·ζ, items from 2 by the
    /// interval of u that the power formula maps onto `i`.
    fn sampled_probability(z: &Zipfian, i: u64) -> f64 {
        let (n, th) = (z.items as f64, z.theta);
        match i {
            0 => 1.0 / z.zetan,
            1 => (z.second - 1.0) / z.zetan,
            _ => {
                let u = |x: f64| 1.0 + ((x / n).powf(1.0 - th) - 1.0) / z.eta;
                let hi = if i + 1 == z.items {
                    1.0
                } else {
                    u(i as f64 + 1.0).min(1.0)
                };
                (hi - u(i as f64).max(z.second / z.zetan)).max(0.0)
            }
        }
    }

    /// |observed share - p| within `z` standard errors of a binomial.
    fn near(count: u64, n: u64, p: f64, z: f64) -> bool {
        let obs = count as f64 / n as f64;
        (obs - p).abs() <= z * (p * (1.0 - p) / n as f64).sqrt()
    }

    #[test]
    fn fnv_hash_is_ycsbs() {
        // Computed independently (Python: 64-bit FNV-1 over the value's 8
        // bytes, least significant first, read as signed, then abs).
        assert_eq!(fnv_hash64(0), 6_284_781_860_667_377_211);
        assert_eq!(fnv_hash64(1), 8_517_097_267_634_966_620);
        assert_eq!(fnv_hash64(1000), 5_952_875_239_596_136_740);
        assert_eq!(fnv_hash64(123_456_789), 2_350_796_791_908_741_607);
        assert!((0..1000).all(|i| fnv_hash64(i) >= 0));
    }

    #[test]
    fn zipfian_matches_its_zeta_probabilities() {
        let n = 1000;
        let z = Zipfian::new(n, YCSB_ZIPFIAN_CONSTANT);
        assert!((z.probability(0) * zeta(n, 0.99) - 1.0).abs() < 1e-12);
        let draws = 1_000_000u64;
        let mut counts = vec![0u64; n as usize];
        let mut r = rng();
        for _ in 0..draws {
            counts[z.sample(&mut r) as usize] += 1;
        }
        // Items 0 and 1 are exact in Gray et al.'s method.
        for (i, &count) in counts.iter().enumerate().take(2) {
            let p = z.probability(i as u64);
            assert!(near(count, draws, p, 4.0), "item {i}: {count} vs p {p}");
        }
        // Beyond them the method approximates: its own distribution, in
        // closed form, overweights item 2 by 17 % and stays within 4 % of
        // the zipfian's from item 8 on (the tail 3.5 % light).
        let sampled: Vec<f64> = (0..n).map(|i| sampled_probability(&z, i)).collect();
        assert!((sampled.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!((sampled[2] / z.probability(2) - 1.171).abs() < 0.01);
        for i in 8..n {
            let r = sampled[i as usize] / z.probability(i);
            assert!((0.96..1.025).contains(&r), "item {i}: {r}");
        }
        // The draws follow that distribution: chi-square over items 0..49
        // and the rest as one bin (50 degrees of freedom; 99.9th
        // percentile 86.7).
        let mut chi2 = 0.0;
        for i in 0..=50usize {
            let (obs, p) = if i < 50 {
                (counts[i], sampled[i])
            } else {
                (counts[50..].iter().sum(), sampled[50..].iter().sum())
            };
            let e = p * draws as f64;
            chi2 += (obs as f64 - e).powi(2) / e;
        }
        assert!(chi2 < 86.7, "chi2 {chi2}");
        // Popularity falls with rank, bucket by bucket.
        let bucket = |lo: usize, hi: usize| counts[lo..hi].iter().sum::<u64>();
        assert!(bucket(0, 10) > bucket(10, 100) / 2);
        assert!(bucket(10, 100) > bucket(100, 1000) / 3);
        assert!(counts[999] < counts[0] / 100);
    }

    #[test]
    fn zipfian_grows_like_a_fresh_one() {
        let mut z = Zipfian::new(100, 0.99);
        z.grow(5000);
        let fresh = Zipfian::new(5000, 0.99);
        assert!((z.zetan - fresh.zetan).abs() < 1e-9);
        assert!((z.eta - fresh.eta).abs() < 1e-12);
        z.grow(10); // never shrinks
        assert_eq!(z.items(), 5000);
    }

    #[test]
    fn scrambled_zipfian_spreads_the_hot_items() {
        let (min, max) = (0, 9_999);
        let s = ScrambledZipfian::new(min, max);
        let draws = 1_000_000u64;
        let mut counts = vec![0u64; 10_000];
        let mut r = rng();
        for _ in 0..draws {
            let k = s.sample(&mut r);
            assert!((min..=max).contains(&k));
            counts[k as usize] += 1;
        }
        // The most popular key is where zipfian item 0 hashes to, with at
        // least item 0's probability 1 / ZETAN.
        let top = (0..counts.len()).max_by_key(|&i| counts[i]).unwrap() as u64;
        assert_eq!(top, s.slot_of(0));
        let p0 = 1.0 / SCRAMBLED_ZETAN;
        assert!(counts[top as usize] as f64 / draws as f64 >= p0 * 0.98);
        // The ten most popular keys are scattered, not 0..10.
        let mut order: Vec<usize> = (0..counts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
        let hot: Vec<usize> = order[..10].to_vec();
        let spread = hot.iter().max().unwrap() - hot.iter().min().unwrap();
        assert!(spread > 5_000, "hot keys clustered: {hot:?}");
        assert!(hot.iter().filter(|&&k| k < 10).count() <= 1, "{hot:?}");
        // Still skewed, if less than a zipfian over the keys alone: the
        // sampler's first 1000 of 10^16 items carry 19.6 % of the draws
        // (Gray et al.'s formula at that size; ζ(1000) / ZETAN would say
        // 29 %), the rest spread evenly, so the hottest tenth of the keys
        // takes at least 19.6 % + a tenth of the rest.
        let top_tenth: u64 = order[..1000].iter().map(|&i| counts[i]).sum();
        let share = top_tenth as f64 / draws as f64;
        let head: f64 = (0..1000).map(|i| sampled_probability(&s.zipf, i)).sum();
        assert!((head - 0.1957).abs() < 0.001, "{head}");
        assert!(share > head + 0.1 * (1.0 - head) - 0.01, "{share}");
    }

    #[test]
    fn latest_favours_the_newest() {
        let mut l = Latest::new(10_000);
        let draws = 400_000u64;
        let mut r = rng();
        let (mut newest, mut last10, mut first_half) = (0u64, 0u64, 0u64);
        for _ in 0..draws {
            let k = l.sample(&mut r, 10_000);
            assert!(k <= 10_000);
            newest += u64::from(k == 10_000);
            last10 += u64::from(k > 9_990);
            first_half += u64::from(k < 5_000);
        }
        let p = 1.0 / zeta(10_001, 0.99);
        assert!(near(newest, draws, p, 4.0), "{newest} vs {p}");
        assert!(last10 as f64 / draws as f64 > 0.25, "{last10}");
        assert!(first_half < last10 / 2, "{first_half} {last10}");
        // The newest moves: after inserts, the new newest is the favourite.
        let moved = (0..10_000)
            .filter(|_| l.sample(&mut r, 10_500) == 10_500)
            .count();
        assert!(moved > 500, "{moved}");
    }

    #[test]
    fn hotspot_sends_its_fraction_to_the_hot_set() {
        let h = Hotspot::new(0, 999, 0.2, 0.8);
        assert_eq!(h.hot_items(), 200);
        let draws = 200_000u64;
        let mut r = rng();
        let mut hot = 0u64;
        let mut cold_hi = 0u64;
        for _ in 0..draws {
            let k = h.sample(&mut r);
            assert!(k <= 999);
            if k < 200 {
                hot += 1;
            } else {
                cold_hi = cold_hi.max(k);
            }
        }
        assert!(near(hot, draws, 0.8, 4.0), "{hot}");
        assert_eq!(cold_hi, 999);
        // Degenerate sets: everything goes to the other one.
        let all_cold = Hotspot::new(10, 19, 0.0, 0.9);
        assert!((0..100).all(|_| all_cold.sample(&mut r) >= 10));
        let all_hot = Hotspot::new(10, 19, 1.0, 0.1);
        assert!((0..100).all(|_| all_hot.sample(&mut r) <= 19));
    }

    #[test]
    fn uniform_passes_chi_square() {
        let (draws, k) = (200_000u64, 100usize);
        let mut counts = vec![0u64; k];
        let mut r = rng();
        for _ in 0..draws {
            let v = SysbenchRand::Uniform.sample(&mut r, 1, k as u32);
            counts[(v - 1) as usize] += 1;
        }
        let e = draws as f64 / k as f64;
        let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
        // 99.9th percentile of chi-square with 99 degrees of freedom: 148.2.
        assert!(chi2 < 148.2, "chi2 {chi2}");
    }

    /// Φ, the standard normal CDF (Abramowitz & Stegun 7.1.26 on erf).
    fn phi(x: f64) -> f64 {
        let t = 1.0 / (1.0 + 0.327_591_1 * x.abs() / 2f64.sqrt());
        let y = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        let erf = 1.0 - y * (-(x * x) / 2.0).exp();
        if x >= 0.0 {
            0.5 * (1.0 + erf)
        } else {
            0.5 * (1.0 - erf)
        }
    }

    #[test]
    fn sysbench_special_puts_three_quarters_in_the_centre_window() {
        // For 1..=10000: the uniform 75 % land in 4975..=5051, the upper
        // three quarters of a 1 % window moved to the centre; the other
        // 25 % are the mean of 12 uniforms (sd = range / 12).
        let d = SysbenchRand::DEFAULT;
        let draws = 400_000u64;
        let mut r = rng();
        let (mut window, mut lo, mut hi) = (0u64, u32::MAX, 0u32);
        for _ in 0..draws {
            let v = d.sample(&mut r, 1, 10_000);
            lo = lo.min(v);
            hi = hi.max(v);
            window += u64::from((4975..=5051).contains(&v));
        }
        let t = 9_999.0f64;
        let sd = t / 12.0;
        let centre = 1.0 + t / 2.0;
        let gauss_in = phi((5051.5 - centre) / sd) - phi((4974.5 - centre) / sd);
        let p = 0.75 + 0.25 * gauss_in;
        assert!(near(window, draws, p, 5.0), "{window} vs {p}");
        // The gaussian part rarely strays: 12 uniforms averaged.
        assert!(lo > 1_000 && hi < 9_000, "{lo}..{hi}");
        // Measured with sysbench 1.0.20 itself (`sysbench.rand.special(1,
        // 10000)`, 400000 draws): 75.94 % in the window.
        assert!((window as f64 / draws as f64 - 0.7594).abs() < 0.005);
    }

    #[test]
    fn sysbench_gaussian_and_pareto_stay_in_range() {
        let mut r = rng();
        let g = SysbenchRand::Gaussian { iter: 12 };
        let p = SysbenchRand::Pareto { h: 0.2 };
        let mut low = 0;
        for _ in 0..10_000 {
            assert!((1..=100).contains(&g.sample(&mut r, 1, 100)));
            let v = p.sample(&mut r, 1, 100);
            assert!((1..=100).contains(&v));
            low += usize::from(v <= 20);
        }
        // Pareto with h = 0.2: 80 % of draws in the lowest 20 %.
        assert!((7_700..8_300).contains(&low), "{low}");
    }
}
