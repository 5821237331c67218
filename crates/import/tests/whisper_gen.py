"""Writes whisper files with whisper 1.1.10 itself and dumps what whisper reads back.

    python whisper_gen.py OUT_DIR

Run by tests/whisper_diff.rs with the python of the graphite-diff venv. Writes
OUT_DIR/*.wsp and prints one JSON document on stdout:

    {"now": NOW,
     "files": [{"file": "x.wsp",
                "info": {"aggregationMethod", "maxRetention", "xFilesFactor" (f32 bits, hex),
                         "archives": [[offset, secondsPerPoint, points], ...]},
                "fetches": [{"from", "until", "now", "archive": null | secondsPerPoint,
                             "result": null | "invalid" | [from, until, step, [value, ...]]}]}],
     "names": [{"name", "canonical", "hash", "named"}],
     "damaged": [{"file": "damaged_x.wsp", "whisper": "corrupt" | exception | "ok"}]}

A value is null or the 16 hex digits of the IEEE-754 bits of the double (so NaN,
infinities and -0.0 compare bit for bit). "archive" set means the fetch asked for that
archive (whisper's archiveToSelect): the window of one archive at `now`.

Everything is seeded: the same files and cases every run.
"""

import json
import os
import random
import struct
import sys

import whisper
from graphite.tags.utils import TaggedSeries

NOW = 1_700_000_000

SCHEMAS = {
    "one": [(60, 300)],
    "two": [(10, 120), (60, 100)],
    "three": [(1, 60), (10, 60), (60, 50)],
}
METHODS = ["average", "sum", "last", "max", "min", "avg_zero", "absmax", "absmin"]
XFFS = [0.0, 0.3, 0.5, 1.0]


def bits(v):
    return None if v is None else struct.pack(">d", v).hex()


def value(rng):
    r = rng.random()
    if r < 0.01:
        return rng.choice([float("nan"), float("inf"), float("-inf"), -0.0])
    if r < 0.3:
        return float(rng.randint(-1000, 1000))
    return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-12, 12)


