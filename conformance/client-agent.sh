#!/usr/bin/env bash
# The Autobahn client loop, driven through the tickwire binary: one `tickwire connect --echo`
# per case. Per-case exit codes are ignored on purpose: many cases end with tickwire failing
# the connection (that is the behaviour under test); the suite grades what went on the wire.
# TICKWIRE_RUNTIME (blocking or tokio, default blocking) picks the transports (`--runtime`).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="${TICKWIRE_BIN:-$root/target/release/tickwire}"
url=${AUTOBAHN_URL:-ws://127.0.0.1:9001}
agent=${AUTOBAHN_AGENT:-tickwire}
runtime=${TICKWIRE_RUNTIME:-blocking}
count=${AUTOBAHN_CASE_COUNT:-$("$bin" connect --runtime "$runtime" "$url/getCaseCount" < /dev/null | head -n1)}
for ((i = 1; i <= count; i++)); do
  "$bin" connect --runtime "$runtime" "$url/runCase?case=$i&agent=$agent" --echo --deflate > /dev/null 2>&1 || true
done
echo "client-agent: ran $count cases"
