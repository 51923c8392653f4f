#!/usr/bin/env python3
"""Regenerates reference/tests/data/intel-binary/ (issue 29, point 3): small vISA kernels of our
own, written in the documents' text form, translated to the concrete syntax of Intel's vISA
assembler, and assembled with `GenX_IR -binary` (Debian `libigc-tools` 1.0.12504.6) for SKL,
TGLLP and DG2. The committed `.isa` files are Intel tool output of our kernels; the test
reference/tests/intel_binary.rs reads them without Intel's tools.

Writes, under reference/tests/data/intel-binary/:
  src/<kernel>.visaasm   the assembler input
  <PLATFORM>/<kernel>.isa  GenX_IR's vISA binary (absent where GenX_IR rejected the kernel)
  manifest.txt           one line per instruction: kernel, source, document-form text with the
                         variable ids Intel assigned, raw-operand byte offsets
  genx_ir.txt            GenX_IR's exit status and messages per kernel and platform

Usage: tools/intel/regen_visa_binary.py   (needs GenX_IR on PATH; Python 3.11+ for tomllib)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "reference/tests/data/intel-binary"
PLATFORMS = ["SKL", "TGLLP", "DG2"]
# Intel's assembler numbers user variables from 32 in declaration order (V0..V31 are its
# predefined variables; see docs/intel-binary.md).
FIRST_USER_VAR = 32

# Intel's text spells two ops differently; PREDEC has no text form in its lexer.
INTEL_OP = {"imin": "minsint", "imax": "maxsint"}
NO_INTEL_TEXT = {"predec"}
F_OPS = {"fmax", "fmin", "fcmpwr", "fadd", "fsub"}
D_OPS = {"imin", "imax"}

DA = re.compile(
    r"^(?:\((?P<pred>!?P\d+)\)\s+)?DWORD_ATOMIC\.(?P<op>\w+?)(?P<w16>\.16)?\s+\((?P<exec>[^)]*)\)\s+"
    r"(?P<surf>T0|T255)\s+(?P<eo>V\d+)\s+(?P<s0>V\d+)\s+(?P<s1>V\d+)\s+(?P<dst>V\d+)$"
)
S4 = re.compile(
    r"^(?:\((?P<pred>!?P\d+)\)\s+)?SVM_SCATTER4_SCALED\.(?P<ch>[RGBA]+)\s+\((?P<exec>[^)]*)\)\s+"
    r"(?P<addr>V\d+)\s+(?P<eo>V\d+)\s+(?P<src>V\d+)$"
)


ALL_OPS = ["add", "sub", "inc", "dec", "min", "max", "xchg", "cmpxchg", "and", "or", "xor",
           "imin", "imax", "fmax", "fmin", "fcmpwr", "fadd", "fsub"]


def ops_kernel(w16, ops=ALL_OPS, ud=False):
    lines = []
    for op in ops:
        if ud:
            s0, s1, dst = "V11", "V12", "V13"
        elif op in F_OPS:
            s0, s1, dst = "V17", "V18", "V19"
        elif op in D_OPS:
            s0, s1, dst = "V14", "V15", "V16"
        else:
            s0, s1, dst = "V11", "V12", "V13"
        if op in ("inc", "dec"):
            s0 = "V0"
        if op not in ("cmpxchg", "fcmpwr"):
            s1 = "V0"
        w = ".16" if w16 else ""
        lines.append(f"DWORD_ATOMIC.{op}{w} (16) T0 V10 {s0} {s1} {dst}")
    return lines


MASKS = [f"M{n}" for n in range(1, 9)] + [f"M{n}_NM" for n in range(1, 9)]

# (kernel, [(document-form line, raw-operand offsets or None)]).
KERNELS = [
    ("da_ops", ops_kernel(False)),
    # `.16` with every operand UD (what Intel's verifier takes), without the two compare-exchanges;
    # then `.16` with the 32-bit forms' types (DWORD_ATOMIC Notes, 16bit Atomics), and the
    # compare-exchanges: both rejected by GenX_IR (genx_ir.txt), kept as evidence.
    ("da_ops16", ops_kernel(True, [o for o in ALL_OPS if o not in ("cmpxchg", "fcmpwr")], ud=True)),
    ("da_ops16_typed", ops_kernel(True, ["imin", "fmin"])),
    ("da_ops16_cas", ops_kernel(True, ["cmpxchg"], ud=True)),
    ("da_ops16_fcas", ops_kernel(True, ["fcmpwr"], ud=True)),
    ("da_exec_sizes", [f"DWORD_ATOMIC.add ({n}) T0 V10 V11 V0 V13" for n in (1, 2, 4, 8, 16, 32)]),
    ("da_masks", [f"DWORD_ATOMIC.add ({m}, 4) T255 V10 V11 V0 V13" for m in MASKS]),
    ("da_surfaces_preds", [
        "DWORD_ATOMIC.xchg (8) T0 V10 V11 V0 V13",
        "DWORD_ATOMIC.xchg (8) T255 V10 V11 V0 V13",
        "(P1) DWORD_ATOMIC.xchg (8) T0 V10 V11 V0 V13",
        "(!P1) DWORD_ATOMIC.xchg (8) T0 V10 V11 V0 V13",
        "(P2) DWORD_ATOMIC.cmpxchg (8) T255 V10 V11 V12 V0",
        "(!P3) DWORD_ATOMIC.inc (8) T255 V10 V0 V0 V0",
    ]),
    ("da_offsets", [
        ("DWORD_ATOMIC.cmpxchg (8) T0 V10 V11 V12 V13", (32, 64, 96, 0)),
        ("DWORD_ATOMIC.add (8) T255 V10 V11 V0 V13", (0, 32, 0, 96)),
    ]),
    ("s4_channels", [f"SVM_SCATTER4_SCALED.{''.join(c for i, c in enumerate('RGBA') if m >> i & 1)} (16) V20 V21 V22"
                     for m in range(1, 16)]),
    ("s4_exec_masks", [f"SVM_SCATTER4_SCALED.RG ({m}, 8) V20 V21 V22" for m in MASKS]
     + ["SVM_SCATTER4_SCALED.RG (16) V20 V21 V22", "(P1) SVM_SCATTER4_SCALED.A (8) V20 V21 V22",
        "(!P2) SVM_SCATTER4_SCALED.RGBA (M5_NM, 16) V20 V21 V22"]),
    ("s4_offsets", [("SVM_SCATTER4_SCALED.R (8) V20 V21 V22", (0, 64, 128))]),
]


def corpus_kernels():
    """One kernel per corpus case that states `encoding` and expects a valid instruction."""
    out, skipped = [], []
    for rel in ["visa/dword_atomic/encoding.toml", "visa/scatter4/encoding.toml",
                "visa/scatter4/probes.toml"]:
        data = tomllib.loads((ROOT / "spec-cases" / rel).read_text())
        for case in data.get("case", []):
            if "encoding" not in case:
                continue
            src = f"{rel}#{case['name']}"
            if "invalid" in case.get("expect", {}):
                skipped.append((src, "the case's bytes are rejected by the documents: no text form gives them"))
                continue
            text = case["asm"]
            if (m := S4.match(text)) and m["ch"] != "".join(c for c in "RGBA" if c in m["ch"]):
                skipped.append((src, f"`.{m['ch']}` is not in RGBA order: Intel's lexer has no such channel mask (N5)"))
                continue
            out.append(("case_" + case["name"], [text], src))
    return out, skipped


class Kernel:
    def __init__(self, name, lines, source="-"):
        self.name, self.source = name, source
        self.lines = [l if isinstance(l, tuple) else (l, None) for l in lines]
        self.types = {}  # var number -> (type, elements)
        self.preds = set()
        self.body = []
        for text, offs in self.lines:
            self.body.append(self.translate(text, offs))

    def var(self, v, ty, n, off=0):
        k = int(v[1:])
        if k == 0:
            return "%null.0"
        old = self.types.setdefault(k, (ty, n))
        assert old == (ty, n), f"{self.name}: V{k} used as {old} and {(ty, n)}"
        return f"X{k}.{off}"

    def pred(self, p):
        if not p:
            return ""
        self.preds.add(int(p.lstrip("!")[1:]))
        return f"({p}) "

    def translate(self, text, offs):
        if m := DA.match(text):
            op = m["op"]
            assert op not in NO_INTEL_TEXT, op
            ty = "f" if op in F_OPS else "d" if op in D_OPS else "ud"
            if self.name.startswith("da_ops16") and self.name != "da_ops16_typed":
                ty = "ud"
            o = offs or (0, 0, 0, 0)
            surf = "%slm" if m["surf"] == "T0" else "%scratch"
            ex = m["exec"] if "," in m["exec"] else f"M1, {m['exec']}"
            return (f"{self.pred(m['pred'])}dword_atomic.{INTEL_OP.get(op, op)}{m['w16'] or ''} ({ex}) {surf} "
                    f"{self.var(m['eo'], 'ud', 32, o[0])} {self.var(m['s0'], ty, 32, o[1])} "
                    f"{self.var(m['s1'], ty, 32, o[2])} {self.var(m['dst'], ty, 32, o[3])}")
        if m := S4.match(text):
            o = offs or (0, 0, 0)
            assert o[0] == 0
            ex = m["exec"] if "," in m["exec"] else f"M1, {m['exec']}"
            self.var(m["addr"], "uq", 1)
            return (f"{self.pred(m['pred'])}svm_scatter4scaled.{m['ch']} ({ex}) {m['addr'].replace('V', 'X')}(0,0)<0;1,0> "
                    f"{self.var(m['eo'], 'uq', 16, o[1])} {self.var(m['src'], 'ud', 64, o[2])}")
        raise SystemExit(f"{self.name}: cannot translate `{text}`")

    def ids(self):
        return {k: FIRST_USER_VAR + i for i, k in enumerate(sorted(self.types))}

    def visaasm(self):
        align = {"ud": "hword", "d": "hword", "f": "hword", "uq": "hword"}
        decls = [f".decl X{k} v_type=G type={t} num_elts={n} align={'qword' if n == 1 else align[t]}"
                 for k, (t, n) in sorted(self.types.items())]
        decls += [f".decl P{p} v_type=P num_elts=32" for p in sorted(self.preds)]
        body = "\n".join("    " + b for b in self.body)
        return (".version 4.1\n" f".kernel \"{self.name}\"\n" + "\n".join(decls) +
                "\n.kernel_attr Target=\"3d\"\n.function \"_main_0\"\n\n_main_0:\n" + body +
                "\n    ret (M1, 1)\n")

    def manifest(self):
        ids = self.ids()
        out = []
        for text, offs in self.lines:
            doc = re.sub(r"\bV(\d+)\b", lambda m: f"V{ids[int(m[1])]}" if int(m[1]) else "V0", text)
            o = ",".join(map(str, offs)) if offs else "-"
            out.append(f"{self.name}\t{self.source}\t{doc}\t{o}")
        return out


def main():
    if not shutil.which("GenX_IR"):
        sys.exit("GenX_IR not found: apt-get install -y libigc-tools")
    kernels = [Kernel(n, l) for n, l in KERNELS]
    ck, skipped = corpus_kernels()
    kernels += [Kernel(n, l, s) for n, l, s in ck]
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "src").mkdir(parents=True)
    manifest = ["# kernel\tsource\tdocument-form text (Intel's variable ids)\traw-operand byte offsets",
                "# generated by tools/intel/regen_visa_binary.py"]
    manifest += [f"# not assembled: {s}: {why}" for s, why in skipped]
    log = ["# GenX_IR 1.0.12504.6 -binary: exit status and messages per kernel and platform"]
    for k in kernels:
        (OUT / "src" / f"{k.name}.visaasm").write_text(k.visaasm())
        manifest += k.manifest()
        for plat in PLATFORMS:
            with tempfile.TemporaryDirectory() as tmp:
                shutil.copy(OUT / "src" / f"{k.name}.visaasm", tmp)
                r = subprocess.run(["GenX_IR", f"{k.name}.visaasm", "-platform", plat, "-binary"],
                                   cwd=tmp, capture_output=True, text=True)
                msgs = [l.strip() for l in (r.stdout + r.stderr).splitlines()
                        if l.strip() and not l.startswith("GenX_IR ")]
                err = Path(tmp) / f"{k.name}.errors.txt"
                if err.exists():
                    msgs += [l.strip() for l in err.read_text().splitlines() if "Error Message" in l]
                isa = Path(tmp) / f"{k.name}.isa"
                ok = r.returncode == 0 and isa.exists()
                if ok:
                    (OUT / plat).mkdir(exist_ok=True)
                    shutil.copy(isa, OUT / plat / f"{k.name}.isa")
                log.append(f"{plat}\t{k.name}\trc={r.returncode}\t{' | '.join(msgs) or '-'}")
                print(log[-1])
    (OUT / "manifest.txt").write_text("\n".join(manifest) + "\n")
    (OUT / "genx_ir.txt").write_text("\n".join(log) + "\n")


if __name__ == "__main__":
    main()
