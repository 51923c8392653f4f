#!/usr/bin/env python3
"""Finding numba-cuda-1 (docs/findings.md): on a real GPU, Numba's float cuda.atomic.nanmin gives
contending threads back a value their update did not replace: four threads of one warp on one
float32 (10.0; operands 3.0, -1.5, 2.0, 8.0) all get 10.0 back. Standalone: Numba's API only (no
atomcts), Numba's CUDA target (NUMBA_ENABLE_CUDASIM=0); needs a CUDA GPU.

  python3 docs/repro/numba-cuda-1-minmax-stale-returns.py [--simulator]

The documents' rule: every atomic returns the value its own update replaced, and the updates of
one address happen in some order (vISA DWORD_ATOMIC, Notes: channels writing one address are
serialized, each returning the value it replaced; PTX ISA `atom`: the original value at the
location); Numba documents cuda.atomic.nanmin as returning the old value. So the four returns
must be what some order of the four minima returns: the first thread in that order gets 10.0,
each later one its predecessor's result (never 10.0 for all four), and memory ends at -1.5.
Exits 1 while some launch's returns fit no order, 0 once all fit, 3 where there is no CUDA GPU
(implementation not available here). --simulator runs the same code in Numba's CUDA simulator,
only to check this script where no GPU is: the simulator runs the threads one at a time and
conforms (exit 0).
"""
import itertools
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

START = 10.0
OPERANDS = [3.0, -1.5, 2.0, 8.0]
LAUNCHES = 6


@cuda.jit
def nanmin(mem, b, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.nanmin(mem, 0, b[i])


def orders():
    """Every order of the four updates, as the returns each thread gets in it."""
    for order in itertools.permutations(range(len(OPERANDS))):
        value, returns = START, [None] * len(OPERANDS)
        for t in order:
            returns[t] = value
            value = min(value, OPERANDS[t])
        yield tuple(returns)


def bits(x):
    return "0x%08x" % int(np.array([x], np.float32).view(np.uint32)[0])


allowed = set(orders())
final = min([START] + OPERANDS)
name = "" if simulator else cuda.get_current_device().name
where = "simulator" if simulator else "CUDA target on " + (name.decode() if isinstance(name, bytes) else str(name))
print("rule: vISA DWORD_ATOMIC, Notes (channels on one address serialized, each returns the value it "
      "replaced); PTX ISA atom (returns the original value): the returns fit one order of the updates")
print("expected: memory %s (%r); returns one of %d orders' returns, e.g. %s" % (
    bits(final), final, len(allowed), " ".join(bits(x) for x in sorted(allowed)[0])))
bad = 0
for launch in range(LAUNCHES):
    mem = cuda.to_device(np.array([START], np.float32))
    b = cuda.to_device(np.array(OPERANDS, np.float32))
    out = cuda.to_device(np.zeros(len(OPERANDS), np.float32))
    nanmin[1, len(OPERANDS)](mem, b, out)
    cuda.synchronize()
    got_mem = float(mem.copy_to_host()[0])
    got = tuple(float(x) for x in out.copy_to_host())
    ok = got in allowed and got_mem == final
    bad += not ok
    print("numba %s %s, launch %d: nanmin(%s; %s): memory %s, returns %s%s" % (
        numba.__version__, where, launch, bits(START), " ".join(bits(x) for x in OPERANDS), bits(got_mem),
        " ".join(bits(x) for x in got), "" if ok else "  <- differs: fits no order of the four updates"))
print("%d of %d launches returned values that fit no order" % (bad, LAUNCHES))
sys.exit(1 if bad else 0)
