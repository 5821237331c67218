//! The slot (timestamp) section of a block.
//!
//! Slots of one archive level are multiples of its step, so they are stored in units of the
//! step relative to the first one. A dense run (no missing slot) costs only the first slot;
//! gaps are stored either as run lengths or as a presence bitmap, whichever is smaller. Input
//! that breaks the contract (slots not multiples of the step, not strictly increasing, or a
//! zero step) is still stored losslessly, as zigzag varint deltas ("raw").

use super::bytes::{put_varint, put_zigzag, varint_len, Reader};
use super::CodecError;

/// How the slots of a block are stored (bits 3..2 of the header byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotMode {
    /// `first/step`; slot `i` is `first + i*step`.
    Dense = 0,
    /// `first/step`, then present runs and the gaps between them.
    Runs = 1,
    /// `first/step`, then one bit per slot from the first to the last.
    Bitmap = 2,
    /// Any `i64` sequence: the first slot, then zigzag deltas.
    Raw = 3,
}

impl SlotMode {
    pub(super) fn from_bits(b: u8) -> SlotMode {
        match b & 3 {
            0 => SlotMode::Dense,
            1 => SlotMode::Runs,
            2 => SlotMode::Bitmap,
            _ => SlotMode::Raw,
        }
    }
}

/// Whether `slots` are `first, first + step, ...` with no gap (checked without a division).
fn is_dense(step: i64, slots: &[i64]) -> bool {
    let first = slots.first().copied().unwrap_or(0);
    // The last slot must be reachable without overflow, as the decoder computes it.
    let fits = i64::try_from(slots.len().saturating_sub(1))
        .ok()
        .and_then(|k| k.checked_mul(step))
        .and_then(|d| first.checked_add(d))
        .is_some();
    let mut expect = first;
    fits && slots.iter().all(|&s| {
        let ok = s == expect;
        expect = expect.wrapping_add(step);
        ok
    })
}

/// Offsets of `slots` from the first one in units of `step`, if the slots follow the contract.
fn offsets(step: u32, slots: &[i64]) -> Option<(i64, Vec<u64>)> {
    let step = i64::from(step);
    let first = *slots.first()?;
    if step == 0 || first % step != 0 {
        return None;
    }
    // Every slot's distance to the first must fit an i64, as the decoder computes it.
    slots.last()?.checked_sub(first)?;
    let mut offs = Vec::with_capacity(slots.len());
    let mut prev = first;
    let mut off = 0u64;
    for &s in slots {
        // Divide only at gaps: a step to the next slot is the common case.
        let diff = s.checked_sub(prev)?;
        if diff == step {
            off += 1;
        } else if diff > 0 && diff % step == 0 {
            off = off.checked_add((diff / step) as u64)?;
        } else if !(diff == 0 && offs.is_empty()) {
            return None;
        }
        prev = s;
        offs.push(off);
    }
    Some((first / step, offs))
}

/// Calls `f(gap_before, len)` for each run of consecutive offsets (the first gap is 0).
fn for_each_run(offs: &[u64], mut f: impl FnMut(u64, u64)) {
    let mut iter = offs.iter().copied();
    let Some(mut start) = iter.next() else { return };
    let mut prev_end = start; // offset after the previous run; the first run has no gap
    let mut end = start + 1;
    for o in iter {
        if o == end {
            end += 1;
            continue;
        }
        f(start - prev_end, end - start);
        prev_end = end;
        start = o;
        end = o + 1;
    }
    f(start - prev_end, end - start);
}

