//! `format=pickle` for `/render` and `/metrics/find`: what graphite-web's cluster
//! protocol exchanges (a graphite-web with this server in `CLUSTER_SERVERS` reads
//! these), written as Python pickle protocol 2.
//!
//! - `/render`: a list of dicts as `TimeSeries.getInfo()` builds them: `name`, `start`,
//!   `end`, `step`, `values` (floats and `None`, consolidated when the series is),
//!   `pathExpression`, `valuesPerPoint`, `consolidationFunc`, `xFilesFactor`.
//! - `/metrics/find`: a list of `{"path", "is_leaf"}` dicts, leaves with `intervals`,
//!   an `IntervalSet` of `Interval`s rebuilt from their state as graphite-web's
//!   `pickle_nodes` writes them (graphite-web's safe unpickler allows exactly these
//!   two classes).
//!
//! Only the opcodes a protocol-2 reader needs are written: no memo, one `MARK` per
//! list or dict. graphite-web itself writes protocol 5 (`protocol=-1`); every reader
//! of protocol 5 reads protocol 2.

use sumi_query::series::TimeSeries;
use sumi_query::source::FindNode;

use crate::Rendered;

/// Builds one pickle.
pub(crate) struct PickleWriter {
    buf: Vec<u8>,
}

impl PickleWriter {
    pub(crate) fn new() -> PickleWriter {
        PickleWriter {
            buf: vec![0x80, 2], // PROTO 2
        }
    }

    pub(crate) fn reserve(&mut self, bytes: usize) {
        self.buf.reserve(bytes);
    }

    pub(crate) fn none(&mut self) {
        self.buf.push(b'N');
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.buf.push(if b { 0x88 } else { 0x89 }); // NEWTRUE / NEWFALSE
    }

    pub(crate) fn int(&mut self, i: i64) {
        if (0..=0xff).contains(&i) {
            self.buf.push(b'K'); // BININT1
            self.buf.push(i as u8);
        } else if (0..=0xffff).contains(&i) {
            self.buf.push(b'M'); // BININT2
            self.buf.extend_from_slice(&(i as u16).to_le_bytes());
        } else if let Ok(small) = i32::try_from(i) {
            self.buf.push(b'J'); // BININT
            self.buf.extend_from_slice(&small.to_le_bytes());
        } else {
            // LONG1: little-endian two's complement, shortest form
            let bytes = i.to_le_bytes();
            let mut n = 8;
            while n > 1 {
                let top = bytes[n - 1];
                let next_sign = bytes[n - 2] & 0x80;
                if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                    n -= 1;
                } else {
                    break;
                }
            }
            self.buf.push(0x8a);
            self.buf.push(n as u8);
            self.buf.extend_from_slice(&bytes[..n]);
        }
    }

    pub(crate) fn float(&mut self, x: f64) {
        self.buf.push(b'G'); // BINFLOAT, big-endian
        self.buf.extend_from_slice(&x.to_be_bytes());
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.buf.push(b'X'); // BINUNICODE
        self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// Starts a list; items follow, then [`end_list`](Self::end_list).
    pub(crate) fn begin_list(&mut self) {
        self.buf.extend_from_slice(b"](");
    }

    pub(crate) fn end_list(&mut self) {
        self.buf.push(b'e'); // APPENDS
    }

    /// Starts a dict; keys and values alternate, then [`end_dict`](Self::end_dict).
    pub(crate) fn begin_dict(&mut self) {
        self.buf.extend_from_slice(b"}(");
    }

    pub(crate) fn end_dict(&mut self) {
        self.buf.push(b'u'); // SETITEMS
    }

    /// The two values just written, as a tuple.
    pub(crate) fn tuple2(&mut self) {
        self.buf.push(0x86);
    }

    /// `module.name()` without calling `__init__` (`cls.__new__(cls)`); its state
    /// follows, then [`build`](Self::build).
    pub(crate) fn new_object(&mut self, module: &str, name: &str) {
        self.buf.push(b'c'); // GLOBAL
        self.buf.extend_from_slice(module.as_bytes());
        self.buf.push(b'\n');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(b'\n');
        self.buf.extend_from_slice(b")\x81"); // EMPTY_TUPLE NEWOBJ
    }

    /// Sets the object's `__dict__` from the dict just written.
    pub(crate) fn build(&mut self) {
        self.buf.push(b'b');
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.buf.push(b'.'); // STOP
        self.buf
    }
}