def fill(path, schema, rng):
    """Writes in phases: an old lap (left stale in the slots the newer writes miss),
    then the current one in shuffled batches with gaps, then single overwrites."""
    ret = max(s * p for s, p in schema)
    finest = schema[0][0]
    for phase_now in (NOW - 2 * ret - 7, NOW - ret // 3, NOW):
        points = []
        t = phase_now - ret + 1
        while t <= phase_now:
            if rng.random() < 0.7:  # gaps
                points.append((t, value(rng)))
            t += finest * rng.choice([1, 1, 1, 2, 5])
        rng.shuffle(points)
        while points:
            n = rng.randint(1, 40)
            batch, points = points[:n], points[n:]
            whisper.update_many(path, batch, now=phase_now)
    # overwrites, out of order, one at a time
    for _ in range(30):
        t = NOW - rng.randint(0, ret - 1)
        whisper.update(path, value(rng), timestamp=t, now=NOW)


def fetch_case(path, f, u, now, archive=None):
    case = {"from": f, "until": u, "now": now, "archive": archive}
    try:
        r = whisper.fetch(path, f, u, now=now, archiveToSelect=archive)
    except whisper.InvalidTimeInterval:
        case["result"] = "invalid"
        return case
    if r is None:
        case["result"] = None
    else:
        (fr, un, st), values = r
        case["result"] = [fr, un, st, [bits(v) for v in values]]
    return case


def cases(path, schema, rng, count):
    ret = max(s * p for s, p in schema)
    out = []
    for _ in range(count):
        now = NOW + rng.choice([0, 0, 0, rng.randint(-ret, ret), rng.randint(-3 * ret, 3 * ret)])
        f = now - rng.randint(-ret // 4, ret + ret // 2)
        kind = rng.random()
        if kind < 0.1:
            u = f
        elif kind < 0.15:
            u = f - rng.randint(1, 100)  # invalid
        elif kind < 0.3:
            u = now + rng.randint(0, 1000)
        else:
            u = f + rng.randint(0, ret + 100)
        out.append(fetch_case(path, f, u, now))
    for spp, points in schema:
        for now in (NOW, NOW - spp * points // 2, NOW + 3):
            out.append(fetch_case(path, now - spp * points, now, now, archive=spp))
    return out


def info(path):
    i = whisper.info(path)
    return {
        "aggregationMethod": i["aggregationMethod"],
        "maxRetention": i["maxRetention"],
        "xFilesFactor": struct.pack(">f", i["xFilesFactor"]).hex(),
        "archives": [[a["offset"], a["secondsPerPoint"], a["points"]] for a in i["archives"]],
    }


def names(rng):
    fixed = [
        "a.b.c",
        ".lead.dots",
        "cpu.usage;host=web01;dc=eu",
        "some.metric;tag1=value2;tag2=value.2",
        "x;a-b=1;a=2",
        "~tilde.name;k=v",
        "m;name=ignored;z=1",
        "m;k=1;k=2",
        "caf\u00e9.temp;city=z\u00fcrich",
    ]
    for i in range(100):
        tags = ";".join(
            "%s=%s" % (rng.choice(["dc", "host", "a.b", "x-y", "zone"]) + str(rng.randint(0, 3)),
                       rng.choice(["eu", "web.01", "v%d" % i, "noq"]))
            for _ in range(rng.randint(1, 4))
        )
        fixed.append("svc%d.metric.%d;%s" % (i % 7, i, tags))
    out = []
    for name in fixed:
        canonical = TaggedSeries.parse(name).path if ";" in name else name
        out.append({
            "name": name,
            "canonical": canonical,
            "hash": TaggedSeries.encode(canonical, "/", hash_only=True) + ".wsp",
            "named": TaggedSeries.encode(canonical, "/", hash_only=False) + ".wsp",
        })
    return out


def damage(out_dir, good_path):
    """Damaged copies of a good file, with what whisper makes of each: "corrupt" when
    its header reader raises CorruptWhisperFile, else the exception a fetch raises, or
    "ok" when whisper reads it without complaint."""
    with open(good_path, "rb") as fh:
        good = fh.read()

    def patch(at, fmt, v):
        b = bytearray(good)
        struct.pack_into(fmt, b, at, v)
        return bytes(b)

    variants = {
        "empty": b"",
        "cut_header": good[:10],
        "cut_table": good[:30],
        "cut_archive": good[:-5],
        "agg_zero": patch(0, ">L", 0),
        "agg_nine": patch(0, ">L", 9),
        "xff_big": patch(8, ">f", 1.5),
        "xff_nan": patch(8, ">f", float("nan")),
        "no_archives": patch(12, ">L", 0),
        "many_archives": patch(12, ">L", 0xFFFFFFFF),
        "zero_step": patch(20, ">L", 0),
        "zero_points": patch(24, ">L", 0),
        "offset_past_end": patch(16, ">L", len(good)),
    }
    out = []
    for name, data in variants.items():
        file = "damaged_%s.wsp" % name
        path = os.path.join(out_dir, file)
        with open(path, "wb") as fh:
            fh.write(data)
        try:
            whisper.info(path)
        except whisper.CorruptWhisperFile:
            out.append({"file": file, "whisper": "corrupt"})
            continue
        try:
            whisper.fetch(path, NOW - 600, NOW, now=NOW)
            verdict = "ok"
        except Exception as e:  # noqa: BLE001  (what whisper raises is the answer)
            verdict = type(e).__name__
        out.append({"file": file, "whisper": verdict})
    return out


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(11)
    files = []
    n = 0
    for schema_name, schema in SCHEMAS.items():
        for method in METHODS:
            xff = XFFS[n % len(XFFS)]
            n += 1
            file = "%s_%s.wsp" % (schema_name, method)
            path = os.path.join(out_dir, file)
            if os.path.exists(path):
                os.remove(path)
            whisper.create(path, schema, xFilesFactor=xff, aggregationMethod=method)
            fill(path, schema, rng)
            files.append({"file": file, "info": info(path), "fetches": cases(path, schema, rng, 120)})
    # the schema of the benchmark, sparsely written
    schema = [(10, 8640), (60, 43200), (3600, 43800)]
    path = os.path.join(out_dir, "big_average.wsp")
    if os.path.exists(path):
        os.remove(path)
    whisper.create(path, schema, xFilesFactor=0.5, aggregationMethod="average")
    pts = [(NOW - rng.randint(0, 86400 * 60), value(rng)) for _ in range(3000)]
    whisper.update_many(path, pts, now=NOW)
    big = [fetch_case(path, NOW - d, NOW - d + w, NOW)
           for d, w in [(3600, 600), (86400, 86400), (86400 * 7, 86400), (86400 * 400, 86400 * 30),
                        (86400 * 30, 0)]]
    files.append({"file": "big_average.wsp", "info": info(path), "fetches": big})
    damaged = damage(out_dir, os.path.join(out_dir, "two_average.wsp"))
    json.dump({"now": NOW, "files": files, "names": names(rng), "damaged": damaged}, sys.stdout)


if __name__ == "__main__":
    main()