/// Writes the slot section for `slots` (non-empty). Returns the mode chosen and whether the
/// first slot is negative (a header flag, so that the first slot is stored as a plain varint:
/// zigzag would cost a byte more on today's timestamps at a 10 s step).
pub(super) fn encode(step: u32, slots: &[i64], out: &mut Vec<u8>) -> (SlotMode, bool) {
    let first = slots.first().copied().unwrap_or(0);
    let step_i = i64::from(step);
    if step > 0 && first % step_i == 0 && is_dense(step_i, slots) {
        let first_q = first / step_i;
        put_varint(out, first_q.unsigned_abs());
        return (SlotMode::Dense, first_q < 0);
    }
    let Some((first_q, offs)) = offsets(step, slots) else {
        return (encode_raw(slots, out), false);
    };
    put_varint(out, first_q.unsigned_abs());
    let negative = first_q < 0;
    let span = offs.last().map_or(1, |&l| l + 1);
    if span == offs.len() as u64 {
        return (SlotMode::Dense, negative);
    }
    let mut runs = 0u64;
    let mut runs_cost = 0usize;
    for_each_run(&offs, |gap, len| {
        runs_cost += varint_len(len - 1) + if runs > 0 { varint_len(gap - 1) } else { 0 };
        runs += 1;
    });
    runs_cost += varint_len(runs);
    let bitmap_cost = varint_len(span).saturating_add(span.div_ceil(8) as usize);
    if runs_cost <= bitmap_cost {
        put_varint(out, runs);
        let mut firstrun = true;
        for_each_run(&offs, |gap, len| {
            if !firstrun {
                put_varint(out, gap - 1);
            }
            firstrun = false;
            put_varint(out, len - 1);
        });
        (SlotMode::Runs, negative)
    } else {
        put_varint(out, span);
        let start = out.len();
        out.resize(start + span.div_ceil(8) as usize, 0);
        for &o in &offs {
            if let Some(b) = out.get_mut(start + (o / 8) as usize) {
                *b |= 1 << (o % 8);
            }
        }
        (SlotMode::Bitmap, negative)
    }
}

fn encode_raw(slots: &[i64], out: &mut Vec<u8>) -> SlotMode {
    let mut prev = 0i64;
    for &s in slots {
        put_zigzag(out, s.wrapping_sub(prev));
        prev = s;
    }
    SlotMode::Raw
}

/// `first + off*step`, or an overflow error naming `what`.
fn slot_at(
    first: i64,
    off: u64,
    step: i64,
    what: &'static str,
    at: usize,
) -> Result<i64, CodecError> {
    i64::try_from(off)
        .ok()
        .and_then(|o| o.checked_mul(step))
        .and_then(|d| first.checked_add(d))
        .ok_or(CodecError::SlotOverflow { what, offset: at })
}

/// Reads the slot section of a block of `n >= 1` points (`negative`: the header's flag). With
/// `out` set, appends the slots to it; either way returns the first and last slot.
pub(super) fn decode(
    r: &mut Reader<'_>,
    mode: SlotMode,
    negative: bool,
    n: usize,
    step: u32,
    mut out: Option<&mut Vec<i64>>,
) -> Result<(i64, i64), CodecError> {
    let step = i64::from(step);
    let at = r.pos();
    if mode == SlotMode::Raw {
        if negative {
            return Err(CodecError::Invalid {
                what: "negative first slot flag",
                got: 1,
                expected: "0 with raw slots",
                offset: 0,
            });
        }
        return decode_raw(r, n, out);
    }
    if step == 0 {
        return Err(CodecError::Invalid {
            what: "step",
            got: 0,
            expected: "a non-zero step for dense, run or bitmap slots",
            offset: at,
        });
    }
    let q = r.varint("first slot")?;
    let q = if negative {
        0i64.checked_sub_unsigned(q)
    } else {
        i64::try_from(q).ok()
    };
    let first = q
        .and_then(|q| q.checked_mul(step))
        .ok_or(CodecError::SlotOverflow {
            what: "first slot",
            offset: at,
        })?;
    match mode {
        SlotMode::Dense => {
            let last = slot_at(first, n as u64 - 1, step, "dense slots", at)?;
            if let Some(out) = out.as_deref_mut() {
                push_run(out, first, step, n);
            }
            Ok((first, last))
        }
        SlotMode::Runs => decode_runs(r, n, first, step, out),
        SlotMode::Bitmap => decode_bitmap(r, n, first, step, out),
        SlotMode::Raw => decode_raw(r, n, out),
    }
}

/// Appends `start, start + step, ...` (`len` slots; the caller checked the last one fits).
fn push_run(out: &mut Vec<i64>, start: i64, step: i64, len: usize) {
    let from = out.len();
    out.resize(from + len, 0);
    let mut s = start;
    for x in out.get_mut(from..).unwrap_or_default() {
        *x = s;
        s = s.wrapping_add(step);
    }
}

