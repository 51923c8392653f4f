#!/usr/bin/env bash
# A RUSTC_WRAPPER that keeps libFuzzer's coverage instrumentation (the `sancov-module` pass that
# cargo-fuzz adds to RUSTFLAGS) only in the crates named in FUZZ_INSTRUMENT (space-separated
# crate names, as rustc's --crate-name spells them); every other crate is compiled without it.
# cargo-fuzz has no per-crate switch: this is the only way on stable Rust. Use it with its own
# --target-dir, since cargo's fingerprints do not include the wrapper (see fuzz/README.md,
# "Narrow instrumentation").
set -euo pipefail
rustc="$1"
shift
name=""
prev=""
for a in "$@"; do
  if [ "$prev" = "--crate-name" ]; then name="$a"; fi
  prev="$a"
done
case " ${FUZZ_INSTRUMENT:-} " in
  *" $name "*) exec "$rustc" "$@" ;;
esac
args=()
for a in "$@"; do
  if [ "$a" != "-Cpasses=sancov-module" ]; then args+=("$a"); fi
done
exec "$rustc" "${args[@]}"
