#!/usr/bin/env python3
"""A minimal semantic-level shim (adapters/PROTOCOL.md, version 2): it reads the lowered IR and
answers the final memory and each access's returned value (`accesses`), applying integer
add/sub/and/or/xor/exch itself, in program order. An example of the version 2 protocol and
its test double (runner/tests/protocol2.rs); everything else is `not_applicable`. The protocol
(handshake, ids, errors, pipelining) is atomcts_shim.py's.

MINI_IR_BUG=xor_as_or plants a bug (xor computed as or) so tests can check it is caught.
"""
import os

import atomcts_shim

BUG = os.environ.get("MINI_IR_BUG", "")
WIDTH = {"u32": 4, "s32": 4, "u64": 8, "s64": 8}
OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "and": lambda a, b: a & b,
    "or": lambda a, b: a | b, "exch": lambda a, b: b,
    "xor": (lambda a, b: a | b) if BUG == "xor_as_or" else (lambda a, b: a ^ b),
}


def run(req):
    ins = req["lowered"]["instr"]
    if ins["kind"] != "mem" or ins["op"] not in OPS or ins["type"] not in WIDTH:
        return {"outcome": "not_applicable", "why": "mini_ir runs integer add/sub/and/or/xor/exch only"}
    w = WIDTH[ins["type"]]
    mem = req["state"]["memory"]
    space = mem[ins["space"]]
    ranges = [(int(r["base"], 16), bytearray.fromhex(r["bytes"])) for r in space]
    returned = []
    for a in ins["accesses"]:
        addr = int(a["addr"], 16)
        hit = [(b, by) for b, by in ranges if b <= addr and addr + w <= b + len(by)]
        if not hit or addr % w or a["fault"]:
            return {"outcome": "not_applicable", "why": "lane %d: not a plain in-bounds access" % a["lane"]}
        b, by = hit[0]
        o = addr - b
        old = int.from_bytes(by[o:o + w], "little")
        new = OPS[ins["op"]](old, int(a["src"][0], 16)) % (1 << (8 * w))
        by[o:o + w] = new.to_bytes(w, "little")
        returned.append(hex(old))
    for r, (b, by) in zip(space, ranges):
        r["bytes"] = by.hex()
    return {"outcome": "accesses", "memory": mem, "returned": returned}


atomcts_shim.serve(run, name="mini-ir", level="semantic")
