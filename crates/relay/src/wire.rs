//! What goes out: a point as a carbon plaintext line (also the queue's record
//! format), and lines re-encoded as carbon pickle messages.

/// Appends `name value timestamp\n`: the value in the shortest text that reads back
/// as the same `f64` (Python's `float()` reads `inf` and `-inf` too).
pub fn push_line(out: &mut Vec<u8>, name: &[u8], ts: i64, value: f64) {
    out.extend_from_slice(name);
    out.push(b' ');
    if value.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
    } else if value > 0.0 {
        out.extend_from_slice(b"inf");
    } else {
        out.extend_from_slice(b"-inf");
    }
    out.push(b' ');
    out.extend_from_slice(itoa::Buffer::new().format(ts).as_bytes());
    out.push(b'\n');
}

/// Splits one line this crate wrote back into name, value and timestamp.
pub fn split_line(line: &[u8]) -> Option<(&[u8], f64, i64)> {
    let ts_at = memchr::memrchr(b' ', line)?;
    let value_at = memchr::memrchr(b' ', &line[..ts_at])?;
    let ts = std::str::from_utf8(&line[ts_at + 1..]).ok()?.parse().ok()?;
    let value = std::str::from_utf8(&line[value_at + 1..ts_at])
        .ok()?
        .parse()
        .ok()?;
    Some((&line[..value_at], value, ts))
}

/// Points per pickle message: carbon-relay's `MAX_DATAPOINTS_PER_MESSAGE` default.
pub const PICKLE_POINTS_PER_MESSAGE: usize = 500;

/// Appends the plaintext `lines` as length-prefixed pickle messages (protocol 2, a
/// list of `(name, (timestamp, value))` as carbon-relay sends them), at most
/// [`PICKLE_POINTS_PER_MESSAGE`] points each.
pub fn push_pickle(out: &mut Vec<u8>, lines: &[u8]) {
    let mut in_msg = 0usize;
    let mut start = 0usize;
    for line in lines.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
        let Some((name, value, ts)) = split_line(line) else {
            continue;
        };
        if in_msg == 0 {
            start = out.len();
            out.extend_from_slice(&[0, 0, 0, 0]);
            // PROTO 2, EMPTY_LIST, MARK
            out.extend_from_slice(&[0x80, 2, b']', b'(']);
        }
        out.push(b'X'); // BINUNICODE
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name);
        match i32::try_from(ts) {
            Ok(t) => {
                out.push(b'J'); // BININT
                out.extend_from_slice(&t.to_le_bytes());
            }
            Err(_) => {
                out.push(b'G'); // BINFLOAT
                out.extend_from_slice(&(ts as f64).to_be_bytes());
            }
        }
        out.push(b'G');
        out.extend_from_slice(&value.to_be_bytes());
        out.extend_from_slice(&[0x86, 0x86]); // TUPLE2 (ts, value), TUPLE2 (name, point)
        in_msg += 1;
        if in_msg == PICKLE_POINTS_PER_MESSAGE {
            finish(out, start);
            in_msg = 0;
        }
    }
    if in_msg > 0 {
        finish(out, start);
    }
}

fn finish(out: &mut Vec<u8>, start: usize) {
    out.extend_from_slice(b"e."); // APPENDS, STOP
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use sumi_ingest::pickle::{PickleLimits, Unpickler};

    #[test]
    fn pickle_reads_back_through_sumis_unpickler() {
        let mut lines = Vec::new();
        for i in 0..1203 {
            push_line(
                &mut lines,
                format!("a.b{i}").as_bytes(),
                1_700_000_000 + i,
                i as f64 / 3.0,
            );
        }
        push_line(&mut lines, b"big.ts", 5_000_000_000, f64::INFINITY);
        let mut wire = Vec::new();
        push_pickle(&mut wire, &lines);
        let mut vm = Unpickler::new(PickleLimits::default());
        let mut at = 0;
        let mut got = Vec::new();
        while at < wire.len() {
            let len = u32::from_be_bytes(wire[at..at + 4].try_into().unwrap()) as usize;
            let msg = &wire[at + 4..at + 4 + len];
            vm.load(msg).unwrap();
            for p in vm.points(msg, 0) {
                let p = p.unwrap();
                push_line(&mut got, p.name.as_bytes(), p.ts, p.value);
            }
            at += 4 + len;
        }
        assert_eq!(got, lines);
    }
}
