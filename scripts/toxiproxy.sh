#!/usr/bin/env bash
# Installs toxiproxy (Shopify's TCP fault proxy, driven over its HTTP API) at a pinned version
# for the fault tests of the exchange simulator and the feed drivers, and either prints the
# absolute path of its server binary as its only stdout line, or starts it.
#
#   toxiproxy=$(bash scripts/toxiproxy.sh)            # install; prints .../bin/toxiproxy-server
#   bash scripts/toxiproxy.sh start [PORT]            # install, then run it on 127.0.0.1:PORT
#                                                     # (default 8474) in the foreground
#
# The CLI (`toxiproxy-cli`) is installed beside the server. Both are built with `go install`
# of github.com/Shopify/toxiproxy/v2/cmd/{server,cli} at $toxiproxy_version, into
# $TICKWIRE_TOOLS/toxiproxy-$toxiproxy_version/ (TICKWIRE_TOOLS defaults to <repo>/target/tools),
# with the Go module cache, build cache and, when needed, a downloaded Go in the same directory,
# as scripts/nats-server.sh does (see scripts/lib/go-install.sh for how Go is found). Delete the
# directory to force a reinstall. Concurrent calls are safe (flock on <cache dir>/lock).
# Everything but the path goes to stderr; exits non-zero with a message when it cannot.
set -euo pipefail

readonly toxiproxy_version=v2.5.0
readonly go_min_minor=17 # go.mod of toxiproxy v2.5.0: `go 1.17`
readonly go_download=1.24.10

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tool=toxiproxy.sh
# shellcheck source=scripts/lib/go-install.sh
source "$repo/scripts/lib/go-install.sh"
tools=${TICKWIRE_TOOLS:-$repo/target/tools}
mkdir -p "$tools" || give_up "cannot create $tools"
tools=$(cd "$tools" && pwd)
cache=$tools/toxiproxy-$toxiproxy_version
bin=$cache/bin/toxiproxy-server
cli=$cache/bin/toxiproxy-cli
# go install stamps no release version into the binary, so the install writes this file last.
stamp=$cache/bin/installed-$toxiproxy_version

installed() {
  [ -x "$bin" ] && [ -x "$cli" ] && [ -f "$stamp" ] && "$bin" -help >/dev/null 2>&1
}

case ${1:-install} in
  install | start) ;;
  *) give_up "usage: toxiproxy.sh [install | start [PORT]]" ;;
esac

go_tool_setup
if ! installed; then
  rm -f "$stamp"
  module=github.com/Shopify/toxiproxy/v2
  go_tool_install "$module/cmd/server@$toxiproxy_version" server "$bin" \
    "$module/cmd/cli@$toxiproxy_version" cli "$cli"
  touch "$stamp"
  installed || give_up "$bin does not run"
  note "installed $bin and $cli"
fi
exec 9>&- # release the install lock before a long-running server

if [ "${1:-install}" = start ]; then
  port=${2:-8474}
  [[ $port =~ ^[0-9]+$ ]] || give_up "port '$port' is not a number"
  note "starting $bin on 127.0.0.1:$port"
  exec "$bin" -host 127.0.0.1 -port "$port"
fi
echo "$bin"
