#!/usr/bin/env bash
# Runs the Autobahn WebSocket testsuite against tickwire and diffs the verdicts against the
# expected results committed in conformance/expected/.
#
#   conformance/autobahn.sh server [CASES] [EXCLUDE]   # wstest as client against `tickwire serve`
#   conformance/autobahn.sh client [CASES] [EXCLUDE]   # `tickwire connect --echo` against wstest
#   conformance/autobahn.sh update-expected ROLE        # after a run: take its verdicts as expected
#
# Uses ../shared/autobahn (wstest in a private Python 2.7 prefix) when it exists, else the
# crossbario/autobahn-testsuite Docker image. Reports land in target/autobahn-reports/ROLE.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
role=${1:?usage: conformance/autobahn.sh server|client|update-expected [CASES] [EXCLUDE]}
cases=${2:-*}
exclude=${3:-}
shared="$root/../shared/autobahn"
reports="$root/target/autobahn-reports"
expected="$root/conformance/expected"
bin="$root/target/release/tickwire"

if [ "$role" = update-expected ]; then
  which=${2:?usage: conformance/autobahn.sh update-expected server|client}
  python3 "$root/conformance/verdicts.py" extract "$reports/$which" > "$expected/$which.json"
  echo "autobahn: wrote $expected/$which.json"
  exit 0
fi

cargo build --release -q -p tickwire-cli

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() { local p; for p in $(seq "$1" $(( $1 + 50 ))); do port_free "$p" && { echo "$p"; return; }; done; echo "no free port near $1" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

case "$role" in
  server)
    port=$(pick_port 9102)
    "$bin" serve --deflate --bind 127.0.0.1 --port "$port" > "$root/target/autobahn-serve.log" 2>&1 &
    pids+=($!)
    out="$reports/server"
    rm -rf "$out"; mkdir -p "$out"
    if [ -d "$shared" ]; then
      AUTOBAHN_REPORTS="$out" AUTOBAHN_AGENT=tickwire "$shared/run-server-suite.sh" "$port" "$cases" ${exclude:+"$exclude"} || true
    else
      echo "autobahn: ../shared/autobahn not found, using Docker image crossbario/autobahn-testsuite"
      cat > "$out/fuzzingclient.json" <<JSON
{"outdir": "/reports", "servers": [{"agent": "tickwire", "url": "ws://127.0.0.1:$port"}],
 "cases": ["${cases//,/\",\"}"], "exclude-cases": [$( [ -n "$exclude" ] && echo "\"${exclude//,/\",\"}\"" )],
 "exclude-agent-cases": {}, "options": {"failByDrop": false}}
JSON
      docker run --rm --network host -v "$out:/reports" -v "$out/fuzzingclient.json:/config/fuzzingclient.json" \
        crossbario/autobahn-testsuite wstest -m fuzzingclient -s /config/fuzzingclient.json
      [ -d "$out/tickwire" ] || true
    fi
    ;;
  client)
    port=$(pick_port 9111)
    out="$reports/client"
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
      count=$("$bin" connect "ws://127.0.0.1:$port/getCaseCount" < /dev/null | head -n1)
      AUTOBAHN_URL="ws://127.0.0.1:$port" AUTOBAHN_CASE_COUNT="$count" AUTOBAHN_AGENT=tickwire "$root/conformance/client-agent.sh"
      "$bin" connect "ws://127.0.0.1:$port/updateReports?agent=tickwire" < /dev/null || true
    fi
    ;;
  *) echo "unknown role $role" >&2; exit 2 ;;
esac

python3 "$root/conformance/verdicts.py" compare "$out" "$expected/$role.json"
