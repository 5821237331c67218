"""The two servers under comparison: graphite-web on the whisper files, and sumi.

graphite-web runs as a real HTTP server (Django's ``runserver --noreload``) with its own
settings module: storage under the run's directory, UTC, no carbonlink (the whisper files
are complete, there is no carbon-cache to ask). sumi runs as ``sumi serve`` with the same
two config files and is fed over carbon plaintext TCP, one connection, so that the order
of the lines, which decides the last write to a slot, is the order whisper saw.
"""

import os
import pickle
import re
import socket
import struct
import sys
import time

from . import procs as P

GRAPHITE_SETTINGS = """\
# written by tests/graphite-diff: graphite-web's settings for one differential run
SECRET_KEY = "sumi-graphite-diff"
TIME_ZONE = "UTC"
STORAGE_DIR = {storage!r}
WHISPER_DIR = {whisper!r}
STANDARD_DIRS = [WHISPER_DIR]
LOG_DIR = {logs!r}
INDEX_FILE = {index!r}
CARBONLINK_HOSTS = []
USE_WORKER_POOL = False
FIND_TIMEOUT = 60.0
FETCH_TIMEOUT = 60.0
LOG_RENDERING_PERFORMANCE = False
LOG_CACHE_PERFORMANCE = False
"""


class Graphite:
    """Layout and environment of the graphite-web side of one run."""

    def __init__(self, work, venv):
        self.venv = venv
        self.storage = os.path.join(work, "graphite")
        self.whisper_dir = os.path.join(self.storage, "whisper") + os.sep
        self.settings_dir = os.path.join(work, "graphite-settings")
        self.python = os.path.join(venv, "bin", "python")
        for d in (self.whisper_dir, self.settings_dir, os.path.join(self.storage, "log", "webapp")):
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(self.settings_dir, "sumi_diff_settings.py"), "w") as f:
            f.write(
                GRAPHITE_SETTINGS.format(
                    storage=self.storage,
                    whisper=self.whisper_dir,
                    logs=os.path.join(self.storage, "log", "webapp"),
                    index=os.path.join(self.storage, "index"),
                )
            )

    def env(self):
        env = dict(os.environ)
        env.update(
            PYTHONPATH=self.settings_dir,
            GRAPHITE_SETTINGS_MODULE="sumi_diff_settings",
            DJANGO_SETTINGS_MODULE="graphite.settings",
            PYTHONDONTWRITEBYTECODE="1",
            TZ="UTC",
        )
        return env

    def start(self, procs, port, log_dir):
        """Migrates graphite-web's database, starts it on port, waits until it answers."""
        P.run_checked(
            [self.python, "-m", "django", "migrate", "--noinput"],
            os.path.join(log_dir, "graphite-migrate.log"),
            timeout=180,
            env=self.env(),
            cwd=self.storage,
        )
        proc = procs.start(
            "graphite-web",
            [self.python, "-m", "django", "runserver", "--noreload", "127.0.0.1:%d" % port],
            env=self.env(),
            cwd=self.storage,
        )
        base = "http://127.0.0.1:%d" % port
        P.wait_http_ok(proc, base + "/metrics/index.json", timeout=120)
        return base


def start_sumi(procs, sumi_bin, work, ports, schemas_path, aggregation_path):
    """Starts `sumi serve` on the given (carbon, pickle, http) ports; returns
    (process, http base)."""
    carbon, pickle, http = ports
    data_dir = os.path.join(work, "sumi-data")
    os.makedirs(data_dir, exist_ok=True)
    argv = [
        sumi_bin,
        "serve",
        "--data-dir", data_dir,
        "--carbon", "127.0.0.1:%d" % carbon,
        "--pickle", "127.0.0.1:%d" % pickle,
        "--http", "127.0.0.1:%d" % http,
        "--storage-schemas", schemas_path,
        "--storage-aggregation", aggregation_path,
        # the reference has no carbon.agents tree: keep sumi's own series out of `*`
        "--no-selfmon",
    ]
    proc = procs.start("sumi", argv, cwd=work)
    base = "http://127.0.0.1:%d" % http
    P.wait_http_ok(proc, base + "/health", timeout=60)
    return proc, base


