#!/usr/bin/env bash
# scripts/cluster-bench.sh DIR [SERIES] [POINTS]
#
# End-to-end throughput of a cluster that scripts/cluster-up.sh started in DIR (start
# it with SUMI_SERVE_ARGS=--no-selfmon, so that only the load is counted): `sumi bench`
# sends SERIES x POINTS carbon points (default 100000 x 10) to the ingest node, and
# this waits until the storage nodes have applied every point twice (every partition is
# on two of them), per `sumi_cluster_consume_points_total`. Prints the points/s from the
# first point sent to the last one applied, and the CPU-seconds every process of the
# cluster used meanwhile (Kafka, the ingest node, the storage nodes; the load
# generator apart), and the record bytes a point took through Kafka (the ingest node's
# `sumi_cluster_produce_bytes_total` over its points, before any compression).
#
# With SUMI_BENCH_SINGLE=1 it then runs the same load against a single sumi node that
# `sumi bench` starts (same binary, `--no-selfmon`, data in a temporary directory) and
# prints that node's points/s and points per CPU-second beside the cluster's, and the
# ratios, so that both figures come from the same moment of a shared machine.
# SUMI_BENCH_PREFIX (default `bench`) names the series: a warm-up run with another
# prefix leaves the measured run's series new, as the single node's are.
#
# A broker's JIT compiler keeps compiling through its first millions of points (a broker
# in service compiled long ago), so the broker's CPU is printed with and without its
# compiler threads' share (`C1/C2 CompilerThread`, from /proc/PID/task). With
# SUMI_BENCH_WARM=N, up to N warm-up runs of the same size (series `<prefix>-warmK`)
# come first, until two in a row in which every broker's compiler threads took under
# SUMI_BENCH_WARM_JIT_CPU seconds (default 0.05); the measured run follows.
#
# With SUMI_BENCH_FRESH=1 the measured run meets the state a single node meets: every
# sumi node is restarted (after the warm-ups) and the storage nodes start with empty
# stores whose consumed offsets are the log's end (their data directories are DELETED),
# so that neither the warm-up runs' series (millions of them, larger tables) nor their
# merges land in the measured run. Kafka (and its JIT) stays warm.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
[ $# -ge 1 ] || die "usage: cluster-bench.sh DIR [SERIES] [POINTS]"
dir=$1 series=${2:-100000} points=${3:-10}
SUMI_SCRIPTS=$(cd "$(dirname "$0")" && pwd) exec python3 - "$dir" "$series" "$points" <<'PY'
import os, subprocess, sys, time, urllib.request

dir, series, points = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
env = {}
for f in ("cluster.env", "kafka.env"):
    for line in open(os.path.join(dir, f)):
        k, _, v = line.strip().partition("=")
        env[k] = v
procs = {"kafka%d" % i: int(env["KAFKA%d_PID" % i]) for i in range(1, int(env["KAFKA_BROKERS"]) + 1)}
procs["ingest"] = int(env["INGEST_PID"])
for n in (1, 2, 3):
    procs["node%d" % n] = int(env["NODE%d_PID" % n])
tick = os.sysconf("SC_CLK_TCK")

def cpu(pid):
    # utime + stime of the process and its waited-for children, in seconds
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in f[11:15]) / tick

def counter(addr, name):
    text = urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0

def applied():
    return sum(counter(env["NODE%d_HTTP" % n], "sumi_cluster_consume_points_total") for n in (1, 2, 3))

def produced():
    return counter(env["INGEST_HTTP"], "sumi_cluster_produce_points_total")

def produced_bytes():
    return counter(env["INGEST_HTTP"], "sumi_cluster_produce_bytes_total")

def compiler_cpu(pid):
    # the JIT's compiler threads of a JVM (comm `C2 CompilerThre`, `C1 CompilerThre`)
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            s = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
        except OSError:
            continue
        comm = s[s.index("(") + 1:s.rindex(")")]
        if "CompilerThre" in comm:
            f = s.rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
    return total / tick

kafkas = [k for k in procs if k.startswith("kafka")]

def run(prefix):
    want = applied() + 2 * series * points
    produced0 = produced()
    bytes0 = produced_bytes()
    cpu0 = {k: cpu(p) for k, p in procs.items()}
    jit0 = {k: compiler_cpu(procs[k]) for k in kafkas}
    bench = subprocess.Popen(
        [env["SUMI_BIN"], "bench", "--carbon", env["INGEST_CARBON"], "--http", env["INGEST_HTTP"],
         "--series", str(series), "--points", str(points), "--no-progress", "--probes", "0",
         "--stall-timeout", "3600", "--prefix", prefix],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "bench.log"), "w"))
    # the clock starts when Kafka acknowledges the first batch (the generator first
    # builds its payload)
    while produced() == produced0:
        if bench.poll() is not None:
            sys.exit("sumi bench ended before sending: see %s/bench.log" % dir)
        time.sleep(0.02)
    t0 = time.monotonic()
    last_print = t0
    while True:
        got = applied()
        if got >= want:
            break
        if time.monotonic() - last_print > 10:
            print("  applied %.0f of %.0f" % (got, want), file=sys.stderr)
            last_print = time.monotonic()
        time.sleep(0.1)
    elapsed = time.monotonic() - t0
    cpu1 = {k: cpu(p) for k, p in procs.items()}
    jit = {k: compiler_cpu(procs[k]) - jit0[k] for k in kafkas}
    bench_cpu = 0.0
    try:
        bench_cpu = cpu(bench.pid)
    except Exception:
        pass
    bench.kill()
    bench.wait()
    used = {k: cpu1[k] - cpu0[k] for k in procs}
    nbytes = (produced_bytes() - bytes0) / max(1.0, produced() - produced0)
    return elapsed, used, jit, bench_cpu, nbytes

