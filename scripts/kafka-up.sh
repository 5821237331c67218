#!/usr/bin/env bash
# scripts/kafka-up.sh DIR [BROKERS]
#
# Starts Apache Kafka 4.1.0 in KRaft mode (each broker also a controller) on free
# loopback ports, with data and logs under DIR: 1 broker (internal topics with
# replication 1) or 3 (default replication factor 3, min.insync.replicas=2). The jars
# come from Maven Central once (kafka/pom.xml, cached in target/kafka-libs or
# $SUMI_KAFKA_LIBS). Returns once every broker has started and accepts connections, and
# writes DIR/kafka.env:
#
#   KAFKA_BOOTSTRAP=127.0.0.1:P1[,127.0.0.1:P2,...]   KAFKA_BROKERS=N
#   KAFKA1_ADDR=127.0.0.1:P1   KAFKA1_PID=...   (one pair per broker)
#
# scripts/kafka-node.sh starts, stops or kills one broker; scripts/kafka-down.sh stops
# them all. KAFKA_HEAP overrides the JVM heap flags (default -Xms256m -Xmx512m),
# KAFKA_GC the collector's (default -XX:+UseG1GC -XX:MaxGCPauseMillis=20); KAFKA_JVM_OPTS
# adds JVM flags (e.g. -XX:+PrintCompilation) and KAFKA_SETTINGS lines to every broker's
# server.properties (e.g. num.io.threads=2), for trying settings without editing this.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"

[ $# -ge 1 ] || die "usage: kafka-up.sh DIR [BROKERS]"
dir=$1
brokers=${2:-1}
[ "$brokers" = 1 ] || [ "$brokers" = 3 ] || die "BROKERS is 1 or 3, not $brokers"
command -v java >/dev/null || die "java not found (apt-get install default-jre-headless)"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[ ! -f "$dir/kafka.env" ] || die "$dir/kafka.env exists: is a Kafka already running there? (kafka-down.sh $dir)"

libs=$(kafka_libs)
mapfile -t ports < <(free_ports $((2 * brokers)))

if [ "$brokers" = 1 ]; then rf=1 isr=1; else rf=3 isr=2; fi
voters=""
bootstrap=""
for ((i = 1; i <= brokers; i++)); do
  port=${ports[$((2 * i - 2))]} cport=${ports[$((2 * i - 1))]}
  voters+="${voters:+,}$i@127.0.0.1:$cport"
  bootstrap+="${bootstrap:+,}127.0.0.1:$port"
done

cat >"$dir/log4j2.properties" <<'L4J'
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.kafka.name = kafka
logger.kafka.level = info
logger.state.name = state.change.logger
logger.state.level = warn
logger.req.name = kafka.request.logger
logger.req.level = warn
L4J

# a cluster id as `StorageTool random-uuid` makes one (16 random bytes in URL-safe
# base64 without padding, not starting with '-'), without starting a JVM for it
cluster_id=$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"):
        print(s)
        break
')

formats=()
for ((i = 1; i <= brokers; i++)); do
  port=${ports[$((2 * i - 2))]} cport=${ports[$((2 * i - 1))]}
  b="$dir/kafka$i"
  mkdir -p "$b/data"
  cat >"$b/server.properties" <<PROPS
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$b/data
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
# a broker restarted after kill -9 is refused until its old registration expires
broker.session.timeout.ms=2000
broker.heartbeat.interval.ms=500
log.segment.bytes=67108864
${KAFKA_SETTINGS:-}
PROPS
  # the brokers' storage is formatted in parallel (a JVM each, seconds on a busy machine)
  java -cp "$libs/*" -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    kafka.tools.StorageTool format -t "$cluster_id" -c "$b/server.properties" \
    >"$b/format.log" 2>&1 &
  formats+=($!)
  cat >"$b/run.sh" <<RUN
#!/usr/bin/env bash
exec java ${KAFKA_HEAP:--Xms256m -Xmx512m} ${KAFKA_GC:--XX:+UseG1GC -XX:MaxGCPauseMillis=20} ${KAFKA_JVM_OPTS:-} \\
  -Djava.awt.headless=true -Dlog4j2.configurationFile="$dir/log4j2.properties" \\
  -cp "$libs/*" kafka.Kafka "$b/server.properties"
RUN
  chmod +x "$b/run.sh"
done

for ((i = 1; i <= brokers; i++)); do
  wait "${formats[$((i - 1))]}" ||
    die "formatting broker $i failed: $(tail -n 5 "$dir/kafka$i/format.log")"
done

{
  echo "KAFKA_BOOTSTRAP=$bootstrap"
  echo "KAFKA_BROKERS=$brokers"
  for ((i = 1; i <= brokers; i++)); do
    echo "KAFKA${i}_ADDR=127.0.0.1:${ports[$((2 * i - 2))]}"
  done
} >"$dir/kafka.env"

for ((i = 1; i <= brokers; i++)); do
  "$(dirname "$0")/kafka-node.sh" "$dir" start "$i" --no-wait
done
for ((i = 1; i <= brokers; i++)); do
  "$(dirname "$0")/kafka-node.sh" "$dir" wait "$i"
done
echo "kafka up: $bootstrap ($brokers broker(s), data under $dir)"
