#!/usr/bin/env python3
"""Regenerate reference/tests/data/intel: the vISA text Intel's IGC writes for our OpenCL C
kernels (main.cl, heldout.cl), reduced to the `dword_atomic` and `svm_scatter4scaled` lines and
the `.decl` lines of the variables and surfaces they name (issue 29).

The kernels are ours; the listings are Intel tool output of our own kernels. No Intel binary is
committed. The tools come from Debian bookworm:

  ocloc  `intel-opencl-icd` 22.43.24595.41-1 (OpenCL C offline compiler; no GPU needed)
  IGC    `libigc1` 1.0.12504.6-1+deb12u1 (pulled in; the release the seed vISA documents are
         taken from)

  apt-get install -y intel-opencl-icd

Usage: reference/tests/data/intel/regen.py [--ocloc PATH]

Each kernel file is compiled for every device this ocloc knows, once per SIMD width IGC can be
forced to (`IGC_ForceOCLSIMDWidth`, an IGC debug variable; PVC has no SIMD8), with
`IGC_ShaderDumpEnable=1 IGC_DumpToCustomDir=...`. The `.visaasm` of each kernel is read and its
instruction lines are kept verbatim (leading indentation and IGC's trailing `/// $n` debug
comment removed). main.cl's lines go to `main_<device>.visa` (the front end is developed
against them); heldout.cl's to `heldout_<device>.visa` (only run by the held-out test).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAIN_DEVICES = ["bdw", "skl", "icllp", "tgllp", "dg1", "acm-g10", "pvc"]
# The held-out listing also runs on the two further devices this ocloc accepts.
HELDOUT_DEVICES = MAIN_DEVICES + ["xe_hp_sdv", "pvc-sdv"]
WIDTHS = [8, 16, 32]
KEEP = re.compile(r"^\s*(\([^)]*\)\s*)?(dword_atomic|svm_scatter4scaled)\b")
NAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(?=[.(])")


def version(pkg):
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def options(device):
    # This ocloc fails `-cl-std=CL3.0` on PVC; CL2.0 is what it accepts there.
    return "-cl-std=CL2.0" if device.startswith("pvc") else ""


def compile_one(ocloc, src, device, width, dump):
    env = dict(os.environ)
    env.update(
        IGC_ShaderDumpEnable="1",
        IGC_DumpToCustomDir=str(dump),
        IGC_ForceOCLSIMDWidth=str(width),
    )
    cmd = [ocloc, "compile", "-q", "-file", str(src), "-device", device]
    if options(device):
        cmd += ["-options", options(device)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=dump)
    return r.returncode == 0


def kernel_blocks(dump):
    """(kernel name, kept lines) per .visaasm file, sorted by kernel name."""
    blocks = []
    for f in sorted(dump.glob("*.visaasm")):
        text = f.read_text()
        m = re.search(r'^\.kernel "([^"]+)"', text, re.M)
        if not m:
            continue
        decls = {}
        for line in text.splitlines():
            if line.startswith(".decl "):
                decls[line.split()[1]] = line.strip()
        kept = []
        for line in text.splitlines():
            if KEEP.match(line):
                kept.append(line.split("///")[0].strip())
        if not kept:
            continue
        names = []
        for line in kept:
            for n in NAME.findall(line.split(")", 1)[-1] if line.startswith("(") else line):
                if n in decls and n not in names:
                    names.append(n)
            p = re.match(r"^\(!?([A-Za-z_][A-Za-z0-9_]*)", line)
            if p and p.group(1) in decls and p.group(1) not in names:
                names.append(p.group(1))
        blocks.append((m.group(1), [decls[n] for n in names] + kept))
    return sorted(blocks)


def regen(ocloc, stem, devices):
    src = HERE / f"{stem}.cl"
    for device in devices:
        out = [
            f"// IGC vISA text of {stem}.cl for {device}: the dword_atomic and svm_scatter4scaled",
            "// lines with the .decl lines of what they name (atomcts issue 29; regen.py).",
            f"// ocloc: intel-opencl-icd {version('intel-opencl-icd')}; "
            f"IGC: libigc1 {version('libigc1')}",
        ]
        for width in WIDTHS:
            with tempfile.TemporaryDirectory() as tmp:
                dump = Path(tmp)
                shutil.copy(src, dump / src.name)
                if not compile_one(ocloc, src.name, device, width, dump):
                    out.append(f"// IGC_ForceOCLSIMDWidth={width}: not compiled for {device}")
                    continue
                opts = options(device)
                opts = f' -options "{opts}"' if opts else ""
                out.append(
                    f"// IGC_ForceOCLSIMDWidth={width} ocloc compile -file {src.name} "
                    f"-device {device}{opts}"
                )
                blocks = kernel_blocks(dump)
                if not list(dump.glob("*.visaasm")):
                    out.append(f"// (no vISA dumped: {device} has no SIMD{width})")
                for name, lines in blocks:
                    out.append(f'.kernel "{name}" simd{width}')
                    out.extend(lines)
        (HERE / f"{stem}_{device}.visa").write_text("\n".join(out) + "\n")
        print(f"{stem}_{device}.visa: {len(out)} lines")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ocloc", default=shutil.which("ocloc") or "ocloc")
    args = ap.parse_args()
    if not shutil.which(args.ocloc):
        sys.exit("ocloc not found: apt-get install -y intel-opencl-icd")
    regen(args.ocloc, "main", MAIN_DEVICES)
    regen(args.ocloc, "heldout", HELDOUT_DEVICES)


if __name__ == "__main__":
    main()
