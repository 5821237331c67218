"""The requests asked of both servers. Every one carries ``now`` so both answer for the
same instant, whatever the wall clock says when it is sent.

A query names the parser ``compare`` applies to both answers (``kind``), and whether
graphite-web answers it with an error (then both must fail, bodies are not compared).
"""

import datetime
import time
import urllib.parse
import zoneinfo
from dataclasses import dataclass, field

MIN = 60
HOUR = 3600
DAY = 86400


@dataclass
class Query:
    path: str
    params: list  # [(key, value)], order kept, keys may repeat
    kind: str  # render-json render-csv render-raw treejson completer find-json nodelist expand index
    jsonp: str = None  # expected callback name
    error: bool = False  # graphite-web rejects it: both must answer >= 400
    notes: list = field(default_factory=list)

    def url(self, base):
        return base + self.path + "?" + urllib.parse.urlencode(self.params)

    def show(self):
        return self.path + "?" + urllib.parse.unquote(urllib.parse.urlencode(self.params))


def hhmm_yyyymmdd(epoch, zone="UTC"):
    return datetime.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(zone)).strftime("%H:%M_%Y%m%d")


def yyyymmdd(epoch):
    return time.strftime("%Y%m%d", time.gmtime(epoch))


# Globs that, together, cover every stored series.
ALL_TARGETS = [
    "diff.fine.*.*.*",
    "diff.fine.*.*",
    "diff.mid.app.*.*",
    "diff.mid.app.*.*.*",
    "diff.mid.pickled.*",
    "diff.mid.leafbranch",
    "diff.mid.leafbranch.*",
    "diff.legacy.*.*",
    "diff.legacy.*.*.*",
    "diff.wide.svc.*.*",
    "diff.other.*",
    "misc.*.*",
    "toplevel",
]

# From values selecting each archive of each schema (fine 1h/1d/7d, mid 6h/2d,
# legacy 1d, wide 2h/1d/30d, fallback 7d), exactly at a retention and one step past it,
# and beyond the longest retention (clamped).
RANGES = [
    "-30min", "-1h", "-61min", "-2h", "-3h", "-6h", "-7h", "-20h", "-1d", "-25h",
    "-3d", "-6d", "-7d", "-8d", "-20d", "-30d", "-40d",
]

GLOBS = [
    "diff.fine.web0?.cpu.user",
    "diff.fine.web0[1-2].cpu.*",
    "diff.fine.web0[!1].cpu.user",
    "diff.fine.web0{1,3}.cpu.{user,system}",
    "diff.fine.{web01,web02}.*.*",
    "diff.mid.app.{al,be}*.rate",
    "diff.mid.app.*.errors.{count,min,max}",
    "diff.mid.app.*.rate",
    "diff.mid.leafbranch*",
    "diff.legacy.host?.load",
    "diff.legacy.host[0-9]*.load",
    "diff.legacy.host1*",
    "diff.legacy.host1.*",
    "diff.{fine,mid}.*.*.count",
    "diff.*.*.*.*",
    "diff.nothing.*",
    "diff.fine.web99.cpu.user",
    "diff.bad.*",
    "*",
    "*.*",
    "diff.fine.web01.cpu.user",
]

CORE = ["diff.fine.web01.cpu.user", "diff.mid.app.alpha.rate", "diff.fine.web03.cpu.user"]


def render(params, now, kind="render-json", **kw):
    return Query("/render", list(params) + [("now", str(now))], kind, **kw)


def render_json(targets, now, extra=(), **kw):
    params = [("target", t) for t in targets] + [("format", "json")] + list(extra)
    return render(params, now, **kw)