fn decode_runs(
    r: &mut Reader<'_>,
    n: usize,
    first: i64,
    step: i64,
    mut out: Option<&mut Vec<i64>>,
) -> Result<(i64, i64), CodecError> {
    let runs = r.varint_in("run count", 1, n as u64, "1 ..= point count")?;
    let mut off = 0u64;
    let mut total = 0u64;
    let mut last = first;
    for j in 0..runs {
        if j > 0 {
            let at = r.pos();
            let gap = r.varint("gap length")?;
            off = off.checked_add(gap).and_then(|o| o.checked_add(1)).ok_or(
                CodecError::SlotOverflow {
                    what: "gap length",
                    offset: at,
                },
            )?;
        }
        let at = r.pos();
        let len = r.varint_in("run length", 0, n as u64 - 1, "below the point count")? + 1;
        total += len;
        if total > n as u64 {
            return Err(CodecError::Invalid {
                what: "run lengths",
                got: total,
                expected: "runs adding up to the point count",
                offset: at,
            });
        }
        let end_off = off.checked_add(len - 1).ok_or(CodecError::SlotOverflow {
            what: "run",
            offset: at,
        })?;
        let start = slot_at(first, off, step, "run", at)?;
        last = slot_at(first, end_off, step, "run", at)?;
        if let Some(out) = out.as_deref_mut() {
            push_run(out, start, step, len as usize);
        }
        off = end_off.saturating_add(1);
    }
    if total != n as u64 {
        return Err(CodecError::Invalid {
            what: "run lengths",
            got: total,
            expected: "runs adding up to the point count",
            offset: r.pos(),
        });
    }
    Ok((first, last))
}

fn decode_bitmap(
    r: &mut Reader<'_>,
    n: usize,
    first: i64,
    step: i64,
    out: Option<&mut Vec<i64>>,
) -> Result<(i64, i64), CodecError> {
    let at = r.pos();
    let max_span = (r.remaining() as u64).saturating_mul(8);
    let span = r.varint_in(
        "bitmap span",
        n as u64,
        max_span,
        "point count ..= 8 × bytes left",
    )?;
    let bits = r.take(span.div_ceil(8) as usize, "slot bitmap")?;
    let last = slot_at(first, span - 1, step, "bitmap span", at)?;
    let ones: u64 = bits.iter().map(|b| u64::from(b.count_ones())).sum();
    let first_set = bits.first().is_some_and(|b| b & 1 != 0);
    let last_bit = span - 1;
    // The last slot is present and no bit past it is set, so every slot decoded below lies
    // between `first` and `last`, which was checked for overflow.
    let last_ok = bits
        .get((last_bit / 8) as usize)
        .is_some_and(|b| u16::from(*b) >> (last_bit % 8) == 1);
    if ones != n as u64 || !first_set || !last_ok {
        return Err(CodecError::Invalid {
            what: "slot bitmap",
            got: ones,
            expected:
                "the point count of set bits, the first and last slot set, no bit past the span",
            offset: at,
        });
    }
    if let Some(out) = out {
        let mut slot = first;
        for &b in bits {
            let mut b = b;
            let base = slot;
            while b != 0 {
                let i = i64::from(b.trailing_zeros() as u8);
                out.push(base + i * step);
                b &= b - 1;
            }
            slot = slot.wrapping_add(8 * step);
        }
    }
    Ok((first, last))
}

