//! The integer stream of the decimal value mode: delta order 0, 1 or 2, then frame of
//! reference and bit packing in sub-blocks of [`SUB`] values.
//!
//! Order 1 (first differences) suits random walks and counters, order 2 counters with a
//! steady rate, order 0 values that jump around a level. The first `order` integers are
//! stored whole ("heads"); the residuals of the others are cut into sub-blocks at value
//! indexes that are multiples of [`SUB`] (so the first sub-block holds `SUB - order`). Each
//! sub-block stores its minimum (the "base") and the bit width of `max - min`, so its width
//! follows the local spread of the data. The encoder computes the exact size of every order in
//! one pass and keeps the smallest.

use super::bitpack::{pack, packed_len, unpack, width_of, SUB};
use super::bytes::{put_varint, put_zigzag, varint_len, zigzag, Reader};
use super::decimal::to_f64;
use super::CodecError;

/// Largest delta order.
pub(super) const MAX_ORDER: u8 = 2;

/// Orders considered, as array indexes.
const ORDERS: usize = MAX_ORDER as usize + 1;

/// Calls `f` with the residuals of `ints` at `order`, one sub-block at a time.
fn for_each_chunk(ints: &[i64], order: u8, mut f: impl FnMut(&[i64])) {
    let order = usize::from(order);
    let mut buf = [0i64; SUB];
    let mut start = 0;
    while start < ints.len() {
        let end = (start + SUB).min(ints.len());
        // Residual i needs values i-order ..= i: three aligned slices ending at `end`.
        let from = start.max(order);
        let cur = ints.get(from..end).unwrap_or_default();
        let p1 = ints
            .get(from.saturating_sub(1)..end.saturating_sub(1))
            .unwrap_or_default();
        let p2 = ints
            .get(from.saturating_sub(2)..end.saturating_sub(2))
            .unwrap_or_default();
        start = end;
        if cur.is_empty() {
            continue;
        }
        if order == 0 {
            f(cur);
            continue;
        }
        let out = buf.iter_mut();
        if order == 1 {
            for (o, (&c, &a)) in out.zip(cur.iter().zip(p1)) {
                *o = c.wrapping_sub(a);
            }
        } else {
            for (o, ((&c, &a), &b)) in out.zip(cur.iter().zip(p1).zip(p2)) {
                *o = c.wrapping_sub(a).wrapping_sub(a.wrapping_sub(b));
            }
        }
        f(buf.get(..cur.len()).unwrap_or_default());
    }
}

/// Width byte of a sparse sub-block (packed ones have widths 0..=64).
const SPARSE: u8 = 0x80;

/// How one sub-block is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    /// Every residual as `base + offset`, offsets packed at `width` bits.
    Packed { base: i64, width: u32 },
    /// Residuals equal to `common` are implied; the others are listed with their positions.
    /// Wins when nearly all residuals are equal (a flat error counter, a gauge that rarely
    /// moves), where packing would still spend `width` bits on each.
    Sparse { common: i64 },
}

/// Bytes of one listed residual of a sparse sub-block: its position gap (below 128: one
/// byte) and its difference from the common value.
#[inline]
fn sparse_entry_len(r: i64, common: i64) -> usize {
    1 + varint_len(zigzag(r.wrapping_sub(common)))
}

/// Bytes of a packed sub-block of `len` residuals spanning `min..=max`.
#[inline]
fn packed_sub_block_len(min: i64, max: i64, len: usize) -> usize {
    1 + varint_len(zigzag(min)) + packed_len(len, width_of(max.wrapping_sub(min) as u64))
}

/// Bytes of a sparse sub-block around `common` with `listed` residuals taking `entries` bytes.
#[inline]
fn sparse_sub_block_len(common: i64, listed: usize, entries: usize) -> usize {
    1 + varint_len(zigzag(common)) + varint_len(listed as u64) + entries
}

