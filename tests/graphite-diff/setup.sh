#!/usr/bin/env bash
# Creates (or checks) the virtualenv holding the reference stack for the differential
# test: graphite-web 1.1.10 + whisper 1.1.10 and the pinned versions they need
# (requirements.txt beside this script).
#
#   tests/graphite-diff/setup.sh            # venv in <repo>/target/graphite-venv
#   SUMI_GRAPHITE_VENV=/path setup.sh       # elsewhere
#   SUMI_PYTHON=python3.11 setup.sh         # a given interpreter
#
# Idempotent: when the venv exists, was built from the same requirements and imports
# cleanly, it returns in well under a second. It never skips: a missing system
# dependency is an error that says which Debian package fixes it. The last line of
# its output is the venv's path.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${SUMI_GRAPHITE_VENV:-$repo/target/graphite-venv}"
reqs="$here/requirements.txt"
stamp="$venv/.sumi-requirements"

die() {
    echo "graphite-diff setup: error: $*" >&2
    exit 1
}

# What the reference stack needs to import: graphite-web's render module loads
# cairocffi, which dlopens libcairo.so.2; Django 3.0 and whisper need their modules.
check_imports() {
    "$venv/bin/python" - <<'EOF'
import sys
if not (3, 9) <= sys.version_info[:2] <= (3, 11):
    sys.exit("the venv runs Python %d.%d; the reference needs 3.9-3.11" % sys.version_info[:2])
try:
    import cairocffi  # noqa: F401  (needs libcairo2)
except OSError as e:
    sys.exit("cannot load the cairo library (%s): apt-get install libcairo2" % e)
from importlib.metadata import version
import django  # noqa: F401
import whisper  # noqa: F401
import graphite  # noqa: F401
want = {"graphite-web": "1.1.10", "whisper": "1.1.10", "Django": "3.0.14"}
got = {name: version(name) for name in want}
if got != want:
    sys.exit("unexpected versions in the venv: %s (want %s)" % (got, want))
EOF
}

# One builder at a time: the server's differential test and sumi-query's reference
# tests may run this at once, and a rebuild starts by removing the venv.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9 || die "cannot lock $venv.lock"

want="$(sha256sum "$reqs" | cut -d' ' -f1)"
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    if err="$(check_imports 2>&1)"; then
        echo "$venv"
        exit 0
    fi
    echo "graphite-diff setup: existing venv fails its check ($err); rebuilding" >&2
fi

# graphite-web 1.1.10 runs on Django 3.0, which imports `cgi` (gone in Python 3.13) and
# `distutils` (gone in 3.12). And from 3.12 on, sum() of floats is compensated, which
# changes whisper's rollups in the last bits: the reference must run on 3.9-3.11.
pick_python() {
    local candidates=("${SUMI_PYTHON:-}" python3 python3.11 python3.10 python3.9)
    for py in "${candidates[@]}"; do
        [[ -n "$py" ]] || continue
        command -v "$py" >/dev/null 2>&1 || continue
        if "$py" -c 'import sys; sys.exit(0 if (3, 9) <= sys.version_info[:2] <= (3, 11) else 1)'; then
            echo "$py"
            return 0
        fi
    done
    return 1
}
python="$(pick_python)" ||
    die "no python3 between 3.9 and 3.11 found (graphite-web 1.1.10 needs one): apt-get install python3 python3-venv, or set SUMI_PYTHON"

if [[ -e "$venv" && ! -f "$venv/pyvenv.cfg" ]]; then
    die "$venv exists and is not a virtualenv; remove it or set SUMI_GRAPHITE_VENV"
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
if ! out="$("$python" -m venv "$venv" 2>&1)"; then
    rm -rf "$venv"
    die "'$python -m venv' failed: $out
fix: apt-get install python3-venv"
fi
[[ -x "$venv/bin/pip" ]] || die "the venv has no pip (ensurepip missing): apt-get install python3-venv"

echo "graphite-diff setup: installing the reference stack into $venv" >&2
if ! "$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$reqs" >&2; then
    die "pip install -r $reqs failed (is PyPI reachable?)"
fi
if ! err="$(check_imports 2>&1)"; then
    die "$err"
fi
echo "$want" >"$stamp"
echo "$venv"
