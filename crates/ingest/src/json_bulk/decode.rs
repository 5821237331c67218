//! `Content-Encoding` of an HTTP body: identity, gzip (also `x-gzip`, and several
//! members one after another, as Go's and Python's readers accept) or deflate (the
//! zlib stream RFC 9110 means, or a raw deflate stream, which some clients send
//! instead). The decompressed size is capped as it is produced, so a small bomb cannot
//! take memory.

use std::borrow::Cow;
use std::io::Read;

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

use super::{BulkError, BulkLimits};

/// A body encoding this API takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// No header, an empty one, or `identity`.
    Identity,
    /// `gzip` or `x-gzip`.
    Gzip,
    /// `deflate`: zlib, or raw deflate.
    Deflate,
}

impl Encoding {
    /// The encoding a `Content-Encoding` header names (absent or empty is identity).
    pub fn from_header(header: Option<&str>) -> Result<Encoding, BulkError> {
        let h = header.unwrap_or("").trim();
        if h.is_empty() || h.eq_ignore_ascii_case("identity") {
            Ok(Encoding::Identity)
        } else if h.eq_ignore_ascii_case("gzip") || h.eq_ignore_ascii_case("x-gzip") {
            Ok(Encoding::Gzip)
        } else if h.eq_ignore_ascii_case("deflate") {
            Ok(Encoding::Deflate)
        } else {
            Err(BulkError::UnsupportedEncoding(h.chars().take(64).collect()))
        }
    }
}

/// The body, decompressed when its header says so, within the limits.
pub fn decode_body<'b>(
    body: &'b [u8],
    content_encoding: Option<&str>,
    limits: &BulkLimits,
) -> Result<Cow<'b, [u8]>, BulkError> {
    if body.len() > limits.max_body_bytes {
        return Err(BulkError::BodyTooLarge {
            len: body.len(),
            limit: limits.max_body_bytes,
        });
    }
    let max = limits.max_decoded_bytes;
    match Encoding::from_header(content_encoding)? {
        Encoding::Identity => {
            if body.len() > max {
                return Err(BulkError::DecodedTooLarge { limit: max });
            }
            Ok(Cow::Borrowed(body))
        }
        Encoding::Gzip => read_capped(MultiGzDecoder::new(body), max, "gzip").map(Cow::Owned),
        Encoding::Deflate => match read_capped(ZlibDecoder::new(body), max, "deflate") {
            Ok(v) => Ok(Cow::Owned(v)),
            Err(BulkError::Decompress { .. }) if !looks_like_zlib(body) => {
                read_capped(DeflateDecoder::new(body), max, "deflate").map(Cow::Owned)
            }
            Err(e) => Err(e),
        },
    }
}

/// A zlib header: compression method 8 and a valid check value (RFC 1950).
fn looks_like_zlib(body: &[u8]) -> bool {
    match body {
        [cmf, flg, ..] => cmf & 0x0F == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

fn read_capped(r: impl Read, max: usize, encoding: &'static str) -> Result<Vec<u8>, BulkError> {
    let mut out = Vec::new();
    let cap = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    r.take(cap)
        .read_to_end(&mut out)
        .map_err(|e| BulkError::Decompress {
            encoding,
            detail: e.to_string(),
        })?;
    if out.len() > max {
        return Err(BulkError::DecodedTooLarge { limit: max });
    }
    Ok(out)
}
