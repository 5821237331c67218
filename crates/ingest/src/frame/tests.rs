use super::*;

/// What a reader made of a whole stream, fed in chunks of the given sizes (cycled).
#[derive(Debug, PartialEq)]
enum Out {
    Line(Vec<u8>),
    TooLong,
}

fn frame_all(stream: &[u8], chunks: &[usize], buffer: usize, max_line: usize) -> Vec<Out> {
    let mut r = LineReader::new(buffer, max_line);
    let mut out = Vec::new();
    let mut rest = stream;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let want = (*sizes.next().unwrap()).max(1);
        let space = r.read_space();
        assert!(!space.is_empty());
        let n = want.min(space.len()).min(rest.len());
        space[..n].copy_from_slice(&rest[..n]);
        r.commit(n);
        rest = &rest[n..];
        drain(&mut r, &mut out);
        assert!(
            r.pending_bytes() <= max_line,
            "never holds more than one line"
        );
    }
    if let Some(f) = r.finish() {
        push(f, &mut out);
    }
    out
}

fn drain(r: &mut LineReader, out: &mut Vec<Out>) {
    while let Some(f) = r.next_frame() {
        push(f, out);
    }
}

fn push(f: Frame<'_>, out: &mut Vec<Out>) {
    out.push(match f {
        Frame::Line(l) => Out::Line(l.to_vec()),
        Frame::TooLong(_) => Out::TooLong,
    });
}

fn line(s: &str) -> Out {
    Out::Line(s.as_bytes().to_vec())
}

#[test]
fn lines_and_crlf() {
    let got = frame_all(b"a 1 2\nb 3 4\r\n\nc 5 6\r\r\n", &[1000], 8192, 100);
    assert_eq!(
        got,
        vec![line("a 1 2"), line("b 3 4"), line(""), line("c 5 6\r")]
    );
}

#[test]
fn every_chunking_gives_the_same_lines() {
    let stream = b"a.b 1 2\r\nc.d 3 4\n\nx\ry 5 6\nlast 7 8";
    let want = frame_all(stream, &[stream.len()], 8192, 100);
    assert_eq!(want.len(), 5);
    assert_eq!(want[4], line("last 7 8"));
    for size in 1..stream.len() {
        assert_eq!(
            frame_all(stream, &[size], 8192, 100),
            want,
            "chunks of {size}"
        );
    }
    assert_eq!(frame_all(stream, &[1, 7, 2, 13, 3], 8192, 100), want);
}

#[test]
fn final_line_without_newline_at_eof() {
    assert_eq!(frame_all(b"a 1 2", &[2], 8192, 100), vec![line("a 1 2")]);
    assert_eq!(frame_all(b"a 1 2\r", &[2], 8192, 100), vec![line("a 1 2")]);
    assert!(frame_all(b"", &[2], 8192, 100).is_empty());
}

#[test]
fn over_long_lines_are_skipped_and_reported_once() {
    let long = "x".repeat(250);
    let stream = format!("a 1 2\n{long}\nb 3 4\n{long}");
    for chunk in [1, 3, 64, 1000] {
        let got = frame_all(stream.as_bytes(), &[chunk], 8192, 100);
        assert_eq!(
            got,
            vec![line("a 1 2"), Out::TooLong, line("b 3 4"), Out::TooLong],
            "chunk {chunk}"
        );
    }
}

#[test]
fn longest_allowed_line_passes() {
    let exact = "y".repeat(100);
    let stream = format!("{exact}\n{exact}x\n");
    for chunk in [1, 7, 101, 4096] {
        let got = frame_all(stream.as_bytes(), &[chunk], 0, 100);
        assert_eq!(got, vec![line(&exact), Out::TooLong], "chunk {chunk}");
    }
}

#[test]
fn huge_line_never_grows_the_buffer() {
    // 10 MB without a newline, then a good line.
    let mut stream = vec![b'z'; 10_000_000];
    stream.extend_from_slice(b"\nok 1 2\n");
    let mut r = LineReader::new(64 * 1024, 16 * 1024);
    let cap = r.buf.len();
    let mut out = Vec::new();
    let mut rest = &stream[..];
    while !rest.is_empty() {
        let space = r.read_space();
        let n = space.len().min(rest.len());
        space[..n].copy_from_slice(&rest[..n]);
        r.commit(n);
        rest = &rest[n..];
        drain(&mut r, &mut out);
    }
    assert_eq!(r.buf.len(), cap);
    assert_eq!(out, vec![Out::TooLong, line("ok 1 2")]);
}

