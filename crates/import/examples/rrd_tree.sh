#!/usr/bin/env bash
# Writes an RRD tree for measuring `sumi import rrd` (docs/migration.md, "Import speed"):
#
#   crates/import/examples/rrd_tree.sh DIR FILES
#
# One file made by Debian's rrdtool as of now (step 60, data sources a and b, RRAs
# AVERAGE 1:20160, AVERAGE/MIN/MAX 30:8760: 92,880 points), every row filled with a
# seeded value through `rrdtool dump` / `rrdtool restore`, then copied FILES times as
# DIR/hNNN/fNNNN.rrd (restoring each file would take a second and a half apiece).
set -euo pipefail
dir=$1
n=$2
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rrdtool create "$tmp/t.rrd" --step 60 --start $(( $(date +%s) - 60 )) \
    DS:a:GAUGE:120:U:U DS:b:GAUGE:120:U:U \
    RRA:AVERAGE:0.5:1:20160 RRA:AVERAGE:0.5:30:8760 RRA:MIN:0.5:30:8760 RRA:MAX:0.5:30:8760
rrdtool update "$tmp/t.rrd" N:1:2
rrdtool dump "$tmp/t.rrd" > "$tmp/t.xml"
python3 - "$tmp/t.xml" "$tmp/f.xml" <<'PY'
import random, re, sys
s = open(sys.argv[1]).read()
r = random.Random(1)
s = re.sub(r"<v>[^<]*</v>", lambda m: "<v>%.4e</v>" % r.uniform(0, 100), s)
open(sys.argv[2], "w").write(s)
PY
rrdtool restore "$tmp/f.xml" "$tmp/f.rrd"
for i in $(seq 0 $((n - 1))); do
    d="$dir/h$(printf %03d $((i / 100)))"
    mkdir -p "$d"
    cp "$tmp/f.rrd" "$d/f$(printf %04d "$i").rrd"
done
echo "$n files of 92880 points"
