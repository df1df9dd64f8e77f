#!/usr/bin/env bash
# Fails when committed generated files are stale: the templ output in
# internal/views, and the htmx build vendored into static/ from npm.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r internal/views "$tmp/views"
rm -f "$tmp"/views/*_templ.go
go tool templ generate -path "$tmp/views" >/dev/null 2>&1
stale=0
for f in "$tmp"/views/*_templ.go; do
  name=$(basename "$f")
  if ! cmp -s "$f" "internal/views/$name"; then
    echo "internal/views/$name is stale or missing: run make generate"
    stale=1
  fi
done
for f in internal/views/*_templ.go; do
  [[ -e "$tmp/views/$(basename "$f")" ]] || { echo "$f has no .templ source: delete it"; stale=1; }
done
if ! cmp -s node_modules/htmx.org/dist/htmx.min.js static/js/htmx.min.js; then
  echo "static/js/htmx.min.js differs from the pinned htmx.org: run make vendor"
  stale=1
fi
exit $stale
