#!/usr/bin/env bash
# Creates the private Python venv the interop tests run in (target/interop-venv) with a pinned
# `websockets`, and installs the openssl CLI when it is missing. Idempotent: a venv that already
# has the pinned version is left alone.
set -euo pipefail

# The peer library under test; bump deliberately and re-run interop/run.sh.
websockets_pin="17.4"

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/target/interop-venv"
python="$venv/bin/python"

fail() { echo "interop/setup.sh: FAILED: $*" >&2; exit 1; }

# test_tls_interop.py makes its certificates with the openssl CLI and talks to s_client/s_server.
if ! command -v openssl >/dev/null; then
  [ "$(id -u)" -eq 0 ] || fail "openssl is not installed and only root can apt-get install it"
  echo "interop/setup.sh: installing openssl (apt-get install openssl)"
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssl; } >/dev/null \
    || fail "apt-get install openssl"
fi

if [ -x "$python" ] && "$python" - "$websockets_pin" <<'PY' 2>/dev/null
import sys, websockets
sys.exit(0 if websockets.__version__ == sys.argv[1] else 1)
PY
then
  exit 0
fi

command -v python3 >/dev/null || fail "python3 not found on PATH"
mkdir -p "$root/target"
if [ ! -x "$python" ]; then
  python3 -m venv "$venv" || fail "python3 -m venv $venv (on Debian: apt-get install python3-venv)"
fi
"$python" -m pip install --quiet --disable-pip-version-check "websockets==$websockets_pin" \
  || fail "pip install websockets==$websockets_pin into $venv"
"$python" -c "import websockets.asyncio.server, websockets.asyncio.client" \
  || fail "websockets installed but its asyncio API does not import"
