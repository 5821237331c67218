//! A property test against a tiny model of whisper 1.1's ring buffers: random writes
//! (as carbon would hand them to `update_many`, one point at a time), clock moves,
//! flushes, rollups, retention, restarts and crashes; every fetch must equal the
//! model's, bit for bit.
//!
//! The model is whisper's algorithm, not sumi's: one ring of `points` slots per archive
//! (a slot holds `(timestamp, value)` and reads check the timestamp), a write goes to
//! the first archive whose retention covers its age, then propagates to each coarser
//! archive from the finer ring's matching slots, stopping when there is nothing to
//! propagate or the known fraction is below xFilesFactor.
//!
//! Writes are generated where whisper's ring and sumi's partitions agree by design (see
//! the crate doc, "Whisper semantics, and where they differ"): no point in the future,
//! no point whose slot is a whole retention behind a live slot (whisper's ring would
//! overwrite the live slot that shares its position), and no write whose coarse slot
//! straddles a finer archive's retention edge (whisper's propagation sees only the fine
//! slots still in its ring; sumi keeps the partition until it is rolled).

mod common;

use common::*;
use proptest::prelude::*;
use sumi_model::{AggMethod, ManualClock, Retention};

const RETENTION: &str = "10s:2m,1m:10m,5m:1h";
const START: i64 = 1_800_000_000;

#[derive(Clone)]
struct Ring {
    step: i64,
    points: i64,
    slots: Vec<Option<(i64, f64)>>,
}

impl Ring {
    fn idx(&self, t: i64) -> usize {
        (t / self.step).rem_euclid(self.points) as usize
    }
    fn get(&self, t: i64) -> Option<f64> {
        match self.slots[self.idx(t)] {
            Some((ts, v)) if ts == t => Some(v),
            _ => None,
        }
    }
    fn set(&mut self, t: i64, v: f64) {
        let i = self.idx(t);
        self.slots[i] = Some((t, v));
    }
    fn retention(&self) -> i64 {
        self.step * self.points
    }
}

#[derive(Clone)]
struct Whisper {
    rings: Vec<Ring>,
    method: AggMethod,
    xff: f32,
}

impl Whisper {
    fn new(spec: &str, method: AggMethod, xff: f32) -> Whisper {
        let r = Retention::parse(spec).unwrap();
        Whisper {
            rings: r
                .archives()
                .iter()
                .map(|a| Ring {
                    step: i64::from(a.step_secs),
                    points: i64::from(a.points),
                    slots: vec![None; a.points as usize],
                })
                .collect(),
            method,
            xff,
        }
    }

    fn max_retention(&self) -> i64 {
        self.rings.iter().map(Ring::retention).max().unwrap()
    }

    fn level_for(&self, age: i64) -> Option<usize> {
        self.rings.iter().position(|r| r.retention() >= age)
    }

    /// True when whisper and sumi agree on this write by design (see the module doc).
    fn safe(&self, ts: i64, now: i64) -> bool {
        let age = now - ts;
        if age < 0 || age >= self.max_retention() {
            return false;
        }
        let k = self.level_for(age).unwrap();
        // the written slot must not share its ring position with a live slot
        let x = ts - ts.rem_euclid(self.rings[k].step);
        if x + self.rings[k].retention() <= now {
            return false;
        }
        (k..self.rings.len() - 1).all(|j| {
            let s = ts - ts.rem_euclid(self.rings[j + 1].step);
            s + self.rings[j].retention() > now
        })
    }

    /// `file_update_many` with one point.
    fn write(&mut self, ts: i64, v: f64, now: i64) {
        let k = self.level_for(now - ts).unwrap();
        let t = ts - ts.rem_euclid(self.rings[k].step);
        self.rings[k].set(t, v);
        for j in k..self.rings.len() - 1 {
            if !self.propagate(t, j) {
                break;
            }
        }
    }

    fn propagate(&mut self, t: i64, higher: usize) -> bool {
        let (h, l) = (&self.rings[higher], &self.rings[higher + 1]);
        let start = t - t.rem_euclid(l.step);
        let n = (l.step / h.step) as usize;
        let known: Vec<f64> = (0..n)
            .filter_map(|i| h.get(start + i as i64 * h.step))
            .collect();
        if known.is_empty() {
            return false;
        }
        if (known.len() as f64 / n as f64) < f64::from(self.xff) {
            return false;
        }
        let v = self.method.aggregate(&known, n).unwrap();
        self.rings[higher + 1].set(start, v);
        true
    }

