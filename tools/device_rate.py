#!/usr/bin/env python3
"""What one atomic operation of a concurrent case costs through atomcts (issue 31 point 2).

Writes two concurrent SASS cases of the same shape (2 instructions of 32 lanes, ATOM.ADD.U32 of
1, every lane on its own word, or every lane on one word with --contended) that differ only in
their iterations (SMALL and LARGE), runs each through `atomcts run --cases` on every adapter
named, REPEAT times, and prints per adapter the wall time of each and the cost of one more add,
(t_large - t_small) / (adds_large - adds_small): the fixed costs of a case (process, device,
compile) cancel out; what is left is the device's atomic, the readback of its slots, and the
host's observation and judgement of it. Which part is the device's is measured apart, with
`perf record` of the large case (BENCHMARKS.md, "How far from the device's own atomics").

    python3 tools/device_rate.py [--contended] [--repeat N] ADAPTER [ADAPTER...]

Each case's expected values come from the table (ATOM .ADD: M = M + Rb), not from a run; a case
that does not pass is reported and its times not used.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

LANES = 32
SMALL = 64
LARGE = 4096
WORDS = 64
BASE = 0x1000


def case_text(iterations: int, contended: bool) -> str:
    """Two instructions of LANES lanes, each lane adding 1 `iterations` times."""
    lines = [
        'dialect = "sass"',
        'cite = "SASS ATOM (seed 002), Atomic Operations table .ADD (M = M + Rb); Description (atomic)"',
        "",
        "[[case]]",
        f'name = "adds_{"one_word" if contended else "own_words"}_{iterations}"',
        f'cite = "SASS ATOM .ADD.U32: 2 x {LANES} lanes x {iterations} adds of 1 from 0"',
        'tags = ["concurrent"]',
    ]
    mem = ", ".join(f'0x{BASE + 4 * w:x} = "u32:0"' for w in range(WORDS))
    lines.append(f"given = {{ mem = {{ {mem} }} }}")
    if contended:
        final = {0: 2 * LANES * iterations}
    else:
        final = {k: iterations for k in range(2 * LANES)}
    expect = ", ".join(f'0x{BASE + 4 * w:x} = "u32:{v}"' for w, v in final.items())
    lines.append(f"expect = {{ mem = {{ {expect} }} }}")
    for k in range(2):
        addrs = [BASE if contended else BASE + 4 * (k * LANES + i) for i in range(LANES)]
        lines += [
            "[[case.concurrent]]",
            'asm = "ATOM.ADD.U32 RZ, [R2], R4"',
            f"lanes = {LANES}",
            f"iterations = {iterations}",
            "given = { R2 = [" + ", ".join(hex(a) for a in addrs) + "], R4 = 1 }",
        ]
    return "\n".join(lines) + "\n"


def run(atomcts: str, adapter: str, path: str) -> tuple[float, str]:
    env = dict(os.environ)
    if adapter == "vulkan:swiftshader":
        env.setdefault("VK_DRIVER_FILES", "/usr/lib/chromium/vk_swiftshader_icd.json")
    t0 = time.perf_counter()
    p = subprocess.run(
        [atomcts, "run", "--no-progress", "--profile", "claimed", "--adapter", adapter,
         "--concurrent-repeat", "1", "--cases", path],
        capture_output=True, text=True, env=env, timeout=600,
    )
    dt = time.perf_counter() - t0
    last = (p.stdout.strip().splitlines() or [""])[-1]
    return dt, last if p.returncode == 0 else f"exit {p.returncode}: {last}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("adapters", nargs="+")
    ap.add_argument("--contended", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--atomcts", default="target/release/atomcts")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="device-rate-")
    paths = {}
    for it in (SMALL, LARGE):
        paths[it] = os.path.join(d, f"adds_{it}.toml")
        with open(paths[it], "w") as f:
            f.write(case_text(it, a.contended))
    ops = {it: 2 * LANES * it for it in (SMALL, LARGE)}
    print(f"# {'one word' if a.contended else 'own words'}: 2 x {LANES} lanes; "
          f"{ops[SMALL]} and {ops[LARGE]} adds; best of {a.repeat}")
    for adapter in a.adapters:
        best = {}
        bad = None
        for it in (SMALL, LARGE):
            times = []
            for _ in range(a.repeat):
                dt, last = run(a.atomcts, adapter, paths[it])
                if "1 passed" not in last:
                    bad = f"{it} iterations: {last}"
                    break
                times.append(dt)
            if bad:
                break
            best[it] = min(times)
        if bad:
            print(f"{adapter}: not measured ({bad})")
            continue
        per = (best[LARGE] - best[SMALL]) / (ops[LARGE] - ops[SMALL])
        rate = 1 / per if per > 0 else float("inf")
        print(f"{adapter}: {best[SMALL]:.3f} s / {best[LARGE]:.3f} s; "
              f"{per * 1e9:.1f} ns per add through atomcts ({rate / 1e6:.2f} M adds/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
