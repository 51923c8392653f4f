#!/usr/bin/env python3
"""Finding taichi-1 (docs/findings.md): after ti.init, Taichi's atomic add flushes subnormal
results to zero (and keeps subnormal inputs), f64 included. Standalone: needs only taichi and numpy.

  target/venv/bin/python docs/repro/taichi-subnormal-results-flushed.py [cpu|vulkan]

Expected (PTX ISA, atom: `.add.f64` keeps subnormal inputs and results; IEEE 754 addition):
2^-1022 + (-2^-1074) = 0x000fffffffffffff. Exits 1 while Taichi still shows the difference.
"""
import sys

import numpy as np
import taichi as ti

arch = sys.argv[1] if len(sys.argv) > 1 else "cpu"
ti.init(arch=getattr(ti, arch), log_level=ti.ERROR)


@ti.kernel
def add(mem: ti.types.ndarray(), b: ti.types.ndarray(), out: ti.types.ndarray()):
    for i in range(b.shape[0]):
        out[i] = ti.atomic_add(mem[0], b[i])


differs = False
for dtype, bits, m, v, want in [
        (np.float64, np.uint64, 0x0010000000000000, 0x8000000000000001, 0x000fffffffffffff),
        (np.float32, np.uint32, 0x00800000, 0x80000001, 0x007fffff),
        (np.float32, np.uint32, 0x007fffff, 0x00000001, 0x00800000)]:
    mem = np.array([m], bits).view(dtype)
    b = np.array([v], bits).view(dtype)
    out = np.zeros(1, dtype)
    add(mem, b, out)
    ti.sync()
    got = int(mem.view(bits)[0])
    w = 2 * np.dtype(dtype).itemsize
    print("taichi %s: atomic_add(%s 0x%0*x, 0x%0*x): memory expected 0x%0*x, observed 0x%0*x%s" % (
        arch, np.dtype(dtype).name, w, m, w, v, w, want, w, got, "" if got == want else "  <- differs"))
    differs |= got != want
sys.exit(1 if differs else 0)
