#!/usr/bin/env python3
"""numba-cudasim-4 (docs/findings.md): Numba's CUDA simulator loses atomic adds or subtracts when
threads run `cuda.atomic.add` and `cuda.atomic.sub` on one word at the same time.

Standalone: Numba's API only (no atomcts). Run:
    python3 docs/repro/numba-cudasim-4-add-against-sub.py

The documents' rule: SASS ATOM, Description (the read-modify-write is done with no access to
the location by another thread in between), the Metal Shading Language Specification's atomic
functions and vISA DWORD_ATOMIC, Description and Notes, say the same, and the CUDA C++
Programming Guide, "Atomic Functions", for the calls Numba mirrors; none limits atomicity to
threads running the same operation. So 16 threads adding 3 and 16 threads subtracting 2, 128
times each, from 1000000 end at 1000000 + 2048 * 3 - 2048 * 2 = 1002048 in every order.

The simulator runs each thread of a block as a Python thread; its atomics
(numba/cuda/simulator/kernelapi.py, FakeCUDAAtomic) hold one lock per operation kind (`addlock`,
`sublock`, `andlock`, ..., `caslock`): an add excludes other adds, not a subtract. When the
interpreter switches threads (every sys.getswitchinterval() seconds, 5 ms by default) between an
add's read and its write while subtracts run, the add writes back a stale sum and those subtracts
are lost (or the other way round).

It prints, for each setting, how many of the runs ended elsewhere than 1002048:
  1. the simulator as it comes (default switch interval): rare (measured 0 of 100 here on a
     2-core machine; the corpus's 128-thread MSL case fails about 1 run in 20, docs/findings.md);
  2. the interpreter switching threads every microsecond: the same race, shown in a few runs;
  3. as 2, with the simulator's locks replaced by one lock for every atomic: no run loses one.
Exit status 1 when 2 shows the difference and 3 does not (the bug is still there), 0 otherwise:
like every reproducer in docs/repro, it fails while the implementation differs (tools/check-repros.sh).
"""
import os
import sys
import threading
import warnings

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
warnings.simplefilter("ignore", RuntimeWarning)
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda.simulator import kernelapi  # noqa: E402

START, ADDS, SUBS, ITERATIONS = 1000000, 16, 16, 128
EXPECTED = START + ADDS * ITERATIONS * 3 - SUBS * ITERATIONS * 2


@cuda.jit
def add_against_sub(mem):
    t = cuda.threadIdx.x
    cuda.syncthreads()  # every thread starts together (the simulator starts them one by one)
    for _ in range(ITERATIONS):
        if t < ADDS:
            cuda.atomic.add(mem, 0, np.uint32(3))
        else:
            cuda.atomic.sub(mem, 0, np.uint32(2))


def runs(n, label):
    bad = []
    for _ in range(n):
        mem = np.array([START], dtype=np.uint32)
        add_against_sub[1, ADDS + SUBS](mem)
        if mem[0] != EXPECTED:
            bad.append(int(mem[0]))
    print("%-58s %3d of %d runs lost updates%s" % (
        label, len(bad), n, " (final %s)" % ", ".join(map(str, bad[:4])) if bad else ""))
    return len(bad)


print("expected final value: %d (1000000 + 2048 * 3 - 2048 * 2), observed:" % EXPECTED)
runs(20, "1. as the simulator comes (switch interval %g s):" % sys.getswitchinterval())
sys.setswitchinterval(1e-6)
shown = runs(40, "2. threads switched every microsecond:")
one = threading.Lock()
for name in [n for n in dir(kernelapi) if n.endswith("lock")]:
    setattr(kernelapi, name, one)  # FakeCUDAAtomic looks its lock up at each call
fixed = runs(40, "3. as 2, one lock for every atomic operation:")
sys.exit(1 if shown and not fixed else 0)
