#!/usr/bin/env bash
# scripts/cluster-move.sh DIR P FROM TO
#
# Moves partition P from storage node FROM to storage node TO in the cluster that
# scripts/cluster-up.sh started in DIR, without stopping reads or writes. TO may be a
# new node (a number with no DIR/node<TO> yet): it is created on free loopback ports,
# like the others, and owns only P. FROM may be 0 to add a replica of P on TO without
# taking it from anyone. Steps (docs/cluster.md, "Adding a node, moving a partition"):
#
#  1. the placement changes in every node's sumi.toml (the [[cluster.peers]] lists and
#     TO's and FROM's owned_partitions): FROM no longer lists P, TO does;
#  2. TO is started (or restarted) with copy_from_peers = true: it copies P from a
#     replica of P (its sealed parts and head, with the log offset they cover), then
#     consumes P from that offset, and counts as a replica of P once it has caught up;
#     the script waits for that (up to $SUMI_MOVE_TIMEOUT seconds, default 600);
#  3. FROM is restarted without P; it refuses reads of P from then on (421), and nodes
#     still running with the old placement ask P's other replica;
#  4. with SUMI_MOVE_RESTART_ALL=1, every other node (ingest included) is restarted
#     one at a time to read the new placement; otherwise they read it at their next
#     restart (until then they use P's other replica, which stays correct).
#
# DIR/cluster.env gets NODE<TO>_HTTP, NODE<TO>_CARBON, NODE<TO>_PID and the new
# NODE<n>_PARTITIONS. Prints the seconds TO took to count as P's replica.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

