#!/usr/bin/env bash
# N idle WebSocket connections (default 100,000) held at once across ceil(N / 18,000) reactor
# echo servers (--workers 1 each), every one pinged at the end; reports RSS per idle
# connection. Usage: soak/idle-100k.sh [--connections N] [--hold SECONDS]
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
for arg in "$@"; do
    case "$arg" in -h|--help) sed -n '2,4p' "$0"; exit 0 ;; esac
done
(cd "$root" && nice -n 19 cargo build --release -q -p tickwire-cli)
echo "idle-100k: $(date -u +%FT%TZ), $(nproc) cores, fd limit $(ulimit -n)"
exec python3 "$root/soak/idle_100k.py" --binary "$root/target/release/tickwire" "$@"
