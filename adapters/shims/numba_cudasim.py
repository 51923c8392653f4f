#!/usr/bin/env python3
"""Numba's CUDA simulator behind the atomcts adapter protocol (adapters/PROTOCOL.md).

A third-party implementation nobody here wrote: each SASS `ATOM` case becomes a one-block
kernel whose threads call `numba.cuda.atomic.*` on a NumPy view of the case's memory, run by
Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1). The shim is only the translation layer: it
parses the ATOM line, computes addresses, and applies the SASS address checks (misaligned,
out of range, outside global memory) that the simulator has no notion of; the arithmetic is
Numba's.

Mapping (CUDA C function names): ADD -> atomic.add, MIN/MAX -> atomic.min/max, INC/DEC ->
atomic.inc/dec, AND/OR/XOR -> atomic.and_/or_/xor, EXCH -> atomic.exch, CAS -> atomic.cas.
Sizes .U32 .S32 .U64 .S64 .F32.FTZ.RN .F64.RN; [Ra+imm], [Ra-imm], [imm] addresses; @P guards.
Everything else (F16x2, .E, sparse Ps forms, SAFEADD, vISA, MSL) answers `unsupported`.

Needs: numba (pip). Run: atomcts run --adapter "cmd:python3 adapters/shims/numba_cudasim.py"
"""
import json
import os
import re
import sys

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

SIZES = {
    None: ("U32", np.uint32), "U32": ("U32", np.uint32), "32": ("U32", np.uint32),
    "S32": ("S32", np.int32), "U64": ("U64", np.uint64), "64": ("U64", np.uint64),
    "S64": ("S64", np.int64), "F32.FTZ.RN": ("F32", np.float32), "F64.RN": ("F64", np.float64),
}
LINE = re.compile(
    r"^(?:@(!?)(P[0-6]|PT)\s+)?ATOM\.(ADD|MIN|MAX|INC|DEC|AND|OR|XOR|EXCH|CAS)"
    r"(?:\.(U32|S32|U64|S64|32|64|F32\.FTZ\.RN|F64\.RN))?\s+"
    r"(R\d+|RZ)\s*,\s*\[\s*(?:(R\d+|RZ)\s*(?:([+-])\s*(0x[0-9a-fA-F]+|\d+))?|(0x[0-9a-fA-F]+|\d+))\s*\]"
    r"\s*,\s*(R\d+|RZ)(?:\s*,\s*(R\d+|RZ))?\s*;?$"
)


OPS = ["ADD", "MIN", "MAX", "INC", "DEC", "AND", "OR", "XOR", "EXCH", "CAS"]


@cuda.jit
def atom_kernel(mem, idx, b, c, out, run, code):
    """Thread i applies op `code` (an index into OPS) to mem[idx[i]]. In the simulator,
    `cuda.atomic` exists only inside kernels, hence the dispatch here."""
    i = cuda.threadIdx.x
    if run[i]:
        if code == 0:
            out[i] = cuda.atomic.add(mem, idx[i], b[i])
        elif code == 1:
            out[i] = cuda.atomic.min(mem, idx[i], b[i])
        elif code == 2:
            out[i] = cuda.atomic.max(mem, idx[i], b[i])
        elif code == 3:
            out[i] = cuda.atomic.inc(mem, idx[i], b[i])
        elif code == 4:
            out[i] = cuda.atomic.dec(mem, idx[i], b[i])
        elif code == 5:
            out[i] = cuda.atomic.and_(mem, idx[i], b[i])
        elif code == 6:
            out[i] = cuda.atomic.or_(mem, idx[i], b[i])
        elif code == 7:
            out[i] = cuda.atomic.xor(mem, idx[i], b[i])
        elif code == 8:
            out[i] = cuda.atomic.exch(mem, idx[i], b[i])
        else:
            out[i] = cuda.atomic.cas(mem, idx[i], b[i], c[i])


def reg(st, name, lane):
    if name == "RZ":
        return 0
    r = st["regs"].get(name)
    return int(r["elems"][lane], 16) if r else 0


def reg64(st, name, lane, wide):
    if not wide or name == "RZ":
        return reg(st, name, lane)
    n = int(name[1:])
    return reg(st, name, lane) | (reg(st, "R%d" % (n + 1), lane) << 32)


