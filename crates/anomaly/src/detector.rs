//! The streaming detector: an ensemble of cheap views of one series, each scoring how far
//! the newest point is from what the series has done so far, combined into one score in
//! `[0, 1]` and then damped after an alarm so that one incident raises one alarm.
//!
//! Views (docs/anomaly.md has the reasoning):
//! - **point**: distance of the value from the long window's median, in robust spreads
//!   (1.4826 × median absolute deviation);
//! - **level**: the same for the mean of the last few points (level shifts, slow drifts);
//! - **spread**: the recent mean step between neighbouring values against the usual
//!   step, either way (noise bursts, a series gone flat);
//! - **pattern**: the value quantised relative to the median and spread, joined with the
//!   previous quantised values into a context; a context never seen before is novel
//!   (broken seasonality, a new shape at a usual level);
//! - **gap**: time since the previous point against the usual step;
//! - **season**: the recent residuals from a time-of-day profile (phase bins of
//!   `Config::season`), against the usual residual (broken rhythm at a usual level);
//! - **local**: distance of the value from the median of the last `Config::local`
//!   points, in their robust spreads (a spike while the long window still holds an
//!   earlier regime); reported as part of the point view;
//! - **range** (the second stage of a two-stage detector only): how far a block goes
//!   beyond the largest or smallest value of every block before it, in that whole
//!   range (a record is news however the views' peaks stand); reported as a spike.
//!
//! Each view's surprise is divided by that view's own decaying peak of past surprises,
//! the largest ratio gives the score, and an alarm damps the scores that follow.
//! The long window is kept both as a ring and sorted, so its median and median absolute
//! deviation cost O(log n) per point.
//!
//! Points are accepted in strictly increasing time. A point at or before the last
//! accepted time (late, repeated or out of order) and a non-finite value, or one beyond
//! ±[`LARGEST`] (whose differences would overflow), are ignored:
//! `update` returns `None`, counts them in [`Detector::ignored`] and leaves the state as
//! it was, so a burst of replayed or delayed points cannot corrupt what was learnt.
//! (A two-stage detector also ignores a point at `i64::MIN` seconds, its first
//! stage's mark for "no point yet".)

use crate::config::Config;

/// Number of views, and of peaks kept in the state.
pub(crate) const VIEWS: usize = 7;

/// The per-view scores of the last accepted point, for explanations ("reason").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Views {
    pub point: f64,
    pub level: f64,
    pub spread: f64,
    pub pattern: f64,
    pub gap: f64,
    pub season: f64,
}

/// A view's score from its surprise `z` (1 = its "half" setting): `1 − 2^(−z²)`.
fn half_one(z: f64) -> f64 {
    if z == 0.0 {
        // what the formula gives (exp(-0) is 1), without the call
        return 0.0;
    }
    1.0 - (-z * z * std::f64::consts::LN_2).exp()
}

/// [`half_one`]`(z)` where that is at least `at_least` (in `[0, 1]`); below it, some
/// value below `at_least`, where the formula clearly gives less: then without the
/// `exp`. Clearly: `1 − e^(−y) ≤ y`, so `y` below 0.99 of `at_least` (less a
/// margin for small settings) leaves the computed score, within the `exp`'s error
/// of an ulp, below `at_least`.
fn half_one_or_below(z: f64, at_least: f64) -> f64 {
    // what `half_one` computes, `-z * z * LN_2`, negated (exactly: rounding is
    // symmetric)
    let y = z * z * std::f64::consts::LN_2;
    if y < 0.99 * at_least - 1e-12 {
        return 0.0;
    }
    half_one(z)
}

/// The first stage's flatline score of the surprise `z` (a run of equal values
/// against the longest before): [`half_one`]`(z)` from the alarm `alarm` up, 0 below
/// it. A run only grows, so its score creeps up a little every point until the run
/// ends or reaches the alarm; below the alarm those points say nothing that the
/// alarm will not say a few points later (on NAB they were a handful of points in a
/// row just below the alarm, each a false alarm at a threshold just below it, and
/// none of them starting the suppression that an alarm starts).
fn flat_score(z: f64, alarm: f64) -> f64 {
    let s = half_one(z);
    if s < alarm {
        0.0
    } else {
        s
    }
}

/// The score of a surprise twice its check's own past peak, `1 − 2^(−2²)`: a
/// first-stage alarm at least this strong speaks even on a value inside the
/// series' range (twice: the factor by which an incident may raise a peak per
/// point, `Config::incident_cap`).
const TWICE_ITS_PEAK: f64 = 0.9375;

/// The first stage's spread surprise of the ratio `r` of the recent to the usual
/// step: `max(ln r, 0) / ln half`. A ratio of at most 1 (or not a number) is 0, as
/// the formula gives (`half` > 1 is checked), without the two logarithms.
fn spread_z(r: f64, half: f64) -> f64 {
    if r > 1.0 {
        r.ln().max(0.0) / half.ln()
    } else {
        0.0
    }
}

/// At least what [`spread_z`] computes, without a logarithm: `ln r ≤ r − 1` and
/// `ln half ≥ 2 (half − 1) / (half + 1)` (`half` > 1), with a margin far above the
/// rounding of the logarithms and the division (a few ulps).
fn spread_z_at_most(r: f64, half: f64) -> f64 {
    if r > 1.0 {
        (r - 1.0) * (half + 1.0) / (2.0 * (half - 1.0)) * (1.0 + 1e-6)
    } else {
        0.0
    }
}

/// `1 / (k + 1)` for `k` below 32: the first stage's learning weights over its first
/// points, the same values as the division gives (correctly rounded at compile time
/// as at run time), without a division a point.
const WEIGHTS: [f64; 32] = {
    let mut w = [0.0; 32];
    let mut k = 0;
    while k < 32 {
        w[k] = 1.0 / (k + 1) as f64;
        k += 1;
    }
    w
};

/// A bar on the first stage's surprise `z` below which its score is 0: where `z` is at
/// most it, `half_one_or_below(z / peak, quiet)` gives 0. From its own test,
/// `z² ln 2 / peak² < 0.99 quiet − 10⁻¹²`, with a margin of 10⁻⁶ (far above the
/// roundings of the division, the square and the bar's own: a few ulps). `None`
/// where that test never passes (a `quiet` of at most 10⁻¹²).
fn quiet_below(peak: f64, quiet: f64) -> Option<f64> {
    // as `half_one_or_below` computes it
    let bar = 0.99 * quiet - 1e-12;
    (bar > 0.0).then(|| (bar / std::f64::consts::LN_2).sqrt() * peak * (1.0 - 1e-6))
}

/// One point's first-stage checks, their quotients kept as numerator and denominator
/// (taken before the point is learnt): divided only where a score or an explanation
/// needs them. The point and step checks are divided by `Config::gate_half`, the gap
/// check by `Config::gap_half`; the spread check is a ratio (`spread_z`).
struct Checks {
    /// Whether the point, step and spread checks count (8 points seen; 0 before).
    scaled: bool,
    /// `|x − level|` and the deviation (at least the floor).
    point: (f64, f64),
    /// `|x − prev|` and the usual step (at least the floor).
    jump: (f64, f64),
    /// The recent and the usual step, both plus the floor.
    spread: (f64, f64),
    /// The time since the previous point and the usual time between points; `(0, 0)`
    /// for none (the first point, or no usual time yet).
    gap: (f64, f64),
}

impl Checks {
    /// The point and step checks' surprise: the larger quotient divided once by
    /// `gate_half` is the larger of the two divided apart (a division by a positive
    /// number keeps the order, after rounding too).
    fn point_jump(&self, cfg: &Config) -> f64 {
        let (q_point, q_jump) = self.quotients();
        q_point.max(q_jump) / cfg.gate_half
    }

    fn quotients(&self) -> (f64, f64) {
        if self.scaled {
            (self.point.0 / self.point.1, self.jump.0 / self.jump.1)
        } else {
            (0.0, 0.0)
        }
    }

    fn gap(&self, cfg: &Config) -> f64 {
        if self.gap.1 > 0.0 {
            self.gap.0 / self.gap.1 / cfg.gap_half
        } else {
            0.0
        }
    }

    fn spread_ratio(&self) -> f64 {
        if self.scaled {
            self.spread.0 / self.spread.1
        } else {
            0.0
        }
    }

    /// The first stage's surprise (but the flatline's): the largest of the checks'.
    /// The spread check's two logarithms only where its surprise could be the
    /// largest (about half the points of a random walk have a ratio above 1): below
    /// the other checks' it leaves `z` as it is.
    fn z(&self, cfg: &Config) -> f64 {
        let z_other = self.point_jump(cfg).max(self.gap(cfg));
        let r = self.spread_ratio();
        if spread_z_at_most(r, cfg.spread_half) <= z_other {
            z_other
        } else {
            z_other.max(spread_z(r, cfg.spread_half))
        }
    }

