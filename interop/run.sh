#!/usr/bin/env bash
# Interop tests: tickwire against the Python `websockets` library, both directions, with and
# without permessage-deflate, over ws:// and wss:// (TLS against Python `ssl` and the openssl CLI),
# and through real proxies; then against headless Chromium.
#
#   bash interop/run.sh
#
# Builds target/release/tickwire when it is missing, prepares target/interop-venv
# (interop/setup.sh, which also checks that `openssl` is on PATH), runs
# interop/test_websockets_interop.py (which also runs interop/test_deflate_interop.py,
# interop/test_tls_interop.py, whose certificates it makes with openssl in a temporary directory,
# and interop/test_proxy_interop.py: ws://, wss://, http:// and https:// to `websockets` and
# httpbin through tinyproxy, microsocks and stunnel in front of tinyproxy, which
# scripts/proxies.sh installs; its last line is `interop: N passed, M failed`), then
# interop/browser.sh four times, with and without permessage-deflate, over ws:// and wss://
# (it installs Chromium when it is missing; each run's last line is
# `browser: N passed, M failed`), then interop/peers.sh (Node's `ws` and Go's
# gorilla/websocket in both roles; its last line is `peers: N passed, M failed`). All three
# always run; the exit status is non-zero when any failed. TICKWIRE_BIN overrides the binary
# under test; TICKWIRE_RUNTIME=tokio runs every tickwire command of the three through the tokio
# transports (`--runtime tokio`; default blocking). TICKWIRE_RUNTIME=reactor runs the checks where
# tickwire is the server on tickwire-server's epoll reactor (`serve --runtime reactor`); the
# reactor has no client, so the scripts skip the `tickwire connect` checks, each script with one
# line saying so (not a failure).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export TICKWIRE_BIN="${TICKWIRE_BIN:-$root/target/release/tickwire}"

if [ ! -x "$TICKWIRE_BIN" ]; then
  cargo build --release -q -p tickwire-cli
fi
bash "$root/interop/setup.sh"
# httpbin's venv, for test_proxy_interop.py's http:// and https:// cases through each proxy.
bash "$root/interop/http/setup.sh"

status=0
"$root/target/interop-venv/bin/python" "$root/interop/test_websockets_interop.py" || status=1
# Chromium four times: with and without permessage-deflate, over ws:// and wss://.
for tls in 0 1; do
  for deflate in 1 0; do
    BROWSER_TLS=$tls BROWSER_EXPECT_DEFLATE=$deflate bash "$root/interop/browser.sh" || status=1
  done
done
bash "$root/interop/peers.sh" || status=1
exit "$status"
