#!/usr/bin/env bash
# Interop tests: tickwire against the Python `websockets` library, both directions.
#
#   bash interop/run.sh
#
# Builds target/release/tickwire when it is missing, prepares target/interop-venv
# (interop/setup.sh), then runs interop/test_websockets_interop.py. Exits with the test
# script's status; its last line is `interop: N passed, M failed`.
# TICKWIRE_BIN overrides the binary under test.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export TICKWIRE_BIN="${TICKWIRE_BIN:-$root/target/release/tickwire}"

if [ ! -x "$TICKWIRE_BIN" ]; then
  cargo build --release -q -p tickwire-cli
fi
bash "$root/interop/setup.sh"

status=0
"$root/target/interop-venv/bin/python" "$root/interop/test_websockets_interop.py" || status=$?
exit "$status"
