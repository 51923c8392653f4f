#!/usr/bin/env bash
# Runs every standalone reproducer of docs/findings.md (docs/repro/*.py: the implementation's own
# API, no atomcts) and checks that each still shows its difference. Every reproducer exits 1 while
# the implementation differs from the documents and 0 once it conforms, printing expected and
# observed values either way; here exit 1 is the expected outcome, and an exit 0 fails loudly
# (fixed upstream? then update the finding, its baseline entries and this list), like a baseline
# entry that starts passing. Needs the Python implementations (tools/install-implementations.sh
# python). CI runs it (.ci/run).
set -uo pipefail
cd "$(dirname "$0")/.."
py=target/venv/bin/python
# reproducer and its arguments (one run each)
repros=(
  "docs/repro/numba-cudasim-4-add-against-sub.py"
  "docs/repro/taichi-subnormal-results-flushed.py cpu"
  "docs/repro/taichi-subnormal-results-flushed.py vulkan"
  "docs/repro/taichi-minmax-nan-operand.py cpu"
  "docs/repro/taichi-vulkan-contended-float-returns.py vulkan"
  "docs/repro/taichi-vulkan-contended-float-spirv.py"
  "docs/repro/triton-minmax-nan-operand.py"
  "docs/repro/llvmpipe-1-lavapipe.py"
  "docs/repro/llvmpipe-1-rusticl.py"
)
# Every reproducer on disk is listed.
for f in docs/repro/*.py; do
  printf '%s\n' "${repros[@]}" | grep -q "^$f\( \|$\)" || { echo "check-repros: $f is not listed in $0" >&2; exit 2; }
done
failed=0
for r in "${repros[@]}"; do
  read -r -a argv <<<"$r"
  echo "--- $r"
  timeout 600 "$py" "${argv[@]}"
  rc=$?
  case $rc in
    1) echo "--- $r: still shows the difference (exit 1)";;
    0) echo "--- $r: NO LONGER SHOWS THE DIFFERENCE (exit 0): fixed upstream? update docs/findings.md and the baselines" >&2; failed=1;;
    *) echo "--- $r: did not run (exit $rc)" >&2; failed=1;;
  esac
done
exit $failed
