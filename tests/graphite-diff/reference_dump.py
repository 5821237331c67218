"""Reference answers from CPython and graphite-web 1.1.10, for sumi-query's tests that
compare against them line by line (`cargo test -p sumi-query`, module
`reference_tests`).

    <venv>/bin/python tests/graphite-diff/reference_dump.py repr|grammar|attime

Run it with the python of the venv `setup.sh` builds (graphite-web, pyparsing, pytz and
Django pinned in requirements.txt). It writes one case a line to stdout, tab-separated,
inputs in hex where they may hold tabs or newlines:

    repr      bits-of-the-float-in-hex  repr(x)
    grammar   hex(utf-8 target)         the tree graphite-web evaluates, or ERR
    attime    hex(utf-8 expr)  now  tz  epoch seconds, or ERR

The inputs are generated from a fixed seed, so every run writes the same file. The
grammar tree is written in the compact JSON form sumi's grammar tests use
(`crates/query/src/grammar/tests.rs`, `dump`): `["path",p]`,
`["call",name,[args],[[k,v]]]`, `["template",inner,[args],[[k,v]]]`, `["int","1"]`,
`["float",repr]`, `["str",s]`, `["bool",b]`, `["none"]`, `["inf"]`. It is the tree as
graphite-web's evaluator walks it: piped calls become nested calls with the piped
expression as first argument.
A target pyparsing refuses is `ERR`; one too deep for Python's recursion is `DEEP`;
any other exception is `EXC <type>`.
"""

import calendar
import json
import random
import struct
import sys
import warnings

SEED = 20241109


def out(*fields):
    sys.stdout.write("\t".join(fields) + "\n")


def hexstr(s):
    return s.encode("utf-8").hex()


# ---- repr(float) ----------------------------------------------------------------------


