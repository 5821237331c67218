//! Lines out of bytes: a stream ([`LineReader`], TCP) or a datagram
//! ([`datagram_lines`], UDP).
//!
//! Stream rules (carbon's `LineOnlyReceiver` with `delimiter = b'\n'`, except where
//! noted):
//! - a line ends at `\n`; one `\r` before it is removed (the parser ignores
//!   surrounding whitespace anyway);
//! - a line longer than `max_line_bytes` (not counting its `\n`) is skipped up to its
//!   newline and reported once as [`Frame::TooLong`]. Twisted closes the connection
//!   instead; sumi keeps it, and never buffers more than the limit of one line;
//! - at a clean end of stream a last line without `\n` is still a line
//!   ([`LineReader::finish`]). Twisted drops it; a client that closes after writing
//!   its last point without a newline (`echo -n`) expects it stored.
//!
//! The reader owns one fixed buffer that the socket reads into directly; lines are
//! handed out as slices of it, so framing copies nothing but the unfinished tail.

/// One framed unit.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without `\n` and a `\r` before it.
    Line(&'a [u8]),
    /// A line over the limit was found (the start of it, for the log); the rest of it
    /// is skipped.
    TooLong(&'a [u8]),
}

/// The default longest line (Twisted's `LineOnlyReceiver.MAX_LENGTH`).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024;

/// Frames a byte stream into lines in one reused buffer.
#[derive(Debug)]
pub struct LineReader {
    buf: Box<[u8]>,
    /// Unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    max_line_bytes: usize,
    /// Inside an over-long line: drop bytes up to the next `\n`.
    skipping: bool,
}

impl LineReader {
    /// A reader with a buffer of `buffer_bytes` (raised to hold one longest line and
    /// its newline, plus room to read more).
    pub fn new(buffer_bytes: usize, max_line_bytes: usize) -> LineReader {
        let max_line_bytes = max_line_bytes.max(1);
        let size = buffer_bytes.max(max_line_bytes.saturating_add(1 + MIN_READ));
        LineReader {
            buf: vec![0u8; size].into_boxed_slice(),
            start: 0,
            end: 0,
            max_line_bytes,
            skipping: false,
        }
    }

    /// Where to read the next bytes into; never empty. Call [`LineReader::commit`]
    /// with the number of bytes read.
    pub fn read_space(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < MIN_READ {
            // Move the unfinished line (at most `max_line_bytes`) to the front.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.buf.get_mut(self.end..).unwrap_or_default()
    }

    /// Records that `n` bytes were read into [`LineReader::read_space`].
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The next complete line (or over-long line report), or `None` when more bytes
    /// are needed.
    pub fn next_frame(&mut self) -> Option<Frame<'_>> {
        loop {
            let pending = self.buf.get(self.start..self.end)?;
            let newline = memchr::memchr(b'\n', pending);
            if self.skipping {
                match newline {
                    Some(i) => {
                        self.start += i + 1;
                        self.skipping = false;
                        continue;
                    }
                    None => {
                        self.start = self.end;
                        return None;
                    }
                }
            }
            return match newline {
                Some(i) => {
                    let line_start = self.start;
                    self.start += i + 1;
                    let line = self.buf.get(line_start..line_start + i)?;
                    Some(if line.len() > self.max_line_bytes {
                        Frame::TooLong(line.get(..SAMPLE_BYTES).unwrap_or(line))
                    } else {
                        Frame::Line(strip_cr(line))
                    })
                }
                None if pending.len() > self.max_line_bytes => {
                    let line_start = self.start;
                    self.start = self.end;
                    self.skipping = true;
                    let sample = self
                        .buf
                        .get(line_start..line_start + SAMPLE_BYTES.min(pending.len()))?;
                    Some(Frame::TooLong(sample))
                }
                None => None,
            };
        }
    }

    /// At a clean end of stream: the last line if it had no `\n` (see the module doc).
    /// Call after [`LineReader::next_frame`] returned `None`.
    pub fn finish(&mut self) -> Option<Frame<'_>> {
        if self.skipping || self.start == self.end {
            self.start = self.end;
            return None;
        }
        let (start, end) = (self.start, self.end);
        self.start = self.end;
        let line = self.buf.get(start..end)?;
        Some(Frame::Line(strip_cr(line)))
    }

    /// Bytes of an unfinished line held (what a shutdown would drop).
    pub fn pending_bytes(&self) -> usize {
        self.end - self.start
    }

    /// Nothing is held: the buffer can go back to a pool.
    pub fn is_idle(&self) -> bool {
        self.start == self.end && !self.skipping
    }

    /// Forgets everything held, for reuse by another connection.
    pub fn reset(&mut self) {
        self.start = 0;
        self.end = 0;
        self.skipping = false;
    }
}

/// Read at least this much at a time: compact the buffer rather than read less.
const MIN_READ: usize = 4096;

/// How much of an over-long line [`Frame::TooLong`] shows.
const SAMPLE_BYTES: usize = 400;

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The lines of one UDP datagram, split as carbon's `data.decode().splitlines()`:
/// at `\n`, `\r\n`, `\r`, `\v`, `\f`, 0x1C, 0x1D, 0x1E, U+0085, U+2028 and U+2029.
/// A datagram never holds half a line: its end ends the last line.
///
/// Deviation: carbon decodes the whole datagram first, so one invalid UTF-8 byte loses
/// every line in it; here only the line holding it is refused (by the parser). On valid
/// UTF-8 the split is identical, because the multi-byte separators' lead bytes never
/// occur inside another character.
pub fn datagram_lines(datagram: &[u8]) -> DatagramLines<'_> {
    DatagramLines {
        rest: Some(datagram),
    }
}

/// Iterator returned by [`datagram_lines`].
#[derive(Debug, Clone)]
pub struct DatagramLines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for DatagramLines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let mut i = 0;
        while let Some(&b) = rest.get(i) {
            let sep = match b {
                b'\r' if rest.get(i + 1) == Some(&b'\n') => 2,
                b'\n' | b'\r' | 0x0B | 0x0C | 0x1C..=0x1E => 1,
                0xC2 if rest.get(i + 1) == Some(&0x85) => 2,
                0xE2 if rest.get(i + 1) == Some(&0x80)
                    && matches!(rest.get(i + 2), Some(0xA8 | 0xA9)) =>
                {
                    3
                }
                _ => 0,
            };
            if sep > 0 {
                let (line, after) = (rest.get(..i)?, rest.get(i + sep..)?);
                // Like `splitlines()`, a separator at the very end opens no empty line.
                self.rest = if after.is_empty() { None } else { Some(after) };
                return Some(line);
            }
            i += 1;
        }
        self.rest = None;
        if rest.is_empty() {
            None
        } else {
            Some(rest)
        }
    }
}

#[cfg(test)]
mod tests;
