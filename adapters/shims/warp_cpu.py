#!/usr/bin/env python3
"""NVIDIA Warp (warp-lang) on its CPU device behind the atomcts adapter protocol, version 2,
semantic level (adapters/PROTOCOL.md).

A third-party implementation nobody here wrote: Warp compiles Python kernels to native code
(LLVM, on the CPU device). The runner sends the lowered IR of each valid instruction (any
dialect); each memory access becomes one thread of a launch of a Warp kernel that calls the
`wp.atomic_*` function with exactly the op's semantics on a Warp array over the case's memory.
The shim does no arithmetic: it lays out memory, dispatches, and answers the final memory and
each access's returned value (`accesses`).

Mapping (Warp's documented built-ins): add, sub, and, or, xor, min, max on int32/uint32/int64/
uint64; add, sub, min, max on float32/float64; exchange and a bitwise compare-exchange of any of
these through the integer array of the same width (`wp.atomic_exch`, `wp.atomic_cas`).

Not applicable (answered `not_applicable` with the reason, never emulated): inc/dec in any form
and predec (Warp has no such built-in), 16-bit and f16x2 data, numeric compare-exchange, stores,
shared (threadgroup/SLM) memory, SIMD-group shuffles, accesses outside allocated memory or
misaligned.

Concurrent cases (PROTOCOL.md, "Concurrent cases"): announced (`concurrent`, `cas_loop`) so
that each gets its reason, and answered not applicable. A Warp launch on the CPU device runs its
threads one after another (the generated `*_cpu_forward_tasks` loops over the task index; with
block_dim > 1 the block's threads are fibers of one OS thread that switch only at tile
barriers), and `wp.atomic_*` there is a plain read, operation and write (builtin.h, the branch
without `__CUDA_ARCH__`). One launch thus always runs one thread after another: it would pass
every concurrent case while saying nothing about atomicity across instructions.

The profile it claims is `default`: Warp documents no flush-to-zero, NaN or signed-zero rule
for its CPU atomics. Every kernel is compiled at start-up (one module; Warp caches it in
~/.cache/warp), before the handshake is answered.

Needs: warp-lang (pip). Run:
  atomcts run --profile claimed --adapter "cmd:target/venv/bin/python adapters/shims/warp_cpu.py"
"""
import json
import os
import sys

import atomcts_shim
from typing import Any

import numpy as np
import warp as wp

wp.config.quiet = True

IMPLEMENTATION = "warp-lang %s on the CPU device (numpy %s)" % (
    wp.__version__, np.__version__)

INTS = {"u32": wp.uint32, "s32": wp.int32, "u64": wp.uint64, "s64": wp.int64}
FLOATS = {"f32": wp.float32, "f64": wp.float64}
NP = {"u32": np.uint32, "s32": np.int32, "u64": np.uint64, "s64": np.int64,
      "f32": np.float32, "f64": np.float64}
BITS = {4: "u32", 8: "u64"}
INT_OPS = ["add", "sub", "and", "or", "xor", "min", "max", "exch", "cas"]
FLOAT_OPS = ["add", "sub", "min", "max"]


@wp.kernel
def int_atom(mem: wp.array(dtype=Any), idx: wp.array(dtype=wp.int32), b: wp.array(dtype=Any),
             c: wp.array(dtype=Any), out: wp.array(dtype=Any), code: int):
    """Thread i applies op INT_OPS[code] to mem[idx[i]]."""
    i = wp.tid()
    if code == 0:
        out[i] = wp.atomic_add(mem, idx[i], b[i])
    elif code == 1:
        out[i] = wp.atomic_sub(mem, idx[i], b[i])
    elif code == 2:
        out[i] = wp.atomic_and(mem, idx[i], b[i])
    elif code == 3:
        out[i] = wp.atomic_or(mem, idx[i], b[i])
    elif code == 4:
        out[i] = wp.atomic_xor(mem, idx[i], b[i])
    elif code == 5:
        out[i] = wp.atomic_min(mem, idx[i], b[i])
    elif code == 6:
        out[i] = wp.atomic_max(mem, idx[i], b[i])
    elif code == 7:
        out[i] = wp.atomic_exch(mem, idx[i], b[i])
    else:
        out[i] = wp.atomic_cas(mem, idx[i], b[i], c[i])