def dump_repr():
    rng = random.Random(SEED)
    values = []
    for e in range(-330, 310):
        for m in (1.0, -1.5, 9.999999999999998, 1.2345678901234567, 5.0, 0.1):
            try:
                values.append(m * 10.0**e)
            except OverflowError:
                pass
    values += [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    values += [float("nan"), float("inf"), float("-inf")]
    # whole numbers and money-like values around the fixed/exponent boundaries
    for _ in range(5000):
        values.append(rng.randrange(10**6) * 10.0 ** rng.randrange(-20, 21))
        values.append(rng.randrange(-(10**17), 10**17) / 100.0)
    bits = [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]
    # and any bit pattern
    bits += [rng.getrandbits(64) for _ in range(20000)]
    for b in bits:
        (x,) = struct.unpack("<d", struct.pack("<Q", b))
        out("%016x" % b, repr(x))


# ---- graphite-web's target grammar --------------------------------------------------


def grammar_targets():
    fixed = [
        "a.b",
        "sumSeries(a.b, 1, 2.5, 1e3, \"x\", true, None, inf, k=1)",
        "a.b | f(1) | g()",
        "f(x=1)",
        "f(a, k=1, k=2)",
        "f(a, k=1, j=2, k=3)",
        "f(99999999999999999999)",
        "f(-0)",
        "f(-0.0)",
        "f(1e400)",
        "f(-1e400)",
        "f(1E-3)",
        "f(1.5e-7)",
        "f(0.1e1)",
        "f('a\\'b')",
        "f(\"a\\\"b\")",
        "f('')",
        "template(a.$1, 'x')",
        "template(a.$1, x='y', 'z')",
        "template(f(a.$1), 1)",
        "template(a.$1, b.c)",
        "f(a)|template(b)",
        "seriesByTag('name=a', 'b=c')",
        "a\\(b\\)",
        "f(a\\=b)",
        "f(a, -1\\.5E-3)",
        "a.{b,c}.d",
        "a[bc]*.?",
        "f (a)",
        " a.b ",
        "\ta.b",
        "f(a,\tb)",
        "f(TRUE, FALSE, NONE, INF, True, none, Inf)",
        "f(truex, nonex, infx)",
        "f(a.true, true.a)",
        "f(1 )",
        "f( 1)",
        "f(1.)",
        "f(.5)",
        "f(-.5)",
        "f(a,)",
        "f(,a)",
        "f()",
        "f(g())",
        "a | f",
        "a|f()|",
        "a |  f() | g(h(b) | i())",
    ]
    pieces = [
        "a", "b.c", "f(", "sumSeries(", "template(", ")", ",", ", ", "|", " | ", "=",
        "x=", ".", "{a,b}", "{", "}", "a.b", "web*", "$1", "1", "-2.5", "1e5", "E-3",
        "true", "None", "inf", "'s'", "\"d\"", "'", "\\", "\\(", "\t", "\n", " ",
        "-", "0", "9", "_", "[", "]", "*", "?", "e",
    ]
    ascii_printable = [chr(c) for c in range(32, 127)]
    rng = random.Random(SEED)
    targets = list(fixed)
    for _ in range(4000):
        n = rng.randrange(1, 12)
        parts = []
        for _ in range(n):
            if rng.random() < 0.15:
                parts.append("".join(rng.choice(ascii_printable) for _ in range(rng.randrange(1, 4))))
            else:
                parts.append(rng.choice(pieces))
        targets.append("".join(parts))
    # graphite-web skips blank targets before parsing them; so does sumi
    return [t for t in targets if t.strip()]


def literal(tokens):
    """A scalar argument as the evaluator reads it (evaluateScalarTokens)."""
    if tokens.number:
        number = tokens.number
        if number.integer:
            return ["int", str(int(number.integer))]
        if number.float:
            return ["float", repr(float(number.float))]
        if number.scientific:
            return ["float", repr(float(number.scientific[0]))]
    if tokens.string:
        return ["str", tokens.string[1:-1]]
    if tokens.boolean:
        return ["bool", tokens.boolean[0] == "true"]
    if tokens.none:
        return ["none"]
    if tokens.infinity:
        return ["inf"]
    raise ValueError("unknown scalar tokens: %r" % (tokens,))


def keywords(groups, value):
    """Keyword arguments in the order written, repeats included (the evaluator makes
    a dict of them later, where the last of a repeated name wins)."""
    return [[kw.argname, value(kw.args[0])] for kw in groups]


def tree(tokens, piped=None):
    """The evaluator's walk over parse results, writing the tree instead of evaluating.
    `piped` is the expression a piped call receives as its first argument."""
    if tokens.template:
        t = tokens.template
        return [
            "template",
            tree(t),
            [literal(a) for a in (t.args or [])],
            keywords(t.kwargs or [], literal),
        ]
    if tokens.expression:
        e = tokens.expression
        if e.pipedCalls.asList():
            return tree(e.pipedCalls.pop(), piped=tokens)
        return tree(e)
    if tokens.pathExpression:
        return ["path", tokens.pathExpression]
    if tokens.call:
        c = tokens.call
        args = list(c.args or [])
        if piped is not None:
            args.insert(0, piped)
        return ["call", c.funcname, [tree(a) for a in args], keywords(c.kwargs or [], tree)]
    return literal(tokens)


def dump_grammar():
    import django
    from django.conf import settings

    settings.configure(UTF8_METRICS=False, TIME_ZONE="UTC")
    django.setup()
    from pyparsing import ParseBaseException

    from graphite.render.grammar_unsafe import grammar

    # graphite-web calls pyparsing 3's old spellings
    warnings.simplefilter("ignore", DeprecationWarning)

    for target in grammar_targets():
        try:
            want = json.dumps(tree(grammar.parseString(target)), separators=(",", ":"))
        except ParseBaseException:
            want = "ERR"
        except RecursionError:
            want = "DEEP"
        except Exception as e:  # noqa: BLE001  (recorded, the test ignores these)
            want = "EXC " + type(e).__name__
        out(hexstr(target), want)


# ---- graphite-web's parseATTime ---------------------------------------------------------


def attime_cases():
    references = [
        "", "now", "today", "yesterday", "tomorrow", "noon", "midnight", "teatime",
        "6pm", "6am", "12am", "12pm", "12:00am", "12:30pm", "8:15", "23:59", "0:00",
        "noon yesterday", "noon tomorrow", "6pm today", "midnight tomorrow",
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "mon", "fri", "jan1", "january 5", "feb29", "dec 31", "march", "jul 4",
        "20240229", "20230101", "19991231", "18991231", "20241301", "20240132",
        "1/2/2024", "12/31/99", "2/29/23", "13/1/2024", "1/2/", "11:00_20231105",
        "01:30_20240310", "12:00 20240101", "1700000000", "0", "86400", "now_",
        "noon+yesterday", "january+1", "bogus", "am", "pm", "99pm", "::::", "1:",
    ]
    offsets = [
        "", "-1d", "+6h", "-5min", "-5m", "-5mon", "-1y", "+1h", "-2w", "-30s", "-1d+6h",
        "-1d2h", "-90minutes", "+3days", "-1weeks", "-2months", "-1years", "-0s", "-1",
        "-h", "+", "-", "-1s-1s", "-25h", "-366d", "-1mon", "-12mon", "-1min30s",
    ]
    zones = ["UTC", "America/Chicago", "Europe/Berlin", "Asia/Kolkata", "Australia/Lord_Howe"]
    nows = [
        1700000000,  # 2023-11-14 22:13:20 UTC
        1699164000,  # 2023-11-05 01:00 CDT, the hour before Chicago falls back
        1710054000,  # 2024-03-10 07:00 UTC, Chicago springs forward
        1709251199,  # 2024-02-29 23:59:59 UTC
        1711846800,  # 2024-03-31 01:00 UTC, Berlin springs forward
    ]
    rng = random.Random(SEED)
    cases = []
    for ref in references:
        for off in ("", "-1d", "+6h", "-1mon"):
            cases.append((ref + off, rng.choice(nows), rng.choice(zones)))
    for _ in range(3000):
        ref = rng.choice(references)
        off = rng.choice(offsets)
        if rng.random() < 0.3:
            ref = ref.upper()
        cases.append((ref + off, rng.choice(nows), rng.choice(zones)))
    return cases


def dump_attime():
    import django
    from django.conf import settings

    settings.configure(TIME_ZONE="UTC")
    django.setup()
    import pytz

    from graphite.render.attime import parseATTime

    for expr, now, zone in attime_cases():
        tz = pytz.timezone(zone)
        # as graphite-web's render view reads `now=<epoch>` and then `from`/`until`
        now_dt = parseATTime(str(now), tz)
        try:
            t = parseATTime(expr, tz, now_dt)
            want = str(calendar.timegm(t.astimezone(pytz.utc).timetuple()))
        except Exception:  # noqa: BLE001  (graphite-web answers 400 for any of them)
            want = "ERR"
        out(hexstr(expr), str(now), zone, want)


def main():
    kinds = {"repr": dump_repr, "grammar": dump_grammar, "attime": dump_attime}
    if len(sys.argv) != 2 or sys.argv[1] not in kinds:
        sys.exit("usage: reference_dump.py %s" % "|".join(kinds))
    kinds[sys.argv[1]]()


if __name__ == "__main__":
    main()
