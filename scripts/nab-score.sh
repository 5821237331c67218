#!/usr/bin/env bash
# Scores sumi's anomaly detector with the Numenta Anomaly Benchmark's own scorer.
#
#   scripts/nab-score.sh                 # prove the scorer (numenta = 70.10), then score sumi
#   scripts/nab-score.sh --no-proof      # score sumi only
#   NAB=/path/to/nab SUMI_ANOMALY="suppress=200" scripts/nab-score.sh
#   scripts/nab-score.sh --setup         # only build the venv; prints its path last
#
# Builds (once) a venv in target/nab-venv with the scorer's pinned stack (pandas 1.5.3,
# numpy < 2, simplejson; it needs Python 3.9-3.11 and python3-venv), copies NAB into a
# temporary directory (the scorer writes into results/), runs the release harness
# (crates/anomaly/examples/nab) and prints the three profiles' final scores.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nab_src="${NAB:-}"
if [ -z "$nab_src" ]; then
  for d in "$repo/../shared/nab" "$repo/../../shared/nab" "$repo/target/nab"; do
    [ -f "$d/run.py" ] && nab_src="$d" && break
  done
fi
venv="${SUMI_NAB_VENV:-$repo/target/nab-venv}"
python="${SUMI_PYTHON:-python3}"
proof=1
setup_only=0
[ "${1:-}" = "--no-proof" ] && proof=0
[ "${1:-}" = "--setup" ] && setup_only=1

if ! "$venv/bin/python" -c 'import pandas, numpy, simplejson; assert pandas.__version__ == "1.5.3"' 2>/dev/null; then
  echo "nab-score: building $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv" || { echo "nab-score: python3 -m venv failed: apt-get install python3-venv" >&2; exit 1; }
  "$venv/bin/pip" install -q "pandas==1.5.3" "numpy<2" simplejson
fi
if [ "$setup_only" = 1 ]; then
  echo "$venv"
  exit 0
fi
[ -f "$nab_src/run.py" ] || { echo "nab-score: no NAB at $nab_src (set NAB=)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$nab_src" "$work/nab"
# Fresh thresholds and scores for the detectors scored here.
rm -rf "$work/nab/results/sumi"

if [ "$proof" = 1 ]; then
  out=$(cd "$work/nab" && "$venv/bin/python" run.py -d numenta --optimize --score --normalize --skipConfirmation)
  echo "$out" | grep "Final score"
  echo "$out" | grep -q "Final score for 'numenta' detector on 'standard' profile = 70.10" \
    || { echo "nab-score: the scorer does not reproduce numenta's 70.10" >&2; exit 1; }
fi

(cd "$repo" && cargo run -q --release -p sumi-anomaly --example nab -- "$work/nab" sumi)
(cd "$work/nab" && "$venv/bin/python" run.py -d sumi --optimize --score --normalize --skipConfirmation) | grep "Final score"
