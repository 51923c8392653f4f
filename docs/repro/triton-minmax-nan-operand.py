#!/usr/bin/env python3
"""Finding triton-1 (docs/findings.md): Triton's tl.atomic_max/atomic_min on float32 store a
NaN operand whose sign bit puts it on the winning side (atomic_max: a positive NaN; atomic_min:
a negative NaN). triton.language builds float min/max from integer max/min on the bits (signed
for a clear sign bit, unsigned for a set one), so a NaN compares as the largest magnitude.
Standalone: needs only triton and numpy, run by Triton's interpreter (no GPU, no PyTorch).

  target/venv/bin/python docs/repro/triton-minmax-nan-operand.py

Expected (PTX ISA, min/max and atom: a NaN operand is ignored; vISA DWORD_ATOMIC FMIN/FMAX;
SPV_EXT_shader_atomic_float_min_max: a quiet NaN is ignored): memory keeps its number.
Exits 1 while Triton still shows the difference.
"""
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


class _Storage:
    def __init__(self, a):
        self.a = a

    def data_ptr(self):
        return self.a.ctypes.data

    def cpu(self):
        return self

    def copy_(self, other):
        pass


class Host:
    """A numpy array where the interpreter expects a torch tensor (its storage methods are
    identities: Triton reads and writes the array in place)."""

    def __init__(self, a):
        self.a = a
        self.dtype = "triton.language.float32" if a.dtype == np.float32 else "triton.language.int32"

    def data_ptr(self):
        return self.a.ctypes.data

    def untyped_storage(self):
        return _Storage(self.a)

    def new_empty(self, *args, **kwargs):
        return self

    def set_(self, *args):
        return self

    def storage_offset(self):
        return 0

    def size(self):
        return self.a.shape

    def stride(self):
        return (1,)


@triton.jit
def amax(mem, b, out):
    tl.store(out, tl.atomic_max(mem, tl.load(b)))


@triton.jit
def amin(mem, b, out):
    tl.store(out, tl.atomic_min(mem, tl.load(b)))


differs = False
for name, k, m, v in [("atomic_max", amax, 0xc0400000, 0x7fc12345),
                      ("atomic_min", amin, 0xbe000000, 0xffc00001)]:
    mem = np.array([m], np.uint32).view(np.float32)
    b = np.array([v], np.uint32).view(np.float32)
    out = np.zeros(1, np.float32)
    k[(1,)](Host(mem), Host(b), Host(out))
    got = int(mem.view(np.uint32)[0])
    print("triton %s interpreter: %s(f32 0x%08x, quiet NaN 0x%08x): memory expected 0x%08x, observed 0x%08x%s" % (
        triton.__version__, name, m, v, m, got, "" if got == m else "  <- differs"))
    differs |= got != m
sys.exit(1 if differs else 0)
