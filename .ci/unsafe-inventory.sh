#!/usr/bin/env bash
# Fails when a Rust file holds `unsafe` code (a block, fn, impl or trait) that docs/UNSAFE.md
# does not name by its path, or when UNSAFE.md names a path (from the repository root) that
# no longer exists.
# Every block must also carry a `// SAFETY:` comment, which clippy's
# `undocumented_unsafe_blocks` checks; this script checks the inventory.
set -uo pipefail
cd "$(dirname "$0")/.."
doc=docs/UNSAFE.md
status=0
files=$(git ls-files '*.rs' | grep -v '^fuzz/' | xargs grep -lE '(^|[^_[:alnum:]])unsafe[[:space:]]*(\{|fn|impl|trait|extern)' || true)
for file in $files; do
  if ! grep -qF "$file" "$doc"; then
    echo "UNLISTED $file: unsafe code that $doc does not name"
    status=1
  fi
done
# Paths from the repository root (some rows also name files relative to their crate).
for listed in $(grep -oE '`(crates|bench|loadgen)/[A-Za-z0-9_./-]+\.rs`' "$doc" | tr -d '`' | sort -u); do
  [ -f "$listed" ] || { echo "STALE $listed: named in $doc, no such file"; status=1; }
done
count=$(printf '%s\n' $files | grep -c . || true)
[ "$status" = 0 ] && echo "unsafe-inventory: $count files with unsafe code, each listed in $doc"
exit "$status"
