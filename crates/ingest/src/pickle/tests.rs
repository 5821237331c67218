//! Unit tests of the unpickler: pickles printed by CPython 3.11 (`pickle.dumps`), and
//! hand-assembled hostile ones. Whole fixture files from the real interpreter, for
//! every protocol, are checked in `tests/pickle.rs`.

use super::*;
use crate::plaintext::ParsedLine;

const NOW: i64 = 1_700_000_500;

/// One element: `Ok((name, ts, value))` or the counter it was refused under.
type Got = Result<(String, i64, f64), Reason>;

/// Every element of a message.
fn decode(msg: &[u8]) -> Result<Vec<Got>, PickleError> {
    let mut u = Unpickler::new(PickleLimits::default());
    decode_with(&mut u, msg)
}

fn decode_with(u: &mut Unpickler, msg: &[u8]) -> Result<Vec<Got>, PickleError> {
    u.load(msg)?;
    Ok(u.points(msg, NOW)
        .map(|r| {
            r.map(|p: ParsedLine<'_>| (p.name.into_owned(), p.ts, p.value))
                .map_err(|e| e.rejection())
        })
        .collect())
}

fn ok(name: &str, ts: i64, value: f64) -> Got {
    Ok((name.to_string(), ts, value))
}

/// A tiny assembler for hand-made pickles.
#[derive(Default)]
struct Asm(Vec<u8>);

impl Asm {
    fn op(mut self, bytes: &[u8]) -> Asm {
        self.0.extend_from_slice(bytes);
        self
    }
    fn str(self, s: &str) -> Asm {
        let len = (s.len() as u32).to_le_bytes();
        self.op(b"X").op(&len).op(s.as_bytes())
    }
    fn int(self, i: i32) -> Asm {
        self.op(b"J").op(&i.to_le_bytes())
    }
    fn float(self, f: f64) -> Asm {
        self.op(b"G").op(&f.to_be_bytes())
    }
    /// `(name, (ts, value))` with TUPLE2s.
    fn point(self, name: &str, ts: i32, value: f64) -> Asm {
        self.str(name).int(ts).float(value).op(b"\x86\x86")
    }
}

// pickle.dumps([('a.b', (1700000000, 1.5)), ('c', [1700000001, True])], protocol=p)
#[test]
fn python_protocols_0_2_4() {
    let p0: &[u8] = b"(lp0\n(Va.b\np1\n(I1700000000\nF1.5\ntp2\ntp3\na(Vc\np4\n(lp5\nI1700000001\naI01\natp6\na.";
    let p2: &[u8] = b"\x80\x02]q\x00(X\x03\x00\x00\x00a.bq\x01J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03X\x01\x00\x00\x00cq\x04]q\x05(J\x01\xf1Se\x88e\x86q\x06e.";
    let p4: &[u8] = b"\x80\x04\x95-\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x03a.b\x94J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86\x94\x86\x94\x8c\x01c\x94]\x94(J\x01\xf1Se\x88e\x86\x94e.";
    let want = vec![ok("a.b", 1_700_000_000, 1.5), ok("c", 1_700_000_001, 1.0)];
    for msg in [p0, p2, p4] {
        assert_eq!(decode(msg).unwrap(), want, "{msg:?}");
    }
}

#[test]
fn python3_bytes_names_below_protocol_3_are_refused() {
    // pickle.dumps([(b'x', (1, 2))], protocol=2): bytes go through _codecs.encode,
    // which carbon's SafeUnpickler refuses as well.
    let msg = b"\x80\x02]q\x00c_codecs\nencode\nq\x01X\x01\x00\x00\x00xq\x02X\x06\x00\x00\x00latin1q\x03\x86q\x04Rq\x05K\x01K\x02\x86q\x06\x86q\x07a.";
    let err = decode(msg).unwrap_err();
    assert_eq!(
        err,
        PickleError::Forbidden {
            opcode: "GLOBAL",
            offset: 5,
            target: "_codecs.encode".into()
        }
    );
    assert!(err.to_string().contains("_codecs.encode"), "{err}");
    // protocol 3 writes SHORT_BINBYTES: a bytes name is fine
    let msg = b"\x80\x03]q\x00C\x01xq\x01K\x01K\x02\x86q\x02\x86q\x03a.";
    assert_eq!(decode(msg).unwrap(), vec![ok("x", 1, 2.0)]);
}

#[test]
fn brubeck_style_protocol_1_without_proto() {
    // brubeck's carbon backend: `]q\0(` then per point
    // `(U<len><name>q<n>(J<ts>G<value>tq<n>tq<n>` then `e.`; its BINPUT counter is
    // a byte, so indices wrap and overwrite: still valid.
    let mut a = Asm::default().op(b"]q\x00(");
    let mut idx: u8 = 1;
    for i in 0..150u32 {
        let name = format!("stats.gauges.g{i}");
        a = a.op(b"(U").op(&[name.len() as u8]).op(name.as_bytes());
        a = a.op(&[b'q', idx]);
        idx = idx.wrapping_add(1);
        a = a
            .op(b"(")
            .int(1_700_000_000 + i as i32)
            .float(f64::from(i) / 4.0)
            .op(b"t");
        a = a.op(&[b'q', idx]);
        idx = idx.wrapping_add(1);
        a = a.op(b"t").op(&[b'q', idx]);
        idx = idx.wrapping_add(1);
    }
    let msg = a.op(b"e.").0;
    let got = decode(&msg).unwrap();
    assert_eq!(got.len(), 150);
    for (i, p) in got.iter().enumerate() {
        assert_eq!(
            *p,
            ok(
                &format!("stats.gauges.g{i}"),
                1_700_000_000 + i as i64,
                i as f64 / 4.0
            )
        );
    }
}

#[test]
fn carbon_rules_per_element() {
    let msg = Asm::default()
        .op(b"\x80\x02](")
        .point("good", 100, 1.0)
        .point("now", -1, 2.0)
        .point("nan", 100, f64::NAN)
        .point("a..b", 100, 3.0)
        .point("", 100, 4.0)
        .point("ctl\x01", 100, 5.0)
        // a float -1.5 timestamp truncates to -1: now, as carbon's int() == -1
        .str("neg")
        .float(-1.5)
        .float(6.0)
        .op(b"\x86\x86")
        // string numbers go through float()
        .str("strs")
        .str(" 1_7e2 ")
        .str("\u{0661}.5")
        .op(b"\x86\x86")
        .str("badstr")
        .int(1)
        .str("x1")
        .op(b"\x86\x86")
        .str("none")
        .op(b"N")
        .float(1.0)
        .op(b"\x86\x86")
        .str("inf.ts")
        .float(f64::INFINITY)
        .float(1.0)
        .op(b"\x86\x86")
        .str("big.ts")
        .float(1e30)
        .float(1.0)
        .op(b"\x86\x86")
        .str("triple")
        .int(1)
        .float(1.0)
        .op(b"K\x01\x87\x86")
        .int(5)
        .int(1)
        .float(2.0)
        .op(b"\x86\x86") // name is an int
        .op(b"N") // not a pair at all
        .op(b"e.")
        .0;
    assert_eq!(
        decode(&msg).unwrap(),
        vec![
            ok("good", 100, 1.0),
            ok("now", NOW, 2.0),
            Err(Reason::NanValue),
            ok("a.b", 100, 3.0),
            Err(Reason::EmptyName),
            Err(Reason::ControlChar),
            ok("neg", NOW, 6.0),
            ok("strs", 1700, 1.5),
            Err(Reason::InvalidValue),
            Err(Reason::InvalidTimestamp),
            Err(Reason::InvalidTimestamp),
            Err(Reason::InvalidTimestamp),
            Err(Reason::InvalidElement),
            Err(Reason::InvalidElement),
            Err(Reason::InvalidElement),
        ]
    );
}

#[test]
fn ints_too_large_for_a_float_refuse_only_their_element() {
    // LONG1 of 2**1024 as the value, then a good element
    let mut huge = vec![0u8; 128];
    huge.push(1);
    let msg = Asm::default()
        .op(b"](")
        .str("huge")
        .int(1)
        .op(&[0x8a, 129])
        .op(&huge)
        .op(b"\x86\x86")
        .point("fine", 1, 1.0)
        .op(b"e.")
        .0;
    assert_eq!(
        decode(&msg).unwrap(),
        vec![Err(Reason::InvalidValue), ok("fine", 1, 1.0)]
    );
}

#[test]
fn a_tuple_at_the_top_and_lists_for_pairs() {
    // (['a', ['1', 2.5]],): any sequences will do, as in carbon
    let msg = Asm::default()
        .op(b"]")
        .str("a")
        .op(b"a]")
        .str("1")
        .op(b"a")
        .float(2.5)
        .op(b"aa\x85.")
        .0;
    assert_eq!(decode(&msg).unwrap(), vec![ok("a", 1, 2.5)]);
    let msg = b"\x80\x02)."; // an empty tuple: no points, not an error
    assert_eq!(decode(msg).unwrap(), vec![]);
}

#[test]
fn python2_protocol_0_strings() {
    // What Python 2's pickle.dumps([('caf\xc3\xa9.x', (1, 2L)), (u'\u20ac', (3, 4))], 0)
    // writes; CPython 3.11 loads it (encoding='utf-8', as carbon) to
    // [('café.x', (1, 2)), ('€', (3, 4))].
    let msg =
        b"(lp0\n(S'caf\\xc3\\xa9.x'\np1\n(I1\nL2L\ntp2\ntp3\na(V\\u20ac\np4\n(I3\nI4\ntp5\ntp6\na.";
    assert_eq!(
        decode(msg).unwrap(),
        vec![ok("caf\u{e9}.x", 1, 2.0), ok("\u{20ac}", 3, 4.0)]
    );
    // Python 2 protocol 2 str names are SHORT_BINSTRING / BINSTRING
    let msg = b"\x80\x02]q\x00(U\x03a.bq\x01K\x01K\x02\x86q\x02\x86q\x03T\x01\x00\x00\x00cK\x03G@\x10\x00\x00\x00\x00\x00\x00\x86\x86e.";
    assert_eq!(
        decode(msg).unwrap(),
        vec![ok("a.b", 1, 2.0), ok("c", 3, 4.0)]
    );
}

#[test]
fn memo_is_shared_like_python() {
    // A list memoized, popped, fetched back and appended to through the fetched
    // reference: the message is that same list, holding the point (as in Python).
    let msg = Asm::default()
        .op(b"]q\x000h\x00")
        .point("x", 1, 2.0)
        .op(b"a0h\x00.")
        .0;
    assert_eq!(decode(&msg).unwrap(), vec![ok("x", 1, 2.0)]);
    // MEMOIZE counts set entries, not the highest index
    let msg = b"\x80\x04]\x94(\x8c\x01a\x94q\x05K\x01K\x02\x86\x94\x86\x94h\x02e.";
    // entries: 0=list, 1='a', 5='a', then MEMOIZE uses len(memo)=3 for the inner tuple
    // and 4 for the pair; CPython: "Memo value not found at index 2"
    let mut u = Unpickler::new(PickleLimits::default());
    assert!(matches!(
        decode_with(&mut u, msg),
        Err(PickleError::MemoMissing { index: 2, .. })
    ));
    let msg = b"\x80\x04]\x94(\x8c\x01a\x94q\x05K\x01K\x02\x86\x94\x86\x94h\x04e.";
    assert_eq!(
        decode_with(&mut u, msg).unwrap(),
        vec![ok("a", 1, 2.0), ok("a", 1, 2.0)]
    );
}

#[test]
fn forbidden_opcodes_are_refused_by_name() {
    let cases: &[(&[u8], &str)] = &[
        (b"cos\nsystem\n(S'echo pwned'\ntR.", "GLOBAL"),
        (b"\x80\x04\x8c\x02os\x8c\x06system\x93.", "STACK_GLOBAL"),
        (b"(ios\nsystem\nS'x'\n.", "INST"),
        (b"N)R.", "REDUCE"),
        (b"NNb.", "BUILD"),
        (b"(No.", "OBJ"),
        (b"N)\x81.", "NEWOBJ"),
        (b"N)N\x92.", "NEWOBJ_EX"),
        (b"\x82\x01.", "EXT1"),
        (b"\x83\x01\x00.", "EXT2"),
        (b"\x84\x01\x00\x00\x00.", "EXT4"),
        (b"Pabc\n.", "PERSID"),
        (b"NQ.", "BINPERSID"),
        (b"\x97.", "NEXT_BUFFER"),
        (b"N\x98.", "READONLY_BUFFER"),
    ];
    for (msg, name) in cases {
        match decode(msg) {
            Err(PickleError::Forbidden { opcode, .. }) => assert_eq!(opcode, *name),
            other => panic!("{name}: {other:?}"),
        }
    }
    match decode(b"cos\nsystem\n.") {
        Err(e) => assert_eq!(
            e.to_string(),
            "refused pickle opcode GLOBAL at offset 0 (os.system): it builds or calls arbitrary objects"
        ),
        Ok(_) => panic!("GLOBAL accepted"),
    }
}

#[test]
fn dicts_and_sets_are_data_that_refuses_its_element() {
    // [('a', {1: 2}), ('s', (1, frozenset())), ('b', (1, 2.0))], items dropped
    let msg = Asm::default()
        .op(b"](")
        .str("a")
        .op(b"}K\x01K\x02s(K\x03K\x04u\x86")
        .str("s")
        .int(1)
        .op(b"(K\x01\x91\x86\x86")
        .str("e")
        .int(1)
        .op(b"\x8f(K\x01\x90\x86\x86")
        .point("b", 1, 2.0)
        .op(b"e.")
        .0;
    assert_eq!(
        decode(&msg).unwrap(),
        vec![
            Err(Reason::InvalidElement),
            Err(Reason::InvalidValue),
            Err(Reason::InvalidValue),
            ok("b", 1, 2.0)
        ]
    );
    // a dict at the top, items onto the wrong container, odd dict items
    assert_eq!(decode(b"}."), Err(PickleError::NotAList("a dict")));
    for msg in [
        &b"]NNs."[..],
        b"}(N\x90.",
        b"(N\x8f(N\x90d.",
        b"(Nd.",
        b"}(Nu.",
    ] {
        assert!(decode(msg).is_err(), "{msg:?}");
    }
}

#[test]
fn malformed_and_truncated_messages() {
    let cases: &[&[u8]] = &[
        b"",
        b"]",
        b"](",
        b"\x80\x02]q\x00(X\x03\x00\x00\x00a.",     // string cut
        b"\x80\x02X\xff\xff\xff\x00",              // 16 MiB string announced, not there
        b"\x80\x06].",                             // protocol 6
        b"\x95\xff\x00\x00\x00\x00\x00\x00\x00].", // frame longer than the message
        b"Iabc\n.",
        b"I1", // no newline
        b"F1.5e\n.",
        b"F1e400\n.",  // overflows: CPython refuses too
        b"Sabc\n.",    // unquoted
        b"S'abc\"\n.", // mismatched quotes
        b"S'\\x4'\n.",
        b"V\\u12\n.",
        b"\x8a\x05\x01.",         // LONG1 cut
        b"\x8b\xff\xff\xff\xff.", // LONG4 negative length
        b"T\xff\xff\xff\xff.",    // BINSTRING negative length
        b"t.",                    // TUPLE without MARK
        b"e.",                    // APPENDS without MARK
        b"\x86.",                 // TUPLE2 on an empty stack
        b"(N\x86.",               // TUPLE2 may not reach below the MARK
        b"].1",                   // no STOP value... well: `]` then STOP is fine; see below
        b".",                     // STOP on an empty stack
        b"Na.",                   // APPEND with nothing to append to
        b")Na.",                  // APPEND onto a tuple
        b"K\x01.",                // an int, not a list
        b"h\x00.",                // memo never set
        b"g12\n.",
        b"\xff.", // unknown opcode
        b"\x00.",
    ];
    for msg in cases {
        if *msg == b"].1" {
            // trailing bytes after STOP are ignored, as pickle.loads does
            assert_eq!(decode(msg).unwrap(), vec![]);
            continue;
        }
        assert!(decode(msg).is_err(), "{msg:?} accepted");
    }
    assert!(matches!(
        decode(b")Na."),
        Err(PickleError::NotAppendable {
            target: "a tuple",
            ..
        })
    ));
    assert_eq!(
        decode(b"\xff."),
        Err(PickleError::UnknownOpcode {
            opcode: 0xff,
            offset: 0
        })
    );
    assert_eq!(decode(b"K\x01."), Err(PickleError::NotAList("an int")));
}

#[test]
fn limits_hold() {
    let limits = PickleLimits {
        max_values: 1000,
        max_marks: 8,
        max_memo: 100,
        max_string_bytes: 64,
    };
    let mut u = Unpickler::new(limits.clone());
    // deep nesting of marks
    let deep = [b"(".repeat(100), b".".to_vec()].concat();
    assert!(matches!(
        u.load(&deep),
        Err(PickleError::TooDeep { limit: 8, .. })
    ));
    // deep nesting of tuples without marks is fine: nothing recurses
    let nested = [
        b"]".to_vec(),
        b"N".to_vec(),
        b"\x85".repeat(900),
        b".".to_vec(),
    ]
    .concat();
    assert_eq!(u.load(&nested), Ok(1));
    // too many values
    let many = [b"]".to_vec(), b"N".repeat(2000), b".".to_vec()].concat();
    assert!(matches!(
        u.load(&many),
        Err(PickleError::TooManyValues { limit: 1000, .. })
    ));
    // memo abuse: a huge index is refused before any table is sized for it
    assert!(matches!(
        u.load(b"]r\xff\xff\xff\xff."),
        Err(PickleError::MemoLimit {
            index: 4_294_967_295,
            ..
        })
    ));
    assert!(matches!(
        u.load(b"]p99999999999\n."),
        Err(PickleError::MemoLimit { .. })
    ));
    // the billion laughs: each level appends the previous list twice; values are
    // references, so this costs a few hundred values, not 2^n copies
    let mut laughs = b"]q\x00".to_vec();
    for i in 0..60u8 {
        laughs.extend_from_slice(&[b']', b'(', b'h', i, b'h', i, b'e', b'q', i + 1]);
    }
    laughs.push(b'.');
    let mut big = Unpickler::new(PickleLimits::default());
    assert_eq!(big.load(&laughs), Ok(2));
    // a string over the limit
    let long = [
        b"X".to_vec(),
        65u32.to_le_bytes().to_vec(),
        vec![b'a'; 65],
        b".".to_vec(),
    ]
    .concat();
    assert!(matches!(
        u.load(&long),
        Err(PickleError::TooLong {
            len: 65,
            limit: 64,
            ..
        })
    ));
    let line = [b"V".to_vec(), vec![b'a'; 100], b"\n.".to_vec()].concat();
    assert!(matches!(u.load(&line), Err(PickleError::TooLong { .. })));
    // and the unpickler still works after all that
    let good = Asm::default().op(b"](").point("a", 1, 2.0).op(b"e.").0;
    assert_eq!(decode_with(&mut u, &good).unwrap(), vec![ok("a", 1, 2.0)]);
}

#[test]
fn a_list_holding_itself_is_harmless() {
    // l = []; l.append(l); pickle.dumps([l, ('a', (1, 2))], 2)
    let msg = Asm::default()
        .op(b"](]q\x01h\x01a")
        .point("a", 1, 2.0)
        .op(b"e.")
        .0;
    assert_eq!(
        decode(&msg).unwrap(),
        vec![Err(Reason::InvalidElement), ok("a", 1, 2.0)]
    );
}

#[test]
fn decode_into_counts() {
    let msg = Asm::default()
        .op(b"](")
        .point("a..b", 1, 2.0)
        .point("c", 1, f64::NAN)
        .point("d", 2, 3.0)
        .op(b"e.")
        .0;
    let mut u = Unpickler::new(PickleLimits::default());
    let mut batch = Batch::new();
    let mut counts = LocalCounts::default();
    u.decode_into(&msg, NOW, &mut batch, &mut counts).unwrap();
    assert_eq!(batch.len(), 2);
    assert_eq!(counts.received, 3);
    assert_eq!(counts.renamed, 1);
    assert_eq!(counts.rejected(Reason::NanValue), 1);
    let err = u.decode_into(b"\x80\x02cos\nsystem\n.", NOW, &mut batch, &mut counts);
    assert!(err.is_err());
    assert_eq!(batch.len(), 2);
    assert_eq!(counts.received, 3);
}

#[test]
fn element_errors_say_what_is_wrong() {
    let msg = Asm::default()
        .op(b"](")
        .str("a")
        .int(1)
        .float(1.0)
        .op(b"K\x01\x87\x86")
        .op(b"N")
        .str("b")
        .op(b"N")
        .float(1.0)
        .op(b"\x86\x86")
        .op(b"e.")
        .0;
    let mut u = Unpickler::new(PickleLimits::default());
    u.load(&msg).unwrap();
    let errs: Vec<String> = u
        .points(&msg, NOW)
        .map(|r| r.unwrap_err().to_string())
        .collect();
    assert_eq!(
        errs,
        vec![
            "point is a tuple of 3 items, not a (timestamp, value) pair",
            "element is None, not a (name, (timestamp, value)) pair",
            "timestamp is None, not a number",
        ]
    );
}
