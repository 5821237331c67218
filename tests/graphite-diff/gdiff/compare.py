"""Parsing both answers to a query and comparing them exactly.

Values are compared bit for bit (``-0.0`` differs from ``0.0``; any NaN equals any NaN),
``null`` only equals ``null``, timestamps must be integers, series order and names must
match. Text formats (csv, raw) are compared after parsing, so ``1.0`` and ``1`` are the
same value there; spelling differences are counted separately as notes. JSON must be
strict JSON (no bare ``NaN``/``Infinity``; graphite-web writes ``null`` and ``1e9999``).

Two places where graphite-web itself is not deterministic are normalised on both sides:
``/metrics/find`` with ``format=completer`` orders nodes of equal name at random (it
sorts by name after a shuffle), so entries are sorted by (name, path) once their name
order is checked; and ``format=json`` nodes carry ``intervals`` computed from the wall
clock and file mtimes, which are dropped.
"""

import csv
import io
import json
import math
import struct
import time


class Mismatch(Exception):
    """The two answers differ; the message says where and how."""


class Invalid(Exception):
    """An answer cannot be parsed as its format says."""


def fmt_value(v):
    if v is None:
        return "null"
    if isinstance(v, float):
        return repr(v)
    return repr(v)


def fmt_ts(ts):
    try:
        return "%d (%s)" % (ts, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)))
    except (TypeError, ValueError, OverflowError):
        return repr(ts)


