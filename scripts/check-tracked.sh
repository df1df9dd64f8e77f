#!/usr/bin/env bash
# Fails when a tracked file is a build output: an executable that is not a
# script (no "#!" line), or a file over 1 MB outside docs/screenshots.
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bad=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue
  if [[ -x $f ]] && [[ $(head -c 2 "$f") != '#!' ]]; then
    echo "$f is tracked and executable but no script: a build output? git rm --cached it"
    bad=1
  fi
  if [[ $(head -c 4 "$f" | od -An -tx1 | tr -d ' ') == 7f454c46 ]]; then
    echo "$f is a compiled program: never commit a build output"
    bad=1
  fi
  case $f in docs/screenshots/*) continue ;; esac
  if (( $(stat -c %s "$f") > 1000000 )); then
    echo "$f is over 1 MB: only docs/screenshots may hold files that large"
    bad=1
  fi
done < <(git ls-files -z)
exit $bad
