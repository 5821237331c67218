#!/usr/bin/env bash
# Fast NAB scoring for experiments: the same three final scores as NAB's scorer, in
# seconds instead of a minute, plus (with --files) each file's false alarms and, per
# anomaly window, the weight of its earliest detection ("--" = missed).
#
#   scripts/nab-sweep.sh                         # the default configuration
#   SUMI_ANOMALY="suppress=50" scripts/nab-sweep.sh --files
#
# How: the release harness (crates/anomaly/examples/nab) writes its results into a
# scratch copy of NAB under target/; the per-row weights (window membership, sigmoid
# position, probationary rows) come from NAB's own Sweeper, imported from the NAB copy
# and cached in target/nab-sweep-cache.pkl; then one exact sweep over all thresholds,
# per profile, normalised as NAB does (null = every window missed, perfect = every
# window at its start). It agrees with `run.py --optimize --score --normalize` to the
# printed digit (checked at 54.93 / 47.93 / 59.03 and 63.45 / 53.69 / 68.73). The
# numbers reported in docs come from scripts/nab-score.sh, which runs NAB's scorer.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nab_src="${NAB:-}"
if [ -z "$nab_src" ]; then
  for d in "$repo/../shared/nab" "$repo/../../shared/nab" "$repo/target/nab"; do
    [ -f "$d/run.py" ] && nab_src="$d" && break
  done
fi
[ -f "$nab_src/run.py" ] || { echo "nab-sweep: no NAB (set NAB=)" >&2; exit 1; }
venv="$("$repo/scripts/nab-score.sh" --setup | tail -1)"
work="$repo/target/tmp-nab-sweep"
rm -rf "$work"
mkdir -p "$work/results"
trap 'rm -rf "$work"' EXIT
ln -s "$(cd "$nab_src" && pwd)/data" "$work/data"
cp -r "$nab_src/results/null" "$work/results/"
(cd "$repo" && cargo run -q --release -p sumi-anomaly --example nab -- "$work" sumi)
"$venv/bin/python" - "$(cd "$nab_src" && pwd)" "$work/results/sumi" "$repo/target/nab-sweep-cache.pkl" "${1:-}" <<'PY'
import os, pickle, sys
import numpy as np

nab, results, cache, mode = sys.argv[1:5]
profiles = {"standard": (1.0, 1.0, 0.11), "reward_low_FP_rate": (1.0, 1.0, 0.22),
            "reward_low_FN_rate": (1.0, 2.0, 0.11)}

def weights():
    """Per data file: each row's unit sweep weight and window id (-2 probationary, -1 none)."""
    if os.path.exists(cache):
        return pickle.load(open(cache, "rb"))
    sys.path.insert(0, nab)
    cwd = os.getcwd()
    os.chdir(nab)
    from nab.corpus import Corpus
    from nab.labeler import CorpusLabel
    from nab.sweeper import Sweeper
    corpus = Corpus(os.path.join(nab, "data"))
    labels = CorpusLabel(path=os.path.join(nab, "labels/combined_windows.json"), corpus=corpus)
    unit = {"tpWeight": 1.0, "fnWeight": 1.0, "fpWeight": 1.0, "tnWeight": 1.0}
    out = {}
    for rel in sorted(corpus.dataFiles):
        ts = labels.labels[rel]["timestamp"]
        rows = Sweeper(probationPercent=0.15, costMatrix=unit).calcSweepScore(
            ts, [0.0] * len(ts), labels.windows[rel], rel)
        ids, wid = {}, np.empty(len(rows), dtype=np.int64)
        for i, r in enumerate(rows):
            if r.windowName == "probationary":
                wid[i] = -2
            elif r.windowName is None:
                wid[i] = -1
            else:
                wid[i] = ids.setdefault(r.windowName, len(ids))
        out[rel] = (np.array([r.sweepScore for r in rows]), wid, len(ids))
    os.chdir(cwd)
    pickle.dump(out, open(cache, "wb"))
    return out

def scores(rel):
    cat, f = rel.split("/")
    return np.genfromtxt(os.path.join(results, cat, "sumi_" + f), delimiter=",",
                         skip_header=1, usecols=(2,))

meta = weights()
S, W, G, off = [], [], [], 0
for rel, (w, wid, nw) in meta.items():
    keep = wid != -2
    g = wid[keep].copy()
    g[g >= 0] += off
    S.append(scores(rel)[keep]); W.append(w[keep]); G.append(g)
    off += nw
S, W, G, windows = np.concatenate(S), np.concatenate(W), np.concatenate(G), off
order = np.argsort(-S, kind="stable")
S, W, G = S[order].tolist(), W[order].tolist(), G[order].tolist()
best_thr = None
for name, (tpw, fnw, fpw) in profiles.items():
    cur, total, fp, best, thr, i = [-fnw] * windows, -fnw * windows, 0.0, -1e18, None, 0
    while i < len(S):
        t = S[i]
        while i < len(S) and S[i] == t:
            if G[i] < 0:
                fp += W[i] * fpw
            elif W[i] * tpw > cur[G[i]]:
                total += W[i] * tpw - cur[G[i]]
                cur[G[i]] = W[i] * tpw
            i += 1
        if total + fp > best:
            best, thr = total + fp, t
    null, perfect = -fnw * windows, tpw * windows
    print(f"Final score for 'sumi' detector on '{name}' profile = "
          f"{100 * (best - null) / (perfect - null):.2f} (threshold {thr:.4f})")
    best_thr = best_thr if best_thr is not None else thr
if mode == "--files":
    for rel, (w, wid, nw) in meta.items():
        s = scores(rel)
        det = (s >= best_thr) & (wid != -2)
        fps = det & (wid == -1)
        wins = []
        for k in range(nw):
            idx = np.where(det & (wid == k))[0]
            wins.append(f"{w[idx[0]]:.2f}" if len(idx) else "--")
        print(f"{rel:58s} rows {len(s):5d}  false alarms {int(fps.sum()):3d} "
              f"({0.11 * w[fps].sum():6.2f})  windows: {' '.join(wins)}")
PY