    /// Whether [`Checks::z`] is at most `t` (≥ 0), decided by multiplications: `a /
    /// b / half ≤ t` where `a ≤ t · half · b` less a margin of 10⁻⁹ (far above the
    /// roundings on either side: a few ulps), and the spread check's `ln r / ln half`
    /// bounded as in [`spread_z_at_most`] (`ln r ≤ r − 1`, with `r` rounded up by an
    /// ulp at most). False where it cannot tell, and for a `t` so small that the
    /// products could leave the normal range (then `z` is computed). The numerators
    /// are finite (differences of values within ±[`LARGEST`], and times), so a right
    /// side that overflows is above them; a spread check's left side that overflows
    /// tells nothing (settings near 10³⁰⁰).
    fn at_most(&self, t: f64, cfg: &Config) -> bool {
        let m = t * (1.0 - 1e-9);
        // (a NaN fails the gap check below)
        if m * cfg.gate_half.min(cfg.gap_half) < 1e-200 {
            return false;
        }
        let mg = m * cfg.gate_half;
        let point_jump =
            !self.scaled || (self.point.0 <= mg * self.point.1 && self.jump.0 <= mg * self.jump.1);
        // (`gap.1` is 0 or the usual time between points, at least a second)
        let gap = self.gap.0 <= m * cfg.gap_half * self.gap.1;
        let (num, den) = self.spread;
        let h = cfg.spread_half;
        // (num ≤ den: a ratio of at most 1, which the spread check scores 0; a left
        // side that overflows tells nothing, a right side that does is above it)
        let spread = !self.scaled || num <= den || {
            let left = (num - den + num * 1e-15) * (h + 1.0);
            left.is_finite() && left <= m * 2.0 * (h - 1.0) * den
        };
        point_jump && gap && spread
    }

    /// The surprises kept for an explanation (point, gap, flatline, step, spread), the
    /// flatline's being `z_flat`.
    fn explained(&self, z_flat: f64, cfg: &Config) -> [f64; 5] {
        let (q_point, q_jump) = self.quotients();
        [
            q_point / cfg.gate_half,
            self.gap(cfg),
            z_flat,
            q_jump / cfg.gate_half,
            spread_z(self.spread_ratio(), cfg.spread_half),
        ]
    }
}

impl Views {
    /// The view scores of the surprises `zs` (point, level, spread, pattern, gap,
    /// season, local; the point view reports the larger of the point and local ones).
    fn from_surprises(zs: &[f64; VIEWS]) -> Views {
        Views {
            point: half_one(zs[0]).max(half_one(zs[6])),
            level: half_one(zs[1]),
            spread: half_one(zs[2]),
            pattern: half_one(zs[3]),
            gap: half_one(zs[4]),
            season: half_one(zs[5]),
        }
    }

    /// The view that contributed most, as a short word.
    pub fn reason(&self) -> &'static str {
        let all = [
            (self.point, "spike"),
            (self.level, "level shift"),
            (self.spread, "spread change"),
            (self.pattern, "new pattern"),
            (self.gap, "gap"),
            (self.season, "broken rhythm"),
        ];
        let mut best = all[0];
        for v in all {
            if v.0 > best.0 {
                best = v;
            }
        }
        best.1
    }
}

/// The last quantised values of the pattern view (at most 15: `context` is at most
/// 16), kept inline rather than in a separate allocation: one less cache line to
/// fetch per point when many series are watched. Unused cells are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Bins {
    v: [i8; 16],
    len: u8,
}

impl Bins {
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, i8> {
        self.v[..self.len()].iter()
    }

    /// Appends `b`; the caller keeps the length below 16 (`context - 1`).
    pub(crate) fn push(&mut self, b: i8) {
        self.v[self.len()] = b;
        self.len += 1;
    }

    pub(crate) fn remove_first(&mut self) {
        let n = self.len();
        if n > 0 {
            self.v.copy_within(1..n, 0);
            self.v[n - 1] = 0;
            self.len -= 1;
        }
    }
}

/// Everything the detector learnt; saved and restored by [`crate::codec`], but for its
/// last three fields (rebuilt or reset on restore). Kept behind one `Box` in
/// [`Detector`], out of the lines every point of a two-stage detector reads.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub(crate) last_ts: Option<i64>,
    /// Accepted points.
    pub(crate) seen: u64,
    /// Late, repeated, out-of-order or non-finite points.
    pub(crate) ignored: u64,
    /// Usual time between points (seconds), 0 until two points were seen.
    pub(crate) step: f64,
    /// The long window, circular once full; `head` is the next slot to write.
    pub(crate) ring: Vec<f64>,
    pub(crate) head: usize,
    /// The last `context - 1` quantised values, oldest first.
    pub(crate) bins: Bins,
    /// Context counts (saturating), halved every `(1 << table_bits) * 4` insertions.
    /// Empty until the first insertion (an empty table reads as all 0): a series
    /// watched by a two-stage detector may take thousands of points before its second
    /// stage inserts a context, and 100,000 such series would otherwise hold 200 MB of
    /// zeros (saved as its full size either way).
    pub(crate) table: Vec<u8>,
    pub(crate) inserts: u64,
    /// Accepted points since the last alarm (saturating).
    pub(crate) since_alarm: u64,
    /// Decaying maxima of past surprises, per view (point, level, spread, pattern,
    /// gap, season, local) or all in the first (see `Config::peak_decay`).
    pub(crate) peak: [f64; VIEWS],
    /// Rates of novel contexts: recent (about 8 points) and long-run (about 1000).
    pub(crate) novel_fast: f64,
    pub(crate) novel_slow: f64,
    /// Long-run typical absolute change between neighbouring values.
    pub(crate) usual_step: f64,
    /// First accepted timestamp: the seasonal view waits for two seasons of history.
    pub(crate) first_ts: i64,
    /// Seasonal profile: per phase bin of the season, the usual value (not started
    /// when the seasonal view is off) and the points the bin has learnt from
    /// (saturating: a bin's first points are averaged, later ones weighted by
    /// `Config::season_rate`).
    pub(crate) profile: Profile,
    /// Recent mean of the residuals from the profile (about `short` points).
    pub(crate) resid_fast: f64,
    /// Long-run typical absolute residual from the profile.
    pub(crate) resid_usual: f64,
    /// Residuals `resid_usual` has learnt from (saturating at 256): its first ones are
    /// averaged, so it starts at the right size.
    pub(crate) resid_n: u32,
    /// Time of the first scored point (the end of the warm-up).
    pub(crate) first_scored: Option<i64>,
    /// Two-stage only: the largest and smallest value of every block seen so far
    /// (`None` before the first block): the series' whole range, for the range view.
    pub(crate) range: Option<(f64, f64)>,
    /// Two-stage only: the usual half-range of a block (`(hi − lo) / 2`, averaged over
    /// about 64 blocks): a record by less is the block's own noise, not news.
    pub(crate) half_range: f64,
    /// Two-stage only: whether the second stage's scores count (it has settled:
    /// `Config::settle` blocks after its warm-up, and then a block below the alarm).
    pub(crate) settled: bool,
    /// Two-stage only: the young single-stage detector (`Config::young`), between a
    /// series' points `young_from` and `young`; `None` outside them.
    pub(crate) young: Option<Box<Detector>>,
    /// The views' surprises behind the last score (`None`: no score); [`Detector::views`]
    /// turns them into view scores only when asked, which is rarely on the ingest path.
    /// Not saved.
    pub(crate) zs: Option<[f64; VIEWS]>,
    /// Two-stage only: the first stage's surprises behind the last score (point, gap,
    /// flatline, step, spread), kept when the caller will explain the score
    /// ([`Detector::update_explaining`]); not saved. Here, not in [`Gate`], so that
    /// the first stage, written by every point, is two cache lines with its cold
    /// fields, and the server's slot three: only an explained point writes them.
    pub(crate) gate_zs: [f64; 5],
    /// The long window's values in ascending order (`f64::total_cmp`), kept beside the
    /// ring so the median and the median absolute deviation cost O(log n) per point.
    /// Not saved: rebuilt from the ring on restore ([`Detector::from_state`]).
    pub(crate) sorted: Vec<f64>,
    /// The last `Config::local` values in ascending order, for the local view; not
    /// saved: rebuilt from the ring on restore.
    pub(crate) local_sorted: Vec<f64>,
}

/// The seasonal profile ([`State::profile`]): from the first point the seasonal view
/// learns from, every bin at that point's value with no points learnt, but those that
/// learnt since. The first two bins that learn are kept inline and the table of every
/// bin (16 bytes a bin: 768 for the default 48) is made at the third: a young series
/// (the first hour or two of 10-second points, whose blocks fall in one or two of the
/// half-hour bins) holds none, which on a wide load is half of a new series' memory
/// beyond its first stage. The values are those the full table holds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Profile {
    /// Not started: the seasonal view is off, or has learnt nothing yet.
    Empty,
    /// Every bin at `fill` with no points, but the first `len` of `few` (bin, points,
    /// value).
    Few {
        fill: f64,
        few: [(u16, u8, f64); 2],
        len: u8,
    },
    /// Every bin: value and points.
    All(Vec<(f64, u8)>),
}