/// The cheapest frame of one sub-block and its size in bytes. The sparse candidate takes
/// the first residual as the common value.
fn frame(chunk: &[i64]) -> (Frame, usize) {
    let min = chunk.iter().copied().min().unwrap_or(0);
    let max = chunk.iter().copied().max().unwrap_or(0);
    let packed = packed_sub_block_len(min, max, chunk.len());
    let common = chunk.first().copied().unwrap_or(0);
    let listed = chunk.iter().filter(|&&r| r != common).count();
    // A listed residual takes at least two bytes; below that bound, size the sparse form.
    let sparse = if sparse_sub_block_len(common, listed, 2 * listed) < packed {
        let entries = chunk
            .iter()
            .filter(|&&r| r != common)
            .map(|&r| sparse_entry_len(r, common))
            .sum();
        sparse_sub_block_len(common, listed, entries)
    } else {
        usize::MAX
    };
    if sparse < packed {
        (Frame::Sparse { common }, sparse)
    } else {
        let width = width_of(max.wrapping_sub(min) as u64);
        (Frame::Packed { base: min, width }, packed)
    }
}

fn heads_len(ints: &[i64], order: u8) -> usize {
    let mut it = ints.iter().copied();
    let (Some(a), b) = (it.next(), it.next()) else {
        return 0;
    };
    match (order, b) {
        (0, _) => 0,
        (1, _) | (_, None) => varint_len(zigzag(a)),
        (_, Some(b)) => varint_len(zigzag(a)) + varint_len(zigzag(b.wrapping_sub(a))),
    }
}

/// Bytes [`write`] produces for `ints` at `order` (the reference for [`best_order`]).
#[cfg(test)]
fn cost(ints: &[i64], order: u8) -> usize {
    let mut total = heads_len(ints, order);
    for_each_chunk(ints, order, |chunk| total += frame(chunk).1);
    total
}

/// The cheapest order for `ints` (orders above `ints.len()` excluded) and its exact size in
/// bytes. One pass: the residuals of all orders are formed and bounded together.
pub(super) fn best_order(ints: &[i64]) -> (u8, usize) {
    let mut costs = [0usize; ORDERS];
    for (o, c) in costs.iter_mut().enumerate() {
        *c = heads_len(ints, o as u8);
    }
    // The first sub-block holds fewer residuals for higher orders: bound it order by order.
    let first = ints.get(..SUB.min(ints.len())).unwrap_or_default();
    for (o, c) in costs.iter_mut().enumerate() {
        for_each_chunk(first, o as u8, |chunk| *c += frame(chunk).1);
    }
    // Later sub-blocks: value `i`, its predecessors `i-1` and `i-2` as three aligned slices.
    let mut start = SUB;
    while start < ints.len() {
        let end = (start + SUB).min(ints.len());
        let (Some(cur), Some(p1), Some(p2)) = (
            ints.get(start..end),
            ints.get(start - 1..end - 1),
            ints.get(start - 2..end - 2),
        ) else {
            break;
        };
        let residuals = |c: i64, a: i64, b: i64| {
            let d1 = c.wrapping_sub(a);
            [c, d1, d1.wrapping_sub(a.wrapping_sub(b))]
        };
        // Sparse candidates: the first residual of each order is the common value.
        let common = match (cur.first(), p1.first(), p2.first()) {
            (Some(&c), Some(&a), Some(&b)) => residuals(c, a, b),
            _ => [0; ORDERS],
        };
        let [k0, k1, k2] = common;
        // Plain locals rather than arrays: this loop is most of the encoder's time.
        let (mut lo0, mut hi0, mut l0) = (i64::MAX, i64::MIN, 0usize);
        let (mut lo1, mut hi1, mut l1) = (i64::MAX, i64::MIN, 0usize);
        let (mut lo2, mut hi2, mut l2) = (i64::MAX, i64::MIN, 0usize);
        for ((&c, &a), &b) in cur.iter().zip(p1).zip(p2) {
            let [r0, r1, r2] = residuals(c, a, b);
            lo0 = lo0.min(r0);
            hi0 = hi0.max(r0);
            l0 += usize::from(r0 != k0);
            lo1 = lo1.min(r1);
            hi1 = hi1.max(r1);
            l1 += usize::from(r1 != k1);
            lo2 = lo2.min(r2);
            hi2 = hi2.max(r2);
            l2 += usize::from(r2 != k2);
        }
        let min = [lo0, lo1, lo2];
        let max = [hi0, hi1, hi2];
        let listed = [l0, l1, l2];
        for (o, c) in costs.iter_mut().enumerate() {
            let (Some(&lo), Some(&hi), Some(&k), Some(&l)) =
                (min.get(o), max.get(o), common.get(o), listed.get(o))
            else {
                continue;
            };
            let packed = packed_sub_block_len(lo, hi, cur.len());
            // A listed residual takes at least two bytes: only when that bound is below the
            // packed size is the exact sparse size worth a second pass (flat data).
            let sparse = if sparse_sub_block_len(k, l, 2 * l) < packed {
                let mut entries = 0;
                for_each_chunk(
                    ints.get(start - o..end).unwrap_or_default(),
                    o as u8,
                    |chunk| {
                        entries += chunk
                            .iter()
                            .filter(|&&r| r != k)
                            .map(|&r| sparse_entry_len(r, k))
                            .sum::<usize>();
                    },
                );
                sparse_sub_block_len(k, l, entries)
            } else {
                usize::MAX
            };
            *c += packed.min(sparse);
        }
        start = end;
    }
    let allowed = ints.len().min(usize::from(MAX_ORDER));
    costs
        .iter()
        .take(allowed + 1)
        .enumerate()
        .min_by_key(|&(_, &c)| c)
        .map_or((0, 0), |(o, &c)| (o as u8, c))
}

