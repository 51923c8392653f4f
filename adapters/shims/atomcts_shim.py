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
            if kind == "run" or kind == "run_concurrent" or kind == "repro":
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


# Standalone reproducers (PROTOCOL.md, "Standalone reproducers", capability `repro`): a `repro`
# request has the fields of `run`; the answer's body is Python in the implementation's own API
# that runs exactly what the shim ran and returns what it observed in the protocol's terms. The
# shared part is here: the case's ranges laid out as flat_global lays them out, each access's
# element index and operands, NumPy arrays over them, and the observation turned back into
# protocol shape. A shim adds its kernel and its launch.

REPRO = "repro"

_REPRO_HELPERS = """
def layout():
    \"\"\"The flat buffer of RANGES (each base keeps its residue modulo 8), and where each
    range lies in it: (base, length, offset).\"\"\"
    where, cursor = [], 0
    for base, data in RANGES:
        off = (cursor + 7) // 8 * 8 + base % 8
        where.append((base, len(bytes.fromhex(data)), off))
        cursor = off + len(bytes.fromhex(data))
    flat = bytearray((cursor + 7) // 8 * 8 or 8)
    for (base, data), (_, n, off) in zip(RANGES, where):
        flat[off:off + n] = bytes.fromhex(data)
    return flat, where


def observation(final, returned, where):
    \"\"\"What the launch left, in the protocol's terms: the bytes of each range of SPACE_OF_BODY
    (read from the flat buffer `final`) and each access's returned value (its bits).\"\"\"
    ranges = [{"base": hex(base), "bytes": bytes(final[off:off + n]).hex()} for base, n, off in where]
    return {"memory": {SPACE_OF_BODY: ranges}, "returned": [hex(int(v)) for v in returned]}
"""


def repro_answer(req, acc, width, dtype, source, launch, modules, env=None, space="global"):
    """The `repro` answer for a single-instruction case run on one flat buffer of `space`:

    `dtype` (a NumPy type name, "uint32") is the array type the kernel works on, `width` its
    size (dtype None: no NumPy arrays, only `flat, where`); `source` is the kernel's text (module level: imports, the decorated kernel); `launch`
    the body of observe() (indented four spaces) that starts with the arrays the shared part
    makes (`flat, where`, `mem` over the flat buffer as `dtype`, `idx` as int64, operands `b` and
    `c` as `dtype`, `out` zeroed, N accesses) and returns `observation(final bytes, returned
    bits, where)`. `modules`: what it imports beyond the standard library; `env`: environment it
    needs before importing them. A faulting, unallocated or misaligned access: not applicable."""
    laid = flat_global(req, acc, width, space)
    if isinstance(laid, dict):
        return laid
    _, _, idx = laid
    mask = (1 << (8 * width)) - 1
    bits = {4: "uint32", 8: "uint64"}[width]
    rows = "".join("    (%#x, \"%s\"),\n" % (int(r["base"], 16), r["bytes"])
                   for r in req["state"]["memory"][space])

    def operand(k):
        return "[%s]" % ", ".join("%#x" % (int(a["src"][k], 16) & mask) for a in acc)

    data = ("# The case as the shim ran it: the ranges of %s memory (base, initial bytes), each\n"
            "# access's element index in the flat buffer and its operands (bit patterns).\n"
            "SPACE_OF_BODY = \"%s\"\nRANGES = [\n%s]\nN = %d\nIDX = %s\nSRC0 = %s\nSRC1 = %s\n"
            % (space, space, rows, len(acc), idx, operand(0), operand(1)))
    arrays = "    flat, where = layout()\n" + ("" if dtype is None else (
              "    mem = np.frombuffer(bytes(flat), dtype=np.{t}).copy()\n"
              "    idx = np.array(IDX, dtype=np.int64)\n"
              "    b = np.array(SRC0, dtype=np.uint64).astype(np.{u}).view(np.{t})\n"
              "    c = np.array(SRC1, dtype=np.uint64).astype(np.{u}).view(np.{t})\n"
              "    out = np.zeros(N, dtype=np.{t})\n").format(t=dtype, u=bits))
    body = "%s\n\n\n%s\n\n%s\n\n\ndef observe():\n%s%s" % (
        source.strip("\n"), data, _REPRO_HELPERS.strip("\n"), arrays, launch.rstrip() + "\n")
    ans = {"outcome": "repro", "body": body, "modules": list(modules)}
    if env:
        ans["env"] = dict(env)
    return ans
