//! Synthetic series for tests and benchmarks: the value models of the benchmark harness's
//! workload generator (`shared/bench/tool/main.go`, `cmdGen`), ported, plus smoother shapes
//! typical of real servers.
//!
//! The harness gives each host 100 metrics of five kinds at a 10 s step: percentages
//! random-walking with 2 decimals, big integer gauges (bytes), monotonic integer counters,
//! small integer gauges and load averages with 2 decimals. Each generated series also
//! carries the entropy of its increments (bits a point), the floor no lossless codec can beat
//! on average.
//!
//! Self-contained (its own seeded PRNG) so that the crate needs no random-number dependency.

use std::f64::consts::{E, PI};

/// The value model of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Percentage gauge: random walk (σ = 3 a step) reflected into [0, 100], 2 decimals.
    Percent,
    /// Large integer gauge (bytes): random walk with σ = 0.5 % of the base, floored.
    Gauge,
    /// Monotonic integer counter: each step adds `rate × step × U(0.5, 1.5)`, floored.
    Counter,
    /// Small integer gauge (process counts, connections): ±2 a step, at least 0.
    Small,
    /// Load average: random walk (σ = 0.1) reflected at 0, 2 decimals.
    Load,
    /// Smoother real data: a value that never changes (memory total, disk size).
    Constant,
    /// Smoother real data: an integer gauge that changes on 5 % of the steps, by ±1..3.
    Steppy,
    /// Smoother real data: a counter with a steady rate (±1 % jitter).
    SteadyCounter,
    /// Smoother real data: a slow daily wave with 1 decimal (temperature, a mostly idle CPU).
    SlowDecimal,
}

impl Kind {
    /// The five kinds of the benchmark workload.
    pub const WORKLOAD: [Kind; 5] = [
        Kind::Percent,
        Kind::Gauge,
        Kind::Counter,
        Kind::Small,
        Kind::Load,
    ];
    /// The smoother kinds.
    pub const SMOOTH: [Kind; 4] = [
        Kind::Constant,
        Kind::Steppy,
        Kind::SteadyCounter,
        Kind::SlowDecimal,
    ];

    /// Short lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Percent => "percent",
            Kind::Gauge => "gauge",
            Kind::Counter => "counter",
            Kind::Small => "small",
            Kind::Load => "load",
            Kind::Constant => "constant",
            Kind::Steppy => "steppy",
            Kind::SteadyCounter => "steady-counter",
            Kind::SlowDecimal => "slow-decimal",
        }
    }
}

/// One metric of a host: its name (without the host prefix), kind and typical magnitude.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Dotted name, e.g. `cpu.user`.
    pub name: String,
    /// Value model.
    pub kind: Kind,
    /// Typical magnitude (the generator's `base`).
    pub base: f64,
}

/// The harness's 100 metrics of one host, in its order.
pub fn host_metrics() -> Vec<Metric> {
    let mut m = Vec::with_capacity(100);
    let mut add = |name: String, kind, base| m.push(Metric { name, kind, base });
    for c in [
        "user",
        "nice",
        "system",
        "idle",
        "iowait",
        "irq",
        "softirq",
        "steal",
        "guest",
        "guest_nice",
    ] {
        add(format!("cpu.{c}"), Kind::Percent, 0.0);
    }
    for l in ["loadavg1", "loadavg5", "loadavg15"] {
        add(format!("loadavg.{l}"), Kind::Load, 0.0);
    }
    for x in [
        "total",
        "used",
        "free",
        "buffers",
        "cached",
        "available",
        "active",
        "inactive",
        "dirty",
        "swap_total",
        "swap_free",
        "swap_cached",
    ] {
        add(format!("memory.{x}"), Kind::Gauge, 8e9);
    }
    for d in ["sda", "sdb"] {
        for x in [
            "reads",
            "writes",
            "read_bytes",
            "write_bytes",
            "read_time",
            "write_time",
            "io_time",
            "weighted_io_time",
        ] {
            add(format!("disk.{d}.{x}"), Kind::Counter, 1e4);
        }
    }
    for f in ["root", "var", "data"] {
        for x in ["size", "used", "avail", "inodes_used"] {
            add(format!("filesystem.{f}.{x}"), Kind::Gauge, 5e10);
        }
    }
    for i in ["eth0", "eth1"] {
        for x in [
            "rx_bytes",
            "tx_bytes",
            "rx_packets",
            "tx_packets",
            "rx_errors",
            "tx_errors",
            "rx_dropped",
            "tx_dropped",
        ] {
            add(format!("interface.{i}.{x}"), Kind::Counter, 1e6);
        }
    }
    for x in ["running", "sleeping", "zombie", "blocked", "total", "forks"] {
        add(format!("processes.{x}"), Kind::Small, 200.0);
    }
    for x in [
        "established",
        "time_wait",
        "close_wait",
        "listen",
        "syn_sent",
    ] {
        add(format!("tcp.{x}"), Kind::Small, 100.0);
    }
    for a in ["nginx", "mysql", "redis", "app"] {
        for s in [
            "requests",
            "errors",
            "latency_p50",
            "latency_p99",
            "connections",
        ] {
            let (kind, base) = match s {
                "requests" | "errors" => (Kind::Counter, 500.0),
                "connections" => (Kind::Small, 50.0),
                _ => (Kind::Percent, 0.0),
            };
            add(format!("custom.{a}.{s}"), kind, base);
        }
    }
    // The harness pads with worker queues up to 100; with the lists above it needs none.
    m.truncate(100);
    m
}

