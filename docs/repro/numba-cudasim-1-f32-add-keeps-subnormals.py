#!/usr/bin/env python3
"""Finding numba-cudasim-1 (docs/findings.md): Numba's CUDA simulator adds float32 atomically with
host (numpy) floats and keeps a subnormal result that CUDA's global f32 atomic add flushes to zero.
Standalone: Numba's API only (no atomcts), NUMBA_ENABLE_CUDASIM=1.

  target/venv/bin/python docs/repro/numba-cudasim-1-f32-add-keeps-subnormals.py

The documents' rule: SASS ATOM, Atomic Operations table, the f32 add is `.F32.FTZ.RN`
(subnormal inputs and results flushed to sign-preserving zero); CUDA Programming Guide,
Floating-Point Standard: atomic adds on global memory behave as FADD.F32.FTZ.RN (knob A2
`sass.f32_add_ftz` = flush, the nvidia-ptx profile the simulator claims by simulating CUDA).
So cuda.atomic.add on a float32 in global memory:
  memory 0x00800001 (2^-126 + 2^-149) + operand 0x80800000 (-2^-126): the exact sum 2^-149 is
  subnormal and is flushed: memory 0x00000000; the returned old value is 0x00800001 (a normal
  number, so knob A3 `float.ftz_return` does not matter here).
Exits 1 while the simulator still shows the difference, 0 once it conforms.
"""
import os
import sys
import warnings

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
warnings.simplefilter("ignore", RuntimeWarning)
import numpy as np  # noqa: E402
import numba  # noqa: E402
from numba import cuda  # noqa: E402


@cuda.jit
def add(mem, b, out):
    out[0] = cuda.atomic.add(mem, 0, b[0])


print("rule: SASS ATOM, Atomic Operations table (.F32.FTZ.RN); CUDA Programming Guide, "
      "Floating-Point Standard: global f32 atomic add flushes subnormal inputs and results")
differs = False
#            memory      operand     memory after  returned
for m, v, want, want_old in [(0x00800001, 0x80800000, 0x00000000, 0x00800001)]:
    mem = np.array([m], np.uint32).view(np.float32)
    b = np.array([v], np.uint32).view(np.float32)
    out = np.zeros(1, np.float32)
    add[1, 1](mem, b, out)
    got, old = int(mem.view(np.uint32)[0]), int(out.view(np.uint32)[0])
    bad = got != want or old != want_old
    print("numba %s simulator: atomic.add(f32 0x%08x, 0x%08x): memory expected 0x%08x, observed 0x%08x; "
          "returned expected 0x%08x, observed 0x%08x%s" % (
              numba.__version__, m, v, want, got, want_old, old, "  <- differs" if bad else ""))
    differs |= bad
sys.exit(1 if differs else 0)
