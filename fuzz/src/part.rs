//! Fuzz target for the part reader (`sumi_store::part_file`: header, footer, the chunked
//! index of versions 2 to 4 with its chunk CRCs, block CRCs and the blocks themselves, as
//! the store opens and reads `parts/*.part`).
//!
//! The first byte of [`part_file`]'s input picks what the rest becomes:
//! - `0`: the whole file;
//! - otherwise: series (ids, slots and values drawn from the input: short and long
//!   blocks, slots on and off the step) written as the store writes a part, read back,
//!   then read again with one byte of the file changed (position and mask from the
//!   input).
//!
//! Accepted outcomes, anything else panics: a file that opens reads every series as
//! points or as an error with a message, through the map and through a scan alike; the
//! round trip gives back every series bit for bit; with one byte changed every read
//! that succeeds gives back the original points (each byte of a part is under a CRC).

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use sumi_store::part_file::{read_part, write_part, ReadBack};

use crate::Input;

type Series = Vec<(u32, Vec<i64>, Vec<f64>)>;

/// A scratch directory, removed when its thread ends.
struct Scratch(Option<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(d) = &self.0 {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

thread_local! {
    static DIR: RefCell<Scratch> = const { RefCell::new(Scratch(None)) };
}

/// A scratch directory for this thread (a part is a file: the reader maps it).
fn scratch() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    DIR.with(|d| {
        d.borrow_mut()
            .0
            .get_or_insert_with(|| {
                // memory-backed when there is one: a part a run is many file operations
                let dir = crate::scratch_base().join(format!(
                    "sumi-fuzz-part-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::create_dir_all(&dir).expect("scratch dir");
                dir
            })
            .clone()
    })
}

/// One input.
pub fn part_file(data: &[u8]) {
    let dir = scratch();
    let path = dir.join("input.part");
    match data.split_first() {
        None => open_any(&path, data),
        Some((0, rest)) => open_any(&path, rest),
        Some((_, rest)) => round_trip(&dir, rest),
    }
}

/// Any bytes: open and read everything, never a panic.
fn open_any(path: &std::path::Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write input");
    if let Ok(read) = read_part(path) {
        for (id, map, scan) in read {
            check_read(id, &map, &scan);
        }
    }
    let _ = std::fs::remove_file(path);
}

fn check_read(id: u32, map: &ReadBack, scan: &ReadBack) {
    match (map, scan) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "series {id}: map and scan disagree"),
        (Err(a), Err(b)) => assert!(!a.is_empty() && !b.is_empty()),
        _ => panic!("series {id}: map {map:?}, scan {scan:?}"),
    }
}

fn series_from(input: &mut Input<'_>, step: i64, partition: i64) -> Series {
    let mut out = Series::new();
    let mut id = 0u32;
    let mut points = 0;
    // bounded work an input (the encoder's decimal search is slow on random doubles)
    while !input.is_empty() && out.len() < 100 && points < 200 {
        id = id.saturating_add(u32::from(input.byte() % 4) + 1);
        let shape = input.byte();
        let n = match shape % 4 {
            0 => 1,
            1 => usize::from(input.byte() % 16) + 1,
            2 => 40 + usize::from(input.byte() % 32),
            _ => usize::from(input.byte() % 64) + 1,
        };
        let odd = shape & 0x10 != 0;
        let mut slot =
            partition + i64::from(input.byte()) * step * if shape & 0x20 != 0 { -1 } else { 1 };
        let seed = input.u32();
        let mut slots = Vec::with_capacity(n);
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            slots.push(slot);
            let gap = if odd {
                i64::from(seed >> (i % 24) & 7) + 1
            } else {
                step * (i64::from(seed >> (i % 28) & 3) + 1)
            };
            slot = slot.saturating_add(gap);
            values.push(if shape & 0x40 != 0 || shape % 4 == 2 {
                f64::from_bits(u64::from(seed).wrapping_mul(i as u64 + 1).rotate_left(17))
            } else {
                f64::from(seed % 1000) + (i % 7) as f64 * 0.25
            });
        }
        points += n;
        if slots.windows(2).all(|w| w[0] < w[1]) {
            out.push((id, slots, values));
        }
        if id == u32::MAX {
            break;
        }
    }
    out
}

fn round_trip(dir: &std::path::Path, rest: &[u8]) {
    let mut input = Input(rest);
    let step = i64::from(input.byte() % 60) + 1;
    let partition = i64::from(input.u32()) * step;
    let flip_at = input.u32() as usize;
    let flip = input.byte() | 1;
    let series = series_from(&mut input, step, partition);
    let path = write_part(dir, 1, step, partition, &series).expect("write part");
    let read = read_part(&path).expect("a written part opens");
    assert_eq!(read.len(), series.len());
    for ((id, map, scan), (want_id, slots, values)) in read.iter().zip(&series) {
        assert_eq!(id, want_id);
        check_read(*id, map, scan);
        let bits: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        assert_eq!(
            map.as_ref().expect("an intact block reads"),
            &(slots.clone(), bits)
        );
    }
    // one byte changed: whatever still reads is the original
    let mut bytes = std::fs::read(&path).expect("read part");
    let at = flip_at % bytes.len();
    bytes[at] ^= flip;
    std::fs::write(&path, &bytes).expect("write part");
    if let Ok(read) = read_part(&path) {
        for (id, map, scan) in read {
            check_read(id, &map, &scan);
            if let Ok((slots, bits)) = map {
                let (_, want_slots, want_values) =
                    series.iter().find(|s| s.0 == id).unwrap_or_else(|| {
                        panic!("series {id} read from a damaged part was never written")
                    });
                let want: Vec<u64> = want_values.iter().map(|v| v.to_bits()).collect();
                assert_eq!(
                    (&slots, &bits),
                    (want_slots, &want),
                    "series {id}: damage at byte {at} read as data"
                );
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// Seeds: parts as written (short and long blocks, slots off the step), and the same
/// inputs as raw files.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut round = vec![1u8, 9, 0x10, 0, 0, 0, 40, 0, 0, 0, 0x80];
    for i in 0..40u8 {
        round.extend_from_slice(&[i % 3, i.wrapping_mul(37), i, i % 50, i, 1, 2, 3]);
    }
    let dir = scratch();
    let series: Series = (0..70u32)
        .map(|i| {
            let n = if i % 10 == 3 { 40 } else { 5 };
            let slots: Vec<i64> = (0..n)
                .map(|k| 1_700_000_000 + i64::from(k) * 10 + i64::from(i % 7 == 2))
                .collect();
            let values = (0..n)
                .map(|k| {
                    if n == 40 {
                        f64::from_bits((k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    } else {
                        f64::from(i) + f64::from(k) * 0.5
                    }
                })
                .collect();
            (i * 2, slots, values)
        })
        .collect();
    let path =
        write_part(&dir, 2, 10, 1_700_000_000 - 1_700_000_000 % 3600, &series).expect("seed part");
    let mut file = vec![0u8];
    file.extend_from_slice(&std::fs::read(&path).expect("seed part"));
    let _ = std::fs::remove_file(&path);
    vec![("round_trip", round), ("file_v4", file)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_run_and_the_file_opens() {
        for (_, s) in seeds() {
            part_file(&s);
        }
        let file = &seeds()[1].1;
        let dir = scratch();
        let path = dir.join("t.part");
        std::fs::write(&path, &file[1..]).unwrap();
        let read = read_part(&path).unwrap();
        assert_eq!(read.len(), 70);
        assert!(read.iter().all(|(_, m, _)| m.is_ok()));
    }
}
