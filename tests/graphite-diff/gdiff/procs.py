"""Child processes with bounded waits, free loopback ports, and a small HTTP client.

Every child runs in its own process group with its output in a log file; ``Procs.stop_all``
(called on every exit path by ``run.py``) terminates each group, waits a bounded time and
kills what is left. Nothing here waits without a deadline.
"""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request


class HarnessError(Exception):
    """The harness could not do its job (a server did not start, a wait timed out)."""


def free_ports(n):
    """n distinct loopback ports that were free a moment ago (bound to port 0, closed)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


class Response:
    def __init__(self, status, content_type, body):
        self.status = status
        self.content_type = content_type
        self.body = body

    @property
    def media_type(self):
        return (self.content_type or "").split(";")[0].strip().lower()


def http_get(url, timeout=30.0):
    """GET url; a Response for any HTTP status, HarnessError when nothing answered."""
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Response(r.status, r.headers.get("Content-Type"), r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, e.headers.get("Content-Type"), e.read())
    except (urllib.error.URLError, OSError) as e:
        raise HarnessError("GET %s: %s" % (url, e))


def log_tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            data = f.read()[-16384:]
    except OSError:
        return "(no log at %s)" % path
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


class Proc:
    def __init__(self, name, popen, log_path):
        self.name = name
        self.popen = popen
        self.log_path = log_path

    def check_alive(self):
        code = self.popen.poll()
        if code is not None:
            raise HarnessError(
                "%s exited with status %s; last lines of %s:\n%s"
                % (self.name, code, self.log_path, log_tail(self.log_path))
            )

    def stop(self, grace=10.0):
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(timeout=grace)


def _die_with_parent():
    """In the child before exec: ask Linux to SIGTERM it when the harness dies, even by
    SIGKILL, so no server outlives a killed run."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the normal cleanup paths still apply


class Procs:
    """The children of one run."""

    def __init__(self, log_dir):
        self.log_dir = log_dir
        self.procs = []

    def start(self, name, argv, env=None, cwd=None):
        log_path = os.path.join(self.log_dir, name + ".log")
        with open(log_path, "wb") as log:
            try:
                popen = self._popen(argv, log, env, cwd)
            except OSError as e:
                raise HarnessError("cannot start %s (%s): %s" % (name, argv[0], e))
        proc = Proc(name, popen, log_path)
        self.procs.append(proc)
        return proc

    @staticmethod
    def _popen(argv, log, env, cwd):
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,  # its own process group, killed as one
            preexec_fn=_die_with_parent,
        )

    def stop(self, proc):
        """Stops one child (SIGTERM, then SIGKILL after a grace period)."""
        proc.stop()
        self.procs.remove(proc)

    def stop_all(self):
        for proc in reversed(self.procs):
            proc.stop()
        self.procs = []


def run_checked(argv, log_path, timeout, env=None, cwd=None):
    """Runs a command to completion within timeout; HarnessError with its output otherwise."""
    with open(log_path, "wb") as log:
        try:
            code = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                timeout=timeout,
            ).returncode
        except subprocess.TimeoutExpired:
            raise HarnessError("%s did not finish within %ss" % (" ".join(argv), timeout))
    if code != 0:
        raise HarnessError(
            "%s exited with status %s:\n%s" % (" ".join(argv), code, log_tail(log_path))
        )


def wait_http_ok(proc, url, timeout):
    """Polls url until it answers 200, the process dies, or timeout seconds pass."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        proc.check_alive()
        try:
            r = http_get(url, timeout=2.0)
            if r.status == 200:
                return
            last = "status %s" % r.status
        except HarnessError as e:
            last = str(e)
        time.sleep(0.1)
    raise HarnessError(
        "%s: %s did not answer 200 within %ss (last: %s); log:\n%s"
        % (proc.name, url, timeout, last, log_tail(proc.log_path))
    )