impl Profile {
    /// Whether it started (holds every bin).
    pub(crate) fn started(&self) -> bool {
        !matches!(self, Profile::Empty)
    }

    /// Starts it, every bin at `x` with no points; nothing once started.
    pub(crate) fn start(&mut self, x: f64) {
        if let Profile::Empty = self {
            *self = Profile::Few {
                fill: x,
                few: [(0, 0, 0.0); 2],
                len: 0,
            };
        }
    }

    /// The usual value of bin `b` (of a started profile; 0 before).
    pub(crate) fn value(&self, b: usize) -> f64 {
        match self {
            Profile::Empty => 0.0,
            Profile::Few { fill, few, len } => few[..usize::from(*len)]
                .iter()
                .find(|c| usize::from(c.0) == b)
                .map_or(*fill, |c| c.2),
            Profile::All(all) => all[b].0,
        }
    }

    /// The value and points of bin `b` of a started profile of `bins` bins (at most
    /// 4,096), to learn into.
    pub(crate) fn bin_mut(&mut self, b: usize, bins: usize) -> (&mut f64, &mut u8) {
        if let Profile::Few { fill, few, len } = self {
            let n = usize::from(*len);
            let at = few[..n].iter().position(|c| usize::from(c.0) == b);
            match at {
                Some(_) => {}
                None if n < few.len() => {
                    few[n] = (b as u16, 0, *fill);
                    *len += 1;
                }
                None => {
                    let mut all = vec![(*fill, 0); bins];
                    for &(c, k, v) in few.iter() {
                        all[usize::from(c)] = (v, k);
                    }
                    *self = Profile::All(all);
                }
            }
        }
        match self {
            Profile::Few { few, len, .. } => {
                let c = few[..usize::from(*len)]
                    .iter_mut()
                    .find(|c| usize::from(c.0) == b)
                    .expect("bin kept");
                (&mut c.2, &mut c.1)
            }
            Profile::All(all) => {
                let c = &mut all[b];
                (&mut c.0, &mut c.1)
            }
            Profile::Empty => panic!("profile not started"),
        }
    }

    /// Every bin's value and points, in order: `bins` of them once started, none
    /// before (the saved form).
    pub(crate) fn cells(&self, bins: usize) -> impl Iterator<Item = (f64, u8)> + '_ {
        let n = if self.started() { bins } else { 0 };
        (0..n).map(move |b| match self {
            Profile::All(all) => all[b],
            Profile::Few { fill, few, len } => few[..usize::from(*len)]
                .iter()
                .find(|c| usize::from(c.0) == b)
                .map_or((*fill, 0), |c| (c.2, c.1)),
            Profile::Empty => unreachable!("not started: no bins"),
        })
    }

    /// The profile whose bins are `cells` (none: not started), inline where it can
    /// be: where at most two bins learnt and the others all hold one value (as every
    /// profile that [`Profile::cells`] gave does).
    pub(crate) fn from_cells(cells: Vec<(f64, u8)>) -> Profile {
        if cells.is_empty() {
            return Profile::Empty;
        }
        let learnt: Vec<usize> = (0..cells.len()).filter(|&b| cells[b].1 > 0).collect();
        let fill = cells.iter().find(|c| c.1 == 0).map_or(0.0, |c| c.0);
        let alike = cells
            .iter()
            .all(|c| c.1 > 0 || c.0.to_bits() == fill.to_bits());
        if learnt.len() > 2 || !alike || cells.len() > usize::from(u16::MAX) {
            return Profile::All(cells);
        }
        let mut few = [(0, 0, 0.0); 2];
        for (i, &b) in learnt.iter().enumerate() {
            few[i] = (b as u16, cells[b].1, cells[b].0);
        }
        Profile::Few {
            fill,
            few,
            len: learnt.len() as u8,
        }
    }
}

/// The largest magnitude of a value the detector takes; beyond it a value is ignored,
/// as a non-finite one is: the differences and sums of values near `f64::MAX`
/// overflow, and an infinite deviation made the first stage's clipping panic.
pub const LARGEST: f64 = 1e300;

/// Whether the detector takes the value `x`: finite and within ±[`LARGEST`] (one
/// comparison, as `is_finite`'s; NaN compares false).
#[inline]
fn usable(x: f64) -> bool {
    x.abs() <= LARGEST
}

/// `Gate::last_ts` of a first stage that has accepted no point yet. A point at this
/// time (`i64::MIN` seconds) is therefore ignored by a two-stage detector, as a late one.
pub(crate) const NO_TS: i64 = i64::MIN;

/// The first stage of a two-stage detector ([`Config::block`] of 2 or more): a few
/// words read and written by every point, where the full detector (the second stage)
/// runs once per block. Saved and restored by [`crate::codec`] (versions 5 to 7).
///
/// `repr(C)`: what every point reads and writes comes first (112 bytes: with the
/// settings pointer just before it, [`Detector`] being `repr(C)` too, 120 bytes, two
/// cache lines of the server's cache-line-aligned slot, [`Detector::hot_bytes`]);
/// what only a few points touch follows (the time of the first score, the count of
/// ignored points; the surprises kept for explanations are in the second stage's
/// box, `State::gate_zs`, so that the server's slot is three lines). Hence the
/// narrow fields:
/// `last_ts` with a sentinel instead of an `Option`, and counters that are only
/// compared with small settings in 32 or 16 bits.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub(crate) struct Gate {
    /// Time of the last accepted point; [`NO_TS`] before the first.
    pub(crate) last_ts: i64,
    /// Accepted points.
    pub(crate) seen: u64,
    /// Usual time between points (seconds), 0 until two points were seen.
    pub(crate) step: f64,
    /// Robust running level and mean absolute deviation from it.
    pub(crate) level: f64,
    pub(crate) dev: f64,
    /// The previous accepted value (step and flatline checks) and the usual absolute
    /// step from one value to the next.
    pub(crate) prev: f64,
    pub(crate) jump: f64,
    /// The recent absolute step (about 8 points), against `jump` (noise bursts).
    pub(crate) jump_fast: f64,
    /// Decaying maximum of past first-stage surprises.
    pub(crate) peak: f64,
    /// Sum of the points of the block being filled.
    pub(crate) sum: f64,
    /// Largest and smallest value of the block being filled (the second stage's point
    /// views see the one further from their median; meaningless while `count` is 0).
    pub(crate) hi: f64,
    pub(crate) lo: f64,
    /// Scored points since the last alarm, saturating at `u32::MAX`: it is only
    /// compared with `Config::suppress`, which is far below (saved as 64 bits).
    pub(crate) since_alarm: u32,
    /// Points in a row equal to their previous one, and the longest such run that ended.
    pub(crate) flat_run: u32,
    pub(crate) flat_max: u32,
    /// Points of the block being filled (below `Config::block`, at most 4,096).
    pub(crate) count: u16,
    /// Whether a point was scored (`first_scored` is set), so that a point need not
    /// read `first_scored`.
    pub(crate) scored: bool,
    // Touched by few points: not among the lines the server fetches ahead.
    /// Time of the first scored point; [`NO_TS`] before it (`scored`). Eight bytes,
    /// not an `Option`'s sixteen, so that [`Detector`]'s pointer to its second
    /// stage, which only a block's last point reads, sits in the third cache line
    /// of the server's slot with this struct's cold fields, and that point fetches
    /// three lines, not four.
    pub(crate) first_scored: i64,
    /// Late, repeated, out-of-order or non-finite points.
    pub(crate) ignored: u64,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            last_ts: NO_TS,
            seen: 0,
            step: 0.0,
            level: 0.0,
            dev: 0.0,
            prev: 0.0,
            jump: 0.0,
            jump_fast: 0.0,
            peak: 0.0,
            sum: 0.0,
            hi: 0.0,
            lo: 0.0,
            since_alarm: 0,
            flat_run: 0,
            flat_max: 0,
            count: 0,
            scored: false,
            first_scored: NO_TS,
            ignored: 0,
        }
    }
}

/// One series' detector. Feed it the series' points in time order with [`update`].
///
/// [`update`]: Detector::update
#[derive(Clone, Debug)]
#[repr(C)]
pub struct Detector {
    /// Shared by every detector of a rule when the caller passes one `Arc` (the
    /// server does): the settings a point reads then stay in the cache instead of
    /// being fetched with each series' state.
    cfg: std::sync::Arc<Config>,
    /// The first stage (two-stage configurations only; default otherwise).
    pub(crate) gate: Gate,
    /// The full detector's state (the second stage's), boxed: a two-stage detector
    /// reads it once a block, so the detector itself is its settings and first stage
    /// (144 bytes), which a caller with many series keeps side by side (the server's
    /// huge pages).
    pub(crate) st: Box<State>,
}