    /// `file_fetch` + `__archive_fetch`.
    fn fetch(&self, from: i64, until: i64, now: i64) -> Option<(i64, i64, i64, Vec<Option<u64>>)> {
        if from > until {
            return None;
        }
        let oldest = now - self.max_retention();
        if from > now || until < oldest {
            return None;
        }
        let from = from.max(oldest);
        let until = until.min(now);
        let diff = now - from;
        let ring = self
            .rings
            .iter()
            .find(|r| r.retention() >= diff)
            .unwrap_or(self.rings.last().unwrap());
        let step = ring.step;
        let fi = from - from.rem_euclid(step) + step;
        let mut ui = until - until.rem_euclid(step) + step;
        if fi == ui {
            ui += step;
        }
        let values = (0..(ui - fi) / step)
            .map(|i| ring.get(fi + i * step).map(f64::to_bits))
            .collect();
        Some((fi, ui, step, values))
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write { series: u8, age: i64, value: i32 },
    Advance(i64),
    Maintain,
    Reopen { crash: bool },
    Fetch { series: u8, back: i64, len: i64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0u8..3, 0i64..3600, -50i32..50).prop_map(|(series, age, value)| Op::Write { series, age, value }),
        8 => (0u8..3, 0i64..300, -50i32..50).prop_map(|(series, age, value)| Op::Write { series, age, value }),
        3 => (1i64..400).prop_map(Op::Advance),
        2 => Just(Op::Maintain),
        1 => any::<bool>().prop_map(|crash| Op::Reopen { crash }),
        3 => (0u8..3, -20i64..4000, -10i64..4000).prop_map(|(series, back, len)| Op::Fetch { series, back, len }),
    ]
}

fn method() -> impl Strategy<Value = (AggMethod, f32)> {
    (
        prop::sample::select(AggMethod::ALL.to_vec()),
        prop::sample::select(vec![0.0f32, 0.3, 0.5, 1.0]),
    )
}

const NAMES: [&str; 3] = ["m.a", "m.b", "n"];

fn check_all(store: &sumi_store::Store, model: &[Whisper], now: i64) -> Result<(), TestCaseError> {
    for (i, name) in NAMES.iter().enumerate() {
        for (back, len) in [(120, 120), (600, 600), (3600, 3600), (3599, 10), (300, 0)] {
            let (from, until) = (now - back, now - back + len);
            let got = fetch_bits(store, name, from, until, now);
            let want = model[i].fetch(from, until, now);
            // a series that never got a point is unknown to sumi; whisper would have no file
            if got.is_none()
                && want
                    .as_ref()
                    .is_some_and(|w| w.3.iter().all(Option::is_none))
            {
                continue;
            }
            prop_assert_eq!(
                got,
                want,
                "{} from {} until {} now {}",
                name,
                from,
                until,
                now
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn fetch_equals_whisper((m, xff) in method(), ops in proptest::collection::vec(op(), 1..40)) {
        let dir = TempDir::new("model");
        let clock = ManualClock::new(START);
        let conf = format!("[all]\npattern = .*\nxFilesFactor = {xff}\naggregationMethod = {}\n", m.name());
        let opts = options(dir.path(), rules(RETENTION, &conf));
        let mut store = open(&opts, &clock);
        let mut model = vec![Whisper::new(RETENTION, m, xff); NAMES.len()];
        let mut now = START;
        for op in ops {
            match op {
                Op::Write { series, age, value } => {
                    let ts = now - age;
                    let w = &mut model[series as usize];
                    if !w.safe(ts, now) {
                        continue;
                    }
                    let v = f64::from(value) / 4.0;
                    w.write(ts, v, now);
                    let out = append(&store, &[(NAMES[series as usize], ts, v)]);
                    prop_assert_eq!(out.accepted, 1);
                }
                Op::Advance(d) => {
                    now += d;
                    clock.set(now);
                }
                Op::Maintain => store.run_maintenance().unwrap(),
                Op::Reopen { crash } => {
                    if !crash {
                        store.close().unwrap();
                    }
                    drop(store);
                    store = open(&opts, &clock);
                }
                Op::Fetch { series, back, len } => {
                    let (from, until) = (now - back, now - back + len);
                    let got = fetch_bits(&store, NAMES[series as usize], from, until, now);
                    let want = model[series as usize].fetch(from, until, now);
                    if !(got.is_none() && want.as_ref().is_some_and(|w| w.3.iter().all(Option::is_none))) {
                        prop_assert_eq!(got, want, "series {} from {} until {} now {}", series, from, until, now);
                    }
                }
            }
        }
        check_all(&store, &model, now)?;
        store.run_maintenance().unwrap();
        check_all(&store, &model, now)?;
        store.close().unwrap();
    }
}
