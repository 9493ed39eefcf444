#!/usr/bin/env bash
# Miri over the one module of tickwire-codec with `unsafe` (ws::mask and its AVX2 submodule),
# built with AVX2 switched on (`-C target-feature=+avx2`) so that the AVX2 loops are what Miri
# interprets; the same tests call the portable path directly, so both paths run under Miri and
# are compared with the RFC's byte-at-a-time definition (docs/UNSAFE.md).
#
#   .ci/codec-miri.sh
#
# Installs Miri when missing (.ci/install.sh has already done so in CI). Its own target dir, so
# the normal build is not invalidated. About 2 minutes on 2 cores, most of it the first build.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
bash .ci/install.sh miri || { echo "!!! CODEC MIRI FAILED: installing Miri" >&2; exit 1; }
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" RUSTFLAGS="-C target-feature=+avx2" \
    CARGO_TARGET_DIR=target/miri-codec \
    cargo +nightly miri test -p tickwire-codec --lib ws::mask \
    || { echo "!!! CODEC MIRI FAILED: the masking tests under Miri" >&2; exit 1; }
echo "codec-miri: masking (portable and AVX2) passed under Miri"
