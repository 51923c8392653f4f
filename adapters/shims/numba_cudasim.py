#!/usr/bin/env python3
"""Numba's CUDA simulator behind the atomcts adapter protocol, version 2, semantic level
(adapters/PROTOCOL.md).

A third-party implementation nobody here wrote. The runner sends the lowered IR of each valid
instruction (any dialect); each memory access becomes one thread of a one-block kernel that
calls the `numba.cuda.atomic` function with exactly the op's semantics on a NumPy view of the
case's memory, run by Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1). The shim does no
arithmetic: it lays out memory, dispatches, and answers the final memory and each access's
returned value (`accesses`); the runner writes them back into registers.

Mapping (numba.cuda.atomic, documented in Numba's "Supported Atomic Operations"): add, sub,
and_, or_, xor, exch, cas; inc/dec are CUDA's bounded forms (IR inc_bounded/dec_bounded);
min/max on integers, nanmin/nanmax on floats (IEEE minimumNumber/maximumNumber, the IR's
default float min/max rule). Types u32 s32 u64 s64 f32 f64; exchange and a bitwise
compare-exchange of floats move bits through the integer view of the same width.

Not applicable (answered `not_applicable` with the reason, never emulated): the plain
wrapping inc/dec and predec (Numba has only CUDA's bounded forms), 16-bit and f16x2 data,
numeric compare-exchange, stores, shared (threadgroup/SLM) memory, SIMD-group shuffles,
accesses outside allocated memory or misaligned.

Needs: numba (pip). Run: atomcts run --adapter "cmd:python3 adapters/shims/numba_cudasim.py"
On a real NVIDIA GPU (Numba's CUDA target, numba-cuda): set NUMBA_ENABLE_CUDASIM=0; the shim
then calls itself `numba-cuda` and answers not applicable where Numba's typing refuses a type
(e.g. atomic inc on s32). Its findings: adapters/shims/numba_cuda_gpu.baseline.
"""
import os

import atomcts_shim

# The simulator unless the caller asks for a real GPU with NUMBA_ENABLE_CUDASIM=0 (then this
# shim runs Numba's CUDA target: its code generation, the driver and the GPU).
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
SIMULATOR = os.environ["NUMBA_ENABLE_CUDASIM"] != "0"
import numpy as np  # noqa: E402
import warnings  # noqa: E402

# Overflow and NaN warnings of the simulator's host arithmetic are expected (wrapping ints, NaN
# operands): the answer carries the values, stderr stays quiet.
warnings.simplefilter("ignore", RuntimeWarning)
from numba import cuda  # noqa: E402

import numba  # noqa: E402

# What runs behind the shim, for reports (handshake `implementation`). The profile it claims is
# `nvidia-ptx`: it simulates CUDA, which PTX ISA and the CUDA Programming Guide describe.
IMPLEMENTATION = "numba %s CUDA %s (numpy %s)" % (
    numba.__version__, "simulator" if SIMULATOR else "target on a GPU", np.__version__)

TYPES = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64,
         "f32": np.float32, "f64": np.float64}
BITS = {4: np.uint32, 8: np.uint64}
OPS = ["add", "sub", "and", "or", "xor", "exch", "cas", "inc_bounded", "dec_bounded",
       "min", "max", "nanmin", "nanmax"]