#[test]
fn too_long_sample_is_the_start_of_the_line() {
    let mut r = LineReader::new(0, 10);
    let data = b"0123456789ABCDEF";
    r.read_space()[..data.len()].copy_from_slice(data);
    r.commit(data.len());
    assert_eq!(r.next_frame(), Some(Frame::TooLong(&data[..])));
    assert_eq!(r.next_frame(), None);
    assert!(!r.is_idle(), "still skipping to the newline");
    r.read_space()[..2].copy_from_slice(b"x\n");
    r.commit(2);
    assert_eq!(r.next_frame(), None);
    assert!(r.is_idle());
}

#[test]
fn binary_garbage_is_framed_without_panic() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut stream = Vec::new();
    for _ in 0..20_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        stream.push((seed >> 24) as u8);
    }
    let whole: Vec<u8> = stream.clone();
    let got = frame_all(&whole, &[1, 5, 300, 7000], 512, 64);
    // every byte that is not part of an over-long line comes out in a line
    let newlines = whole.iter().filter(|&&b| b == b'\n').count();
    assert!(got.len() >= newlines);
    for o in &got {
        if let Out::Line(l) = o {
            assert!(l.len() <= 64);
            assert!(!l.contains(&b'\n'));
        }
    }
}

#[test]
fn reset_forgets_state() {
    let mut r = LineReader::new(0, 10);
    r.read_space()[..3].copy_from_slice(b"abc");
    r.commit(3);
    assert_eq!(r.next_frame(), None);
    assert_eq!(r.pending_bytes(), 3);
    r.reset();
    assert!(r.is_idle());
    assert_eq!(r.finish(), None);
}

fn dgram(d: &[u8]) -> Vec<&[u8]> {
    datagram_lines(d).collect()
}

#[test]
fn datagram_lines_are_pythons_splitlines() {
    // [l for l in data.decode().splitlines()] in CPython 3.11
    assert_eq!(dgram(b"a 1 2\nb 3 4"), vec![&b"a 1 2"[..], b"b 3 4"]);
    assert_eq!(dgram(b"a\r\nb\rc\n"), vec![&b"a"[..], b"b", b"c"]);
    assert_eq!(dgram(b"a\n\nb"), vec![&b"a"[..], b"", b"b"]);
    assert_eq!(
        dgram(b"a\x0bb\x0cc\x1cd\x1de\x1ef\x1fg"),
        vec![&b"a"[..], b"b", b"c", b"d", b"e", b"f\x1fg"]
    );
    assert_eq!(
        dgram("a\u{85}b\u{2028}c\u{2029}d\u{2027}e".as_bytes()),
        vec!["a".as_bytes(), b"b", b"c", "d\u{2027}e".as_bytes()]
    );
    assert_eq!(dgram(b"\n"), vec![&b""[..]]);
    assert!(dgram(b"").is_empty());
    assert_eq!(dgram(b"a\r"), vec![&b"a"[..]]);
    assert_eq!(dgram(b"a\r\r\n"), vec![&b"a"[..], b""]);
}

/// The frames the stream rules promise, from the whole buffer at once.
fn naive(stream: &[u8], max_line: usize) -> Vec<Out> {
    let mut pieces: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|p| {
            if p.len() > max_line {
                Out::TooLong
            } else {
                Out::Line(strip_cr(p).to_vec())
            }
        })
        .collect()
}

proptest::proptest! {
    #[test]
    fn any_chunking_matches_a_whole_buffer_split(
        stream in proptest::collection::vec(
            proptest::sample::select(b"ab \r\n\n\xff.1".to_vec()), 0..2000),
        chunks in proptest::collection::vec(1usize..300, 1..20),
        max_line in 1usize..80,
        buffer in 0usize..10_000,
    ) {
        proptest::prop_assert_eq!(frame_all(&stream, &chunks, buffer, max_line), naive(&stream, max_line));
    }
}
