#!/usr/bin/env python3
"""Taichi on its CPU backend (`ti.init(arch=ti.cpu)`) behind the atomcts adapter protocol,
version 2, semantic level (adapters/PROTOCOL.md); adapters/shims/taichi_vulkan.py runs the same
shim on Taichi's Vulkan backend (`arch=ti.vulkan`, on lavapipe here).

A third-party implementation nobody here wrote: Taichi compiles Python kernels (LLVM on the CPU,
SPIR-V on Vulkan). The runner sends the lowered IR of each valid instruction (any dialect); each
memory access becomes one iteration of the outermost range-for of one Taichi kernel (Taichi runs
those iterations in parallel: CPU threads, Vulkan invocations), which calls the `ti.atomic_*`
function with exactly the op's semantics on a Taichi ndarray over the case's memory. The shim
does no arithmetic: it lays out memory, dispatches, and answers the final memory and each
access's returned value (`accesses`).

Mapping (Taichi's documentation, "Operators", section "Atomic operations": `ti.atomic_add`,
`atomic_sub`, `atomic_min`, `atomic_max`, `atomic_and`, `atomic_or`, `atomic_xor`, each
returning the old value; the bitwise ones for integers only): add, sub, and, or, xor, min, max
on int32/uint32/int64/uint64; add, sub, min, max on float32/float64.

Not applicable (answered `not_applicable` with the reason, never emulated): exchange and
compare-exchange (Taichi documents no atomic exchange or CAS), inc/dec in any form and predec,
16-bit and f16x2 data, stores, shared (threadgroup/SLM) memory, SIMD-group shuffles, accesses
outside allocated memory or misaligned.

The profile it claims is `default`: Taichi's documentation states no flush-to-zero, rounding,
NaN or signed-zero rule for its atomics. Kernels are compiled on first use, one per op and
type (Taichi caches them in its offline cache).

Needs: taichi (pip). Run:
  atomcts run --profile claimed --adapter "cmd:target/venv/bin/python adapters/shims/taichi_cpu.py"
"""
import os
import sys

import atomcts_shim
import numpy as np

# Taichi writes to the standard output (file descriptor 1) from its native code: its banner,
# and blank lines when a kernel does not compile. The protocol gets its own copy of descriptor 1;
# descriptor 1 itself goes to stderr for good.
PROTOCOL_OUT = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
import taichi as ti  # noqa: E402

NP = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64,
      "f32": np.float32, "f64": np.float64}
BITS = {4: np.uint32, 8: np.uint64}
INT_OPS = ["add", "sub", "and", "or", "xor", "min", "max"]
FLOAT_OPS = ["add", "sub", "min", "max"]
CODE = {op: k for k, op in enumerate(INT_OPS)}


@ti.kernel
def atom(mem: ti.types.ndarray(), idx: ti.types.ndarray(), b: ti.types.ndarray(),
         out: ti.types.ndarray(), op: ti.template()):
    """Iteration i applies op INT_OPS[op] to mem[idx[i]]."""
    for i in range(idx.shape[0]):
        if ti.static(op == 0):
            out[i] = ti.atomic_add(mem[idx[i]], b[i])
        elif ti.static(op == 1):
            out[i] = ti.atomic_sub(mem[idx[i]], b[i])
        elif ti.static(op == 2):
            out[i] = ti.atomic_and(mem[idx[i]], b[i])
        elif ti.static(op == 3):
            out[i] = ti.atomic_or(mem[idx[i]], b[i])
        elif ti.static(op == 4):
            out[i] = ti.atomic_xor(mem[idx[i]], b[i])
        elif ti.static(op == 5):
            out[i] = ti.atomic_min(mem[idx[i]], b[i])
        else:
            out[i] = ti.atomic_max(mem[idx[i]], b[i])


na = atomcts_shim.not_applicable


REPRO_KERNEL = """import numpy as np
import taichi as ti


@ti.kernel
def atom(mem: ti.types.ndarray(), idx: ti.types.ndarray(), b: ti.types.ndarray(),
         out: ti.types.ndarray()):
    for i in range(idx.shape[0]):
        out[i] = ti.atomic_{op}(mem[idx[i]], b[i])
"""
REPRO_LAUNCH = """    ti.init(arch=ti.{arch}, log_level=ti.ERROR)
{check}    atom(mem, idx.astype(np.int32), b, out)
    ti.sync()
    return observation(mem.tobytes(), out.view(np.{u}), where)
"""

