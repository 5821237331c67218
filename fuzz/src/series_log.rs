//! Fuzz target for the series log reader (`sumi_store::series_log`: record framing,
//! CRC, the version-1 records and the front-coded series batches of version 2, as the
//! store reads `series.log` on open).
//!
//! The first byte of [`series_log`]'s input picks what the rest becomes:
//! - `0`: the whole file, header included;
//! - `1`: payloads after a valid header, each framed with its right length and CRC
//!   (lengths from the input), so that decoding is reached past the CRC;
//! - otherwise: series names (the input split at zero bytes, made UTF-8), written as
//!   the store writes them and read back.
//!
//! Accepted outcomes, anything else panics: every read stops at a problem with a
//! non-empty message or reads to the end; names read are never empty; the round trip
//! gives back exactly the names, with consecutive ids.

use sumi_store::series_log::{decode_series, encode_series};

const HEADER: &[u8; 16] = b"SUMISLOG\x02\0\0\0\0\0\0\0";

/// One input.
pub fn series_log(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        check(data);
        return;
    };
    match mode {
        0 => check(rest),
        1 => {
            let mut file = HEADER.to_vec();
            let mut input = rest;
            while let Some((&n, tail)) = input.split_first() {
                let n = usize::from(n).min(tail.len());
                let p = &tail[..n];
                file.extend_from_slice(&(p.len() as u32).to_le_bytes());
                file.extend_from_slice(&crc32c::crc32c(p).to_le_bytes());
                file.extend_from_slice(p);
                input = &tail[n..];
            }
            check(&file);
        }
        _ => {
            let names: Vec<String> = rest
                .split(|&b| b == 0)
                .filter(|n| !n.is_empty())
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let first = u32::from(mode) * 1000;
            let file = encode_series(first, &refs);
            let (read, problem) = decode_series(&file);
            assert_eq!(problem, None);
            assert_eq!(read.len(), names.len());
            for (k, (id, name)) in read.iter().enumerate() {
                assert_eq!(*id, first + k as u32);
                assert_eq!(name, &names[k]);
            }
        }
    }
}

fn check(file: &[u8]) {
    let (read, problem) = decode_series(file);
    if let Some(p) = &problem {
        assert!(!p.is_empty());
    }
    assert!(read.iter().all(|(_, n)| !n.is_empty()) || problem.is_none());
}

/// Seed inputs for `corpus/series_log/`.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let names = [
        "host00001.cpu.user",
        "host00001.cpu.system",
        "host00002.cpu.user",
    ];
    let file = encode_series(0, &names);
    let mut round = vec![7u8];
    for n in names {
        round.extend_from_slice(n.as_bytes());
        round.push(0);
    }
    // the first record's payload, framed again by mode 1
    let len = u32::from_le_bytes([file[16], file[17], file[18], file[19]]) as usize;
    let mut payloads = vec![1u8, len as u8];
    payloads.extend_from_slice(&file[24..24 + len]);
    vec![
        ("file", [&[0u8][..], &file[..]].concat()),
        ("torn", [&[0u8][..], &file[..file.len() - 3]].concat()),
        ("payloads", payloads),
        ("round_trip", round),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_pass_and_every_flipped_bit_and_cut_is_handled() {
        for (_, seed) in seeds() {
            series_log(&seed);
        }
        let (_, file) = seeds().swap_remove(0);
        let (read, problem) = decode_series(&file[1..]);
        assert_eq!((read.len(), problem), (3, None));
        for i in 0..file.len() {
            for bit in 0..8 {
                let mut m = file.clone();
                m[i] ^= 1 << bit;
                series_log(&m);
            }
            series_log(&file[..i]);
        }
    }
}
