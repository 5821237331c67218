//! What can be wrong with a block, and where.
//!
//! Every variant carries the byte offset (from the start of the block) at which the decoder
//! noticed the problem, so a corrupt part can be reported as "series 42, block at file offset
//! X, byte Y of the block".

/// A block could not be decoded. The offset is counted from the first byte of the block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The block ends before `what` is complete.
    #[error("truncated block: {what} needs more bytes at byte {offset}")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Offset of the first missing byte.
        offset: usize,
    },
    /// The header byte names a format version this decoder does not know.
    #[error("unknown block format version {version} in header byte {header:#04x} at byte 0")]
    UnknownVersion {
        /// The version found.
        version: u8,
        /// The whole header byte.
        header: u8,
    },
    /// A field holds a value outside its allowed range (an unknown mode, a width above 64,
    /// too many points, a count that disagrees with another field...).
    #[error("invalid {what}: got {got}, expected {expected} at byte {offset}")]
    Invalid {
        /// The field.
        what: &'static str,
        /// The value found.
        got: u64,
        /// What the format allows, in words.
        expected: &'static str,
        /// Offset of the field.
        offset: usize,
    },
    /// A LEB128 varint runs past ten bytes or past 64 bits.
    #[error("varint overflow in {what} at byte {offset}")]
    VarintOverflow {
        /// The field being read.
        what: &'static str,
        /// Offset of the varint's first byte.
        offset: usize,
    },
    /// Slots computed from the header leave the range of `i64`.
    #[error("slot arithmetic overflows i64 in {what} at byte {offset}")]
    SlotOverflow {
        /// The field whose value overflows.
        what: &'static str,
        /// Offset of the field.
        offset: usize,
    },
    /// Bytes remain after the last field of the block.
    #[error("{extra} trailing bytes after the end of the block at byte {offset}")]
    TrailingBytes {
        /// How many bytes are left over.
        extra: usize,
        /// Offset of the first extra byte.
        offset: usize,
    },
}
