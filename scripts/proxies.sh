#!/usr/bin/env bash
# Installs the real proxies the connect-path tests tunnel through, from Debian packages:
# tinyproxy (HTTP CONNECT, with and without Basic authentication), microsocks (SOCKS5,
# with and without RFC 1929 username/password) and stunnel (TLS in front of tinyproxy: an
# https:// proxy). Prints one line per tool, `NAME PATH`, on stdout; everything else goes
# to stderr. Installs only what is missing (apt-get, as root); exits non-zero with a
# message when it cannot.
#
#   bash scripts/proxies.sh      # tinyproxy /usr/bin/tinyproxy
#                                # microsocks /usr/bin/microsocks
#                                # stunnel /usr/bin/stunnel4
set -euo pipefail

give_up() {
    echo "proxies.sh: $*" >&2
    exit 1
}

# The command each package gives.
declare -A package=([tinyproxy]=tinyproxy [microsocks]=microsocks [stunnel4]=stunnel4)
missing=()
for tool in tinyproxy microsocks stunnel4; do
    command -v "$tool" > /dev/null 2>&1 || missing+=("${package[$tool]}")
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
echo "tinyproxy $(command -v tinyproxy)"
echo "microsocks $(command -v microsocks)"
echo "stunnel $(command -v stunnel4)"