/// Appends the stream: the first `order` integers as zigzag varints, then the sub-blocks.
pub(super) fn write(ints: &[i64], order: u8, out: &mut Vec<u8>) {
    let mut it = ints.iter().copied();
    if order >= 1 {
        if let Some(a) = it.next() {
            put_zigzag(out, a);
            if order >= 2 {
                if let Some(b) = it.next() {
                    put_zigzag(out, b.wrapping_sub(a));
                }
            }
        }
    }
    let mut offs = [0u64; SUB];
    for_each_chunk(ints, order, |chunk| match frame(chunk).0 {
        Frame::Packed { base, width } => {
            out.push(width as u8);
            put_zigzag(out, base);
            for (o, &r) in offs.iter_mut().zip(chunk) {
                *o = r.wrapping_sub(base) as u64;
            }
            pack(offs.get(..chunk.len()).unwrap_or_default(), width, out);
        }
        Frame::Sparse { common } => {
            out.push(SPARSE);
            put_zigzag(out, common);
            put_varint(out, chunk.iter().filter(|&&r| r != common).count() as u64);
            let mut next = 0;
            for (i, &r) in chunk.iter().enumerate() {
                if r != common {
                    put_varint(out, (i - next) as u64);
                    put_zigzag(out, r.wrapping_sub(common));
                    next = i + 1;
                }
            }
        }
    });
}

