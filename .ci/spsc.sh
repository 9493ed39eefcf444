#!/usr/bin/env bash
# The heavy checks of tickwire-spsc, the crate with the unsafe and atomic code:
#   1. the stress tests in release: with --full 100 million messages (TICKWIRE_SPSC_STRESS=full),
#      by default their everyday size, which finishes in seconds;
#   2. the loom models (every interleaving of push / pop / disconnect / park / unpark, up to
#      LOOM_MAX_PREEMPTIONS), in their own target dir so the normal build is not invalidated;
#   3. Miri over the unit, stress (small counts under Miri), async and doc tests, then the
#      cross-thread tests again under other scheduler and weak-memory seeds: the unit ones under
#      4 seeds by default; with --full the unit, stress and async ones under 8.
#
#   .ci/spsc.sh [--full]
#
# Installs what it uses when missing (the nightly toolchain's miri and rust-src; .ci/install.sh
# has already done so in CI). Prints one line per step; exits non-zero, loudly, on the first
# failure. About 3 minutes on 2 cores by default, 6 with --full.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
full=0
[ "${1:-}" = --full ] && full=1
start=$(date +%s)
step() { printf '\n==> [spsc %4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
fail() { printf '\n!!! SPSC CHECK FAILED: %s\n' "$*" >&2; exit 1; }

if [ "$full" = 1 ]; then
  step "stress: 100M u64 through the queue and through the channel (release)"
  TICKWIRE_SPSC_STRESS=full cargo test -p tickwire-spsc --release --test stress \
      || fail "stress tests"
else
  step "stress: the everyday counts (release; --full sends 100M)"
  cargo test -p tickwire-spsc --release --test stress || fail "stress tests"
fi

step "loom models (LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-3}, target/loom)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}" \
    cargo test -p tickwire-spsc --release --lib loom \
    || fail "loom models"

step "installing Miri (nightly, miri, rust-src) if missing"
bash .ci/install.sh miri || fail "installing Miri"

step "Miri: unit, stress and doc tests (strict provenance)"
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}" cargo +nightly miri test -p tickwire-spsc \
    || fail "Miri"

seeds=4
[ "$full" = 1 ] && seeds=8
step "Miri: cross-thread tests under $seeds scheduler and weak-memory seeds"
MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance} -Zmiri-many-seeds=0..$seeds" \
    cargo +nightly miri test -p tickwire-spsc --lib -- cross_threads ping_pong a_blocked \
    || fail "Miri (many seeds, unit tests)"
if [ "$full" = 1 ]; then
  MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance} -Zmiri-many-seeds=0..$seeds" \
      cargo +nightly miri test -p tickwire-spsc --test stress --test async_recv \
      || fail "Miri (many seeds, stress and async tests)"
fi

step "tickwire-spsc: all checks passed"
echo "spsc: stress, loom and Miri passed ($([ "$full" = 1 ] && echo full || echo default) size)"
