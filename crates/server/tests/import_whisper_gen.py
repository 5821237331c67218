"""The graphite side of `cargo test -p sumi --test import_whisper`.

    python import_whisper_gen.py WORK_DIR

Run with the python of the graphite-diff venv (tests/graphite-diff/setup.sh). Writes
whisper files with whisper 1.1.10 as carbon would leave them (several schemas, every
aggregation method, xFilesFactors, gaps, history older than the finest archive written
straight to the coarser ones by update_many, two tagged series, one in each of carbon's
_tagged/ layouts), starts graphite-web 1.1.10 over them, asks it /render questions with
now=T0 and prints one JSON document on stdout:

    {"t0": T0, "whisper_dir": DIR, "tagged_names": FILE, "damaged": FILE,
     "queries": [{"path": "/render?...", "answer": <graphite-web's JSON>}]}

Every range starts at least 5 minutes inside its series' longest retention, so the
seconds between T0 and sumi's import do not move a point across it. Seeded: the same values
every run, relative to the real current time.
"""

import json
import os
import random
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "graphite-diff"))

import whisper  # noqa: E402
from graphite.tags.utils import TaggedSeries  # noqa: E402

from gdiff import procs as P  # noqa: E402
from gdiff import servers  # noqa: E402

MIN, HOUR, DAY = 60, 3600, 86400
SCHEMAS = {
    "s1": [(10, 360), (60, 1440), (600, 1008)],  # 10s:1h,1m:1d,10m:7d
    "s2": [(60, 360), (300, 576)],  # 1m:6h,5m:2d
    "s3": [(60, 1440)],  # 60:1440
    "s4": [(30, 240), (300, 288), (3600, 168)],  # 30s:2h,5m:1d,1h:7d
}
METHODS = ["average", "sum", "last", "max", "min", "avg_zero", "absmax", "absmin"]
XFFS = [0.0, 0.3, 0.5, 1.0]
TAGGED = [
    ("cpu.usage;dc=eu;host=web01", True),  # carbon 1.1.10's default: hash file name
    ("disk.used;dc=eu;host=db01", False),  # the readable layout
]


def series_list():
    out = []
    for i, m in enumerate(METHODS):
        out.append(("imp.s1.%s" % m, "s1", m, XFFS[i % len(XFFS)]))
    out.append(("imp.s2.avg", "s2", "average", 0.5))
    out.append(("imp.s2.sum", "s2", "sum", 0.0))
    out.append(("imp.s3.max", "s3", "max", 0.5))
    out.append(("imp.s4.last", "s4", "last", 0.1))
    out.append(("imp.s4.average", "s4", "average", 0.3))
    for name, _ in TAGGED:
        out.append((name, "s1", "average", 0.5))
    return out


def path_of(whisper_dir, name, hashed):
    if ";" in name:
        rel = TaggedSeries.encode(name, os.sep, hash_only=hashed)
    else:
        rel = name.replace(".", os.sep)
    return os.path.join(whisper_dir, rel + ".wsp")


def value(rng):
    r = rng.random()
    if r < 0.2:
        return float(rng.randint(-50, 50))
    return round(rng.uniform(-1000, 1000), 2)


