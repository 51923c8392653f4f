#!/usr/bin/env python3
"""Finding numba-cudasim-2 (docs/findings.md): Numba's CUDA simulator stores the host's NaNs (x86's
default NaN 0xffc00000, or a NaN operand quieted with its payload) where CUDA stores the canonical
NaN 0x7fffffff. Standalone: Numba's API only (no atomcts), NUMBA_ENABLE_CUDASIM=1.

  target/venv/bin/python docs/repro/numba-cudasim-2-host-nan-results.py

The documents' rule: CUDA Programming Guide, Floating-Point Standard: a single-precision NaN
produced by an arithmetic operation is the canonical 0x7fffffff (knob A4 `float.nan_result` =
canonical_single, the nvidia-ptx profile the simulator claims by simulating CUDA); IEEE 754 7.2:
inf + -inf is invalid and gives a NaN; PTX ISA `max`: two NaN operands give NaN. So, on a float32
in global memory:
  cuda.atomic.add(inf 0x7f800000, -inf 0xff800000)        stores 0x7fffffff
  cuda.atomic.add(1.0 0x3f800000, NaN 0x7fc00123)          stores 0x7fffffff
  cuda.atomic.nanmax(NaN 0xffc00001, NaN 0x7fc00000)       stores 0x7fffffff
(The f64 NaN bits are not fixed by any NVIDIA document: finding cuda-1; not checked here.)
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


@cuda.jit
def nanmax(mem, b, out):
    out[0] = cuda.atomic.nanmax(mem, 0, b[0])


CANONICAL = 0x7fffffff
print("rule: CUDA Programming Guide, Floating-Point Standard: a single-precision NaN result is the "
      "canonical 0x%08x" % CANONICAL)
differs = False
for name, k, m, v in [("atomic.add", add, 0x7f800000, 0xff800000),
                      ("atomic.add", add, 0x3f800000, 0x7fc00123),
                      ("atomic.nanmax", nanmax, 0xffc00001, 0x7fc00000)]:
    mem = np.array([m], np.uint32).view(np.float32)
    b = np.array([v], np.uint32).view(np.float32)
    out = np.zeros(1, np.float32)
    k[1, 1](mem, b, out)
    got = int(mem.view(np.uint32)[0])
    print("numba %s simulator: %s(f32 0x%08x, 0x%08x): memory expected 0x%08x, observed 0x%08x%s" % (
        numba.__version__, name, m, v, CANONICAL, got, "" if got == CANONICAL else "  <- differs"))
    differs |= got != CANONICAL
sys.exit(1 if differs else 0)
