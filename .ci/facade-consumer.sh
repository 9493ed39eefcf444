#!/usr/bin/env bash
# A new crate outside the workspace that depends on `tickwire` with `features = ["tokio"]`
# (and tokio for its runtime), and nothing else of ours, builds the README's tokio example
# as its main.rs. Offline, with the workspace's lock file, in the workspace's target folder.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="$root/target/facade-consumer"
rm -rf "$dir" && mkdir -p "$dir/src"
cat > "$dir/Cargo.toml" <<TOML
[package]
name = "facade-consumer"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
tickwire = { path = "$root/crates/tickwire", features = ["tokio"] }
tokio = { version = "1", features = ["rt", "macros"] }

[workspace]

# The workspace's dev profile, so the dependencies built for the tests are reused.
[profile.dev]
opt-level = 1
debug = "line-tables-only"
TOML
# The README's first Rust block that uses the tokio transport, as the program.
awk '/^```rust/ { inside = 1; block = ""; next }
     /^```/ && inside { inside = 0; if (block ~ /tickwire::tokio::/) { printf "%s", block; exit } next }
     inside { block = block $0 "\n" }' README.md > "$dir/src/main.rs"
grep -q 'tickwire::tokio::' "$dir/src/main.rs" || { echo "no tokio example in README.md"; exit 1; }
if grep -E 'tickwire_[a-z]+' "$dir/src/main.rs"; then
  echo "the README's tokio example names another tickwire crate"; exit 1
fi
cp Cargo.lock "$dir/Cargo.lock"
CARGO_TARGET_DIR="$root/target" cargo build --offline --manifest-path "$dir/Cargo.toml" \
  > "$dir/build.log" 2>&1 || { cat "$dir/build.log"; exit 1; }
echo "facade-consumer: a crate depending on tickwire (features = [\"tokio\"]) builds the README's tokio example"