# ti.init falls back to the CPU when another backend does not start (main() refuses that too).
FALLBACK = """    got = ti.lang.impl.current_cfg().arch.name
    if got != "{arch}":
        raise RuntimeError("Taichi's {arch} backend did not start (it fell back to %s)" % got)
"""


def repro(req):
    """The `repro` answer (PROTOCOL.md, "Standalone reproducers"): a kernel with the one
    `ti.atomic_*` call run() makes for this op, on the same backend and arrays."""
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, acc = checked
    if not acc:
        return na("no access: nothing to launch")
    width = np.dtype(NP[ty]).itemsize
    return atomcts_shim.repro_answer(
        req, acc, width, np.dtype(NP[ty]).name, REPRO_KERNEL.format(op=op),
        REPRO_LAUNCH.format(arch=ARCH[0], u=np.dtype(BITS[width]).name,
                            check="" if ARCH[0] == "cpu" else FALLBACK.format(arch=ARCH[0])), ["numpy", "taichi"])


def mapped(req):
    """(op, type, accesses) as run() maps the case, or the `not_applicable` answer saying why
    Taichi has no primitive for it."""
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    ins = lowered["instr"]
    if ins["kind"] != "mem":
        return na("SIMD-group shuffles: Taichi documents no lane shuffle this shim maps")
    op, ty, space = ins["op"], ins["type"], ins["space"]
    if ty not in NP:
        return na("%s data: no Taichi atomic takes it here" % ty)
    if op in ("exch", "cas"):
        return na("%s: Taichi documents no atomic exchange or compare-exchange" % op)
    is_float = ty.startswith("f")
    ops = FLOAT_OPS if is_float else INT_OPS
    if op not in ops:
        return na("%s on %s: no Taichi atomic" % (op, ty))
    if space != "global":
        return na("%s memory: this shim maps global memory only" % space)
    return op, ty, ins["accesses"]


def run(req):
    if req.get("type") == "repro":
        return repro(req)
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, acc = checked
    if not acc:
        return {"outcome": "accesses", "memory": req["state"]["memory"], "returned": []}
    dtype = NP[ty]
    width = np.dtype(dtype).itemsize
    laid = atomcts_shim.flat_global(req, acc, width)
    if isinstance(laid, dict):
        return laid
    ranges, flat, idx = laid
    n = len(acc)
    mem = np.frombuffer(bytes(flat), dtype=dtype).copy()
    raw = np.array([int(a["src"][0], 16) for a in acc], dtype=np.uint64)
    b = raw.astype(BITS[width]).view(dtype)
    out = np.zeros(n, dtype=dtype)
    try:
        atom(mem, np.array(idx, dtype=np.int32), b, out, CODE[op])
        ti.sync()
    except RuntimeError as e:
        if "Not supported" not in str(e):
            raise
        # Taichi's code generator refuses the op for this type on this backend (Vulkan:
        # atomic_sub on unsigned integers): its limitation, with its reason (docs/findings.md).
        return na("Taichi's %s backend does not compile atomic_%s on %s (%s)" % (
            ARCH[0], op, ty, str(e).strip()))
    returned = [hex(int(v)) for v in out.view(BITS[width])]
    return atomcts_shim.accesses_answer(req, ranges, mem.tobytes(), returned)


ARCH = ["cpu"]


def main(arch="cpu"):
    ARCH[0] = arch
    ti.init(arch=getattr(ti, arch), log_level=ti.ERROR)
    got = ti.lang.impl.current_cfg().arch.name
    if arch != "cpu" and got != arch:
        # ti.init falls back to the CPU when the backend does not start: never run the CPU
        # under the other backend's name.
        sys.exit("taichi: the %s backend did not start (Taichi fell back to %s)" % (arch, got))
    name = "taichi-%s" % arch
    atomcts_shim.serve(run, name=name, level="semantic", version=2,
                       capabilities=["u64_atomics", "f32_atomic_add", "f64_atomic_add",
                                     atomcts_shim.REPRO],
                       implementation="taichi %s on arch=%s (numpy %s)" % (
                           ".".join(map(str, ti.__version__)), got, np.__version__),
                       profile="default", stdout=PROTOCOL_OUT,
                       window=int(os.environ.get("TAICHI_SHIM_WINDOW", "64")))


if __name__ == "__main__":
    main()
