//! Fuzz target for carbon pickle: [`pickle`] reads the first byte as a knob. Even
//! knobs feed the rest to the unpickler as one message (small limits when the knob's
//! second bit is set, so the limits are crossed too); odd knobs feed it to the
//! length-prefixed framer in chunks the input chooses, checked against a naive split.
//!
//! Accepted outcomes, anything else panics:
//! - a message is refused with a [`PickleError`] (every variant is listed below; one
//!   added later must be reviewed here), or loads into `n` elements, each a point or
//!   an [`ElementError`];
//! - an accepted point has a normalized name (normalizing it again changes nothing)
//!   and a value that is not NaN; `decode_into` agrees with `points` on the counts;
//! - framing in chunks gives exactly the frames of a whole-buffer split, stops at the
//!   first length over the limit, and never holds more than one frame plus a read.

use sumi_ingest::pickle::{
    ElementError, FrameReader, FrameStatus, PickleError, PickleLimits, Unpickler,
};
use sumi_ingest::LocalCounts;
use sumi_model::name::normalize;
use sumi_model::Batch;

const NOW: i64 = 1_700_000_000;

/// One input: a message or a stream, as the first byte says.
pub fn pickle(data: &[u8]) {
    let (&knob, rest) = data.split_first().unwrap_or((&0, &[]));
    if knob & 1 == 0 {
        message(rest, knob & 2 != 0);
    } else {
        stream(rest, knob);
    }
}

fn message(msg: &[u8], small: bool) {
    let limits = if small {
        PickleLimits {
            max_values: 64,
            max_marks: 4,
            max_memo: 16,
            max_string_bytes: 32,
        }
    } else {
        PickleLimits::default()
    };
    let mut u = Unpickler::new(limits);
    match u.load(msg) {
        Ok(n) => {
            let mut ok = 0u64;
            for (i, r) in u.points(msg, NOW).enumerate() {
                assert!(i < n, "more points than elements");
                let _ = u.element_name(msg, i);
                match r {
                    Ok(p) => {
                        ok += 1;
                        assert!(!p.value.is_nan(), "NaN accepted");
                        let again = normalize(p.name.as_bytes()).expect("accepted name normalizes");
                        assert_eq!(again.path, p.name, "name not normalized");
                        assert!(!again.dropped_empty_nodes);
                    }
                    Err(e) => check_element_error(&e),
                }
            }
            let mut batch = Batch::new();
            let mut counts = LocalCounts::default();
            u.decode_into(msg, NOW, &mut batch, &mut counts)
                .expect("a message that loaded loads again");
            assert_eq!(counts.received, n as u64);
            assert_eq!(batch.len() as u64, ok);
            assert_eq!(counts.rejected.iter().sum::<u64>(), n as u64 - ok);
        }
        Err(e) => check_pickle_error(&e, msg),
    }
}

/// The refusals a message may get.
fn check_pickle_error(e: &PickleError, msg: &[u8]) {
    let offset = match e {
        PickleError::Truncated { offset, .. }
        | PickleError::UnknownOpcode { offset, .. }
        | PickleError::Forbidden { offset, .. }
        | PickleError::Malformed { offset, .. }
        | PickleError::StackUnderflow { offset, .. }
        | PickleError::NoMark { offset, .. }
        | PickleError::NotAppendable { offset, .. }
        | PickleError::MemoMissing { offset, .. }
        | PickleError::MemoLimit { offset, .. }
        | PickleError::TooDeep { offset, .. }
        | PickleError::TooManyValues { offset, .. }
        | PickleError::TooLong { offset, .. } => *offset,
        PickleError::Protocol(v) => {
            assert!(*v > 5);
            return;
        }
        PickleError::MessageTooLarge(_) => panic!("fuzz inputs are small"),
        PickleError::NotAList(_) => return,
    };
    assert!(offset <= msg.len(), "{e}: offset past the end");
    assert!(!e.to_string().is_empty());
}

/// The refusals an element may get.
fn check_element_error(e: &ElementError) {
    match e {
        ElementError::NotAPair { .. }
        | ElementError::PointNotAPair { .. }
        | ElementError::NameType(_)
        | ElementError::InvalidTimestamp(_)
        | ElementError::InvalidValue(_)
        | ElementError::NanValue
        | ElementError::Name(_)
        | ElementError::Tags(_) => {}
        ElementError::NonFiniteTimestamp(t) => assert!(!t.is_finite()),
        ElementError::TimestampOutOfRange(t) => assert!(t.abs() >= 9.2e18),
    }
    assert!(!e.rejection().label().is_empty());
}

/// A frame as a naive split sees it.
#[derive(Debug, PartialEq)]
enum Owned {
    Frame(Vec<u8>),
    TooLong,
}

fn naive_frames(mut data: &[u8], max: usize) -> Vec<Owned> {
    let mut out = Vec::new();
    while data.len() >= 4 {
        let len = u32::from_be_bytes([data[0], data[1], data[2], data[3]]) as usize;
        if len > max {
            out.push(Owned::TooLong);
            return out;
        }
        if data.len() < 4 + len {
            break;
        }
        out.push(Owned::Frame(data[4..4 + len].to_vec()));
        data = &data[4 + len..];
    }
    out
}

fn stream(data: &[u8], knob: u8) {
    let max = usize::from(knob >> 1) * 3;
    let want = naive_frames(data, max);
    let mut r = FrameReader::new(usize::from(knob) * 7, max);
    let mut got = Vec::new();
    let mut rest = data;
    let mut seed = data
        .iter()
        .fold(0x9E37_79B9u32, |h, &b| h.rotate_left(5) ^ u32::from(b));
    'feed: loop {
        loop {
            match r.status() {
                FrameStatus::Ready => {
                    got.push(Owned::Frame(r.frame().to_vec()));
                    r.consume();
                }
                FrameStatus::TooLong(n) => {
                    assert!(n as usize > max);
                    got.push(Owned::TooLong);
                    break 'feed;
                }
                FrameStatus::NeedMore => break,
            }
        }
        if rest.is_empty() {
            break;
        }
        let space = r.read_space();
        assert!(!space.is_empty(), "no room to read an incomplete frame");
        // the initial buffer, or grown to one frame: never more
        assert!(space.len() <= (usize::from(knob) * 7).max(4 + 4096).max(max + 4));
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let chunk = 1 + (seed >> 16) as usize % 64;
        let n = space.len().min(rest.len()).min(chunk);
        space[..n].copy_from_slice(&rest[..n]);
        r.commit(n);
        rest = &rest[n..];
    }
    assert_eq!(got, want);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_pass() {
        pickle(b"\x00\x80\x02]q\x00(X\x03\x00\x00\x00a.bq\x01J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03e.");
        pickle(b"\x02cos\nsystem\n.");
        pickle(b"\x01\x00\x00\x00\x02ab\x00\x00\x00\x00\xff\xff\xff\xff");
        pickle(b"\xff\x00\x00\x00\x05hello\x00\x00");
        pickle(b"");
    }

    #[test]
    fn naive_split() {
        assert_eq!(
            naive_frames(b"\x00\x00\x00\x01a\x00\x00\x00\x09", 5),
            vec![Owned::Frame(b"a".to_vec()), Owned::TooLong]
        );
    }
}
