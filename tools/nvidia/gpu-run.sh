#!/usr/bin/env bash
# Everything atomcts runs on a machine with an NVIDIA GPU (never in CI: CI has no GPU). From the
# repository root:
#   tools/nvidia/gpu-run.sh [BINARY] [OUT]
# BINARY: the atomcts release binary (default target/release/atomcts; a stripped copy can be
# carried to a GPU machine that has no Rust). OUT: where the reports go (default target/gpu).
# Needs: the NVIDIA driver (libcuda); for the Numba part, python3 with numba-cuda and numpy < 2.5
# (numba 0.68.0 calls numpy.row_stack, which numpy 2.5 removed). The device machine lent here
# (2026-11-27) has python 3.12 with numba-cuda and numpy 2.5 in /opt/torch/.venv: carry the
# numpy-2.4.6 cp312 wheel (`pip download numpy==2.4.6 --python-version 3.12 --only-binary=:all:`),
# unzip it there and put that folder first on PYTHONPATH.
# Writes OUT/cuda.json and OUT/numba-cuda.json (the conformance report's GPU columns:
# docs/conformance/gpu/), the stress and planted-bug runs, and the logs; prints a summary.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${1:-target/release/atomcts}
OUT=${2:-target/gpu}
mkdir -p "$OUT"
fail=0
note() { printf '== %s\n' "$*"; }

note "the corpus on the GPU (PTX back end), gated by its baseline"
"$B" run --no-progress --adapter cuda --profile claimed --baseline adapters/baselines/cuda-h100.baseline \
  --json "$OUT/cuda.json" > "$OUT/cuda.txt" 2>&1 || { echo "cuda: exit $?"; fail=1; }
tail -n 1 "$OUT/cuda.txt"

note "generated cases on the GPU (20000, seed 2) and 90 s of differential fuzzing"
"$B" run --no-progress --adapter cuda --profile nvidia-ptx --generated 20000 --generated-only --seed 2 \
  > "$OUT/generated.txt" 2>&1 || { echo "generated: exit $?"; fail=1; }
tail -n 1 "$OUT/generated.txt"
"$B" fuzz --no-progress --adapter cuda --profile nvidia-ptx --time 90 --seed 11 --out "$OUT/fuzz" \
  > "$OUT/fuzz.txt" 2>&1 || { echo "fuzz: exit $?"; fail=1; }
grep -E "cases in" "$OUT/fuzz.txt"

note "batched launches (issue 31): the corpus and 20000 generated cases, one launch per case and batched (ATOMCTS_CUDA_BATCH=1024): every verdict the same"
for w in 1 1024; do
  ATOMCTS_CUDA_BATCH=$w "$B" run --no-progress --adapter cuda --profile claimed --generated 20000 --seed 5 --jobs 2 \
    --jsonl "$OUT/batch-$w.jsonl" > "$OUT/batch-$w.txt" 2>&1
  echo "ATOMCTS_CUDA_BATCH=$w: exit $? ($(tail -n 1 "$OUT/batch-$w.txt"))"
done
python3 - "$OUT/batch-1.jsonl" "$OUT/batch-1024.jsonl" <<'PY' || fail=1
import json, sys
def statuses(p):
    return {r["id"]: r["status"] for r in map(json.loads, open(p))}
a, b = map(statuses, sys.argv[1:3])
differ = sorted(i for i in a.keys() | b.keys() if a.get(i) != b.get(i))
print(f"{len(a)} cases alone, {len(b)} batched; {len(differ)} verdicts differ")
for i in differ[:20]:
    print(f"  {i}: alone {a.get(i)}, batched {b.get(i)}")
sys.exit(1 if differ or not a else 0)
PY

note "a planted cross-case write in the batched kernels (ATOMCTS_PTX_PLANT=cross_case_write): every case that passes batched is an error naming the write"
ATOMCTS_CUDA_BATCH=1024 ATOMCTS_PTX_PLANT=cross_case_write "$B" run --no-progress --adapter cuda --profile claimed \
  --jsonl "$OUT/batch-plant.jsonl" > "$OUT/batch-plant.txt" 2>&1
