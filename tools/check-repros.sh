#!/usr/bin/env bash
# Runs every standalone reproducer of docs/findings.md (docs/repro/*.py: the implementation's own
# API, no atomcts) and checks that each still shows its difference. Every reproducer exits 1 while
# the implementation differs from the documents and 0 once it conforms, printing expected and
# observed values either way; here exit 1 is the expected outcome, and an exit 0 fails loudly
# (fixed upstream? then update the finding, its baseline entries and this list), like a baseline
# entry that starts passing. Needs the Python implementations and GenX_IR
# (tools/install-implementations.sh python intel). CI runs it (.ci/run).
# A reproducer that needs hardware this machine lacks exits 3 ("implementation not available
# here: <reason>"); only entries tagged [gpu] may do so, and each is reported as NOT RUN HERE
# (counted, and listed again in the summary at the end), never as a pass. Exit 3 from any other
# entry is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
py=target/venv/bin/python
# reproducer and its arguments (one run each), after optional tags:
#   [python3]  run with the system python3 (standard library only), not target/venv's
#   [gpu]      needs a CUDA GPU: exit 3 where there is none is NOT RUN HERE, not a failure
#   [race]     shows its difference in some launches only (a race between work-groups, which a
#              loaded machine overlaps less: 0 of 50 launches seen there, 11 to 28 of 100 quiet):
#              an exit 0 is retried, up to 3 runs in all; exit 1 from any run is the difference
repros=(
  "docs/repro/numba-cudasim-4-add-against-sub.py"
  "docs/repro/numba-cudasim-1-f32-add-keeps-subnormals.py"
  "docs/repro/numba-cudasim-2-host-nan-results.py"
  "docs/repro/numba-minmax-signed-zeros.py sim"
  "[gpu] docs/repro/numba-minmax-signed-zeros.py gpu"
  "[gpu] docs/repro/numba-cuda-1-minmax-stale-returns.py"
  "[gpu] docs/repro/numba-cuda-2-minmax-two-nans.py"
  "[python3] docs/repro/intel-visa-1-binary-drops-operands.py"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-2"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-3"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-4"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-5"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-6"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-7"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-8"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-9"
  "[python3] docs/repro/intel-visa-genx-ir.py intel-visa-10"
  "docs/repro/taichi-subnormal-results-flushed.py cpu"
  "docs/repro/taichi-subnormal-results-flushed.py vulkan"
  "docs/repro/taichi-minmax-nan-operand.py cpu"
  "docs/repro/taichi-vulkan-contended-float-returns.py vulkan"
  "docs/repro/taichi-vulkan-contended-float-spirv.py"
  "docs/repro/triton-minmax-nan-operand.py"
  "docs/repro/llvmpipe-1-lavapipe.py"
  "docs/repro/llvmpipe-1-rusticl.py"
  "[python3] [race] docs/repro/swiftshader-1-max-against-add.py 50"
)
# Every reproducer on disk is listed.
# (No `printf | grep -q` here: grep stops at the first match, printf then dies of SIGPIPE, and
# under pipefail a listed reproducer would read as unlisted.)
for f in docs/repro/*.py; do
  listed=""
  for r in "${repros[@]}"; do
    read -r -a argv <<<"$r"
    for w in "${argv[@]}"; do
      [[ $w == \[*\] ]] && continue
      [ "$w" = "$f" ] && listed=1
      break
    done
  done
  [ -n "$listed" ] || { echo "check-repros: $f is not listed in $0" >&2; exit 2; }
done
failed=0 shown=0 not_run=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for r in "${repros[@]}"; do
  read -r -a argv <<<"$r"
  interp=$py gpu="" race=""
  while [[ ${argv[0]} == \[*\] ]]; do
    case ${argv[0]} in
      "[python3]") interp=python3;;
      "[gpu]") gpu=1;;
      "[race]") race=1;;
      *) echo "check-repros: unknown tag ${argv[0]} in \"$r\"" >&2; exit 2;;
    esac
    argv=("${argv[@]:1}")
  done
  echo "--- $r"
  timeout 600 "$interp" "${argv[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  for attempt in 2 3; do
    [ -n "$race" ] && [ "$rc" -eq 0 ] || break
    echo "--- $r: no launch differed (exit 0); a race: run $attempt of 3"
    timeout 600 "$interp" "${argv[@]}" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  done
  # An uncaught Python exception also exits 1: that is a crash, not the difference.
  if [ "$rc" -eq 1 ] && grep -q '^Traceback (most recent call last):' "$log"; then rc=crashed; fi
  case $rc in
    1) echo "--- $r: still shows the difference (exit 1)"; shown=$((shown + 1));;
    0) echo "--- $r: NO LONGER SHOWS THE DIFFERENCE (exit 0): fixed upstream? update docs/findings.md and the baselines" >&2; failed=$((failed + 1));;
    3) why=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | sed 's/^not run: //')
       if [ -n "$gpu" ]; then
         echo "--- $r: NOT RUN HERE: ${why:-no reason given} (exit 3)" >&2; not_run+=("$r: ${why:-no reason given}")
       else
         echo "--- $r: exit 3 (not available here: ${why:-no reason given}) from a reproducer not tagged [gpu]: a failure" >&2; failed=$((failed + 1))
       fi;;
    crashed) echo "--- $r: crashed (exit 1 with a Python traceback): not the difference" >&2; failed=$((failed + 1));;
    *) echo "--- $r: did not run (exit $rc)" >&2; failed=$((failed + 1));;
  esac
done
echo
echo "check-repros: ${#repros[@]} reproducers: $shown still show their difference, ${#not_run[@]} NOT RUN HERE, $failed failed"
for n in "${not_run[@]}"; do echo "  NOT RUN HERE: $n"; done
[ "$failed" -eq 0 ]