def render_queries(now):
    out = []
    for rng in RANGES:
        for t in ALL_TARGETS:
            out.append(render_json([t], now, [("from", rng)]))
    for g in GLOBS:
        out.append(render_json([g], now, [("from", "-3h")]))
    out.append(render_json([], now, [("from", "-3h")]))  # no target at all
    # several targets: request order kept, a duplicate, one matching nothing
    out.append(
        render_json(
            ["diff.mid.app.alpha.rate", "diff.fine.web01.cpu.user", "diff.legacy.host1.load"],
            now,
            [("from", "-5h")],
        )
    )
    out.append(render_json(["diff.legacy.*.load", "diff.legacy.*.load"], now, [("from", "-2h")]))
    out.append(render_json(["diff.nothing", "diff.wide.svc.*.*"], now, [("from", "-2d")]))
    out.append(
        render(
            [("target[]", "diff.fine.web02.cpu.user"), ("target[]", "diff.mid.app.beta.rate"),
             ("format", "json"), ("from", "-90min")],
            now,
        )
    )
    out.append(Query("/render/", [("target", CORE[0]), ("format", "json"), ("from", "-1h"),
                                  ("now", str(now))], "render-json"))

    # time expressions
    times = [
        [("from", "-3h"), ("until", "-1h")],
        [("from", "-2d"), ("until", "-1d")],
        [("from", "-10d"), ("until", "-5d")],
        [("until", "-90min")],
        [("from", "-1h"), ("until", "-3h")],  # swapped: graphite-web orders them
        [("from", str(now - 5000)), ("until", str(now - 1000))],
        [("from", str(now - 3600)), ("until", str(now))],
        [("from", str(now - 3601))],
        [("from", hhmm_yyyymmdd(now - 4 * HOUR)), ("until", hhmm_yyyymmdd(now - HOUR))],
        [("from", yyyymmdd(now - 2 * DAY))],
        [("from", "now-2h")],
        [("from", "-1d2h"), ("until", "-1d")],
        [("from", "-1h30min")],
        [("from", "noon yesterday")],
        [("from", "-1w")],
        [("from", "-1mon")],
        [("from", "-1y")],
        [("from", "-2h"), ("until", "now+1h")],
        [("from", "-10min"), ("until", "+30min")],
        [("from", str(now + 600)), ("until", str(now + 1200))],  # entirely in the future
        [("from", "-3min")],
        # slot boundaries: whisper excludes the slot holding `from`, includes `until`'s
        [("from", str(now - now % 600 - 3600)), ("until", str(now - now % 600 - 600))],
        [("from", str(now - now % 60 - 1800)), ("until", str(now - now % 60 - 60))],
        [("from", str(now - now % 60 - 1799)), ("until", str(now - now % 60 - 61))],
        [("from", str(now - 5)), ("until", str(now - 3))],  # inside one slot
        [("from", "-2h"), ("noCache", "1"), ("cacheTimeout", "0"), ("local", "1")],
        [("from", hhmm_yyyymmdd(now - 4 * HOUR, "America/New_York")), ("tz", "America/New_York")],
    ]
    for extra in times:
        out.append(render_json(["diff.fine.web01.cpu.*", "diff.mid.app.alpha.rate",
                                "diff.wide.svc.a.gauge"], now, extra))

    # other instants: the near future (points up to 40 min ahead are stored by both),
    # two hours ahead (sumi refused points more than 1 h ahead; whisper has none there),
    # and the past
    for shift, rngs in ((45 * MIN, ["-30min", "-3h", "-3d"]), (2 * HOUR, ["-2h", "-7h"]),
                        (-DAY, ["-30min", "-3h", "-3d"]), (-3 * HOUR, ["-30min", "-2h"])):
        for rng in rngs:
            out.append(render_json(["diff.mid.app.*.rate", "diff.legacy.*.load",
                                    "diff.fine.web01.cpu.user"], now + shift, [("from", rng)]))

    # maxDataPoints
    for rng, mdps in (("-5h", [1, 2, 7, 50, 299, 100000]), ("-3d", [1, 13, 500]), ("-30min", [20])):
        for mdp in mdps:
            out.append(render_json(CORE, now, [("from", rng), ("maxDataPoints", str(mdp))]))
    out.append(render_json(CORE, now, [("from", "-5h"), ("maxDataPoints", "12.5")]))  # ignored
    sparse = ["diff.fine.web03.cpu.user", "diff.mid.app.beta.sparse", "diff.fine.ratio.*"]
    out.append(render_json(sparse, now, [("from", "-3h"), ("maxDataPoints", "40"),
                                         ("xFilesFactor", "0.5")]))
    out.append(render_json(sparse, now, [("from", "-2d"), ("maxDataPoints", "33"),
                                         ("noNullPoints", "1")]))

    # consolidation of edge values: runs of -0.0 (Python's sum() gives 0.0), inf
    for rng, mdp in (("-30min", "60"), ("-30min", "90"), ("-3h", "17"), ("-20h", "100")):
        out.append(render_json(["diff.fine.edge.*"], now, [("from", rng), ("maxDataPoints", mdp)]))

    # noNullPoints (an all-null series disappears)
    for t in ["diff.mid.app.beta.sparse", "diff.legacy.*.load", "diff.fine.edge.*"]:
        out.append(render_json([t], now, [("from", "-3h"), ("noNullPoints", "true")]))

    # other formats
    for t, rng in (("diff.fine.web01.cpu.*", "-30min"), ("diff.fine.edge.*", "-3h"),
                   ("diff.fine.big.values", "-3d"), ("diff.mid.app.*.errors.*", "-1d")):
        out.append(render([("target", t), ("format", "csv"), ("from", rng)], now, "render-csv"))
        out.append(render([("target", t), ("format", "raw"), ("from", rng)], now, "render-raw"))
    # csv and raw ignore maxDataPoints and noNullPoints in graphite-web
    for kind, fmt in (("render-csv", "csv"), ("render-raw", "raw")):
        out.append(render([("target", "diff.mid.app.beta.sparse"), ("format", fmt), ("from", "-2h"),
                           ("maxDataPoints", "10"), ("noNullPoints", "1")], now, kind))
    out.append(render([("target", "diff.legacy.host1.load"), ("rawData", "true"),
                       ("from", "-2h")], now, "render-raw"))
    out.append(render([("target", "diff.fine.web01.cpu.user"), ("format", "csv"),
                       ("from", "-1h"), ("tz", "Europe/Paris")], now, "render-csv"))
    out.append(render_json(["diff.fine.edge.*", "diff.mid.app.alpha.rate"], now,
                           [("from", "-6h"), ("jsonp", "cb_42")], jsonp="cb_42"))
    out.append(render_json(["diff.fine.formats.gauge"], now, [("from", "-20h"), ("pretty", "1")]))

    # what graphite-web refuses
    for extra in ([("from", "-1d+2h")], [("from", "-5m")], [("from", "soon")],
                  [("from", "-1h"), ("until", "-1h")]):
        out.append(render_json(CORE[:1], now, extra, error=True))
    return out


