#!/usr/bin/env bash
# Soak test of the reactor echo server (not part of CI): M minutes of churn, then a verdict on
# RSS, descriptors and unexpected events. Usage: soak/run.sh [--minutes M] [--workers N]
# Extra arguments after `--` go to soak/soak.py (see `python3 soak/soak.py --help`).
set -euo pipefail

minutes=20
workers=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,4p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/target/release/tickwire"
# Cargo decides whether anything changed; a no-op build takes a second.
(cd "$root" && nice -n 19 cargo build --release -q -p tickwire-cli)

logdir="$(mktemp -d /tmp/tickwire-soak.XXXXXX)"
server_args=(--runtime reactor serve --port 0 --max-message-size 1048576 --max-frame-size 1048576)
[ -n "$workers" ] && server_args+=(--workers "$workers")
"$bin" "${server_args[@]}" >"$logdir/server.out" 2>"$logdir/server.err" &
server_pid=$!
trap 'kill "$server_pid" 2>/dev/null || true' EXIT

port=""
for _ in $(seq 1 100); do
    port="$(sed -n 's|.*listening on ws://127.0.0.1:\([0-9]*\).*|\1|p' "$logdir/server.out")"
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$logdir/server.err" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "run.sh: the server printed no port" >&2; exit 1; }

echo "soak: $(date -u +%FT%TZ), $minutes min, server pid $server_pid on port $port" \
     "(workers: ${workers:-one per core}), $(nproc) cores, fd limit $(ulimit -n)"
status=0
nice -n 5 python3 "$root/soak/soak.py" --port "$port" --pid "$server_pid" --minutes "$minutes" \
    "${extra[@]}" || status=$?

if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "soak: the server exited during the run" >&2
    status=1
fi
if [ "$status" -ne 0 ] && kill -0 "$server_pid" 2>/dev/null; then
    echo "soak: the server's sockets now (ss, by state):"
    ss -tanH "( sport = :$port )" | awk '{print $1}' | sort | uniq -c
    echo "soak: the server's descriptors now: $(ls /proc/$server_pid/fd | wc -l)"
fi
if [ -s "$logdir/server.err" ]; then
    echo "soak: the server wrote to stderr ($(wc -l <"$logdir/server.err") lines, first 20):"
    head -20 "$logdir/server.err"
fi
echo "soak: server output in $logdir"
exit "$status"
