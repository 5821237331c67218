//! The pickle virtual machine: the opcodes carbon's clients use, each doing what
//! CPython 3.11's unpickler does with it, and a typed refusal of every other one.
//!
//! One flat value stack holds every frame: a MARK records the stack height, and no
//! opcode may pop below the innermost mark (CPython keeps a separate stack per mark,
//! so such a pop is an `IndexError` there too). Every limit is checked before the
//! memory it guards is used, and every read is bounds-checked, so no input can panic,
//! allocate without bound, or run longer than one pass over its bytes.

use super::text;
use super::value::{Span, Value};
use super::{PickleError, PickleLimits};

/// The opcodes, as `pickletools` names them.
mod op {
    pub(super) const MARK: u8 = b'(';
    pub(super) const STOP: u8 = b'.';
    pub(super) const POP: u8 = b'0';
    pub(super) const POP_MARK: u8 = b'1';
    pub(super) const DUP: u8 = b'2';
    pub(super) const FLOAT: u8 = b'F';
    pub(super) const INT: u8 = b'I';
    pub(super) const BININT: u8 = b'J';
    pub(super) const BININT1: u8 = b'K';
    pub(super) const LONG: u8 = b'L';
    pub(super) const BININT2: u8 = b'M';
    pub(super) const NONE: u8 = b'N';
    pub(super) const PERSID: u8 = b'P';
    pub(super) const BINPERSID: u8 = b'Q';
    pub(super) const REDUCE: u8 = b'R';
    pub(super) const STRING: u8 = b'S';
    pub(super) const BINSTRING: u8 = b'T';
    pub(super) const SHORT_BINSTRING: u8 = b'U';
    pub(super) const UNICODE: u8 = b'V';
    pub(super) const BINUNICODE: u8 = b'X';
    pub(super) const APPEND: u8 = b'a';
    pub(super) const BUILD: u8 = b'b';
    pub(super) const GLOBAL: u8 = b'c';
    pub(super) const DICT: u8 = b'd';
    pub(super) const EMPTY_DICT: u8 = b'}';
    pub(super) const APPENDS: u8 = b'e';
    pub(super) const GET: u8 = b'g';
    pub(super) const BINGET: u8 = b'h';
    pub(super) const INST: u8 = b'i';
    pub(super) const LONG_BINGET: u8 = b'j';
    pub(super) const LIST: u8 = b'l';
    pub(super) const EMPTY_LIST: u8 = b']';
    pub(super) const OBJ: u8 = b'o';
    pub(super) const PUT: u8 = b'p';
    pub(super) const BINPUT: u8 = b'q';
    pub(super) const LONG_BINPUT: u8 = b'r';
    pub(super) const SETITEM: u8 = b's';
    pub(super) const TUPLE: u8 = b't';
    pub(super) const EMPTY_TUPLE: u8 = b')';
    pub(super) const SETITEMS: u8 = b'u';
    pub(super) const BINFLOAT: u8 = b'G';
    pub(super) const PROTO: u8 = 0x80;
    pub(super) const NEWOBJ: u8 = 0x81;
    pub(super) const EXT1: u8 = 0x82;
    pub(super) const EXT2: u8 = 0x83;
    pub(super) const EXT4: u8 = 0x84;
    pub(super) const TUPLE1: u8 = 0x85;
    pub(super) const TUPLE2: u8 = 0x86;
    pub(super) const TUPLE3: u8 = 0x87;
    pub(super) const NEWTRUE: u8 = 0x88;
    pub(super) const NEWFALSE: u8 = 0x89;
    pub(super) const LONG1: u8 = 0x8a;
    pub(super) const LONG4: u8 = 0x8b;
    pub(super) const BINBYTES: u8 = b'B';
    pub(super) const SHORT_BINBYTES: u8 = b'C';
    pub(super) const SHORT_BINUNICODE: u8 = 0x8c;
    pub(super) const BINUNICODE8: u8 = 0x8d;
    pub(super) const BINBYTES8: u8 = 0x8e;
    pub(super) const EMPTY_SET: u8 = 0x8f;
    pub(super) const ADDITEMS: u8 = 0x90;
    pub(super) const FROZENSET: u8 = 0x91;
    pub(super) const NEWOBJ_EX: u8 = 0x92;
    pub(super) const STACK_GLOBAL: u8 = 0x93;
    pub(super) const MEMOIZE: u8 = 0x94;
    pub(super) const FRAME: u8 = 0x95;
    pub(super) const BYTEARRAY8: u8 = 0x96;
    pub(super) const NEXT_BUFFER: u8 = 0x97;
    pub(super) const READONLY_BUFFER: u8 = 0x98;
}

