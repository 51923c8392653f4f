#!/usr/bin/env python3
"""Finding numba-cuda-2 (docs/findings.md): on a real GPU, Numba's float cuda.atomic.nanmax and
nanmin of two NaNs leave memory's NaN in place (its sign, payload and signaling bit) where CUDA
gives the canonical NaN 0x7fffffff. Standalone: Numba's API only (no atomcts), Numba's CUDA
target (NUMBA_ENABLE_CUDASIM=0); needs a CUDA GPU.

  python3 docs/repro/numba-cuda-2-minmax-two-nans.py [--simulator]

The documents' rule: PTX ISA `max`/`min`: two NaN operands give NaN; CUDA Programming Guide,
Floating-Point Standard: a single-precision NaN result is the canonical 0x7fffffff (knob A4
`float.nan_result` = canonical_single, the nvidia-ptx profile). So, on a float32 in global memory:
  nanmax(NaN 0xffc00001, NaN 0x7fc00000)              stores 0x7fffffff
  nanmin(signaling NaN 0x7f800011, NaN 0x7fc00022)    stores 0x7fffffff
(the corpus's visa/dword_atomic/fmin_fmax::fmax_two_nans_give_nan and
fmin_fmax_nan_bits::fmin_two_nans_canonical). Exits 1 while the difference shows, 0 once it
conforms, 3 where there is no CUDA GPU (implementation not available here). --simulator runs the
same code in Numba's CUDA simulator, only to check this script where no GPU is (the simulator
differs too, with other bits: finding numba-cudasim-2).
"""
import os
import sys
import warnings

simulator = "--simulator" in sys.argv[1:]
os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if simulator else "0"
warnings.simplefilter("ignore", RuntimeWarning)
import numpy as np  # noqa: E402
import numba  # noqa: E402
from numba import cuda  # noqa: E402

if not simulator and not cuda.is_available():
    print("not run: implementation not available here (no CUDA GPU: numba.cuda.is_available() is False)")
    sys.exit(3)


@cuda.jit
def nanmax(mem, b, out):
    out[0] = cuda.atomic.nanmax(mem, 0, b[0])


@cuda.jit
def nanmin(mem, b, out):
    out[0] = cuda.atomic.nanmin(mem, 0, b[0])


CANONICAL = 0x7fffffff
name = "" if simulator else cuda.get_current_device().name
where = "simulator" if simulator else "CUDA target on " + (name.decode() if isinstance(name, bytes) else str(name))
print("rule: PTX ISA max/min (two NaNs give NaN); CUDA Programming Guide, Floating-Point Standard: a "
      "single-precision NaN result is the canonical 0x%08x" % CANONICAL)
differs = False
for fname, k, m, v in [("atomic.nanmax", nanmax, 0xffc00001, 0x7fc00000),
                       ("atomic.nanmin", nanmin, 0x7f800011, 0x7fc00022)]:
    mem = cuda.to_device(np.array([m], np.uint32).view(np.float32))
    b = cuda.to_device(np.array([v], np.uint32).view(np.float32))
    out = cuda.to_device(np.zeros(1, np.float32))
    k[1, 1](mem, b, out)
    cuda.synchronize()
    got = int(mem.copy_to_host().view(np.uint32)[0])
    print("numba %s %s: %s(f32 0x%08x, 0x%08x): memory expected 0x%08x, observed 0x%08x%s" % (
        numba.__version__, where, fname, m, v, CANONICAL, got, "" if got == CANONICAL else "  <- differs"))
    differs |= got != CANONICAL
sys.exit(1 if differs else 0)
