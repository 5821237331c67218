#!/usr/bin/env python3
"""Writes tests/data/pickles/: carbon pickle messages made by the real CPython pickler
(protocols 0 to 5, as Python 3 clients write them; protocols 0 to 2 as Python 2 clients
wrote them, through a pickler that saves names the way Python 2's `save_string` did;
brubeck's hand-rolled protocol 1 stream), hostile messages, and expected.json: what
each message must decode to.

The expected points come from this interpreter: each message is loaded by CPython's
own unpickler, restricted as carbon 1.1.10's SafeUnpickler is (no global at all under
Python 3: carbon's two allowed names, copy_reg and __builtin__, do not import there),
with encoding='utf-8' as carbon passes; then every element goes through carbon's
`stringReceived` / `metricReceived` steps (float(), the NaN filter, -1 means now,
int()), plus sumi's documented choices where carbon lets an exception escape (a bytes
name is read as UTF-8, a non-string name or an overflowing number refuses its element)
and its name normalisation (empty nodes dropped, control characters refused).

Run from the repository root (any CPython 3.8+):
    /tmp/gw/venv/bin/python crates/ingest/tests/data/gen_pickles.py
"""

import io
import json
import math
import os
import pickle
import struct
import sys

NOW = 1_700_000_500
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pickles")
MAX_NAME_BYTES = 4096


