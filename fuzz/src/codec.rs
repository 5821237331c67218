//! Fuzz targets for the store's block codec (`sumi_store::codec`).
//!
//! - [`codec_decode`] decodes the input as a block. Accepted outcomes, anything else
//!   panics: `Ok` with as many values as slots, agreeing with `info` (count, first and last
//!   slot) and with `decode_window` on a window taken from the input, and (for blocks of at
//!   most 65,536 points) re-encoding the points and decoding again gives them back bit for
//!   bit; or a `CodecError` with a message, the output vectors left as they were.
//! - [`codec_roundtrip`] builds points from the input (a step, slots dense, gapped or
//!   arbitrary, values as raw bits, decimals or a random walk), encodes them, and requires the
//!   block to decode to exactly those points, bit for bit, with `info` and `decode_window`
//!   agreeing. It never accepts an error.
//!
//! Their seed corpora are generated: [`decode_seeds`] and [`roundtrip_seeds`].

use crate::Input;
use sumi_store::codec::{decode, decode_window, encode, info};

/// Largest decoded block whose points are re-encoded (bigger ones cost too long per input).
const REENCODE_LIMIT: usize = 1 << 16;

/// One block of arbitrary bytes.
pub fn codec_decode(data: &[u8]) {
    let (mut slots, mut values) = (vec![7i64], vec![7.0f64]);
    match decode(data, &mut slots, &mut values) {
        Ok(()) => {
            assert_eq!(
                slots.len(),
                values.len(),
                "slots and values differ in length"
            );
            let (slots, values) = (&slots[1..], &values[1..]);
            let i = info(data).unwrap_or_else(|e| panic!("decode accepted what info refused: {e}"));
            assert_eq!(i.count, slots.len());
            assert_eq!(
                i.first_last,
                slots.first().zip(slots.last()).map(|(a, b)| (*a, *b))
            );
            let (from, until) = window(data);
            check_window(data, from, until, slots, values);
            if slots.len() <= REENCODE_LIMIT {
                let mut block = Vec::new();
                encode(i.step, slots, values, &mut block);
                check_round_trip(&block, i.step, slots, values);
            }
        }
        Err(e) => {
            assert!(!e.to_string().is_empty(), "empty error message");
            assert_eq!(
                (slots, values),
                (vec![7], vec![7.0]),
                "output touched on error"
            );
        }
    }
}

/// Points built from the input, encoded and decoded.
pub fn codec_roundtrip(data: &[u8]) {
    let mut input = Input(data);
    let control = input.byte();
    let step = match control & 7 {
        0 => 1,
        1 => 10,
        2 => 60,
        3 => 0,
        _ => input.u32(),
    };
    let values = make_values(control >> 3 & 3, &mut input);
    let slots = make_slots(control >> 5, step, values.len(), &mut input);
    let mut block = Vec::new();
    encode(step, &slots, &values, &mut block);
    check_round_trip(&block, step, &slots, &values);
    let (from, until) = window(data);
    check_window(&block, from, until, &slots, &values);
}

/// Up to 2,000 values: raw bits (8 bytes each), decimals (`i16 / 10^d`), or a random walk
/// of small steps (one byte each), whatever the input holds.
fn make_values(kind: u8, input: &mut Input<'_>) -> Vec<f64> {
    let mut values = Vec::new();
    let d = i32::from(input.byte() % 5);
    let mut walk = input.u64() as i64 >> 16;
    while !input.is_empty() && values.len() < 2000 {
        let v = match kind {
            0 => f64::from_bits(input.u64()),
            1 => f64::from(i16::from_le_bytes([input.byte(), input.byte()])) / 10f64.powi(d),
            _ => {
                walk = walk.wrapping_add(i64::from(input.byte() as i8));
                walk as f64 / 10f64.powi(d)
            }
        };
        values.push(v);
    }
    values
}

/// `n` slots: dense from an input-chosen start, gapped (gaps from input bits), or raw input
/// (any `i64`, breaking the contract on purpose).
fn make_slots(kind: u8, step: u32, n: usize, input: &mut Input<'_>) -> Vec<i64> {
    let s = i64::from(step.max(1));
    let first = (input.u64() as i64 >> 24) / s * s;
    match kind {
        0..=3 => (0..n as i64)
            .map(|i| first.saturating_add(i.saturating_mul(s)))
            .collect(),
        4..=5 => {
            let mut bits = input.u64();
            let mut t = first;
            (0..n)
                .map(|_| {
                    let at = t;
                    t = t.saturating_add(s * (1 + (bits & 3) as i64));
                    bits = bits.rotate_right(2);
                    at
                })
                .collect()
        }
        _ => (0..n).map(|_| input.u64() as i64).collect(),
    }
}

/// A slot window taken from the last 16 bytes of the input.
fn window(data: &[u8]) -> (i64, i64) {
    let tail = data.len().saturating_sub(16);
    let mut input = Input(&data[tail..]);
    let (a, b) = (input.u64() as i64, input.u64() as i64);
    (a.min(b), a.max(b))
}

