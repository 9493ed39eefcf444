#!/usr/bin/env bash
# Packages every published crate in dependency order and verifies each (cargo builds it from
# its .crate file, the crates it depends on taken from the ones packaged before it: crates.io
# holds no tickwire crate yet, so this is what `cargo publish --dry-run` can check here).
# Offline: every dependency is already in the cache after the workspace build. The
# unpublished members (publish = false) are left out.
set -euo pipefail
cd "$(dirname "$0")/.."
unpublished=$(cargo metadata --no-deps --format-version 1 --offline \
  | python3 -c 'import json,sys; print(" ".join("--exclude " + p["name"] for p in json.load(sys.stdin)["packages"] if p.get("publish") == []))')
mkdir -p target
# cargo verifies each crate against the ones packaged before it through a temporary local
# registry. It trusts a registry crate by name and version: its extracted sources (under
# $CARGO_HOME/registry/src/-HASH/) are not extracted again, and its builds are not checked
# against the files. The version stays 0.1.0 from run to run, so a second run on one machine
# would verify against the first run's tickwire crates. So the verification builds in a
# target directory of its own, whose tickwire builds are removed each run (the dependencies'
# stay), with the extracted tickwire sources (crates.io's live in index.crates.io-*, never
# touched here).
verify=target/package-verify
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/tickwire*
rm -rf "$verify"/package "$verify"/debug/.fingerprint/tickwire* "$verify"/debug/deps/*tickwire* \
  "$verify"/debug/build/tickwire*
# shellcheck disable=SC2086
CARGO_TARGET_DIR=$verify cargo package --workspace $unpublished --offline --allow-dirty \
  > target/package.log 2>&1 || { cat target/package.log; exit 1; }
grep -E '^ +(Packaged|Verifying) ' target/package.log
count=$(ls "$verify"/package/*.crate | wc -l)
echo "package: $count crates packaged and verified in dependency order"
