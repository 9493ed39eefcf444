#!/usr/bin/env bash
# Runs the Autobahn WebSocket testsuite against tickwire and diffs the verdicts against the
# expected results committed in conformance/expected/.
#
#   conformance/autobahn.sh server [CASES|--sample] [EXCLUDE]   # wstest as client against `tickwire serve`
#   conformance/autobahn.sh server-tls [CASES] [EXCLUDE] # the same over wss:// (`serve --tls-cert`)
#   conformance/autobahn.sh client [CASES] [EXCLUDE]   # `tickwire connect --echo` against wstest
#   conformance/autobahn.sh update-expected ROLE        # after a run: take its verdicts as expected
#   conformance/autobahn.sh install                     # install wstest (or pull the image) only
#
# CASES defaults to every case. `--sample` runs the default CI tier's sample: the cases in
# conformance/autobahn-sample.txt and conformance/autobahn-regressions.txt. Only the expected
# verdicts of the cases run are compared; a case that fails is appended to autobahn-regressions.txt.
#
# TICKWIRE_BIN names the binary under test (CI passes the one its test build made); without it
# the script builds and uses target/release/tickwire.
#
# TICKWIRE_RUNTIME=tokio runs tickwire through its tokio transports (`--runtime tokio` on
# `serve` and on the client agent's `connect`); TICKWIRE_RUNTIME=reactor runs the server roles
# on tickwire-server's epoll reactor (`serve --runtime reactor`); the default is `blocking`. The verdicts are
# compared with the same conformance/expected/ROLE.json either way. A tokio (reactor) run's
# reports and server log carry a `tokio-` (`reactor-`) prefix (target/autobahn-reports/tokio-ROLE),
# so the runtimes can run side by side.
#
# Uses ../shared/autobahn (wstest in a private Python 2.7 prefix) when it exists, else the
# crossbario/autobahn-testsuite Docker image. Reports land in target/autobahn-reports/ROLE.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
role=${1:?usage: conformance/autobahn.sh server|server-tls|client|update-expected [CASES] [EXCLUDE]}
cases=${2:-*}
exclude=${3:-}
shared="$root/../shared/autobahn"
reports="$root/target/autobahn-reports"
expected="$root/conformance/expected"
bin="${TICKWIRE_BIN:-$root/target/release/tickwire}"
regressions="$root/conformance/autobahn-regressions.txt"
runtime=${TICKWIRE_RUNTIME:-blocking}
# Each runtime has its own ports and certificate directory, so the two can run at once.
case "$runtime" in
  blocking) run_name=$role port_offset=0 certs="$root/target/autobahn-tls" ;;
  tokio) run_name=tokio-$role port_offset=100 certs="$root/target/autobahn-tls-tokio" ;;
  reactor) run_name=reactor-$role port_offset=200 certs="$root/target/autobahn-tls-reactor" ;;
  *) echo "autobahn: TICKWIRE_RUNTIME must be blocking, tokio or reactor, not $runtime" >&2; exit 2 ;;
esac
export TICKWIRE_RUNTIME="$runtime"
if [ "$runtime" = reactor ] && [ "$role" = client ]; then
  echo "autobahn: the reactor is a server; run the client role with blocking or tokio" >&2; exit 2
fi
if [ "$cases" = --sample ]; then
  cases=$(sed -e 's/#.*//' "$root/conformance/autobahn-sample.txt" "$regressions" | tr -s ' \t\n' ',' \
    | sed -e 's/^,//' -e 's/,$//')
fi

if [ "$role" = update-expected ]; then
  which=${2:?usage: conformance/autobahn.sh update-expected server|server-tls|client}
  # The expectation is the runtime's own report (tokio-ROLE with TICKWIRE_RUNTIME=tokio) but
  # one file for both: the transports must agree.
  [ "$runtime" = blocking ] && report=$which || report=$runtime-$which
  python3 "$root/conformance/verdicts.py" extract "$reports/$report" > "$expected/$which.json"
  echo "autobahn: wrote $expected/$which.json"
  exit 0
fi

if [ "$role" = install ]; then
  # Run once before suites that run side by side: two installs at once race on the same
  # private apt cache.
  if [ -d "$shared" ]; then
    "$shared/install.sh"
  else
    docker pull crossbario/autobahn-testsuite
  fi
  exit 0
fi

if [ -z "${TICKWIRE_BIN:-}" ]; then
  cargo build --release -q -p tickwire-cli