impl Detector {
    /// A detector that has seen nothing. Panics on settings that
    /// [`Config::validate`] rejects; check them first where they come from users.
    pub fn new(cfg: impl Into<std::sync::Arc<Config>>) -> Detector {
        let cfg = cfg.into();
        if let Err(e) = cfg.validate() {
            panic!("{e}");
        }
        let st = State {
            last_ts: None,
            seen: 0,
            ignored: 0,
            step: 0.0,
            // grown as the window fills (a young series touches little memory)
            ring: Vec::new(),
            head: 0,
            bins: Bins::default(),
            // allocated at the first insertion ([`State::table`])
            table: Vec::new(),
            inserts: 0,
            since_alarm: u64::MAX,
            peak: [0.0; VIEWS],
            novel_fast: 0.0,
            novel_slow: 0.0,
            usual_step: 0.0,
            first_ts: 0,
            // allocated at the first point the seasonal view learns from
            profile: Profile::Empty,
            resid_fast: 0.0,
            resid_usual: 0.0,
            resid_n: 0,
            first_scored: None,
            range: None,
            half_range: 0.0,
            settled: false,
            young: None,
            zs: None,
            gate_zs: [0.0; 5],
            sorted: Vec::new(),
            local_sorted: Vec::new(),
        };
        Detector::from_state(cfg, st)
    }

