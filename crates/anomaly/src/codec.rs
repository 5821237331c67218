//! A detector's state as bytes, to survive restarts.
//!
//! ```text
//! magic "SUMIANO" | version u8 (4)
//! window u32 | context u32 | table_bits u32          sizes: must match the Config
//! last_ts i64 | has_last_ts u8 | seen u64 | ignored u64 | step f64
//! ring_len u32 | head u32 | ring_len × f64
//! bins_len u32 | bins_len × i8
//! table (1 << table_bits) × u8 | inserts u64 | since_alarm u64 | 7 × peak f64
//! novel_fast f64 | novel_slow f64 | usual_step f64
//! first_ts i64 | season u64 | profile_len u32 | profile_len × f64   season: must match
//! profile_len × u8 (points learnt per profile bin)
//! resid_fast f64 | resid_usual f64 | resid_n u32
//! has_first_scored u8 | first_scored i64
//! (versions 5 to 7, two-stage detectors: the first stage)
//!   block u32 | has_last_ts u8 | last_ts i64 | seen u64 | ignored u64 | step f64
//!   level f64 | dev f64 | prev f64 | jump f64 | jump_fast f64 | peak f64 | sum f64 | count u32
//!   flat_run u32 | flat_max u32 | since_alarm u64 | has_first_scored u8 | first_scored i64
//!   (versions 6 and 7) hi f64 | lo f64    the unfinished block's largest and smallest value
//! (versions 7 and 8: then the second stage's range view and whether it settled)
//!   has_range u8 | top f64 | bottom f64    the largest and smallest value of every block
//!   half_range f64                         a block's usual half-range
//!   settled u8                             whether the second stage's scores count
//! (version 8 only: then the young single-stage detector, `Config::young`)
//!   young_len × u8                         its own saved state (version 4, CRC and
//!                                          all), none outside the young span
//!   young_len u32                          after the bytes, so that the versions
//!                                          before are this state less its tail
//! crc32c u32 of everything before it
//! ```
//! A single-stage detector (`Config::block` 0 or 1) is saved as version 4, exactly as
//! before the two-stage design existed; a two-stage one as version 8. Version 7 (saved
//! before the young detector) is read without one: a series inside the young span
//! starts a young detector afresh at its next point. Version 5 (a
//! two-stage state saved before the block's extremes were kept) is still read: the
//! unfinished block's extremes are taken as its mean so far, which changes at most the
//! second stage's point views for that one block. Versions 5 and 6 (saved before the
//! range view) are read with the smallest and largest block mean of the long window
//! as the series' range (the range view's record is then the window's, not the whole
//! history's) and the usual step between block means as a block's usual half-range,
//! and the second stage as settled once its `warmup` and `settle` blocks are past;
//! both are saved back as version 8.
//! All integers and floats little-endian; floats bit for bit, so a restored detector
//! gives exactly the scores the saved one would have given.
//!
//! The first stage keeps `last_ts` with a sentinel (`i64::MIN`: no point yet) and
//! `since_alarm` in 32 bits, so a state whose first-stage `last_ts` is `i64::MIN` or
//! whose `since_alarm` is above `u32::MAX` is refused (neither arises from points).
//! Every accepted input saves back to exactly itself (the fuzz target checks this).
//! Version 1 (before the seasonal view: 5 peaks, no seasonal part, a 4,096-cell table
//! by default), version 2 (before the local view: 6 peaks) and version 3 (before
//! the time of the first score was kept) are refused with
//! [`DecodeError::Version`], so the server relearns such a series (or replays its
//! stored history) rather than restoring half a state.

use crate::config::Config;
use crate::detector::{Detector, Profile, State, VIEWS};

const MAGIC: &[u8; 7] = b"SUMIANO";
const VERSION: u8 = 4;
/// Two-stage detectors: version 4 followed by the first stage, the range view's range
/// and the young detector.
const VERSION_TWO_STAGE: u8 = 8;
/// Two-stage detectors before the young detector (read, not written).
const VERSION_TWO_STAGE_7: u8 = 7;
/// Two-stage detectors before the range view (read, not written).
const VERSION_TWO_STAGE_6: u8 = 6;
/// Two-stage detectors before the block's extremes were saved (read, not written).
const VERSION_TWO_STAGE_5: u8 = 5;

