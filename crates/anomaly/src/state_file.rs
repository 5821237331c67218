//! The file of many series' detectors that the server saves (`<data_dir>/anomaly/state`,
//! written whole every `save_interval` and at shutdown, read at start): each series'
//! name, its open event ([`Tracker`]) and its detector's own saved state. Encoding and
//! decoding only; the server does the I/O.
//!
//! ```text
//! file    := magic "SUMIANO1" · record*
//! record  := len u32 · payload (len bytes) · crc32c(payload) u32
//! payload := name_len u16 · name (UTF-8)
//!            · open u8 (0 or 1) · [start i64 · end i64 · peak f64 · peak_ts i64
//!                                  · quiet u32 · reason_len u8 · reason]
//!            · detector_len u32 · detector (Detector::save, itself versioned and checked)
//! ```
//!
//! Little-endian throughout. A record that fails its CRC or does not parse is skipped
//! and counted; the rest of the file still loads (each series' detector is rebuilt
//! from stored history when its record is missing).

use crate::events::{event_id, Event, Tracker};

pub const MAGIC: &[u8; 8] = b"SUMIANO1";

/// One series as saved.
#[derive(Debug, PartialEq)]
pub struct Saved {
    pub name: String,
    pub tracker: Tracker,
    pub detector: Vec<u8>,
}

pub fn encode_record(out: &mut Vec<u8>, name: &str, tracker: &Tracker, detector: &[u8]) {
    let mut p = Vec::with_capacity(detector.len() + name.len() + 64);
    let name_len = u16::try_from(name.len()).unwrap_or(u16::MAX);
    p.extend_from_slice(&name_len.to_le_bytes());
    p.extend_from_slice(&name.as_bytes()[..usize::from(name_len)]);
    match &tracker.open {
        None => p.push(0),
        Some(e) => {
            p.push(1);
            p.extend_from_slice(&e.start.to_le_bytes());
            p.extend_from_slice(&e.end.to_le_bytes());
            p.extend_from_slice(&e.peak.to_le_bytes());
            p.extend_from_slice(&e.peak_ts.to_le_bytes());
            p.extend_from_slice(&tracker.quiet.to_le_bytes());
            let reason = &e.reason.as_bytes()[..e.reason.len().min(255)];
            p.push(reason.len() as u8);
            p.extend_from_slice(reason);
        }
    }
    p.extend_from_slice(&(detector.len() as u32).to_le_bytes());
    p.extend_from_slice(detector);
    out.extend_from_slice(&(p.len() as u32).to_le_bytes());
    out.extend_from_slice(&p);
    out.extend_from_slice(&crc32c::crc32c(&p).to_le_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.b.len() < n {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    fn arr<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
}

fn decode_payload(p: &[u8]) -> Option<Saved> {
    let mut r = Reader { b: p };
    let name_len = u16::from_le_bytes(r.arr()?);
    let name = std::str::from_utf8(r.take(usize::from(name_len))?)
        .ok()?
        .to_string();
    let tracker = match r.take(1)?[0] {
        0 => Tracker::default(),
        1 => {
            let start = i64::from_le_bytes(r.arr()?);
            let end = i64::from_le_bytes(r.arr()?);
            let peak = f64::from_le_bytes(r.arr()?);
            let peak_ts = i64::from_le_bytes(r.arr()?);
            let quiet = u32::from_le_bytes(r.arr()?);
            let reason_len = r.take(1)?[0];
            let reason = std::str::from_utf8(r.take(usize::from(reason_len))?)
                .ok()?
                .to_string();
            Tracker {
                open: Some(Event {
                    id: event_id(&name, start),
                    series: name.clone(),
                    start,
                    end,
                    peak,
                    peak_ts,
                    reason,
                    open: true,
                }),
                quiet,
            }
        }
        _ => return None,
    };
    let det_len = u32::from_le_bytes(r.arr()?) as usize;
    let detector = r.take(det_len)?.to_vec();
    if !r.b.is_empty() {
        return None;
    }
    Some(Saved {
        name,
        tracker,
        detector,
    })
}

/// The records of a state file, and how many were damaged (skipped). An unknown
/// magic is an error: the file is not ours, or from another version.
pub fn decode(bytes: &[u8]) -> Result<(Vec<Saved>, u64), String> {
    let Some(mut rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
        return Err("not a sumi anomaly state file (bad magic)".into());
    };
    let mut out = Vec::new();
    let mut damaged = 0;
    while !rest.is_empty() {
        let Some(len) = rest.get(..4) else {
            damaged += 1;
            break;
        };
        let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let Some(rec) = rest.get(4..4 + len + 4) else {
            // a torn tail: nothing after it can be framed
            damaged += 1;
            break;
        };
        let (payload, crc) = rec.split_at(len);
        rest = &rest[4 + len + 4..];
        if crc32c::crc32c(payload).to_le_bytes() != crc {
            damaged += 1;
            continue;
        }
        match decode_payload(payload) {
            Some(s) => out.push(s),
            None => damaged += 1,
        }
    }
    Ok((out, damaged))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_skipped() {
        let open = Tracker {
            open: Some(Event {
                id: event_id("b;dc=eu", 50),
                series: "b;dc=eu".into(),
                start: 50,
                end: 70,
                peak: 0.875,
                peak_ts: 60,
                reason: "level shift".into(),
                open: true,
            }),
            quiet: 3,
        };
        let mut file = MAGIC.to_vec();
        encode_record(&mut file, "a.b", &Tracker::default(), b"detector-a");
        encode_record(&mut file, "b;dc=eu", &open, b"detector-b");
        let (saved, damaged) = decode(&file).unwrap();
        assert_eq!(damaged, 0);
        assert_eq!(saved.len(), 2);
        assert_eq!(saved[0].name, "a.b");
        assert_eq!(saved[0].detector, b"detector-a");
        assert_eq!(saved[1].tracker, open);

        let mut bad = file.clone();
        bad[20] ^= 0xff; // inside the first record
        let (saved, damaged) = decode(&bad).unwrap();
        assert_eq!((saved.len(), damaged), (1, 1));
        assert_eq!(saved[0].name, "b;dc=eu");

        let (saved, damaged) = decode(&file[..file.len() - 3]).unwrap();
        assert_eq!((saved.len(), damaged), (1, 1));
        assert!(decode(b"garbage!").is_err());
    }
}
