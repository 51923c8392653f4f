#!/usr/bin/env bash
# `cargo fuzz` with coverage instrumentation only in the code under test (issue 9).
#
#   fuzz/narrow.sh build -O --sanitizer none diff_fast_reference
#   fuzz/narrow.sh run diff_fast_reference -O --sanitizer none corpus/diff_fast_reference -- -max_total_time=600
#
# For `diff_fast_reference` the code under test is the fast path (crate `atomcts_fast`): the
# decoder, the generator and the state builder (crate `atomcts`) only make the input, and the
# reference's front end lowers it once for both executors (a bug there cannot show as a
# difference). Leaving them and the reference uninstrumented cuts libFuzzer's per-run work
# (the features of every edge an input executes, the comparison hooks) to a fraction, and the
# planted bugs of fuzz/README.md are found in fewer runs (BENCHMARKS.md, "sixth pass").
#
# FUZZ_INSTRUMENT (space-separated crate names as rustc spells them) chooses the instrumented
# crates; default "atomcts_fast diff_fast_reference". Each choice builds in a target directory of
# its own (target/narrow-<crates>), because cargo's fingerprints do not include the wrapper: one
# shared directory would silently mix crates built with and without instrumentation.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: fuzz/narrow.sh <cargo fuzz subcommand> [arguments...]" >&2
  exit 2
fi
export FUZZ_INSTRUMENT="${FUZZ_INSTRUMENT:-atomcts_fast diff_fast_reference}"
export RUSTC_WRAPPER="$PWD/narrow-rustc.sh"
dir="target/narrow-$(echo "$FUZZ_INSTRUMENT" | tr -s ' ' '\n' | sort | paste -sd+ -)"
sub="$1"
shift
exec cargo fuzz "$sub" --target-dir "$dir" "$@"