class CarbonUnpickler(pickle.Unpickler):
    """carbon.util.SafeUnpickler under Python 3: every find_class fails."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("Attempting to unpickle unsafe module %s" % module)


def carbon_loads(data):
    return CarbonUnpickler(io.BytesIO(data), encoding="utf-8").load()


class Py2Pickler(pickle._Pickler):
    """Saves bytes as Python 2 saved its str: STRING with repr() in protocol 0,
    SHORT_BINSTRING / BINSTRING in protocols 1 and 2 (what old carbon clients send)."""

    def save_bytes(self, obj):
        if self.bin:
            n = len(obj)
            if n < 256:
                self.write(pickle.SHORT_BINSTRING + bytes([n]) + obj)
            else:
                self.write(pickle.BINSTRING + struct.pack("<i", n) + obj)
        else:
            # Python 2's repr of a str is Python 3's repr of bytes without the b.
            self.write(pickle.STRING + repr(obj)[1:].encode("ascii") + b"\n")
        self.memoize(obj)

    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[bytes] = save_bytes


def py2_dumps(obj, protocol):
    buf = io.BytesIO()
    Py2Pickler(buf, protocol).dump(obj)
    return buf.getvalue()


def bits(f):
    return struct.unpack("<Q", struct.pack("<d", f))[0]


def skip(reason):
    return ["skip", reason]


def element(raw):
    """One element as sumi must take it: ["ok", name, ts, value bits] or ["skip", reason]."""
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        return skip("invalid_element")
    metric, point = raw
    if not isinstance(point, (list, tuple)) or len(point) != 2:
        return skip("invalid_element")
    t, v = point
    try:
        t = float(t)
    except (ValueError, TypeError, OverflowError):
        return skip("invalid_timestamp")
    try:
        v = float(v)
    except (ValueError, TypeError, OverflowError):
        return skip("invalid_value")
    if v != v:
        return skip("nan_value")
    if math.isinf(t) or math.isnan(t):
        return skip("invalid_timestamp")
    ts = int(t)
    if ts == -1:
        ts = NOW
    if not -(2**63) <= ts < 2**63:
        return skip("invalid_timestamp")
    if isinstance(metric, (bytes, bytearray)):
        raw_name = bytes(metric)
    elif isinstance(metric, str):
        try:
            raw_name = metric.encode("utf-8")
        except UnicodeEncodeError:
            return skip("invalid_utf8")
    else:
        return skip("invalid_element")
    if len(raw_name) > MAX_NAME_BYTES:
        return skip("name_too_long")
    if any(b < 0x20 or b == 0x7F for b in raw_name):
        return skip("control_char")
    try:
        name = raw_name.decode("utf-8")
    except UnicodeDecodeError:
        return skip("invalid_utf8")
    path, sep, tags = name.partition(";")
    path = ".".join(n for n in path.split(".") if n)
    if not path:
        return skip("empty_name")
    return ["ok", path + sep + tags, ts, bits(v)]


def expect(data):
    try:
        msg = carbon_loads(data)
    except Exception as e:  # carbon logs and ignores the whole message
        return {"error": type(e).__name__}
    if not isinstance(msg, (list, tuple)):
        return {"error": "not a list"}
    return {"points": [element(raw) for raw in msg]}


HOSTS = ["web%02d" % i for i in range(1, 11)]
METRICS = ["cpu.user", "cpu.system", "loadavg.1min", "memory.used", "disk.sda.write_bytes"]


def relay_points(n=200):
    """What carbon-relay forwards: (str, (int ts, float value)) tuples."""
    return [
        ("servers.%s.%s" % (HOSTS[i % 10], METRICS[i % 5]), (1_700_000_000 + i * 10, i * 1.25 - 7.5))
        for i in range(n)
    ]


def mixed_numbers(with_bytes):
    pts = [
        ("int.value", (1_700_000_000, 42)),
        ("long.value", (1_700_000_000, 2**40)),
        ("huge.value", (1_700_000_000, 2**70)),
        ("neg.huge.value", (1_700_000_000, -(2**80) - 12345)),
        ("negative", (1_700_000_000, -3)),
        ("bool.value", (1_700_000_000, True)),
        ("float.ts", (1_700_000_000.9, 1.0)),
        ("neg.float.ts", (-1.5, 2.0)),
        ("now.ts", (-1, 3.0)),
        ("pos.inf", (1_700_000_000, float("inf"))),
        ("neg.inf", (1_700_000_000, float("-inf"))),
        ("neg.zero", (1_700_000_000, -0.0)),
        ("tiny", (1_700_000_000, 5e-324)),
        ("max", (1_700_000_000, sys.float_info.max)),
        ("str.value", (1_700_000_000, "1.5")),
        ("str.ts", ("1700000001", " 2_5 ")),
        ("unicode.digits", (1_700_000_000, "\u0661\u0662")),
        ("before.1970", (-86400, 7.0)),
        ("far.future", (4_102_444_800, 8.0)),
        ("big.ts", (2**62, 9.0)),
    ]
    if with_bytes:
        pts.append(("bytes.value", (1_700_000_000, b"3.25")))
    return pts


def unicode_names():
    return [
        ("caf\u00e9.latency", (1_700_000_000, 1.0)),
        ("\u6e29\u5ea6.cpu", (1_700_000_000, 2.0)),
        ("emoji.\U0001f600", (1_700_000_000, 3.0)),
        ("with space.and\ttab", (1_700_000_000, 4.0)),
        ("back\\slash.new\nline", (1_700_000_000, 5.0)),
        ("a..b.", (1_700_000_000, 6.0)),
        ("tagged;dc=eu;host=web01", (1_700_000_000, 7.0)),
        ("x" * 300, (1_700_000_000, 8.0)),
    ]


def bad_elements():
    return [
        ("good.one", (1, 1.0)),
        None,
        ("only.name",),
        ("short.point", (1,)),
        ("long.point", (1, 2, 3)),
        ("none.ts", (None, 1.0)),
        ("str.value", (1, "abc")),
        ("list.value", (1, [1])),
        (5, (1, 2.0)),
        ("nan", (1, float("nan"))),
        ("inf.ts", (float("inf"), 1.0)),
        ("nan.ts", (float("nan"), 1.0)),
        ("overflow", (1, 2**1024)),
        ("", (1, 1.0)),
        ("...", (1, 1.0)),
        ("ctrl\x01", (1, 1.0)),
        ("long." + "y" * 4100, (1, 1.0)),
        ("good.two", (2, 2.0)),
    ]


def shared_objects():
    pt = ("shared.point", (1_700_000_000, 1.0))
    name = "shared.name"
    return [pt, pt, (name, (1, 2.0)), (name, (3, 4.0)), pt]


def brubeck(points):
    """brubeck's carbon backend (src/backends/carbon.c): protocol 1 opcodes without
    PROTO, SHORT_BINSTRING names, BININT timestamps, BINFLOAT values, a one-byte BINPUT
    counter that wraps."""
    out = bytearray(b"]q\x00(")
    pt = 1
    for name, ts, value in points:
        key = name.encode()
        out += b"(U" + bytes([len(key)]) + key + b"q" + bytes([pt & 0xFF])
        pt += 1
        out += b"(J" + struct.pack("<i", ts) + b"G" + struct.pack(">d", value)
        out += b"tq" + bytes([pt & 0xFF])
        pt += 1
        out += b"tq" + bytes([pt & 0xFF])
        pt += 1
    out += b"e."
    return bytes(out)


class Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    files = {}

    def write(name, data):
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(data)
        files[name] = expect(data)

    for p in range(0, pickle.HIGHEST_PROTOCOL + 1):
        write("relay.p%d.pickle" % p, pickle.dumps(relay_points(), protocol=p))
        write("numbers.p%d.pickle" % p, pickle.dumps(mixed_numbers(p >= 3), protocol=p))
        write("unicode.p%d.pickle" % p, pickle.dumps(unicode_names(), protocol=p))
        write("lists.p%d.pickle" % p, pickle.dumps([list(e[:1]) + [list(e[1])] for e in relay_points(20)], protocol=p))
        write("bad.p%d.pickle" % p, pickle.dumps(bad_elements(), protocol=p))
        write("shared.p%d.pickle" % p, pickle.dumps(shared_objects(), protocol=p))
        write("tuple.p%d.pickle" % p, pickle.dumps(tuple(relay_points(3)), protocol=p))
        if p >= 3:
            names = [(b"bytes.name", (1, 2.0))]
            if p >= 5:  # below 5, a bytearray is pickled through a global
                names.append((bytearray(b"ba.name"), (3, 4.0)))
            write("bytes.p%d.pickle" % p, pickle.dumps(names, protocol=p))
    # Python 2 clients: str names as STRING / SHORT_BINSTRING / BINSTRING
    py2 = [(n.encode("utf-8"), pt) for n, pt in relay_points(50) + unicode_names()]
    for p in range(0, 3):
        write("py2.p%d.pickle" % p, py2_dumps(py2, p))
    # carbon-relay batches: more than 1000 elements, so the pickler writes several APPENDS
    write("relay.big.p2.pickle", pickle.dumps(relay_points(2500), protocol=2))
    write("brubeck.pickle", brubeck([("stats.gauges.g%d" % i, 1_700_000_000 + i, i / 4) for i in range(300)]))
    # refused whole
    write("evil.global.pickle", pickle.dumps([Evil()], protocol=2))
    write("evil.global.p0.pickle", pickle.dumps([Evil()], protocol=0))
    write("evil.stack_global.pickle", pickle.dumps([Evil()], protocol=4))
    write("bytes.p2.pickle", pickle.dumps([(b"bytes.name", (1, 2.0))], protocol=2))
    write("dict.pickle", pickle.dumps({"a.b": (1, 2.0)}, protocol=2))
    write("set.pickle", pickle.dumps([("a", {1, 2})], protocol=4))
    write("not.a.list.pickle", pickle.dumps(42, protocol=2))
    write("truncated.pickle", pickle.dumps(relay_points(5), protocol=2)[:-7])

    with open(os.path.join(OUT, "expected.json"), "w") as fh:
        json.dump(files, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print("wrote %d pickles to %s" % (len(files), OUT))


if __name__ == "__main__":
    main()
