#!/usr/bin/env bash
# scripts/kafka-fetch.sh: fetches the Kafka broker's jars with Maven (kafka/pom.xml)
# into target/kafka-libs (or $SUMI_KAFKA_LIBS) unless they are there, and prints the
# directory. kafka-up.sh does the same on first use; CI calls this up front.
set -euo pipefail
. "$(dirname "$0")/kafka-lib.sh"
kafka_libs
