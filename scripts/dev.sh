#!/usr/bin/env bash
# `make run`: Fusebox with a working local default. Installs the node tools
# when missing, starts Azurite (table :10002, blob :10000, data in .dev/) and
# maildev (SMTP :1025, web :1080), the demo receiver for Teams, Slack and
# webhook channels (:8025), applies migrations, seeds the demo, and
# serves Fusebox in the foreground. Ctrl-C stops everything it started.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

DEV="$ROOT/.dev"
mkdir -p "$DEV"
ensure_node_modules

for port in 10000 10002 1025 1080 8025 7072 "${FUSEBOX_PORT:-8080}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    log "port $port on 127.0.0.1 is in use: stop whatever listens there (an earlier make run?) and try again"
    exit 1
  fi
done

log "building fusebox and fusebox-dev (the demo's parts, never shipped)"
go build -ldflags "$(scripts/ldflags.sh)" -o bin/fusebox ./cmd/web
go build -ldflags "$(scripts/ldflags.sh)" -o bin/fusebox-dev ./cmd/fusebox-dev

trap stop_started EXIT
log "starting Azurite (data in .dev/azurite)"
AZURITE_LOG="$DEV/azurite.log" start_azurite 10002 10000 "$DEV/azurite" 10001
log "starting maildev"
$DETACHED "$BIN/maildev" --smtp 1025 --ip 127.0.0.1 --web 1080 --web-ip 127.0.0.1 >"$DEV/maildev.log" 2>&1 &
PIDS+=($!)
wait_port 1080 maildev

# A session key that survives restarts, so a browser stays signed in.
[[ -s "$DEV/session.key" ]] || head -c 48 /dev/urandom | base64 | tr -d '\n' >"$DEV/session.key"
demo_password=fusebox-demo
demo_hash=$(printf '%s\n' "$demo_password" | bin/fusebox hash-password)

export FUSEBOX_ENV=development
export FUSEBOX_STORAGE_CONNECTION_STRING=UseDevelopmentStorage=true
export FUSEBOX_HTTP_ADDR=127.0.0.1:${FUSEBOX_PORT:-8080}
export FUSEBOX_DISCOVER_SUBSCRIPTIONS=7e2c1f4a-5b6d-4e8f-9a0b-1c2d3e4f5a6b # the demo's, answered by demo.ARM
export FUSEBOX_SESSION_KEY
FUSEBOX_SESSION_KEY=$(cat "$DEV/session.key")
# Two teams: orders (the orders-demo app; demo operates it, viewer reads
# it) and billing (what Guard makes of func-billing); admin runs Fusebox.
export FUSEBOX_LOCAL_USERS="demo:operator@orders:$demo_hash,viewer:viewer@orders:$demo_hash,billing:operator@billing:$demo_hash,admin:admin:$demo_hash"
# Where in the demo's Azure each team's apps may live: billing may guard
# func-billing (rg-billing), orders func-shipping (rg-shipping), and
# neither the other's.
export FUSEBOX_TEAM_SCOPES="billing:/subscriptions/$FUSEBOX_DISCOVER_SUBSCRIPTIONS/resourceGroups/rg-billing,orders:/subscriptions/$FUSEBOX_DISCOVER_SUBSCRIPTIONS/resourceGroups/rg-shipping"
# An operator's API token for fusebox export and apply, kept across restarts.
[[ -s "$DEV/api-token" ]] || bin/fusebox api-token demo-cli operator | awk 'NR==2 || NR==5 {print $1}' >"$DEV/api-token"
api_token=$(sed -n 1p "$DEV/api-token")
# Tokens given to make run (FUSEBOX_API_TOKENS=... make run) keep working
# beside the demo's own.
demo_token_entry=$(sed -n 2p "$DEV/api-token")
export FUSEBOX_API_TOKENS="${FUSEBOX_API_TOKENS:+$FUSEBOX_API_TOKENS,}$demo_token_entry"
# Azure Monitor's demo alerts come through the webhook with the demo's
# public secret (demo.AlertsSecret): never one for Azure.
export FUSEBOX_AZURE_ALERTS_SECRET=demo-alerts-secret-not-for-azure-0123456789
# The secure webhook: tokens signed by the demo's stand-in tenant, whose
# keys the demo host serves (demo.AlertSigner; its page posts the alert),
# taken only from the action groups' application with the app role, as in
# Azure (a tenant without either does not start).
export FUSEBOX_AZURE_ALERTS_TENANT=5e1f0c2a-0d7b-4f3e-9c1a-6b8d2e4f7a90 FUSEBOX_AZURE_ALERTS_AUDIENCE=api://fusebox-demo-alerts
export FUSEBOX_AZURE_ALERTS_APPID=461e8683-5575-4561-ac7f-899cc907d62a FUSEBOX_AZURE_ALERTS_ROLE=ActionGroupsSecureWebhook
export FUSEBOX_AZURE_ALERTS_KEYS_URL=http://127.0.0.1:7072/alerts/keys
# Mail goes to maildev; its web UI shows every message.
export FUSEBOX_SMTP_HOST=127.0.0.1 FUSEBOX_SMTP_PORT=1025 FUSEBOX_SMTP_TLS=none FUSEBOX_MAIL_FROM=fusebox@localhost

