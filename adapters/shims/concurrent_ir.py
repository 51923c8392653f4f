#!/usr/bin/env python3
"""A semantic-level shim (adapters/PROTOCOL.md, version 2, capability `concurrent`) that runs
concurrent cases really concurrently: one Python thread per lane of every instruction, all
released together by a barrier, each running its iterations in order. Integer ops only; single
instructions run in program order. The reference implementation of the protocol's concurrent
request, and the test double of runner/tests/concurrent.rs.

Every read-modify-write takes a lock, reads, yields the interpreter (time.sleep(0): another
thread may run here, as on real hardware) and writes.
CONCURRENT_IR_YIELD=p (default 0.05): the probability of that yield, per operation; a small p
makes a lost update rare (p = 0.001: a race that shows up about once in a thousand operations).
CONCURRENT_IR_LOCKS=global (default): one lock for every operation: correct.
CONCURRENT_IR_LOCKS=per_op: a lock per kind of operation (add, exch, ...): each kind is atomic
with respect to itself only, the bug the concurrent cases exist to catch.

A compare-and-swap loop (`cas_loop` in a request's instruction, capability `cas_loop`) runs as
a real retry loop in its lane's thread: every attempt is one compare-and-swap (under the `cas`
lock) with desired = update(compare, operand); a failed attempt's returned value is the next
compare; an iteration reports its successful attempt's value and its number of attempts.
CONCURRENT_IR_DUMP=FILE: write each concurrent request and its answer to FILE (to replay a
failure the checker reported).
Every answer reports `executed`, the iterations each lane's thread executed (issue 30).
It announces `repro` (PROTOCOL.md, "Standalone reproducers") and answers a `repro` request for
a concurrent case with a standard-library body that runs the same threads (this file's
functions, their source) on the case. CONCURRENT_IR_REPRO=lose plants a lost update in that
body only: its first read-modify-write does not write back; =garbage and =other_id answer the
`repro` request badly (for the runner's tests).
CONCURRENT_IR_LOOP_LIMIT=N: each lane's thread stops its loops after N loop iterations in all
(an iteration, or a compare-and-swap loop's attempt), as llvmpipe stops a kernel invocation's
loops after 65,535 (llvmpipe-1 in docs/findings.md): a loop cut short, which the runner must tell
apart from a lost update. Rows of iterations not executed are reported as zeros.
"""
import inspect
import json
import os
import random
import sys
import threading
import time

MODE = os.environ.get("CONCURRENT_IR_LOCKS", "global")
YIELD = float(os.environ.get("CONCURRENT_IR_YIELD", "0.05"))
LOOP_LIMIT = int(os.environ.get("CONCURRENT_IR_LOOP_LIMIT", "0")) or None
# Read-modify-writes left that lose their write (a planted lost update; 0 in the shim itself).
LOSE = [0]
WIDTH = {"u16": 2, "s16": 2, "u32": 4, "s32": 4, "u64": 8, "s64": 8}


def signed(v, bits):
    return v - (1 << bits) if v >> (bits - 1) else v


def apply(op, ty, old, s0, s1):
    """(new, returned, ok) of one op on `old`; values are unsigned bit patterns."""
    bits = 8 * WIDTH[ty]
    m = (1 << bits) - 1
    key = (lambda v: signed(v, bits)) if ty.startswith("s") else (lambda v: v)
    ok = True
    if op == "add":
        new = old + s0
    elif op == "sub":
        new = old - s0
    elif op == "inc":
        new = old + 1
    elif op == "dec":
        new = old - 1
    elif op == "predec":
        new = old - 1
        return new & m, new & m, True
    elif op == "inc_bounded":
        new = 0 if old >= s0 else old + 1
    elif op == "dec_bounded":
        new = s0 if old == 0 or old > s0 else old - 1
    elif op == "min":
        new = old if key(old) <= key(s0) else s0
    elif op == "max":
        new = old if key(old) >= key(s0) else s0
    elif op == "and":
        new = old & s0
    elif op == "or":
        new = old | s0
    elif op == "xor":
        new = old ^ s0
    elif op == "exch":
        new = s0
    elif op == "cas":
        ok = old == s0
        new = s1 if ok else old
    else:
        raise KeyError(op)
    return new & m, old, ok


OPS = {"add", "sub", "inc", "dec", "predec", "inc_bounded", "dec_bounded", "min", "max",
       "and", "or", "xor", "exch", "cas"}


