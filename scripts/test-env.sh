#!/usr/bin/env bash
# Real Kafka (KRaft, single node, loopback) and a Confluent-API-compatible schema registry
# (Apicurio Registry, /apis/ccompat/v7) for tests, CI and local pipelines — from Maven Central.
#
#   scripts/test-env.sh start   install if needed, start both, print the environment to use
#   scripts/test-env.sh stop    stop both
#   scripts/test-env.sh status
#   scripts/test-env.sh start-kafka | stop-kafka | restart-kafka   the broker alone (restart keeps its data)
#
# A secured broker for the client-security tests (test/helpers/secure-kafka.ts): start-kafka with
#   VEIL_TEST_KAFKA_LISTENERS   a file of listener settings (listeners, advertised.listeners, the
#                               protocol map, TLS, SASL, the authorizer) used instead of PLAINTEXT's;
#                               its INTERNAL listener on VEIL_TEST_KAFKA_PORT is the harness's
#   VEIL_TEST_KAFKA_SCRAM       SCRAM credentials made at format time, ;-separated
#                               (SCRAM-SHA-512=[name=u,password=p];…)
#   VEIL_TEST_KAFKA_JVM_OPTS    more JVM options (the OAuth URLs a broker may fetch)
#
# Jars are cached in $VEIL_CACHE_DIR (default ~/.cache/veil), outside the clone; run state
# (logs, data, pids) in $VEIL_TEST_ENV_DIR (default /tmp/veil-test-env).
set -euo pipefail

KAFKA_VERSION=${VEIL_TEST_KAFKA_VERSION:-3.9.1}
APICURIO_VERSION=${VEIL_APICURIO_VERSION:-3.0.9}
CACHE=${VEIL_CACHE_DIR:-$HOME/.cache/veil}
RUN=${VEIL_TEST_ENV_DIR:-/tmp/veil-test-env}
KAFKA_PORT=${VEIL_TEST_KAFKA_PORT:-19092}
CONTROLLER_PORT=${VEIL_TEST_KAFKA_CONTROLLER_PORT:-19093}
REGISTRY_PORT=${VEIL_REGISTRY_PORT:-18081}
KAFKA_LIBS="$CACHE/kafka-$KAFKA_VERSION/libs"
APICURIO_HOME="$CACHE/apicurio-$APICURIO_VERSION"

log() { echo "test-env: $*" >&2; }