    pub(crate) fn from_state(cfg: std::sync::Arc<Config>, mut st: State) -> Detector {
        let mut sorted = st.ring.clone();
        sorted.sort_unstable_by(f64::total_cmp);
        let n = st.ring.len();
        let mut local_sorted: Vec<f64> = (0..cfg.local.min(n))
            .map(|k| st.ring[(st.head + n - 1 - k) % n])
            .collect();
        local_sorted.sort_unstable_by(f64::total_cmp);
        st.zs = None;
        st.sorted = sorted;
        st.local_sorted = local_sorted;
        Detector {
            cfg,
            st: Box::new(st),
            gate: Gate::default(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Points ignored so far (late, repeated, out of order, not finite).
    pub fn ignored(&self) -> u64 {
        if self.cfg.two_stage() {
            self.gate.ignored
        } else {
            self.st.ignored
        }
    }

    /// Time of the first point given a score (the end of the warm-up), `None` before.
    pub fn first_scored(&self) -> Option<i64> {
        if self.cfg.two_stage() {
            self.gate.scored.then_some(self.gate.first_scored)
        } else {
            self.st.first_scored
        }
    }

    /// Points accepted so far.
    pub fn seen(&self) -> u64 {
        if self.cfg.two_stage() {
            self.gate.seen
        } else {
            self.st.seen
        }
    }

    /// The per-view scores behind the last score.
    pub fn views(&self) -> Views {
        let mut v = self
            .st
            .zs
            .map_or_else(Views::default, |zs| Views::from_surprises(&zs));
        if self.cfg.two_stage() {
            let [point, gap, flat, jump, spread] = self.st.gate_zs;
            v.point = v.point.max(half_one(point));
            v.level = v.level.max(half_one(jump));
            v.gap = v.gap.max(half_one(gap));
            v.spread = v.spread.max(half_one(flat)).max(half_one(spread));
            if let Some(young) = &self.st.young {
                let y = young.views();
                v.point = v.point.max(y.point);
                v.level = v.level.max(y.level);
                v.spread = v.spread.max(y.spread);
                v.pattern = v.pattern.max(y.pattern);
                v.gap = v.gap.max(y.gap);
                v.season = v.season.max(y.season);
            }
        }
        v
    }

    /// Bytes the detector's state takes in memory (its saved form is about the same).
    pub fn state_bytes(&self) -> usize {
        std::mem::size_of::<Detector>()
            + std::mem::size_of::<State>()
            + self.cfg.window * 8
            + self.cfg.context
            + self.st.table.len()
            + self.st.sorted.capacity() * 8
            + self.st.local_sorted.capacity() * 8
            + self.cfg.season_bins() * std::mem::size_of::<(f64, u8)>()
            + self.st.young.as_ref().map_or(0, |y| y.state_bytes())
    }

    /// How many bytes from the start of the detector the next point reads and writes
    /// (its window, table and profile are elsewhere): for a two-stage detector whose
    /// block does not end with that point, its settings pointer and the first lines
    /// of its first stage ([`Gate`], up to the time of its first score, which only
    /// the first scored point reads), when fed by [`Detector::update_explaining`]
    /// without `explain`; otherwise the whole struct. A caller with many series to
    /// update can ask the CPU to fetch these bytes of each of them ahead (a
    /// prefetch), so the state of many series comes in from memory at once instead
    /// of one after another.
    pub fn hot_bytes(&self) -> usize {
        if self.cfg.two_stage() && (self.gate.count as usize + 1) < self.cfg.block {
            std::mem::offset_of!(Detector, gate) + std::mem::offset_of!(Gate, first_scored)
        } else {
            std::mem::size_of::<Detector>()
        }
    }

    /// Takes the point `(ts, value)` (ts in seconds) and returns its anomaly score in
    /// `[0, 1]`, or `None` when the point was ignored (see the module doc) or the
    /// detector is still in its warm-up and has no opinion yet. [`Detector::views`]
    /// then explains the score.
    pub fn update(&mut self, ts: i64, value: f64) -> Option<f64> {
        self.update_explaining(ts, value, true)
    }

    /// [`Detector::update`] for a caller that asks for [`Detector::views`] only
    /// after some points: the score is the same, but a two-stage detector keeps the
    /// surprises behind it (for [`Detector::views`]) only when `explain` is true or
    /// the score is at or above the alarm (`Config::alarm`); after any other point
    /// its views describe an earlier one. Keeping them costs a write to a cache line
    /// that the point would not touch otherwise ([`Detector::hot_bytes`]), for every
    /// point of every series: the server explains the points of a series with an
    /// open event and the alarms, and nothing else.
    pub fn update_explaining(&mut self, ts: i64, value: f64, explain: bool) -> Option<f64> {
        if self.cfg.two_stage() {
            return self.update_two(ts, value, explain);
        }
        self.update_full(ts, value, None)
            .map(|s| if s < self.cfg.quiet { 0.0 } else { s })
    }

    /// Points of suppression after an alarm of the full detector: blocks when it is
    /// the second stage.
    fn suppress_len(&self) -> u64 {
        if self.cfg.two_stage() {
            (self.cfg.suppress / self.cfg.block) as u64
        } else {
            self.cfg.suppress as u64
        }
    }

    /// The two-stage update (module doc of [`Gate`], `Config::block`).
    fn update_two(&mut self, ts: i64, x: f64, explain: bool) -> Option<f64> {
        let g = &mut self.gate;
        // `ts <= NO_TS` only for `ts == NO_TS`, which is ignored (see `NO_TS`)
        if !usable(x) || ts <= g.last_ts {
            g.ignored += 1;
            return None;
        }
        let cfg = &self.cfg;
        let dt = (g.last_ts != NO_TS).then(|| ts.saturating_sub(g.last_ts) as f64);
        let floor = 1e-9 * (1.0 + g.level.abs());
        let d = (x - g.prev).abs();
        let fast = g.jump_fast + (d - g.jump_fast) / 8.0;
        // The checks' quotients, kept undivided: a warm-up point's are not used (but
        // for an explanation), and an ordinary point's only through comparisons that
        // multiplications decide (`Checks::at_most`).
        let checks = Checks {
            scaled: g.seen >= 8,
            point: ((x - g.level).abs(), g.dev.max(floor)),
            jump: (d, g.jump.max(floor)),
            spread: (fast + floor, g.jump + floor),
            gap: match dt {
                Some(dt) if g.step > 0.0 => (dt, g.step),
                _ => (0.0, 0.0),
            },
        };
        if let Some(dt) = dt {
            g.step = next_step(g.step, dt);
        }
        if g.seen > 0 && x == g.prev {
            g.flat_run = g.flat_run.saturating_add(1);
        } else {
            g.flat_max = g.flat_max.max(g.flat_run);
            g.flat_run = 0;
        }
        // (no run: 0, as the division gives, without it)
        let z_flat = if g.flat_run == 0 {
            0.0
        } else {
            g.flat_run as f64 / g.flat_max.max(16) as f64 / cfg.flat_half
        };
        // A flatline's surprise grows point by point, so its own past peak would keep
        // up with it: it is scored as it is, not against the peak.
        let first = if g.seen >= cfg.warmup as u64 {
            let peak = g.peak.max(cfg.peak_floor);
            let decayed = g.peak * cfg.peak_decay;
            // Most points: the surprise is provably below both the `quiet` bar (the
            // score is 0, as `half_one_or_below` gives) and the decayed peak (which
            // is then the new peak, as the `max` gives), so it is not computed.
            let z = match quiet_below(peak, cfg.quiet) {
                Some(bar) if checks.at_most(bar.min(decayed), cfg) => None,
                _ => Some(checks.z(cfg)),
            };
            let s = match z {
                // Below `quiet` (at most `alarm`) this score is only compared with
                // the two, and comes out as 0 or under the second stage's: where it
                // clearly is below, it is not computed (most points: no `exp`).
                Some(z) => half_one_or_below(z / peak, cfg.quiet),
                None => 0.0,
            };
            let incident = u64::from(g.since_alarm) < cfg.suppress as u64 || s >= cfg.alarm;
            g.peak = match z {
                Some(z) => {
                    let zc = if incident && cfg.incident_cap > 0.0 {
                        z.min(cfg.incident_cap * peak)
                    } else {
                        z
                    };
                    decayed.max(zc)
                }
                None => decayed,
            };
            Some(s.max(flat_score(z_flat, cfg.alarm)))
        } else {
            None
        };
        // Learn: the level follows clipped residuals, the deviation clipped ones too,
        // both averaged over the first 32 points and then weighted 1/32.
        if g.seen == 0 {
            g.level = x;
        } else {
            // (past the first 32 points the weights are powers of two: no division)
            let w = if g.seen >= 31 {
                1.0 / 32.0
            } else {
                // 1 / (seen + 1), as the division gives
                WEIGHTS[g.seen as usize]
            };
            let r = x - g.level;
            let (rc, ac) = if g.seen >= 8 {
                let lim = 4.0 * g.dev.max(floor);
                (r.clamp(-lim, lim), r.abs().min(5.0 * g.dev.max(floor)))
            } else {
                (r, r.abs())
            };
            g.level += rc * w;
            g.dev += (ac - g.dev) * w;
            g.jump_fast = fast;
            let d = if g.seen >= 8 {
                d.min(5.0 * g.jump.max(floor))
            } else {
                d
            };
            // slower than the level: a noise burst must not become usual within it
            g.jump += if g.seen >= 127 {
                (d - g.jump) / 128.0
            } else {
                (d - g.jump) / (g.seen + 1) as f64
            };
        }
        g.prev = x;
        g.last_ts = ts;
        g.seen += 1;
        g.sum += x;
        if g.count == 0 {
            (g.hi, g.lo) = (x, x);
        } else {
            g.hi = g.hi.max(x);
            g.lo = g.lo.min(x);
        }
        g.count += 1;
        let second = if g.count as usize >= cfg.block {
            let mean = g.sum / g.count as f64;
            let extremes = (g.hi, g.lo);
            g.sum = 0.0;
            g.count = 0;
            // The second stage settles (learns, its peaks too) for `settle` blocks
            // after its warm-up, and then until a block of it scores below the
            // alarm (an incident that began while it settled is not news), before
            // its scores count.
            let due = self.st.seen >= (cfg.warmup + cfg.settle) as u64;
            let alarm = cfg.alarm;
            let s = self.update_full(ts, mean, Some(extremes));
            if !self.st.settled && due && s.is_some_and(|s| s < alarm) {
                self.st.settled = true;
            }
            s.filter(|_| self.st.settled)
        } else {
            None
        };
        let young = self.update_young(ts, x);
        let cfg = &self.cfg;
        let g = &mut self.gate;
        // A first-stage alarm of its value checks (point, step, spread) on a value
        // inside the series' range so far (the range view's record: every earlier
        // block's largest and smallest value) is left to the second stage, which
        // sees the point at its block's end against its long window (and, on a
        // young series, to the young detector, which sees it now), unless it is
        // more than twice the checks' own past peak (`TWICE_ITS_PEAK`). Its gap and
        // flatline checks (time and runs, not values) speak as before, and so does
        // a first stage whose deviation is at its floor (it has measured no spread:
        // on a mostly-constant series every move is news). Only an alarm reads the
        // range, so other points touch no more memory.
        let first = match first {
            Some(f)
                if f >= cfg.alarm
                    && f < TWICE_ITS_PEAK
                    && self
                        .st
                        .range
                        .is_some_and(|(top, bottom)| bottom <= x && x <= top)
                    && g.dev > floor
                    && flat_score(z_flat, cfg.alarm) < cfg.alarm
                    && checks.gap(cfg)
                        < checks
                            .point_jump(cfg)
                            .max(spread_z(checks.spread_ratio(), cfg.spread_half)) =>
            {
                Some(0.0)
            }
            f => f,
        };
        let raw = match (first, second) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let raw = match (raw, young) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let zs = || checks.explained(z_flat, cfg);
        let Some(raw) = raw else {
            if explain {
                self.st.gate_zs = zs();
            }
            return None;
        };
        let out = if u64::from(g.since_alarm) < cfg.suppress as u64 {
            raw * cfg.damp
        } else {
            raw
        };
        if !g.scored {
            g.scored = true;
            g.first_scored = ts;
        }
        if raw >= cfg.alarm {
            g.since_alarm = 0;
        } else {
            g.since_alarm = g.since_alarm.saturating_add(1);
        }
        let out = out.clamp(0.0, 1.0);
        let out = if out < cfg.quiet { 0.0 } else { out };
        if explain || out >= cfg.alarm {
            self.st.gate_zs = zs();
        }
        Some(out)
    }

    /// The young single-stage detector's score of the point just taken by the first
    /// stage (`Config::young`): `None` outside the series' points `young_from` to
    /// `young` (a comparison of the first stage's count, no other work), and in the
    /// young detector's own warm-up.
    #[inline]
    fn update_young(&mut self, ts: i64, x: f64) -> Option<f64> {
        // the first stage's accepted points, this one included
        let n = self.gate.seen;
        if n <= self.cfg.young_from as u64 || n > self.cfg.young as u64 {
            return None;
        }
        self.young_point(ts, x, n)
    }

    /// [`Detector::update_young`] inside the young span: starts the single-stage
    /// detector at its first point, feeds it, and drops it after its last. A series
    /// restored inside the span from a state saved without one (version 7) goes on
    /// without it: one started later would learn from a slice of the series.
    /// Out of line and cold: inlined, it doubled the size of the every-point update
    /// (`sumi bench`'s series never get here) and made its every point slower.
    #[cold]
    #[inline(never)]
    fn young_point(&mut self, ts: i64, x: f64, n: u64) -> Option<f64> {
        if n == self.cfg.young_from as u64 + 1 {
            self.st.young = Some(Box::new(Detector::new(self.cfg.young_config())));
        }
        let young = self.st.young.as_mut()?;
        let s = young.update_full(ts, x, None);
        if young.st.seen == 1 && self.st.last_ts.is_some() {
            // The series' history began before the young detector: its seasonal
            // view counts its two seasons from the second stage's first block.
            young.st.first_ts = self.st.first_ts;
        }
        if n >= self.cfg.young as u64 {
            self.st.young = None;
        }
        s
    }

    /// The full detector's update: the score before `quiet`. `extremes` (the second
    /// stage's: the block's largest and smallest value, `value` being its mean) are
    /// what its point and local views measure, so a spike inside a block is not
    /// averaged away; everything else sees and learns `value`.
    fn update_full(&mut self, ts: i64, value: f64, extremes: Option<(f64, f64)>) -> Option<f64> {
        if !usable(value) || self.st.last_ts.is_some_and(|last| ts <= last) {
            self.st.ignored += 1;
            return None;
        }
        let dt = self.st.last_ts.map(|last| ts.saturating_sub(last) as f64);
        let stats = (!self.st.ring.is_empty()).then(|| self.level_and_spread());
        let score = match stats {
            Some((med, spread)) if self.st.seen >= self.cfg.warmup as u64 => {
                Some(self.score(ts, value, extremes, dt, med, spread))
            }
            _ => {
                self.st.zs = None;
                None
            }
        };
        let score = match (score, extremes) {
            (Some(s), Some(ext)) => Some(s.max(self.range_score(ext))),
            (s, _) => s,
        };
        if let Some((hi, lo)) = extremes {
            // (halved before the subtraction: finite for any finite values)
            let half = hi / 2.0 - lo / 2.0;
            (self.st.range, self.st.half_range) = match self.st.range {
                Some((top, bottom)) => (
                    Some((top.max(hi), bottom.min(lo))),
                    self.st.half_range + (half - self.st.half_range) / 64.0,
                ),
                None => (Some((hi, lo)), half),
            };
        }
        self.learn(value, dt, stats);
        self.learn_season(ts, value);
        if self.st.last_ts.is_none() {
            self.st.first_ts = ts;
        }
        self.st.last_ts = Some(ts);
        self.st.seen += 1;
        if let Some(s) = score {
            if self.st.first_scored.is_none() {
                self.st.first_scored = Some(ts);
            }
            if s >= self.cfg.alarm {
                self.st.since_alarm = 0;
            } else {
                self.st.since_alarm = self.st.since_alarm.saturating_add(1);
            }
        }
        score
    }

    /// The range view's score of a block whose largest and smallest values are
    /// `(hi, lo)`: how far the block goes beyond the largest or smallest value of
    /// every block before it, in that whole range, `Config::range_half` of it
    /// scoring 0.5; nothing when it goes beyond by no more than a block's usual
    /// half-range (a noisy series' range grows by its noise for a long time). Not
    /// compared with its own past: a record is news however often the series broke
    /// one before.
    fn range_score(&mut self, (hi, lo): (f64, f64)) -> f64 {
        let Some((top, bottom)) = self.st.range else {
            return 0.0;
        };
        let beyond = (hi - top).max(bottom - lo);
        if self.cfg.range_half <= 0.0 || top <= bottom || beyond <= self.st.half_range {
            return 0.0;
        }
        let beyond = beyond / (top - bottom);
        let z = beyond / self.cfg.range_half;
        if let Some(zs) = self.st.zs.as_mut() {
            // explained as a spike: it is the point view's kind of news
            zs[0] = zs[0].max(z);
        }
        half_one(z)
    }

    /// The k-th newest value in the long window (0 = newest).
    fn back(&self, k: usize) -> f64 {
        // head <= n and k < n, so one subtraction wraps (no division per value)
        let n = self.st.ring.len();
        let i = self.st.head + n - 1 - k;
        self.st.ring[if i >= n { i - n } else { i }]
    }

    /// Median and robust spread of the long window, from the sorted copy: the median is
    /// the middle element, the median absolute deviation the middle element of two sorted
    /// runs (distances to the right and to the left of the median), found by bisection.
    fn level_and_spread(&mut self) -> (f64, f64) {
        let v = &self.st.sorted;
        let n = v.len();
        let mid = n / 2;
        let med = v[mid];
        let mut spread = 1.4826 * kth_abs_dev(v, mid, mid);
        if spread <= 0.0 {
            // Mostly constant series: the mean absolute deviation still sees the rare moves.
            // The run of values equal to the median adds nothing (sorted: one run), so
            // only the values outside it are summed, in the same order.
            let lo = v.partition_point(|p| p.total_cmp(&med).is_lt());
            let hi = v.partition_point(|p| p.total_cmp(&med).is_le());
            let abs_sum: f64 = v[..lo]
                .iter()
                .chain(&v[hi..])
                .map(|x| (x - med).abs())
                .sum();
            spread = 1.2533 * abs_sum / n as f64;
        }
        let floor = 1e-9 * (1.0 + med.abs());
        (med, spread.max(floor))
    }

    /// Phase bin of `ts` within the season.
    fn season_bin(&self, ts: i64) -> usize {
        let season = self.cfg.season as i64;
        let bins = self.cfg.season_bins() as i64;
        (ts.rem_euclid(season) * bins / season) as usize
    }

    /// Seasonal surprise of `x` at `ts`: the recent mean residual from the profile
    /// against the usual absolute residual, once two seasons were seen.
    fn season_z(&self, ts: i64, x: f64, eps: f64) -> (f64, f64) {
        let bins = self.cfg.season_bins();
        if bins == 0 || !self.st.profile.started() {
            return (0.0, 0.0);
        }
        let resid = x - self.st.profile.value(self.season_bin(ts));
        let fast = self.st.resid_fast + (resid - self.st.resid_fast) / self.cfg.short as f64;
        if ts.saturating_sub(self.st.first_ts) < 2 * self.cfg.season as i64 {
            return (0.0, fast);
        }
        (
            fast.abs() / (self.st.resid_usual + eps) / self.cfg.season_half,
            fast,
        )
    }

    fn learn_season(&mut self, ts: i64, x: f64) {
        let bins = self.cfg.season_bins();
        if bins == 0 {
            return;
        }
        // Not yet a full profile: fill it with the first value.
        self.st.profile.start(x);
        let b = self.season_bin(ts);
        let resid = x - self.st.profile.value(b);
        self.st.resid_fast += (resid - self.st.resid_fast) / self.cfg.short as f64;
        if ts.saturating_sub(self.st.first_ts) >= self.cfg.season as i64 {
            let u = self.st.resid_usual;
            let n = self.st.resid_n;
            let d = if n > 8 {
                resid.abs().min(5.0 * u)
            } else {
                resid.abs()
            };
            self.st.resid_n = (n + 1).min(256);
            self.st.resid_usual += (d - u) / self.st.resid_n as f64;
        }
        let (usual, n) = self.st.profile.bin_mut(b, bins);
        *n = n.saturating_add(1);
        *usual += resid * self.cfg.season_rate.max(1.0 / *n as f64);
    }

    fn score(
        &mut self,
        ts: i64,
        x: f64,
        extremes: Option<(f64, f64)>,
        dt: Option<f64>,
        med: f64,
        spread: f64,
    ) -> f64 {
        let cfg = &self.cfg;

        let short = cfg.short.min(self.st.ring.len() + 1);
        let mut sum = x;
        for k in 0..short - 1 {
            sum += self.back(k);
        }

        // Spread of the last points as the mean step between neighbours, against the
        // long-run typical step: seasonality moves the level, not the step, so a smooth
        // daily curve is not mistaken for calm nor its climb for noise.
        let sw = cfg.spread_window.min(self.st.ring.len());
        let mut steps = (x - self.back(0)).abs();
        for k in 0..sw - 1 {
            steps += (self.back(k) - self.back(k + 1)).abs();
        }
        let recent_step = steps / sw as f64;
        let eps = 1e-9 * (1.0 + med.abs());
        let log_ratio = ((recent_step + eps) / (self.st.usual_step + eps)).ln();
        let z_spread = if log_ratio >= 0.0 {
            log_ratio / cfg.spread_half.ln()
        } else {
            -log_ratio / cfg.calm_half.ln()
        };

        let key = self.context_key(self.quantise(x, med, spread));
        // an empty table (nothing inserted yet) reads as all 0
        let novel = if self.st.table.get(key).is_none_or(|&c| c == 0) {
            1.0
        } else {
            0.0
        };
        self.st.novel_fast += (novel - self.st.novel_fast) / 8.0;
        let z_pattern = cfg.pattern_weight * self.st.novel_fast
            / self.st.novel_slow.max(0.02)
            / cfg.pattern_half;
        self.st.novel_slow += (novel - self.st.novel_slow) / 1024.0;

        let (z_season, _) = self.season_z(ts, x, eps);
        // The point views measure the block's value furthest from their own median.
        let furthest = |m: f64| match extremes {
            Some((hi, lo)) if (lo - m).abs() > (hi - m).abs() => lo,
            Some((hi, _)) => hi,
            None => x,
        };
        let x_point = furthest(med);
        let x_local = match self.st.local_sorted.get(self.st.local_sorted.len() / 2) {
            Some(&m) => furthest(m),
            None => x,
        };
        let z_local = self.local_z(x_local, spread, eps);
        let cfg = &self.cfg;

        let zs = [
            (x_point - med).abs() / spread / cfg.point_half,
            (sum / short as f64 - med).abs() / spread / cfg.level_half,
            z_spread,
            z_pattern,
            match dt {
                Some(dt) if self.st.step > 0.0 => dt / self.st.step / cfg.gap_half,
                _ => 0.0,
            },
            z_season,
            z_local,
        ];
        // The second stage's peaks decay per block (`block_peak_decay`).
        let decay = if cfg.two_stage() {
            cfg.block_peak_decay
        } else {
            cfg.peak_decay
        };
        let raw = if cfg.peak_decay > 0.0 {
            let mut r: f64 = 0.0;
            if cfg.peak_per_view {
                for (z, peak) in zs.iter().zip(self.st.peak.iter()) {
                    r = r.max(z / peak.max(cfg.peak_floor));
                }
                // Inside an incident (an alarm or its suppression) a view's peak grows
                // by at most `incident_cap` times itself, so one incident does not
                // mask the next for thousands of points.
                // A second stage still settling learns its peaks in full: what it
                // meets then is the series' ordinary life, not an incident.
                let settling = cfg.two_stage() && self.st.seen < (cfg.warmup + cfg.settle) as u64;
                let incident = !settling
                    && (self.st.since_alarm < self.suppress_len()
                        || 1.0 - (-r * r * std::f64::consts::LN_2).exp() >= cfg.alarm);
                for (z, peak) in zs.iter().zip(self.st.peak.iter_mut()) {
                    let z = if incident && cfg.incident_cap > 0.0 {
                        z.min(cfg.incident_cap * peak.max(cfg.peak_floor))
                    } else {
                        *z
                    };
                    *peak = (*peak * decay).max(z);
                }
            } else {
                let z = zs.iter().fold(0.0f64, |a, &b| a.max(b));
                r = z / self.st.peak[0].max(cfg.peak_floor);
                self.st.peak[0] = (self.st.peak[0] * decay).max(z);
            }
            1.0 - (-r * r * std::f64::consts::LN_2).exp()
        } else {
            let v = Views::from_surprises(&zs);
            v.point
                .max(v.level)
                .max(v.spread)
                .max(v.pattern)
                .max(v.gap)
                .max(v.season)
        };
        self.st.zs = Some(zs);
        // A second stage's scores are damped by the first stage's suppression, which
        // its own alarms start and prolong: it gives them undamped.
        let out = if self.st.since_alarm < self.suppress_len() && !cfg.two_stage() {
            raw * cfg.damp
        } else {
            raw
        };
        out.clamp(0.0, 1.0)
    }

    /// Local surprise of `x`: its distance from the median of the last `local` values in
    /// their robust spreads (floored at a tenth of the long window's spread, so a short
    /// run of equal values does not make every later move a spike).
    fn local_z(&self, x: f64, spread: f64, eps: f64) -> f64 {
        let v = &self.st.local_sorted;
        if self.cfg.local == 0 || v.len() < self.cfg.local / 2 {
            return 0.0;
        }
        let mid = v.len() / 2;
        let med = v[mid];
        let mut sp = 1.4826 * kth_abs_dev(v, mid, mid);
        if sp <= 0.0 {
            sp = 1.2533 * v.iter().map(|y| (y - med).abs()).sum::<f64>() / v.len() as f64;
        }
        let sp = sp.max(0.1 * spread).max(eps);
        (x - med).abs() / sp / self.cfg.local_half
    }

    fn quantise(&self, x: f64, med: f64, spread: f64) -> i8 {
        let b = ((x - med) / (spread * self.cfg.bin_width)).round();
        let m = self.cfg.max_bin as f64;
        b.clamp(-m, m) as i8
    }

    /// Table cell of the context ending with `bin`.
    fn context_key(&self, bin: i8) -> usize {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in self.st.bins.iter().chain(std::iter::once(&bin)) {
            h = (h ^ (b as u8 as u64)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - self.cfg.table_bits)) as usize
    }

    fn learn(&mut self, x: f64, dt: Option<f64>, stats: Option<(f64, f64)>) {
        if let Some(dt) = dt {
            self.st.step = next_step(self.st.step, dt);
        }
        // Context of this point, quantised against the window before it.
        if let Some((med, spread)) = stats {
            let bin = self.quantise(x, med, spread);
            if self.st.bins.len() + 1 >= self.cfg.context {
                let key = self.context_key(bin);
                if self.st.table.is_empty() {
                    self.st.table = vec![0; 1 << self.cfg.table_bits];
                }
                let cell = &mut self.st.table[key];
                *cell = cell.saturating_add(1);
                self.st.inserts += 1;
                if self.st.inserts >= self.st.table.len() as u64 * 4 {
                    self.st.inserts = 0;
                    for c in self.st.table.iter_mut() {
                        *c /= 2;
                    }
                }
            }
            if self.cfg.context > 1 {
                if self.st.bins.len() + 1 >= self.cfg.context {
                    self.st.bins.remove_first();
                }
                self.st.bins.push(bin);
            }
        }
        if !self.st.ring.is_empty() {
            let prev = self.back(0);
            // Clipped, so one spike does not teach that big steps are usual.
            let d = (x - prev).abs();
            let u = self.st.usual_step;
            let d = if self.st.seen < 2 {
                d
            } else {
                d.min(5.0 * u + 1e-12)
            };
            self.st.usual_step += (d - u)
                / if self.st.seen < 64 {
                    (self.st.seen + 1) as f64
                } else {
                    256.0
                };
        }
        if self.cfg.local > 0 {
            if self.st.local_sorted.len() >= self.cfg.local {
                let old = self.back(self.cfg.local - 1);
                replace_sorted(&mut self.st.local_sorted, old, x);
            } else {
                insert_sorted(&mut self.st.local_sorted, x);
            }
        }
        if self.st.ring.len() == self.cfg.window {
            let old = self.st.ring[self.st.head];
            replace_sorted(&mut self.st.sorted, old, x);
        } else {
            insert_sorted(&mut self.st.sorted, x);
        }
        if self.st.ring.len() < self.cfg.window {
            self.st.ring.push(x);
            self.st.head = self.st.ring.len() % self.cfg.window;
        } else {
            self.st.ring[self.st.head] = x;
            self.st.head = (self.st.head + 1) % self.cfg.window;
        }
    }
}

/// The usual step after a step of `dt`: it follows the typical spacing, not the odd gap.
fn next_step(step: f64, dt: f64) -> f64 {
    if step <= 0.0 {
        dt
    } else if dt < step * 3.0 {
        step + (dt - step) * 0.05
    } else {
        step + (dt.min(step * 3.0) - step) * 0.01
    }
}

/// Inserts `x` into the ascending (`f64::total_cmp`) `v`, before any equal values.
fn insert_sorted(v: &mut Vec<f64>, x: f64) {
    let at = v.partition_point(|p| p.total_cmp(&x).is_lt());
    v.insert(at, x);
}

/// Replaces one value equal to `old` by `x` in the ascending `v`, leaving exactly what
/// removing `old` and then [`insert_sorted`] would: only the values between the two
/// places move, one step (instead of two moves of everything after each place).
fn replace_sorted(v: &mut [f64], old: f64, x: f64) {
    let a = v
        .binary_search_by(|p| p.total_cmp(&old))
        .expect("window value in its sorted copy");
    // values below x in the full slice; `old` is among them exactly when old < x
    let b = v.partition_point(|p| p.total_cmp(&x).is_lt());
    if b > a {
        v.copy_within(a + 1..b, a);
        v[b - 1] = x;
    } else {
        v.copy_within(b..a, b + 1);
        v[b] = x;
    }
}

/// The `k`-th smallest (0-based) of `|v[i] - v[mid]|` over the sorted slice `v`: the
/// distances form two ascending runs, `v[mid..] - med` and `med - v[..mid]` read
/// backwards; bisect on how many of the `k + 1` smallest come from the first run.
fn kth_abs_dev(v: &[f64], mid: usize, k: usize) -> f64 {
    let med = v[mid];
    let a_len = v.len() - mid;
    let b_len = mid;
    let a = |t: usize| v[mid + t] - med;
    let b = |t: usize| med - v[mid - 1 - t];
    let want = k + 1;
    let (mut lo, mut hi) = (want.saturating_sub(b_len), want.min(a_len));
    loop {
        let i = (lo + hi) / 2;
        let j = want - i;
        if i > 0 && j < b_len && a(i - 1) > b(j) {
            hi = i - 1;
        } else if j > 0 && i < a_len && b(j - 1) > a(i) {
            lo = i + 1;
        } else {
            let from_a = if i > 0 { a(i - 1) } else { f64::NEG_INFINITY };
            let from_b = if j > 0 { b(j - 1) } else { f64::NEG_INFINITY };
            return from_a.max(from_b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        half_one, half_one_or_below, insert_sorted, kth_abs_dev, quiet_below, replace_sorted,
        spread_z, spread_z_at_most, Checks, Profile, WEIGHTS,
    };
    use crate::config::Config;

    /// The profile with its first two bins inline holds what the full table holds
    /// (the table filled with the first value, then learnt into bin by bin), through
    /// the third bin and beyond, and saved and restored at every step.
    #[test]
    fn profile_inline_matches_the_table() {
        let mut rng: u64 = 7;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for bins in [1, 2, 3, 48, 4096] {
            for _ in 0..200 {
                let mut table: Vec<(f64, u8)> = Vec::new();
                let mut p = Profile::Empty;
                // a few bins, often the same ones (as a series' blocks fall)
                let span = 1 + (next() % 4) as usize;
                let base = (next() as usize) % bins;
                for step in 0..12 {
                    let b = (base + (next() as usize) % span) % bins;
                    let x = (next() % 1000) as f64 / 7.0;
                    if table.is_empty() {
                        table.resize(bins, (x, 0));
                    }
                    p.start(x);
                    let (usual, n) = &mut table[b];
                    *n = n.saturating_add(1);
                    *usual += (x - *usual) * 0.02f64.max(1.0 / *n as f64);
                    let (usual, n) = p.bin_mut(b, bins);
                    *n = n.saturating_add(1);
                    *usual += (x - *usual) * 0.02f64.max(1.0 / *n as f64);
                    assert_eq!(
                        p.cells(bins).collect::<Vec<_>>(),
                        table,
                        "bins {bins} step {step}"
                    );
                    for (c, cell) in table.iter().enumerate().take(64) {
                        assert_eq!(p.value(c).to_bits(), cell.0.to_bits());
                    }
                    if step % 3 == 0 {
                        p = Profile::from_cells(p.cells(bins).collect());
                    }
                }
                let learnt = table.iter().filter(|c| c.1 > 0).count();
                assert_eq!(matches!(p, Profile::All(_)), learnt > 2, "{p:?}");
            }
        }
        assert!(!Profile::Empty.started() && Profile::from_cells(Vec::new()) == Profile::Empty);
        // bins that learnt nothing but hold different values: kept as a table
        let odd = vec![(1.0, 0), (2.0, 0), (3.0, 1)];
        assert_eq!(Profile::from_cells(odd.clone()), Profile::All(odd));
    }

    /// The learning weights' table holds what the division gives.
    #[test]
    fn weights_are_the_divisions() {
        for (k, w) in WEIGHTS.iter().enumerate() {
            let n = std::hint::black_box((k + 1) as f64);
            assert_eq!(w.to_bits(), (1.0 / n).to_bits(), "1/{n}");
        }
    }

    /// A surprise at most `quiet_below`'s bar scores 0 (`half_one_or_below` gives 0):
    /// on a fine grid up to the bar and past it, for several peaks and `quiet`s.
    #[test]
    fn quiet_below_is_below_the_bar() {
        assert!(quiet_below(1.0, 0.0).is_none() && quiet_below(1.0, 1e-13).is_none());
        let mut near = 0;
        for q in [1e-11, 1e-6, 0.05, 0.3, 0.6, 1.0] {
            for peak in [0.5, 0.5000001, 1.0, 3.7, 1e3, 1e-3] {
                let bar = quiet_below(peak, q).expect("a bar");
                for i in 0..=100_000 {
                    // up to the bar, the last steps an ulp or so apart
                    let z = bar * (1.0 - (100_000 - i) as f64 * 1e-12);
                    let z = if i == 100_000 { bar } else { z };
                    assert_eq!(
                        half_one_or_below(z / peak, q),
                        0.0,
                        "q {q} peak {peak} z {z}"
                    );
                }
                // and the bar is close: 10⁻⁵ above it (then 1.00001² − 1 ≫ the margin)
                // the test fails
                let y = bar * 1.00001 / peak;
                near += usize::from(y * y * std::f64::consts::LN_2 >= 0.99 * q - 1e-12);
            }
        }
        assert_eq!(near, 36);
    }

    /// `Checks::at_most(t)` is true only where `Checks::z` is at most `t`: on random
    /// checks whose quotients sit just below, at and just above `t` (a few ulps to
    /// 10⁻⁶ apart), for the default settings and extreme ones; and it is true for
    /// most of those clearly below.
    #[test]
    fn checks_at_most_bounds_z() {
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        // how far a quotient sits from t: a relative offset of up to 10⁻⁶ either
        // way, or a few ulps, or well below
        let off = |u: f64, v: f64| match (u * 4.0) as u32 {
            0 => (v - 0.5) * 2e-6,
            1 => (v - 0.5) * 1e-15,
            2 => -v,
            _ => -1.0,
        };
        let mut cfgs = vec![Config::default()];
        for (gate, gap, spread) in [
            (1e-3, 1e-3, 1.0 + 1e-9),
            (1e6, 3.0, 1.5),
            (0.7, 1e5, 1e6),
            (1e300, 1e300, 1e300),
        ] {
            let mut c = Config::default();
            (c.gate_half, c.gap_half, c.spread_half) = (gate, gap, spread);
            cfgs.push(c);
        }
        let (mut yes, mut clear) = (0usize, 0usize);
        for cfg in &cfgs {
            for _ in 0..400_000 {
                let t = match (next() * 4.0) as u32 {
                    0 => 0.0,
                    1 => 10f64.powf(next() * 8.0 - 4.0),
                    _ => next() * 3.0,
                };
                let b = 10f64.powf(next() * 12.0 - 6.0);
                let point = (t * cfg.gate_half * b * (1.0 + off(next(), next())), b);
                let b = 10f64.powf(next() * 12.0 - 6.0);
                let jump = (t * cfg.gate_half * b * (1.0 + off(next(), next())), b);
                let step = 1.0 + next() * 100.0;
                let gap = if next() < 0.1 {
                    (0.0, 0.0)
                } else {
                    (
                        (t * cfg.gap_half * step * (1.0 + off(next(), next()))).clamp(0.0, 1e19),
                        step,
                    )
                };
                // a spread ratio r with ln r / ln h near t
                let den = 10f64.powf(next() * 18.0 - 9.0);
                let r = (t * cfg.spread_half.ln() * (1.0 + off(next(), next()))).exp();
                // (the recent step is a finite value's, as the first stage's is)
                let spread = ((den * r).min(1e300), den);
                let o = off(next(), next());
                // (the differences of values within ±10³⁰⁰, as the first stage's are)
                let scale = |(a, b): (f64, f64)| ((a * (1.0 + o)).clamp(0.0, 2e300), b);
                let c = Checks {
                    scaled: next() < 0.9,
                    point: scale(point),
                    jump: scale(jump),
                    spread,
                    gap,
                };
                let z = c.z(cfg);
                if c.at_most(t, cfg) {
                    assert!(z <= t, "z {z} above {t}: {cfg:?}");
                    yes += 1;
                }
                clear += usize::from(z < t * (1.0 - 1e-8) && t > 1e-100);
            }
        }
        // (the check itself is not vacuous: most of the clearly-below ones pass, all
        // but those whose spread ratio is within the logarithms' bounds of `t` and,
        // with settings of 10³⁰⁰, those whose products overflow)
        assert!(yes * 2 > clear && clear > 100_000, "{yes} of {clear}");
    }

    /// Skipping the `exp` where the score is clearly below the bar changes nothing
    /// at or above it, and gives something below it where it was below: checked on a
    /// fine grid around each bar, the bars' own edges included.
    #[test]
    fn half_one_or_below_agrees_at_and_above_the_bar() {
        let mut skipped = 0;
        for q in [0.0, 1e-13, 1e-11, 1e-6, 0.05, 0.3, 0.6, 0.999, 1.0] {
            for i in 0..200_000 {
                let z = i as f64 * 2e-5;
                let (s, t) = (half_one(z), half_one_or_below(z, q));
                if s >= q {
                    assert_eq!(t.to_bits(), s.to_bits(), "z {z} bar {q}");
                } else {
                    assert!(t < q && (t == s || t == 0.0), "z {z} bar {q}: {t}");
                }
                skipped += usize::from(t != s);
            }
        }
        assert!(skipped > 100_000, "{skipped}");
    }

    /// `spread_z_at_most` is at least `spread_z` (so a point whose other checks reach
    /// it may skip the logarithms): on a fine grid of ratios near 1, where the bound
    /// is tightest, and far above it, for the default `spread_half` and others.
    #[test]
    fn spread_z_at_most_bounds_spread_z() {
        for half in [1.0 + 1e-9, 1.5, 4.0, 10.0, 1e6] {
            let near = (0..200_000).map(|i| 1.0 + i as f64 * 1e-17 * 1.0001f64.powi(i));
            let far = (0..10_000).map(|i| 1.0 + i as f64 * 0.01);
            for r in near.chain(far).chain([f64::MAX, f64::INFINITY, 0.5, 0.0]) {
                let (z, at_most) = (spread_z(r, half), spread_z_at_most(r, half));
                assert!(z <= at_most, "ratio {r} half {half}: {z} above {at_most}");
            }
        }
        assert!(spread_z_at_most(f64::NAN, 4.0) == 0.0 && spread_z(f64::NAN, 4.0) == 0.0);
    }

    /// Replacing in place leaves what removing and inserting leaves, ties included.
    #[test]
    fn replace_sorted_matches_remove_and_insert() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m) as f64 - (m / 2) as f64
        };
        for n in 1..40 {
            let mut v: Vec<f64> = (0..n).map(|_| next(7)).collect();
            v.sort_unstable_by(f64::total_cmp);
            for _ in 0..50 {
                let old = v[next(n as u64).abs() as usize % n];
                let x = next(9) * 0.5;
                let mut want = v.clone();
                let at = want.binary_search_by(|p| p.total_cmp(&old)).unwrap();
                want.remove(at);
                insert_sorted(&mut want, x);
                replace_sorted(&mut v, old, x);
                assert_eq!(v, want, "n {n} old {old} x {x}");
            }
        }
    }

    /// The bisection agrees with sorting all distances, with ties and odd/even lengths.
    #[test]
    fn kth_abs_dev_matches_sorting() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for n in 1..80 {
            for round in 0..20 {
                let mut v: Vec<f64> = (0..n)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        let r = (seed % 1000) as f64;
                        if round % 2 == 0 {
                            (r / 100.0).floor()
                        } else {
                            r * 0.37 - 150.0
                        }
                    })
                    .collect();
                v.sort_unstable_by(f64::total_cmp);
                let mid = n / 2;
                let mut d: Vec<f64> = v.iter().map(|x| (x - v[mid]).abs()).collect();
                d.sort_unstable_by(f64::total_cmp);
                for (k, want) in d.iter().enumerate() {
                    assert_eq!(
                        kth_abs_dev(&v, mid, k).to_bits(),
                        want.to_bits(),
                        "n {n} k {k} {v:?}"
                    );
                }
            }
        }
    }
}