def history(rng, t0, archives):
    """Points the way carbon would have kept them: the finest step over the finest
    archive's retention, then each coarser archive's step over its own range, with
    gaps (15%) and a gap of an hour here and there (never in the last two hours).

    Each finer archive's oldest point is at the start of a bucket of the next coarser
    archive, and present: a cluster import sends one merged history, a coarser point
    where no finer one has started yet, so a coarser bucket that a finer archive's
    first point cut in two would be sent as a point of the finer archive's step and
    rolled up with that archive's points (docs/cluster.md, the import's limits). The
    cluster test met such buckets at random (the run's second decided the cut) and
    its answers then differed from graphite-web's in the last bits."""
    pts = []
    lo = t0
    for i, (step, n) in enumerate(archives):
        ret = step * n
        t = t0 - ret + step
        t -= t % step
        if i + 1 < len(archives):
            coarser = archives[i + 1][0]
            t += (-t) % coarser
        first = True
        while t <= lo:
            # (no hour-long gap in the last two hours: the merge test's live points
            # there must meet whisper's, whatever the hour of the run)
            hour_gap = (t // HOUR) % 17 == 3 and t <= t0 - 2 * HOUR
            if first or (rng.random() >= 0.15 and not hour_gap):
                pts.append((t, value(rng)))
            first = False
            t += step
        lo = t0 - ret
    return pts


def main():
    work = sys.argv[1]
    rng = random.Random(20261127)
    t0 = int(time.time())
    graphite = servers.Graphite(work, sys.prefix)
    wdir = graphite.whisper_dir
    for name, schema, method, xff in series_list():
        hashed = dict(TAGGED).get(name, False)
        path = path_of(wdir, name, hashed)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        archives = SCHEMAS[schema]
        whisper.create(path, archives, xFilesFactor=xff, aggregationMethod=method)
        pts = history(rng, t0, archives)
        # carbon writes in batches, oldest history first here (a backfill), the live
        # end last, in small batches as points arrive
        old = [p for p in pts if p[0] <= t0 - archives[0][0] * archives[0][1]]
        new = [p for p in pts if p[0] > t0 - archives[0][0] * archives[0][1]]
        for i in range(0, len(old), 500):
            whisper.update_many(path, old[i : i + 500], now=t0)
        for i in range(0, len(new), 7):
            whisper.update_many(path, new[i : i + 7], now=t0)
    # a damaged file: a whisper file cut inside its second archive
    damaged = os.path.join(wdir, "imp", "damaged.wsp")
    src = path_of(wdir, "imp.s2.avg", False)
    with open(src, "rb") as f:
        data = f.read()
    with open(damaged, "wb") as f:
        f.write(data[: 40 + 12 * 360 + 100])
    names = os.path.join(work, "tagged-names.txt")
    with open(names, "w") as f:
        for name, _ in TAGGED:
            f.write(name + "\n")

    log_dir = os.path.join(work, "logs")
    os.makedirs(log_dir, exist_ok=True)
    procs = P.Procs(log_dir)
    try:
        (port,) = P.free_ports(1)
        base = graphite.start(procs, port, log_dir)
        # the tag database, as carbon would have filled it
        form = urllib.parse.urlencode([("path", n) for n, _ in TAGGED]).encode()
        urllib.request.urlopen(base + "/tags/tagMultiSeries", form, timeout=30).read()
        ranges = [
            ("fine", t0 - 50 * MIN, t0),
            ("second archive", t0 - 20 * HOUR, t0),
            ("second archive only", t0 - 20 * HOUR, t0 - 2 * HOUR),
            ("third archive", t0 - 6 * DAY, t0),
            ("third archive only", t0 - 6 * DAY, t0 - 2 * DAY),
            ("s2 coarse only", t0 - 40 * HOUR, t0 - 10 * HOUR),
        ]
        # each target with the ranges inside its longest retention (a range reaching
        # beyond it is cut at now - retention, where the seconds between T0 and the
        # import decide whether the oldest point is still kept)
        def longest(schema):
            return max(s * n for s, n in SCHEMAS[schema])

        targets = [(name, longest(schema)) for name, schema, _, _ in series_list()]
        targets += [
            ("seriesByTag('dc=eu')", longest("s1")),
            ("imp.s1.*", longest("s1")),
            ("sumSeries(imp.s2.*)", longest("s2")),
        ]
        queries = []
        for target, keep in targets:
            for _, f, u in ranges:
                if t0 - f > keep - 5 * MIN:
                    continue
                q = urllib.parse.urlencode(
                    [("target", target), ("from", f), ("until", u), ("now", t0), ("format", "json")]
                )
                path = "/render?" + q
                body = urllib.request.urlopen(base + path, timeout=60).read()
                queries.append({"path": path, "answer": json.loads(body)})
    finally:
        procs.stop_all()
    json.dump(
        {
            "t0": t0,
            "whisper_dir": wdir,
            "tagged_names": names,
            "damaged": damaged,
            "queries": queries,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