/// `/render?format=pickle`: graphite-web's `renderViewPickle`.
pub fn render_pickle(series: &[TimeSeries]) -> Rendered {
    let mut w = PickleWriter::new();
    let points: usize = series.iter().map(|s| s.values.len()).sum();
    w.reserve(256 * series.len() + 9 * points);
    w.begin_list();
    for s in series {
        w.begin_dict();
        w.str("name");
        if s.name_is_none() {
            w.none();
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
        w.begin_list();
        for v in s.consolidated() {
            match v {
                Some(x) => w.float(x),
                None => w.none(),
            }
        }
        w.end_list();
        w.str("pathExpression");
        if s.name_is_none() && s.path_expression == "None" {
            w.none();
        } else {
            w.str(&s.path_expression);
        }
        w.str("valuesPerPoint");
        w.int(s.values_per_point as i64);
        w.str("consolidationFunc");
        w.str(s.consolidation.name());
        w.str("xFilesFactor");
        w.float(s.x_files_factor);
        w.end_dict();
    }
    w.end_list();
    Rendered {
        body: w.finish(),
        content_type: "application/pickle",
    }
}

/// The order graphite-web's `find_view` answers in: a stable sort by node name (the
/// last dotted part of the path).
pub(crate) fn by_name(nodes: &[FindNode]) -> Vec<&FindNode> {
    let mut sorted: Vec<&FindNode> = nodes.iter().collect();
    sorted.sort_by(|a, b| node_name(&a.path).cmp(node_name(&b.path)));
    sorted
}

fn node_name(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// `/metrics/find?format=pickle`: graphite-web's `pickle_nodes`, nodes sorted by name,
/// leaves with the `(start, end)` intervals `intervals` gives for them.
pub fn find_pickle(
    nodes: &[FindNode],
    intervals: &dyn Fn(&FindNode) -> Vec<(f64, f64)>,
) -> Rendered {
    let mut w = PickleWriter::new();
    w.begin_list();
    for node in by_name(nodes) {
        w.begin_dict();
        w.str("path");
        w.str(&node.path);
        w.str("is_leaf");
        w.bool(node.is_leaf);
        if node.is_leaf {
            let spans = intervals(node);
            w.str("intervals");
            w.new_object("graphite.intervals", "IntervalSet");
            w.begin_dict();
            w.str("intervals");
            w.begin_list();
            for &(start, end) in &spans {
                w.new_object("graphite.intervals", "Interval");
                w.begin_dict();
                w.str("start");
                w.float(start);
                w.str("end");
                w.float(end);
                w.str("tuple");
                w.float(start);
                w.float(end);
                w.tuple2();
                w.str("size");
                w.float(end - start);
                w.end_dict();
                w.build();
            }
            w.end_list();
            w.str("size");
            w.float(spans.iter().map(|(s, e)| e - s).sum());
            w.end_dict();
            w.build();
        }
        w.end_dict();
    }
    w.end_list();
    Rendered {
        body: w.finish(),
        content_type: "application/pickle",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_their_shortest_opcode() {
        let cases: &[(i64, &[u8])] = &[
            (0, b"K\x00"),
            (255, b"K\xff"),
            (256, b"M\x00\x01"),
            (65536, b"J\x00\x00\x01\x00"),
            (-1, b"J\xff\xff\xff\xff"),
            (1 << 31, b"\x8a\x05\x00\x00\x00\x80\x00"),
            (-(1 << 40), b"\x8a\x06\x00\x00\x00\x00\x00\xff"),
            (i64::MAX, b"\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"),
        ];
        for &(i, want) in cases {
            let mut w = PickleWriter::new();
            w.int(i);
            assert_eq!(&w.finish()[2..], [want, b"."].concat().as_slice(), "{i}");
        }
    }

    #[test]
    fn a_series_as_get_info_builds_it() {
        let mut s = TimeSeries::new("a.b", 60, 240, 60, vec![Some(1.5), None, Some(-2.0)]);
        s.path_expression = "a.*".into();
        let body = render_pickle(&[s]).body;
        let mut want: Vec<u8> = b"\x80\x02](}(".to_vec();
        let str = |s: &str, want: &mut Vec<u8>| {
            want.push(b'X');
            want.extend_from_slice(&(s.len() as u32).to_le_bytes());
            want.extend_from_slice(s.as_bytes());
        };
        str("name", &mut want);
        str("a.b", &mut want);
        str("start", &mut want);
        want.extend_from_slice(b"K<");
        str("end", &mut want);
        want.extend_from_slice(b"K\xf0");
        str("step", &mut want);
        want.extend_from_slice(b"K<");
        str("values", &mut want);
        want.extend_from_slice(b"](G");
        want.extend_from_slice(&1.5f64.to_be_bytes());
        want.extend_from_slice(b"NG");
        want.extend_from_slice(&(-2.0f64).to_be_bytes());
        want.push(b'e');
        str("pathExpression", &mut want);
        str("a.*", &mut want);
        str("valuesPerPoint", &mut want);
        want.extend_from_slice(b"K\x01");
        str("consolidationFunc", &mut want);
        str("average", &mut want);
        str("xFilesFactor", &mut want);
        want.push(b'G');
        want.extend_from_slice(&0.0f64.to_be_bytes());
        want.extend_from_slice(b"ue.");
        assert_eq!(body, want);
    }

    #[test]
    fn find_nodes_carry_interval_sets() {
        let nodes = [
            FindNode {
                path: "a.b".into(),
                is_leaf: false,
            },
            FindNode {
                path: "a.c".into(),
                is_leaf: true,
            },
        ];
        let r = find_pickle(&nodes, &|_| vec![(10.0, 20.0)]);
        assert_eq!(r.content_type, "application/pickle");
        let text = String::from_utf8_lossy(&r.body);
        assert!(
            text.contains("cgraphite.intervals\nIntervalSet\n)\u{fffd}"),
            "{text:?}"
        );
        assert!(
            text.contains("cgraphite.intervals\nInterval\n)"),
            "{text:?}"
        );
        assert!(
            r.body.ends_with(b"ubue."),
            "{:?}",
            &r.body[r.body.len() - 8..]
        );
    }
}
