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
# series, one point a second each, up to $SUMI_MOVE_LOAD_POINTS a series, default
# 600, at the niceness $SUMI_MOVE_LOAD_NICE, default 0) from 3 s before the move
# until node 4 counts, and the points Kafka acknowledged meanwhile are printed too.
#
# SUMI_MOVE_FILL says how the partition is filled: `bench` (the default, above),
# `random` (scripts/cluster-fill.py: SERIES series of POINTS random doubles, one a
# minute, all of them in partition 0, so a partition of GiBs takes fewer points), or
# `none` (the data is there already, e.g. from an earlier run: only wait for every
# replica to have it). SUMI_MOVE_FROM and SUMI_MOVE_TO (default 1 and 4) choose the
# nodes, so that one fill serves several moves (1 -> 4, then 2 -> 5, ...).
#
# Meanwhile, every second, reads of the moving series (`movefill.h000000.*` or
# `moveload.host00000.*.*`, from 23 hours before the move, so that the window stays in
# the default retention's first archive) are asked of the ingest node and of a storage
# node that is neither FROM nor TO (one with no replica of the partition, if any); an
# answer counts as failed (error or not 200), partial (X-Sumi-Partial) or short (fewer
# series or points than before the move).
# The new node's CPU seconds and peak RSS are sampled every 0.5 s, per phase: start
# (process start to the copy's start), copy, catch-up (copy's end to counted); the
# copying replica's CPU during the copy too.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || die "usage: cluster-move-bench.sh DIR [SERIES] [POINTS]"
exec python3 - "$here" "$1" "${2:-100000}" "${3:-60}" <<'PY'
import datetime, json, os, re, subprocess, sys, threading, time, urllib.parse, urllib.request

here, dir, series, points = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fill = os.environ.get("SUMI_MOVE_FILL", "bench") or "bench"
src, dst = int(os.environ.get("SUMI_MOVE_FROM", "1")), int(os.environ.get("SUMI_MOVE_TO", "4"))
if fill not in ("bench", "random", "none"):
    sys.exit("SUMI_MOVE_FILL is bench, random or none, not %r" % fill)

def read_env():
    return dict(l.strip().partition("=")[::2] for l in open(os.path.join(dir, "cluster.env")) if "=" in l)

env = read_env()
parts = int(env["CLUSTER_PARTITIONS"])

def metrics(addr):
    try:
        return urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    except Exception:
        return ""

def total(text, name):
    return sum(float(m.group(1)) for m in re.finditer(r"^%s(?:\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M))

storage = sorted(int(k[4:-5]) for k in env if re.fullmatch(r"NODE\d+_HTTP", k))
produced0 = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total")
if fill != "none":
    if fill == "bench":
        cmd = [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
               "--series", str(series), "--points", str(points), "--step", "60", "--no-progress",
               "--probes", "0", "--stall-timeout", "600", "--prefix", "moveload"]
    else:
        cmd = [sys.executable, os.path.join(here, "cluster-fill.py"), env["INGEST_CARBON"],
               str(parts), "0", str(series), str(points)]
    t_fill = time.time()
    bench = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "move-bench.log"), "w"))
    want = produced0 + series * points
    while total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") < want:
        if bench.poll() is not None and bench.returncode != 0:
            sys.exit("the fill ended before sending everything: see %s/move-bench.log" % dir)
        time.sleep(0.5)
    bench.kill()
    bench.wait()
    print("fill: %d points acknowledged in %.1f s" % (series * points, time.time() - t_fill))
time.sleep(1.5)
while any(total(metrics(env["NODE%d_HTTP" % n]), "sumi_cluster_consume_lag_records") > 0
          for n in storage if env.get("NODE%d_PID" % n) and os.path.exists("/proc/%s" % env["NODE%d_PID" % n])):
    time.sleep(0.5)
print("the data is in Kafka and on every replica; moving partition 0 from node %d to node %d" % (src, dst), file=sys.stderr)

# reads of the moving series, every second, on the ingest node and a bystander
readers = [("ingest", env["INGEST_HTTP"])]
def answers(addr):
    try:
        return urllib.request.urlopen("http://%s/health" % addr, timeout=5).status == 200
    except Exception:
        return False