/// Reads a stream of `n` integers at `order` written by [`write`] and appends them to `out`
/// as `m / p` (see [`to_f64`]).
pub(super) fn decode(
    r: &mut Reader<'_>,
    n: usize,
    order: u8,
    p: f64,
    out: &mut Vec<f64>,
) -> Result<(), CodecError> {
    let order_len = usize::from(order);
    // Sub-blocks cover value indexes [k*SUB, (k+1)*SUB) past the heads.
    let sub_blocks = n.div_ceil(SUB) - usize::from(n > 0 && n <= order_len);
    // Every sub-block takes at least two bytes (width and base): refuse counts the block
    // cannot hold before reserving memory for them.
    if sub_blocks.saturating_mul(2) > r.remaining() {
        return Err(CodecError::Truncated {
            what: "integer sub-blocks",
            offset: r.pos() + r.remaining(),
        });
    }
    out.reserve(n);
    let conv = |m: i64| if p == 1.0 { m as f64 } else { to_f64(m, p) };
    let mut prev = 0i64;
    let mut delta = 0i64;
    if order >= 1 && n >= 1 {
        prev = r.zigzag("first integer")?;
        out.push(conv(prev));
    }
    if order >= 2 && n >= 2 {
        delta = r.zigzag("first difference")?;
        prev = prev.wrapping_add(delta);
        out.push(conv(prev));
    }
    let mut ints = [0i64; SUB];
    let mut index = order_len.min(n);
    while index < n {
        let end = ((index / SUB + 1) * SUB).min(n);
        let len = end - index;
        index = end;
        let at = r.pos();
        let width = r.u8("sub-block width")?;
        if width == SPARSE {
            read_sparse(r, len, &mut ints)?;
        } else if width <= 64 {
            let width = u32::from(width);
            let base = r.zigzag("sub-block base")?;
            let packed = r.rest();
            r.take(packed_len(len, width), "packed sub-block")?;
            unpack(packed, width, base, &mut ints);
        } else {
            return Err(CodecError::Invalid {
                what: "sub-block width",
                got: u64::from(width),
                expected: "0 ..= 64 bits, or 128 (sparse)",
                offset: at,
            });
        }
        // Only the first `len` entries are this sub-block's; the rest must not enter the sums.
        let ints = ints.get_mut(..len).unwrap_or_default();
        match order {
            0 => {}
            1 => {
                for m in ints.iter_mut() {
                    prev = prev.wrapping_add(*m);
                    *m = prev;
                }
            }
            _ => {
                for m in ints.iter_mut() {
                    delta = delta.wrapping_add(*m);
                    prev = prev.wrapping_add(delta);
                    *m = prev;
                }
            }
        }
        if p == 1.0 {
            out.extend(ints.iter().map(|&m| m as f64));
        } else {
            out.extend(ints.iter().map(|&m| to_f64(m, p)));
        }
    }
    Ok(())
}

