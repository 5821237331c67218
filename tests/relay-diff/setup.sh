#!/usr/bin/env bash
# Creates (or checks) the virtualenv holding carbon 1.1.10 from PyPI, the reference for
# sumi relay's differential tests (crates/relay/tests/carbon_diff.rs): its placement
# code (carbon.hashing, carbon.routers) and aggregation rules (carbon.aggregator).
#
#   tests/relay-diff/setup.sh            # venv in <repo>/target/carbon-venv
#   SUMI_CARBON_VENV=/path setup.sh      # elsewhere
#
# Idempotent: a venv built from the same requirements that imports cleanly is kept.
# Never skips: a missing python3-venv or an unreachable PyPI is an error. The last line
# of its output is the venv's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${SUMI_CARBON_VENV:-$repo/target/carbon-venv}"
reqs="$here/requirements.txt"
stamp="$venv/.sumi-requirements"

die() {
    echo "relay-diff setup: error: $*" >&2
    exit 1
}

check_imports() {
    "$venv/bin/python" - <<'PY'
from importlib.metadata import version
import carbon.routers, carbon.hashing, carbon.util  # noqa: F401
if version("carbon") != "1.1.10":
    raise SystemExit("carbon %s in the venv, want 1.1.10" % version("carbon"))
PY
}

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9 || die "cannot lock $venv.lock"

want="$(sha256sum "$reqs" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    if err="$(check_imports 2>&1)"; then
        echo "$venv"
        exit 0
    fi
    echo "relay-diff setup: existing venv fails its check ($err); rebuilding" >&2
fi

python="${SUMI_PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || die "no $python: apt-get install python3 python3-venv"
if [[ -e "$venv" && ! -f "$venv/pyvenv.cfg" ]]; then
    die "$venv exists and is not a virtualenv; remove it or set SUMI_CARBON_VENV"
fi
rm -rf "$venv"
if ! out="$("$python" -m venv "$venv" 2>&1)"; then
    rm -rf "$venv"
    die "'$python -m venv' failed: $out
fix: apt-get install python3-venv"
fi
echo "relay-diff setup: installing carbon 1.1.10 into $venv" >&2
# carbon's setup.py installs under /opt/graphite unless GRAPHITE_NO_PREFIX is set.
if ! GRAPHITE_NO_PREFIX=1 "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$reqs" >&2; then
    die "pip install -r $reqs failed (is PyPI reachable?)"
fi
if ! err="$(check_imports 2>&1)"; then
    die "$err"
fi
echo "$want" >"$stamp"
echo "$venv"
