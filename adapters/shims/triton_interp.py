#!/usr/bin/env python3
"""Triton's interpreter (TRITON_INTERPRET=1) behind the atomcts adapter protocol, version 2,
semantic level (adapters/PROTOCOL.md).

A third-party implementation nobody here wrote: with TRITON_INTERPRET=1 a `@triton.jit` kernel
runs on the CPU, each `tl.*` call on a block of values at once (numpy arrays), the atomics in
Triton's own native interpreter library (`triton._C.libtriton.interpreter.atomic_rmw` /
`atomic_cas`, on real host addresses). The runner sends the lowered IR of each valid
instruction (any dialect); each memory access becomes one lane of a one-program block (block
size the next power of two, the lanes past the accesses masked off) that calls the `tl.atomic_*`
function with exactly the op's semantics on a pointer into the case's memory. The shim does no
arithmetic: it lays out memory, dispatches, and answers the final memory and each access's
returned value (`accesses`).

Mapping (Triton's documented `triton.language` atomics, "Atomic Ops" of its API reference:
atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor;
each "returns the data stored at pointer before the atomic operation"): add, and, or, xor, min,
max on int32/uint32/int64/uint64; add, min, max on float32/float64;
exchange and a bitwise compare-exchange of any of these through the integer pointer of the same
width (`tl.atomic_xchg`, `tl.atomic_cas`).

Not applicable (answered `not_applicable` with the reason, never emulated): sub (Triton has no
atomic_sub), inc/dec in any form and predec, 16-bit and f16x2 data (not mapped: the shim announces neither
`visa_16bit_atomics` nor `f16x2_atomics`, so the runner does not send them), numeric compare-exchange, stores,
shared (threadgroup/SLM) memory, SIMD-group shuffles, accesses outside allocated memory or
misaligned.

The profile it claims is `default`: Triton's documentation states no flush-to-zero, rounding,
NaN or signed-zero rule for its atomics (the API reference gives only the operation, the return
value and the `sem`/`scope` arguments).

The interpreter copies tensor arguments through PyTorch's storage API; PyTorch is not installed
here (its CPU wheel index is unreachable and the default Linux wheel pulls the CUDA libraries),
so `Host` below hands the interpreter a numpy array with the few storage methods that copy
uses, all of them identities: memory stays where numpy put it and Triton reads and writes it in
place. The atomics themselves are Triton's.

Needs: triton (pip). Run:
  atomcts run --profile claimed --adapter "cmd:target/venv/bin/python adapters/shims/triton_interp.py"
"""
import os

os.environ["TRITON_INTERPRET"] = "1"

import inspect  # noqa: E402

import atomcts_shim  # noqa: E402
import numpy as np  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

IMPLEMENTATION = "triton %s interpreter (TRITON_INTERPRET=1, numpy %s)" % (
    triton.__version__, np.__version__)

NP = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64,
      "f32": np.float32, "f64": np.float64}
BITS = {4: np.uint32, 8: np.uint64}
INT_OPS = ["add", "and", "or", "xor", "min", "max", "exch", "cas"]
FLOAT_OPS = ["add", "min", "max"]
CODE = {"add": 0, "and": 1, "or": 2, "xor": 3, "min": 4, "max": 5, "exch": 6, "cas": 7}


class _Storage:
    """The storage of a `Host` array: copying it to the host is the identity."""

    def __init__(self, a):
        self.a = a

    def data_ptr(self):
        return self.a.ctypes.data

    def cpu(self):
        return self

    def copy_(self, other):
        pass


