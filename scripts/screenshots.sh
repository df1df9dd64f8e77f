#!/usr/bin/env bash
# `make screenshots`: the overview, a circuit page and the mailed resume
# page at desktop and phone width, written to docs/screenshots (or $1) from
# the demo data, in headless Chromium, against an Azurite of its own.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
ensure_node_modules
out=${1:-docs/screenshots}
tport=$(free_port); bport=$(free_port)
start_azurite "$tport" "$bport"
trap stop_started EXIT
export FUSEBOX_TEST_STORAGE_CONNECTION_STRING
FUSEBOX_TEST_STORAGE_CONNECTION_STRING=$(azurite_connection_string "$tport" "$bport")
FUSEBOX_SCREENSHOTS="$ROOT/$out" go test ./internal/e2e -run '^TestScreenshots$' -count 1
log "screenshots written to $out"