def run(req):
    st = req["state"]
    m = LINE.match(req["asm"].strip())
    if req["dialect"] != "sass" or not m:
        return {"outcome": "unsupported", "why": "not a plain SASS ATOM line this shim translates"}
    neg, pred, op, size, rd, ra, sign, imm, absolute, rb, rc = m.groups()
    if size not in SIZES:
        return {"outcome": "unsupported", "why": "size"}
    kind, dtype = SIZES[size]
    wide = dtype().itemsize == 8
    legal = {
        "ADD": {"U32", "S32", "U64", "F32", "F64"}, "MIN": {"U32", "S32", "U64", "S64"},
        "MAX": {"U32", "S32", "U64", "S64"}, "INC": {"U32"}, "DEC": {"U32"},
        "AND": {"U32", "S32", "U64"}, "OR": {"U32", "S32", "U64"}, "XOR": {"U32", "S32", "U64"},
        "EXCH": {"U32", "S32", "U64"}, "CAS": {"U32", "S32", "U64"},
    }[op]
    if kind not in legal:
        return {"id": req["id"], "outcome": "invalid", "reason": "unsupported_type"}
    lanes = st["lanes"]
    width = dtype().itemsize
    run_mask = []
    for l in range(lanes):
        ok = st["active"][l]
        if pred and pred != "PT":
            p = st["regs"].get(pred)
            v = bool(int(p["elems"][l], 16)) if p else False
            ok = ok and (v != (neg == "!"))
        elif pred == "PT" and neg == "!":
            ok = False
        run_mask.append(ok)
    ranges = [(int(r["base"], 16), bytearray.fromhex(r["bytes"])) for r in st["memory"]["global"]]
    windows = [st[w] for w in ("shared_window", "local_window") if st.get(w)]
    addrs, faults = [], []
    for l in range(lanes):
        if absolute is not None:
            a = int(absolute, 0)
        else:
            off = int(imm, 0) if imm else 0
            a = (reg(st, ra, l) + (-off if sign == "-" else off)) & 0xFFFFFFFF
        addrs.append(a)
        if not run_mask[l]:
            continue
        in_window = any(int(w["base"], 16) <= a + width - 1 and a < int(w["base"], 16) + int(w["len"], 16) for w in windows)
        if in_window:
            faults.append([l, "invalid_address_space"])
        elif a % width:
            faults.append([l, "misaligned_address"])
        elif not any(b <= a and a + width <= b + len(by) for b, by in ranges):
            faults.append([l, "address_out_of_range"])
    if faults:
        return {"outcome": "fault", "lanes": faults}
    live = [l for l in range(lanes) if run_mask[l]]
    if not live:
        return {"outcome": "completed", "state": st}
    region = None
    for b, by in ranges:
        if all(b <= addrs[l] and addrs[l] + width <= b + len(by) for l in live) and b % width == 0 and len(by) % width == 0:
            region = (b, by)
    if region is None:
        return {"outcome": "unsupported", "why": "lanes span several allocations"}
    base, by = region
    # Little-endian memory (this shim runs on little-endian hosts only).
    mem = np.frombuffer(bytes(by), dtype=dtype).copy()
    idx = np.array([(addrs[l] - base) // width if run_mask[l] else 0 for l in range(lanes)], dtype=np.int64)

    def operand(name):
        raw = np.array([reg64(st, name, l, wide) if name else 0 for l in range(lanes)], dtype=np.uint64)
        return (raw if wide else raw.astype(np.uint32)).view(dtype)

    b = operand(rb)
    c = operand(rc) if rc else np.zeros(lanes, dtype=dtype)
    out = np.zeros(lanes, dtype=dtype)
    run_arr = np.array(run_mask, dtype=np.bool_)
    atom_kernel[1, lanes](mem, idx, b, c, out, run_arr, OPS.index(op))
    new_bytes = mem.tobytes()
    for r in st["memory"]["global"]:
        if int(r["base"], 16) == base:
            r["bytes"] = new_bytes.hex()
    if rd != "RZ":
        raw = out.view(np.uint64 if wide else np.uint32)
        n = int(rd[1:])
        for w in range(2 if wide else 1):
            name = "R%d" % (n + w)
            if n + w > 254:
                break
            regv = st["regs"].setdefault(name, {"type": "b32", "elems": ["0x0"] * lanes})
            for l in live:
                regv["elems"][l] = hex((int(raw[l]) >> (32 * w)) & 0xFFFFFFFF)
    return {"outcome": "completed", "state": st}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("type") == "hello":
            caps = ["u64_atomics", "f32_atomic_add", "f64_atomic_add"]
            ans = {"type": "hello", "protocol": "atomcts-adapter", "version": 1, "name": "numba-cudasim", "capabilities": caps}
        else:
            try:
                ans = run(req)
            except Exception as e:  # report, never die: the runner counts it as an error
                ans = {"outcome": "error", "why": "%s: %s" % (type(e).__name__, e)}
            ans["id"] = req["id"]
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    main()
