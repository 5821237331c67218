//! Detector settings. [`Config::default`] is the configuration measured on NAB
//! (docs/anomaly.md); it is meant for any metric, without tuning.

/// Settings of a [`crate::Detector`]. Fields that size or shape the state (`window`,
/// `context`, `table_bits`, `season`, `bins_per_season`) are recorded in saved state; a
/// state saved under other values is refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Points in the long window whose median and median absolute deviation are the
    /// series' usual level and spread.
    pub window: usize,
    /// Points averaged for the level view (short window against the long one).
    pub short: usize,
    /// Points whose standard deviation the spread view compares with the long window's.
    pub spread_window: usize,
    /// Accepted points before the first score: the detector only learns until then.
    pub warmup: usize,
    /// Robust z-score (distance from the median in spreads) at which the point view
    /// scores 0.5.
    pub point_half: f64,
    /// Robust z-score of the short window's mean at which the level view scores 0.5.
    pub level_half: f64,
    /// Ratio of the recent mean step between neighbouring values to the usual one at
    /// which the spread view scores 0.5 (noisier than usual).
    pub spread_half: f64,
    /// The same ratio, the other way (calmer than usual; a series gone flat).
    pub calm_half: f64,
    /// Width of one quantisation bin of the pattern view, in spreads.
    pub bin_width: f64,
    /// Bins each side of the median; values further out share the last bin.
    pub max_bin: i32,
    /// Consecutive quantised values forming one context of the pattern view.
    pub context: usize,
    /// log2 of the number of cells of the context table.
    pub table_bits: u32,
    /// Weight of the pattern view (0 turns it off).
    pub pattern_weight: f64,
    /// Recent rate of novel contexts, in multiples of the long-run rate, at which the
    /// pattern view scores 0.5.
    pub pattern_half: f64,
    /// Time between points, in multiples of the usual step, at which the gap view
    /// scores 0.5.
    pub gap_half: f64,
    /// Points after an alarm during which scores are damped: one incident, one alarm.
    pub suppress: usize,
    /// Score at or above which a point counts as an alarm for `suppress`.
    pub alarm: f64,
    /// Factor applied to scores while suppressed.
    pub damp: f64,
    /// When above 0, the score compares each point's surprise with the largest surprise
    /// of the recent past, which decays by this factor per point: a series whose
    /// ordinary life is bumpy must surprise more than it usually does.
    pub peak_decay: f64,
    /// The smallest past peak used in that comparison (1 = each view's half point).
    pub peak_floor: f64,
    /// Keep one peak per view (each view compared with its own past) rather than one
    /// for all.
    pub peak_per_view: bool,
    /// Inside an incident (an alarm and the `suppress` points after it) a view's peak
    /// grows to at most this many times itself (0 = no limit), so one incident does
    /// not make the series' next one look ordinary.
    pub incident_cap: f64,
    /// Length of the season in seconds (86,400: a day); 0 turns the seasonal view off.
    pub season: u64,
    /// Phase bins per season in the seasonal profile.
    pub bins_per_season: usize,
    /// Share of a residual a profile bin takes on per point.
    pub season_rate: f64,
    /// Recent mean residual from the seasonal profile, in usual absolute residuals, at
    /// which the seasonal view scores 0.5.
    pub season_half: f64,
    /// Points in the short window of the local spike view (0 turns it off): the
    /// distance of the value from the median of the last `local` points, in their own
    /// robust spreads, so a spike is seen even while the long window still holds an
    /// earlier regime (a level shift that has not yet left it).
    pub local: usize,
    /// Robust z-score against the short window at which the local view scores 0.5.
    pub local_half: f64,
    /// Scores below this are given as exactly 0 ("nothing unusual"): the server stores
    /// no point for a score of 0 (`anomalyScore` answers 0 where the series has a
    /// scored point and no stored score), so a calm series costs almost no writes.
    /// At most `alarm`; it does not change which points alarm.
    pub quiet: f64,
    /// Two-stage detection when 2 or more (the default, 16; 0 or 1: every point goes
    /// through the full detector, the single-stage design, measured with
    /// `pattern_weight` 0.2). The first stage, a robust running level and deviation with
    /// gap and flatline checks (a few words of state, O(1)), scores every point; the
    /// full detector above (the second stage) sees the mean of each `block` consecutive
    /// points, stamped with the last one's time (its point views: the block's largest
    /// or smallest value, whichever is further from their median), and its score is
    /// given to that last point. The second stage's `warmup`, `suppress` and `short`
    /// count blocks.
    pub block: usize,
    /// First stage: distance from the running level, in running deviations, at which
    /// its point check scores 0.5 (before the comparison with its own past peak).
    pub gate_half: f64,
    /// First stage: points in a row equal to the previous one, in multiples of the
    /// longest such run seen so far (at least 16 points), at which its flatline check
    /// scores 0.5 (this check is not compared with past peaks: a run only grows).
    pub flat_half: f64,
    /// Two-stage only: blocks after the second stage's warm-up during which it
    /// learns (its views' past peaks too, in full: no `incident_cap`) but its scores
    /// do not count yet, so its first scores are not measured against peaks that
    /// have seen almost nothing. Its scores then count from its first block below
    /// `alarm` (an incident that began while it settled is not reported).
    pub settle: usize,
    /// Two-stage only: the factor by which the second stage's views' past peaks
    /// decay per block (`peak_decay` is per point, and applies to the first stage and
    /// the single-stage detector). 0.9992 is about `peak_decay` (0.9998) to the 4th
    /// power: a half-life of about 870 blocks (13,900 points at `block = 16`), where
    /// `peak_decay` per block would make it 3,500 blocks (55,000 points).
    pub block_peak_decay: f64,
    /// Two-stage only (0 turns it off): the range view. A block whose largest (or
    /// smallest) value lies beyond the largest (smallest) value of every earlier block
    /// by this share of the series' whole range so far scores 0.5 (a share of
    /// `range_half` × 1.15 scores `alarm`).
    pub range_half: f64,
    /// Two-stage only (0 turns it off): a young series is also watched by the
    /// single-stage detector (every point through the full detector, with
    /// `young_pattern_weight`) from its point `young_from` to its point `young`,
    /// while the second stage warms up and settles; a point's score is the larger of
    /// the two detectors'. It starts only once the series has history, so a series
    /// that never gets there (a short-lived one) does not pay for it.
    pub young: usize,
    /// Two-stage only: the point (0-based) at which the young single-stage detector
    /// starts, from nothing (its own `warmup` follows).
    pub young_from: usize,
    /// The young single-stage detector's `pattern_weight` (the single-stage detector
    /// was measured with 0.2).
    pub young_pattern_weight: f64,
    /// The young single-stage detector's `window`: a young series has little history
    /// to keep, and each of its points sorts into this window (at 512, the second
    /// stage's, the young span cost 2.6 times as much CPU a point on a wide load).
    pub young_window: usize,
    /// The young single-stage detector's `table_bits` (256 cells: its span is at
    /// most a few thousand points).
    pub young_table_bits: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            window: 512,
            short: 6,
            spread_window: 16,
            warmup: 32,
            point_half: 5.0,
            level_half: 2.0,
            spread_half: 4.0,
            calm_half: 10_000.0,
            bin_width: 1.0,
            max_bin: 6,
            context: 3,
            table_bits: 11,
            pattern_weight: 0.1,
            pattern_half: 4.0,
            gap_half: 10.0,
            suppress: 75,
            alarm: 0.6,
            damp: 0.05,
            peak_decay: 0.9998,
            peak_floor: 0.5,
            peak_per_view: true,
            incident_cap: 2.0,
            season: 86_400,
            bins_per_season: 48,
            season_rate: 0.02,
            season_half: 3.0,
            local: 64,
            local_half: 20.0,
            quiet: 0.3,
            block: 16,
            gate_half: 14.0,
            flat_half: 1.5,
            settle: 12,
            block_peak_decay: 0.9992,
            range_half: 0.05,
            young: 1000,
            young_from: 64,
            young_pattern_weight: 0.2,
            young_window: 128,
            young_table_bits: 8,
        }
    }
}