@wp.kernel
def float_atom(mem: wp.array(dtype=Any), idx: wp.array(dtype=wp.int32), b: wp.array(dtype=Any),
               out: wp.array(dtype=Any), code: int):
    """Thread i applies op FLOAT_OPS[code] to mem[idx[i]]."""
    i = wp.tid()
    if code == 0:
        out[i] = wp.atomic_add(mem, idx[i], b[i])
    elif code == 1:
        out[i] = wp.atomic_sub(mem, idx[i], b[i])
    elif code == 2:
        out[i] = wp.atomic_min(mem, idx[i], b[i])
    else:
        out[i] = wp.atomic_max(mem, idx[i], b[i])


for _t in INTS.values():
    _a = wp.array(dtype=_t)
    wp.overload(int_atom, {"mem": _a, "b": _a, "c": _a, "out": _a})
for _t in FLOATS.values():
    _a = wp.array(dtype=_t)
    wp.overload(float_atom, {"mem": _a, "b": _a, "out": _a})


na = atomcts_shim.not_applicable


# Why a concurrent case is not applicable here (the module docstring says more).
SERIAL = ("Warp's CPU device runs a launch's threads one after another (a loop over the task "
          "index; block threads are fibers switching only at tile barriers) with plain "
          "read-modify-write atomics: one launch cannot run instructions concurrently")


WARP_CALLS = {"add": "atomic_add", "sub": "atomic_sub", "and": "atomic_and", "or": "atomic_or",
              "xor": "atomic_xor", "min": "atomic_min", "max": "atomic_max", "exch": "atomic_exch"}
REPRO_KERNEL = """import numpy as np
import warp as wp


@wp.kernel
def atom(mem: wp.array(dtype={t}), idx: wp.array(dtype=wp.int32), b: wp.array(dtype={t}),
         c: wp.array(dtype={t}), out: wp.array(dtype={t})):
    i = wp.tid()
    out[i] = wp.{call}
"""
REPRO_LAUNCH = """    wp.config.quiet = True
    wp.init()
    dev = "cpu"
    wmem = wp.array(mem, dtype={t}, device=dev)
    widx = wp.array(idx.astype(np.int32), dtype=wp.int32, device=dev)
    wb = wp.array(b, dtype={t}, device=dev)
    wc = wp.array(c, dtype={t}, device=dev)
    wout = wp.zeros(N, dtype={t}, device=dev)
    wp.launch(atom, dim=N, inputs=[wmem, widx, wb, wc, wout], device=dev)
    wp.synchronize_device(dev)
    return observation(wmem.numpy().tobytes(), wout.numpy().view(np.{u}), where)
"""


def repro(req):
    """The `repro` answer (PROTOCOL.md, "Standalone reproducers"): a kernel with the one
    `wp.atomic_*` call run() makes for this op and type, launched as run() launches."""
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, is_float, width, acc = checked
    if not acc:
        return na("no access: nothing to launch")
    wtype = "wp." + (FLOATS[ty] if is_float else INTS[ty]).__name__
    call = ("atomic_cas(mem, idx[i], b[i], c[i])" if op == "cas"
            else "%s(mem, idx[i], b[i])" % WARP_CALLS[op])
    source = REPRO_KERNEL.format(t=wtype, call=call)
    launch = REPRO_LAUNCH.format(t=wtype, u=np.dtype(NP[BITS[width]]).name)
    return atomcts_shim.repro_answer(req, acc, width, np.dtype(NP[ty]).name, source, launch,
                                     ["numpy", "warp"])