class Memory:
    def __init__(self, memory):
        self.memory = memory
        self.ranges = {sp: [(int(r["base"], 16), bytearray.fromhex(r["bytes"])) for r in rs]
                       for sp, rs in memory.items()}

    def cell(self, space, addr, w):
        for b, by in self.ranges[space]:
            if b <= addr and addr + w <= b + len(by):
                return by, addr - b
        return None

    def answer(self):
        out = {}
        for sp, rs in self.memory.items():
            out[sp] = [{"base": r["base"], "bytes": by.hex()}
                       for r, (_, by) in zip(rs, self.ranges[sp])]
        return out


def check(ins, mem):
    if ins["kind"] != "mem" or ins["op"] not in OPS or ins["type"] not in WIDTH:
        return "concurrent_ir runs integer atomics only"
    w = WIDTH[ins["type"]]
    for a in ins["accesses"]:
        addr = int(a["addr"], 16)
        if a["fault"] or addr % w or mem.cell(ins["space"], addr, w) is None:
            return "lane %d: not a plain in-bounds access" % a["lane"]
    return None


LOCKS = {}
GLOBAL = threading.Lock()


def lock_for(op):
    if MODE == "per_op":
        return LOCKS.setdefault(op, threading.Lock())
    return GLOBAL


def rmw(mem, ins, a, yield_inside):
    w = WIDTH[ins["type"]]
    by, o = mem.cell(ins["space"], int(a["addr"], 16), w)
    with lock_for(ins["op"]):
        old = int.from_bytes(by[o:o + w], "little")
        if yield_inside and random.random() < YIELD:
            time.sleep(0)
        new, ret, ok = apply(ins["op"], ins["type"], old, int(a["src"][0], 16), int(a["src"][1], 16))
        if LOSE[0] > 0:
            LOSE[0] -= 1
        else:
            by[o:o + w] = new.to_bytes(w, "little")
    return ret, ok


def update(op, ty, cmp, k):
    """desired = op(cmp, k): a cas_loop's update (FORMAT.md, "Compare-and-swap loops")."""
    return apply(op, ty, cmp, k, 0)[0]


def cas_loop(mem, ins, a, lp, iterations, returned, attempts, k, j, budget):
    """One lane's retry loop; fills returned[k][it][j] and attempts[k][it][j]; returns the
    iterations it executed (fewer when `budget`, its loop iterations in all, runs out)."""
    op, operand = lp["update"], int(lp["operand"], 16)
    cmp = int(a["src"][0], 16)
    for it in range(iterations):
        n = 0
        while True:
            if budget is not None:
                if budget[0] == 0:
                    return it
                budget[0] -= 1
            n += 1
            desired = update(op, ins["type"], cmp, operand)
            ret, ok = rmw(mem, ins, dict(a, src=[hex(cmp), hex(desired)]), True)
            if ok:
                break
            cmp = ret
        returned[k][it][j] = hex(cmp)
        attempts[k][it][j] = n
        cmp = update(op, ins["type"], cmp, operand)
    return iterations


def run(req):
    mem = Memory(req["state"]["memory"])
    ins = req["lowered"]["instr"]
    why = check(ins, mem)
    if why:
        return {"outcome": "not_applicable", "why": why}
    rets, oks = [], []
    for a in ins["accesses"]:
        r, ok = rmw(mem, ins, a, False)
        rets.append(hex(r))
        oks.append(ok)
    return {"outcome": "accesses", "memory": mem.answer(), "returned": rets, "ok": oks}


def run_concurrent(req):
    ans = concurrent_run(req)
    if os.environ.get("CONCURRENT_IR_DUMP"):
        with open(os.environ["CONCURRENT_IR_DUMP"], "w") as f:
            json.dump({"request": req, "answer": ans}, f)
    return ans