class Host:
    """A numpy array as the interpreter's tensor argument (see the module's doc)."""

    def __init__(self, a):
        self.a = a
        kind = {"i": "int", "u": "uint", "f": "float"}[a.dtype.kind]
        self.dtype = "triton.language.%s%d" % (kind, 8 * a.dtype.itemsize)

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
def atom(mem, idx, b, c, out, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    """Lane i (i < n) applies op OP (CODE) to mem[idx[i]]."""
    i = tl.arange(0, BLOCK)
    on = i < n
    p = mem + tl.load(idx + i, mask=on, other=0)
    v = tl.load(b + i, mask=on)
    if OP == 0:
        r = tl.atomic_add(p, v, mask=on)
    elif OP == 1:
        r = tl.atomic_and(p, v, mask=on)
    elif OP == 2:
        r = tl.atomic_or(p, v, mask=on)
    elif OP == 3:
        r = tl.atomic_xor(p, v, mask=on)
    elif OP == 4:
        r = tl.atomic_min(p, v, mask=on)
    elif OP == 5:
        r = tl.atomic_max(p, v, mask=on)
    elif OP == 6:
        r = tl.atomic_xchg(p, v, mask=on)
    else:
        # tl.atomic_cas takes no mask: the lanes past n point at out's own element (never
        # read back) with a comparand and value of zero.
        q = tl.where(on, p, out + i)
        r = tl.atomic_cas(q, v, tl.load(c + i, mask=on, other=0))
    tl.store(out + i, r, mask=on)


na = atomcts_shim.not_applicable


REPRO_LAUNCH = """    block = 1 << max(0, (N - 1).bit_length())

    def padded(a):
        p = np.zeros(block, dtype=a.dtype)
        p[:N] = a
        return p

    b, c, out, index = padded(b), padded(c), padded(out), padded(idx)
    atom[(1,)](Host(mem), Host(index), Host(b), Host(c), Host(out), N, OP={op}, BLOCK=block)
    return observation(mem.tobytes(), out[:N].view(np.{u}), where)
"""


def repro(req):
    """The `repro` answer (PROTOCOL.md, "Standalone reproducers"): this shim's own kernel and
    array wrapper (their source as written here) and the launch run() makes."""
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, width, acc = checked
    if not acc:
        return na("no access: nothing to launch")
    source = ("import numpy as np\nimport triton\nimport triton.language as tl\n\n\n"
              + inspect.getsource(_Storage) + "\n\n" + inspect.getsource(Host) + "\n\n"
              + inspect.getsource(atom.fn))
    launch = REPRO_LAUNCH.format(op=CODE[op], u=np.dtype(BITS[width]).name)
    return atomcts_shim.repro_answer(req, acc, width, np.dtype(NP[ty]).name, source, launch,
                                     ["numpy", "triton"], env={"TRITON_INTERPRET": "1"})


def mapped(req):
    """(op, array type, width, accesses) as run() maps the case, or the `not_applicable`
    answer saying why Triton has no primitive for it."""
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    ins = lowered["instr"]
    if ins["kind"] != "mem":
        return na("SIMD-group shuffles: Triton's language has no lane shuffle this shim maps")
    op, ty, space = ins["op"], ins["type"], ins["space"]
    if ty not in NP:
        return na("%s data: no triton.language atomic takes it here" % ty)
    width = np.dtype(NP[ty]).itemsize
    is_float = ty.startswith("f")
    bitwise = op == "exch" or (op == "cas" and ins["compare"] == "bitwise")
    if op == "cas" and not bitwise:
        return na("compare-exchange with a numeric compare: tl.atomic_cas compares bits")
    if bitwise:
        ty = {4: "u32", 8: "u64"}[width]
        is_float = False
    ops = FLOAT_OPS if is_float else INT_OPS
    if op not in ops:
        return na("%s on %s: no triton.language atomic" % (op, ty))
    if space != "global":
        return na("%s memory: this shim maps global memory only" % space)
    return op, ty, width, ins["accesses"]


def run(req):
    if req.get("type") == "repro":
        return repro(req)
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, width, acc = checked
    if not acc:
        return {"outcome": "accesses", "memory": req["state"]["memory"], "returned": []}
    laid = atomcts_shim.flat_global(req, acc, width)
    if isinstance(laid, dict):
        return laid
    ranges, flat, idx = laid
    n = len(acc)
    block = 1 << max(0, (n - 1).bit_length())
    dtype = NP[ty]
    mem = np.frombuffer(bytes(flat), dtype=dtype).copy()

    def operand(k):
        raw = np.zeros(block, dtype=np.uint64)
        raw[:n] = [int(a["src"][k], 16) for a in acc]
        return raw.astype(BITS[width]).view(dtype)

    b, c = operand(0), operand(1)
    out = np.zeros(block, dtype=dtype)
    index = np.zeros(block, dtype=np.int64)
    index[:n] = idx
    atom[(1,)](Host(mem), Host(index), Host(b), Host(c), Host(out), n, OP=CODE[op], BLOCK=block)
    raw = out[:n].view(BITS[width])
    answer = atomcts_shim.accesses_answer(req, ranges, mem.tobytes(), [hex(int(v)) for v in raw])
    if op == "cas":
        answer["ok"] = [int(raw[i]) == int(b[:n].view(BITS[width])[i]) for i in range(n)]
    return answer


def main():
    atomcts_shim.serve(run, name="triton-interp", level="semantic", version=2,
                       capabilities=["u64_atomics", "f32_atomic_add", "f64_atomic_add",
                                     atomcts_shim.REPRO],
                       implementation=IMPLEMENTATION, profile="default",
                       window=int(os.environ.get("TRITON_INTERP_WINDOW", "64")))


if __name__ == "__main__":
    main()
