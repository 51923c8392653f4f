"""The atomcts adapter protocol (adapters/PROTOCOL.md, versions 1 and 2, pipelining) for shim
authors: a shim is a function from a request to an answer.

    import atomcts_shim

    def run(req):                       # req: the request object (dict) of PROTOCOL.md
        ...
        return {"outcome": "completed", "state": state}   # the answer, without "id"

    atomcts_shim.serve(run, name="my-simulator", capabilities=["u64_atomics"])

`serve` does the handshake (the highest version both sides speak, at most `version`), echoes
each request's id, turns an exception in `run` into an `error` answer naming it, and
pipelines: it offers `window` requests in flight (the runner sends up to that many before
reading answers) and answers in order, writing a batch of answers at once. It takes the profile
once (PROTOCOL.md, "The profile sent once") and puts it back into every request it hands to
`run`, so `req["profile"]` is there either way. A handler may return `Raw(text)` to write a line
as it is (tests of the runner's garbage handling).

Run a shim from the repository root with the module on the path, e.g.
`--adapter 'cmd:PYTHONPATH=adapters/shims python3 my_shim.py'`, or put a copy beside it.
"""
import json
import os
import sys

PROTOCOL = "atomcts-adapter"


class Raw(str):
    """An answer line written as it is (no id, no JSON)."""


# One encoder for every answer (json.dumps with separators builds a new one per call).
_encode = json.JSONEncoder(separators=(",", ":")).encode


def _answer(handler, req):
    try:
        ans = handler(req)
    except Exception as e:  # the shim's own failure: an error answer, never a crash
        ans = {"outcome": "error", "why": "%s: %s" % (type(e).__name__, e)}
    if isinstance(ans, Raw):
        return str(ans)
    ans = dict(ans)
    ans["id"] = req.get("id")
    return _encode(ans)


def serve(handler, name, capabilities=(), level="text", version=None, window=64,
          stdin=None, stdout=None, implementation=None, profile=None):
    """Serves requests on standard input until it closes.

    level: "text" or "semantic" (version 2). version: the highest version the shim speaks
    (default: 2 for a semantic shim, else 1). window: requests accepted in flight (1: no
    pipelining, the `window` key is left out of the handshake). implementation, profile: the
    handshake's optional keys (what runs behind the shim, with versions; the profile it
    claims)."""
    fd_in = (stdin or sys.stdin).fileno()
    out = stdout or sys.stdout
    if version is None:
        version = 2 if level == "semantic" else 1
    pending = b""
    profile_msg = None  # the last `profile` message's profile (profile_once)
    decode = json.JSONDecoder().decode
    while True:
        chunk = os.read(fd_in, 1 << 16)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        answers = []
        for line in lines:
            if not line.strip():
                continue
            req = decode(line.decode())
            kind = req.get("type")
            if kind == "run" or kind == "run_concurrent":
                if "profile" not in req:
                    req["profile"] = profile_msg
                answers.append(_answer(handler, req))
            elif kind == "profile":  # never answered
                profile_msg = req.get("profile")
            elif kind == "hello":
                offered = req.get("versions") or [req.get("version", 1)]
                spoken = max([v for v in offered if v <= version] or [1])
                hello = {"type": "hello", "protocol": PROTOCOL, "version": spoken,
                         "name": name, "capabilities": list(capabilities)}
                if spoken >= 2:
                    hello["level"] = level
                if implementation is not None:
                    hello["implementation"] = implementation
                if profile is not None:
                    hello["profile"] = profile
                if window > 1:
                    hello["window"] = window
                if req.get("profile_once"):
                    hello["profile_once"] = True
                answers.append(json.dumps(hello))
            else:
                answers.append(_answer(handler, req))
        if answers:
            out.write("\n".join(answers) + "\n")
            out.flush()


# Helpers for semantic-level (version 2) shims that run the lowered IR's accesses on one flat
# buffer of global memory (adapters/shims/numba_cudasim.py, adapters/shims/warp_cpu.py).

def not_applicable(why):
    """The answer for a case the implementation has no exact primitive for (never emulated)."""
    return {"outcome": "not_applicable", "why": why}


def flat_global(req, accesses, width, space="global"):
    """Lays the request's ranges of `space` ("global" or "shared") out in one buffer (each base
    keeps its residue modulo 8) and finds each access's element index in it. Returns (layout,
    flat bytearray, indices), or a `not_applicable` answer for a faulting, unallocated or
    misaligned access."""
    layout, cursor = [], 0
    for r in req["state"]["memory"][space]:
        base, data = int(r["base"], 16), bytes.fromhex(r["bytes"])
        off = (cursor + 7) // 8 * 8 + base % 8
        layout.append((base, data, off))
        cursor = off + len(data)
    flat = bytearray((cursor + 7) // 8 * 8 or 8)
    for base, data, off in layout:
        flat[off:off + len(data)] = data
    idx = []
    for a in accesses:
        addr = int(a["addr"], 16)
        if a.get("fault"):
            return not_applicable("lane %d faults (%s)" % (a["lane"], a["fault"]))
        hit = [off + addr - base for base, data, off in layout
               if base <= addr and addr + width <= base + len(data)]
        if not hit:
            return not_applicable("lane %d address %#x outside allocated memory" % (a["lane"], addr))
        if hit[0] % width:
            return not_applicable("lane %d address %#x misaligned" % (a["lane"], addr))
        idx.append(hit[0] // width)
    return layout, flat, idx


def memory_answer(state, layout, final, space="global"):
    """A state's `memory` after a run: the ranges of `space` read back from the flat buffer
    `final` (bytes), the other space as it came."""
    memory = dict(state["memory"])
    memory[space] = [{"base": hex(base), "bytes": final[off:off + len(data)].hex()}
                     for base, data, off in layout]
    return memory


def accesses_answer(req, layout, final, returned):
    """The `accesses` answer: the memory read back from the flat buffer `final` (bytes) and
    each access's returned value (hex strings)."""
    return {"outcome": "accesses", "returned": returned,
            "memory": memory_answer(req["state"], layout, final)}