def concurrent_run(req):
    """Runs a concurrent request: one thread per lane of every instruction (its source is a
    `repro` body's too)."""
    mem = Memory(req["instrs"][0]["state"]["memory"])
    instrs = [i["lowered"]["instr"] for i in req["instrs"]]
    for ins in instrs:
        why = check(ins, mem)
        if why:
            return {"outcome": "not_applicable", "why": why}
    returned = [[["0x0"] * len(ins["accesses"]) for _ in range(i["iterations"])]
                for ins, i in zip(instrs, req["instrs"])]
    oks = [[[True] * len(ins["accesses"]) for _ in range(i["iterations"])]
           for ins, i in zip(instrs, req["instrs"])]
    attempts = [[[1] * len(ins["accesses"]) for _ in range(i["iterations"])]
                for ins, i in zip(instrs, req["instrs"])]
    executed = [[0] * len(ins["accesses"]) for ins in instrs]
    jobs = [(k, j) for k, ins in enumerate(instrs) for j in range(len(ins["accesses"]))]
    start = threading.Barrier(len(jobs))

    def lane(k, j):
        ins, a = instrs[k], instrs[k]["accesses"][j]
        start.wait()
        lp = req["instrs"][k].get("cas_loop")
        budget = [LOOP_LIMIT] if LOOP_LIMIT is not None else None
        if lp is not None:
            executed[k][j] = cas_loop(mem, ins, a, lp, req["instrs"][k]["iterations"], returned,
                                      attempts, k, j, budget)
            return
        for it in range(req["instrs"][k]["iterations"]):
            if budget is not None:
                if budget[0] == 0:
                    return
                budget[0] -= 1
            r, ok = rmw(mem, ins, a, True)
            returned[k][it][j] = hex(r)
            oks[k][it][j] = ok
            executed[k][j] = it + 1

    threads = [threading.Thread(target=lane, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"outcome": "concurrent", "memory": mem.answer(), "returned": returned, "ok": oks,
            "attempts": attempts, "executed": executed}


def repro(req):
    """The `repro` answer (PROTOCOL.md, "Standalone reproducers"): for a concurrent case, a body
    holding the functions concurrent_run runs (their source), the settings and the request's
    instructions; observe() runs them and returns what run_concurrent answers."""
    if "instrs" not in req:
        return {"outcome": "not_applicable", "why": "concurrent_ir writes bodies of concurrent cases only"}
    if os.environ.get("CONCURRENT_IR_REPRO") == "garbage":
        return "this is not a body {"
    mem = Memory(req["instrs"][0]["state"]["memory"])
    for i in req["instrs"]:
        why = check(i["lowered"]["instr"], mem)
        if why:
            return {"outcome": "not_applicable", "why": why}
    funcs = [signed, apply, Memory, check, lock_for, rmw, update, cas_loop, concurrent_run]
    lose = 1 if os.environ.get("CONCURRENT_IR_REPRO") == "lose" else 0
    instrs = [{k: i[k] for k in ("iterations", "lowered", "cas_loop", "state") if k in i}
              for i in req["instrs"]]
    body = ("import json\nimport random\nimport threading\nimport time\n\n"
            "MODE = %r\nYIELD = %r\nLOOP_LIMIT = %r\nLOSE = [%d]\nWIDTH = %r\nOPS = %r\nLOCKS = {}\n"
            "GLOBAL = threading.Lock()\nREQUEST = json.loads(%r)\n\n\n%s\n\n"
            "def observe():\n    return concurrent_run(REQUEST)\n"
            % (MODE, YIELD, LOOP_LIMIT, lose, WIDTH, sorted(OPS), json.dumps({"instrs": instrs}),
               "\n\n".join(inspect.getsource(f) for f in funcs)))
    return {"outcome": "repro", "body": body, "modules": []}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("type") == "profile":
            continue  # the profile sent once (PROTOCOL.md): never answered, not used here
        if req.get("type") == "hello":
            ans = {"type": "hello", "protocol": "atomcts-adapter", "version": 2,
                   "level": "semantic", "name": "concurrent-ir-" + MODE,
                   "capabilities": ["concurrent", "cas_loop", "repro"]}
            if req.get("profile_once"):
                ans["profile_once"] = True
        else:
            try:
                kind = req.get("type")
                ans = (run_concurrent(req) if kind == "run_concurrent" else
                       repro(req) if kind == "repro" else run(req))
            except Exception as e:  # the shim's own failure: an error, never a result
                ans = {"outcome": "error", "why": "%s: %s" % (type(e).__name__, e)}
            if isinstance(ans, str):  # a line as it is (a planted bad answer)
                print(ans, flush=True)
                continue
            other = kind == "repro" and os.environ.get("CONCURRENT_IR_REPRO") == "other_id"
            ans["id"] = "some/other::case" if other else req["id"]
        print(json.dumps(ans), flush=True)


if __name__ == "__main__":
    main()