def _send_all(port, chunks, what, timeout):
    """Sends chunks over one TCP connection, closes our side, waits (bounded) for the
    peer's close so that every byte was read before counting starts. Returns
    (bytes sent, None) or (bytes sent, a description of the failure)."""
    sent = 0
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            for chunk in chunks:
                s.sendall(chunk)
                sent += len(chunk)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(timeout)
            while s.recv(4096):
                pass
    except socket.timeout:
        # a receiver that keeps the connection open after our EOF is not wrong
        print("note: sumi kept the %s connection open after EOF" % what, file=sys.stderr)
    except OSError as e:
        return sent, "%s connection failed after %d bytes: %s" % (what, sent, e)
    return sent, None


def feed_carbon(port, lines, timeout=60.0):
    """Sends the lines over one carbon plaintext TCP connection, in order, then closes it."""
    payload = b"".join(lines)
    return _send_all(port, [payload[i : i + 65536] for i in range(0, len(payload), 65536)],
                     "carbon plaintext", timeout)


def feed_pickle(port, entries, per_message=300, timeout=60.0):
    """Sends (name, (ts, value)) entries over one carbon pickle connection, in order.

    Messages are framed as carbon expects (a 4-byte big-endian length, then a pickled
    list) and cycle through the pickle protocols clients use: 2 (carbon's own client),
    0 (text), 4 (Python 3's default) and 5.
    """
    protocols = [2, 0, 4, 5]
    messages = []
    for n, i in enumerate(range(0, len(entries), per_message)):
        payload = pickle.dumps(entries[i : i + per_message], protocol=protocols[n % 4])
        messages.append(struct.pack("!L", len(payload)) + payload)
    return _send_all(port, messages, "carbon pickle", timeout)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def prom_sum(text, name, label=None):
    """Sum of the samples of one metric in Prometheus text format, None if absent.

    label, as ("reason", "too_old"), keeps only the samples carrying it.
    """
    total = None
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        if label is not None and '%s="%s"' % label not in (m.group(2) or ""):
            continue
        try:
            total = (total or 0.0) + float(m.group(3))
        except ValueError:
            continue
    return total


def sumi_counters(base):
    r = P.http_get(base + "/metrics", timeout=10)
    if r.status != 200:
        raise P.HarnessError("GET %s/metrics: status %s" % (base, r.status))
    text = r.body.decode("utf-8", "replace")
    reasons = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) == "sumi_points_rejected_total" and m.group(2):
            reason = re.search(r'reason="([^"]*)"', m.group(2))
            if reason and m.group(3) not in ("0", "0.0"):
                reasons[reason.group(1)] = m.group(3)
    return {
        "rejected": reasons,
        "stored": prom_sum(text, "sumi_points_stored_total"),
        "too_old": prom_sum(text, "sumi_points_rejected_total", ("reason", "too_old")),
        "too_new": prom_sum(text, "sumi_points_rejected_total", ("reason", "too_new")),
    }


def wait_stored(proc, base, want, timeout=60.0):
    """Polls /metrics until sumi_points_stored_total reaches want; returns the last counters.

    Returns early (without raising) when the count overshoots or stays put for 10 s;
    raises when sumi dies.
    The caller compares the counters and reports a difference.
    """
    deadline = time.monotonic() + timeout
    counters, last, since = {}, None, time.monotonic()
    while time.monotonic() < deadline:
        proc.check_alive()
        counters = sumi_counters(base)
        stored = counters["stored"]
        if stored is not None and stored >= want:
            return counters
        if stored != last:
            last, since = stored, time.monotonic()
        elif time.monotonic() - since > 10:
            return counters  # stuck below want: report it rather than wait on
        time.sleep(0.1)
    return counters
