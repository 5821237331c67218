"""The rrdtool side of `cargo test -p sumi --test import_rrd`.

    /usr/bin/python3 import_rrd_gen.py OUT_DIR

Writes RRD files with Debian's rrdtool (python3-rrdtool) relative to the real current
time, the way Munin and collectd leave them (GAUGE, COUNTER and DERIVE data sources,
AVERAGE, MIN, MAX and LAST RRAs of several resolutions, gaps longer than the
heartbeat), then asks `rrdtool.fetch` for ranges in the finest RRA and ranges only
coarser RRAs cover, and prints one JSON document on stdout:

    {"t0": T0, "dir": OUT_DIR,
     "fetches": [{"series": "<stem>.<ds>.<cf>", "from", "until", "step",
                  "rows": [[t, value-bits or null], ...]}]}

A row's time is the end of its interval (what `rrdtool fetch` prints); a value is null
for unknown, else the 16 hex digits of its IEEE-754 bits. Seeded: the same updates
every run, relative to the current time.
"""

import json
import math
import os
import random
import struct
import sys
import time

import rrdtool

HOUR, DAY = 3600, 86400

FILES = [
    # (relative path, step, data sources, RRAs)
    (
        "munin/load.rrd",
        60,
        ["DS:shortterm:GAUGE:120:0:U", "DS:midterm:GAUGE:120:0:U"],
        [
            "RRA:AVERAGE:0.5:1:1440",
            "RRA:AVERAGE:0.5:5:864",
            "RRA:MIN:0.5:5:864",
            "RRA:MAX:0.5:5:864",
            "RRA:LAST:0.5:1:1440",
        ],
    ),
    (
        "web01/cpu-0/cpu-idle.rrd",
        10,
        ["DS:value:DERIVE:20:0:U"],
        ["RRA:AVERAGE:0.1:1:4320", "RRA:AVERAGE:0.1:30:600", "RRA:MAX:0.1:30:600"],
    ),
    (
        "web01/if_octets-eth0.rrd",
        30,
        ["DS:rx:COUNTER:60:0:U", "DS:tx:COUNTER:60:0:U"],
        ["RRA:AVERAGE:0.5:1:2880", "RRA:AVERAGE:0.5:10:576", "RRA:LAST:0.5:1:2880"],
    ),
]


def bits(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return struct.pack(">d", float(v)).hex()


def main():
    out = sys.argv[1]
    rng = random.Random(2026)
    t0 = int(time.time())
    fetches = []
    for rel, step, ds, rras in FILES:
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        start = t0 - 2 * DAY - 10 * step
        rrdtool.create(path, "--step", str(step), "--start", str(start), *ds, *rras)
        counters = [0] * len(ds)
        t = start + step
        batch = []
        while t <= t0:
            # an outage of 25 minutes every 9 hours: unknown rows
            if (t // 60) % (9 * 60) >= 25:
                vals = []
                for i, d in enumerate(ds):
                    if ":GAUGE:" in d:
                        vals.append("%.3f" % rng.uniform(0, 8))
                    else:
                        counters[i] += rng.randint(0, 5000)
                        vals.append(str(counters[i]))
                # a jitter of a few seconds, as collectors send
                ts = t - rng.randint(0, 3)
                batch.append("%d:%s" % (ts, ":".join(vals)))
            if len(batch) >= 500:
                rrdtool.update(path, *batch)
                batch = []
            t += step
        if batch:
            rrdtool.update(path, *batch)
        stem = rel[: -len(".rrd")].replace("/", ".")
        names = [d.split(":")[1] for d in ds]
        cfs = sorted({r.split(":")[1] for r in rras})
        for cf in cfs:
            steps = sorted(
                {int(r.split(":")[3]) * step for r in rras if r.split(":")[1] == cf}
            )
            for res in steps:
                # a range inside the RRA of this resolution, away from its edges
                rows = {int(r.split(":")[4]) for r in rras
                        if r.split(":")[1] == cf and int(r.split(":")[3]) * step == res}
                span = res * max(rows)
                # the finer RRAs' span: a range only this one covers starts before it
                finer = [int(r.split(":")[4]) * int(r.split(":")[3]) * step for r in rras
                         if r.split(":")[1] == cf and int(r.split(":")[3]) * step < res]
                lo = max(finer) + 2 * res if finer else 2 * res
                f = t0 - min(span - 2 * res, lo + 10 * HOUR)
                u = f + 8 * HOUR
                f -= f % res
                u -= u % res
                (fs, fe, fstep), _, rows_v = rrdtool.fetch(
                    path, cf, "-s", str(f), "-e", str(u), "-r", str(res)
                )
                for d, name in enumerate(names):
                    fetches.append(
                        {
                            "series": "%s.%s.%s" % (stem, name, cf.lower()),
                            "from": f,
                            "until": u,
                            "step": fstep,
                            "rows": [
                                [fs + (i + 1) * fstep, bits(r[d])] for i, r in enumerate(rows_v)
                            ],
                        }
                    )
    json.dump({"t0": t0, "dir": out, "fetches": fetches}, sys.stdout)


if __name__ == "__main__":
    main()