# (a node a move left stopped owns nothing; its PID may be another process's by now)
others = [n for n in storage if n not in (src, dst) and env.get("NODE%d_PARTITIONS" % n)
          and answers(env["NODE%d_HTTP" % n])]
# a node that stores no replica of partition 0 reads it from its peers: prefer one
others.sort(key=lambda n: "0" not in env.get("NODE%d_PARTITIONS" % n, "").split(","))
if others:
    readers.append(("node%d" % others[-1], env["NODE%d_HTTP" % others[-1]]))

# a fixed window that stays in the finest archive for an hour (the default retention's
# first archive holds a day): the points in it do not age out during the move
read_from = int(time.time()) - 23 * 3600

def read_once(addr):
    url = "http://%s/render?%s" % (addr, urllib.parse.urlencode({"target": target, "from": str(read_from), "format": "json"}))
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            partial = r.headers.get("X-Sumi-Partial")
            body = json.loads(r.read())
            return ("partial" if partial else "ok", len(body), sum(1 for s in body for v, _ in s["datapoints"] if v is not None))
    except Exception as e:
        return ("failed: %s" % e, 0, 0)

# the fill's series (with SUMI_MOVE_FILL=none, whichever fill is there)
for target in ["movefill.h000000.*", "moveload.host00000.*.*"]:
    if read_once(readers[0][1])[1] > 0:
        break
base = {name: read_once(addr) for name, addr in readers}
for name, b in base.items():
    if b[0] != "ok" or b[1] == 0:
        sys.exit("reads of %s on %s before the move: %s" % (target, name, b))
reads = {name: {"asked": 0, "failed": 0, "partial": 0, "short": 0, "slowest": 0.0} for name, _ in readers}
stop = threading.Event()

def poll(name, addr):
    while not stop.is_set():
        t = time.time()
        status, nseries, npoints = read_once(addr)
        r = reads[name]
        r["asked"] += 1
        r["slowest"] = max(r["slowest"], time.time() - t)
        if status.startswith("failed"):
            r["failed"] += 1
            print("read on %s: %s" % (name, status), file=sys.stderr)
        elif status == "partial":
            r["partial"] += 1
        elif nseries < base[name][1] or npoints < base[name][2]:
            r["short"] += 1
        stop.wait(max(0.0, 1.0 - (time.time() - t)))

# the new node's (and every node's) CPU and RSS, every 0.5 s
tick = os.sysconf("SC_CLK_TCK")
samples = []  # (time, {node: (cpu s, rss bytes)})

def sample():
    while not stop.is_set():
        e = read_env()
        row = {}
        for k, v in e.items():
            m = re.fullmatch(r"NODE(\d+)_PID", k)
            if not m:
                continue
            try:
                f = open("/proc/%s/stat" % v).read().rsplit(")", 1)[1].split()
                rss = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/%s/status" % v).read()).group(1)) * 1024
                row[int(m.group(1))] = ((int(f[11]) + int(f[12])) / tick, rss, v)
            except Exception:
                pass
        samples.append((time.time(), row))
        stop.wait(0.5)

threads = [threading.Thread(target=poll, args=r, daemon=True) for r in readers]
threads.append(threading.Thread(target=sample, daemon=True))
for t in threads:
    t.start()

rate = int(os.environ.get("SUMI_MOVE_LOAD_RATE", "0") or 0)
load = None
if rate > 0:
    load = subprocess.Popen(
        ["nice", "-n", os.environ.get("SUMI_MOVE_LOAD_NICE", "0"), env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
         "--series", "10000", "--points", os.environ.get("SUMI_MOVE_LOAD_POINTS", "600"),
         "--step", "1", "--rate", str(rate), "--no-progress", "--probes", "0",
         "--stall-timeout", "600", "--prefix", "moveload2"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "move-load.log"), "w"))
    # `sumi bench` makes its whole payload first: wait for its points to flow
    while total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") < produced0 + series * points * (fill != "none") + rate:
        if load.poll() is not None:
            sys.exit("the write load ended before the move: see %s/move-load.log" % dir)
        time.sleep(0.5)
    time.sleep(3)
    during0 = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total")
