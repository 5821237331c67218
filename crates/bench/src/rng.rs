//! A small seeded random generator (xoshiro256** seeded through SplitMix64).
//!
//! The workload must be the same for a seed on every machine and every build, so the
//! generator is written here rather than taken from a crate whose streams may change
//! between versions.

/// A xoshiro256** generator: fast, 256 bits of state, good enough for synthetic metrics.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
    /// The second normal deviate of the last Box–Muller pair, not yet handed out.
    spare_normal: Option<f64>,
}

/// One step of SplitMix64: spreads a seed's bits over the whole state.
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed` and a `stream` number: different streams of one seed are
    /// independent, which lets each host of the workload have its own.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ stream.wrapping_mul(0xD605_BBB5_8C8A_BBB5);
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        Rng {
            s,
            spare_normal: None,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[0, n)`; `n` must be at least 1 (0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: the bias is below 2^-32 for the tiny ranges used here.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A standard normal deviate (mean 0, deviation 1), by the Box–Muller transform.
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        // 1 - u is in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::TAU * u2;
        self.spare_normal = Some(r * theta.sin());
        r * theta.cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_give_the_same_sequence() {
        let mut a = Rng::new(42, 7);
        let mut b = Rng::new(42, 7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn streams_and_seeds_differ() {
        let first = |seed, stream| Rng::new(seed, stream).next_u64();
        assert_ne!(first(42, 0), first(42, 1));
        assert_ne!(first(42, 0), first(43, 0));
    }

    #[test]
    fn uniform_floats_stay_in_range_and_spread() {
        let mut r = Rng::new(1, 0);
        let mut sum = 0.0;
        let n = 100_000;
        for _ in 0..n {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
            sum += x;
        }
        let mean = sum / f64::from(n);
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn below_covers_the_whole_range() {
        let mut r = Rng::new(3, 0);
        let mut seen = [0u32; 5];
        for _ in 0..10_000 {
            let k = r.below(5) as usize;
            assert!(k < 5);
            seen[k] += 1;
        }
        assert!(seen.iter().all(|&c| c > 1500), "{seen:?}");
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn normal_has_mean_zero_and_unit_deviation() {
        let mut r = Rng::new(5, 0);
        let n = 200_000;
        let (mut sum, mut sq) = (0.0, 0.0);
        for _ in 0..n {
            let z = r.normal();
            assert!(z.is_finite());
            sum += z;
            sq += z * z;
        }
        let mean = sum / f64::from(n);
        let var = sq / f64::from(n) - mean * mean;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "variance {var}");
    }
}