/// The highest protocol CPython 3.11 writes and reads.
const HIGHEST_PROTOCOL: u8 = 5;

/// The `pickletools` name of an opcode, for error messages.
pub(super) fn op_name(code: u8) -> &'static str {
    use op::*;
    match code {
        MARK => "MARK",
        STOP => "STOP",
        POP => "POP",
        POP_MARK => "POP_MARK",
        DUP => "DUP",
        FLOAT => "FLOAT",
        INT => "INT",
        BININT => "BININT",
        BININT1 => "BININT1",
        LONG => "LONG",
        BININT2 => "BININT2",
        NONE => "NONE",
        PERSID => "PERSID",
        BINPERSID => "BINPERSID",
        REDUCE => "REDUCE",
        STRING => "STRING",
        BINSTRING => "BINSTRING",
        SHORT_BINSTRING => "SHORT_BINSTRING",
        UNICODE => "UNICODE",
        BINUNICODE => "BINUNICODE",
        APPEND => "APPEND",
        BUILD => "BUILD",
        GLOBAL => "GLOBAL",
        DICT => "DICT",
        EMPTY_DICT => "EMPTY_DICT",
        APPENDS => "APPENDS",
        GET => "GET",
        BINGET => "BINGET",
        INST => "INST",
        LONG_BINGET => "LONG_BINGET",
        LIST => "LIST",
        EMPTY_LIST => "EMPTY_LIST",
        OBJ => "OBJ",
        PUT => "PUT",
        BINPUT => "BINPUT",
        LONG_BINPUT => "LONG_BINPUT",
        SETITEM => "SETITEM",
        TUPLE => "TUPLE",
        EMPTY_TUPLE => "EMPTY_TUPLE",
        SETITEMS => "SETITEMS",
        BINFLOAT => "BINFLOAT",
        PROTO => "PROTO",
        NEWOBJ => "NEWOBJ",
        EXT1 => "EXT1",
        EXT2 => "EXT2",
        EXT4 => "EXT4",
        TUPLE1 => "TUPLE1",
        TUPLE2 => "TUPLE2",
        TUPLE3 => "TUPLE3",
        NEWTRUE => "NEWTRUE",
        NEWFALSE => "NEWFALSE",
        LONG1 => "LONG1",
        LONG4 => "LONG4",
        BINBYTES => "BINBYTES",
        SHORT_BINBYTES => "SHORT_BINBYTES",
        SHORT_BINUNICODE => "SHORT_BINUNICODE",
        BINUNICODE8 => "BINUNICODE8",
        BINBYTES8 => "BINBYTES8",
        EMPTY_SET => "EMPTY_SET",
        ADDITEMS => "ADDITEMS",
        FROZENSET => "FROZENSET",
        NEWOBJ_EX => "NEWOBJ_EX",
        STACK_GLOBAL => "STACK_GLOBAL",
        MEMOIZE => "MEMOIZE",
        FRAME => "FRAME",
        BYTEARRAY8 => "BYTEARRAY8",
        NEXT_BUFFER => "NEXT_BUFFER",
        READONLY_BUFFER => "READONLY_BUFFER",
        _ => "unknown",
    }
}

/// Decodes carbon pickle messages. Keeps its buffers between messages, so a
/// connection allocates only while its messages grow.
#[derive(Debug, Default)]
pub struct Unpickler {
    limits: PickleLimits,
    stack: Vec<Value>,
    /// Stack heights at each open MARK.
    marks: Vec<usize>,
    memo: Vec<Option<Value>>,
    /// Entries set in `memo` (what `MEMOIZE` uses as its index, as `len(memo)`).
    memo_count: usize,
    tuples: Vec<Value>,
    /// Lists of this message are `lists[..lists_used]`; the rest keep their capacity.
    lists: Vec<Vec<Value>>,
    lists_used: usize,
    /// Strings decoded from protocol 0 arguments.
    text: Vec<u8>,
    /// Values made in this message, against `limits.max_values`.
    made: usize,
    /// The loaded message: a list or tuple.
    top: Option<Value>,
}