python3 - "$OUT/batch-1024.jsonl" "$OUT/batch-plant.jsonl" <<'PY' || fail=1
import json, sys
clean = {r["id"]: r for r in map(json.loads, open(sys.argv[1]))}
planted = [json.loads(l) for l in open(sys.argv[2])]
caught, wrong = 0, []
for p in planted:
    c = clean.get(p["id"])
    # Concurrent cases run alone, outside any batch (the plant is in the batched kernels).
    if c is None or c["status"] != "pass" or p["op"].startswith("concurrent:"):
        continue
    if p["status"] == "error" and "cross-case write" in json.dumps(p["findings"]):
        caught += 1
    else:
        wrong.append(f'{p["id"]}: {p["status"]}')
print(f"{len(planted)} cases; {caught} that pass batched are errors naming the write; {len(wrong)} are not")
for w in wrong[:20]:
    print("  " + w)
sys.exit(1 if wrong or not caught else 0)
PY

note "throughput (issue 31 point 2): 1,000,000 generated drafts, learning, batched, 16 makers"
for w in 1 1024; do
  /usr/bin/time -f "ATOMCTS_CUDA_BATCH=$w: %e s wall, %U s user" env ATOMCTS_CUDA_BATCH=$w "$B" run --no-progress \
    --adapter cuda --profile nvidia-ptx --generated 1000000 --generated-only --seed 7 --jobs 16 --learn \
    > "$OUT/throughput-$w.txt" 2>&1
  tail -n 1 "$OUT/throughput-$w.txt"
done

note "concurrent cases, 100 runs each (issue 12): no failure allowed"
"$B" run --no-progress --adapter cuda --profile nvidia-ptx --filter tag:concurrent --repeat 100 \
  --json "$OUT/concurrent-repeat100.json" > "$OUT/concurrent-repeat100.txt" 2>&1 || { echo "repeat: exit $?"; fail=1; }
tail -n 1 "$OUT/concurrent-repeat100.txt"

note "planted lost updates (ATOMCTS_PTX_PLANT=split_rmw): every runnable integer concurrent case must fail"
# The plant splits integer atoms only (adapters/src/back/ptx/concurrent.rs): the f16x2 cases
# (sass/atom/concurrent::f16x2_*) keep their atoms whole and pass.
ATOMCTS_PTX_PLANT=split_rmw "$B" run --no-progress --adapter cuda --profile nvidia-ptx --filter tag:concurrent \
  --repeat 100 --json "$OUT/split-rmw-repeat100.json" > "$OUT/split-rmw.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { echo "split_rmw: exit $rc, want 1"; fail=1; }
grep -c "runs: failed 100 of 100" "$OUT/split-rmw.txt" | sed 's/^/cases failing in every one of 100 runs: /'
tail -n 1 "$OUT/split-rmw.txt"

if python3 -c "import numba.cuda" 2>/dev/null; then
  note "Numba's CUDA target on the GPU (NUMBA_ENABLE_CUDASIM=0), gated by its baseline"
  NUMBA_ENABLE_CUDASIM=0 "$B" run --no-progress --adapter "cmd:python3 adapters/shims/numba_cudasim.py" \
    --adapter-timeout-ms 60000 --profile claimed --baseline adapters/shims/numba_cuda_gpu.baseline \
    --json "$OUT/numba-cuda.json" > "$OUT/numba-cuda.txt" 2>&1 || { echo "numba-cuda: exit $?"; fail=1; }
  tail -n 1 "$OUT/numba-cuda.txt"
  note "Numba's CUDA target: the standalone reproducers of numba-cuda-1..3 (docs/repro; exit 1 = still shows)"
  for r in "numba-cuda-1-minmax-stale-returns.py" "numba-cuda-2-minmax-two-nans.py" "numba-minmax-signed-zeros.py gpu"; do
    read -r -a argv <<<"$r"
    NUMBA_ENABLE_CUDASIM=0 timeout 300 python3 "docs/repro/${argv[0]}" "${argv[@]:1}" > "$OUT/repro-${argv[0]%.py}.txt" 2>&1
    rc=$?
    echo "reproducer $r: exit $rc ($( [ $rc -eq 1 ] && echo 'still shows the difference' || echo 'DOES NOT SHOW IT: see the output'))"
    [ "$rc" -eq 1 ] || fail=1
  done
else
  echo "numba-cuda: python3 has no numba.cuda; skipped"
fi
exit "$fail"
