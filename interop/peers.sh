#!/usr/bin/env bash
# Interop with Node's `ws` (npm) and Go's gorilla/websocket, both roles, permessage-deflate on:
#
#   bash interop/peers.sh
#
# Installs ws 8.23.0 into target/interop-peers/node (npm) and builds interop/peers/gorilla
# (gorilla/websocket v1.5.3 from the Go module proxy) into target/interop-peers/gorilla-peer,
# each only when missing. Then: each peer as a client against `tickwire serve`, `serve
# --deflate`, and the two over wss:// (`--tls-cert/--tls-key`, a CA and leaf made here with
# openssl), and `tickwire connect --echo --deflate` against each peer as a server. A peer sends
# text and binary messages from 0 B to 1 MiB and 100 pipelined small ones, checks every echo
# byte for byte and in order, closes with 1000 and checks that deflate was negotiated exactly
# when offered (interop/peers/ws_peer.js, interop/peers/gorilla/main.go). The last line is
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

# Reads `PREFIX…PORT` from the first line of FILE, waiting at most 10 s, or until process PID
# (when given) has exited.
port_from() { # file prefix [pid]
  local line
  for _ in $(seq 100); do
    line=$(head -n1 "$1" 2>/dev/null)
    [ -n "$line" ] && { sed -n "s|^$2||p" <<< "$line"; return; }
    [ -z "${3:-}" ] || kill -0 "$3" 2>/dev/null || return 0
    sleep 0.1
  done
}

# A CA and a server leaf for 127.0.0.1 and localhost signed by it, made afresh each run, for the
# wss:// servers; the peers are given the CA and verify the chain and the address.
tls="$state/tls"
rm -rf "$tls" && mkdir -p "$tls"
{
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=tickwire-peers-ca -keyout "$tls/ca.key" -out "$tls/ca.pem" &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$tls/server.key" -out "$tls/server.csr" &&
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > "$tls/ext.cnf" &&
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -days 2 -extfile "$tls/ext.cnf" -out "$tls/server.pem"
} > "$tls/openssl.log" 2>&1 || { tail -n 20 "$tls/openssl.log"; give_up "openssl: the test certificates"; }

# The peers as clients against `tickwire serve`, one server per variant: with and without
# permessage-deflate (the peer offers it and requires it, or offers nothing and requires no
# extension), over ws:// and wss://.
for variant in "ws deflate" "ws plain" "wss deflate" "wss plain"; do
  read -r scheme compression <<< "$variant"
  serve_flags=()
  node_flags=()
  gorilla_flags=()
  if [ "$compression" = deflate ]; then
    serve_flags+=(--deflate)
  else
    node_flags+=(--no-deflate)
    gorilla_flags+=(-no-deflate)
  fi
  if [ "$scheme" = wss ]; then
    serve_flags+=(--tls-cert "$tls/server.pem" --tls-key "$tls/server.key")
    node_flags+=(--ca "$tls/ca.pem")
    gorilla_flags+=(-ca "$tls/ca.pem")
  fi
  : > "$state/serve.out"
  "$bin" serve --runtime "$runtime" "${serve_flags[@]}" --bind 127.0.0.1 --port 0 \
    > "$state/serve.out" 2> "$state/serve.err" &
  serve_pid=$!
  pids+=("$serve_pid")
  port=$(port_from "$state/serve.out" "tickwire: echo server listening on $scheme://127.0.0.1:" "$serve_pid")
  if [ -z "$port" ]; then
    why="tickwire serve did not start: $(tr '\n' ' ' < "$state/serve.err" | sed 's/ *$//')"
    deflate_flag=$([ "$compression" = deflate ] && echo ' --deflate')
    result "FAIL node ws client -> tickwire serve$deflate_flag ($scheme://): $why" 1
    result "FAIL gorilla client -> tickwire serve$deflate_flag ($scheme://): $why" 1
    continue
  fi
  out=$(NODE_PATH="$node_modules" timeout 60 node "$root/interop/peers/ws_peer.js" client \
    "$scheme://127.0.0.1:$port/" "${node_flags[@]}" 2>&1)
  result "$out" $?
  out=$(timeout 60 "$gorilla" client "$scheme://127.0.0.1:$port/" "${gorilla_flags[@]}" 2>&1)
  result "$out" $?
  kill "$serve_pid" 2>/dev/null
  wait "$serve_pid" 2>/dev/null
done

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