def same_float(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return struct.pack("<d", float(a)) == struct.pack("<d", float(b))


def same_value(a, b):
    if a is None or b is None:
        return a is None and b is None
    return same_float(a, b)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def strict_json(body, jsonp=None):
    text = body.decode("utf-8")
    if jsonp is not None:
        prefix = jsonp + "("
        if not (text.startswith(prefix) and text.endswith(")")):
            raise Invalid("not wrapped as %s(...): %s" % (jsonp, text[:80]))
        text = text[len(prefix) : -1]

    def reject(token):
        raise Invalid("non-JSON token %s" % token)

    try:
        return json.loads(text, parse_constant=reject)
    except ValueError as e:
        raise Invalid("invalid JSON (%s): %s" % (e, text[:200]))


def same_json(a, b, where="$"):
    """Strict structural equality: types (bool is not int), keys, order, float bits."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a is b or (type(a) is type(b) and a == b):
            return
        raise Mismatch("%s: %s vs %s" % (where, short(a), short(b)))
    if is_number(a) and is_number(b):
        if type(a) is not type(b):
            raise Mismatch("%s: %s vs %s (int vs float)" % (where, short(a), short(b)))
        if not same_float(a, b):
            raise Mismatch("%s: %s vs %s" % (where, short(a), short(b)))
        return
    if type(a) is not type(b):
        raise Mismatch("%s: %s vs %s" % (where, short(a), short(b)))
    if isinstance(a, dict):
        if set(a) != set(b):
            raise Mismatch(
                "%s: keys %s vs %s" % (where, sorted(a), sorted(b))
            )
        for k in sorted(a):
            same_json(a[k], b[k], "%s.%s" % (where, k))
    elif isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            same_json(x, y, "%s[%d]" % (where, i))
        if len(a) != len(b):
            extra = a[len(b) :] if len(a) > len(b) else b[len(a) :]
            raise Mismatch(
                "%s: %d vs %d elements (first extra: %s)" % (where, len(a), len(b), short(extra[0]))
            )
    elif a != b:
        raise Mismatch("%s: %s vs %s" % (where, short(a), short(b)))


def short(v, n=160):
    s = json.dumps(v) if not isinstance(v, str) else repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


class Stats:
    def __init__(self):
        self.values = 0
        self.notes = []


# --- /render -------------------------------------------------------------------------


def series_list_json(doc):
    if not isinstance(doc, list):
        raise Invalid("render json is not a list: %s" % short(doc))
    out = []
    for s in doc:
        if not isinstance(s, dict) or set(s) != {"target", "tags", "datapoints"}:
            raise Invalid("series is not {target, tags, datapoints}: %s" % short(s))
        points = []
        for p in s["datapoints"]:
            if not (isinstance(p, list) and len(p) == 2):
                raise Invalid("datapoint is not [value, ts]: %s" % short(p))
            v, ts = p
            if not (v is None or is_number(v)):
                raise Invalid("value is not a number or null: %s" % short(p))
            if not isinstance(ts, int) or isinstance(ts, bool):
                raise Invalid("timestamp is not an integer: %s" % short(p))
            points.append((None if v is None else float(v), ts))
        out.append((s["target"], s["tags"], points))
    return out


def compare_points(name, exp, got, stats):
    """exp/got: [(value, ts)]."""
    diffs = []
    for i, ((ev, ets), (gv, gts)) in enumerate(zip(exp, got)):
        stats.values += 1
        if ets != gts or not same_value(ev, gv):
            diffs.append((i, ev, ets, gv, gts))
    if len(exp) != len(got) or diffs:
        lines = ["series %s: %d points vs %d, %d differ" % (name, len(exp), len(got), len(diffs))]
        if exp and got and (exp[0][1] != got[0][1] or exp[-1][1] != got[-1][1]):
            lines.append(
                "  span: graphite-web %s .. %s, sumi %s .. %s"
                % (fmt_ts(exp[0][1]), fmt_ts(exp[-1][1]), fmt_ts(got[0][1]), fmt_ts(got[-1][1]))
            )
        for i, ev, ets, gv, gts in diffs[:4]:
            lines.append(
                "  [%d] graphite-web %s @ %s | sumi %s @ %s"
                % (i, fmt_value(ev), fmt_ts(ets), fmt_value(gv), fmt_ts(gts))
            )
        if len(exp) != len(got):
            longer, who = (exp, "graphite-web") if len(exp) > len(got) else (got, "sumi")
            extra = longer[min(len(exp), len(got)) :]
            lines.append(
                "  %s has %d more, first %s @ %s"
                % (who, len(extra), fmt_value(extra[0][0]), fmt_ts(extra[0][1]))
            )
        raise Mismatch("\n".join(lines))


def compare_series_lists(exp, got, stats):
    """exp/got: [(name, tags, points)] in answer order."""
    names_e = [s[0] for s in exp]
    names_g = [s[0] for s in got]
    if names_e != names_g:
        missing = [n for n in names_e if n not in names_g]
        extra = [n for n in names_g if n not in names_e]
        raise Mismatch(
            "series differ: graphite-web %d %s, sumi %d %s; missing in sumi %s, extra in sumi %s"
            % (len(names_e), short(names_e, 200), len(names_g), short(names_g, 200),
               short(missing, 200), short(extra, 200))
        )
    problems = []
    for (name, tags_e, pts_e), (_, tags_g, pts_g) in zip(exp, got):
        if tags_e is not None:
            try:
                same_json(tags_e, tags_g, "tags of %s" % name)
            except Mismatch as e:
                problems.append(str(e))
        try:
            compare_points(name, pts_e, pts_g, stats)
        except Mismatch as e:
            problems.append(str(e))
    if problems:
        raise Mismatch("\n".join(problems))


def parse_csv(body):
    text = body.decode("utf-8")
    series = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if len(row) != 3:
            raise Invalid("csv row is not name,time,value: %r" % row)
        name, when, value = row
        try:
            v = None if value == "" else float(value)
        except ValueError:
            raise Invalid("csv value is not a number: %r" % row)
        if not series or series[-1][0] != name:
            series.append((name, None, []))
        # the timestamp text is compared as an opaque key, as a client would read it
        series[-1][2].append((v, when))
    return series


def parse_raw(body):
    text = body.decode("utf-8")
    series = []
    for line in text.split("\n"):
        if not line:
            continue
        head, sep, values = line.rpartition("|")
        if not sep:
            raise Invalid("raw line has no '|': %r" % line[:80])
        parts = head.rsplit(",", 3)
        if len(parts) != 4:
            raise Invalid("raw header is not name,start,end,step: %r" % head[:80])
        name = parts[0]
        try:
            start, end, step = (int(x) for x in parts[1:])
            vals = [None if x == "None" else float(x) for x in values.split(",")] if values else []
        except ValueError:
            raise Invalid("raw line does not parse: %r" % line[:120])
        points = [(v, start + i * step) for i, v in enumerate(vals)]
        series.append((name, {"start": start, "end": end, "step": step}, points))
    return series


def spelling_notes(kind, exp_body, got_body, stats):
    if exp_body != got_body and len(stats.notes) < 1000:
        e, g = exp_body.decode("utf-8", "replace"), got_body.decode("utf-8", "replace")
        i = next((i for i, (x, y) in enumerate(zip(e, g)) if x != y), min(len(e), len(g)))
        stats.notes.append(
            "%s text differs at byte %d: graphite-web %r, sumi %r"
            % (kind, i, e[max(0, i - 20) : i + 30], g[max(0, i - 20) : i + 30])
        )


# --- /metrics/* ------------------------------------------------------------------------


def completer_canonical(doc):
    if not isinstance(doc, dict) or set(doc) != {"metrics"} or not isinstance(doc["metrics"], list):
        raise Invalid("completer answer is not {metrics: [...]}: %s" % short(doc))
    entries = doc["metrics"]
    names = [e.get("name") if isinstance(e, dict) else None for e in entries]
    ordered = sorted(entries, key=lambda e: (str(e.get("name")), str(e.get("path")), str(e)))
    return names, ordered


def parse_both(parse, exp, got):
    """Parses graphite-web's answer (a failure is the harness's problem: Invalid) and
    sumi's (a failure is a difference: Mismatch)."""
    e = parse(exp.body)
    try:
        g = parse(got.body)
    except (Invalid, ValueError, TypeError, AttributeError, KeyError) as err:
        raise Mismatch("sumi's answer does not parse: %s; body: %r" % (err, got.body[:200]))
    return e, g


