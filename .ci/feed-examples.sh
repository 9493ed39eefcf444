#!/usr/bin/env bash
# The facade's feed examples (crates/tickwire/examples/feed_{binance,okx,coinbase}.rs) run
# against `tickwire exchange-sim` in each one's style, as docs/FEEDS.md "Worked examples"
# runs them, with the guide's faults: each exits 0 having delivered messages, and the
# simulator's counters and the example's output say the exchange's rule held:
#   binance   never more than 5 client messages in any second (the send quota refused the rest)
#   okx       a 4 s stall with a 3 s idle limit: answered pings kept the connection open,
#             and the numbers the stall lost came as one gap per key
#   coinbase  three numbers skipped by the simulator: one gap and one resync for BTC-USD
#   order_entry (docs/ORDERS.md) against the order gateway: the first order cut between its
#             write and its answer is outcome_unknown and never resent, the others answered
#             after a second login
# and that the guide's excerpts of the examples are still in the files.
#
#   .ci/feed-examples.sh [debug|release]   # the profile whose binaries to run (default debug)
#
# Uses the binaries `cargo test --workspace` (or the release build) made: target/PROFILE/
# tickwire and target/PROFILE/examples/{feed_*,order_entry}. About 15 s. Prints one line per example;
# exits non-zero on the first failure, with the example's output.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-debug}
bin="target/$profile"
out="target/ci/feed-examples"
mkdir -p "$out"
for file in "$bin/tickwire" "$bin/examples/feed_binance" "$bin/examples/feed_okx" "$bin/examples/feed_coinbase"; do
  [ -x "$file" ] || { echo "FAILED feed-examples: $file is not built"; exit 1; }
done

# docs/FEEDS.md quotes the examples: every excerpt must still be in its file, word for word.
python3 - <<'PY' || exit 1
import re, sys
guide = open("docs/FEEDS.md").read()
excerpts = re.findall(r"From `(crates/tickwire/examples/[^`]+)`.*?```rust\n(.*?)```", guide, re.S)
stale = [path for path, text in excerpts if text not in open(path).read()]
if len(excerpts) < 3 or stale:
    sys.exit(f"FAILED feed-examples: docs/FEEDS.md quotes {len(excerpts)} excerpts; not in their file: {stale}")
print(f"feed-examples: the guide's {len(excerpts)} excerpts are in their files")
PY

sim_pid=""
stop_sim() { [ -z "$sim_pid" ] || { kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; }; sim_pid=""; }
trap stop_sim EXIT

# start_sim ARGS...: exchange-sim on free ports; sets feed and control from its two lines.
start_sim() {
  "$bin/tickwire" exchange-sim --port 0 --control-port 0 "$@" > "$out/sim.out" 2>&1 &
  sim_pid=$!
  for _ in $(seq 100); do
    [ "$(wc -l < "$out/sim.out")" -ge 2 ] && break
    sleep 0.05
  done
  feed=$(sed -n 's/^tickwire: exchange-sim server listening on //p' "$out/sim.out")
  control=$(sed -n 's/^tickwire: exchange-sim control on //p' "$out/sim.out")
  [ -n "$feed" ] && [ -n "$control" ] || { cat "$out/sim.out"; echo "FAILED feed-examples: exchange-sim $*"; exit 1; }
}

# get TARGET: a control request (python3, which CI has for module-cycles, rather than curl).
get() {
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$control$1"
}

# counter EXPR: a Python expression over the counters `c` (JSON), printed.
counter() {
  get /counters | python3 -c "import json, sys; c = json.load(sys.stdin); print($1)"
}

fail() {
  cat "$out/$1.out"
  echo "FAILED feed-examples: $1: $2"
  exit 1
}

# run_example NAME URL SECONDS: in the background; `wait_example NAME` checks it exited 0.
run_example() {
  timeout 60 "$bin/examples/feed_$1" "$2" "$3" > "$out/$1.out" 2>&1 &
  example_pid=$!
}
wait_example() {
  wait "$example_pid" || fail "$1" "exited non-zero"
  delivered=$(sed -n 's/^delivered \([0-9]*\),.*/\1/p' "$out/$1.out")
}

start_sim --style binance --rate 5 --keys BTC-USDT,ETH-USDT --max-age 24h
run_example binance "$feed/stream" 3
wait_example binance
grep -q 'not sent: send quota exhausted' "$out/binance.out" || fail binance "no send was refused by the quota"
most=$(counter 'c["connections"][0]["max_received_in_window"]')
[ "$most" -le 5 ] || fail binance "$most client messages in one second (Binance allows 5)"
echo "feed-examples: binance ok ($delivered delivered, at most $most client messages a second)"
stop_sim

start_sim --style okx --rate 5 --keys BTC-USDT,ETH-USDT --idle-close 3s
run_example okx "$feed/ws/v5/public" 7
sleep 1
get "/stall?conn=0" > /dev/null
sleep 4
get "/resume?conn=0" > /dev/null
wait_example okx
pings=$(counter 'c["connections"][0]["app_pings_answered"]')
ended=$(counter 'c["connections"][0]["ended"]')
[ "$pings" -ge 1 ] || fail okx "no ping was answered"
[ "$ended" = "peer ws 1000" ] || fail okx "the connection ended with $ended, not the example's close"
[ "$(grep -c '^gap: ' "$out/okx.out")" = 2 ] || fail okx "not one gap per key"
echo "feed-examples: okx ok ($delivered delivered, $pings pings answered through the stall, one gap per key)"
stop_sim

start_sim --style coinbase --rate 5 --keys BTC-USD,ETH-USD
run_example coinbase "$feed/" 3
sleep 1
get "/gap?key=BTC-USD&size=3" > /dev/null
wait_example coinbase
grep -qE '^gap: BTC-USD [0-9]+\.\.=[0-9]+ missed' "$out/coinbase.out" || fail coinbase "no gap for BTC-USD"
grep -q '^resync BTC-USD' "$out/coinbase.out" || fail coinbase "no resync for BTC-USD"
echo "feed-examples: coinbase ok ($delivered delivered, the skipped numbers as one gap and a resync)"

# The order-entry example (docs/ORDERS.md): a login on each connection, the first order cut
# between its write and its answer (outcome unknown, never resent), the others answered
# after the second login.
[ -x "$bin/examples/order_entry" ] || { echo "FAILED feed-examples: $bin/examples/order_entry is not built"; exit 1; }
start_sim --rate 0 --login-token s3cret --order-fills
get "/cut-next?how=rst" > /dev/null
timeout 60 "$bin/examples/order_entry" "$feed/ws-api/v3" 3 > "$out/order_entry.out" 2>&1 || fail order_entry "exited non-zero"
grep -q '^demo-1: outcome_unknown' "$out/order_entry.out" || fail order_entry "the cut order is not outcome_unknown"
grep -q '^demo-3: answered' "$out/order_entry.out" || fail order_entry "the last order was not answered"
grep -q '2 logins$' "$out/order_entry.out" || fail order_entry "not logged in again after the cut"
sent=$(get /orders | python3 -c 'import json, sys; o = json.load(sys.stdin); print(sum(1 for r in o["received"] if r["method"] == "order.place"))')
[ "$sent" = 3 ] || fail order_entry "the gateway received $sent orders, not 3 (none resent)"
echo "feed-examples: order_entry ok (cut order unknown and not resent, the others answered after a second login)"
stop_sim
