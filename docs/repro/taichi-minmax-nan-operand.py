#!/usr/bin/env python3
"""Finding taichi-2 (docs/findings.md): Taichi's float atomic_min/atomic_max store a quiet NaN
operand. Standalone: needs only taichi and numpy.

  target/venv/bin/python docs/repro/taichi-minmax-nan-operand.py [cpu|vulkan]

Expected (PTX ISA, min/max and atom: a NaN operand is ignored, min_num/max_num; vISA
DWORD_ATOMIC FMIN/FMAX; SPV_EXT_shader_atomic_float_min_max: a quiet NaN is ignored): memory
keeps its number. Exits 1 while Taichi still shows the difference.
"""
import sys

import numpy as np
import taichi as ti

arch = sys.argv[1] if len(sys.argv) > 1 else "cpu"
ti.init(arch=getattr(ti, arch), log_level=ti.ERROR)


@ti.kernel
def amin(mem: ti.types.ndarray(), b: ti.types.ndarray(), out: ti.types.ndarray()):
    for i in range(b.shape[0]):
        out[i] = ti.atomic_min(mem[0], b[i])


@ti.kernel
def amax(mem: ti.types.ndarray(), b: ti.types.ndarray(), out: ti.types.ndarray()):
    for i in range(b.shape[0]):
        out[i] = ti.atomic_max(mem[0], b[i])


differs = False
for name, k, m, v in [("atomic_min", amin, 0x40200000, 0x7fc00000),
                      ("atomic_max", amax, 0xc0400000, 0x7fc12345)]:
    mem = np.array([m], np.uint32).view(np.float32)
    b = np.array([v], np.uint32).view(np.float32)
    out = np.zeros(1, np.float32)
    k(mem, b, out)
    ti.sync()
    got = int(mem.view(np.uint32)[0])
    print("taichi %s: %s(f32 0x%08x, quiet NaN 0x%08x): memory expected 0x%08x, observed 0x%08x%s" % (
        arch, name, m, v, m, got, "" if got == m else "  <- differs"))
    differs |= got != m
sys.exit(1 if differs else 0)
