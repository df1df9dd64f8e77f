#!/usr/bin/env bash
# `make test`: installs what the tests need (node tools, Debian's Chromium),
# starts a private in-memory Azurite on free ports, then runs every check:
# gofmt, go vet, staticcheck, Redocly's lint of docs/openapi.yaml, the templ and htmx staleness checks, and all Go tests with
# the race detector, integration and browser tests included; then it holds
# stored expressions to their budgets and fuzzes each for 10 s. It stops
# what it started, whatever happens.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
start=$SECONDS

ensure_node_modules
if ! command -v chromium >/dev/null && [[ -z ${FUSEBOX_CHROMIUM:-} ]]; then
  log "installing Debian's chromium for the browser tests"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

# fuzz_for DURATION PACKAGE TARGET fuzzes one target. Go 1.26's fuzzing
# coordinator may report its own -fuzztime deadline as a failure with no
# input to show for it (golang/go#75804, fixed in Go 1.27): that alone is
# logged, not failed.
fuzz_for() {
  local out
  if out=$(go test -run '^$' -fuzz "^$3\$" -fuzztime "$1" "$2" 2>&1); then
    tail -n 1 <<<"$out"
    return 0
  fi
  if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
    log "$3: the fuzzing deadline race of Go 1.26 (golang/go#75804), no failing input: not a failure"
    return 0
  fi
  echo "$out"
  return 1
}

trap stop_started EXIT
tport=$(free_port); bport=$(free_port)
log "starting Azurite (table :$tport, blob :$bport)"
start_azurite "$tport" "$bport"
export FUSEBOX_TEST_STORAGE_CONNECTION_STRING
FUSEBOX_TEST_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$tport" "$bport")

log "gofmt"
unformatted=$(gofmt -l client cmd internal migrations scripts static)
if [[ -n $unformatted ]]; then
  echo "these files need gofmt -w:"; echo "$unformatted"; exit 1
fi
log "go vet"
go vet ./...
log "staticcheck"
go tool staticcheck ./...
log "OpenAPI document (Redocly lint, no errors)"
"$BIN/redocly" lint docs/openapi.yaml --format=stylish
log "templ output is up to date"
scripts/check-generated.sh
log "no build output is tracked (no program, nothing over 1 MB outside docs/screenshots)"
scripts/check-tracked.sh
# Journeys wait on real windows and ticks, so four at a time in a package
# (Go's default is one per CPU) overlap their waits; each has its own
# tables, users and ports.
# The log shows each package's line, a failed test's whole output and the
# ten slowest tests (scripts/testlog), not every passing test's.
log "go test -race"
go build -o "$ROOT/bin/testlog" ./scripts/testlog
go test -race -count=1 -parallel 4 -timeout 20m -json ./... | "$ROOT/bin/testlog"

# A price for every stored expression: schedules, maintenance and pause
# windows, alert rules, probe URLs, form durations and team scopes cost at
# most 1 ms and 64 kB to read and 10 µs to evaluate (*_budget_test.go).
# The race detector judges none of it, so the seeds run again without it,
# judged exactly; then each target is fuzzed for a fixed time, one a run
# (-fuzz takes one target), its time budgets scaled for the coverage
# counters.
log "budgets of stored expressions, at their seeds"
go test -count=1 -run '^Fuzz.*Budget$' ./internal/jobs ./internal/circuit ./internal/teams
for target in jobs/FuzzScheduleBudget jobs/FuzzMaintenanceWindowBudget circuit/FuzzPauseWindowBudget \
  circuit/FuzzAlertRuleBudget circuit/FuzzProbeURLBudget circuit/FuzzFormDurationBudget teams/FuzzScopesBudget; do
  log "fuzzing $target for 10 s"
  fuzz_for 10s "./internal/${target%/*}" "${target#*/}"
done
log "all checks passed in $((SECONDS - start)) s"
