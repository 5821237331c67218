//! The block codec: one run of a series' points at one archive level, compressed.
//!
//! A block holds `n` points `(slot, value)` with slots strictly increasing multiples of the
//! level's step. It is pure: bytes in, vectors out, no I/O. The format is specified with a
//! byte diagram in `docs/format/codec.md`; in short:
//!
//! ```text
//! header byte (version, slot mode, value mode) | n | step | slot section | value section
//! ```
//!
//! - [`slots`]: dense runs cost only the first slot; gaps as run lengths or a bitmap.
//! - [`decimal`]: values that are decimals (`m / 10^d`, checked bit for bit) become integers;
//!   the rest are exceptions stored raw.
//! - [`ints`]: those integers as delta order 0/1/2, frame of reference and bit packing
//!   ([`bitpack`]) in sub-blocks of 128.
//! - [`xor`]: Gorilla-style XOR for blocks that are not decimals.
//! - [`workload`]: synthetic series shaped like the benchmark workload, for tests and benches.
//!
//! Decoding never panics, never allocates more than the block can justify (at most
//! [`MAX_POINTS`] points), and always ends: any byte string gives `Ok` or a [`CodecError`]
//! naming the field and the byte offset.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod bitpack;
mod bytes;
mod decimal;
mod error;
mod ints;
mod slots;
pub mod workload;
mod xor;

#[cfg(test)]
mod tests;

pub use error::CodecError;

use bytes::{put_varint, varint_len, Reader};
use slots::SlotMode;

/// Format version written in the top three bits of every block's first byte.
pub const VERSION: u8 = 1;

/// Header byte layout: version in bits 7..5, the "first slot is negative" flag in bit 4, the
/// slot mode in bits 3..2 and the value mode in bits 1..0.
const VERSION_SHIFT: u32 = 5;
const NEGATIVE_FLAG: u8 = 0x10;

/// Most points one block may hold. Decoders refuse blocks claiming more, which bounds the
/// memory a corrupt block can make them allocate (64 MiB of slots and values). The engine
/// cuts blocks at partition boundaries, far below this (8,640 points is a day at 10 s).
pub const MAX_POINTS: usize = 1 << 22;

/// How the values of a block are stored (bits 1..0 of the header byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueMode {
    Decimal = 0,
    Xor = 1,
    Constant = 2,
}

/// Encodes one run of a series' points at one archive level and appends the block to `out`.
///
/// `slots` should be strictly increasing multiples of `step` (seconds); then they cost almost
/// nothing. Other slots (unsorted, unaligned, a zero step) are still stored losslessly, only
/// less compactly. Values are kept bit for bit (NaN payloads, -0.0, ±inf).
///
/// Only the first `min(slots.len(), values.len(), MAX_POINTS)` points are encoded: callers
/// pass slices of equal length and cut blocks far below [`MAX_POINTS`].
pub fn encode(step: u32, slots: &[i64], values: &[f64], out: &mut Vec<u8>) {
    let n = slots.len().min(values.len()).min(MAX_POINTS);
    let (slots, values) = (
        slots.get(..n).unwrap_or_default(),
        values.get(..n).unwrap_or_default(),
    );
    let header_at = out.len();
    out.push(VERSION << VERSION_SHIFT);
    put_varint(out, n as u64);
    put_varint(out, u64::from(step));
    if n == 0 {
        return;
    }
    let (slot_mode, negative) = slots::encode(step, slots, out);
    let value_mode = encode_values(values, out);
    let flag = if negative { NEGATIVE_FLAG } else { 0 };
    if let Some(h) = out.get_mut(header_at) {
        *h = VERSION << VERSION_SHIFT | flag | (slot_mode as u8) << 2 | value_mode as u8;
    }
}

/// Bits of the decimal parameter byte.
const EXCEPTIONS_FLAG: u8 = 0x80;
const ORDER_SHIFT: u32 = 5;
const DECIMALS_MASK: u8 = 0x1f;

fn encode_values(values: &[f64], out: &mut Vec<u8>) -> ValueMode {
    let first = values.first().map_or(0, |v| v.to_bits());
    let constant = values.iter().all(|v| v.to_bits() == first);
    let plan = decimal::analyze(values).map(|dec| {
        let (order, ints_cost) = ints::best_order(&dec.ints);
        let cost = 1 + exceptions_cost(&dec.exceptions) + ints_cost;
        (dec, order, cost)
    });
    let decimal_cost = plan.as_ref().map_or(usize::MAX, |p| p.2);
    if constant && 8 < decimal_cost {
        out.extend_from_slice(&first.to_le_bytes());
        return ValueMode::Constant;
    }
    match plan {
        Some((dec, order, cost)) if dec.exceptions.is_empty() || !xor_is_smaller(values, cost) => {
            write_decimal(&dec, order, values, out);
            ValueMode::Decimal
        }
        _ => {
            xor::encode(values, out);
            ValueMode::Xor
        }
    }
}