/// Reads a sparse sub-block of `len` residuals into `ints`.
fn read_sparse(r: &mut Reader<'_>, len: usize, ints: &mut [i64; SUB]) -> Result<(), CodecError> {
    let common = r.zigzag("sparse common value")?;
    let listed = r.varint_in(
        "sparse count",
        0,
        len as u64,
        "at most the sub-block length",
    )?;
    ints.fill(common);
    let mut next = 0u64;
    for _ in 0..listed {
        let at = r.pos();
        let pos = next.saturating_add(r.varint("sparse position")?);
        let delta = r.zigzag("sparse value")?;
        let slot = ints.get_mut(pos as usize).filter(|_| pos < len as u64);
        let Some(slot) = slot else {
            return Err(CodecError::Invalid {
                what: "sparse position",
                got: pos,
                expected: "below the sub-block length",
                offset: at,
            });
        };
        *slot = common.wrapping_add(delta);
        next = pos + 1;
    }
    Ok(())
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

    fn round_trip(ints: &[i64], order: u8) -> usize {
        let mut buf = Vec::new();
        write(ints, order, &mut buf);
        assert_eq!(buf.len(), cost(ints, order), "cost of order {order}");
        let mut r = Reader::new(&buf);
        let mut out = Vec::new();
        decode(&mut r, ints.len(), order, 1.0, &mut out).expect("decodes");
        assert_eq!(r.finish(), Ok(()));
        let got: Vec<i64> = out.iter().map(|&v| v as i64).collect();
        assert_eq!(got, ints, "order {order}");
        buf.len()
    }

    #[test]
    fn every_order_round_trips_every_length() {
        let mut s = 7u64;
        let ints: Vec<i64> = (0..700)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as i64 - (1 << 23)
            })
            .collect();
        for len in [0, 1, 2, 3, 127, 128, 129, 130, 131, 256, 257, 700] {
            let ints = &ints[..len];
            let mut sizes = Vec::new();
            for order in 0..=MAX_ORDER {
                if usize::from(order) <= len {
                    sizes.push(round_trip(ints, order));
                }
            }
            // The one-pass estimate is exact and picks the smallest.
            let (best, size) = best_order(ints);
            assert_eq!(size, sizes[usize::from(best)], "len {len}");
            assert_eq!(Some(&size), sizes.iter().min(), "len {len}");
        }
    }

    #[test]
    fn wrapping_extremes_round_trip() {
        let ints = [i64::MIN, i64::MAX, 0, i64::MIN, -1, i64::MAX, 1];
        for order in 0..=MAX_ORDER {
            round_trip(&ints, order);
        }
    }

    #[test]
    fn best_order_matches_the_shape() {
        let mut rng = 5u64;
        let level: Vec<i64> = (0..1000)
            .map(|_| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                5000 + (rng >> 58) as i64
            })
            .collect();
        let counter: Vec<i64> = (0..1000).map(|i| 1_000_000 + i * 137).collect();
        let walk: Vec<i64> = (0..1000)
            .scan(0i64, |s, _| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *s += (rng >> 54) as i64 - 512;
                Some(*s)
            })
            .collect();
        assert_eq!(best_order(&level).0, 0);
        assert_eq!(best_order(&counter).0, 2);
        assert_eq!(best_order(&walk).0, 1);
        // A constant-rate counter packs to the headers alone.
        assert!(round_trip(&counter, 2) < 30);
    }

    #[test]
    fn mostly_flat_residuals_use_sparse_sub_blocks() {
        // An error counter: flat, with a bump every 40 steps.
        let counter: Vec<i64> = (0..1000).map(|i| 7 + i / 40 * 3).collect();
        let (order, size) = best_order(&counter);
        assert_eq!(order, 1);
        let mut buf = Vec::new();
        write(&counter, order, &mut buf);
        assert!(buf.contains(&SPARSE));
        assert_eq!(round_trip(&counter, order), size);
        // 25 bumps of 2 bytes plus a few bytes a sub-block.
        assert!(size < 100, "{size}");
    }

    #[test]
    fn sparse_positions_past_the_sub_block_are_rejected() {
        // Order 0, three values: sparse, common 0, two listed, positions 1 then 1+1+1 = 3.
        let buf = [SPARSE, 0, 2, 1, 2, 1, 2];
        let err = decode(&mut Reader::new(&buf), 3, 0, 1.0, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(
                err,
                CodecError::Invalid {
                    what: "sparse position",
                    offset: 5,
                    ..
                }
            ),
            "{err}"
        );
        let ok = [SPARSE, 0, 2, 1, 2, 0, 4];
        let mut out = Vec::new();
        decode(&mut Reader::new(&ok), 3, 0, 1.0, &mut out).unwrap();
        assert_eq!(out, vec![0.0, 1.0, 2.0]);
    }

    #[test]
    fn width_above_64_is_rejected() {
        let buf = [65u8, 0];
        let mut out = Vec::new();
        let err = decode(&mut Reader::new(&buf), 5, 0, 1.0, &mut out).unwrap_err();
        assert!(matches!(
            err,
            CodecError::Invalid {
                what: "sub-block width",
                offset: 0,
                ..
            }
        ));
    }

    #[test]
    fn impossible_counts_fail_before_allocating() {
        let mut out = Vec::new();
        let err = decode(&mut Reader::new(&[0, 0]), 1 << 40, 1, 1.0, &mut out).unwrap_err();
        assert!(matches!(err, CodecError::Truncated { .. }));
        assert_eq!(out.capacity(), 0);
    }
}
