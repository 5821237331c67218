# Shared by the kafka-*.sh and cluster-*.sh scripts (sourced, not run).

SUMI_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

# KEY=VALUE in an env file, replaced in place or appended (values need no quoting:
# ports, addresses, pids).
env_set() {
  local file=$1 key=$2 value=$3
  touch "$file"
  local tmp="$file.tmp.$$"
  grep -v "^$key=" "$file" >"$tmp" || true
  echo "$key=$value" >>"$tmp"
  mv "$tmp" "$file"
}

# N free TCP ports on 127.0.0.1, one per line (all bound at once, so distinct).
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
PY
}

# Waits until host:port accepts a TCP connection, or fails after $2 seconds.
wait_port() {
  local addr=$1 secs=$2 pid=${3:-}
  local host=${addr%:*} port=${addr##*:}
  local deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      return 1
    fi
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.2
  done
  return 1
}

# Sends SIGTERM (or the signal $2) to a pid and waits up to $3 seconds for it to exit;
# then SIGKILL.
stop_pid() {
  local pid=$1 sig=${2:-TERM} secs=${3:-30}
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -"$sig" "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + secs))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  # a zombie of ours would keep kill -0 true; the scripts start processes detached
  return 0
}

# The broker's jars, fetched with Maven once into SUMI_KAFKA_LIBS (default
# target/kafka-libs of the repository); prints the directory.
kafka_libs() {
  local libs=${SUMI_KAFKA_LIBS:-$SUMI_REPO/target/kafka-libs}
  if [ ! -f "$libs/.complete" ]; then
    command -v mvn >/dev/null || die "mvn not found: Maven fetches the Kafka jars (apt-get install maven)"
    mkdir -p "$libs"
    (
      # one fetch at a time when several tests start at once
      flock 9
      if [ ! -f "$libs/.complete" ]; then
        echo "fetching the Kafka jars into $libs" >&2
        mvn -q -B -f "$SUMI_REPO/kafka/pom.xml" package \
          -Dkafka.libs="$libs" >&2 ||
          die "mvn could not fetch the Kafka jars"
        touch "$libs/.complete"
      fi
    ) 9>"$libs.lock"
  fi
  echo "$libs"
}