/// A small, fast, seeded PRNG (xoshiro256**, seeded through splitmix64).
#[derive(Debug, Clone)]
pub struct Rng([u64; 4]);

impl Rng {
    /// A generator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut z = seed;
        let mut next = || {
            z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            x ^ (x >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let [a, b, c, d] = &mut self.0;
        let out = b.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = *b << 17;
        *c ^= *a;
        *d ^= *b;
        *b ^= *c;
        *a ^= *d;
        *c ^= t;
        *d = d.rotate_left(45);
        out
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `0..n` (`n > 0`; 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64(); // (0, 1]
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
    }
}

/// A generated series.
#[derive(Debug, Clone)]
pub struct Series {
    /// The values as carbon would store them (parsed from the text the harness sends).
    pub values: Vec<f64>,
    /// Entropy of the increments in bits a point: the average cost floor for a lossless
    /// coder that knows the model.
    pub entropy_bits: f64,
}

/// Bits of entropy of a normal distribution of standard deviation `sigma` quantised to 1.
fn normal_entropy(sigma: f64) -> f64 {
    (sigma * (2.0 * PI * E).sqrt()).log2()
}

/// Generates `points` values of `kind` around `base` at a step of `step_secs`.
pub fn series(kind: Kind, base: f64, step_secs: u32, points: usize, rng: &mut Rng) -> Series {
    let step = f64::from(step_secs);
    let round2 = |v: f64| (v * 100.0).round() / 100.0;
    let mut values = Vec::with_capacity(points);
    let entropy_bits;
    match kind {
        Kind::Percent => {
            let mut v = rng.f64() * 60.0;
            for _ in 0..points {
                v += rng.normal() * 3.0;
                if v < 0.0 {
                    v = -v;
                }
                if v > 100.0 {
                    v = 200.0 - v;
                }
                values.push(round2(v));
            }
            entropy_bits = normal_entropy(300.0);
        }
        Kind::Gauge => {
            let mut v = base * (0.2 + rng.f64());
            for _ in 0..points {
                v = (v + rng.normal() * base * 0.005).max(0.0).floor();
                values.push(v);
            }
            entropy_bits = normal_entropy(base * 0.005);
        }
        Kind::Counter => {
            let mut v = (rng.f64() * 1e9).floor();
            let rate = base * (0.1 + rng.f64());
            for _ in 0..points {
                v += (rate * step * (0.5 + rng.f64())).floor();
                values.push(v);
            }
            entropy_bits = (rate * step).log2();
        }
        Kind::Small => {
            let mut v = (base * rng.f64()).floor();
            for _ in 0..points {
                v = (v + rng.below(5) as f64 - 2.0).max(0.0);
                values.push(v);
            }
            entropy_bits = 5f64.log2();
        }
        Kind::Load => {
            let mut v = rng.f64() * 4.0;
            for _ in 0..points {
                v += rng.normal() * 0.1;
                if v < 0.0 {
                    v = -v;
                }
                values.push(round2(v));
            }
            entropy_bits = normal_entropy(10.0);
        }
        Kind::Constant => {
            let v = (base * (0.2 + rng.f64())).floor();
            values.resize(points, v);
            entropy_bits = 0.0;
        }
        Kind::Steppy => {
            let mut v = (base * rng.f64()).floor();
            for _ in 0..points {
                if rng.below(20) == 0 {
                    v = (v + rng.below(7) as f64 - 3.0).max(0.0);
                }
                values.push(v);
            }
            // P(change) = 0.05, then one of 6 non-zero moves (a zero move is rare noise).
            let p: f64 = 0.05 * 6.0 / 7.0;
            entropy_bits = -(p * (p / 6.0).log2() + (1.0 - p) * (1.0 - p).log2());
        }
        Kind::SteadyCounter => {
            let mut v = (rng.f64() * 1e9).floor();
            let per_step = base * (0.1 + rng.f64()) * step;
            for _ in 0..points {
                v += (per_step * (1.0 + 0.01 * rng.normal())).round();
                values.push(v);
            }
            entropy_bits = normal_entropy(per_step * 0.01).max(0.0);
        }
        Kind::SlowDecimal => {
            let level = base * (0.5 + rng.f64());
            let phase = rng.f64() * 2.0 * PI;
            for i in 0..points {
                let t = i as f64 * step / 86_400.0;
                let v = level + 0.1 * level * (2.0 * PI * t + phase).sin() + 0.05 * rng.normal();
                values.push((v * 10.0).round() / 10.0);
            }
            entropy_bits = normal_entropy(0.05 * 10.0 * std::f64::consts::SQRT_2).max(0.0);
        }
    }
    Series {
        values,
        entropy_bits,
    }
}

/// Typical magnitude used for the smoother kinds in reports.
pub fn smooth_base(kind: Kind) -> f64 {
    match kind {
        Kind::Constant => 8e9,
        Kind::Steppy => 200.0,
        Kind::SteadyCounter => 1e3,
        _ => 40.0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;

    #[test]
    fn host_has_the_harness_mix() {
        let m = host_metrics();
        assert_eq!(m.len(), 100);
        let count = |k| m.iter().filter(|x| x.kind == k).count();
        assert_eq!(count(Kind::Percent), 18);
        assert_eq!(count(Kind::Load), 3);
        assert_eq!(count(Kind::Gauge), 24);
        assert_eq!(count(Kind::Counter), 40);
        assert_eq!(count(Kind::Small), 15);
        assert_eq!(m.first().map(|x| x.name.as_str()), Some("cpu.user"));
        assert_eq!(
            m.last().map(|x| x.name.as_str()),
            Some("custom.app.connections")
        );
    }

    #[test]
    fn series_follow_their_models() {
        let mut rng = Rng::new(1);
        let pct = series(Kind::Percent, 0.0, 10, 5000, &mut rng).values;
        assert!(pct.iter().all(|&v| (0.0..=100.0).contains(&v)));
        assert!(pct
            .iter()
            .all(|&v| ((v * 100.0).round() / 100.0).to_bits() == v.to_bits()));
        let ctr = series(Kind::Counter, 1e4, 10, 5000, &mut rng).values;
        assert!(ctr.iter().zip(ctr.iter().skip(1)).all(|(a, b)| b > a));
        let small = series(Kind::Small, 200.0, 10, 5000, &mut rng).values;
        assert!(small.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
        let c = series(Kind::Constant, 8e9, 10, 100, &mut rng).values;
        assert!(c.iter().all(|&v| v == c[0]));
    }

    #[test]
    fn rng_is_deterministic_and_roughly_uniform() {
        let (mut a, mut b) = (Rng::new(42), Rng::new(42));
        assert_eq!(a.next_u64(), b.next_u64());
        let mean = (0..10_000).map(|_| a.f64()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        let var = (0..10_000).map(|_| a.normal().powi(2)).sum::<f64>() / 10_000.0;
        assert!((var - 1.0).abs() < 0.06, "{var}");
    }
}
