#!/usr/bin/env bash
# HTTP conformance: tickwire's blocking HttpClient against a real httpbin (gunicorn) and nginx,
# both on 127.0.0.1; with TICKWIRE_RUNTIME=tokio, tickwire-tokio's async HttpClient on the same
# cases plus its pool's (concurrent requests; connections counted by the client and in nginx's
# access log).
#
#   bash interop/http/run.sh
#   TICKWIRE_RUNTIME=tokio bash interop/http/run.sh
#
# interop/http/setup.sh installs the pinned httpbin + gunicorn venv (target/http-interop-venv)
# and nginx when missing; the checker (crates/tickwire-blocking/examples/http_conformance.rs) is built in
# release mode, unless HTTP_CONFORMANCE_BIN names one already built; interop/http/servers.sh
# starts both servers on free ports and they are stopped on exit, whatever happens. The checker
# prints PASS/FAIL per case and, last, `http-interop: N passed, M failed`; the exit status is
# non-zero when any case failed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

bash "$root/interop/http/setup.sh"
# HTTP_CONFORMANCE_BIN names a checker already built (CI passes the one its test build made).
if [ -n "${HTTP_CONFORMANCE_BIN:-}" ]; then
  checker=$HTTP_CONFORMANCE_BIN
else
  cargo build --release -q -p tickwire-blocking --example http_conformance
  checker="$root/target/release/examples/http_conformance"
fi

# shellcheck source=interop/http/servers.sh
source "$root/interop/http/servers.sh"
trap http_servers_stop EXIT
trap 'exit 130' INT TERM
http_servers_start > /dev/null

runtime=${TICKWIRE_RUNTIME:-blocking}
out="$root/target/http-interop/checker-$runtime.out"
status=0
"$checker" --httpbin "$HTTPBIN_URL" --nginx "$NGINX_URL" --files "$FILES_DIR" \
  --runtime "$runtime" --nginx-log "$NGINX_ACCESS_LOG" | tee "$out" || status=1
if ! grep -Eq '^http-interop: [0-9]+ passed, 0 failed$' "$out"; then
  grep -Eq '^http-interop: ' "$out" \
    || echo "http-interop: the checker stopped before its summary (exit status $status)" >&2
  status=1
fi
exit "$status"
