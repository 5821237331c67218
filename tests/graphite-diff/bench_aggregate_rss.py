#!/usr/bin/env python3
"""Peak RSS and time of one aggregate over many series, for one or more sumi binaries.

    python3 tests/graphite-diff/bench_aggregate_rss.py --sumi-bin A [--sumi-bin B …] \\
        [--series 10000] [--points 2880] [--step 10] [--runs 3] [--reps 5] \\
        [--target 'sumSeries(isNonNull(host*.*.*))']

Not part of any test. Loads --series series (``hostHHH.cCC.mMM``, 100 per host) of
--points points --step seconds apart, ending now, 2% missing, into one data directory
over carbon plaintext with the first binary; then, --runs times for each binary in
turn, starts ``sumi serve`` on that directory, reads its VmHWM (peak RSS) once it
answers /health, asks the target --reps times (after one warm-up) and reads VmHWM
again. Prints per binary the medians of the time per request and of the peak RSS after
the requests, with the RSS at start for reference. The machine is shared: medians, and
say so when quoting them.
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SCHEMAS = "[all]\npattern = .*\nretentions = {step}s:{keep}\n"


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def get(url, timeout=600):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()


def vm(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class Server:
    def __init__(self, binary, work, config, schemas):
        self.carbon, self.pickle, self.http = free_ports(3)
        self.base = "http://127.0.0.1:%d" % self.http
        argv = [binary, "serve", "--data-dir", os.path.join(work, "data"),
                "--carbon", "127.0.0.1:%d" % self.carbon, "--pickle", "127.0.0.1:%d" % self.pickle,
                "--http", "127.0.0.1:%d" % self.http,
                "--config", config, "--storage-schemas", schemas, "--no-selfmon"]
        self.log = open(os.path.join(work, "sumi.log"), "ab")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise SystemExit("sumi exited with %s" % self.proc.returncode)
            try:
                if get(self.base + "/health", timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("sumi did not answer /health")
            time.sleep(0.1)

    def stored(self):
        _, body = get(self.base + "/metrics")
        for line in body.decode().splitlines():
            if line.startswith("sumi_points_stored_total"):
                return float(line.split()[-1])
        return 0.0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        self.log.close()


def load(server, series, points, step):
    now = int(time.time())
    last = now - now % step
    first = last - (points - 1) * step
    stored = 0
    with socket.create_connection(("127.0.0.1", server.carbon)) as sock:
        for i in range(series):
            name = "host%03d.c%02d.m%02d" % (i // 100, (i // 10) % 10, i % 10)
            lines = []
            for k in range(points):
                if (i * 7919 + k * 104729) % 50 == 0:
                    continue  # 2% missing
                lines.append("%s %.2f %d\n" % (name, ((i * 31 + k * 17) % 10000) / 100.0,
                                               first + k * step))
            stored += len(lines)
            sock.sendall("".join(lines).encode())
    deadline = time.monotonic() + 900
    while server.stored() < stored:
        if time.monotonic() > deadline:
            raise SystemExit("sumi stored %s of %d points" % (server.stored(), stored))
        time.sleep(0.5)
    return now


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sumi-bin", action="append", required=True)
    ap.add_argument("--series", type=int, default=10000)
    ap.add_argument("--points", type=int, default=2880)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--target", default="sumSeries(isNonNull(host*.*.*))")
    ap.add_argument("--work-dir")
    args = ap.parse_args()

    work = args.work_dir or tempfile.mkdtemp(prefix="sumi-bench-aggregate-")
    try:
        config = os.path.join(work, "sumi.toml")
        with open(config, "w") as f:
            # the materialising path must be allowed to read the whole glob
            f.write("[http]\nmax_points_per_query = 1000000000\n")
        schemas = os.path.join(work, "storage-schemas.conf")
        with open(schemas, "w") as f:
            f.write(SCHEMAS.format(step=args.step, keep=args.points * 2))
        start = time.monotonic()
        s = Server(args.sumi_bin[0], work, config, schemas)
        now = load(s, args.series, args.points, args.step)
        s.stop()
        print("loaded %d series x %d points in %.0f s" %
              (args.series, args.points, time.monotonic() - start), flush=True)
        span = args.points * args.step
        query = "/render?" + urllib.parse.urlencode(
            [("target", args.target), ("format", "json"), ("from", str(now - span)),
             ("until", str(now)), ("now", str(now))])
        results = {b: {"times": [], "peak": [], "start": []} for b in args.sumi_bin}
        answers = {}
        for run in range(args.runs):
            for b in args.sumi_bin:
                s = Server(b, work, config, schemas)
                try:
                    results[b]["start"].append(vm(s.proc.pid, "VmHWM"))
                    status, body = get(s.base + query)
                    if status != 200:
                        raise SystemExit("%s: %s %r" % (b, status, body[:300]))
                    answers.setdefault(b, body)
                    for _ in range(args.reps):
                        t = time.perf_counter()
                        get(s.base + query)
                        results[b]["times"].append(time.perf_counter() - t)
                    results[b]["peak"].append(vm(s.proc.pid, "VmHWM"))
                finally:
                    s.stop()
        same = len(set(answers.values())) == 1
        print("%s over %d series x %d points; answers identical across binaries: %s"
              % (args.target, args.series, args.points, same))
        mib = 1024.0 * 1024.0
        for b in args.sumi_bin:
            r = results[b]
            print("%s: median %.0f ms per request (%d requests), peak RSS median %.0f MiB "
                  "(runs: %s MiB), RSS peak before the first request %.0f MiB"
                  % (b, 1000 * statistics.median(r["times"]), len(r["times"]),
                     statistics.median(r["peak"]) / mib,
                     ", ".join("%.0f" % (p / mib) for p in r["peak"]),
                     statistics.median(r["start"]) / mib), flush=True)
        return 0 if same else 1
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