impl Config {
    /// Whether the two-stage design is on (`block` of 2 or more).
    pub fn two_stage(&self) -> bool {
        self.block >= 2
    }

    /// The young single-stage detector's settings (`young`): these, every point
    /// through the full detector, with `young_pattern_weight`.
    pub(crate) fn young_config(&self) -> Config {
        Config {
            block: 0,
            pattern_weight: self.young_pattern_weight,
            window: self.young_window,
            table_bits: self.young_table_bits,
            ..self.clone()
        }
    }

    /// Bins of the seasonal profile (0 when the seasonal view is off).
    pub(crate) fn season_bins(&self) -> usize {
        if self.season == 0 {
            0
        } else {
            self.bins_per_season
        }
    }

    /// Sets one field by name from text (`window=256`), for configuration files and
    /// experiments. Unknown names and unparsable or out-of-range values are errors.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
            v.trim()
                .parse()
                .map_err(|_| format!("anomaly setting {key}: cannot parse {v:?}"))
        }
        match key.trim() {
            "window" => self.window = num(key, value)?,
            "short" => self.short = num(key, value)?,
            "spread_window" => self.spread_window = num(key, value)?,
            "warmup" => self.warmup = num(key, value)?,
            "point_half" => self.point_half = num(key, value)?,
            "level_half" => self.level_half = num(key, value)?,
            "spread_half" => self.spread_half = num(key, value)?,
            "calm_half" => self.calm_half = num(key, value)?,
            "bin_width" => self.bin_width = num(key, value)?,
            "max_bin" => self.max_bin = num(key, value)?,
            "context" => self.context = num(key, value)?,
            "table_bits" => self.table_bits = num(key, value)?,
            "pattern_weight" => self.pattern_weight = num(key, value)?,
            "pattern_half" => self.pattern_half = num(key, value)?,
            "gap_half" => self.gap_half = num(key, value)?,
            "suppress" => self.suppress = num(key, value)?,
            "alarm" => self.alarm = num(key, value)?,
            "damp" => self.damp = num(key, value)?,
            "peak_decay" => self.peak_decay = num(key, value)?,
            "peak_floor" => self.peak_floor = num(key, value)?,
            "peak_per_view" => self.peak_per_view = num(key, value)?,
            "incident_cap" => self.incident_cap = num(key, value)?,
            "season" => self.season = num(key, value)?,
            "bins_per_season" => self.bins_per_season = num(key, value)?,
            "season_rate" => self.season_rate = num(key, value)?,
            "season_half" => self.season_half = num(key, value)?,
            "local" => self.local = num(key, value)?,
            "local_half" => self.local_half = num(key, value)?,
            "quiet" => self.quiet = num(key, value)?,
            "block" => self.block = num(key, value)?,
            "gate_half" => self.gate_half = num(key, value)?,
            "flat_half" => self.flat_half = num(key, value)?,
            "settle" => self.settle = num(key, value)?,
            "block_peak_decay" => self.block_peak_decay = num(key, value)?,
            "range_half" => self.range_half = num(key, value)?,
            "young" => self.young = num(key, value)?,
            "young_from" => self.young_from = num(key, value)?,
            "young_pattern_weight" => self.young_pattern_weight = num(key, value)?,
            "young_window" => self.young_window = num(key, value)?,
            "young_table_bits" => self.young_table_bits = num(key, value)?,
            other => return Err(format!("unknown anomaly setting {other:?}")),
        }
        self.validate()
    }

    /// Checks that the settings make a working detector.
    pub fn validate(&self) -> Result<(), String> {
        let bad = |what: &str| Err(format!("anomaly settings: {what}"));
        if !(2..=65_536).contains(&self.window) {
            return bad("window must be 2..=65536 points");
        }
        if self.short == 0 || self.short > self.window {
            return bad("short must be 1..=window");
        }
        if self.spread_window < 2 || self.spread_window > self.window {
            return bad("spread_window must be 2..=window");
        }
        if self.local == 1 || self.local > self.window {
            return bad("local must be 0 (off) or 2..=window");
        }
        if !(1..=16).contains(&self.context) {
            return bad("context must be 1..=16");
        }
        if !(4..=24).contains(&self.table_bits) {
            return bad("table_bits must be 4..=24");
        }
        if !(1..=100).contains(&self.max_bin) {
            return bad("max_bin must be 1..=100");
        }
        for (name, v) in [
            ("point_half", self.point_half),
            ("level_half", self.level_half),
            ("bin_width", self.bin_width),
            ("gap_half", self.gap_half),
            ("pattern_half", self.pattern_half),
            ("season_half", self.season_half),
            ("local_half", self.local_half),
            ("gate_half", self.gate_half),
            ("flat_half", self.flat_half),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("anomaly settings: {name} must be > 0"));
            }
        }
        if !(self.range_half.is_finite() && self.range_half >= 0.0) {
            return bad("range_half must be >= 0");
        }
        if !(self.peak_floor.is_finite() && self.peak_floor > 0.0) {
            return bad("peak_floor must be > 0");
        }
        if !(self.spread_half.is_finite() && self.spread_half > 1.0) {
            return bad("spread_half must be > 1");
        }
        if !(self.calm_half.is_finite() && self.calm_half > 1.0) {
            return bad("calm_half must be > 1");
        }
        for (name, v) in [
            ("pattern_weight", self.pattern_weight),
            ("alarm", self.alarm),
            ("damp", self.damp),
            ("peak_decay", self.peak_decay),
            ("block_peak_decay", self.block_peak_decay),
            ("young_pattern_weight", self.young_pattern_weight),
            ("season_rate", self.season_rate),
            ("quiet", self.quiet),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("anomaly settings: {name} must be in [0, 1]"));
            }
        }
        if self.settle > 1 << 20 {
            return bad("settle must be at most 1048576 blocks");
        }
        if self.suppress > 1 << 20 {
            // the first stage counts up to it in 32 bits (saturating)
            return bad("suppress must be at most 1048576 points");
        }
        if self.block > 4096 {
            return bad("block must be 0..=4096 points");
        }
        if self.young > 1 << 30 || self.young_from > 1 << 30 {
            return bad("young and young_from must be at most 1073741824 points");
        }
        if self.quiet > self.alarm {
            return bad("quiet must be at most alarm");
        }
        if self.two_stage() && self.young > 0 {
            // (the young settings have no second stage: no recursion)
            if let Err(e) = self.young_config().validate() {
                return Err(format!(
                    "{e} (for the young detector: young_window, young_table_bits)"
                ));
            }
        }
        if !(self.incident_cap.is_finite() && self.incident_cap >= 0.0) {
            return bad("incident_cap must be >= 0");
        }
        if self.season > 10 * 365 * 86_400 {
            return bad("season must be at most ten years (seconds)");
        }
        if self.season > 0 && !(1..=4096).contains(&self.bins_per_season) {
            return bad("bins_per_season must be 1..=4096");
        }
        if self.season > 0 && self.bins_per_season as u64 > self.season {
            return bad("bins_per_season must not exceed season (seconds)");
        }
        Ok(())
    }
}