def find_json_nodes(body):
    doc = strict_json(body)
    if not isinstance(doc, list) or not all(isinstance(n, dict) for n in doc):
        raise Invalid("find json is not a list of nodes: %s" % short(doc))
    # intervals come from the wall clock and file mtimes
    return [{k: v for k, v in n.items() if k != "intervals"} for n in doc]


def compare(query, exp, got, stats):
    """Compares two procs.Response answers to query; raises Mismatch or Invalid."""
    if query.error:
        if exp.status < 400:
            raise Invalid("graphite-web accepted a query expected to fail (%s)" % exp.status)
        if got.status < 400:
            raise Mismatch(
                "graphite-web refuses it with %d, sumi answers %d: %r"
                % (exp.status, got.status, got.body[:200])
            )
        # a refusal is a 4xx: a 5xx says sumi failed on the query, whatever the
        # reference answered
        if got.status >= 500:
            raise Mismatch(
                "graphite-web refuses it with %d, sumi fails with %d: %r"
                % (exp.status, got.status, got.body[:200])
            )
        return
    if exp.status != 200:
        raise Invalid("graphite-web answered %d: %r" % (exp.status, exp.body[:300]))
    if got.status != 200:
        raise Mismatch("sumi answered %d: %r" % (got.status, got.body[:300]))
    if exp.media_type != got.media_type:
        raise Mismatch(
            "content type: graphite-web %s, sumi %s" % (exp.content_type, got.content_type)
        )
    kind, jsonp = query.kind, query.jsonp
    if kind == "render-json":
        e, g = parse_both(lambda b: series_list_json(strict_json(b, jsonp)), exp, got)
        compare_series_lists(e, g, stats)
    elif kind in ("render-csv", "render-raw"):
        e, g = parse_both(parse_csv if kind == "render-csv" else parse_raw, exp, got)
        compare_series_lists(e, g, stats)
        spelling_notes(kind, exp.body, got.body, stats)
    elif kind == "completer":
        (names_e, e), (names_g, g) = parse_both(
            lambda b: completer_canonical(strict_json(b, jsonp)), exp, got
        )
        if names_e != names_g:
            raise Mismatch(
                "node names in order: graphite-web %s, sumi %s" % (short(names_e), short(names_g))
            )
        same_json(e, g, "metrics")
    elif kind == "find-json":
        e, g = parse_both(find_json_nodes, exp, got)
        same_json(e, g)
    elif kind in ("treejson", "nodelist", "expand", "index", "tags-json"):
        e, g = parse_both(lambda b: strict_json(b, jsonp), exp, got)
        same_json(e, g)
    else:
        raise Invalid("unknown query kind %r" % kind)