def mapped(req):
    """(op, type, float?, width, accesses) as run() maps the case, or the `not_applicable`
    answer saying why Warp has no primitive for it."""
    lowered = req.get("lowered")
    if not lowered:
        return na("no lowered IR")
    ins = lowered["instr"]
    if ins["kind"] != "mem":
        return na("SIMD-group shuffles: Warp's CPU device has no warp shuffles this shim maps")
    op, ty, space = ins["op"], ins["type"], ins["space"]
    if ty not in NP:
        return na("%s data: no Warp atomic built-in takes it" % ty)
    width = np.dtype(NP[ty]).itemsize
    is_float = ty.startswith("f")
    bitwise = op == "exch" or (op == "cas" and ins["compare"] == "bitwise")
    if op == "cas" and not bitwise:
        return na("compare-exchange with a numeric compare: wp.atomic_cas compares bits")
    if bitwise:
        ty = BITS[width]
        is_float = False
    ops = FLOAT_OPS if is_float else INT_OPS
    if op not in ops:
        return na("%s on %s: no Warp atomic built-in" % (op, ty))
    if space != "global":
        return na("%s memory: this shim maps global memory only" % space)
    return op, ty, is_float, width, ins["accesses"]


def run(req):
    if req.get("type") == "run_concurrent":
        return na(SERIAL)
    if req.get("type") == "repro":
        return repro(req)
    checked = mapped(req)
    if isinstance(checked, dict):
        return checked
    op, ty, is_float, width, acc = checked
    ops = FLOAT_OPS if is_float else INT_OPS
    if not acc:
        return {"outcome": "accesses", "memory": req["state"]["memory"], "returned": []}
    laid = atomcts_shim.flat_global(req, acc, width)
    if isinstance(laid, dict):
        return laid
    ranges, flat, idx = laid
    n = len(acc)
    dtype = NP[ty]
    wtype = FLOATS[ty] if is_float else INTS[ty]
    host = np.frombuffer(bytes(flat), dtype=dtype).copy()

    def operand(k):
        raw = np.array([int(a["src"][k], 16) for a in acc], dtype=np.uint64)
        return (raw if width == 8 else raw.astype(np.uint32)).view(dtype)

    dev = "cpu"
    mem = wp.array(host, dtype=wtype, device=dev)
    widx = wp.array(np.array(idx, dtype=np.int32), dtype=wp.int32, device=dev)
    b = wp.array(operand(0), dtype=wtype, device=dev)
    out = wp.zeros(n, dtype=wtype, device=dev)
    if is_float:
        wp.launch(float_atom, dim=n, inputs=[mem, widx, b, out, ops.index(op)], device=dev)
    else:
        c = wp.array(operand(1), dtype=wtype, device=dev)
        wp.launch(int_atom, dim=n, inputs=[mem, widx, b, c, out, ops.index(op)], device=dev)
    wp.synchronize_device(dev)
    final = mem.numpy().tobytes()
    raw = out.numpy().view(NP[BITS[width]])
    answer = atomcts_shim.accesses_answer(req, ranges, final, [hex(int(v)) for v in raw])
    if op == "cas":
        answer["ok"] = [int(raw[i]) == int(operand(0).view(NP[BITS[width]])[i]) for i in range(n)]
    return answer


def main():
    # Compile (or load from Warp's cache) every kernel before answering the handshake, so that
    # no case pays for it; Warp's messages go to stderr, never to the protocol's stdout.
    real_stdout = sys.stdout
    with open(os.devnull, "w") as quiet:
        sys.stdout = quiet  # Warp's start-up banner and module messages
        try:
            wp.init()
            wp.force_load(device="cpu")
        finally:
            sys.stdout = real_stdout
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("type") == "profile":
            continue  # the profile sent once (PROTOCOL.md): never answered, not used here
        if req.get("type") == "hello":
            ans = {"type": "hello", "protocol": "atomcts-adapter", "version": 2,
                   "level": "semantic", "name": "warp-cpu",
                   "implementation": IMPLEMENTATION, "profile": "default",
                   "capabilities": ["u64_atomics", "f32_atomic_add", "f64_atomic_add",
                                    "concurrent", "cas_loop", atomcts_shim.REPRO]}
            if req.get("profile_once"):
                ans["profile_once"] = True
        else:
            sys.stdout = sys.stderr
            try:
                ans = run(req)
            except Exception as e:  # report, never die: the runner counts it as an error
                ans = {"outcome": "error", "why": "%s: %s" % (type(e).__name__, e)}
            sys.stdout = real_stdout
            ans["id"] = req["id"]
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("WARP_CACHE_PATH", os.path.expanduser("~/.cache/warp"))
    main()
