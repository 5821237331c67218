#!/usr/bin/env python3
"""Fills the expected answers of the function golden files from graphite-web 1.1.10.

    target/graphite-venv/bin/python crates/query/src/functions/golden/capture.py [FILE...]

Loads dataset.txt (beside this script) into whisper files (one archive per series, as
the Rust test loads it into a MemorySource), starts graphite-web on them, and for every
case line of each golden file (`> target | from=... | until=...`) asks
`/render?format=json` with the dataset's `now`, then rewrites the file with graphite-web's
answer under each case:

    > movingAverage(a.b.c1,3) | from=-20min
    = movingAverage(a.b.c1,3)	{"name": "a.b.c1", "movingAverage": "3"}	1699999260	60	1.5 _ 2.25

one `=` line per series: name, tags (as graphite-web's JSON writes them), first
timestamp, step, values (Python repr, `_` for null). A request graphite-web refuses or
fails gives `! <status>`. Comments (`#`) and case lines are kept as they are.

Needs the harness venv (tests/graphite-diff/setup.sh) for graphite-web and whisper.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import whisper

HERE = os.path.dirname(os.path.abspath(__file__))

SETTINGS = """
SECRET_KEY = "golden"
TIME_ZONE = "UTC"
STORAGE_DIR = {storage!r}
WHISPER_DIR = {whisper!r}
STANDARD_DIRS = [WHISPER_DIR]
LOG_DIR = {logs!r}
INDEX_FILE = {index!r}
CARBONLINK_HOSTS = []
USE_WORKER_POOL = False
"""


def load_dataset(whisper_dir):
    now = None
    for line in open(os.path.join(HERE, "dataset.txt")):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        if f[0] == "now":
            now = int(f[1])
            continue
        name, step, retention, offset = f[0], int(f[1]), int(f[2]), int(f[3])
        path = os.path.join(whisper_dir, *name.split(".")) + ".wsp"
        os.makedirs(os.path.dirname(path), exist_ok=True)
        whisper.create(path, [(step, retention // step)], xFilesFactor=0.0, aggregationMethod="average")
        points = [(now + offset + i * step, float(v)) for i, v in enumerate(f[4:]) if v != "_"]
        if points:
            whisper.update_many(path, points, now=now)
    return now


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_graphite(work):
    storage = os.path.join(work, "storage")
    whisper_dir = os.path.join(storage, "whisper")
    logs = os.path.join(storage, "log")
    os.makedirs(whisper_dir)
    os.makedirs(logs)
    now = load_dataset(whisper_dir)
    settings = os.path.join(work, "settings")
    os.makedirs(settings)
    with open(os.path.join(settings, "golden_settings.py"), "w") as f:
        f.write(SETTINGS.format(storage=storage, whisper=whisper_dir, logs=logs,
                                index=os.path.join(storage, "index")))
    env = dict(os.environ, PYTHONPATH=settings, GRAPHITE_SETTINGS_MODULE="golden_settings",
               DJANGO_SETTINGS_MODULE="graphite.settings", TZ="UTC")
    subprocess.run([sys.executable, "-m", "django", "migrate", "--noinput"], env=env, cwd=storage,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = free_port()
    log = open(os.path.join(work, "graphite.log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "django", "runserver", "--noreload",
                             "127.0.0.1:%d" % port], env=env, cwd=storage, stdout=log,
                            stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/metrics/index.json", timeout=5).read()
            return proc, base, now
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("graphite-web did not start; see %s" % log.name)
            time.sleep(0.2)


def answer(base, now, case):
    target, *options = [part.strip() for part in case.split(" | ")]
    params = [("target", target), ("format", "json"), ("now", str(now))]
    for option in options:
        key, _, value = option.partition("=")
        params.append((key, value))
    url = base + "/render?" + urllib.parse.urlencode(params)
    try:
        body = urllib.request.urlopen(url, timeout=60).read()
    except urllib.error.HTTPError as e:
        return ["! %d" % e.code]
    lines = []
    for s in json.loads(body):
        points = s["datapoints"]
        first = points[0][1] if points else 0
        step = points[1][1] - points[0][1] if len(points) > 1 else 0
        values = " ".join("_" if v is None else repr(float(v)) for v, _ in points)
        lines.append("= %s\t%s\t%d\t%d\t%s" % (s["target"], json.dumps(s["tags"]), first, step, values))
    return lines


def capture(path, base, now):
    out = []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith(("=", "!")):
            continue
        out.append(line)
        if line.startswith("> "):
            out.extend(answer(base, now, line[2:]))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    files = sys.argv[1:] or sorted(
        os.path.join(HERE, f) for f in os.listdir(HERE) if f.endswith(".txt") and f != "dataset.txt"
    )
    work = tempfile.mkdtemp(prefix="sumi-golden-")
    proc = None
    try:
        proc, base, now = start_graphite(work)
        for path in files:
            capture(path, base, now)
            print("captured", path)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
