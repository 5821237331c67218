#!/usr/bin/env bash
# scripts/cluster-replay.sh DIR [SERIES] [POINTS] [NODE]
#
# Replay speed after `kill -9` of a storage node, on a cluster that scripts/cluster-up.sh
# started in DIR: storage node NODE (default 2) is killed with SIGKILL, `sumi bench`
# sends SERIES x POINTS carbon points (default 20000 x 10) to the ingest node, and once
# Kafka has them all and the other storage nodes have applied them the node is
# started again. Prints how long it took from its start to having applied every record
# of its partitions (its offsets those of the other replicas), the points it applied meanwhile, and the catch-up rate
# (points/s) counted from its start and from its first applied point.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || die "usage: cluster-replay.sh DIR [SERIES] [POINTS] [NODE]"
exec python3 - "$here" "$1" "${2:-20000}" "${3:-10}" "${4:-2}" <<'PY'
import os, re, subprocess, sys, time, urllib.request

here, dir, series, points, node = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def load_env():
    env = {}
    for line in open(os.path.join(dir, "cluster.env")):
        k, _, v = line.strip().partition("=")
        env[k] = v
    return env
env = load_env()

def metrics(addr):
    try:
        return urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    except Exception:
        return None

def total(text, name):
    # the sum of a metric over its labels
    return sum(float(m.group(1)) for m in re.finditer(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M))

others = [n for n in (1, 2, 3) if n != node]
subprocess.run([os.path.join(here, "cluster-node.sh"), dir, "kill", str(node)], check=True)
produced0 = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total")
bench = subprocess.Popen(
    [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
     "--series", str(series), "--points", str(points), "--no-progress", "--probes", "0",
     "--stall-timeout", "600", "--prefix", "replayload"],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "replay-bench.log"), "w"))
want = produced0 + series * points
while total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") < want:
    if bench.poll() is not None:
        sys.exit("sumi bench ended before sending everything: see %s/replay-bench.log" % dir)
    time.sleep(0.2)
# (the generator would wait for the ingest node to store the points, which it never does)
bench.kill()
bench.wait()
while any(total(metrics(env["NODE%d_HTTP" % n]), "sumi_cluster_consume_lag_records") > 0 for n in others):
    time.sleep(0.2)
def offsets(text):
    return {int(m.group(1)): float(m.group(2)) for m in re.finditer(
        r'^sumi_cluster_consume_next_offset\{partition="(\d+)"\} (\S+)$', text, re.M)}
# where the node must get to: its partitions' offsets on the other (caught-up) replicas
target = {}
for n in others:
    for p, o in offsets(metrics(env["NODE%d_HTTP" % n])).items():
        target[p] = max(target.get(p, 0), o)
owned = [int(p) for p in env["NODE%d_PARTITIONS" % node].split(",")]
target = {p: target[p] for p in owned}
print("load in Kafka and on nodes %s; starting node %d (to reach offsets %s)" % (others, node, target), file=sys.stderr)

t0 = time.monotonic()
subprocess.run([os.path.join(here, "cluster-node.sh"), dir, "start", str(node), "--no-wait"], check=True)
addr = env["NODE%d_HTTP" % node]
first = None
while True:
    text = metrics(addr)
    if text is not None:
        applied = total(text, "sumi_cluster_consume_points_total")
        if applied > 0 and first is None:
            first = time.monotonic()
        got = offsets(text)
        if all(got.get(p, -1) >= o for p, o in target.items()):
            break
    time.sleep(0.05)
t1 = time.monotonic()
first = first or t1
# the points counter may trail the offsets by the last record in one scrape
time.sleep(0.5)
applied = total(metrics(addr), "sumi_cluster_consume_points_total")
print("node %d: %d points replayed in %.2f s from its start (%.0f points/s); %.2f s and %.0f points/s from its first applied point"
      % (node, applied, t1 - t0, applied / (t1 - t0), t1 - first, applied / max(t1 - first, 1e-9)))
PY
