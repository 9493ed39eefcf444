#!/usr/bin/env bash
# Browser interop: headless Chromium's own WebSocket against `tickwire serve --deflate`
# (and, as chosen below, without --deflate, or over wss://).
#
#   bash interop/browser.sh
#
# Installs Debian's chromium when it is missing (apt-get; needs root), builds
# target/release/tickwire when it is missing, starts `tickwire serve --deflate --port 0`, serves
# interop/browser/echo.html from a small local HTTP server (interop/browser/page_server.py) and
# opens it in headless Chromium with a fresh profile. The page checks that permessage-deflate
# was negotiated, echoes text and binary messages of several sizes up to 1 MiB byte-exactly and
# in order, closes with 1000, and POSTs its checks back. The last line printed is
# `browser: N passed, M failed`; the exit status is 0 only when every check passed.
#
# Everything stays on 127.0.0.1, every wait is bounded (the run takes a few seconds when all is
# well and never much more than BROWSER_TIMEOUT), and every process started here is killed on
# exit, Chromium with its whole process group.
#
# Environment:
#   TICKWIRE_BIN            the binary under test (default target/release/tickwire)
#   TICKWIRE_RUNTIME        blocking (default), tokio or reactor: `serve --runtime`, the
#                           transports (the page is a client, so every runtime takes part)
#   BROWSER_EXPECT_DEFLATE  1 (default): serve with --deflate and expect the extension;
#                           0: serve without it and expect no extension
#   BROWSER_TLS             0 (default): ws://; 1: wss://, `serve --tls-cert --tls-key` with a
#                           key and certificate made here with openssl, which Chromium is told
#                           to accept by its public key (--ignore-certificate-errors-spki-list:
#                           that key only, nothing else is trusted)
#   BROWSER_TIMEOUT         seconds from starting tickwire to the page's result (default 45)
#   CHROMIUM                the browser to run (default: chromium on PATH, installed if missing)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin="${TICKWIRE_BIN:-$root/target/release/tickwire}"
expect_deflate="${BROWSER_EXPECT_DEFLATE:-1}"
tls="${BROWSER_TLS:-0}"
timeout="${BROWSER_TIMEOUT:-45}"
page_server="$root/interop/browser/page_server.py"

# Before anything runs: one failure line and the summary, then out.
give_up() {
  echo "FAIL $*"
  echo "browser: 0 passed, 1 failed"
  exit 1
}

case "$expect_deflate" in
  1) serve_flags=(--deflate) ;;
  0) serve_flags=() ;;
  *) give_up "BROWSER_EXPECT_DEFLATE must be 0 or 1, not '$expect_deflate'" ;;
esac
case "$tls" in
  0) scheme=ws ;;
  1) scheme=wss ;;
  *) give_up "BROWSER_TLS must be 0 or 1, not '$tls'" ;;
esac
command -v python3 >/dev/null || give_up "python3 not found on PATH"

# shellcheck source=scripts/chromium.sh
source "$root/scripts/chromium.sh"
find_chromium browser

if [ ! -x "$bin" ]; then
  cargo build --release -q -p tickwire-cli || give_up "cargo build --release -p tickwire-cli"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tickwire-browser.XXXXXX")
profile=$(mktemp -d "${TMPDIR:-/tmp}/tickwire-chromium-profile.XXXXXX")
serve_pid=""
page_pid=""
chromium_pid=""

