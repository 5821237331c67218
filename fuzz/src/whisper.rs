//! Fuzz target for the whisper reader (`sumi_import::whisper`: header, archive table,
//! points and `fetch`, as the importer reads files of an unknown whisper tree).
//!
//! The first byte of [`whisper_file`]'s input picks what the rest becomes:
//! - `0`: the whole file;
//! - otherwise: a well-formed header and archive table built here from the first
//!   bytes (1-3 archives of 1-8 points, 1-4 seconds per point, a known aggregation
//!   type), then the rest of the input as the slots, so that `fetch` sees
//!   half-written, stale and misaligned timestamps.
//!
//! Times for `fetch` and `window` are taken from the input around the first slot's
//! timestamp. Accepted outcomes, anything else panics:
//! - refused: a `WhisperError` whose offset lies in the file (or at its end), whose
//!   message names the file, and no panic;
//! - accepted: the table agrees with the header and every archive lies in the file;
//!   every window of an archive has exactly its `points` values, and each known value
//!   is what the slot of its interval holds, with that interval as timestamp; every
//!   fetch is whisper's refusal of `from > until`, or `None`, or values of one archive
//!   on aligned intervals, at most that archive's `points` of them, and the same values
//!   as that archive's window where they overlap.

use sumi_import::whisper::{ErrorKind, FetchError, Fetched, Whisper, ARCHIVE_INFO_LEN};

const PATH: &str = "fuzz.wsp";

/// One input.
pub fn whisper_file(data: &[u8]) {
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

/// A well-formed header and table from the first bytes of `rest`, the remaining bytes
/// as slots (zero-padded). Returns the file and the bytes left for the times.
fn build(mode: u8, rest: &[u8]) -> (Vec<u8>, &[u8]) {
    let byte = |i: usize| rest.get(i).copied().unwrap_or(0);
    let count = usize::from(mode % 3) + 1;
    let archives: Vec<(u32, u32)> = (0..count)
        .map(|i| {
            let b = byte(i);
            (u32::from(b & 3) + 1, u32::from((b >> 2) & 7) + 1)
        })
        .collect();
    let max = archives.iter().map(|&(s, p)| s * p).max().unwrap_or(0);
    let agg = u32::from(byte(3) % 8) + 1;
    let mut file = Vec::new();
    for v in [
        agg,
        max,
        (f32::from(byte(4)) / 255.0).to_bits(),
        count as u32,
    ] {
        file.extend_from_slice(&v.to_be_bytes());
    }
    let mut offset = (16 + count * ARCHIVE_INFO_LEN) as u32;
    for &(spp, points) in &archives {
        for v in [offset, spp, points] {
            file.extend_from_slice(&v.to_be_bytes());
        }
        offset += points * 12;
    }
    let mut body = rest.get(5..).unwrap_or_default();
    // Slots: timestamps on the archive's intervals from 1200 (divisible by every step
    // here) over two laps, some off the interval; values as given.
    'fill: for &(spp, points) in &archives {
        for _ in 0..points {
            let Some(n) = (!body.is_empty()).then(|| body.len().min(12)) else {
                break 'fill;
            };
            let mut slot = [0u8; 12];
            slot[..n].copy_from_slice(&body[..n]);
            let lap = spp * (u32::from(slot[0]) % (2 * points));
            let off = if slot[1] & 0x80 != 0 {
                u32::from(slot[1]) % spp
            } else {
                0
            };
            slot[..4].copy_from_slice(&(1200 + lap + off).to_be_bytes());
            file.extend_from_slice(&slot[..n]);
            body = &body[n..];
        }
    }
    file.resize(offset as usize, 0);
    (file, body)
}

