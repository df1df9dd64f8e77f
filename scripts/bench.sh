#!/usr/bin/env bash
# `make bench`: runs P1–P6 (docs/benchmarks.md), each against a fresh
# in-memory Azurite of its own, three runs each, and prints per metric the
# median, the spread over runs and the number of runs. Maxima are every
# run's worst sample, never a second-worst. Raw output: .bench/<time>.txt.
# Run it on a quiet machine: it measures, and other work skews it.
# BENCH_ONLY="circuit list" runs only the benchmarks whose name holds it.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
start=$SECONDS
ensure_node_modules
mkdir -p .bench
raw=".bench/$(date -u +%Y%m%dT%H%M%SZ).txt"
COUNT=${BENCH_COUNT:-3}

{
  echo "# make bench, $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# $(go version); $(nproc) CPUs (GOMAXPROCS ${GOMAXPROCS:-$(nproc)}); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# Azurite $(node -p 'require("./node_modules/azurite/package.json").version'), in memory, one fresh instance per benchmark"
} | tee "$raw"

# bench NAME PACKAGE PATTERN BENCHTIME: one benchmark, COUNT runs, its own Azurite.
bench() {
  local name=$1 pkg=$2 pattern=$3 benchtime=$4 tport bport
  [[ -z ${BENCH_ONLY:-} || $name == *"$BENCH_ONLY"* ]] || return 0
  tport=$(free_port); bport=$(free_port)
  start_azurite "$tport" "$bport"
  export FUSEBOX_TEST_STORAGE_CONNECTION_STRING
  FUSEBOX_TEST_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$tport" "$bport")
  log "$name: go test $pkg -bench '$pattern' -benchtime $benchtime -count $COUNT"
  echo "# $name" >>"$raw"
  go test "$pkg" -run '^$' -bench "$pattern" -benchtime "$benchtime" -count "$COUNT" -timeout 60m 2>&1 \
    | grep -E '^(Benchmark|--- FAIL|FAIL|panic|ok )' | tee -a "$raw"
  stop_started
  PIDS=()
}
trap stop_started EXIT

bench "P1 trip latency, count rule"        ./internal/bench '^BenchmarkTripLatency$'         1x
bench "P1 trip latency, ratio rule"        ./internal/bench '^BenchmarkTripLatencyRatio$'    1x
bench "P1 trip latency, an instance cut off" ./internal/bench '^BenchmarkTripLatencyFailover$' 1x
bench "P1 trip latency, reports over HTTP" ./internal/bench '^BenchmarkAPITripLatency$'      1x
bench "storage operations at rest, 3 instances" ./internal/faulttest '^BenchmarkStorageOpsAtRest$' 1x
bench "P2 ingest vs raw aztables"          ./internal/bench '^BenchmarkIngest$'              5s
bench "P2 real reports under a forged-key flood" ./internal/bench '^BenchmarkIngestUnderForgedFlood$' 1x
bench "P7 OTLP ingest vs raw aztables"     ./internal/bench '^BenchmarkOTLPIngest$'          1x
bench "P7 trip latency through OTLP"       ./internal/bench '^BenchmarkOTLPTripLatency$'     1x
bench "OTLP under attack, peak memory"     ./internal/bench '^BenchmarkOTLPUnderAttack$'     1x
bench "P3 rows per tick, 10/1k/10k"        ./internal/bench '^BenchmarkTickQueries$'         15x
bench "P4 pages, evaluator running"        ./internal/bench '^BenchmarkOverviewPage$'        300x
bench "P4 circuit page, 10,000 error texts" ./internal/bench '^BenchmarkCircuitPageErrors$'   300x
bench "P5 gap scan, a year of minutes"     ./internal/jobs  '^BenchmarkScanYearOfMinutelySlots$' 20x
bench "P6 partitions and ceilings"         ./internal/bench '^BenchmarkPartitionSpread$'     200x
bench "alerts: trip to delivery"           ./internal/bench '^BenchmarkTripToDelivery$'      1x
bench "lease takeover"                     ./internal/lease '^BenchmarkTakeover$'            3x
bench "host insight: one page's snapshot"  ./internal/bench '^BenchmarkHostSnapshot$'        100x
bench "P4 set-aside pages, 10,000 messages" ./internal/bench '^BenchmarkSetAsidePages$'      200x
bench "requeue rate vs raw azqueue"        ./internal/bench '^BenchmarkRequeueRate$'         1x
bench "P4 circuit list, 10,000 circuits"    ./internal/bench '^BenchmarkCircuitListPaged$'   200x
bench "fleet: discovery of 1,000 apps"      ./internal/bench '^BenchmarkDiscovery$'          1x
bench "team scope: pages, admin vs a team member" ./internal/bench '^BenchmarkTeamScope$' 200x
bench "alert to triggers off, 20 circuits over 10 apps" ./internal/bench '^BenchmarkAlertToTriggersOff$' 10x
bench "downstream alert to triggers off, 20 members over 10 apps" ./internal/bench '^BenchmarkDownstreamAlertToTriggersOff$' 10x
bench "P4 Discover page, 1,000 apps"        ./internal/bench '^BenchmarkDiscoverPage$'       200x
bench "fleet: apply 1,000 circuits"         ./internal/bench '^BenchmarkApply$'              1x
bench "throttle: rule to settings written" ./internal/bench '^BenchmarkThrottleLatency$'     1x
bench "window full reread, 10,000 rows with 1 kB texts" ./internal/bench '^BenchmarkWindowFullRead$' 10x
bench "replay: resume from before the first failure, 32 partitions" ./internal/bench '^BenchmarkResumeFromFirstFailure$' 20x
bench "replay: checkpoint history's storage operations an hour" ./internal/bench '^BenchmarkCheckpointHistoryCost$' 1x

echo
go run ./internal/bench/summary <"$raw" | tee "${raw%.txt}.summary.txt"
if grep -qE '^(--- FAIL|FAIL|panic)' "$raw"; then
  log "some benchmarks failed: see $raw"
  exit 1
fi
log "make bench finished in $((SECONDS - start)) s; raw output in $raw"