log "starting the demo receiver (stands in for Teams, Slack and a webhook receiver)"
bin/fusebox-dev demo-receiver -addr 127.0.0.1:8025 >"$DEV/receiver.log" 2>&1 &
PIDS+=($!)
wait_port 8025 demo-receiver

log "applying migrations and seeding the demo"
mkdir -p "$DEV/orders-demo"
bin/fusebox-dev seed-demo -local-settings "$DEV/orders-demo/local.settings.json" -receiver http://127.0.0.1:8025 -live-host -hub 127.0.0.1:7073 >/dev/null

# The demo's Event Hubs namespace: answers the partition reads that tell
# how many events wait behind the checkpoints, over AMQP.
log "starting the demo hub (stands in for an Event Hubs namespace)"
bin/fusebox-dev demo-hub -addr 127.0.0.1:7073 -state "$DEV" >"$DEV/demo-hub.log" 2>&1 &
PIDS+=($!)
wait_port 7073 demo-hub

# The demo app's host: consumes a simulated hub, checkpoints into Azurite,
# reports failures; restarted by local-host when its Disabled key changes.
# It exports its invocations over OpenTelemetry as the Functions host
# does: gRPC on one `make run`, http/protobuf on the next.
otlp=grpc
[[ "$(cat "$DEV/otlp-protocol" 2>/dev/null)" == grpc ]] && otlp=http/protobuf
echo "$otlp" >"$DEV/otlp-protocol"
log "starting the demo function host (under fusebox local-host), reporting over OTLP $otlp"
bin/fusebox local-host -settings "$DEV/orders-demo/local.settings.json" -grace 5s -- \
  bin/fusebox-dev demo-host -settings "$DEV/orders-demo/local.settings.json" -addr 127.0.0.1:7072 \
  -fusebox "http://$FUSEBOX_HTTP_ADDR" -state "$DEV" -report "$otlp" >"$DEV/demo-host.log" 2>&1 &
PIDS+=($!)

cat <<MSG

  Fusebox      http://$FUSEBOX_HTTP_ADDR
  Sign in      demo / $demo_password   (operator of orders)    viewer / $demo_password   (viewer of orders)
               billing / $demo_password   (operator of billing)   admin / $demo_password    (admin)
  Mail         http://127.0.0.1:1080   (maildev: every mail Fusebox sends lands here)
  Chat         http://127.0.0.1:8025   (demo receiver: what the demo Teams, Slack and webhook channels got)
  Demo host    http://127.0.0.1:7072   (ProcessOrders consuming a simulated hub, TakeOrders a queue; break them here)
  Demo hub     127.0.0.1:7073          (AMQP: answers as an Event Hubs namespace how far each partition has got)
  Demo switch  .dev/orders-demo/local.settings.json
  Demo alert   the demo host's page (The alert fires / resolves) or bin/fusebox-dev demo-alert fired|resolved:
               Azure Monitor's orders-store-down on the downstream orders-store: fired switches off ProcessOrders
               and TakeOrders in one episode; resolved waits for the store's health, then tries them (Downstreams)
  Demo Azure   as admin, Apps → Discover: func-billing and func-shipping, a stand-in for ARM in memory; Guard… them (func-billing into billing)
  As a file    FUSEBOX_URL=http://$FUSEBOX_HTTP_ADDR FUSEBOX_API_TOKEN=$api_token bin/fusebox export > fusebox.yaml
               (then bin/fusebox apply -f fusebox.yaml --dry-run, with the same two variables)

  Press Ctrl-C to stop Fusebox, Azurite and maildev.

MSG
# Fusebox itself, with the demo's stand-in for Azure Resource Manager (the
# same app.New as bin/fusebox serve; the product binary links no fake).
bin/fusebox-dev serve-demo &
PIDS+=($!)
wait "${PIDS[-1]}"