fn check_round_trip(block: &[u8], step: u32, slots: &[i64], values: &[f64]) {
    let (mut s, mut v) = (Vec::new(), Vec::new());
    decode(block, &mut s, &mut v).unwrap_or_else(|e| panic!("encoded block does not decode: {e}"));
    assert_eq!(s, slots, "slots changed");
    let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&v), bits(values), "values changed");
    let i = info(block).unwrap_or_else(|e| panic!("info refused an encoded block: {e}"));
    assert_eq!((i.count, i.step), (slots.len(), step));
}

fn check_window(block: &[u8], from: i64, until: i64, slots: &[i64], values: &[f64]) {
    let (mut s, mut v) = (Vec::new(), Vec::new());
    decode_window(block, from, until, &mut s, &mut v)
        .unwrap_or_else(|e| panic!("decode_window refused a block decode accepted: {e}"));
    let want: Vec<(i64, u64)> = slots
        .iter()
        .zip(values)
        .filter(|(s, _)| from <= **s && **s < until)
        .map(|(s, v)| (*s, v.to_bits()))
        .collect();
    let got: Vec<(i64, u64)> = s.iter().zip(&v).map(|(s, v)| (*s, v.to_bits())).collect();
    assert_eq!(got, want, "window {from}..{until}");
}

/// Seed inputs for `corpus/codec_decode/`, by file name: blocks the encoder writes, of
/// the shapes the store holds (see `tests/corpus.rs`).
pub fn decode_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let t0 = 1_700_000_000i64;
    let dense: Vec<i64> = (0..120).map(|i| t0 + i * 10).collect();
    let gapped: Vec<i64> = (0..60)
        .scan(t0, |t, i| {
            *t += 60 * (1 + i % 4);
            Some(*t)
        })
        .collect();
    let special = [
        f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE / 4.0,
        f64::from_bits(0x7ff8_0000_dead_beef),
        f64::MAX,
    ];
    let block = |step: u32, slots: &[i64], values: &[f64]| {
        let mut out = Vec::new();
        encode(step, slots, values, &mut out);
        out
    };
    vec![
        ("empty", block(10, &[], &[])),
        ("one_point", block(10, &[t0], &[1.0])),
        (
            "dense_decimals",
            block(
                10,
                &dense,
                &dense
                    .iter()
                    .map(|&s| (s % 97) as f64 / 10.0)
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "gapped_counter",
            block(
                60,
                &gapped,
                &gapped
                    .iter()
                    .map(|&s| (s - t0) as f64 * 3.0)
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "dense_random_bits",
            block(
                1,
                &dense[..16],
                &bytes(7, 128)
                    .chunks(8)
                    .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "special_values",
            block(10, &dense[..special.len()], &special),
        ),
    ]
}

/// Seed inputs for `corpus/codec_roundtrip/`, by file name: a control byte for each kind
/// of step, values and slots (see [`codec_roundtrip`]), then bytes to build them from.
pub fn roundtrip_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let seed = |control: u8, len: usize| {
        let mut v = vec![control];
        v.extend(bytes(u64::from(control), len));
        v
    };
    vec![
        ("step1_raw_values_dense", seed(0, 200)),
        ("step10_decimals_dense", seed(1 | 1 << 3, 120)),
        ("step60_walk_dense", seed(2 | 2 << 3, 120)),
        ("step0_walk_gapped", seed(3 | 2 << 3 | 4 << 5, 120)),
        ("step_any_decimals_gapped", seed(4 | 1 << 3 | 5 << 5, 120)),
        ("step10_raw_values_raw_slots", seed(1 | 6 << 5, 200)),
        ("step60_decimals_raw_slots", seed(2 | 1 << 3 | 7 << 5, 160)),
    ]
}

/// A small deterministic generator, so that seeds need no dependency.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_pass_and_every_decode_seed_decodes() {
        for (name, block) in decode_seeds() {
            let (mut slots, mut values) = (Vec::new(), Vec::new());
            decode(&block, &mut slots, &mut values).unwrap_or_else(|e| panic!("{name}: {e}"));
            codec_decode(&block);
        }
        for (_, input) in roundtrip_seeds() {
            codec_roundtrip(&input);
        }
    }

    #[test]
    fn random_inputs_pass_both_targets() {
        for seed in 0..400 {
            let data = bytes(seed, (seed as usize * 37) % 3000);
            codec_roundtrip(&data);
            codec_decode(&data);
        }
    }

    #[test]
    fn encoded_blocks_and_their_mutations_pass_decode() {
        for seed in 0..200 {
            let data = bytes(seed, 600);
            let values = make_values((seed % 3) as u8, &mut Input(&data));
            let slots = make_slots((seed % 8) as u8, 10, values.len(), &mut Input(&data));
            let mut block = Vec::new();
            encode(10, &slots, &values, &mut block);
            codec_decode(&block);
            for cut in [0, 1, block.len() / 2, block.len().saturating_sub(1)] {
                codec_decode(&block[..cut]);
            }
            let at = seed as usize % block.len().max(1);
            if let Some(b) = block.get_mut(at) {
                *b ^= 1 << (seed % 8);
            }
            codec_decode(&block);
        }
    }
}
