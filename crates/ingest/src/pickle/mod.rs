//! Carbon's pickle protocol: a safe unpickler for the shapes carbon accepts, and the
//! framing of its stream.
//!
//! A message is a pickled list of `(path, (timestamp, value))`, as carbon-relay
//! (`pickle.dumps(datapoints, protocol=2)`), graphite's example clients, Python 2 and 3
//! agents (protocols 0 to 5) and hand-rolled C writers such as brubeck's (protocol 1
//! opcodes, no `PROTO`) send it. carbon 1.1.10 loads it with `SafeUnpickler`, which
//! refuses every global but two that no metric needs; so no carbon client can send an
//! object, and this unpickler builds none:
//!
//! - [`vm`]: a small pickle virtual machine. It implements the opcodes of plain data
//!   (lists, tuples, ints, floats, strings, bytes, `None`, bools, the memo, framing)
//!   exactly as CPython 3.11 does, and refuses everything that would import, call or
//!   build an object (`GLOBAL`, `STACK_GLOBAL`, `REDUCE`, `BUILD`, `INST`, `OBJ`,
//!   `NEWOBJ`, `EXT*`, `PERSID`, out-of-band buffers) with [`PickleError::Forbidden`].
//!   Dicts and sets are plain data too, but never part of a point: only their type is
//!   kept, so an element holding one is refused alone, as in carbon.
//!   Values are small copies pointing into the message or
//!   into arenas ([`value`]), so the memo cannot multiply memory, and the work is one
//!   pass over the bytes.
//! - [`text`]: the text arguments of protocol 0 (Python 2's `repr` strings,
//!   raw-unicode-escape, decimal ints) and `LONG1`/`LONG4` integers.
//! - [`element`]: each element to a point, with carbon's rules.
//! - [`frame`]: the 4-byte big-endian length prefix.
//!
//! Limits ([`PickleLimits`]) bound the values made per message, nesting of marks, the
//! memo and each string; a message over one is refused whole.
//!
//! Errors come at two levels, as in carbon: a message that cannot be unpickled is lost
//! whole ([`PickleError`], counted once as `invalid_pickle`); within a good message a
//! bad element is counted and skipped and the others are kept ([`ElementError`]).
//! Where carbon would let an exception escape and drop the connection (a `bytes` name
//! under Python 3, an int too large for a float, an infinite timestamp), sumi refuses
//! only the element.

mod element;
pub mod frame;
pub(crate) mod text;
mod value;
mod vm;

pub use element::ElementError;
pub use frame::{FrameReader, FrameStatus};
pub use vm::Unpickler;

use sumi_model::Batch;

use crate::stats::{LocalCounts, Reason};

/// Bounds on one message, each with the reason for its default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickleLimits {
    /// Values (numbers, strings, tuples, lists, memo fetches) made while loading one
    /// message. Default 524,288: a 1 MiB message of one-letter names makes about
    /// 290,000; hostile input is cut off at ~16 MiB of values.
    pub max_values: usize,
    /// MARKs open at once. Default 64: picklers nest 3 at most (list, element, point).
    pub max_marks: usize,
    /// Memo indices accepted (`PUT`, `BINPUT`, `LONG_BINPUT`, `MEMOIZE`). Default
    /// 262,144: Python numbers them from 0, about 3 per element, so a 1 MiB message
    /// uses fewer than 180,000; a hostile `LONG_BINPUT 4294967295` is refused instead
    /// of sizing a table for it.
    pub max_memo: usize,
    /// Bytes of one string, bytes or integer argument. Default 64 KiB: names are
    /// refused beyond 4 KiB anyway.
    pub max_string_bytes: usize,
}

impl Default for PickleLimits {
    fn default() -> Self {
        PickleLimits {
            max_values: 1 << 19,
            max_marks: 64,
            max_memo: 1 << 18,
            max_string_bytes: 64 * 1024,
        }
    }
}

