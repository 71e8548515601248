#!/usr/bin/env bash
# Run one cargo-fuzz target for a while: scripts/fuzz.sh TARGET [SECONDS]
#   TARGET: parse_request | normalize_target     SECONDS: default 60
# Needs cargo-fuzz (`cargo install cargo-fuzz`). cargo fuzz passes
# sanitizer flags only nightly compilers accept; on the stable toolchain
# RUSTC_BOOTSTRAP=1 lets stable rustc take them. The corpus starts from the
# attack corpus (written by the evdispatch-torture example `write-seeds`
# the first time) and grows in fuzz/corpus/TARGET; a crash lands in
# fuzz/artifacts/TARGET (replay: cargo fuzz run --fuzz-dir fuzz TARGET FILE).
# The same invariants run deterministically in `cargo test`
# (crates/evdispatch-torture/tests/fuzz_bodies.rs).
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh parse_request|normalize_target [SECONDS]}"
seconds="${2:-60}"
case "$target" in
  parse_request|normalize_target) ;;
  *) echo "unknown target '$target': parse_request or normalize_target" >&2; exit 2 ;;
esac
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 1
fi
corpus="fuzz/corpus/$target"
mkdir -p "$corpus"
# Seed the corpus from the attack corpus (once).
if [ -z "$(ls -A "$corpus")" ]; then
  cargo run --release -q -p evdispatch-torture --example write-seeds -- "$target" "$corpus"
fi
export RUSTC_BOOTSTRAP=1
# Sanitizer: address (the default) needs nothing beyond the toolchain.
exec cargo fuzz run --fuzz-dir fuzz "$target" "$corpus" -- \
  -max_total_time="$seconds" -max_len=16384 -print_final_stats=1