/// Where an opcode is, for its errors.
#[derive(Clone, Copy)]
struct At {
    code: u8,
    offset: usize,
}

impl At {
    fn name(self) -> &'static str {
        op_name(self.code)
    }

    fn truncated(self, what: &'static str) -> PickleError {
        PickleError::Truncated {
            opcode: self.name(),
            offset: self.offset,
            what,
        }
    }

    fn malformed(self, what: &'static str) -> PickleError {
        PickleError::Malformed {
            opcode: self.name(),
            offset: self.offset,
            what,
        }
    }

    fn underflow(self) -> PickleError {
        PickleError::StackUnderflow {
            opcode: self.name(),
            offset: self.offset,
        }
    }
}

/// A cursor over the message.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.buf.get(self.pos..self.pos.checked_add(N)?)?;
        self.pos += N;
        bytes.try_into().ok()
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    /// `len` bytes as a span of the message, within `max` bytes.
    fn span(&mut self, len: u64, max: usize, at: At) -> Result<Span, PickleError> {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > max {
            return Err(PickleError::TooLong {
                opcode: at.name(),
                offset: at.offset,
                len: len as u64,
                limit: max,
            });
        }
        if len > self.remaining() {
            return Err(at.truncated("its argument"));
        }
        let span = Span {
            // The message is at most `MAX_MESSAGE_BYTES`, so offsets fit.
            start: self.pos as u32,
            len: len as u32,
        };
        self.pos += len;
        Ok(span)
    }

    /// A protocol 0 argument: the bytes up to the next `\n` (not included).
    fn line(&mut self, max: usize, at: At) -> Result<&'a [u8], PickleError> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let window = rest.get(..max.saturating_add(1)).unwrap_or(rest);
        match memchr::memchr(b'\n', window) {
            Some(i) => {
                self.pos += i + 1;
                Ok(window.get(..i).unwrap_or_default())
            }
            None if window.len() > max => Err(PickleError::TooLong {
                opcode: at.name(),
                offset: at.offset,
                len: rest.len() as u64,
                limit: max,
            }),
            None => Err(at.truncated("a line")),
        }
    }
}

/// Messages are addressed with 32-bit offsets, and decoded text may be up to twice
/// as long as its source: 1 GiB is far above any frame limit.
pub(super) const MAX_MESSAGE_BYTES: usize = 1 << 30;

