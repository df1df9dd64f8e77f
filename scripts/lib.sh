# Shared helpers for the dev and test scripts. Sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/node_modules/.bin"
PIDS=()

log() { printf '\033[1m==> %s\033[0m (%d s)\n' "$*" "$SECONDS" >&2; }

# ensure_node_modules installs Azurite, maildev and htmx from the lock file
# when they are missing or older than the lock file.
ensure_node_modules() {
  if ! command -v npm >/dev/null; then
    log "npm is missing: installing Node.js from Debian"
    as_root apt-get update -qq && as_root apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  if [[ ! -x "$BIN/azurite-table" || "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]]; then
    log "installing node tools (npm ci)"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# wait_port waits until something accepts connections on 127.0.0.1:$1.
wait_port() {
  local port=$1 name=$2 deadline=$((SECONDS + 60))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ((SECONDS > deadline)); then
      log "$name did not start listening on 127.0.0.1:$port within 60 s"
      return 1
    fi
    sleep 0.2
  done
}

# start_azurite TABLE_PORT BLOB_PORT [DATA_DIR] [QUEUE_PORT]: starts
# Azurite's table, blob and queue services on loopback; in memory when no
# data folder is given. The queue port defaults to a free one, kept in
# AZURITE_QUEUE_PORT for azurite_connection_string.
start_azurite() {
  local tport=$1 bport=$2 dir=${3:-}
  AZURITE_QUEUE_PORT=${4:-$(free_port)}
  local common=(--silent --disableTelemetry --skipApiVersionCheck)
  local tstore=(--inMemoryPersistence) bstore=(--inMemoryPersistence --extentMemoryLimit 256) qstore=(--inMemoryPersistence)
  if [[ -n $dir ]]; then
    mkdir -p "$dir"
    tstore=(--location "$dir") bstore=(--location "$dir") qstore=(--location "$dir")
  fi
  $DETACHED "$BIN/azurite-table" --tableHost 127.0.0.1 --tablePort "$tport" "${common[@]}" "${tstore[@]}" >"${AZURITE_LOG:-/dev/null}" 2>&1 &
  PIDS+=($!)
  $DETACHED "$BIN/azurite-blob" --blobHost 127.0.0.1 --blobPort "$bport" "${common[@]}" "${bstore[@]}" >>"${AZURITE_LOG:-/dev/null}" 2>&1 &
  PIDS+=($!)
  $DETACHED "$BIN/azurite-queue" --queueHost 127.0.0.1 --queuePort "$AZURITE_QUEUE_PORT" "${common[@]}" "${qstore[@]}" >>"${AZURITE_LOG:-/dev/null}" 2>&1 &
  PIDS+=($!)
  wait_port "$tport" "Azurite (table)"
  wait_port "$bport" "Azurite (blob)"
  wait_port "$AZURITE_QUEUE_PORT" "Azurite (queue)"
}

azurite_connection_string() {
  local tport=$1 bport=$2 qport=${AZURITE_QUEUE_PORT:-}
  printf 'DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;TableEndpoint=http://127.0.0.1:%s/devstoreaccount1;BlobEndpoint=http://127.0.0.1:%s/devstoreaccount1;' "$tport" "$bport"
  if [[ -n $qport ]]; then
    printf 'QueueEndpoint=http://127.0.0.1:%s/devstoreaccount1;' "$qport"
  fi
}

# stop_started stops every process this script started.
stop_started() {
  # Last started first, each waited for: Fusebox releases its leases in
  # Azurite before Azurite stops.
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill "${PIDS[i]}" 2>/dev/null || true
    wait "${PIDS[i]}" 2>/dev/null || true
  done
}

# DETACHED runs a command in a session of its own, out of the terminal's
# reach: Node installs its own SIGINT handler, so Ctrl-C would stop Azurite
# and maildev at once, before Fusebox is done with them; stop_started stops
# them. Unquoted on purpose: empty where setsid is missing. setsid does not
# fork here (a background job is no group leader), so $! stays the
# command's own pid.
DETACHED=$(command -v setsid || true)