fi
[ -x "$bin" ] || { echo "autobahn: no binary under test at $bin" >&2; exit 2; }
export TICKWIRE_BIN="$bin"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { local p; for p in $(seq "$1" $(( $1 + 50 ))); do port_free "$p" && { echo "$p"; return; }; done; echo "no free port near $1" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# A test CA and a server certificate for 127.0.0.1 signed by it (wstest does not verify the
# chain; the certificate is still a proper leaf, as webpki-based clients require).
make_certs() {
  local dir=$1
  mkdir -p "$dir"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=tickwire-test-ca \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' > "$dir/ext.cnf"
  openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -extfile "$dir/ext.cnf" -out "$dir/server.pem" 2>/dev/null
}

case "$role" in
  server|server-tls)
    if [ "$role" = server ]; then
      port=$(pick_port $(( 9102 + port_offset )))
      scheme=ws
      tls_args=()
    else
      port=$(pick_port $(( 9162 + port_offset )))
      scheme=wss
      make_certs "$certs"
      tls_args=(--tls-cert "$certs/server.pem" --tls-key "$certs/server.key")
    fi
    "$bin" serve --runtime "$runtime" --deflate --bind 127.0.0.1 --port "$port" "${tls_args[@]}" \
      > "$root/target/autobahn-$run_name.log" 2>&1 &
    pids+=($!)
    out="$reports/$run_name"
    rm -rf "$out"; mkdir -p "$out"
    if [ -d "$shared" ]; then
      AUTOBAHN_REPORTS="$out" AUTOBAHN_AGENT=tickwire "$shared/run-server-suite.sh" "$scheme://127.0.0.1:$port" "$cases" ${exclude:+"$exclude"} || true
    else
      echo "autobahn: ../shared/autobahn not found, using Docker image crossbario/autobahn-testsuite"
      cat > "$out/fuzzingclient.json" <<JSON
{"outdir": "/reports", "servers": [{"agent": "tickwire", "url": "$scheme://127.0.0.1:$port"}],
 "cases": ["${cases//,/\",\"}"], "exclude-cases": [$( [ -n "$exclude" ] && echo "\"${exclude//,/\",\"}\"" )],
 "exclude-agent-cases": {}, "options": {"failByDrop": false}}
JSON
      docker run --rm --network host -v "$out:/reports" -v "$out/fuzzingclient.json:/config/fuzzingclient.json" \
        crossbario/autobahn-testsuite wstest -m fuzzingclient -s /config/fuzzingclient.json
      [ -d "$out/tickwire" ] || true
    fi
    ;;
  client)
    port=$(pick_port $(( 9111 + port_offset )))
    out="$reports/$run_name"
    rm -rf "$out"; mkdir -p "$out"
    if [ -d "$shared" ]; then
      AUTOBAHN_REPORTS="$out" "$shared/run-client-suite.sh" --port "$port" --agent tickwire \
        --cases "$cases" ${exclude:+--exclude "$exclude"} -- "$root/conformance/client-agent.sh" || true
    else
      echo "autobahn: ../shared/autobahn not found, using Docker image crossbario/autobahn-testsuite"
      cat > "$out/fuzzingserver.json" <<JSON
{"url": "ws://127.0.0.1:$port", "outdir": "/reports", "cases": ["${cases//,/\",\"}"],
 "exclude-cases": [$( [ -n "$exclude" ] && echo "\"${exclude//,/\",\"}\"" )], "exclude-agent-cases": {}}
JSON
      docker run -d --rm --name tickwire-autobahn --network host -v "$out:/reports" \
        -v "$out/fuzzingserver.json:/config/fuzzingserver.json" crossbario/autobahn-testsuite \
        wstest -m fuzzingserver -s /config/fuzzingserver.json >/dev/null
      trap 'docker rm -f tickwire-autobahn >/dev/null 2>&1 || true; cleanup' EXIT
      sleep 3
      count=$("$bin" connect --runtime "$runtime" "ws://127.0.0.1:$port/getCaseCount" < /dev/null | head -n1)
      AUTOBAHN_URL="ws://127.0.0.1:$port" AUTOBAHN_CASE_COUNT="$count" AUTOBAHN_AGENT=tickwire "$root/conformance/client-agent.sh"
      "$bin" connect "ws://127.0.0.1:$port/updateReports?agent=tickwire" < /dev/null || true
    fi
    ;;
  *) echo "unknown role $role" >&2; exit 2 ;;
esac

python3 "$root/conformance/verdicts.py" compare "$out" "$expected/$role.json" --cases "$cases" \
  ${exclude:+--exclude "$exclude"} --regressions "$regressions"
