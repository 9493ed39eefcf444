#!/usr/bin/env bash
# Installs nats-server at a pinned version (for the NATS tests of crates/tickwire-nats and the
# fleet demo in docs/SCALING.md) and prints the absolute path of the binary as its only stdout
# line. Everything else goes to stderr. Exits non-zero with a message when it cannot.
#
#   nats_server=$(bash scripts/nats-server.sh) && "$nats_server" --version
#
# Where things go: $TICKWIRE_TOOLS/nats-server-v2.12.2/ (TICKWIRE_TOOLS defaults to
# <repo>/target/tools). The binary is bin/nats-server there. The Go module cache, build
# cache, GOPATH and, when needed, a downloaded Go toolchain live in the same directory, so
# nothing outside it is written. Delete the directory to force a reinstall.
#
# Finding Go: $TICKWIRE_GO when set (a path to `go`, or `download`), else `go` on PATH, else
# /usr/local/go/bin/go, if either is Go 1.24 or newer (the minimum nats-server v2.12.2 builds
# with); else Go 1.24.10 is downloaded into the cache
# directory: the tarball from https://dl.google.com/go/ checked against its published .sha256,
# or, when that host cannot be reached, the same release as the Go module
# golang.org/toolchain from $GOPROXY checked against the h1: hash the checksum database
# (through the same proxy) records for it.
#
# Concurrent calls are safe: the install runs under flock on <cache dir>/lock, and a caller
# that finds the binary already installed returns at once.
set -euo pipefail

readonly nats_version=v2.12.2
readonly go_min_minor=24 # go.mod of nats-server v2.12.2: `go 1.24.0`
readonly go_download=1.24.10 # its `toolchain` line

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=nats-server.sh
# shellcheck source=scripts/lib/go-install.sh
source "$repo/scripts/lib/go-install.sh"
tools=${TICKWIRE_TOOLS:-$repo/target/tools}
mkdir -p "$tools" || give_up "cannot create $tools"
tools=$(cd "$tools" && pwd)
cache=$tools/nats-server-$nats_version
bin=$cache/bin/nats-server

installed() {
  [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qF "$nats_version"
}

go_tool_setup
if installed; then
  echo "$bin"
  exit 0
fi
go_tool_install "github.com/nats-io/nats-server/v2@$nats_version" nats-server "$bin"
installed || give_up "$bin does not report version $nats_version"
note "installed $bin"
echo "$bin"
