#!/usr/bin/env bash
# scripts/cluster-up.sh DIR
#
# A sumi cluster on one machine, for trying it and for the tests: Kafka (scripts/
# kafka-up.sh, one broker; SUMI_KAFKA_BROKERS=3 for three), one ingest node and three
# storage nodes, every partition on two of them, all on free loopback ports, data and
# logs under DIR. The words of $SUMI_SERVE_ARGS are passed to every `sumi serve` (for
# example `--storage-schemas F --storage-aggregation G`). Returns once every node
# answers /health, and writes DIR/cluster.env (shell assignments):
#
#   KAFKA_BOOTSTRAP  INGEST_CARBON  INGEST_PICKLE  INGEST_HTTP   (host:port)
#   NODE1_HTTP NODE2_HTTP NODE3_HTTP   NODE1_PID NODE2_PID NODE3_PID   INGEST_PID
#   NODE1_CARBON ... NODE1_PARTITIONS ... (the partitions each node owns)
#   SUMI_SERVE_ARGS  (the words given; cluster-node.sh starts a node with them again)
#
# Partition p (of $SUMI_CLUSTER_PARTITIONS, default 6) is stored on nodes
# 1 + p mod 3 and 1 + (p + 1) mod 3; an append waits up to
# $SUMI_CLUSTER_APPEND_TIMEOUT_MS (default 10000) for Kafka. Every node lists the
# storage nodes as [[cluster.peers]], so any node answers reads for the whole cluster
# (a read waits $SUMI_CLUSTER_READ_TIMEOUT_MS, default 5000, for one peer).
# $SUMI_CLUSTER_SETTINGS, when set, is written into every node's [cluster] section (for
# example 'compression = "lz4"'); $SUMI_NODE_TOML, when set, is written into every
# node's sumi.toml before its [carbon] section (tables such as [[anomaly]] rules or
# [auth]; scripts/cluster-move.sh keeps them, and gives them to a new node). The sumi
# binary is $SUMI_BIN, or the newest of target/{debug,release}/sumi.
# scripts/cluster-node.sh starts, stops or kills a storage node;
# scripts/cluster-down.sh stops everything.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

[ $# -ge 1 ] || die "usage: cluster-up.sh DIR"
dir=$1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ ! -f "$dir/cluster.env" ] || die "$dir/cluster.env exists: is a cluster already running there? (cluster-down.sh $dir)"

sumi_bin=${SUMI_BIN:-}
if [ -z "$sumi_bin" ]; then
  sumi_bin=$(ls -t "$SUMI_REPO/target/debug/sumi" "$SUMI_REPO/target/release/sumi" 2>/dev/null | head -n1 || true)
fi
[ -n "$sumi_bin" ] && [ -x "$sumi_bin" ] || die "no sumi binary: build it (cargo build -p sumi) or set SUMI_BIN"
partitions=${SUMI_CLUSTER_PARTITIONS:-6}
topic=${SUMI_CLUSTER_TOPIC:-sumi-points}

"$here/kafka-up.sh" "$dir" "${SUMI_KAFKA_BROKERS:-1}" >&2
# shellcheck disable=SC1091
. "$dir/kafka.env"

env="$dir/cluster.env"
{
  echo "KAFKA_BOOTSTRAP=$KAFKA_BOOTSTRAP"
  echo "SUMI_BIN=$sumi_bin"
  echo "CLUSTER_PARTITIONS=$partitions"
  echo "CLUSTER_TOPIC=$topic"
  # cluster-node.sh starts nodes with these again (a restart keeps the schemas)
  echo "SUMI_SERVE_ARGS=${SUMI_SERVE_ARGS:-}"
} >"$env.new"

# node 0 is the ingest node, 1..3 the storage nodes
mapfile -t ports < <(free_ports 12)
# every node knows every storage node (where it answers, what it stores), so that
# any node answers reads for the whole cluster
owned_by() { # N: the partitions storage node N stores, "0, 2, ..."
  local o="" p
  for ((p = 0; p < partitions; p++)); do
    if [ $((p % 3 + 1)) = "$1" ] || [ $(((p + 1) % 3 + 1)) = "$1" ]; then
      o+="${o:+, }$p"
    fi
  done
  echo "$o"
}
peers=""
for n in 1 2 3; do
  peers+="
[[cluster.peers]]
node_id = $n
http = \"127.0.0.1:${ports[$((3 * n + 2))]}\"
partitions = [$(owned_by "$n")]
"
done
for n in 0 1 2 3; do
  carbon=127.0.0.1:${ports[$((3 * n))]}
  pickle=127.0.0.1:${ports[$((3 * n + 1))]}
  http=127.0.0.1:${ports[$((3 * n + 2))]}
  nd="$dir/node$n"
  mkdir -p "$nd/data"
  if [ "$n" = 0 ]; then
    role=ingest owned=""
  else
    role=storage owned=$(owned_by "$n")
  fi
  cat >"$nd/sumi.toml" <<TOML
data_dir = "$nd/data"
${SUMI_NODE_TOML:-}

[carbon]
listen = "$carbon"
pickle_listen = "$pickle"

[http]
listen = "$http"

[cluster]
brokers = "$KAFKA_BOOTSTRAP"
topic = "$topic"
partitions = $partitions
role = "$role"
node_id = $n
owned_partitions = [$owned]
append_timeout_ms = ${SUMI_CLUSTER_APPEND_TIMEOUT_MS:-10000}
read_timeout_ms = ${SUMI_CLUSTER_READ_TIMEOUT_MS:-5000}
${SUMI_CLUSTER_SETTINGS:-}
$peers
TOML
  if [ "$n" = 0 ]; then
    {
      echo "INGEST_CARBON=$carbon"
      echo "INGEST_PICKLE=$pickle"
      echo "INGEST_HTTP=$http"
    } >>"$env.new"
  else
    {
      echo "NODE${n}_HTTP=$http"
      echo "NODE${n}_CARBON=$carbon"
      echo "NODE${n}_PARTITIONS=${owned// /}"
    } >>"$env.new"
  fi
done
mv "$env.new" "$env"

# the ingest node first: it creates the topic
"$here/cluster-node.sh" "$dir" start 0
for n in 1 2 3; do
  "$here/cluster-node.sh" "$dir" start "$n" --no-wait
done
for n in 1 2 3; do
  "$here/cluster-node.sh" "$dir" wait "$n"
done
echo "cluster up: ingest carbon $(grep ^INGEST_CARBON= "$env" | cut -d= -f2), env in $env"