fn xor_is_smaller(values: &[f64], decimal_cost: usize) -> bool {
    let mut tmp = Vec::new();
    xor::encode(values, &mut tmp);
    tmp.len() < decimal_cost
}

fn exceptions_cost(exceptions: &[usize]) -> usize {
    if exceptions.is_empty() {
        return 0;
    }
    let mut prev = None;
    let gaps: usize = exceptions
        .iter()
        .map(|&i| {
            let gap = prev.map_or(i, |p: usize| i - p - 1);
            prev = Some(i);
            varint_len(gap as u64) + 8
        })
        .sum();
    varint_len(exceptions.len() as u64 - 1) + gaps
}

fn write_decimal(dec: &decimal::Decimals, order: u8, values: &[f64], out: &mut Vec<u8>) {
    let flag = if dec.exceptions.is_empty() {
        0
    } else {
        EXCEPTIONS_FLAG
    };
    out.push(flag | order << ORDER_SHIFT | dec.d as u8);
    if !dec.exceptions.is_empty() {
        put_varint(out, dec.exceptions.len() as u64 - 1);
        let mut prev = None;
        for &i in &dec.exceptions {
            put_varint(out, prev.map_or(i, |p: usize| i - p - 1) as u64);
            prev = Some(i);
            let bits = values.get(i).map_or(0, |v| v.to_bits());
            out.extend_from_slice(&bits.to_le_bytes());
        }
    }
    ints::write(&dec.ints, order, out);
}

/// Decodes a block produced by [`encode`], appending its slots and values to the vectors.
///
/// Any byte string gives `Ok` or a [`CodecError`]; on error the vectors are left as they
/// were.
pub fn decode(block: &[u8], slots: &mut Vec<i64>, values: &mut Vec<f64>) -> Result<(), CodecError> {
    let (s0, v0) = (slots.len(), values.len());
    let result = decode_inner(block, slots, values);
    if result.is_err() {
        slots.truncate(s0);
        values.truncate(v0);
    }
    result
}

/// The fixed fields at the start of a block.
struct Header {
    slot_mode: SlotMode,
    negative: bool,
    value_mode: ValueMode,
    n: usize,
    step: u32,
}

fn read_header(r: &mut Reader<'_>) -> Result<Header, CodecError> {
    let header = r.u8("header byte")?;
    let version = header >> VERSION_SHIFT;
    if version != VERSION {
        return Err(CodecError::UnknownVersion { version, header });
    }
    let value_mode = match header & 3 {
        0 => ValueMode::Decimal,
        1 => ValueMode::Xor,
        2 => ValueMode::Constant,
        _ => {
            return Err(CodecError::Invalid {
                what: "value mode",
                got: u64::from(header & 3),
                expected: "0 (decimal), 1 (xor) or 2 (constant)",
                offset: 0,
            })
        }
    };
    let n = r.varint_in(
        "point count",
        0,
        MAX_POINTS as u64,
        "at most MAX_POINTS (4194304)",
    )? as usize;
    let at = r.pos();
    let step = r.varint("step")?;
    let step = u32::try_from(step).map_err(|_| CodecError::Invalid {
        what: "step",
        got: step,
        expected: "a 32-bit step",
        offset: at,
    })?;
    if n == 0 && header & 0x1f != 0 {
        return Err(CodecError::Invalid {
            what: "empty block modes",
            got: u64::from(header & 0x1f),
            expected: "0 for a block of no points",
            offset: 0,
        });
    }
    Ok(Header {
        slot_mode: SlotMode::from_bits(header >> 2),
        negative: header & NEGATIVE_FLAG != 0,
        value_mode,
        n,
        step,
    })
}

fn decode_inner(
    block: &[u8],
    slots: &mut Vec<i64>,
    values: &mut Vec<f64>,
) -> Result<(), CodecError> {
    let mut r = Reader::new(block);
    let h = read_header(&mut r)?;
    if h.n == 0 {
        return r.finish();
    }
    // Validate the slot section and find the values without materialising the slots yet, so
    // that a block whose values are short cannot make us allocate for its claimed count.
    let slot_section = r.clone();
    slots::decode(&mut r, h.slot_mode, h.negative, h.n, h.step, None)?;
    decode_values(&mut r, h.value_mode, h.n, values)?;
    r.finish()?;
    let mut r = slot_section;
    slots.reserve(h.n);
    slots::decode(&mut r, h.slot_mode, h.negative, h.n, h.step, Some(slots))?;
    Ok(())
}

