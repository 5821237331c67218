"""Graphite tags: the same tagged series in graphite-web (whisper files where carbon puts
them, registered in its local tag database) and in sumi (sent over carbon plaintext,
some in non-canonical form), then the tag API, ``seriesByTag`` renders and tagged names
as plain targets and ``/metrics/find`` patterns compared.

carbon stores a tagged series under ``_tagged/<sha256[0:3]>/<sha256[3:6]>/<name with .
as _DOT_>.wsp`` (``TaggedSeries.encode``) and registers its canonical name with
graphite-web's ``/tags/tagMultiSeries``; the harness does both. Since graphite-web's
finder then shows ``_tagged`` as a branch of ``*`` while sumi keeps tagged series out of
the tree, this phase runs after the tree queries.

Tag and value ids in ``/tags`` answers are the order of first use; both sides see the
series in the same order (canonical names, as carbon sends them), so they are compared
too.
"""

import hashlib
import os
import urllib.parse
import urllib.request

import whisper

from . import conf
from . import procs as P
from .queries import Query, find

# (as sent over carbon, canonical name); the first few are out of carbon's order
SERIES = [
    ("tagged.cpu;host=web01;dc=east", "tagged.cpu;dc=east;host=web01"),
    ("tagged.cpu;dc=east;host=web02", "tagged.cpu;dc=east;host=web02"),
    ("tagged.cpu;host=web03;dc=west", "tagged.cpu;dc=west;host=web03"),
    ("tagged.cpu;host=web04", "tagged.cpu;host=web04"),
    ("~tagged.mem;host=web01;dc=east;dc=west", "tagged.mem;dc=west;host=web01"),
    ("tagged.mem;host=db01;role=db;dc=west", "tagged.mem;dc=west;host=db01;role=db"),
    ("tagged.disk.used;host=web02;mount=/var;dc=east", "tagged.disk.used;dc=east;host=web02;mount=/var"),
]

STEP = 60
POINTS = 30


def encoded_path(whisper_dir, name):
    h = hashlib.sha256(name.encode("utf8")).hexdigest()
    return os.path.join(whisper_dir, "_tagged", h[0:3], h[3:6], name.replace(".", "_DOT_") + ".wsp")


def points(t0):
    """(raw name, canonical name, ts, value): POINTS minutes of each series."""
    last = t0 - t0 % STEP - STEP
    out = []
    for i, (raw, canon) in enumerate(SERIES):
        for k in range(POINTS):
            ts = last - k * STEP
            out.append((raw, canon, ts, float((i + 1) * 10 + k % 7)))
    return out


def write_whisper(whisper_dir, schemas_path, aggregation_path, pts, now):
    schemas = conf.load_schemas(schemas_path)
    aggregation = conf.load_aggregation(aggregation_path)
    created = set()
    for _, canon, ts, value in pts:
        path = encoded_path(whisper_dir, canon)
        if canon not in created:
            archives, xff, method = conf.series_config(canon, schemas, aggregation)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            kw = {}
            if xff is not None:
                kw["xFilesFactor"] = xff
            if method is not None:
                kw["aggregationMethod"] = method
            whisper.create(path, archives, **kw)
            created.add(canon)
        whisper.update(path, value, ts, now=now)


def lines(pts):
    return [("%s %r %d\n" % (raw, value, ts)).encode() for raw, _, ts, value in pts]