def find(params, now, kind="treejson", **kw):
    return Query("/metrics/find", list(params) + [("now", str(now))], kind, **kw)


FIND_QUERIES = [
    "*", "diff.*", "diff.fine.*", "diff.fine.web0*", "diff.fine.web01.*", "diff.fine.web01.cpu.*",
    "diff.mid.*", "diff.mid.leafbranch", "diff.mid.leaf*", "diff.mid.leafbranch.*",
    "diff.legacy.host?", "diff.legacy.host[12]*", "diff.{fine,mid}.*", "diff.*.*", "diff.*.*.*",
    "diff.nothing.*", "diff.fine.web01.cpu.user", "diff.fine", "misc.unmatched.*", "toplevel",
    "top*", "diff.bad.*", "diff.fine.web0[!1]", "diff.mid.app.{alpha,gamma}.*",
]

COMPLETER_QUERIES = [
    "diff.", "diff.fine.web", "diff.fine.web01.cpu.", "diff.mid.leaf", "diff.legacy.host1",
    "diff.fine..cpu", "t", "diff.mid.app.*.errors.",
]


def find_queries(now):
    out = [find([("query", q)], now) for q in FIND_QUERIES]
    out.append(Query("/metrics/find/", [("query", "diff.wide.*"), ("now", str(now))], "treejson"))
    for q in ["diff.fine.*", "diff.fine.web01.cpu.*", "diff.legacy.*"]:
        out.append(find([("query", q), ("wildcards", "1")], now))
    out.append(find([("query", "diff.mid.app.*"), ("from", "-1h"), ("until", "now")], now))
    out.append(find([("query", "diff.*.*"), ("leavesOnly", "1")], now))
    out.append(find([("query", "diff.fine.*"), ("jsonp", "cb")], now, jsonp="cb"))
    for q in COMPLETER_QUERIES:
        out.append(find([("query", q), ("format", "completer")], now, "completer"))
    out.append(find([("query", "diff.fine.web01,web02.cpu"), ("format", "completer"),
                     ("automatic_variants", "1")], now, "completer"))
    out.append(find([("query", "diff.fine."), ("format", "completer"), ("wildcards", "1")],
                    now, "completer"))
    out.append(find([("query", "diff.*.*.*"), ("format", "nodelist"), ("position", "2")],
                    now, "nodelist"))
    out.append(find([("query", "diff.legacy.*.*"), ("format", "nodelist")], now, "nodelist"))
    out.append(find([("query", "diff.mid.*"), ("format", "json")], now, "find-json"))
    out.append(find([("query", "")], now, error=True))
    out.append(find([], now, error=True))

    expand = [
        [("query", "diff.fine.web0?.cpu.*")],
        [("query", "diff.fine.*"), ("query", "diff.mid.app.*")],
        [("query", "diff.mid.*"), ("query", "diff.legacy.*"), ("groupByExpr", "1")],
        [("query", "diff.mid.*"), ("leavesOnly", "1")],
        [("query", "diff.nothing.*")],
        [("query", "diff.*.*"), ("jsonp", "cb")],
    ]
    for params in expand:
        jsonp = dict(params).get("jsonp")
        out.append(Query("/metrics/expand", params + [("now", str(now))], "expand", jsonp=jsonp))
    out.append(Query("/metrics/index.json", [("now", str(now))], "index"))
    out.append(Query("/metrics/index.json", [("jsonp", "cb"), ("now", str(now))], "index",
                     jsonp="cb"))
    return out


def all_queries(now):
    from . import fn_fna, fn_fnb  # the function families' cases (each imports this module)
    return render_queries(now) + find_queries(now) + fn_fnb.queries(now) + fn_fna.queries(now)