/// Why a message was refused whole. Offsets are byte offsets into the message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PickleError {
    /// The message ends before its STOP (or inside an opcode's argument).
    #[error("pickle ends early: {opcode} at offset {offset} is missing {what}")]
    Truncated {
        opcode: &'static str,
        offset: usize,
        what: &'static str,
    },
    /// A byte that is no pickle opcode.
    #[error("unknown pickle opcode 0x{opcode:02x} at offset {offset}")]
    UnknownOpcode { opcode: u8, offset: usize },
    /// An opcode that imports, calls or builds an object: never accepted.
    #[error("refused pickle opcode {opcode} at offset {offset}{}: it builds or calls arbitrary objects", if target.is_empty() { String::new() } else { format!(" ({target})") })]
    Forbidden {
        opcode: &'static str,
        offset: usize,
        /// `module.name` for `GLOBAL` and `INST`.
        target: String,
    },
    /// `PROTO` above 5.
    #[error("pickle protocol {0} is not supported (0 to 5 are)")]
    Protocol(u8),
    /// An argument that does not parse (a text int, float, quoted string, escape).
    #[error("malformed argument of {opcode} at offset {offset}: {what}")]
    Malformed {
        opcode: &'static str,
        offset: usize,
        what: &'static str,
    },
    /// An opcode needs a value the stack (since the innermost MARK) does not hold.
    #[error("pickle stack underflow: {opcode} at offset {offset}")]
    StackUnderflow { opcode: &'static str, offset: usize },
    /// An opcode needs a MARK and none is open.
    #[error("{opcode} at offset {offset} without a MARK")]
    NoMark { opcode: &'static str, offset: usize },
    /// `APPEND`/`APPENDS` onto something that is not a list (or `SETITEM(S)`,
    /// `ADDITEMS` onto something that is not a dict or set).
    #[error("adding items at offset {offset} to {target}, which does not take them")]
    NotAppendable { offset: usize, target: &'static str },
    /// A memo fetch of an index never stored.
    #[error("memo index {index} is not set (offset {offset})")]
    MemoMissing { index: u64, offset: usize },
    /// A memo index at or over [`PickleLimits::max_memo`].
    #[error("memo index {index} at offset {offset} is over the limit of {limit}")]
    MemoLimit {
        index: u64,
        limit: usize,
        offset: usize,
    },
    /// More open MARKs than [`PickleLimits::max_marks`].
    #[error("more than {limit} nested MARKs (offset {offset})")]
    TooDeep { limit: usize, offset: usize },
    /// More values than [`PickleLimits::max_values`].
    #[error("more than {limit} values in one message (offset {offset})")]
    TooManyValues { limit: usize, offset: usize },
    /// An argument longer than [`PickleLimits::max_string_bytes`].
    #[error("{opcode} at offset {offset} has a {len}-byte argument, over the limit of {limit}")]
    TooLong {
        opcode: &'static str,
        offset: usize,
        len: u64,
        limit: usize,
    },
    /// The message is bigger than an unpickler addresses (1 GiB).
    #[error("a {0}-byte message is too large to unpickle")]
    MessageTooLarge(usize),
    /// The message is not a list or tuple (what it is).
    #[error("the message is {0}, not a list of (name, (timestamp, value))")]
    NotAList(&'static str),
}

impl Unpickler {
    /// Loads `msg` and pushes its points into `batch`, counting each element in
    /// `counts` (received, renamed, refused by reason). `Err` when the message is
    /// refused whole; nothing is pushed then and nothing counted (the caller counts the
    /// message as [`Reason::InvalidPickle`]).
    pub fn decode_into(
        &mut self,
        msg: &[u8],
        now: i64,
        batch: &mut Batch,
        counts: &mut LocalCounts,
    ) -> Result<(), PickleError> {
        let n = self.load(msg)?;
        for i in 0..n {
            counts.received += 1;
            match self.point(msg, i, now) {
                Ok(p) => {
                    if p.name_changed {
                        counts.renamed += 1;
                    }
                    batch.push(&p.name, p.ts, p.value);
                }
                Err(e) => counts.reject(e.rejection()),
            }
        }
        Ok(())
    }
}

impl PickleError {
    /// The counter a refused message is counted under.
    pub fn rejection(&self) -> Reason {
        Reason::InvalidPickle
    }
}

#[cfg(test)]
mod tests;
