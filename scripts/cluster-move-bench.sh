#!/usr/bin/env bash
# scripts/cluster-move-bench.sh DIR [SERIES] [POINTS]
#
# Time to move a partition, on a cluster that scripts/cluster-up.sh started in DIR
# (6 partitions, nothing moved yet): `sumi bench` sends SERIES x POINTS carbon points
# (default 100000 x 60, one a minute, so every point has its own slot) to the ingest
# node; once Kafka and every storage node have them, scripts/cluster-move.sh moves
# partition 0 from node 1 to a new node 4. Prints the dump's size (the partition's
# direct writes as copied, 16 bytes a point plus names), the seconds from node 4's
# start to counting as the partition's replica (process start, copy, catch-up), the
# copy alone (from node 4's log), and both per GiB of dump. With
# SUMI_MOVE_LOAD_RATE=N, a second `sumi bench` sends N points a second (to 10,000 other
# series, one point a second each) from 3 s before the move until node 4 counts, and
# the points Kafka acknowledged meanwhile are printed too.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || die "usage: cluster-move-bench.sh DIR [SERIES] [POINTS]"
exec python3 - "$here" "$1" "${2:-100000}" "${3:-60}" <<'PY'
import os, re, subprocess, sys, time, urllib.request

here, dir, series, points = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
env = dict(l.strip().partition("=")[::2] for l in open(os.path.join(dir, "cluster.env")) if "=" in l)

def metrics(addr):
    try:
        return urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    except Exception:
        return ""

def total(text, name):
    return sum(float(m.group(1)) for m in re.finditer(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M))

produced0 = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total")
bench = subprocess.Popen(
    [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
     "--series", str(series), "--points", str(points), "--step", "60", "--no-progress",
     "--probes", "0", "--stall-timeout", "600", "--prefix", "moveload"],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "move-bench.log"), "w"))
want = produced0 + series * points
while total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") < want:
    if bench.poll() is not None:
        sys.exit("sumi bench ended before sending everything: see %s/move-bench.log" % dir)
    time.sleep(0.5)
bench.kill()
bench.wait()
time.sleep(1.5)
while any(total(metrics(env["NODE%d_HTTP" % n]), "sumi_cluster_consume_lag_records") > 0 for n in (1, 2, 3)):
    time.sleep(0.5)
print("%d points in Kafka and on every replica; moving partition 0 from node 1 to node 4" % (series * points), file=sys.stderr)
rate = int(os.environ.get("SUMI_MOVE_LOAD_RATE", "0") or 0)
load = None
if rate > 0:
    load = subprocess.Popen(
        [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
         "--series", "10000", "--points", "300", "--step", "1", "--rate", str(rate),
         "--no-progress", "--probes", "0",
         "--stall-timeout", "600", "--prefix", "moveload2"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "move-load.log"), "w"))
    time.sleep(3)
    during0 = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total")
    t_move = time.time()
out = subprocess.run([os.path.join(here, "cluster-move.sh"), dir, "0", "1", "4"],
                     check=True, capture_output=True, text=True).stdout
if load is not None:
    during = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") - during0
    secs = time.time() - t_move
    load.kill()
    load.wait()
    print("write load during the move: %d points acknowledged in %.1f s (%.0f points/s)"
          % (during, secs, during / secs))
m = re.search(r"after ([0-9.]+) s", out)
counted = float(m.group(1))
log = open(os.path.join(dir, "node4", "sumi.log")).read()
c = re.search(r"partition copied from a replica.*?series=(\d+) points=(\d+) bytes=(\d+) secs=([0-9.]+)", log)
nseries, npoints, nbytes, copy = int(c.group(1)), int(c.group(2)), int(c.group(3)), float(c.group(4))
gib = nbytes / 2**30
print("partition 0: %d series, %d points, dump %.1f MiB; node 4 counted after %.2f s (%.0f s/GiB), copy %.2f s (%.0f s/GiB, %.1f MiB/s)"
      % (nseries, npoints, nbytes / 2**20, counted, counted / gib, copy, copy / gib, nbytes / 2**20 / copy))
PY
