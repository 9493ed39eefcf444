#!/usr/bin/env bash
# Runs every cargo-fuzz target briefly, each starting from its committed corpus in
# fuzz/corpus/TARGET (libFuzzer replays the whole corpus before it mutates): the CI smoke check.
# Default 30 s a target (`.ci/run --full`); the default CI tier passes 8. Installs the nightly
# toolchain and cargo-fuzz when missing. A crash fails the script and leaves the reproducer in
# fuzz/artifacts/TARGET/.
#   fuzz/smoke.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
bash ../.ci/install.sh cargo-fuzz
targets=$(cargo +nightly fuzz list)
# One build of every target (cargo fuzz build takes one target or all of them).
cargo +nightly fuzz build -O
for target in $targets; do
  mkdir -p "corpus/$target"
  committed=$(find "corpus/$target" -type f | wc -l)
  log="artifacts/$target.log"
  mkdir -p artifacts
  if ! cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
      -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 > "$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "fuzz: $target FAILED (reproducer in fuzz/artifacts/$target)" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  echo "fuzz: $target: ${runs:-?} runs in ${seconds}s from $committed corpus inputs"
done
echo "fuzz: all targets ran ${seconds}s without a failure"