fn check(file: Vec<u8>, times: &[u8]) {
    let len = file.len() as u64;
    let w = match Whisper::from_bytes(PATH, file) {
        Ok(w) => w,
        Err(e) => {
            assert!(e.offset <= len, "{e}: offset past the {len}-byte file");
            assert!(e.to_string().starts_with("whisper file fuzz.wsp: "), "{e}");
            assert!(!matches!(e.kind, ErrorKind::Io(_)), "{e}");
            return;
        }
    };
    let h = *w.header();
    assert_eq!(h.archive_count as usize, w.archives().len());
    for a in w.archives() {
        assert!(u64::from(a.offset) + a.size_bytes() <= len, "{a:?}");
    }
    let base = i64::from(w.slot(0, 0).0);
    let mut at = times.iter().copied();
    let mut next = || i64::from(at.next().unwrap_or(0) as i8);
    let now = base + next() * 3;
    let windows: Vec<Fetched> = (0..w.archives().len())
        .map(|i| check_window(&w, i, now))
        .collect();
    for _ in 0..8 {
        let from = now + next() * 2;
        let until = from + next();
        match w.fetch(from, until, now) {
            Err(FetchError::InvalidInterval { .. }) => assert!(from > until),
            Err(e) => panic!("fetch({from}, {until}, {now}): {e}"),
            Ok(None) => {
                assert!(from > now || until < now - i64::from(h.max_retention))
            }
            Ok(Some(f)) => {
                assert!(from <= until);
                let info = w.archives()[f.archive];
                assert_eq!(f.step, i64::from(info.seconds_per_point));
                assert!(f.from % f.step == 0 && f.until % f.step == 0, "{f:?}");
                assert!(f.from < f.until, "{f:?}");
                assert!(!f.values.is_empty() && f.values.len() <= info.points as usize);
                let win = &windows[f.archive];
                for (k, v) in f.values.iter().enumerate() {
                    let t = f.from + k as i64 * f.step;
                    let j = (t - win.from) / win.step;
                    if t >= win.from && (j as usize) < win.values.len() {
                        let (a, b) = (
                            v.map(f64::to_bits),
                            win.values[j as usize].map(f64::to_bits),
                        );
                        assert_eq!(a, b, "fetch {f:?} and window {win:?} differ at {t}");
                    }
                }
            }
        }
    }
}

/// The window of archive `i` at `now`: `points` values, each known one the content of
/// the slot its interval maps to.
fn check_window(w: &Whisper, i: usize, now: i64) -> Fetched {
    let info = w.archives()[i];
    let win = w.window(i, now).expect("times in range");
    assert_eq!(win.values.len(), info.points as usize, "{win:?}");
    let base = i64::from(w.slot(i, 0).0);
    for (k, v) in win.values.iter().enumerate() {
        let Some(v) = v else { continue };
        let t = win.from + k as i64 * win.step;
        let slot = (t - base)
            .div_euclid(win.step)
            .rem_euclid(i64::from(info.points));
        let (st, sv) = w.slot(i, slot as u32);
        assert_eq!(i64::from(st), t, "window {win:?}");
        assert_eq!(sv.to_bits(), v.to_bits());
    }
    assert_eq!(
        w.points(i, now).expect("points").count(),
        win.values.iter().flatten().count()
    );
    win
}

/// Seeds: files in the shape whisper writes, one cut short, one with a bad table.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    // three archives: (3 s, 6 points), (2 s, 4 points), (4 s, 8 points); slot j holds
    // the interval j, one value off its interval
    let mut slots = Vec::new();
    for (i, j) in (0..6u8).chain(0..4).chain(0..8).enumerate() {
        let off = if i == 7 { 0x81 } else { 0 };
        slots.extend_from_slice(&[j, off, 0, 0]);
        slots.extend_from_slice(&(i as f64 * 1.5 - 3.0).to_be_bytes());
    }
    let mut built = vec![2u8, 0b0001_0110, 0b0000_1101, 0b0001_1111, 5, 77];
    built.extend_from_slice(&slots);
    built.extend_from_slice(&[3, 250, 7, 0, 1, 2]);
    let (raw, _) = build(2, &built[1..]);
    let whole = [&[0u8][..], &raw[..]].concat();
    let cut = whole[..whole.len() - 5].to_vec();
    let mut bad_table = whole.clone();
    bad_table[1 + 16 + 8..1 + 16 + 12].copy_from_slice(&0u32.to_be_bytes());
    vec![
        ("built", built),
        ("whole_file", whole),
        ("cut_file", cut),
        ("zero_points", bad_table),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_reach_both_outcomes() {
        let seeds = seeds();
        let file = |name: &str| {
            let bytes = &seeds.iter().find(|(n, _)| *n == name).unwrap().1;
            Whisper::from_bytes(PATH, bytes[1..].to_vec())
        };
        let w = file("whole_file").unwrap();
        assert_eq!(w.archives().len(), 3);
        assert_eq!(w.points(0, 1200 + 15).unwrap().count(), 6);
        assert_eq!(w.points(1, 1200 + 6).unwrap().count(), 3);
        assert!(matches!(
            file("cut_file").unwrap_err().kind,
            ErrorKind::ArchiveOutsideFile { .. }
        ));
        assert!(matches!(
            file("zero_points").unwrap_err().kind,
            ErrorKind::ZeroPoints { archive: 0 }
        ));
    }
}