/// Why saved state could not be restored.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
    #[error("anomaly state: {0} bytes is too short for a state")]
    TooShort(usize),
    #[error("anomaly state: bad magic (not a detector state)")]
    BadMagic,
    #[error(
        "anomaly state: version {0} is not supported (this build reads version {VERSION} only, and {VERSION_TWO_STAGE_5}, {VERSION_TWO_STAGE_6}, {VERSION_TWO_STAGE_7} or {VERSION_TWO_STAGE} for two-stage detectors; \
         state saved by another build is relearnt or rebuilt from stored history)"
    )]
    Version(u8),
    #[error("anomaly state: crc32c mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Crc { stored: u32, computed: u32 },
    #[error("anomaly state: saved with {what} = {saved}, configured {configured}")]
    ConfigMismatch {
        what: &'static str,
        saved: u64,
        configured: u64,
    },
    #[error("anomaly state: {0} at offset {1}")]
    Invalid(&'static str, usize),
}

impl Detector {
    /// The state as bytes (format in the module doc).
    pub fn save(&self) -> Vec<u8> {
        let st = &self.st;
        let table_len = 1usize << self.config().table_bits;
        let mut b = Vec::with_capacity(64 + st.ring.len() * 8 + table_len);
        b.extend_from_slice(MAGIC);
        let two = self.config().two_stage();
        b.push(if two { VERSION_TWO_STAGE } else { VERSION });
        for v in [self.config().window, self.config().context] {
            b.extend_from_slice(&(v as u32).to_le_bytes());
        }
        b.extend_from_slice(&self.config().table_bits.to_le_bytes());
        b.extend_from_slice(&st.last_ts.unwrap_or(0).to_le_bytes());
        b.push(st.last_ts.is_some() as u8);
        b.extend_from_slice(&st.seen.to_le_bytes());
        b.extend_from_slice(&st.ignored.to_le_bytes());
        b.extend_from_slice(&st.step.to_le_bytes());
        b.extend_from_slice(&(st.ring.len() as u32).to_le_bytes());
        b.extend_from_slice(&(st.head as u32).to_le_bytes());
        for v in &st.ring {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&(st.bins.len() as u32).to_le_bytes());
        b.extend(st.bins.iter().map(|&v| v as u8));
        if st.table.is_empty() {
            // not allocated yet: all 0, saved at its full size as always
            b.resize(b.len() + table_len, 0);
        } else {
            b.extend_from_slice(&st.table);
        }
        b.extend_from_slice(&st.inserts.to_le_bytes());
        b.extend_from_slice(&st.since_alarm.to_le_bytes());
        for p in st.peak {
            b.extend_from_slice(&p.to_le_bytes());
        }
        b.extend_from_slice(&st.novel_fast.to_le_bytes());
        b.extend_from_slice(&st.novel_slow.to_le_bytes());
        b.extend_from_slice(&st.usual_step.to_le_bytes());
        b.extend_from_slice(&st.first_ts.to_le_bytes());
        b.extend_from_slice(&self.config().season.to_le_bytes());
        let bins = self.config().season_bins();
        let profile = || st.profile.cells(bins);
        b.extend_from_slice(&(profile().count() as u32).to_le_bytes());
        for (v, _) in profile() {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend(profile().map(|(_, n)| n));
        b.extend_from_slice(&st.resid_fast.to_le_bytes());
        b.extend_from_slice(&st.resid_usual.to_le_bytes());
        b.extend_from_slice(&st.resid_n.to_le_bytes());
        b.push(u8::from(st.first_scored.is_some()));
        b.extend_from_slice(&st.first_scored.unwrap_or(0).to_le_bytes());
        if two {
            let g = &self.gate;
            b.extend_from_slice(&(self.config().block as u32).to_le_bytes());
            let has_ts = g.last_ts != crate::detector::NO_TS;
            b.push(u8::from(has_ts));
            b.extend_from_slice(&(if has_ts { g.last_ts } else { 0 }).to_le_bytes());
            for v in [g.seen, g.ignored] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            for v in [
                g.step,
                g.level,
                g.dev,
                g.prev,
                g.jump,
                g.jump_fast,
                g.peak,
                g.sum,
            ] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            for v in [u32::from(g.count), g.flat_run, g.flat_max] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.extend_from_slice(&u64::from(g.since_alarm).to_le_bytes());
            b.push(u8::from(g.scored));
            b.extend_from_slice(&(if g.scored { g.first_scored } else { 0 }).to_le_bytes());
            for v in [g.hi, g.lo] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            let (top, bottom) = st.range.unwrap_or((0.0, 0.0));
            b.push(u8::from(st.range.is_some()));
            for v in [top, bottom, st.half_range] {
                b.extend_from_slice(&v.to_le_bytes());
            }
            b.push(u8::from(st.settled));
            let young = st.young.as_ref().map(|y| y.save()).unwrap_or_default();
            b.extend_from_slice(&young);
            b.extend_from_slice(&(young.len() as u32).to_le_bytes());
        }
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// A detector continuing from `bytes` (written by [`Detector::save`]) under `cfg`,
    /// which must have the same window, context and table sizes.
    pub fn restore(
        cfg: impl Into<std::sync::Arc<Config>>,
        bytes: &[u8],
    ) -> Result<Detector, DecodeError> {
        let cfg = cfg.into();
        cfg.validate()
            .map_err(|_| DecodeError::Invalid("configuration invalid", 0))?;
        if bytes.len() < MAGIC.len() + 1 + 4 {
            return Err(DecodeError::TooShort(bytes.len()));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        let mut r = Reader { b: body, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let version = r.u8()?;
        if !(version == VERSION || (VERSION_TWO_STAGE_5..=VERSION_TWO_STAGE).contains(&version)) {
            return Err(DecodeError::Version(version));
        }
        let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
        let computed = crc32c::crc32c(body);
        if stored != computed {
            return Err(DecodeError::Crc { stored, computed });
        }
        for (what, configured) in [
            ("window", cfg.window as u64),
            ("context", cfg.context as u64),
            ("table_bits", cfg.table_bits as u64),
        ] {
            let saved = r.u32()? as u64;
            if saved != configured {
                return Err(DecodeError::ConfigMismatch {
                    what,
                    saved,
                    configured,
                });
            }
        }
        let ts = r.u64()? as i64;
        let has_ts = r.u8()?;
        let last_ts = match has_ts {
            0 => None,
            1 => Some(ts),
            _ => return Err(DecodeError::Invalid("bad last_ts flag", r.at - 1)),
        };
        let seen = r.u64()?;
        let ignored = r.u64()?;
        let step = f64::from_bits(r.u64()?);
        if !(step.is_finite() && step >= 0.0) {
            return Err(DecodeError::Invalid("bad step", r.at - 8));
        }
        let ring_len = r.u32()? as usize;
        let head = r.u32()? as usize;
        if ring_len > cfg.window
            || head >= cfg.window.max(1)
            || (ring_len < cfg.window && head != ring_len % cfg.window)
        {
            return Err(DecodeError::Invalid("bad window length or head", r.at - 8));
        }
        let mut ring = Vec::with_capacity(cfg.window);
        for _ in 0..ring_len {
            let v = f64::from_bits(r.u64()?);
            if !v.is_finite() {
                return Err(DecodeError::Invalid("non-finite value in window", r.at - 8));
            }
            ring.push(v);
        }
        let bins_len = r.u32()? as usize;
        if bins_len >= cfg.context {
            return Err(DecodeError::Invalid("bad context length", r.at - 4));
        }
        let max_bin = cfg.max_bin as i8;
        let mut bins = crate::detector::Bins::default();
        for &v in r.take(bins_len)? {
            let v = v as i8;
            if !(-max_bin..=max_bin).contains(&v) {
                return Err(DecodeError::Invalid("bin out of range", r.at - 1));
            }
            bins.push(v);
        }
        let table = r.take(1 << cfg.table_bits)?;
        // all 0 reads as the empty table (`State::table`): allocated at the next insertion
        let table = if table.iter().all(|&c| c == 0) {
            Vec::new()
        } else {
            table.to_vec()
        };
        let inserts = r.u64()?;
        let since_alarm = r.u64()?;
        let mut peak = [0.0; VIEWS];
        for p in &mut peak {
            *p = f64::from_bits(r.u64()?);
            if !(p.is_finite() && *p >= 0.0) {
                return Err(DecodeError::Invalid("bad peak", r.at - 8));
            }
        }
        let novel_fast = f64::from_bits(r.u64()?);
        let novel_slow = f64::from_bits(r.u64()?);
        if !((0.0..=1.0).contains(&novel_fast) && (0.0..=1.0).contains(&novel_slow)) {
            return Err(DecodeError::Invalid("bad novelty rate", r.at - 16));
        }
        let usual_step = f64::from_bits(r.u64()?);
        if !(usual_step.is_finite() && usual_step >= 0.0) {
            return Err(DecodeError::Invalid("bad usual step", r.at - 8));
        }
        let first_ts = r.u64()? as i64;
        let season = r.u64()?;
        if season != cfg.season {
            return Err(DecodeError::ConfigMismatch {
                what: "season",
                saved: season,
                configured: cfg.season,
            });
        }
        let len = r.u32()? as usize;
        // A detector with the seasonal view on fills its profile at its first point.
        let want = if last_ts.is_some() {
            cfg.season_bins()
        } else {
            0
        };
        if len != want {
            return Err(DecodeError::ConfigMismatch {
                what: "bins_per_season",
                saved: len as u64,
                configured: want as u64,
            });
        }
        let mut profile = Vec::with_capacity(cfg.season_bins());
        for _ in 0..len {
            let v = f64::from_bits(r.u64()?);
            if !v.is_finite() {
                return Err(DecodeError::Invalid("non-finite profile value", r.at - 8));
            }
            profile.push((v, 0));
        }
        for (bin, &n) in profile.iter_mut().zip(r.take(len)?) {
            bin.1 = n;
        }
        let profile = Profile::from_cells(profile);
        let resid_fast = f64::from_bits(r.u64()?);
        let resid_usual = f64::from_bits(r.u64()?);
        let resid_n = r.u32()?;
        if !(resid_fast.is_finite() && resid_usual.is_finite() && resid_usual >= 0.0)
            || resid_n > 256
        {
            return Err(DecodeError::Invalid("bad seasonal residual", r.at - 20));
        }
        let first_scored = match (r.u8()?, r.u64()? as i64) {
            (0, 0) => None,
            (1, t) => Some(t),
            _ => return Err(DecodeError::Invalid("bad first score time", r.at - 9)),
        };
        let two_stage = version != VERSION;
        let saved_block = if two_stage { r.u32()? as u64 } else { 0 };
        let configured = if cfg.two_stage() { cfg.block as u64 } else { 0 };
        if saved_block != configured {
            return Err(DecodeError::ConfigMismatch {
                what: "block",
                saved: saved_block,
                configured,
            });
        }
        let gate = if two_stage {
            read_gate(&mut r, cfg.block, version)?
        } else {
            crate::detector::Gate::default()
        };
        let (range, half_range, settled) = if version >= VERSION_TWO_STAGE_7 {
            let at = r.at;
            let has = r.u8()?;
            let top = f64::from_bits(r.u64()?);
            let bottom = f64::from_bits(r.u64()?);
            let half = f64::from_bits(r.u64()?);
            if !(half.is_finite() && half >= 0.0) {
                return Err(DecodeError::Invalid("bad block half-range", at + 17));
            }
            let range = match has {
                0 if top.to_bits() == 0 && bottom.to_bits() == 0 => None,
                1 if top.is_finite() && bottom.is_finite() && bottom <= top => Some((top, bottom)),
                _ => return Err(DecodeError::Invalid("bad range", at)),
            };
            let settled = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Invalid("bad settled flag", r.at - 1)),
            };
            (range, half, settled)
        } else if two_stage {
            // saved before the range view: the window's smallest and largest block
            // mean, and the usual step between block means
            let range = ring.iter().fold(None, |acc, &v| match acc {
                Some((top, bottom)) => Some((v.max(top), v.min(bottom))),
                None => Some((v, v)),
            });
            (range, usual_step, seen >= (cfg.warmup + cfg.settle) as u64)
        } else {
            (None, 0.0, false)
        };
        let young = if version == VERSION_TWO_STAGE {
            read_young(&mut r, &cfg, gate.seen)?
        } else {
            None
        };
        if r.at != body.len() {
            return Err(DecodeError::Invalid("trailing bytes", r.at));
        }
        let st = State {
            last_ts,
            seen,
            ignored,
            step,
            ring,
            head,
            bins,
            table,
            inserts,
            since_alarm,
            peak,
            novel_fast,
            novel_slow,
            usual_step,
            first_ts,
            profile,
            resid_fast,
            resid_usual,
            resid_n,
            first_scored,
            range,
            half_range,
            settled,
            young,
            // rebuilt by `from_state`
            zs: None,
            gate_zs: [0.0; 5],
            sorted: Vec::new(),
            local_sorted: Vec::new(),
        };
        let mut det = Detector::from_state(cfg, st);
        det.gate = gate;
        Ok(det)
    }
}

/// The young detector of a version-8 state (its bytes and their length, the rest of
/// the body): `None` when there are none; refused where the first stage's count
/// `seen` lies outside the young span of `cfg` (saved under other settings).
fn read_young(
    r: &mut Reader<'_>,
    cfg: &Config,
    seen: u64,
) -> Result<Option<Box<Detector>>, DecodeError> {
    let at = r.at;
    let len = r.b.len().saturating_sub(at + 4);
    let bytes = r.take(len)?;
    if r.u32()? as usize != len {
        return Err(DecodeError::Invalid("bad young detector length", at));
    }
    if len == 0 {
        return Ok(None);
    }
    if seen <= cfg.young_from as u64 || seen >= cfg.young as u64 {
        return Err(DecodeError::Invalid(
            "young detector outside the young span",
            at,
        ));
    }
    // Saved under other young settings (`young_window`, `young_table_bits`): the
    // series goes on without its young detector, as one saved before it (version 7)
    // does, rather than losing its whole state. (The body's CRC covers these bytes.)
    match Detector::restore(cfg.young_config(), bytes) {
        Ok(young) => Ok(Some(Box::new(young))),
        Err(DecodeError::ConfigMismatch { .. }) => Ok(None),
        Err(_) => Err(DecodeError::Invalid("bad young detector", at)),
    }
}

/// The first stage of a version-5 or -6 state, after its `block`.
fn read_gate(
    r: &mut Reader<'_>,
    block: usize,
    version: u8,
) -> Result<crate::detector::Gate, DecodeError> {
    let at = r.at;
    let has_ts = r.u8()?;
    let ts = r.u64()? as i64;
    // `NO_TS` itself is never a point's time (such a point is ignored)
    let last_ts = match (has_ts, ts) {
        (0, 0) => crate::detector::NO_TS,
        (1, t) if t != crate::detector::NO_TS => t,
        _ => return Err(DecodeError::Invalid("bad first-stage last_ts", at)),
    };
    let seen = r.u64()?;
    let ignored = r.u64()?;
    let mut f = [0.0; 8];
    for v in &mut f {
        *v = f64::from_bits(r.u64()?);
        if !v.is_finite() {
            return Err(DecodeError::Invalid(
                "non-finite first-stage value",
                r.at - 8,
            ));
        }
    }
    let [step, level, dev, prev, jump, jump_fast, peak, sum] = f;
    if step < 0.0 || dev < 0.0 || jump < 0.0 || jump_fast < 0.0 || peak < 0.0 {
        return Err(DecodeError::Invalid(
            "negative first-stage value",
            r.at - 64,
        ));
    }
    let count = r.u32()?;
    if count as usize >= block {
        return Err(DecodeError::Invalid("first-stage block count", r.at - 4));
    }
    // below `block`, at most 4,096 (`Config::validate`)
    let count = u16::try_from(count)
        .map_err(|_| DecodeError::Invalid("first-stage block count", r.at - 4))?;
    let flat_run = r.u32()?;
    let flat_max = r.u32()?;
    // kept in 32 bits (it only counts up to `suppress`): more than 4 billion scored
    // points since the last alarm is refused rather than saved back otherwise
    let since_alarm = u32::try_from(r.u64()?)
        .map_err(|_| DecodeError::Invalid("first-stage points since the alarm", r.at - 8))?;
    let at = r.at;
    // (kept with `NO_TS` for "none", which no point's time is: refused as one)
    let first_scored = match (r.u8()?, r.u64()? as i64) {
        (0, 0) => None,
        (1, t) if t != crate::detector::NO_TS => Some(t),
        _ => return Err(DecodeError::Invalid("bad first-stage first score time", at)),
    };
    let (hi, lo) = if version == VERSION_TWO_STAGE_5 {
        // not saved then: the block's mean so far stands in for both
        let mean = if count > 0 { sum / count as f64 } else { 0.0 };
        (mean, mean)
    } else {
        let hi = f64::from_bits(r.u64()?);
        let lo = f64::from_bits(r.u64()?);
        if !(hi.is_finite() && lo.is_finite()) || (count > 0 && lo > hi) {
            return Err(DecodeError::Invalid(
                "bad first-stage block extremes",
                r.at - 16,
            ));
        }
        (hi, lo)
    };
    Ok(crate::detector::Gate {
        last_ts,
        seen,
        ignored,
        step,
        level,
        dev,
        prev,
        jump,
        jump_fast,
        peak,
        sum,
        hi,
        lo,
        count,
        flat_run,
        flat_max,
        since_alarm,
        scored: first_scored.is_some(),
        first_scored: first_scored.unwrap_or(crate::detector::NO_TS),
    })
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(DecodeError::Invalid("truncated", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// State saved by version 1 (or any other) is refused with an error that says so.
    #[test]
    fn other_versions_are_refused_clearly() {
        let mut det = Detector::new(Config::default());
        for i in 0..700 {
            det.update(i * 300, (i % 17) as f64);
        }
        for version in [1u8, 2, 3, 9] {
            let mut b = det.save();
            b[7] = version;
            let n = b.len() - 4;
            let crc = crc32c::crc32c(&b[..n]);
            b[n..].copy_from_slice(&crc.to_le_bytes());
            let err = Detector::restore(Config::default(), &b).unwrap_err();
            assert_eq!(err, DecodeError::Version(version));
            assert!(err.to_string().contains("reads version 4 only"), "{err}");
        }
    }

    /// A state saved under another season (or with the seasonal view off) is refused
    /// like one saved under another window.
    #[test]
    fn other_season_is_refused() {
        let mut det = Detector::new(Config::default());
        for i in 0..100 {
            det.update(i * 300, (i % 17) as f64);
        }
        let saved = det.save();
        let mut off = Config::default();
        off.set("season", "0").unwrap();
        match Detector::restore(off.clone(), &saved) {
            Err(DecodeError::ConfigMismatch { what: "season", .. }) => {}
            other => panic!("restored under season 0: {other:?}"),
        }
        let mut det = Detector::new(off.clone());
        for i in 0..100 {
            det.update(i * 300, (i % 17) as f64);
        }
        let saved = det.save();
        let back = Detector::restore(off, &saved).expect("restore with the view off");
        assert_eq!(back.save(), saved);
        assert!(Detector::restore(Config::default(), &saved).is_err());
    }
}
