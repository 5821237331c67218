//! Fuzz targets for carbon plaintext: one line ([`plaintext_line`]) and a stream cut
//! into arbitrary chunks ([`plaintext_stream`]).
//!
//! Accepted outcomes, anything else panics:
//! - a line parses to a point whose name is normalized (normalizing it again changes
//!   nothing), whose value is not NaN, whose bytes were valid UTF-8 with exactly three
//!   fields, and whose value and timestamp equal Rust's own `f64` parse of the fields
//!   (timestamp truncated toward zero, `-1` replaced by now) wherever Rust's grammar
//!   applies (ASCII without `_`);
//! - or it is refused with any [`LineError`] except `LineTooLong`, which only the
//!   framer reports;
//! - framing in chunks gives exactly the frames of a naive whole-buffer split.

use sumi_ingest::frame::{datagram_lines, Frame, LineReader};
use sumi_ingest::plaintext::is_python_space;
use sumi_ingest::{parse_line, LineError};
use sumi_model::name::normalize;

const NOW: i64 = 1_700_000_000;

/// One line, as a connection would hand it to the parser.
pub fn plaintext_line(data: &[u8]) {
    check_line(data);
}

fn check_line(line: &[u8]) {
    match parse_line(line, NOW) {
        Ok(p) => {
            assert!(!p.value.is_nan(), "NaN accepted: {line:?}");
            let text = std::str::from_utf8(line).expect("accepted line is UTF-8");
            let again = normalize(p.name.as_bytes()).expect("accepted name normalizes");
            assert_eq!(again.path, p.name, "name not normalized");
            assert!(!again.dropped_empty_nodes, "name kept empty nodes");
            let fields: Vec<&str> = text
                .split(is_python_space)
                .filter(|f| !f.is_empty())
                .collect();
            assert_eq!(fields.len(), 3, "accepted without three fields: {text:?}");
            if let Some(want) = rust_f64(fields[1]) {
                assert_eq!(p.value.to_bits(), want.to_bits(), "value of {text:?}");
            }
            if let Some(t) = rust_f64(fields[2]) {
                let t = t.trunc();
                let want = if t == -1.0 { NOW } else { t as i64 };
                assert_eq!(p.ts, want, "timestamp of {text:?}");
            }
        }
        Err(LineError::LineTooLong(_)) => panic!("the parser reported a framing error"),
        Err(e) => {
            assert!(!e.reason().is_empty());
            if let LineError::Blank = e {
                assert!(std::str::from_utf8(line).is_ok_and(|t| t.chars().all(is_python_space)));
            }
        }
    }
}

/// Rust's parse where its grammar is Python's (ASCII, no `_`).
fn rust_f64(tok: &str) -> Option<f64> {
    if tok.is_ascii() && !tok.contains('_') {
        tok.parse::<f64>().ok()
    } else {
        None
    }
}

/// A byte stream fed to the framer in chunks chosen from the input, each frame
/// checked against a naive split and parsed; the same bytes as one UDP datagram.
pub fn plaintext_stream(data: &[u8]) {
    let (&knob, body) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let max_line = 1 + usize::from(knob % 64);
    let want = naive_frames(body, max_line);

    let mut reader = LineReader::new(usize::from(knob), max_line);
    let mut got = Vec::new();
    let mut rest = body;
    let mut seed = fnv(data);
    while !rest.is_empty() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let want_len = 1 + (seed >> 33) as usize % 97;
        let space = reader.read_space();
        assert!(!space.is_empty(), "no room to read");
        let n = want_len.min(space.len()).min(rest.len());
        space[..n].copy_from_slice(&rest[..n]);
        reader.commit(n);
        rest = &rest[n..];
        while let Some(f) = reader.next_frame() {
            got.push(owned(f));
        }
        assert!(
            reader.pending_bytes() <= max_line,
            "held more than one line"
        );
    }
    if let Some(f) = reader.finish() {
        got.push(owned(f));
    }
    assert_eq!(
        got, want,
        "chunked framing differs from a whole-buffer split"
    );
    for f in &got {
        if let Owned::Line(l) = f {
            check_line(l);
        }
    }

    let mut total = 0;
    for line in datagram_lines(body) {
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        total += line.len();
        check_line(line);
    }
    assert!(total <= body.len());
}

#[derive(Debug, PartialEq)]
enum Owned {
    Line(Vec<u8>),
    TooLong,
}

fn owned(f: Frame<'_>) -> Owned {
    match f {
        Frame::Line(l) => Owned::Line(l.to_vec()),
        Frame::TooLong(_) => Owned::TooLong,
    }
}

/// The frames the stream rules promise, computed on the whole buffer at once.
fn naive_frames(body: &[u8], max_line: usize) -> Vec<Owned> {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    // the piece after the last `\n` is a line only if it is not empty (end of stream)
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    for p in pieces {
        out.push(if p.len() > max_line {
            Owned::TooLong
        } else {
            Owned::Line(p.strip_suffix(b"\r").unwrap_or(p).to_vec())
        });
    }
    out
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        plaintext_line(b"host00042.disk.sda.write_bytes 123456789 1700000000");
        plaintext_line(b"a..b 1_0 -1");
        plaintext_line(b"\xff 1 2");
        plaintext_stream(b"\x05a 1 2\r\nlong line here 1 2\nlast 3 4");
        plaintext_stream(b"");
    }

    #[test]
    fn naive_split_rules() {
        assert_eq!(
            naive_frames(b"ab\r\ncdef\n\nx", 3),
            vec![
                Owned::Line(b"ab".to_vec()),
                Owned::TooLong,
                Owned::Line(vec![]),
                Owned::Line(b"x".to_vec())
            ]
        );
    }
}
