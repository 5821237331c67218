#!/usr/bin/env bash
# scripts/kafka-down.sh DIR
#
# Stops every broker that scripts/kafka-up.sh started in DIR (SIGTERM, then SIGKILL for
# one still running after 30 s) and removes DIR/kafka.env; data and logs stay.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"

[ $# -ge 1 ] || die "usage: kafka-down.sh DIR"
env="$1/kafka.env"
[ -f "$env" ] || exit 0
pids=$(grep -E '^KAFKA[0-9]+_PID=' "$env" | cut -d= -f2)
for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in $pids; do stop_pid "$pid" TERM 30; done
rm -f "$env"
