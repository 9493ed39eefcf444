#!/usr/bin/env bash
# Installs the real proxies the connect-path tests tunnel through, from Debian packages:
# tinyproxy (HTTP CONNECT, with and without Basic authentication) and microsocks (SOCKS5,
# with and without RFC 1929 username/password). Prints one line per proxy, `NAME PATH`, on
# stdout; everything else goes to stderr. Installs only what is missing (apt-get, as root);
# exits non-zero with a message when it cannot.
#
#   bash scripts/proxies.sh      # tinyproxy /usr/bin/tinyproxy
#                                # microsocks /usr/bin/microsocks
set -euo pipefail

give_up() {
    echo "proxies.sh: $*" >&2
    exit 1
}

missing=()
for tool in tinyproxy microsocks; do
    command -v "$tool" > /dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]} > 0)); then
    command -v apt-get > /dev/null 2>&1 || give_up "apt-get not found; install ${missing[*]} by hand"
    if [[ $(id -u) -ne 0 ]]; then
        give_up "installing ${missing[*]} needs root (apt-get)"
    fi
    # One installer at a time: concurrent test binaries may all call this script.
    exec 9> /tmp/tickwire-proxies.lock
    flock 9
    still=()
    for tool in "${missing[@]}"; do
        command -v "$tool" > /dev/null 2>&1 || still+=("$tool")
    done
    if ((${#still[@]} > 0)); then
        echo "proxies.sh: apt-get install ${still[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${still[@]}" >&2 ||
            { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${still[@]}" >&2; } ||
            give_up "apt-get install ${still[*]} failed"
    fi
fi
for tool in tinyproxy microsocks; do
    echo "$tool $(command -v "$tool")"
done
