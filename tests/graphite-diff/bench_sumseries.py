#!/usr/bin/env python3
"""End-to-end timing of one aggregation over many series: sumi against graphite-web 1.1.10.

    target-NAME/graphite-venv/bin/python tests/graphite-diff/bench_sumseries.py \
        --sumi-bin target-NAME/release/sumi [--series 1000] [--points 8640] [--reps 30]

Writes the same points (``bench.hostNN.mMM``, --series series of --points points --step
seconds apart, ending at the current time, 2% of them missing) into whisper files for
graphite-web and into a running ``sumi serve`` over carbon plaintext, checks that both
answer ``target=sumSeries(bench.*.*)`` identically, then times that request over HTTP
--reps times against each server (one request at a time) and prints the medians.
"""

import argparse
import json
import os
import random
import shutil
import socket
import statistics
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gdiff import procs, servers  # noqa: E402

SCHEMAS = "[bench]\npattern = ^bench\\.\nretentions = {step}s:{points}\n"
AGGREGATION = "[bench]\npattern = ^bench\\.\nxFilesFactor = 0\naggregationMethod = average\n"


def series_names(n):
    per_host = 100
    return ["bench.host%02d.m%02d" % (i // per_host, i % per_host) for i in range(n)]


def values(seed, points):
    r = random.Random(seed)
    level = r.uniform(10, 90)
    out = []
    for _ in range(points):
        level += r.gauss(0, 1)
        out.append(None if r.random() < 0.02 else round(level, 2))
    return out


def timed_get(url):
    start = time.perf_counter()
    r = procs.http_get(url, timeout=120)
    elapsed = time.perf_counter() - start
    if r.status != 200:
        raise SystemExit("GET %s: %s %r" % (url, r.status, r.body[:200]))
    return elapsed, r.body


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sumi-bin", required=True)
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--points", type=int, default=8640)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--target", action="append",
                    help="a target to time (repeatable; default sumSeries(bench.*.*))")
    ap.add_argument("--sumi-only", action="store_true", help="time sumi only (graphite-web is slow)")
    args = ap.parse_args()

    import whisper

    work = tempfile.mkdtemp(prefix="sumi-bench-sumseries-")
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    ps = procs.Procs(logs)
    try:
        schemas = os.path.join(work, "storage-schemas.conf")
        aggregation = os.path.join(work, "storage-aggregation.conf")
        with open(schemas, "w") as f:
            # an hour more than the data, so that no point ages out while they are written
            f.write(SCHEMAS.format(step=args.step, points=args.points + 3600 // args.step))
        with open(aggregation, "w") as f:
            f.write(AGGREGATION)
        now = int(time.time())
        last = now - now % args.step
        first = last - (args.points - 1) * args.step
        names = series_names(args.series)

        carbon, pickle_port, http = procs.free_ports(3)
        sumi, sumi_base = servers.start_sumi(ps, os.path.abspath(args.sumi_bin), work,
                                             (carbon, pickle_port, http), schemas, aggregation)
        graphite = servers.Graphite(work, os.path.dirname(os.path.dirname(sys.executable)))
        start = time.monotonic()
        stored = 0
        with socket.create_connection(("127.0.0.1", carbon)) as sock:
            for i, name in enumerate(names):
                vals = values(i, args.points)
                points = [(first + k * args.step, v) for k, v in enumerate(vals) if v is not None]
                stored += len(points)
                path = os.path.join(graphite.whisper_dir, *name.split(".")) + ".wsp"
                os.makedirs(os.path.dirname(path), exist_ok=True)
                whisper.create(path, [(args.step, args.points)], xFilesFactor=0.0)
                whisper.update_many(path, points, now=now)
                sock.sendall("".join("%s %r %d\n" % (name, v, ts) for ts, v in points).encode())
        print("wrote %d series x %d points (%d stored) in %.1fs"
              % (args.series, args.points, stored, time.monotonic() - start), flush=True)
        counters = servers.wait_stored(sumi, sumi_base, stored, timeout=600)
        if counters.get("stored") != stored:
            raise SystemExit("sumi stored %s points, expected %d" % (counters.get("stored"), stored))
        gw = graphite.start(ps, procs.free_ports(1)[0], logs)

        same = True
        for target in args.target or ["sumSeries(bench.*.*)"]:
            query = "/render?" + urllib.parse.urlencode(
                [("target", target), ("format", "json"), ("from", "-24h"), ("now", str(now))])
            answers = {}
            for who, base in (("sumi", sumi_base), ("graphite-web", gw)):
                _, body = timed_get(base + query)  # warm-up: caches, first fetch
                answers[who] = json.loads(body)
            ok = answers["sumi"] == answers["graphite-web"]
            same = same and ok
            print("%s: answers identical: %s (%d series)" % (target, ok, len(answers["sumi"])))
            servers_timed = (("sumi", sumi_base),) if args.sumi_only else (("sumi", sumi_base), ("graphite-web", gw))
            for who, base in servers_timed:
                times = [timed_get(base + query)[0] for _ in range(args.reps)]
                print("%-12s %s: median %.1f ms, min %.1f ms, max %.1f ms over %d requests"
                      % (who, target, 1000 * statistics.median(times), 1000 * min(times),
                         1000 * max(times), len(times)), flush=True)
        return 0 if same else 1
    finally:
        ps.stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
