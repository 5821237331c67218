//! Length-prefixed messages out of a byte stream: a 4-byte big-endian length, then
//! that many bytes (Twisted's `Int32StringReceiver`, which carbon's pickle receiver
//! is, and `struct.pack("!L", len)` on the client side).
//!
//! A length above the limit is reported at once, before its body is read
//! ([`FrameStatus::TooLong`]): carbon closes the connection then (Twisted's
//! `lengthLimitExceeded`), because a stream whose frame is skipped cannot be trusted to
//! be in step any more, and the caller does the same.
//!
//! The buffer starts at the configured read size and grows to hold the largest frame
//! seen (never past the limit); [`FrameReader::reset`] gives the growth back.

/// What the buffered bytes hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameStatus {
    /// A whole frame is buffered: [`FrameReader::frame`] is its body.
    Ready,
    /// More bytes are needed.
    NeedMore,
    /// The next frame announces this many bytes, over the limit.
    TooLong(u64),
}

/// Frames a byte stream into length-prefixed messages, in one reused buffer.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    initial: usize,
    max_frame: usize,
}

/// Bytes of the length prefix.
const PREFIX: usize = 4;

/// Read at least this much at a time: compact the buffer rather than read less.
const MIN_READ: usize = 4096;

impl FrameReader {
    /// A reader with a `buffer_bytes` buffer taking frames of at most
    /// `max_frame_bytes`.
    pub fn new(buffer_bytes: usize, max_frame_bytes: usize) -> FrameReader {
        let initial = buffer_bytes.max(PREFIX + MIN_READ);
        FrameReader {
            buf: vec![0; initial],
            start: 0,
            end: 0,
            initial,
            max_frame: max_frame_bytes,
        }
    }

    /// The body length the buffered prefix announces, if the prefix is complete.
    fn announced(&self) -> Option<u64> {
        if self.end - self.start < PREFIX {
            return None;
        }
        let prefix: [u8; PREFIX] = self
            .buf
            .get(self.start..self.start + PREFIX)?
            .try_into()
            .ok()?;
        Some(u64::from(u32::from_be_bytes(prefix)))
    }

    /// What the buffered bytes hold.
    pub fn status(&self) -> FrameStatus {
        match self.announced() {
            None => FrameStatus::NeedMore,
            Some(len) if len > self.max_frame as u64 => FrameStatus::TooLong(len),
            Some(len) if (self.end - self.start - PREFIX) as u64 >= len => FrameStatus::Ready,
            Some(_) => FrameStatus::NeedMore,
        }
    }

    /// The body of the ready frame (empty unless [`FrameReader::status`] is `Ready`).
    pub fn frame(&self) -> &[u8] {
        match (self.status(), self.announced()) {
            (FrameStatus::Ready, Some(len)) => {
                let from = self.start + PREFIX;
                self.buf.get(from..from + len as usize).unwrap_or_default()
            }
            _ => &[],
        }
    }

    /// Drops the ready frame.
    pub fn consume(&mut self) {
        if let (FrameStatus::Ready, Some(len)) = (self.status(), self.announced()) {
            self.start += PREFIX + len as usize;
            if self.start == self.end {
                self.start = 0;
                self.end = 0;
            }
        }
    }

    /// Where to read the next bytes into: never empty while the next frame is
    /// incomplete and within the limit. Call [`FrameReader::commit`] with the count.
    pub fn read_space(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        // Room for the whole pending frame (or at least a prefix), from `start`.
        let need = match self.announced() {
            Some(len) if len <= self.max_frame as u64 => PREFIX + len as usize,
            _ => PREFIX,
        };
        if self.buf.len() - self.start < need.max(MIN_READ) && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
        self.buf.get_mut(self.end..).unwrap_or_default()
    }

    /// Records that `n` bytes were read into [`FrameReader::read_space`].
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// Bytes of an unfinished frame held (what an end of stream would lose).
    pub fn pending_bytes(&self) -> usize {
        self.end - self.start
    }

