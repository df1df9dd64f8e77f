#!/usr/bin/env bash
# `make test`: installs what the tests need (node tools, Debian's Chromium),
# starts a private in-memory Azurite on free ports, then runs every check:
# gofmt, go vet, staticcheck, Redocly's lint of docs/openapi.yaml, the templ and htmx staleness checks, and all Go tests with
# the race detector, integration and browser tests included. It stops what
# it started, whatever happens.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
start=$SECONDS

ensure_node_modules
if ! command -v chromium >/dev/null && [[ -z ${FUSEBOX_CHROMIUM:-} ]]; then
  log "installing Debian's chromium for the browser tests"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

trap stop_started EXIT
tport=$(free_port); bport=$(free_port)
log "starting Azurite (table :$tport, blob :$bport)"
start_azurite "$tport" "$bport"
export FUSEBOX_TEST_STORAGE_CONNECTION_STRING
FUSEBOX_TEST_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$tport" "$bport")

log "gofmt"
unformatted=$(gofmt -l client cmd internal migrations static)
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
log "go test -race"
go test -race -count=1 -parallel 4 -timeout 20m ./...
log "all checks passed in $((SECONDS - start)) s"
