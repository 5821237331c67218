"""Writes carbon_lines.txt: random carbon plaintext lines and what carbon 1.1.10 makes
of each, computed with carbon's own expressions (protocols.py, lineReceived and
metricReceived) on CPython 3.11. Run with graphite's interpreter:

    /tmp/gw/venv/bin/python gen_carbon_lines.py > carbon_lines.txt

Each output line: the input line in hex, a tab, then one of
    ok <name hex> <float(value) as IEEE-754 bits, hex> <int(timestamp), or "now">
    invalid_utf8 | blank | invalid_line | invalid_timestamp | invalid_value | nan_value
    | bad_timestamp   (float parsed, but int() raises: inf or nan)
"""
import random
import struct

rng = random.Random(20240601)

SPACES = ["\t", "\x0b", "\x0c", "\r", "\x1c", "\x1d", "\x1e", "\x1f", " ",
          "\x85", "\xa0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028", "\u2029",
          "\u202f", "\u205f", "\u3000"]
DIGITS = "0123456789"
UDIGITS = ["\u0661", "\u0966", "\uff15", "\U0001d7d8", "\u0e53"]
NOT_DIGITS = ["\xb2", "\u2167", "\uff0e", "x", ",", "\x00"]
WORDS = ["inf", "Inf", "INFINITY", "infinity", "nan", "NaN", "-nan", "+inf", "-Infinity",
         "infinit", "nanx", "in_f", "e", "E", ".", "_", "+", "-"]


def digits(n):
    s = ""
    for i in range(n):
        r = rng.random()
        if r < 0.05:
            s += rng.choice(UDIGITS)
        elif r < 0.12 and s:
            s += "_"
        s += rng.choice(DIGITS)
    if rng.random() < 0.03:
        s += "_"
    return s


def number():
    r = rng.random()
    if r < 0.08:
        return rng.choice(WORDS)
    s = rng.choice(["", "", "", "-", "+"])
    shape = rng.randrange(6)
    if shape == 0:
        s += digits(rng.randrange(1, 12))
    elif shape == 1:
        s += digits(rng.randrange(1, 8)) + "." + digits(rng.randrange(0, 8))
    elif shape == 2:
        s += "." + digits(rng.randrange(1, 20))
    elif shape == 3:
        s += digits(rng.randrange(1, 25)) + rng.choice("eE") + rng.choice(["", "+", "-"]) + digits(rng.randrange(1, 4))
    elif shape == 4:
        s += digits(rng.randrange(1, 3)) + "." + digits(rng.randrange(1, 30)) + "e" + rng.choice(["-3", "308", "-320", "400", "22"])
    else:
        s += digits(rng.randrange(16, 22))
    if rng.random() < 0.05:
        i = rng.randrange(len(s) + 1)
        s = s[:i] + rng.choice(NOT_DIGITS + ["_", ".", "e"]) + s[i:]
    return s


def timestamp():
    r = rng.random()
    if r < 0.1:
        return rng.choice(["-1", "-1.5", "-1.999", "-2", "-0.5", "-1e0", "-1_0e-1"])
    if r < 0.5:
        return str(rng.randrange(0, 2_000_000_000)) + rng.choice(["", "", ".0", ".999", "e0"])
    return number()


def name():
    nodes = []
    for _ in range(rng.randrange(1, 5)):
        nodes.append("".join(rng.choice("abcxyz019_-") for _ in range(rng.randrange(0, 6))))
    n = ".".join(nodes)
    if rng.random() < 0.05:
        n += rng.choice(["\u00e9", "\u2030", "\x01", "\x7f", ";tag=v"])
    return n or "a"


def space():
    return "".join(rng.choice(SPACES) if rng.random() < 0.3 else " " for _ in range(rng.randrange(1, 3)))


def line():
    fields = [name(), number(), timestamp()]
    r = rng.random()
    if r < 0.05:
        fields.pop(rng.randrange(3))
    elif r < 0.1:
        fields.append(number())
    elif r < 0.12:
        fields = []
    s = space() if rng.random() < 0.2 else ""
    s += space().join(fields)
    if rng.random() < 0.2:
        s += space()
    b = s.encode("utf-8")
    if rng.random() < 0.03:
        i = rng.randrange(len(b) + 1)
        b = b[:i] + rng.choice([b"\xff", b"\xc2", b"\x80", b"\xe2\x80"]) + b[i:]
    return b


def carbon(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid_utf8"
    parts = text.strip().split()
    if not parts:
        return "blank"
    if len(parts) != 3:
        return "invalid_line"
    metric, value, ts = parts
    try:
        tsf = float(ts)
    except ValueError:
        return "invalid_timestamp"
    try:
        v = float(value)
    except ValueError:
        return "invalid_value"
    if v != v:
        return "nan_value"
    try:
        t = int(tsf)
    except (OverflowError, ValueError):
        return "bad_timestamp"
    t = "now" if t == -1 else str(t)
    bits = struct.pack(">d", v).hex()
    return "ok %s %s %s" % (metric.encode("utf-8").hex(), bits, t)


seen = set()
while len(seen) < 4000:
    raw = line()
    if raw in seen or b"\n" in raw:
        continue
    seen.add(raw)
    print("%s\t%s" % (raw.hex(), carbon(raw)))
