#!/usr/bin/env bash
# Installs everything the CI steps use, before any of them starts, so that a failed install
# fails CI in one line instead of half-way into a suite. Idempotent: what is already there is
# checked in well under a second and left alone.
#
#   .ci/install.sh [--full] [COMPONENT...]
#
# With component names, only those are installed (.ci/spsc.sh asks for `miri`, fuzz/smoke.sh
# for `cargo-fuzz`, so each still runs on its own on a fresh machine).
#
# Components (run side by side; apt first within its chain, since dpkg takes one lock):
#   apt       Debian packages: chromium (browser interop), nginx (HTTP conformance), openssl
#             (certificates, TLS interop); with --full also valgrind (callgrind bench counts)
#   venvs     target/interop-venv (Python websockets) and target/http-interop-venv (httpbin,
#             gunicorn), after apt
#   autobahn  wstest in a private Python 2.7 prefix (conformance/autobahn.sh install)
#   miri      the nightly toolchain with miri and rust-src, and Miri's sysroot
#   msrv      the toolchain of the workspace's declared rust-version
#   cargo-fuzz
#   toxiproxy the fault proxy of the exchange simulator's tests (scripts/toxiproxy.sh, go install)
#
# Each component logs to target/ci/install-NAME.log and prints one line: `install: NAME: ok`
# with its seconds, or `install: NAME: FAILED (...)` followed by its log's last lines. The exit
# status is non-zero when any component failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
full=0
[ "${1:-}" = --full ] && { full=1; shift; }
logs="$root/target/ci"
mkdir -p "$logs"

msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

install_apt() {
  local want=(chromium nginx openssl) missing=() pkg
  [ "$full" = 1 ] && want+=(valgrind)
  for pkg in "${want[@]}"; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" = installed ] || missing+=("$pkg")
  done
  [ "${#missing[@]}" = 0 ] && { echo "already installed: ${want[*]}"; return 0; }
  [ "$(id -u)" = 0 ] || { echo "missing ${missing[*]}, and only root can apt-get install them"; return 1; }
  echo "apt-get install ${missing[*]}"
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

install_venvs() {
  bash "$root/interop/setup.sh" && bash "$root/interop/http/setup.sh"
}

install_autobahn() {
  conformance/autobahn.sh install
}

install_miri() {
  if ! rustup +nightly component list --installed 2>/dev/null | grep -q '^miri'; then
    rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal || return 1
    rustup +nightly component add miri rust-src || return 1
  fi
  cargo +nightly miri setup
}

install_msrv() {
  [ -n "$msrv" ] || { echo "no rust-version in Cargo.toml"; return 1; }
  rustup toolchain list | grep -q "^$msrv" && { echo "Rust $msrv already installed"; return 0; }
  rustup toolchain install "$msrv" --profile minimal
}

install_cargo_fuzz() {
  command -v cargo-fuzz >/dev/null 2>&1 && { echo "cargo-fuzz already installed"; return 0; }
  cargo install cargo-fuzz --locked
}

run() {
  local name=$1 start=$SECONDS
  shift
  if "$@" > "$logs/install-$name.log" 2>&1; then
    echo "install: $name: ok ($((SECONDS - start)) s)"
  else
    echo "install: $name: FAILED ($((SECONDS - start)) s; log: target/ci/install-$name.log)"
    tail -n 15 "$logs/install-$name.log" | sed "s/^/install: $name: | /"
    return 1
  fi
}

install_toxiproxy() {
  bash scripts/toxiproxy.sh
}

run_apt_then_venvs() { run apt install_apt && run venvs install_venvs; }

if [ $# -gt 0 ]; then
  for name in "$@"; do
    case "$name" in
      apt|venvs|autobahn|miri|msrv|cargo-fuzz|toxiproxy) run "$name" "install_${name//-/_}" || exit 1 ;;
      *) echo "install: unknown component '$name'" >&2; exit 2 ;;
    esac
  done
  exit 0
fi

pids=()
run_apt_then_venvs & pids+=($!)
run autobahn install_autobahn & pids+=($!)
# rustup and the Miri sysroot one after the other: two rustup runs at once share its state.
{ run miri install_miri && run msrv install_msrv; } & pids+=($!)
run cargo-fuzz install_cargo_fuzz & pids+=($!)
run toxiproxy install_toxiproxy & pids+=($!)
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit "$status"
