#!/usr/bin/env bash
# Starts an in-memory Azurite on free loopback ports for running Go tests by
# hand (`go test ./...`), prints the export line, and stops it on Ctrl-C.
source "$(dirname "$0")/lib.sh"
ensure_node_modules
trap stop_started EXIT
tport=$(free_port); bport=$(free_port)
start_azurite "$tport" "$bport"
echo "export FUSEBOX_TEST_STORAGE_CONNECTION_STRING='$(azurite_connection_string "$tport" "$bport")'"
log "Azurite is running; press Ctrl-C to stop it"
wait
