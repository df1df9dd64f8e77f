#!/usr/bin/env bash
# The linker flags that stamp a build with its version (the nearest tag, or
# the short commit, "-dirty" when files changed) and its commit: what
# fusebox version, the page footer, fusebox_build_info and the traces'
# service.version say. The Dockerfile takes the same two as build args.
cd "$(dirname "$0")/.." || exit 1
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
pkg=github.com/fusebox/fusebox/internal/buildinfo
echo "-X $pkg.version=$version -X $pkg.commit=$commit"