impl Unpickler {
    /// An unpickler with these limits.
    pub fn new(limits: PickleLimits) -> Unpickler {
        Unpickler {
            limits,
            ..Unpickler::default()
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &PickleLimits {
        &self.limits
    }

    fn reset(&mut self) {
        self.stack.clear();
        self.marks.clear();
        self.memo.clear();
        self.memo_count = 0;
        self.tuples.clear();
        for l in self.lists.iter_mut().take(self.lists_used) {
            l.clear();
        }
        self.lists_used = 0;
        self.text.clear();
        self.made = 0;
        self.top = None;
    }

    /// Forgets the last message and gives back memory beyond what a typical message
    /// needs, for an unpickler going back to a pool.
    pub fn release(&mut self) {
        self.reset();
        const KEEP: usize = 1 << 14;
        for v in [&mut self.stack, &mut self.tuples] {
            if v.capacity() > KEEP {
                *v = Vec::new();
            }
        }
        if self.memo.capacity() > KEEP {
            self.memo = Vec::new();
        }
        if self.text.capacity() > KEEP {
            self.text = Vec::new();
        }
        self.lists.truncate(4);
        for l in &mut self.lists {
            if l.capacity() > KEEP {
                *l = Vec::new();
            }
        }
    }

    /// Runs one message. `Ok` gives the number of elements of its top-level list
    /// (read them with [`Unpickler::point`], passing the same `msg`).
    pub fn load(&mut self, msg: &[u8]) -> Result<usize, PickleError> {
        self.reset();
        if msg.len() > MAX_MESSAGE_BYTES {
            return Err(PickleError::MessageTooLarge(msg.len()));
        }
        let top = self.run(msg)?;
        let count = match top {
            Value::List(_) | Value::Tuple(_) => self.seq(&top).map_or(0, <[Value]>::len),
            other => return Err(PickleError::NotAList(other.type_name())),
        };
        self.top = Some(top);
        Ok(count)
    }

    /// The items of a list or tuple.
    pub(super) fn seq(&self, v: &Value) -> Option<&[Value]> {
        match *v {
            Value::Tuple(span) => self
                .tuples
                .get(span.start as usize..span.start as usize + span.len as usize),
            Value::List(id) => self.lists.get(id as usize).map(Vec::as_slice),
            _ => None,
        }
    }

    /// The top-level elements of the loaded message.
    pub(super) fn elements(&self) -> &[Value] {
        self.top
            .as_ref()
            .and_then(|t| self.seq(t))
            .unwrap_or_default()
    }

    /// The bytes of a string value.
    pub(super) fn bytes_of<'s>(&'s self, msg: &'s [u8], v: &Value) -> Option<&'s [u8]> {
        match v {
            Value::Str(s) | Value::Bytes(s) => s.of(msg),
            Value::Text(s) => s.of(&self.text),
            _ => None,
        }
    }

    /// The lowest stack index the current frame (since the innermost MARK) owns.
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    fn push(&mut self, v: Value, at: At) -> Result<(), PickleError> {
        self.made += 1;
        if self.made > self.limits.max_values {
            return Err(PickleError::TooManyValues {
                limit: self.limits.max_values,
                offset: at.offset,
            });
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self, at: At) -> Result<Value, PickleError> {
        if self.stack.len() <= self.floor() {
            return Err(at.underflow());
        }
        self.stack.pop().ok_or(at.underflow())
    }

    fn peek(&self, at: At) -> Result<Value, PickleError> {
        if self.stack.len() <= self.floor() {
            return Err(at.underflow());
        }
        self.stack.last().copied().ok_or(at.underflow())
    }

    fn pop_mark(&mut self, at: At) -> Result<usize, PickleError> {
        self.marks.pop().ok_or(PickleError::NoMark {
            opcode: at.name(),
            offset: at.offset,
        })
    }

    /// Replaces `stack[start..]` with one tuple of those items.
    fn make_tuple(&mut self, start: usize, at: At) -> Result<(), PickleError> {
        let items = self.stack.get(start..).unwrap_or_default();
        let span = Span {
            start: u32::try_from(self.tuples.len())
                .map_err(|_| at.malformed("too many tuple items"))?,
            len: items.len() as u32,
        };
        self.tuples.extend_from_slice(items);
        self.stack.truncate(start);
        self.push(Value::Tuple(span), at)
    }

    /// Replaces `stack[start..]` with one list of those items.
    fn make_list(&mut self, start: usize, at: At) -> Result<(), PickleError> {
        let id = self.lists_used;
        if id >= self.lists.len() {
            self.lists.push(Vec::new());
        }
        let items = self.stack.get(start..).unwrap_or_default();
        if let Some(l) = self.lists.get_mut(id) {
            l.clear();
            l.extend_from_slice(items);
        }
        self.lists_used += 1;
        self.stack.truncate(start);
        let id = u32::try_from(id).map_err(|_| at.malformed("too many lists"))?;
        self.push(Value::List(id), at)
    }

    /// `stack[start..]` appended to the list just below `start`.
    fn extend_list(&mut self, start: usize, at: At) -> Result<(), PickleError> {
        if start == 0 || start - 1 < self.floor() {
            return Err(at.underflow());
        }
        let target = self.stack.get(start - 1).copied().ok_or(at.underflow())?;
        let Value::List(id) = target else {
            return Err(PickleError::NotAppendable {
                offset: at.offset,
                target: target.type_name(),
            });
        };
        let items = self.stack.get(start..).unwrap_or_default();
        if let Some(l) = self.lists.get_mut(id as usize) {
            l.extend_from_slice(items);
        }
        self.stack.truncate(start);
        Ok(())
    }

    /// Checks that the value just below `start` (in the current frame) is `want`, the
    /// dict or set an item-adding opcode adds to.
    fn expect_below(&self, start: usize, want: Value, at: At) -> Result<(), PickleError> {
        if start == 0 || start - 1 < self.floor() {
            return Err(at.underflow());
        }
        match self.stack.get(start - 1) {
            Some(v) if *v == want => Ok(()),
            Some(v) => Err(PickleError::NotAppendable {
                offset: at.offset,
                target: v.type_name(),
            }),
            None => Err(at.underflow()),
        }
    }

    fn memo_put(&mut self, index: u64, at: At) -> Result<(), PickleError> {
        let idx = usize::try_from(index).unwrap_or(usize::MAX);
        if idx >= self.limits.max_memo {
            return Err(PickleError::MemoLimit {
                index,
                limit: self.limits.max_memo,
                offset: at.offset,
            });
        }
        let v = self.peek(at)?;
        if self.memo.len() <= idx {
            self.memo.resize(idx + 1, None);
        }
        if let Some(slot) = self.memo.get_mut(idx) {
            if slot.is_none() {
                self.memo_count += 1;
            }
            *slot = Some(v);
        }
        Ok(())
    }

    fn memo_get(&mut self, index: u64, at: At) -> Result<(), PickleError> {
        let v = usize::try_from(index)
            .ok()
            .and_then(|i| self.memo.get(i).copied().flatten())
            .ok_or(PickleError::MemoMissing {
                index,
                offset: at.offset,
            })?;
        self.push(v, at)
    }

    /// Decoded protocol 0 text, kept in the text arena.
    fn push_text(
        &mut self,
        src: &[u8],
        decode: fn(&[u8], &mut Vec<u8>) -> Result<(), &'static str>,
        at: At,
    ) -> Result<(), PickleError> {
        let start = self.text.len();
        decode(src, &mut self.text).map_err(|what| at.malformed(what))?;
        let span = Span {
            start: u32::try_from(start).map_err(|_| at.malformed("too much text"))?,
            len: u32::try_from(self.text.len() - start)
                .map_err(|_| at.malformed("too much text"))?,
        };
        self.push(Value::Text(span), at)
    }

    fn run(&mut self, msg: &[u8]) -> Result<Value, PickleError> {
        use op::*;
        let max_str = self.limits.max_string_bytes;
        let mut r = Reader { buf: msg, pos: 0 };
        loop {
            let offset = r.pos;
            let Some(code) = r.u8() else {
                return Err(PickleError::Truncated {
                    opcode: "STOP",
                    offset,
                    what: "an opcode",
                });
            };
            let at = At { code, offset };
            match code {
                STOP => return self.pop(at),
                PROTO => {
                    let v = r.u8().ok_or(at.truncated("the version"))?;
                    if v > HIGHEST_PROTOCOL {
                        return Err(PickleError::Protocol(v));
                    }
                }
                FRAME => {
                    let len = u64::from_le_bytes(r.array().ok_or(at.truncated("the length"))?);
                    if usize::try_from(len).map_or(true, |l| l > r.remaining()) {
                        return Err(at.truncated("the frame"));
                    }
                }
                MARK => {
                    if self.marks.len() >= self.limits.max_marks {
                        return Err(PickleError::TooDeep {
                            limit: self.limits.max_marks,
                            offset,
                        });
                    }
                    self.marks.push(self.stack.len());
                }
                POP => {
                    if self.stack.len() > self.floor() {
                        self.stack.pop();
                    } else {
                        self.pop_mark(at)?;
                    }
                }
                POP_MARK => {
                    let start = self.pop_mark(at)?;
                    self.stack.truncate(start);
                }
                DUP => {
                    let v = self.peek(at)?;
                    self.push(v, at)?;
                }
                NONE => self.push(Value::None, at)?,
                NEWTRUE => self.push(Value::Bool(true), at)?,
                NEWFALSE => self.push(Value::Bool(false), at)?,
                BININT => {
                    let v = i32::from_le_bytes(r.array().ok_or(at.truncated("the int"))?);
                    self.push(Value::Int(i64::from(v)), at)?;
                }
                BININT1 => {
                    let v = r.u8().ok_or(at.truncated("the int"))?;
                    self.push(Value::Int(i64::from(v)), at)?;
                }
                BININT2 => {
                    let v = u16::from_le_bytes(r.array().ok_or(at.truncated("the int"))?);
                    self.push(Value::Int(i64::from(v)), at)?;
                }
                INT => {
                    let line = r.line(max_str, at)?;
                    let v = match line {
                        b"00" => Value::Bool(false),
                        b"01" => Value::Bool(true),
                        _ => text::decimal_int(line).ok_or(at.malformed("not an integer"))?,
                    };
                    self.push(v, at)?;
                }
                LONG => {
                    let line = r.line(max_str, at)?;
                    let digits = line.strip_suffix(b"L").unwrap_or(line);
                    let v = text::decimal_int(digits).ok_or(at.malformed("not an integer"))?;
                    self.push(v, at)?;
                }
                LONG1 | LONG4 => {
                    let len = if code == LONG1 {
                        u64::from(r.u8().ok_or(at.truncated("the length"))?)
                    } else {
                        let n = i32::from_le_bytes(r.array().ok_or(at.truncated("the length"))?);
                        u64::try_from(n).map_err(|_| at.malformed("negative byte count"))?
                    };
                    let span = r.span(len, max_str, at)?;
                    let v = text::long_bytes(span.of(msg).unwrap_or_default());
                    self.push(v, at)?;
                }
                BINFLOAT => {
                    let v = f64::from_be_bytes(r.array().ok_or(at.truncated("the float"))?);
                    self.push(Value::Float(v), at)?;
                }
                FLOAT => {
                    let line = r.line(max_str, at)?;
                    let v = parse_float_arg(line).ok_or(at.malformed("not a float"))?;
                    self.push(Value::Float(v), at)?;
                }
                SHORT_BINSTRING | SHORT_BINUNICODE | SHORT_BINBYTES => {
                    let len = u64::from(r.u8().ok_or(at.truncated("the length"))?);
                    let span = r.span(len, max_str, at)?;
                    self.push(string_value(code, span), at)?;
                }
                BINSTRING => {
                    let n = i32::from_le_bytes(r.array().ok_or(at.truncated("the length"))?);
                    let len = u64::try_from(n).map_err(|_| at.malformed("negative byte count"))?;
                    let span = r.span(len, max_str, at)?;
                    self.push(Value::Str(span), at)?;
                }
                BINUNICODE | BINBYTES => {
                    let len = u32::from_le_bytes(r.array().ok_or(at.truncated("the length"))?);
                    let span = r.span(u64::from(len), max_str, at)?;
                    self.push(string_value(code, span), at)?;
                }
                BINUNICODE8 | BINBYTES8 | BYTEARRAY8 => {
                    let len = u64::from_le_bytes(r.array().ok_or(at.truncated("the length"))?);
                    let span = r.span(len, max_str, at)?;
                    self.push(string_value(code, span), at)?;
                }
                STRING => {
                    let line = r.line(max_str, at)?;
                    let quoted = match line {
                        [q @ (b'\'' | b'"'), inner @ .., last] if q == last => inner,
                        _ => return Err(at.malformed("the argument must be quoted")),
                    };
                    self.push_text(quoted, text::escape_decode, at)?;
                }
                UNICODE => {
                    let start = r.pos;
                    let line = r.line(max_str, at)?;
                    if line.is_ascii() && !line.contains(&b'\\') {
                        // Latin-1 of ASCII is itself: no need to copy.
                        let span = Span {
                            start: start as u32,
                            len: line.len() as u32,
                        };
                        self.push(Value::Str(span), at)?;
                    } else {
                        self.push_text(line, text::raw_unicode_escape, at)?;
                    }
                }
                EMPTY_TUPLE => {
                    let start = self.stack.len();
                    self.make_tuple(start, at)?;
                }
                TUPLE => {
                    let start = self.pop_mark(at)?;
                    self.make_tuple(start, at)?;
                }
                TUPLE1 | TUPLE2 | TUPLE3 => {
                    let n = usize::from(code - TUPLE1) + 1;
                    if self.stack.len() < self.floor() + n {
                        return Err(at.underflow());
                    }
                    let start = self.stack.len() - n;
                    self.make_tuple(start, at)?;
                }
                EMPTY_LIST => {
                    let start = self.stack.len();
                    self.make_list(start, at)?;
                }
                LIST => {
                    let start = self.pop_mark(at)?;
                    self.make_list(start, at)?;
                }
                APPEND => {
                    let start = self.stack.len();
                    if start <= self.floor() {
                        return Err(at.underflow());
                    }
                    self.extend_list(start - 1, at)?;
                }
                APPENDS => {
                    let start = self.pop_mark(at)?;
                    self.extend_list(start, at)?;
                }
                PUT => {
                    let line = r.line(max_str, at)?;
                    let idx = memo_index(line).ok_or(at.malformed("not a memo index"))?;
                    self.memo_put(idx, at)?;
                }
                BINPUT => {
                    let idx = r.u8().ok_or(at.truncated("the index"))?;
                    self.memo_put(u64::from(idx), at)?;
                }
                LONG_BINPUT => {
                    let idx = u32::from_le_bytes(r.array().ok_or(at.truncated("the index"))?);
                    self.memo_put(u64::from(idx), at)?;
                }
                MEMOIZE => self.memo_put(self.memo_count as u64, at)?,
                GET => {
                    let line = r.line(max_str, at)?;
                    let idx = memo_index(line).ok_or(at.malformed("not a memo index"))?;
                    self.memo_get(idx, at)?;
                }
                BINGET => {
                    let idx = r.u8().ok_or(at.truncated("the index"))?;
                    self.memo_get(u64::from(idx), at)?;
                }
                LONG_BINGET => {
                    let idx = u32::from_le_bytes(r.array().ok_or(at.truncated("the index"))?);
                    self.memo_get(u64::from(idx), at)?;
                }
                GLOBAL | INST => {
                    // Name what was asked for, for the log: `os system`.
                    let module = r.line(256, at).unwrap_or_default();
                    let name = r.line(256, at).unwrap_or_default();
                    return Err(PickleError::Forbidden {
                        opcode: at.name(),
                        offset,
                        target: format!(
                            "{}.{}",
                            String::from_utf8_lossy(module),
                            String::from_utf8_lossy(name)
                        ),
                    });
                }
                STACK_GLOBAL | REDUCE | BUILD | OBJ | NEWOBJ | NEWOBJ_EX | EXT1 | EXT2 | EXT4
                | PERSID | BINPERSID | NEXT_BUFFER | READONLY_BUFFER => {
                    return Err(PickleError::Forbidden {
                        opcode: at.name(),
                        offset,
                        target: String::new(),
                    });
                }
                // Dicts and sets are never part of a point: keep their type, drop
                // their items (an element holding one is refused on its own).
                EMPTY_DICT => self.push(Value::Dict, at)?,
                EMPTY_SET => self.push(Value::Set, at)?,
                DICT | FROZENSET => {
                    let start = self.pop_mark(at)?;
                    if code == DICT && (self.stack.len() - start) & 1 == 1 {
                        return Err(at.malformed("odd number of items for a dict"));
                    }
                    self.stack.truncate(start);
                    let v = if code == DICT {
                        Value::Dict
                    } else {
                        Value::Set
                    };
                    self.push(v, at)?;
                }
                SETITEM => {
                    self.pop(at)?;
                    self.pop(at)?;
                    self.expect_below(self.stack.len(), Value::Dict, at)?;
                }
                SETITEMS | ADDITEMS => {
                    let start = self.pop_mark(at)?;
                    if code == SETITEMS && (self.stack.len() - start) & 1 == 1 {
                        return Err(at.malformed("odd number of items for a dict"));
                    }
                    let want = if code == SETITEMS {
                        Value::Dict
                    } else {
                        Value::Set
                    };
                    self.expect_below(start, want, at)?;
                    self.stack.truncate(start);
                }
                _ => {
                    return Err(PickleError::UnknownOpcode {
                        opcode: code,
                        offset,
                    })
                }
            }
        }
    }
}

fn string_value(code: u8, span: Span) -> Value {
    use op::*;
    match code {
        BINBYTES | SHORT_BINBYTES | BINBYTES8 | BYTEARRAY8 => Value::Bytes(span),
        _ => Value::Str(span),
    }
}

/// The argument of `FLOAT`: CPython reads it with `PyOS_string_to_double`, which takes
/// no surrounding space and no `_`, and refuses a finite number too large for a double.
fn parse_float_arg(line: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(line).ok()?;
    if text.bytes().any(|b| b.is_ascii_whitespace() || b == b'_') {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_infinite() {
        let word = text.trim_start_matches(['+', '-']).to_ascii_lowercase();
        if word != "inf" && word != "infinity" {
            return None;
        }
    }
    Some(v)
}

/// The decimal index of `PUT`/`GET`.
fn memo_index(line: &[u8]) -> Option<u64> {
    match text::decimal_int(line)? {
        Value::Int(i) => u64::try_from(i).ok(),
        _ => None,
    }
}
