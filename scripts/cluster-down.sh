#!/usr/bin/env bash
# scripts/cluster-down.sh DIR
#
# Stops everything scripts/cluster-up.sh started in DIR: the sumi nodes (SIGTERM, then
# SIGKILL for one still running after 30 s), then Kafka (scripts/kafka-down.sh), and
# removes DIR/cluster.env; data and logs stay.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"

[ $# -ge 1 ] || die "usage: cluster-down.sh DIR"
dir=$1
env="$dir/cluster.env"
if [ -f "$env" ]; then
  pids=$(grep -E '^(INGEST|NODE[0-9]+)_PID=' "$env" | cut -d= -f2)
  for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $pids; do stop_pid "$pid" TERM 30; done
  rm -f "$env"
fi
"$(dirname "$0")/kafka-down.sh" "$dir"
