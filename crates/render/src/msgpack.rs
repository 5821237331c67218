//! `format=msgpack` for `/render` and `/metrics/find`: the same documents as
//! [`pickle`](crate::pickle) (graphite-web's `renderViewMsgPack` and `msgpack_nodes`),
//! as msgpack-python writes them with `use_bin_type=True`: strings as `str`, integers
//! in their smallest encoding, floats as float 64, tuples as arrays; find intervals
//! are `[start, end]` pairs.

use sumi_query::series::TimeSeries;
use sumi_query::source::FindNode;

use crate::pickle::by_name;
use crate::Rendered;

/// Builds one msgpack document.
pub(crate) struct MsgpackWriter {
    buf: Vec<u8>,
}

impl MsgpackWriter {
    pub(crate) fn new() -> MsgpackWriter {
        MsgpackWriter { buf: Vec::new() }
    }

    pub(crate) fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    pub(crate) fn nil(&mut self) {
        self.buf.push(0xc0);
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.buf.push(if b { 0xc3 } else { 0xc2 });
    }

    pub(crate) fn int(&mut self, i: i64) {
        if i >= 0 {
            let u = i as u64;
            if u < 0x80 {
                self.buf.push(u as u8);
            } else if u <= 0xff {
                self.buf.extend_from_slice(&[0xcc, u as u8]);
            } else if u <= 0xffff {
                self.buf.push(0xcd);
                self.buf.extend_from_slice(&(u as u16).to_be_bytes());
            } else if u <= 0xffff_ffff {
                self.buf.push(0xce);
                self.buf.extend_from_slice(&(u as u32).to_be_bytes());
            } else {
                self.buf.push(0xcf);
                self.buf.extend_from_slice(&u.to_be_bytes());
            }
        } else if i >= -32 {
            self.buf.push(i as i8 as u8);
        } else if i >= i64::from(i8::MIN) {
            self.buf.extend_from_slice(&[0xd0, i as i8 as u8]);
        } else if i >= i64::from(i16::MIN) {
            self.buf.push(0xd1);
            self.buf.extend_from_slice(&(i as i16).to_be_bytes());
        } else if i >= i64::from(i32::MIN) {
            self.buf.push(0xd2);
            self.buf.extend_from_slice(&(i as i32).to_be_bytes());
        } else {
            self.buf.push(0xd3);
            self.buf.extend_from_slice(&i.to_be_bytes());
        }
    }

    pub(crate) fn float(&mut self, x: f64) {
        self.buf.push(0xcb);
        self.buf.extend_from_slice(&x.to_be_bytes());
    }

    pub(crate) fn str(&mut self, s: &str) {
        let n = s.len();
        if n < 32 {
            self.buf.push(0xa0 | n as u8);
        } else if n <= 0xff {
            self.buf.extend_from_slice(&[0xd9, n as u8]);
        } else if n <= 0xffff {
            self.buf.push(0xda);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(0xdb);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn header(&mut self, n: usize, fix: u8, sixteen: u8, thirty_two: u8) {
        if n < 16 {
            self.buf.push(fix | n as u8);
        } else if n <= 0xffff {
            self.buf.push(sixteen);
            self.buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            self.buf.push(thirty_two);
            self.buf.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }

    /// An array of `n` items, which follow.
    pub(crate) fn array(&mut self, n: usize) {
        self.header(n, 0x90, 0xdc, 0xdd);
    }

    /// A map of `n` pairs, which follow (key, value, key, value…).
    pub(crate) fn map(&mut self, n: usize) {
        self.header(n, 0x80, 0xde, 0xdf);
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// `/render?format=msgpack`: graphite-web's `renderViewMsgPack`.
pub fn render_msgpack(series: &[TimeSeries]) -> Rendered {
    let mut w = MsgpackWriter::new();
    let points: usize = series.iter().map(|s| s.values.len()).sum();
    w.reserve(200 * series.len() + 9 * points);
    w.array(series.len());
    for s in series {
        w.map(9);
        w.str("name");
        if s.name_is_none() {
            w.nil();
        } else {
            w.str(&s.name);
        }
        w.str("start");
        w.int(s.start);
        w.str("end");
        w.int(s.end);
        w.str("step");
        w.int(s.step);
        w.str("values");
        let values = s.consolidated();
        w.array(values.len());
        for v in values {
            match v {
                Some(x) => w.float(x),
                None => w.nil(),
            }
        }
        w.str("pathExpression");
        if s.name_is_none() && s.path_expression == "None" {
            w.nil();
        } else {
            w.str(&s.path_expression);
        }
        w.str("valuesPerPoint");
        w.int(s.values_per_point as i64);
        w.str("consolidationFunc");
        w.str(s.consolidation.name());
        w.str("xFilesFactor");
        w.float(s.x_files_factor);
    }
    Rendered {
        body: w.finish(),
        content_type: "application/x-msgpack",
    }
}

/// `/metrics/find?format=msgpack`: graphite-web's `msgpack_nodes`.
pub fn find_msgpack(
    nodes: &[FindNode],
    intervals: &dyn Fn(&FindNode) -> Vec<(f64, f64)>,
) -> Rendered {
    let mut w = MsgpackWriter::new();
    w.array(nodes.len());
    for node in by_name(nodes) {
        w.map(if node.is_leaf { 3 } else { 2 });
        w.str("path");
        w.str(&node.path);
        w.str("is_leaf");
        w.bool(node.is_leaf);
        if node.is_leaf {
            let spans = intervals(node);
            w.str("intervals");
            w.array(spans.len());
            for (start, end) in spans {
                w.array(2);
                w.float(start);
                w.float(end);
            }
        }
    }
    Rendered {
        body: w.finish(),
        content_type: "application/x-msgpack",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_msgpack_python() {
        let cases: &[(i64, &[u8])] = &[
            (0, b"\x00"),
            (127, b"\x7f"),
            (128, b"\xcc\x80"),
            (256, b"\xcd\x01\x00"),
            (70000, b"\xce\x00\x01\x11\x70"),
            (1 << 33, b"\xcf\x00\x00\x00\x02\x00\x00\x00\x00"),
            (-1, b"\xff"),
            (-32, b"\xe0"),
            (-33, b"\xd0\xdf"),
            (-200, b"\xd1\xff\x38"),
            (-70000, b"\xd2\xff\xfe\xee\x90"),
            (i64::MIN, b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00"),
        ];
        for &(i, want) in cases {
            let mut w = MsgpackWriter::new();
            w.int(i);
            assert_eq!(w.finish(), want, "{i}");
        }
    }

    #[test]
    fn containers_and_strings() {
        let mut w = MsgpackWriter::new();
        w.array(16);
        w.map(2);
        w.str(&"x".repeat(31));
        w.str(&"y".repeat(32));
        let b = w.finish();
        assert_eq!(&b[..4], b"\xdc\x00\x10\x82");
        assert_eq!(b[4], 0xbf);
        assert_eq!(&b[36..38], b"\xd9\x20");

        let s = TimeSeries::new("a", 0, 120, 60, vec![Some(1.0), None]);
        let r = render_msgpack(&[s]);
        assert_eq!(r.content_type, "application/x-msgpack");
        assert_eq!(&r.body[..2], b"\x91\x89");
        let values = [
            b"\xa6values\x92\xcb".as_slice(),
            &1.0f64.to_be_bytes(),
            b"\xc0",
        ]
        .concat();
        assert!(r.body.windows(values.len()).any(|w| w == values));
    }
}