install_kafka() {
  [ -f "$KAFKA_LIBS/.complete" ] && return
  log "installing Apache Kafka $KAFKA_VERSION (kafka_2.13 and its dependencies) from Maven Central into $KAFKA_LIBS"
  local pom; pom=$(mktemp -d)
  cat > "$pom/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>veil</groupId><artifactId>kafka-runtime</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
  mkdir -p "$KAFKA_LIBS"
  (cd "$pom" && mvn -q -B dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$KAFKA_LIBS")
  rm -rf "$pom"
  touch "$KAFKA_LIBS/.complete"
}

install_apicurio() {
  [ -f "$APICURIO_HOME/.complete" ] && return
  log "installing Apicurio Registry $APICURIO_VERSION (io.apicurio:apicurio-registry-app, tar.gz, classifier all) into $APICURIO_HOME"
  mkdir -p "$APICURIO_HOME"
  mvn -q -B dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION:tar.gz:all" -DoutputDirectory="$APICURIO_HOME"
  (cd "$APICURIO_HOME" && tar xzf apicurio-registry-app-*-all.tar.gz && rm -f apicurio-registry-app-*-all.tar.gz)
  touch "$APICURIO_HOME/.complete"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local port=$1 what=$2 tries=${3:-120}
  for _ in $(seq 1 "$tries"); do port_open "$port" && return 0; sleep 0.5; done
  log "$what did not open port $port; see $RUN/*.log"; return 1
}

start_kafka() {
  if port_open "$KAFKA_PORT"; then log "Kafka already listening on $KAFKA_PORT"; return; fi
  rm -rf "$RUN/kafka-data"; mkdir -p "$RUN/kafka-data"
  if [ -n "${VEIL_TEST_KAFKA_LISTENERS:-}" ]; then
    listeners=$(cat "$VEIL_TEST_KAFKA_LISTENERS")
  else
    listeners="listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  fi
  cat > "$RUN/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
controller.listener.names=CONTROLLER
$listeners
log.dirs=$RUN/kafka-data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=8
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.hours=2
PROPS
  cat > "$RUN/log4j.properties" <<PROPS
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$RUN/kafka-server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
  local cluster; cluster=$(java -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  local scram=()
  if [ -n "${VEIL_TEST_KAFKA_SCRAM:-}" ]; then
    IFS=';' read -ra creds <<< "$VEIL_TEST_KAFKA_SCRAM"
    for c in "${creds[@]}"; do scram+=(--add-scram "$c"); done
  fi
  java -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$RUN/log4j.properties" kafka.tools.StorageTool format -t "$cluster" -c "$RUN/server.properties" "${scram[@]}" > "$RUN/kafka-format.log" 2>&1
  run_kafka
}

# starts the broker on the formatted data directory (also after a restart: data is kept)
run_kafka() {
  # shellcheck disable=SC2086 # VEIL_TEST_KAFKA_JVM_OPTS is a list of options
  nohup java -Xms256m -Xmx1g ${VEIL_TEST_KAFKA_JVM_OPTS:-} -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$RUN/log4j.properties" kafka.Kafka "$RUN/server.properties" > "$RUN/kafka.log" 2>&1 &
  echo $! > "$RUN/kafka.pid"
  wait_port "$KAFKA_PORT" Kafka
  log "Kafka $KAFKA_VERSION on 127.0.0.1:$KAFKA_PORT (pid $(cat "$RUN/kafka.pid"))"
}

start_registry() {
  if port_open "$REGISTRY_PORT"; then log "registry already listening on $REGISTRY_PORT"; return; fi
  local jar; jar=$(ls "$APICURIO_HOME"/quarkus-app/quarkus-run.jar "$APICURIO_HOME"/quarkus-run.jar "$APICURIO_HOME"/*-runner.jar 2>/dev/null | head -1 || true)
  nohup java -Xms128m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$REGISTRY_PORT" -Dquarkus.log.level=WARN -jar "$jar" > "$RUN/registry.log" 2>&1 &
  echo $! > "$RUN/registry.pid"
  wait_port "$REGISTRY_PORT" 'Apicurio Registry'
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7/subjects" > /dev/null && break; sleep 0.5; done
  log "Apicurio Registry $APICURIO_VERSION on http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7 (pid $(cat "$RUN/registry.pid"))"
}

stop_one() {
  local name=$1
  [ -f "$RUN/$name.pid" ] || return 0
  local pid; pid=$(cat "$RUN/$name.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$RUN/$name.pid"
}

print_env() {
  echo "KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT"
  echo "SCHEMA_REGISTRY_URL=http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7"
}

case "${1:-}" in
  install) install_kafka; install_apicurio ;;
  start)
    command -v java > /dev/null || { log "java is required (Java 17+)"; exit 1; }
    mkdir -p "$RUN"
    install_kafka; install_apicurio
    start_kafka; start_registry
    print_env ;;
  stop) stop_one registry; stop_one kafka; log "stopped" ;;
  start-kafka) mkdir -p "$RUN"; install_kafka; start_kafka; print_env ;;
  stop-kafka) stop_one kafka ;;
  restart-kafka) stop_one kafka; run_kafka ;;
  status) port_open "$KAFKA_PORT" && log "Kafka up" || log "Kafka down"; port_open "$REGISTRY_PORT" && log "registry up" || log "registry down" ;;
  env) print_env ;;
  topics)   # topics NAME... (1 partition each; existing ones are left alone)
    shift
    KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT" "$(dirname "$0")/node22" "$(dirname "$0")/create-topics.ts" "$@" ;;
  *) echo "usage: $0 install|start|stop|status|env|topics NAME...|start-kafka|stop-kafka|restart-kafka" >&2; exit 2 ;;
esac