# Chromium forks a zygote, renderers and a crash handler: it runs as the leader of its own
# process group (setsid) and the whole group goes. TERM first so it can tidy its profile.
cleanup() {
  if [ -n "$chromium_pid" ]; then
    kill -TERM -- "-$chromium_pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 -- "-$chromium_pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL -- "-$chromium_pid" 2>/dev/null || true
  fi
  for pid in "$serve_pid" "$page_pid"; do
    if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  done
  wait 2>/dev/null || true
  rm -rf "$work" "$profile"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Prints what follows PREFIX on the first line of FILE once that line is complete; fails when
# process PID exits first or after 10 s.
first_line_after() {
  local file=$1 prefix=$2 pid=$3 line
  local deadline=$((SECONDS + 10))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if IFS= read -r line <"$file" && [[ "$line" == "$prefix"* ]]; then
      printf '%s\n' "${line#"$prefix"}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

chromium_tls_flags=()
if [ "$tls" = 1 ]; then
  command -v openssl >/dev/null || give_up "openssl not found on PATH (BROWSER_TLS=1 makes a certificate with it)"
  # A self-signed leaf for 127.0.0.1; Chromium accepts it by the SHA-256 of its public key.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/server.key" -out "$work/server.pem" \
    >"$work/openssl.log" 2>&1 || give_up "openssl: the test certificate: $(tail -n 5 "$work/openssl.log")"
  spki=$(openssl x509 -in "$work/server.pem" -pubkey -noout | openssl pkey -pubin -outform der \
    | openssl dgst -sha256 -binary | openssl enc -base64) || give_up "openssl: the certificate's SPKI hash"
  serve_flags+=(--tls-cert "$work/server.pem" --tls-key "$work/server.key")
  chromium_tls_flags=(--ignore-certificate-errors-spki-list="$spki")
fi

started=$SECONDS
# Made here: a background job opens its redirections only once it runs.
: >"$work/serve.out"
: >"$work/page.out"

"$bin" serve --runtime "${TICKWIRE_RUNTIME:-blocking}" --bind 127.0.0.1 --port 0 "${serve_flags[@]}" >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
address=$(first_line_after "$work/serve.out" "tickwire: echo server listening on $scheme://" "$serve_pid") \
  || give_up "tickwire serve ${serve_flags[*]} did not start: $(head -c 600 "$work/serve.err")"
ws_port=${address##*:}
[ "${address%:*}" = 127.0.0.1 ] && [[ "$ws_port" =~ ^[0-9]+$ ]] \
  || give_up "unexpected tickwire serve address '$address'"

python3 "$page_server" serve "$work/result.json" $((timeout + 15)) >"$work/page.out" 2>"$work/page.err" &
page_pid=$!
http_base=$(first_line_after "$work/page.out" "page server listening on " "$page_pid") \
  || give_up "page server did not start: $(head -c 600 "$work/page.err")"

page_url="${http_base}echo.html?port=${ws_port}&deflate=${expect_deflate}&scheme=${scheme}"
# The required flags, then: no proxy (loopback must be direct) and logging to stderr, so the
# page's console and Chromium's own errors land in the log printed on failure.
setsid "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" \
  --no-proxy-server --enable-logging=stderr "${chromium_tls_flags[@]}" \
  "$page_url" >"$work/chromium.log" 2>&1 &
chromium_pid=$!

problems=()
deadline=$((started + timeout))  # the start-up waits count against it too
while [ ! -s "$work/result.json" ]; do
  if ! kill -0 "$chromium_pid" 2>/dev/null; then
    wait "$chromium_pid" && code=0 || code=$?
    problems+=("Chromium exited with status $code before the page reported")
    break
  fi
  if ! kill -0 "$serve_pid" 2>/dev/null; then
    problems+=("tickwire serve exited before the page reported")
    break
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    problems+=("no result from the page within $timeout s")
    break
  fi
  sleep 0.2
done
elapsed=$((SECONDS - started))

if [ "${#problems[@]}" -gt 0 ] || grep -q -E '"ok": *false|"fatal": *"' "$work/result.json" 2>/dev/null; then
  sed 's/^/note: tickwire serve stderr: /' "$work/serve.err"
  sed 's/^/note: page server stderr: /' "$work/page.err"
  # Headless Chromium without a session bus or a GPU logs a screenful about them: not news.
  { grep -v -E 'dbus|D-Bus|vaapi|sandbox_linux|bluez|idle_linux' "$work/chromium.log" || true; } \
    | tail -n 30 | sed 's/^/note: chromium: /'
fi
version=$(timeout 5 "$chromium" --version 2>/dev/null | head -n 1) || true
echo "browser: ${version:-$chromium}, result after ${elapsed} s"
python3 "$page_server" report "$work/result.json" "${problems[@]}"
