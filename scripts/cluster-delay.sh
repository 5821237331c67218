#!/usr/bin/env bash
# scripts/cluster-delay.sh DIR [RATE] [SECONDS] [PROBES]
#
# The delay from a point sent to the point visible in a cluster query, on a cluster that
# scripts/cluster-up.sh started in DIR: `sumi bench --rate RATE` (default 20000 points/s)
# loads the ingest node over carbon plaintext for about SECONDS (default 30), and
# meanwhile PROBES probes (default 200, one every 100 ms) each send one new value of
# `probe.delay` to the ingest node's carbon port and poll `/render` on the ingest node
# (which asks the storage nodes: a cluster query) every 5 ms until that value is there.
# Prints the delays' p50, p90, p99 and max. The polling is part of the load.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
[ $# -ge 1 ] || die "usage: cluster-delay.sh DIR [RATE] [SECONDS] [PROBES]"
exec python3 - "$1" "${2:-20000}" "${3:-30}" "${4:-200}" <<'PY'
import json, os, socket, subprocess, sys, time, urllib.request

dir, rate, secs, probes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
env = {}
for line in open(os.path.join(dir, "cluster.env")):
    k, _, v = line.strip().partition("=")
    env[k] = v
series = 10000
points = max(1, rate * secs // series)
bench = subprocess.Popen(
    [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
     "--series", str(series), "--points", str(points), "--rate", str(rate), "--step", "1",
     "--no-progress", "--probes", "0", "--stall-timeout", "3600",
     "--prefix", "delayload"],
    stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "delay-bench.log"), "w"))
time.sleep(3)  # the generator builds its payload first
host, port = env["INGEST_CARBON"].rsplit(":", 1)
conn = socket.create_connection((host, int(port)))
conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
url = "http://%s/render?target=probe.delay&from=-10min&until=now&format=json" % env["INGEST_HTTP"]
base = time.time()
delays = []
for i in range(probes):
    if bench.poll() is not None:
        print("note: the load ended before probe %d" % i, file=sys.stderr)
        break
    value = base + i  # unique per probe
    t0 = time.monotonic()
    conn.sendall(("probe.delay %.1f %d\n" % (value, int(time.time()))).encode())
    while True:
        body = json.loads(urllib.request.urlopen(url, timeout=10).read())
        if any(p[0] == round(value, 1) for s in body for p in s["datapoints"]):
            break
        if time.monotonic() - t0 > 30:
            sys.exit("probe %d not visible after 30 s" % i)
        time.sleep(0.005)
    delays.append(time.monotonic() - t0)
    time.sleep(0.1)
bench.kill()
bench.wait()
delays.sort()
def q(p):
    return delays[min(len(delays) - 1, int(p * len(delays)))]
print("probes %d at ~%d points/s of load: delay to visibility p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms"
      % (len(delays), rate, 1000 * q(0.5), 1000 * q(0.9), 1000 * q(0.99), 1000 * delays[-1]))
PY
