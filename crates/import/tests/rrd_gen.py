"""Writes RRD files with Debian's rrdtool (python3-rrdtool) and dumps what rrdtool reads back.

    /usr/bin/python3 rrd_gen.py OUT_DIR

Run by tests/rrd_diff.rs. Writes OUT_DIR/*.rrd and prints one JSON document on stdout:

    {"version": rrdtool's lib_version,
     "files": [{"file": "x.rrd",
                "info": {"version", "step", "last_update",
                         "ds": [[name, type, heartbeat, min, max], ...],
                         "rra": [[cf, rows, pdp_per_row, xff, cur_row], ...]}
                        (min, max, xff: numbers as `rrdtool info` prints them, 10
                        decimals, or null for NaN or absent),
                "fetches": [{"cf", "start", "end", "resolution",
                             "result": "error message" | [start, end, step, [names], [[value, ...], ...]]}]}]}

A fetched value is null for unknown (rrdtool gives None for NaN)
or the 16 hex digits of the IEEE-754 bits of the double, big-endian, so they compare bit
for bit.

Everything is seeded: the same files and cases every run.
"""

import json
import math
import os
import random
import struct
import subprocess
import sys

import rrdtool

T0 = 1_700_000_000


def bits(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return struct.pack(">d", float(v)).hex()


# name -> (step, data sources, RRAs, how to update)
FILES = {
    "kinds": (
        60,
        ["DS:gauge:GAUGE:120:U:U", "DS:counter:COUNTER:120:0:U",
         "DS:derive:DERIVE:180:U:U", "DS:absolute:ABSOLUTE:120:0:1e9"],
        ["RRA:AVERAGE:0.5:1:100", "RRA:AVERAGE:0.5:5:50", "RRA:MIN:0.5:5:50",
         "RRA:MAX:0.5:5:50", "RRA:LAST:0.5:5:50", "RRA:AVERAGE:0.5:60:30",
         "RRA:MAX:0:60:30"],
        "gaps",
    ),
    "wrapped": (
        10,
        ["DS:temp:GAUGE:20:-50:150"],
        ["RRA:AVERAGE:0:1:30", "RRA:MIN:0.3:3:20", "RRA:MAX:0.9:3:20",
         "RRA:LAST:0:6:10", "RRA:AVERAGE:0.99:7:13"],
        "gaps",
    ),
    "munin": (
        300,
        ["DS:42:GAUGE:600:U:U"],
        ["RRA:AVERAGE:0.5:1:576", "RRA:MIN:0.5:1:576", "RRA:MAX:0.5:1:576",
         "RRA:AVERAGE:0.5:6:432", "RRA:MIN:0.5:6:432", "RRA:MAX:0.5:6:432",
         "RRA:AVERAGE:0.5:24:540", "RRA:MIN:0.5:24:540", "RRA:MAX:0.5:24:540",
         "RRA:AVERAGE:0.5:288:450", "RRA:MIN:0.5:288:450", "RRA:MAX:0.5:288:450"],
        "dense",
    ),
    "collectd": (
        10,
        ["DS:rx:DERIVE:20:0:U", "DS:tx:DERIVE:20:0:U"],
        ["RRA:AVERAGE:0.1:1:1200", "RRA:MIN:0.1:1:1200", "RRA:MAX:0.1:1:1200",
         "RRA:AVERAGE:0.1:7:1235", "RRA:MIN:0.1:7:1235", "RRA:MAX:0.1:7:1235",
         "RRA:LAST:0.1:50:100"],
        "counters",
    ),
    "compute": (
        30,
        ["DS:a:GAUGE:60:U:U", "DS:b:GAUGE:60:U:U", "DS:sum:COMPUTE:a,b,+"],
        ["RRA:AVERAGE:0.5:1:40", "RRA:LAST:0.5:2:40", "RRA:MHWPREDICT:50:0.1:0.0035:10"],
        "gaps",
    ),
    # DCOUNTER and DDERIVE make rrdtool write version 0005 (MHWPREDICT above: 0004)
    "floats": (
        15,
        ["DS:dc:DCOUNTER:30:U:U", "DS:dd:DDERIVE:45:U:U"],
        ["RRA:AVERAGE:0.5:1:200", "RRA:MAX:0.5:4:60", "RRA:LAST:0.5:4:60",
         "RRA:MIN:0.2:13:17"],
        "dcounters",
    ),
    "empty": (
        60,
        ["DS:nothing:GAUGE:120:U:U"],
        ["RRA:AVERAGE:0.5:1:10", "RRA:MAX:0.5:10:10"],
        None,
    ),
}


def updates(name, step, nds, how, rng):
    """Update strings, in time order: random values, unknowns, gaps past the
    heartbeat, fractional timestamps, several updates within one step."""
    out = []
    t = T0
    counters = [rng.randint(0, 10**6) for _ in range(nds)]
    n = {"gaps": 600, "dense": 2500, "counters": 3000, "dcounters": 800}[how]
    for i in range(n):
        r = rng.random()
        if how == "gaps" and r < 0.03:
            t += step * rng.randint(3, 40)  # a gap longer than the heartbeat
        elif r < 0.1:
            t += rng.randint(1, step // 2)
        else:
            t += step
        ts = str(t)
        if rng.random() < 0.05:
            ts = "%d.%06d" % (t, rng.randint(1, 999999))
            t += 1
        vals = []
        for k in range(nds):
            if rng.random() < 0.04:
                vals.append("U")
            elif how == "dcounters":
                counters[k] += rng.uniform(0, 1e5)
                vals.append(repr(counters[k]))
            elif how == "counters" or name == "kinds" and k in (1, 2, 3):
                counters[k] += rng.randint(0, 10**5)
                if rng.random() < 0.01:
                    counters[k] = rng.randint(0, 1000)  # a reset
                vals.append(str(counters[k]))
            elif name == "wrapped":
                vals.append("%.3f" % rng.uniform(-60, 160))  # some outside min/max
            else:
                vals.append(repr(rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-6, 6)))
        out.append(ts + ":" + ":".join(vals))
    return out


def info(path):
    """`rrdtool info` from the command line (python3-rrdtool 0.1.10 leaves out the
    float fields). Floats there are printed with 10 decimals: min, max and xff are
    numbers (or null for NaN) compared to that precision."""
    text = subprocess.run(["rrdtool", "info", path], capture_output=True, text=True,
                          check=True).stdout
    i = {}
    for line in text.splitlines():
        key, _, value = line.partition(" = ")
        i[key] = value.strip('"')

    def num(v):
        return None if v is None or v == "NaN" else float(v)

    names = sorted(
        {key[3:key.index("]")] for key in i if key.startswith("ds[")},
        key=lambda n: int(i["ds[%s].index" % n]))
    ds = []
    for n in names:
        hb = i.get("ds[%s].minimal_heartbeat" % n)
        ds.append([n, i["ds[%s].type" % n], None if hb is None else int(hb),
                   num(i.get("ds[%s].min" % n)), num(i.get("ds[%s].max" % n))])
    rra = []
    k = 0
    while "rra[%d].cf" % k in i:
        p = "rra[%d]." % k
        rra.append([i[p + "cf"], int(i[p + "rows"]), int(i[p + "pdp_per_row"]),
                    num(i.get(p + "xff")), int(i[p + "cur_row"])])
        k += 1
    return {"version": i["rrd_version"], "step": int(i["step"]),
            "last_update": int(i["last_update"]), "ds": ds, "rra": rra}


def fetch(path, cf, start, end, res):
    # python3-rrdtool 0.1.10 frees twice when rrdtool refuses a fetch (it aborts), so
    # the cases rrdtool may refuse ask the command line first.
    if start > end or cf not in ("AVERAGE", "MIN", "MAX", "LAST"):
        cli = subprocess.run(
            ["rrdtool", "fetch", path, cf, "-s", str(start), "-e", str(end), "-r", str(res)],
            capture_output=True, text=True, check=False)
        if cli.returncode != 0:
            return cli.stdout.strip() + cli.stderr.strip()
    (s, e, st), names, rows = rrdtool.fetch(
        path, cf, "-s", str(start), "-e", str(end), "-r", str(res))
    return [s, e, st, list(names), [[bits(v) for v in row] for row in rows]]


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(11)
    files = []
    for name, (step, dss, rras, how) in FILES.items():
        path = os.path.join(out_dir, name + ".rrd")
        if os.path.exists(path):
            os.remove(path)
        rrdtool.create(path, "--start", str(T0), "--step", str(step), *dss, *rras)
        last = T0
        if how:
            ups = updates(name, step, len(dss) - dss_compute(dss), how, rng)
            for u in ups:
                rrdtool.update(path, u)  # one by one: python3-rrdtool 0.1.10 crashes on long argument lists
            last = int(float(ups[-1].split(":")[0]))
        cfs = ["AVERAGE", "MIN", "MAX", "LAST", "MHWPREDICT", "FAILURES"]
        longest = max(step * int(r.split(":")[3]) * int(r.split(":")[4])
                      for r in rras if r.split(":")[1] in ("AVERAGE", "MIN", "MAX", "LAST"))
        fetches = []
        resolutions = [1, step, 2 * step, 5 * step, 7 * step, 60 * step, 300 * step,
                       step + 1, 86400]
        for _ in range(600):
            cf = rng.choice(cfs)
            start = last - rng.randint(-10 * step, longest + 20 * step)
            if rng.random() < 0.2:
                start -= start % step
            end = start + rng.choice([0, 1, step, rng.randint(0, 3 * longest)])
            if rng.random() < 0.05:
                start, end = end + 1, start  # refused: end before start
            res = rng.choice(resolutions)
            fetches.append({"cf": cf, "start": start, "end": end, "resolution": res,
                            "result": fetch(path, cf, start, end, res)})
        files.append({"file": name + ".rrd", "info": info(path), "fetches": fetches})
    json.dump({"version": rrdtool.lib_version(), "files": files}, sys.stdout)


def dss_compute(dss):
    return sum(1 for d in dss if ":COMPUTE:" in d)


if __name__ == "__main__":
    main()
