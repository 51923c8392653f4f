#!/usr/bin/env python3
"""A small, independent implementation of SASS ATOM integer operations behind the atomcts
adapter protocol (adapters/PROTOCOL.md). It is the example shim: about 150 lines, no
dependencies, written from the SASS ATOM document's formulas, and deliberately limited:

- `ATOM.{ADD,MIN,MAX,INC,DEC,AND,OR,XOR,EXCH,CAS}` on `.U32`/`.S32` (and an omitted size),
  `[Ra]` and `[Ra+imm]`/`[Ra-imm]` addresses, one warp, lanes in ascending order;
- misaligned and unallocated addresses fault; everything else answers `unsupported`.

Set MINI_SASS_BUG=inc to make INC wrap at the bound + 1 (an off-by-one that the corpus catches),
MINI_SASS_BUG=crash / hang / garbage to exercise the runner's crash isolation. The protocol
itself is atomcts_shim.py's.
"""
import os
import re
import sys
import time

import atomcts_shim

BUG = os.environ.get("MINI_SASS_BUG", "")
LINE = re.compile(
    r"^ATOM\.(ADD|MIN|MAX|INC|DEC|AND|OR|XOR|EXCH|CAS)(?:\.(U32|S32|32))?\s+"
    r"(R\d+|RZ),\s*\[(R\d+|RZ)(?:\s*([+-])\s*(0x[0-9a-fA-F]+|\d+))?\]\s*,\s*(R\d+|RZ)(?:\s*,\s*(R\d+|RZ))?\s*;?$"
)


def reg(state, name, lane):
    if name == "RZ":
        return 0
    r = state["regs"].get(name)
    return int(r["elems"][lane], 16) if r else 0


def s32(v):
    return v - (1 << 32) if v & 0x80000000 else v


def run(req):
    m = LINE.match(req["asm"].strip())
    if req["dialect"] != "sass" or not m:
        return {"outcome": "unsupported", "why": "mini_sass knows only plain integer ATOM lines"}
    op, size, rd, ra, sign, imm, rb, rc = m.groups()
    signed = size == "S32"
    st = req["state"]
    # The ATOM table has no signed INC/DEC (found by `atomcts fuzz`).
    if signed and op in ("INC", "DEC"):
        return {"outcome": "invalid", "reason": "unsupported_type"}
    # Generic addresses may fall in the shared or local window: only global memory is known.
    if st.get("shared_window") or st.get("local_window"):
        return {"outcome": "unsupported", "why": "mini_sass has no shared or local windows"}
    mem = {}
    for rng in st["memory"]["global"]:
        base = int(rng["base"], 16)
        for i, b in enumerate(bytes.fromhex(rng["bytes"])):
            mem[base + i] = b
    offset = int(imm, 0) if imm else 0
    offset = -offset if sign == "-" else offset
    lanes = [l for l in range(st["lanes"]) if st["active"][l]]
    faults = []
    for l in lanes:
        addr = (reg(st, ra, l) + offset) & 0xFFFFFFFF
        if addr % 4:
            faults.append([l, "misaligned_address"])
        elif not all(addr + i in mem for i in range(4)):
            faults.append([l, "address_out_of_range"])
    if faults:
        return {"outcome": "fault", "lanes": faults}
    results = {}
    for l in lanes:
        addr = (reg(st, ra, l) + offset) & 0xFFFFFFFF
        old = int.from_bytes(bytes(mem[addr + i] for i in range(4)), "little")
        b = reg(st, rb, l)
        if op == "ADD":
            new = (old + b) & 0xFFFFFFFF
        elif op in ("MIN", "MAX"):
            key = s32 if signed else (lambda v: v)
            pick = min if op == "MIN" else max
            new = pick(old, b, key=key)
        elif op == "INC":
            bound = b + 1 if BUG == "inc" else b
            new = 0 if old >= bound else (old + 1) & 0xFFFFFFFF
        elif op == "DEC":
            new = b if (old == 0 or old > b) else old - 1
        elif op == "AND":
            new = old & b
        elif op == "OR":
            new = old | b
        elif op == "XOR":
            new = old ^ b
        elif op == "EXCH":
            new = b
        else:  # CAS: compare Rb, swap in Rc
            new = reg(st, rc, l) if old == b else old
        for i in range(4):
            mem[addr + i] = (new >> (8 * i)) & 0xFF
        results[l] = old
    if rd != "RZ":
        r = st["regs"].setdefault(rd, {"type": "b32", "elems": ["0x0"] * st["lanes"]})
        for l, v in results.items():
            r["elems"][l] = hex(v)
    for rng in st["memory"]["global"]:
        base = int(rng["base"], 16)
        n = len(rng["bytes"]) // 2
        rng["bytes"] = bytes(mem[base + i] for i in range(n)).hex()
    return {"outcome": "completed", "state": st}


def handle(req):
    if BUG == "crash":
        sys.exit(3)
    if BUG == "hang":
        time.sleep(3600)
    if BUG == "garbage":
        return atomcts_shim.Raw("this is not json")
    return run(req)


def main():
    # MINI_SASS_WINDOW=N offers N requests in flight (pipelining); by default one at a time.
    window = int(os.environ.get("MINI_SASS_WINDOW", "1"))
    atomcts_shim.serve(handle, name="mini-sass", version=1, window=window)


if __name__ == "__main__":
    main()