fn decode_values(
    r: &mut Reader<'_>,
    mode: ValueMode,
    n: usize,
    values: &mut Vec<f64>,
) -> Result<(), CodecError> {
    match mode {
        ValueMode::Constant => {
            let v = f64::from_bits(r.u64_le("constant value")?);
            values.extend(std::iter::repeat_n(v, n));
            Ok(())
        }
        ValueMode::Xor => {
            let at = r.pos();
            let stream = r.take(r.remaining(), "xor values")?;
            xor::decode(stream, at, n, values)
        }
        ValueMode::Decimal => decode_decimal(r, n, values),
    }
}

fn decode_decimal(r: &mut Reader<'_>, n: usize, values: &mut Vec<f64>) -> Result<(), CodecError> {
    let at = r.pos();
    let params = r.u8("decimal parameters")?;
    let d = u32::from(params & DECIMALS_MASK);
    let order = (params >> ORDER_SHIFT) & 3;
    if d > decimal::MAX_DECIMALS || order > ints::MAX_ORDER || usize::from(order) > n {
        return Err(CodecError::Invalid {
            what: "decimal parameters",
            got: u64::from(params),
            expected: "decimals <= 22 and delta order <= 2 and <= point count",
            offset: at,
        });
    }
    let exceptions = if params & EXCEPTIONS_FLAG != 0 {
        let section = r.clone();
        let count = read_exceptions(r, n, |_, _| {})?;
        Some((section, count))
    } else {
        None
    };
    let start = values.len();
    ints::decode(r, n, order, decimal::pow10(d), values)?;
    if let Some((mut section, _)) = exceptions {
        let decoded = values.get_mut(start..).unwrap_or_default();
        read_exceptions(&mut section, n, |i, bits| {
            if let Some(v) = decoded.get_mut(i) {
                *v = f64::from_bits(bits);
            }
        })?;
    }
    Ok(())
}

/// Reads the exception list, calling `f(index, bits)` for each; returns how many there are.
fn read_exceptions(
    r: &mut Reader<'_>,
    n: usize,
    mut f: impl FnMut(usize, u64),
) -> Result<usize, CodecError> {
    let count =
        r.varint_in("exception count", 0, n as u64 - 1, "below the point count")? as usize + 1;
    let mut next = 0u64; // smallest index the next exception may have
    for _ in 0..count {
        let at = r.pos();
        let index = next.saturating_add(r.varint("exception index")?);
        if index >= n as u64 {
            return Err(CodecError::Invalid {
                what: "exception index",
                got: index,
                expected: "below the point count",
                offset: at,
            });
        }
        let bits = r.u64_le("exception value")?;
        f(index as usize, bits);
        next = index + 1;
    }
    Ok(count)
}

/// What [`info`] reads from a block without decoding its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockInfo {
    /// Number of points.
    pub count: usize,
    /// The step the block was encoded with.
    pub step: u32,
    /// First and last slot, `None` for a block of no points.
    pub first_last: Option<(i64, i64)>,
}

/// Reads a block's point count, step and first and last slot. Cheap: it reads the header and
/// the slot section (a few bytes for a dense block) and does not check the values.
pub fn info(block: &[u8]) -> Result<BlockInfo, CodecError> {
    let mut r = Reader::new(block);
    let h = read_header(&mut r)?;
    let first_last = if h.n == 0 {
        None
    } else {
        Some(slots::decode(
            &mut r,
            h.slot_mode,
            h.negative,
            h.n,
            h.step,
            None,
        )?)
    };
    Ok(BlockInfo {
        count: h.n,
        step: h.step,
        first_last,
    })
}

/// Like [`decode`], but appends only the points with `from <= slot < until`.
///
/// A block with no point in the window is answered from its header alone (its values are not
/// checked).
pub fn decode_window(
    block: &[u8],
    from: i64,
    until: i64,
    slots: &mut Vec<i64>,
    values: &mut Vec<f64>,
) -> Result<(), CodecError> {
    let info = info(block)?;
    let Some((first, last)) = info.first_last else {
        return Ok(());
    };
    if from >= until {
        return Ok(());
    }
    let sorted = block
        .first()
        .is_some_and(|h| SlotMode::from_bits(h >> 2) != SlotMode::Raw);
    if sorted && (last < from || first >= until) {
        return Ok(());
    }
    let (s0, v0) = (slots.len(), values.len());
    decode(block, slots, values)?;
    let inside = |s: &i64| from <= *s && *s < until;
    if sorted {
        let new = slots.get(s0..).unwrap_or_default();
        let lo = new.partition_point(|&s| s < from);
        let hi = new.partition_point(|&s| s < until);
        slots.truncate(s0 + hi);
        values.truncate(v0 + hi);
        slots.drain(s0..s0 + lo);
        values.drain(v0..v0 + lo);
    } else {
        let new_slots = slots.split_off(s0);
        let new_values = values.split_off(v0);
        for (s, v) in new_slots.into_iter().zip(new_values) {
            if inside(&s) {
                slots.push(s);
                values.push(v);
            }
        }
    }
    Ok(())
}