prefix = os.environ.get("SUMI_BENCH_PREFIX", "bench")
warm_runs = int(os.environ.get("SUMI_BENCH_WARM", "0"))
warm_jit = float(os.environ.get("SUMI_BENCH_WARM_JIT_CPU", "0.05"))
quiet = 0
for k in range(1, warm_runs + 1):
    _, used, jit, _, _ = run("%s-warm%d" % (prefix, k))
    print("warm-up %d: broker cpu-seconds %s, of them the JIT compiler %s" % (
        k, ", ".join("%.2f" % used[b] for b in kafkas), ", ".join("%.2f" % jit[b] for b in kafkas)))
    # compilations come in bursts: two quiet runs in a row
    quiet = quiet + 1 if all(v < warm_jit for v in jit.values()) else 0
    if quiet == 2:
        break
else:
    if warm_runs:
        print("note: the brokers' JIT was still compiling after %d warm-up runs" % warm_runs)

def fresh():
    # every sumi node restarted, the storage nodes with empty stores whose offsets are
    # the log's end (nothing to replay): the measured run meets the state a single
    # node started for it meets, not the series and parts of the warm-up runs
    import shutil
    scripts = os.environ["SUMI_SCRIPTS"]
    for n in (0, 1, 2, 3):
        subprocess.run([os.path.join(scripts, "cluster-node.sh"), dir, "stop", str(n)], check=True, stdout=subprocess.DEVNULL)
    status = subprocess.run([env["SUMI_BIN"], "cluster", "status", "--config", os.path.join(dir, "node1", "sumi.toml")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
    ends = {}
    for line in status.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0] == "partition" and f[2] == "end":
            ends[int(f[1])] = int(f[3])
    for n in (1, 2, 3):
        data = os.path.join(dir, "node%d" % n, "data")
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(os.path.join(data, "cluster"))
        with open(os.path.join(data, "cluster", "offsets"), "w") as f:
            for p in env["NODE%d_PARTITIONS" % n].split(","):
                if p:
                    if int(p) not in ends:
                        sys.exit("no log end for partition %s in `sumi cluster status`:\n%s" % (p, status))
                    f.write("%s %s %d\n" % (env["CLUSTER_TOPIC"], p, ends[int(p)]))
    for n in (0, 1, 2, 3):
        subprocess.run([os.path.join(scripts, "cluster-node.sh"), dir, "start", str(n)], check=True, stdout=subprocess.DEVNULL)
    for line in open(os.path.join(dir, "cluster.env")):
        k, _, v = line.strip().partition("=")
        env[k] = v
    procs["ingest"] = int(env["INGEST_PID"])
    for n in (1, 2, 3):
        procs["node%d" % n] = int(env["NODE%d_PID" % n])
    time.sleep(2)
    print("sumi nodes restarted, storage nodes empty at the log's end")

if os.environ.get("SUMI_BENCH_FRESH") == "1":
    fresh()

total = series * points
elapsed, used, jit, bench_cpu, nbytes = run(prefix)
all_cpu = sum(used.values())
all_jit = sum(jit.values())
print("points %d (each stored twice) in %.2f s from the first acknowledged batch to the last point applied: %.0f points/s end to end" % (total, elapsed, total / elapsed))
print("cpu-seconds: " + ", ".join("%s %.2f" % (k, v) for k, v in used.items()) + "; total %.2f" % all_cpu)
print("points per cpu-second (cluster processes): %.0f" % (total / all_cpu))
print("of it the brokers' JIT compiler threads: " + ", ".join("%s %.2f" % (k, jit[k]) for k in kafkas)
      + "; without them %.0f points per cpu-second" % (total / max(0.01, all_cpu - all_jit)))
print("load generator cpu-seconds: %.2f" % bench_cpu)
print("record bytes per point through kafka: %.2f" % nbytes)
if os.environ.get("SUMI_BENCH_SINGLE") == "1":
    import json
    out = subprocess.run(
        [env["SUMI_BIN"], "bench", "--series", str(series), "--points", str(points),
         "--probes", "0", "--no-progress", "--json", "--server-arg", "--no-selfmon",
         "--stall-timeout", "3600"],
        check=True, stdout=subprocess.PIPE, stderr=open(os.path.join(dir, "bench-single.log"), "w"))
    r = json.loads(out.stdout)
    pps, ppc = r["points_per_sec"], r["points_per_cpu_sec"]
    print("single node: %.0f points/s, %.0f points per cpu-second (server), load generator cpu-seconds %.2f" % (pps, ppc, r.get("client_cpu_secs") or 0))
    print("cluster / single node: points/s %.2f, points per cpu-second %.3f (%.3f without the JIT compiler)" % (
        total / elapsed / pps, total / all_cpu / ppc, total / max(0.01, all_cpu - all_jit) / ppc))
PY
