//! Fuzz target for the RRD reader (`sumi_import::rrd`: header, definitions, row
//! pointers, rows and `fetch`, as the importer reads files of an unknown tree).
//!
//! The first byte of [`rrd_file`]'s input picks what the rest becomes:
//! - `0`: the whole file;
//! - otherwise: a well-formed x86_64 RRD header built here from the first bytes (1-3
//!   data sources, 1-3 RRAs of AVERAGE, MIN, MAX, LAST or FAILURES with 1-8 rows of 1-4
//!   steps, a step of 1-4 s, a current row and a last update from the input), then the
//!   rest of the input as the rows (zero-padded), so that `fetch` meets every row
//!   pointer and alignment.
//!
//! Times for `fetch` are taken from the input around the last update. Accepted
//! outcomes, anything else panics:
//! - refused: an `RrdError` whose offset lies in the file (or at its end), whose message
//!   names the file, and no panic;
//! - accepted: every RRA's rows lie in the file; a fetch is rrdtool's refusal of
//!   `end < start`, or of a CF no RRA serves (and then none does), or rows of an RRA that
//!   serves the CF: `start` and `end` aligned on its step, `(end - start) / step` rows of
//!   one value per data source, each the content of the slot its interval maps to when
//!   the RRA holds that interval (and the row `rra_rows` gives for that time), NaN
//!   otherwise.

use sumi_import::rrd::{
    Cf, FetchError, Rrd, CDP_PREP_LEN, DS_DEF_LEN, FLOAT_COOKIE, NAME_LEN, PDP_PREP_LEN,
    RRA_DEF_LEN, STAT_HEAD_LEN,
};

const PATH: &str = "fuzz.rrd";
/// Last updates of built files: 10^9 plus a byte.
const BASE: i64 = 1_000_000_000;
const CFS: [&str; 5] = ["AVERAGE", "MIN", "MAX", "LAST", "FAILURES"];

/// One input.
pub fn rrd_file(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        check(Vec::new(), &[]);
        return;
    };
    if mode == 0 {
        check(rest.to_vec(), rest);
    } else {
        let (file, times) = build(mode, rest);
        check(file, times);
    }
}

fn name(f: &mut Vec<u8>, s: &str) {
    let mut b = [0u8; NAME_LEN];
    b[..s.len()].copy_from_slice(s.as_bytes());
    f.extend_from_slice(&b);
}

/// A well-formed file from the first bytes of `rest`, the remaining bytes as rows
/// (zero-padded). Returns the file and the bytes left for the times.
fn build(mode: u8, rest: &[u8]) -> (Vec<u8>, &[u8]) {
    let byte = |i: usize| rest.get(i).copied().unwrap_or(0);
    let nds = usize::from(mode % 3) + 1;
    let nrra = usize::from((mode / 3) % 3) + 1;
    let step = u64::from(byte(0) % 4) + 1;
    let last_up = BASE as u64 + u64::from(byte(1));
    let rras: Vec<(&str, u64, u64, u64)> = (0..nrra)
        .map(|i| {
            let b = byte(2 + i);
            let rows = u64::from(b & 7) + 1;
            let pdp = u64::from((b >> 3) & 3) + 1;
            let cf = CFS[usize::from(b >> 5) % CFS.len()];
            (cf, rows, pdp, u64::from(byte(5 + i)) % rows)
        })
        .collect();
    let mut f = Vec::new();
    f.extend_from_slice(b"RRD\x000003\0\0\0\0\0\0\0\0");
    f.extend_from_slice(&FLOAT_COOKIE.to_le_bytes());
    for v in [nds as u64, nrra as u64, step] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    f.resize(STAT_HEAD_LEN, 0);
    for d in 0..nds {
        let at = f.len();
        name(&mut f, &format!("ds{d}"));
        name(&mut f, "GAUGE");
        f.extend_from_slice(&(2 * step).to_le_bytes());
        f.extend_from_slice(&f64::NAN.to_le_bytes());
        f.extend_from_slice(&f64::NAN.to_le_bytes());
        f.resize(at + DS_DEF_LEN, 0);
    }
    for &(cf, rows, pdp, _) in &rras {
        let at = f.len();
        name(&mut f, cf);
        f.extend_from_slice(&[0; 4]);
        f.extend_from_slice(&rows.to_le_bytes());
        f.extend_from_slice(&pdp.to_le_bytes());
        f.extend_from_slice(&0.5f64.to_le_bytes());
        f.resize(at + RRA_DEF_LEN, 0);
    }
    f.extend_from_slice(&last_up.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    f.resize(f.len() + nds * PDP_PREP_LEN + nrra * nds * CDP_PREP_LEN, 0);
    for &(_, _, _, cur) in &rras {
        f.extend_from_slice(&cur.to_le_bytes());
    }
    let data: usize = rras.iter().map(|r| r.1 as usize * nds * 8).sum();
    let body = rest.get(8..).unwrap_or_default();
    let n = body.len().min(data);
    f.extend_from_slice(&body[..n]);
    f.resize(f.len() + data - n, 0);
    (f, &body[n..])
}

fn check(file: Vec<u8>, times: &[u8]) {
    let len = file.len() as u64;
    let r = match Rrd::from_bytes(PATH, file) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.offset <= len, "{e}: offset past the {len}-byte file");
            assert!(e.to_string().starts_with("RRD file fuzz.rrd: "), "{e}");
            assert!(!matches!(e.kind, sumi_import::rrd::ErrorKind::Io(_)), "{e}");
            return;
        }
    };
    let nds = r.ds().len() as u64;
    for def in r.rras() {
        assert!(def.offset + def.rows * nds * 8 <= len, "{def:?}");
        assert!(def.cur_row < def.rows, "{def:?}");
    }
    let last = r.last_update();
    if !(sumi_import::rrd::MIN_FETCH_START..1 << 39).contains(&last) {
        return;
    }
    let mut at = times.iter().copied();
    let mut next = || i64::from(at.next().unwrap_or(0) as i8);
    for _ in 0..8 {
        let cf =
            [Cf::Average, Cf::Min, Cf::Max, Cf::Last, Cf::Failures][next().rem_euclid(5) as usize];
        let start = last + next() * 2;
        let end = start + next();
        let resolution = next().rem_euclid(16);
        match r.fetch(cf, start, end, resolution) {
            Err(FetchError::EndBeforeStart { .. }) => assert!(end < start),
            Err(FetchError::ZeroResolution) => assert_eq!(resolution, 0),
            Err(FetchError::NoMatchingRra { .. }) => {
                assert!(r.rras().iter().all(|d| !serves(d.cf, d.pdp_count, cf)))
            }
            Err(e) => panic!("fetch({cf}, {start}, {end}, {resolution}): {e}"),
            Ok(f) => {
                assert!(start <= end && resolution >= 1);
                let def = &r.rras()[f.rra];
                assert!(serves(def.cf, def.pdp_count, cf), "{f:?}");
                assert_eq!(f.step, r.rra_step(f.rra));
                assert!(f.start % f.step == 0 && f.end % f.step == 0, "{f:?}");
                assert!(f.start <= start && f.end > end, "{f:?}");
                assert_eq!(f.rows.len() as i64, (f.end - f.start) / f.step);
                let rows = def.rows as i64;
                let rra_end = last - last % f.step;
                let rra_start = rra_end - f.step * (rows - 1);
                let in_order: Vec<(i64, Vec<f64>)> = r.rra_rows(f.rra).collect();
                assert_eq!(in_order.len() as i64, rows);
                assert_eq!(in_order.first().map(|r| r.0), Some(rra_start));
                assert_eq!(in_order.last().map(|r| r.0), Some(rra_end));
                for (k, row) in f.rows.iter().enumerate() {
                    assert_eq!(row.len() as u64, nds);
                    let t = f.start + (k as i64 + 1) * f.step;
                    for (d, v) in row.iter().enumerate() {
                        if (rra_start..=rra_end).contains(&t) {
                            let slot = (def.cur_row as i64 + 1 + (t - rra_start) / f.step) % rows;
                            let want = r.value(f.rra, slot as u64, d);
                            assert_eq!(v.to_bits(), want.to_bits(), "{f:?} at {t}");
                            let (rt, row) = &in_order[((t - rra_start) / f.step) as usize];
                            assert_eq!((*rt, row[d].to_bits()), (t, v.to_bits()));
                        } else {
                            assert!(v.is_nan(), "{f:?} at {t}");
                        }
                    }
                }
            }
        }
    }
}