# One kernel per op: on a real GPU (NUMBA_ENABLE_CUDASIM=0) Numba compiles a kernel for its
# argument types, so one kernel dispatching on the op would have to type every op's call for
# every type (and_ on f32 does not type). Thread i applies the op to mem[idx[i]].
@cuda.jit
def k_add(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.add(mem, idx[i], b[i])


@cuda.jit
def k_sub(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.sub(mem, idx[i], b[i])


@cuda.jit
def k_and(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.and_(mem, idx[i], b[i])


@cuda.jit
def k_or(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.or_(mem, idx[i], b[i])


@cuda.jit
def k_xor(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.xor(mem, idx[i], b[i])


@cuda.jit
def k_exch(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.exch(mem, idx[i], b[i])


@cuda.jit
def k_cas(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.cas(mem, idx[i], b[i], c[i])


@cuda.jit
def k_inc(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.inc(mem, idx[i], b[i])


@cuda.jit
def k_dec(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.dec(mem, idx[i], b[i])


@cuda.jit
def k_min(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.min(mem, idx[i], b[i])


@cuda.jit
def k_max(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.max(mem, idx[i], b[i])


@cuda.jit
def k_nanmin(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.nanmin(mem, idx[i], b[i])


@cuda.jit
def k_nanmax(mem, idx, b, c, out):
    i = cuda.threadIdx.x
    out[i] = cuda.atomic.nanmax(mem, idx[i], b[i])


KERNELS = dict(zip(OPS, [k_add, k_sub, k_and, k_or, k_xor, k_exch, k_cas, k_inc, k_dec,
                         k_min, k_max, k_nanmin, k_nanmax]))


na = atomcts_shim.not_applicable


def run(req):
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    ins = lowered["instr"]
    if ins["kind"] != "mem":
        return na("SIMD-group shuffles: the CUDA simulator has no warp shuffles this shim maps")
    op, ty, space = ins["op"], ins["type"], ins["space"]
    if ty not in TYPES:
        return na("%s data: no numba.cuda.atomic function takes it" % ty)
    dtype = TYPES[ty]
    width = np.dtype(dtype).itemsize
    is_float = ty.startswith("f")
    bitwise = op == "exch" or (op == "cas" and ins["compare"] == "bitwise")
    if op == "cas" and not bitwise:
        return na("compare-exchange with a numeric compare: numba's cas compares bits")
    if op in ("min", "max") and is_float:
        op = "nan" + op
    if op in ("inc", "dec", "predec"):
        return na("plain wrapping %s: numba has only CUDA's bounded inc/dec" % op)
    if op not in OPS:
        return na("%s: no numba.cuda.atomic function" % op)
    if is_float and op not in ("add", "sub", "nanmin", "nanmax") and not bitwise:
        return na("%s on %s: no numba.cuda.atomic function" % (op, ty))
    if bitwise:
        dtype = BITS[width]
    if space != "global":
        return na("%s memory: this shim maps global memory only" % space)
    if not SIMULATOR and is_float and op in ("add", "sub"):
        # PTX ISA, atom: `.add.f32` rounds to nearest even and flushes subnormal inputs and
        # results; `.add.f64` rounds to nearest even and keeps them. Numba's atomic add compiles
        # to these, so another float environment has no exact primitive here.
        ftz = ins.get("ftz", {})
        want = (bool(ftz.get("inputs")), bool(ftz.get("outputs")), ins.get("round"))
        has = (True, True, "nearest_even") if ty == "f32" else (False, False, "nearest_even")
        if want != has:
            return na("%s %s with flush (inputs, outputs) and rounding %s: numba's atomic "
                      "add on the GPU is PTX atom.add.%s, which has %s" % (op, ty, want, ty, has))
    acc = ins["accesses"]
    if not acc:
        return {"outcome": "accesses", "memory": req["state"]["memory"], "returned": []}
    laid = atomcts_shim.flat_global(req, acc, width)
    if isinstance(laid, dict):
        return laid
    ranges, flat, idx = laid
    n = len(acc)
    mem = np.frombuffer(bytes(flat), dtype=dtype).copy()

    def operand(k):
        raw = np.array([int(a["src"][k], 16) for a in acc], dtype=np.uint64)
        return (raw if width == 8 else raw.astype(np.uint32)).view(dtype)

    b, c = operand(0), operand(1)
    out = np.zeros(n, dtype=dtype)
    kernel = KERNELS[op]
    args = (mem, np.array(idx, dtype=np.int64), b, c, out)
    if SIMULATOR:
        kernel[1, n](*args)
    else:
        # On a GPU Numba types the call first: a type its atomic does not take is this
        # target's limitation, answered not applicable with Numba's reason.
        try:
            kernel[1, n](*args)
        except numba.core.errors.TypingError as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else "TypingError"
            return na("numba-cuda has no %s for %s data on this target (%s)" % (
                op, ty, first.replace("\x1b[1m", "").replace("\x1b[0m", "")[:160]))
    final = mem.tobytes()
    raw = out.view(BITS[width])
    returned = [hex(int(v)) for v in raw]
    answer = atomcts_shim.accesses_answer(req, ranges, final, returned)
    if op == "cas":
        answer["ok"] = [int(raw[i]) == int(b.view(BITS[width])[i]) for i in range(n)]
    return answer


def main():
    # The shared helper does the handshake, the ids, errors as `error` answers, and pipelining:
    # up to NUMBA_CUDASIM_WINDOW requests in flight (default 64; 1: one at a time).
    atomcts_shim.serve(run, name="numba-cudasim" if SIMULATOR else "numba-cuda", level="semantic", version=2,
                       capabilities=["u64_atomics", "f32_atomic_add", "f64_atomic_add"],
                       implementation=IMPLEMENTATION, profile="nvidia-ptx",
                       window=int(os.environ.get("NUMBA_CUDASIM_WINDOW", "64")))


if __name__ == "__main__":
    main()
