#!/usr/bin/env python3
"""Benchmark helper for issue 7 D10 (see BENCHMARKS.md): `case OUT.toml [--returns]` writes an
MSL case of 1024 threads doing binary32 atomic_fetch_add with distinct operands of widely
different magnitudes (returns discarded, or kept with --returns);
`shim` is an adapter (adapters/PROTOCOL.md) that answers it as if the threads were serialized
in descending order (or, with ORDER=scrambled, in the order 391*k mod 1024)."""
import json, os, struct, sys

N = 1024


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_case(path, keep_returns):
    vals = [f32((1.0 + i / 1024.0) * 2.0 ** ((i * 7) % 48 - 24)) for i in range(N)]
    body = 'dialect = "msl"\ncite = "benchmark (issue 7 D10)"\n[[case]]\nname = "f32_add_1024"\n'
    r = "r = " if keep_returns else ""
    body += 'asm = "%satomic_fetch_add_explicit(&buf[0], v, memory_order_relaxed)"\n' % r
    body += "lanes = %d\nrequires = [\"msl_atomic_float\"]\n" % N
    body += 'given = { buf = { space = "device", type = "atomic_float", init = [1.0] }, v = { float = [%s] } }\n' % ", ".join(
        repr(v) for v in vals
    )
    if keep_returns:
        body += 'expect = { buf = ["any"], r = { multiset = [%s] } }\n' % ", ".join(['"any"'] * N)
    else:
        body += 'expect = { buf = ["any"] }\n'
    open(path, "w").write(body)


def shim():
    for line in sys.stdin:
        req = json.loads(line)
        if req["type"] == "profile":
            continue  # the profile sent once (PROTOCOL.md): never answered, not used here
        if req["type"] == "hello":
            out = {"type": "hello", "protocol": "atomcts-adapter", "version": 1,
                   "name": "reverse-order", "capabilities": ["msl_atomic_float"]}
            if req.get("profile_once"):
                out["profile_once"] = True
        else:
            st = req["state"]
            mem = st["memory"]["global"][0]
            acc = struct.unpack("<f", bytes.fromhex(mem["bytes"][:8]))[0]
            vs = [struct.unpack("<f", struct.pack("<I", int(e, 16)))[0] for e in st["regs"]["v"]["elems"]]
            rets = [0] * len(vs)
            n = len(vs)
            order = list(reversed(range(n)))
            if os.environ.get("ORDER") == "scrambled":
                order = [(k * 391) % n for k in range(n)]
            for lane in order:
                rets[lane] = struct.unpack("<I", struct.pack("<f", acc))[0]
                acc = f32(acc + vs[lane])
            if "r" in st["regs"]:
                st["regs"]["r"] = {"type": "f", "elems": ["0x%08x" % x for x in rets]}
            mem["bytes"] = struct.pack("<f", acc).hex() + mem["bytes"][8:]
            out = {"id": req["id"], "outcome": "completed", "state": st}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "case":
        write_case(sys.argv[2], "--returns" in sys.argv)
    else:
        shim()