t_move = time.time()
mv = subprocess.Popen([os.path.join(here, "cluster-move.sh"), dir, "0", str(src), str(dst)],
                      stdout=subprocess.PIPE, text=True)
out = ""
for line in mv.stdout:
    out += line
    if "counts as a replica" in line:
        t_counted = time.time()
        if load is not None:
            during = total(metrics(env["INGEST_HTTP"]), "sumi_cluster_produce_points_total") - during0
            secs = time.time() - t_move
            load.kill()
            load.wait()
            print("write load during the move: %d points acknowledged in %.1f s (%.0f points/s)"
                  % (during, secs, during / secs))
if mv.wait() != 0:
    stop.set()
    sys.exit("cluster-move.sh failed")
time.sleep(1)  # reads after FROM let go too
stop.set()
for t in threads:
    t.join()

m = re.search(r"after ([0-9.]+) s", out)
counted = float(m.group(1))
log = open(os.path.join(dir, "node%d" % dst, "sumi.log")).read()
c = re.search(r'^(\S+) .*partition copied from a replica.*?peer="?([^"\s]+)"? .*?series=(\d+) points=(\d+) bytes=(\d+) secs=([0-9.]+)', log, re.M)
stamp = datetime.datetime.strptime(c.group(1)[:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
peer = c.group(2)
nseries, npoints, nbytes, copy = int(c.group(3)), int(c.group(4)), int(c.group(5)), float(c.group(6))
gib = nbytes / 2**30
t_copy_end = stamp
t_copy_start = stamp - copy
source = [n for n in storage if env.get("NODE%d_HTTP" % n) == peer]
print("partition 0: %d series, %d points, dump %.1f MiB; node %d counted after %.2f s (%.0f s/GiB), copy %.2f s (%.0f s/GiB, %.1f MiB/s)"
      % (nseries, npoints, nbytes / 2**20, dst, counted, counted / gib, copy, copy / gib, nbytes / 2**20 / copy))

def at(node, t):
    """(cpu s, rss) of node at the sample nearest t"""
    best = min((s for s in samples if node in s[1]), key=lambda s: abs(s[0] - t), default=None)
    return best[1][node] if best else (0.0, 0, None)

def peak_rss(node, t0, t1):
    return max((s[1][node][1] for s in samples if t0 <= s[0] <= t1 and node in s[1]), default=0)

t_end = t_counted
t_start = t_counted - counted  # cluster-move.sh starts its clock as it starts the node
phases = [("start", t_start, t_copy_start), ("copy", t_copy_start, t_copy_end), ("catch-up", t_copy_end, t_end)]
for name, a, b in phases:
    cpu = at(dst, b)[0] - at(dst, a)[0]
    line = "  %-8s %6.2f s: node %d %.2f CPU-s (%.0f %%), peak RSS %.0f MiB" % (
        name, b - a, dst, cpu, 100 * cpu / max(b - a, 1e-9), peak_rss(dst, a, b) / 2**20)
    if name == "copy" and source:
        scpu = at(source[0], b)[0] - at(source[0], a)[0]
        line += "; node %d (sending) %.2f CPU-s (%.0f %%), peak RSS %.0f MiB" % (
            source[0], scpu, 100 * scpu / max(b - a, 1e-9), peak_rss(source[0], a, b) / 2**20)
    print(line)

def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()[0])

data = os.path.join(dir, "node%d" % dst, "data")
print("  node %d's data after the move: parts %.1f MiB, wal %.1f MiB"
      % (dst, du(os.path.join(data, "parts")) / 2**20, du(os.path.join(data, "wal")) / 2**20))
for name, r in reads.items():
    print("  reads of %s (%d series, %d points) on %s, one a second from before the move to after node %d let go: %d asked, %d failed, %d partial, %d short (slowest %.2f s)"
          % (target, base[name][1], base[name][2], name, src, r["asked"], r["failed"], r["partial"], r["short"], r["slowest"]))
print("  load average: %s" % open("/proc/loadavg").read().strip())
PY