[ $# -ge 4 ] || die "usage: cluster-move.sh DIR P FROM TO"
dir=$(cd "$1" && pwd) p=$2 from=$3 to=$4
env="$dir/cluster.env"
[ -f "$env" ] || die "$env not found: start the cluster with cluster-up.sh first"
[ "$to" != 0 ] || die "node 0 is the ingest node: it stores nothing"
[ "$from" != "$to" ] || die "FROM and TO are the same node"
get() { grep "^$1=" "$env" | cut -d= -f2- || true; }
partitions=$(get CLUSTER_PARTITIONS)
((p >= 0 && p < partitions)) || die "partition $p: the topic has 0..$((partitions - 1))"
timeout=${SUMI_MOVE_TIMEOUT:-600}

# the storage nodes, and what each owns now
mapfile -t nodes < <(grep -oE '^NODE[0-9]+_PARTITIONS=' "$env" | grep -oE '[0-9]+' | sort -n)
owned() { get "NODE$1_PARTITIONS"; }
if [ "$from" != 0 ]; then
  [[ ",$(owned "$from")," == *",$p,"* ]] || die "node $from does not own partition $p"
fi
[[ ",$(owned "$to")," != *",$p,"* ]] || die "node $to owns partition $p already"

new_node=
if [ ! -f "$dir/node$to/sumi.toml" ]; then
  new_node=1
  mapfile -t ports < <(free_ports 3)
  mkdir -p "$dir/node$to/data"
  env_set "$env" "NODE${to}_CARBON" "127.0.0.1:${ports[0]}"
  env_set "$env" "NODE${to}_HTTP" "127.0.0.1:${ports[2]}"
  env_set "$env" "NODE${to}_PARTITIONS" ""
  # a new node's sumi.toml is storage node 1's with its own addresses and data
  python3 - "$dir/node1/sumi.toml" "$dir/node$to/sumi.toml" "$dir/node$to/data" \
    "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" "$to" <<'PY'
import re, sys
src, dst, data, carbon, pickle, http, node = sys.argv[1:]
t = open(src).read()
t = re.sub(r'(?m)^data_dir = .*$', 'data_dir = "%s"' % data, t, count=1)
t = re.sub(r'(?m)^listen = "[^"]*"(\npickle_listen = )"[^"]*"', 'listen = "%s"\\1"%s"' % (carbon, pickle), t, count=1)
t = re.sub(r'(?m)^(\[http\]\n)listen = "[^"]*"', '\\1listen = "%s"' % http, t, count=1)
t = re.sub(r'(?m)^node_id = \d+$', 'node_id = %s' % node, t, count=1)
open(dst, "w").write(t)
PY
  nodes+=("$to")
fi

# the new placement
declare -A own
for n in "${nodes[@]}"; do own[$n]=$(owned "$n"); done
drop() { echo "$1" | tr ',' '\n' | { grep -vx "$2" || true; } | paste -sd, -; } # (FROM may be left with none)
add() { { [ -n "$1" ] && echo "$1" | tr ',' '\n'; echo "$2"; } | sort -n | paste -sd, -; }
[ "$from" = 0 ] || own[$from]=$(drop "${own[$from]}" "$p")
own[$to]=$(add "${own[$to]}" "$p")
for n in "${nodes[@]}"; do env_set "$env" "NODE${n}_PARTITIONS" "${own[$n]}"; done

# every node's sumi.toml: its owned partitions and the peers
peers=""
for n in "${nodes[@]}"; do
  [ -n "${own[$n]}" ] || continue
  peers+="
[[cluster.peers]]
node_id = $n
http = \"$(get "NODE${n}_HTTP")\"
partitions = [${own[$n]//,/, }]
"
done
rewrite() { # N OWNED COPY
  python3 - "$dir/node$1/sumi.toml" "$2" "$3" "$peers" <<'PY'
import re, sys
path, owned, copy, peers = sys.argv[1:]
t = open(path).read()
i = t.find("\n[[cluster.peers]]")
if i >= 0:
    t = t[:i + 1]
t = re.sub(r'(?m)^owned_partitions = \[.*\]$', 'owned_partitions = [%s]' % owned.replace(",", ", "), t, count=1)
t = re.sub(r'(?m)^copy_from_peers = .*\n', '', t)
if copy == "1":
    t = re.sub(r'(?m)^(owned_partitions = .*)$', '\\1\ncopy_from_peers = true', t, count=1)
open(path + ".new", "w").write(t.rstrip("\n") + "\n" + peers)
PY
  mv "$dir/node$1/sumi.toml.new" "$dir/node$1/sumi.toml"
}
for n in 0 "${nodes[@]}"; do
  if [ "$n" = 0 ]; then
    rewrite 0 "" 0
  else
    copy=0
    [ "$n" = "$to" ] && copy=1
    rewrite "$n" "${own[$n]}" "$copy"
  fi
done

# TO copies P and catches up
t0=$SECONDS
start_ns=$(date +%s%N)
if [ -z "$new_node" ]; then
  "$here/cluster-node.sh" "$dir" stop "$to"
fi
"$here/cluster-node.sh" "$dir" start "$to"
to_http=$(get "NODE${to}_HTTP")
counted() {
  python3 - "$to_http" "$p" <<'PY'
import sys, urllib.request
http, p = sys.argv[1:]
try:
    text = urllib.request.urlopen("http://%s/metrics" % http, timeout=5).read().decode()
except Exception:
    sys.exit(1)
joining = 'sumi_cluster_partition_joining{partition="%s"' % p in text
consuming = 'sumi_cluster_consume_next_offset{partition="%s"}' % p in text
sys.exit(0 if consuming and not joining else 1)
PY
}
until counted; do
  ((SECONDS - t0 < timeout)) || die "node $to did not count as a replica of partition $p within ${timeout}s; its log: $dir/node$to/sumi.log"
  kill -0 "$(get "NODE${to}_PID")" 2>/dev/null || die "node $to exited; its log: $dir/node$to/sumi.log"
  sleep 0.2
done
end_ns=$(date +%s%N)
ms=$(((end_ns - start_ns) / 1000000))
# (printed at once: a reader may take the line's arrival for the moment it counted)
printf 'node %s counts as a replica of partition %s after %d.%03d s\n' "$to" "$p" $((ms / 1000)) $((ms % 1000))

# FROM lets go of P
if [ "$from" != 0 ]; then
  "$here/cluster-node.sh" "$dir" stop "$from"
  if [ -n "${own[$from]}" ]; then
    "$here/cluster-node.sh" "$dir" start "$from"
  else
    echo "node $from owns no partition any more: left stopped (its data stays in $dir/node$from)"
  fi
fi

if [ "${SUMI_MOVE_RESTART_ALL:-0}" = 1 ]; then
  for n in 0 "${nodes[@]}"; do
    [ "$n" != "$to" ] && [ "$n" != "$from" ] || continue
    [ "$n" = 0 ] || [ -n "${own[$n]}" ] || continue
    "$here/cluster-node.sh" "$dir" stop "$n"
    "$here/cluster-node.sh" "$dir" start "$n"
  done
fi