    /// Nothing is held.
    pub fn is_idle(&self) -> bool {
        self.start == self.end
    }

    /// Forgets everything held and shrinks back to the initial buffer.
    pub fn reset(&mut self) {
        self.start = 0;
        self.end = 0;
        if self.buf.len() > self.initial {
            self.buf = vec![0; self.initial];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(bodies: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for b in bodies {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b);
        }
        out
    }

    /// Feeds `data` in chunks of `chunk` bytes; collects every frame.
    fn run(data: &[u8], chunk: usize, buffer: usize, max: usize) -> (Vec<Vec<u8>>, Option<u64>) {
        let mut r = FrameReader::new(buffer, max);
        let mut got = Vec::new();
        let mut rest = data;
        loop {
            loop {
                match r.status() {
                    FrameStatus::Ready => {
                        got.push(r.frame().to_vec());
                        r.consume();
                    }
                    FrameStatus::TooLong(n) => return (got, Some(n)),
                    FrameStatus::NeedMore => break,
                }
            }
            if rest.is_empty() {
                return (got, None);
            }
            let space = r.read_space();
            assert!(!space.is_empty());
            let n = space.len().min(rest.len()).min(chunk);
            space[..n].copy_from_slice(&rest[..n]);
            r.commit(n);
            rest = &rest[n..];
        }
    }

    #[test]
    fn frames_in_any_chunking() {
        let big = vec![7u8; 20_000];
        let bodies: Vec<&[u8]> = vec![b"abc", b"", &big, b"x", &big[..5000]];
        let data = framed(&bodies);
        for chunk in [1, 3, 4, 5, 100, 4096, 1 << 20] {
            let (got, too_long) = run(&data, chunk, 0, 1 << 20);
            assert_eq!(too_long, None);
            assert_eq!(got.len(), bodies.len(), "chunk {chunk}");
            for (g, b) in got.iter().zip(&bodies) {
                assert_eq!(g.as_slice(), *b);
            }
        }
    }

    #[test]
    fn an_oversize_prefix_is_reported_before_its_body() {
        let mut data = framed(&[b"ok"]);
        data.extend_from_slice(&u32::MAX.to_be_bytes());
        let (got, too_long) = run(&data, 7, 0, 1000);
        assert_eq!(got, vec![b"ok".to_vec()]);
        assert_eq!(too_long, Some(u64::from(u32::MAX)));
        // exactly the limit is fine
        let (got, too_long) = run(&framed(&[&[1u8; 1000]]), 64, 0, 1000);
        assert_eq!((got.len(), too_long), (1, None));
    }

    #[test]
    fn growth_is_bounded_and_given_back() {
        let big = vec![1u8; 100_000];
        let mut r = FrameReader::new(8192, 200_000);
        let data = framed(&[&big]);
        let mut rest = &data[..];
        while r.status() != FrameStatus::Ready {
            let space = r.read_space();
            let n = space.len().min(rest.len());
            space[..n].copy_from_slice(&rest[..n]);
            r.commit(n);
            rest = &rest[n..];
        }
        assert!(r.buf.len() <= 100_004 + MIN_READ);
        assert_eq!(r.frame().len(), 100_000);
        r.consume();
        assert!(r.is_idle());
        r.reset();
        assert_eq!(r.buf.len(), 8192);
    }

    #[test]
    fn pending_bytes_of_a_truncated_frame() {
        let mut r = FrameReader::new(0, 100);
        let space = r.read_space();
        space[..6].copy_from_slice(&[0, 0, 0, 10, b'a', b'b']);
        r.commit(6);
        assert_eq!(r.status(), FrameStatus::NeedMore);
        assert_eq!(r.frame(), b"");
        assert_eq!(r.pending_bytes(), 6);
        assert!(!r.is_idle());
    }
}