def post(base, path, params):
    """POST a form; a procs.Response."""
    data = urllib.parse.urlencode(params).encode()
    req = urllib.request.Request(base + path, data=data, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return P.Response(r.status, r.headers.get("Content-Type"), r.read())
    except urllib.error.HTTPError as e:
        return P.Response(e.code, e.headers.get("Content-Type"), e.read())
    except (urllib.error.URLError, OSError) as e:
        raise P.HarnessError("POST %s%s: %s" % (base, path, e))


def register():
    """The tagMultiSeries form carbon would post (canonical names, in send order)."""
    seen, out = set(), []
    for _, canon in SERIES:
        if canon not in seen:
            seen.add(canon)
            out.append(("path", canon))
    return out


def tags_query(path, params, error=False):
    return Query(path, list(params), "tags-json", error=error)


# In a Query's notes: graphite-web answers this render with no series.
NO_SERIES = "no series"


def render(target, now, rng="-1h"):
    return Query(
        "/render",
        [("target", target), ("format", "json"), ("from", rng), ("now", str(now))],
        "render-json",
    )


FIND = [
    [("expr", "name=tagged.cpu")],
    [("expr", "dc=east"), ("expr", "host!=web01")],
    [("expr", "host=~web0[13]")],
    [("expr", "host=~eb")],
    [("expr", "host=~.*eb0[12]$")],
    [("expr", "name=tagged.cpu"), ("expr", "dc!=~e.*")],
    [("expr", "name=~tagged.m"), ("expr", "dc=")],
    [("expr", "name=tagged.cpu"), ("expr", "dc=")],
    [("expr", "dc!=")],
    [("expr", "role!=db"), ("expr", "name=tagged.mem")],
    [("expr", "name=tagged.cpu"), ("expr", "host=~web0[12]?")],
    [("expr[]", "mount=/var")],
    [("expr", "nosuch=x")],
]

SERIES_BY_TAG = [
    "seriesByTag('name=tagged.cpu')",
    "seriesByTag('dc=east','host!=web01')",
    "seriesByTag('host=~web0[13]')",
    "seriesByTag('name=~tagged.*','dc!=~w.*')",
    "seriesByTag('name=tagged.cpu','dc=')",
    "aliasByTags(seriesByTag('name=tagged.cpu'),'host','dc')",
    "aliasByTags(seriesByTag('name=tagged.mem'),'name',1)",
    "groupByTags(seriesByTag('name=~tagged.*','dc!='),'sum','dc')",
    "groupByTags(seriesByTag('name=tagged.cpu'),'average','name')",
    "sumSeries(seriesByTag('dc=west'))",
    # sumi folds these as a stream, a chunk of series at a time
    "groupByTags(isNonNull(seriesByTag('name=~tagged.*','dc!=')),'max','dc')",
    "groupByTags(seriesByTag('name=~tagged.*','dc!='),'averageSeries','dc','name')",
    "stddevSeries(scale(seriesByTag('name=~tagged.*'),2))",
    "aliasByNode(seriesByTag('name=tagged.disk.used'),1)",
    "seriesByTag('name=tagged.cpu','host=web01')",
]

# Tagged series by their full name as plain targets (graphite-web's standard finder looks
# a pattern holding ';' up as written, without globbing, and names the series by it): the
# canonical name, tags in another order, a glob, an unknown value, inside functions.
PLAIN_TAGGED = [
    "tagged.cpu;dc=east;host=web01",
    "tagged.disk.used;dc=east;host=web02;mount=/var",
    "sumSeries(tagged.cpu;dc=east;host=web02,tagged.mem;dc=west;host=web01)",
    "aliasByTags(tagged.mem;dc=west;host=db01;role=db,'role')",
]
# ... and those graphite-web finds nothing for (the harness checks that it does not)
PLAIN_TAGGED_NONE = [
    "tagged.cpu;host=web01;dc=east",
    "tagged.cpu;dc=*;host=web01",
    "tagged.cpu;dc=east;host=web09",
]


def find_tagged(pattern, now, fmt=None):
    if fmt is None:
        return find([("query", pattern)], now)
    return find([("query", pattern), ("format", fmt)], now, fmt)


def plain_tagged(now):
    out = [render(t, now) for t in PLAIN_TAGGED]
    for t in PLAIN_TAGGED_NONE:
        q = render(t, now)
        q.notes.append(NO_SERIES)
        out.append(q)
    for pattern in PLAIN_TAGGED[:2] + PLAIN_TAGGED_NONE:
        out.append(find_tagged(pattern, now))
    out.append(find_tagged(PLAIN_TAGGED[0], now, "completer"))
    return out


def queries(now):
    out = [
        tags_query("/tags", []),
        tags_query("/tags", [("filter", "d")]),
        tags_query("/tags", [("filter", "^h|r")]),
        tags_query("/tags", [("limit", "2")]),
        tags_query("/tags/", []),
        tags_query("/tags/dc", []),
        tags_query("/tags/host", [("filter", "web0[12]")]),
        tags_query("/tags/host", [("limit", "3")]),
        tags_query("/tags/name", []),
        tags_query("/tags/nosuch", []),
        tags_query("/tags/findSeries", [], error=True),
        tags_query("/tags/findSeries", [("expr", "dc!=east")], error=True),
        tags_query("/tags/findSeries", [("expr", "nooperator")], error=True),
        tags_query("/tags/autoComplete/tags", []),
        tags_query("/tags/autoComplete/tags", [("tagPrefix", "h")]),
        tags_query("/tags/autoComplete/tags", [("expr", "name=tagged.mem")]),
        tags_query("/tags/autoComplete/tags", [("expr", "dc=west"), ("limit", "2")]),
        tags_query("/tags/autoComplete/values", [("tag", "host")]),
        tags_query("/tags/autoComplete/values", [("tag", "host"), ("valuePrefix", "web0")]),
        tags_query("/tags/autoComplete/values", [("tag", "dc"), ("expr", "name=tagged.cpu")]),
        tags_query("/tags/autoComplete/values",
                   [("tag", "host"), ("expr", "dc=east"), ("limit", "2")]),
        tags_query("/tags/autoComplete/values", [], error=True),
    ]
    out += [tags_query("/tags/findSeries", params) for params in FIND]
    out += [render(t, now) for t in SERIES_BY_TAG]
    out += plain_tagged(now)
    return out


DELETE = [("path", "tagged.cpu;dc=east;host=web01"), ("path", "tagged.mem;host=db01;role=db;dc=west")]


def after_delete(now):
    """What is asked again once DELETE was posted to both."""
    out = [tags_query("/tags/findSeries", params) for params in FIND]
    out += [tags_query("/tags/dc", []), tags_query("/tags", [])]
    out += [render(t, now) for t in SERIES_BY_TAG]
    out += plain_tagged(now)
    return out
