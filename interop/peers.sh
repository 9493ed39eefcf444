#!/usr/bin/env bash
# Interop with Node's `ws` (npm) and Go's gorilla/websocket, both roles, permessage-deflate on:
#
#   bash interop/peers.sh
#
# Installs ws 8.23.0 into target/interop-peers/node (npm) and builds interop/peers/gorilla
# (gorilla/websocket v1.5.3 from the Go module proxy) into target/interop-peers/gorilla-peer,
# each only when missing. Then: each peer as a client against `tickwire serve --deflate`, and
# `tickwire connect --echo --deflate` against each peer as a server. A peer sends text and
# binary messages from 0 B to 1 MiB and 100 pipelined small ones, checks every echo byte for
# byte and in order, closes with 1000 and checks that deflate was negotiated
# (interop/peers/ws_peer.js, interop/peers/gorilla/main.go). The last line is
# `peers: N passed, M failed`; the exit status is non-zero when any failed.
#
# TICKWIRE_BIN names the binary under test (default target/release/tickwire, built when
# missing); TICKWIRE_RUNTIME (blocking, tokio or reactor, default blocking) picks its transports.
# The reactor only serves: with it the peers run as clients only, and the `tickwire connect`
# checks are skipped with one line saying so (not a failure).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${TICKWIRE_BIN:-$root/target/release/tickwire}"
runtime="${TICKWIRE_RUNTIME:-blocking}"
state="$root/target/interop-peers"
node_modules="$state/node/node_modules"
gorilla="$state/gorilla-peer"
mkdir -p "$state"

give_up() { echo "FAIL $*"; echo "peers: 0 passed, 1 failed"; exit 1; }

case "$runtime" in
  blocking|tokio) server_only=0 ;;
  reactor) server_only=1 ;;
  *) give_up "TICKWIRE_RUNTIME must be blocking, tokio or reactor, not '$runtime'" ;;
esac

[ -x "$bin" ] || cargo build --release -q -p tickwire-cli || give_up "cargo build --release -p tickwire-cli"
if [ ! -f "$node_modules/ws/package.json" ]; then
  npm install --no-audit --no-fund --silent --prefix "$state/node" ws@8.23.0 > "$state/npm.log" 2>&1 \
    || { tail -n 20 "$state/npm.log"; give_up "npm install ws@8.23.0"; }
fi
if [ ! -x "$gorilla" ] || [ "$root/interop/peers/gorilla/main.go" -nt "$gorilla" ]; then
  (cd "$root/interop/peers/gorilla" && go build -o "$gorilla" .) > "$state/go-build.log" 2>&1 \
    || { tail -n 20 "$state/go-build.log"; give_up "go build interop/peers/gorilla"; }
fi

pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
passed=0
failed=0
# result OUTPUT STATUS: counts one test from a peer's `ok`/`FAIL` line and exit status.
result() {
  if [ "$2" = 0 ] && grep -q '^ok ' <<< "$1"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  grep -E '^(ok|FAIL) ' <<< "$1" || echo "FAIL a peer printed no result (exit status $2): $1"
}

# Reads `PREFIX…PORT` from the first line of FILE, waiting at most 10 s.
port_from() { # file prefix
  local line
  for _ in $(seq 100); do
    line=$(head -n1 "$1" 2>/dev/null)
    [ -n "$line" ] && { sed -n "s|^$2||p" <<< "$line"; return; }
    sleep 0.1
  done
}

# The peers as clients against `tickwire serve`.
"$bin" serve --runtime "$runtime" --deflate --bind 127.0.0.1 --port 0 > "$state/serve.out" 2> "$state/serve.err" &
pids+=($!)
port=$(port_from "$state/serve.out" 'tickwire: echo server listening on ws://127.0.0.1:')
[ -n "$port" ] || give_up "tickwire serve printed no address: $(cat "$state/serve.err")"
out=$(NODE_PATH="$node_modules" timeout 60 node "$root/interop/peers/ws_peer.js" client "ws://127.0.0.1:$port/" 2>&1)
result "$out" $?
out=$(timeout 60 "$gorilla" client "ws://127.0.0.1:$port/" 2>&1)
result "$out" $?

# `tickwire connect --echo` against the peers as servers.
client_peers=(node gorilla)
if [ "$server_only" = 1 ]; then
  echo "skip tickwire connect -> node ws server, tickwire connect -> gorilla server: client-role checks; the $runtime runtime is a server with no client and has no part in them (not a failure)"
  client_peers=()
fi
skipped=$((2 - ${#client_peers[@]}))
for peer in "${client_peers[@]}"; do
  if [ "$peer" = node ]; then
    NODE_PATH="$node_modules" node "$root/interop/peers/ws_peer.js" server > "$state/$peer.out" 2>&1 &
  else
    "$gorilla" server > "$state/$peer.out" 2>&1 &
  fi
  peer_pid=$!
  pids+=("$peer_pid")
  port=$(port_from "$state/$peer.out" 'port ')
  if [ -z "$port" ]; then
    result "FAIL tickwire connect -> $peer server: it printed no port: $(cat "$state/$peer.out")" 1
    continue
  fi
  connect_err=$(timeout 60 "$bin" connect --runtime "$runtime" --echo --deflate "ws://127.0.0.1:$port/" 2>&1 >/dev/null)
  connect_status=$?
  status=0
  wait "$peer_pid" || status=$?
  [ "$connect_status" = 0 ] || { status=1; echo "note: tickwire connect exited $connect_status: $connect_err"; }
  result "$(cat "$state/$peer.out")" "$status"
done

echo "peers: $passed passed, $failed failed (tickwire --runtime $runtime$([ "$skipped" = 0 ] || echo "; $skipped client-role checks skipped"))"
[ "$failed" = 0 ]