fn decode_raw(
    r: &mut Reader<'_>,
    n: usize,
    mut out: Option<&mut Vec<i64>>,
) -> Result<(i64, i64), CodecError> {
    // Each delta takes at least one byte: refuse counts the block cannot hold before
    // allocating for them.
    if n > r.remaining() {
        return Err(CodecError::Truncated {
            what: "raw slots",
            offset: r.pos() + r.remaining(),
        });
    }
    let mut prev = 0i64;
    let mut first = 0;
    for i in 0..n {
        prev = prev.wrapping_add(r.zigzag("raw slot delta")?);
        if i == 0 {
            first = prev;
        }
        if let Some(out) = &mut out {
            out.push(prev);
        }
    }
    Ok((first, prev))
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

    fn round_trip(step: u32, slots: &[i64]) -> (SlotMode, usize) {
        let mut buf = Vec::new();
        let (mode, neg) = encode(step, slots, &mut buf);
        let mut r = Reader::new(&buf);
        let mut got = Vec::new();
        let (first, last) =
            decode(&mut r, mode, neg, slots.len(), step, Some(&mut got)).expect("decodes");
        assert_eq!(r.finish(), Ok(()));
        assert_eq!(got, slots);
        assert_eq!(Some(&first), slots.first());
        assert_eq!(Some(&last), slots.last());
        let mut r = Reader::new(&buf);
        assert_eq!(
            decode(&mut r, mode, neg, slots.len(), step, None),
            Ok((first, last))
        );
        (mode, buf.len())
    }

    #[test]
    fn dense_costs_only_the_first_slot() {
        let slots: Vec<i64> = (0..8640).map(|i| 1_700_000_000 + i * 10).collect();
        let (mode, len) = round_trip(10, &slots);
        assert_eq!(mode, SlotMode::Dense);
        assert_eq!(len, 4);
        assert_eq!(round_trip(60, &[-120]).0, SlotMode::Dense);
        assert_eq!(round_trip(1, &[i64::MIN]).0, SlotMode::Dense);
        assert_eq!(round_trip(1, &[i64::MIN, i64::MIN + 1]).0, SlotMode::Dense);
    }

    #[test]
    fn few_gaps_use_runs_many_use_a_bitmap() {
        let mut slots: Vec<i64> = (0..360).map(|i| i * 10).collect();
        slots.retain(|s| *s != 500 && *s != 2000);
        let (mode, len) = round_trip(10, &slots);
        assert_eq!(mode, SlotMode::Runs);
        assert!(len <= 9, "{len}");
        let alternating: Vec<i64> = (0..360).filter(|i| i % 2 == 0).map(|i| i * 10).collect();
        assert_eq!(round_trip(10, &alternating).0, SlotMode::Bitmap);
    }

    #[test]
    fn contract_breaches_fall_back_to_raw() {
        assert_eq!(round_trip(10, &[0, 5, 10]).0, SlotMode::Raw);
        assert_eq!(round_trip(10, &[20, 10]).0, SlotMode::Raw);
        assert_eq!(round_trip(10, &[10, 10]).0, SlotMode::Raw);
        assert_eq!(round_trip(0, &[1, 2, 3]).0, SlotMode::Raw);
        assert_eq!(round_trip(1, &[i64::MIN, i64::MAX]).0, SlotMode::Raw);
        assert_eq!(round_trip(7, &[i64::MAX, i64::MIN, 0]).0, SlotMode::Raw);
    }

    #[test]
    fn extreme_but_aligned_slots_round_trip() {
        let top = i64::MAX - i64::MAX % 10;
        round_trip(10, &[top - 30, top - 10, top]);
        let bottom = i64::MIN - i64::MIN % 10;
        round_trip(10, &[bottom, bottom + 10, bottom + 100]);
        round_trip(u32::MAX, &[0, i64::from(u32::MAX) * 1000]);
        // Consecutive distances fit an i64 but the whole span does not: raw.
        assert_eq!(
            round_trip(1, &[i64::MIN, -1, i64::MAX - 1]).0,
            SlotMode::Raw
        );
        // A dense run that would wrap past i64::MAX is not dense.
        let top = i64::MAX - i64::MAX % 10;
        assert_eq!(
            round_trip(10, &[top, top.wrapping_add(10)]).0,
            SlotMode::Raw
        );
    }

    #[test]
    fn overflowing_dense_header_is_an_error() {
        // first/step = i64::MAX/10, 1000 dense points past it.
        let mut buf = Vec::new();
        put_varint(&mut buf, (i64::MAX / 10) as u64);
        let mut r = Reader::new(&buf);
        assert!(matches!(
            decode(&mut r, SlotMode::Dense, false, 1000, 10, None),
            Err(CodecError::SlotOverflow { .. })
        ));
    }

    #[test]
    fn runs_that_disagree_with_the_count_are_rejected() {
        let mut buf = Vec::new();
        put_varint(&mut buf, 0);
        put_varint(&mut buf, 2); // two runs
        put_varint(&mut buf, 2); // of 3
        put_varint(&mut buf, 0); // gap 1
        put_varint(&mut buf, 0); // of 1
        let mut r = Reader::new(&buf);
        assert!(decode(&mut r, SlotMode::Runs, false, 4, 10, None).is_ok());
        let mut r = Reader::new(&buf);
        assert!(matches!(
            decode(&mut r, SlotMode::Runs, false, 5, 10, None),
            Err(CodecError::Invalid {
                what: "run lengths",
                ..
            })
        ));
    }
}
