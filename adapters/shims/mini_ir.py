#!/usr/bin/env python3
"""A minimal semantic-level shim (adapters/PROTOCOL.md, version 2): it reads the lowered IR and
answers the final memory and each access's returned value (`accesses`), applying integer
add/sub/and/or/xor/exch itself, in program order. An example of the version 2 protocol and
its test double (runner/tests/protocol2.rs, runner/tests/repro.rs); everything else is
`not_applicable`. The protocol (handshake, ids, errors, pipelining) is atomcts_shim.py's.

It announces `repro` (PROTOCOL.md, "Standalone reproducers") and answers a standard-library
body that applies the same op text. MINI_IR_REPRO plants a bad answer to `repro` for the
runner's tests: off (no capability), garbage, wrong_type, no_body, huge, other_id, crash, stall,
clobber (a body that redefines the script's CHECKS), exit (a body that exits), na.

MINI_IR_BUG=xor_as_or plants a bug (xor computed as or) so tests can check it is caught.
"""
import json
import os
import time

import atomcts_shim

BUG = os.environ.get("MINI_IR_BUG", "")
REPRO = os.environ.get("MINI_IR_REPRO", "")
WIDTH = {"u32": 4, "s32": 4, "u64": 8, "s64": 8}
# Each op as Python text of `a` (memory) and `b` (the operand): run() and the repro body use it.
OP_TEXT = {"add": "a + b", "sub": "a - b", "and": "a & b", "or": "a | b", "exch": "b",
           "xor": "a | b" if BUG == "xor_as_or" else "a ^ b"}
OPS = {op: eval("lambda a, b: " + text) for op, text in OP_TEXT.items()}

LAUNCH = """    out = []
    for i in range(N):
        o = IDX[i] * W
        a, b = int.from_bytes(flat[o:o + W], "little"), SRC0[i]
        flat[o:o + W] = (({op}) % (1 << (8 * W))).to_bytes(W, "little")
        out.append(a)
    return observation(flat, out, where)
"""


def repro(req):
    ins = req["lowered"]["instr"]
    checked = plain(ins)
    if checked:
        return checked
    w = WIDTH[ins["type"]]
    if REPRO == "garbage":
        return atomcts_shim.Raw("this is not JSON {")
    if REPRO == "crash":
        os._exit(3)
    if REPRO == "stall":
        time.sleep(3600)
    if REPRO == "na":
        return {"outcome": "not_applicable", "why": "mini_ir writes no body today"}
    if REPRO == "wrong_type":
        return {"outcome": "repro", "body": 42}
    if REPRO == "no_body":
        return {"outcome": "repro"}
    ans = atomcts_shim.repro_answer(req, ins["accesses"], w, None, "W = %d\n" % w,
                                    LAUNCH.format(op=OP_TEXT[ins["op"]]), [])
    if REPRO == "huge":
        ans["body"] += "#" * (2 << 20)
    if REPRO == "clobber":
        ans["body"] += "\nCHECKS = []\n"
    if REPRO == "exit":
        ans["body"] += "\nimport sys\nsys.exit(0)\n"
    if REPRO == "other_id":
        ans["id"] = "some/other::case"
        return atomcts_shim.Raw(json.dumps(ans))
    return ans


def plain(ins):
    """The not_applicable answer for what mini_ir does not run, else None."""
    if ins["kind"] != "mem" or ins["op"] not in OPS or ins["type"] not in WIDTH:
        return {"outcome": "not_applicable", "why": "mini_ir runs integer add/sub/and/or/xor/exch only"}
    return None


def run(req):
    if req.get("type") == "repro":
        return repro(req)
    ins = req["lowered"]["instr"]
    checked = plain(ins)
    if checked:
        return checked
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


atomcts_shim.serve(run, name="mini-ir", level="semantic",
                   capabilities=[] if REPRO == "off" else [atomcts_shim.REPRO])