/// Whether an RRA of `rra_cf` and `pdp` steps per row answers a fetch of `cf`.
fn serves(rra_cf: Cf, pdp: u64, cf: Cf) -> bool {
    rra_cf == cf || (pdp == 1 && rra_cf.is_plain() && cf.is_plain())
}

/// Seeds: built files of several shapes, a whole file, one cut short, one of a
/// big-endian machine.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut rows = Vec::new();
    for i in 0..96u16 {
        let v = if i % 7 == 3 {
            f64::NAN
        } else {
            f64::from(i) * 1.5 - 3.0
        };
        rows.extend_from_slice(&v.to_le_bytes());
    }
    // 2 data sources, 3 RRAs: AVERAGE 4 rows x1, MAX 6 rows x2, LAST 8 rows x4
    let mut built = vec![7u8, 1, 77, 0b0000_0011, 0b0100_1101, 0b0111_1111, 2, 5, 7];
    built.extend_from_slice(&rows);
    built.extend_from_slice(&[3, 250, 7, 0, 1, 2, 255, 128, 6, 3, 9]);
    let mut one = vec![1u8, 2, 10, 0b1000_0000, 0, 0, 0, 0, 0];
    one.extend_from_slice(&rows[..64]);
    one.extend_from_slice(&[0, 0, 5, 1, 2]);
    let (raw, _) = build(built[0], &built[1..]);
    let whole = [&[0u8][..], &raw[..]].concat();
    let cut = whole[..whole.len() - 5].to_vec();
    let mut big_endian = whole.clone();
    big_endian[17..25].copy_from_slice(&FLOAT_COOKIE.to_be_bytes());
    vec![
        ("built", built),
        ("one_min_rra", one),
        ("whole_file", whole),
        ("cut_file", cut),
        ("big_endian", big_endian),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use sumi_import::rrd::ErrorKind;

    #[test]
    fn seeds_reach_both_outcomes() {
        let seeds = seeds();
        let file = |name: &str| {
            let bytes = &seeds.iter().find(|(n, _)| *n == name).unwrap().1;
            Rrd::from_bytes(PATH, bytes[1..].to_vec())
        };
        let r = file("whole_file").unwrap();
        assert_eq!(r.ds().len(), 2);
        assert_eq!(r.rras().len(), 3);
        let f = r
            .fetch(Cf::Max, r.last_update() - 20, r.last_update(), 1)
            .unwrap();
        assert!(f.rows.iter().flatten().any(|v| !v.is_nan()), "{f:?}");
        assert!(matches!(
            file("cut_file").unwrap_err().kind,
            ErrorKind::ShortData { .. }
        ));
        assert!(matches!(
            file("big_endian").unwrap_err().kind,
            ErrorKind::BigEndian
        ));
        for (_, input) in &seeds {
            rrd_file(input);
        }
    }
}
