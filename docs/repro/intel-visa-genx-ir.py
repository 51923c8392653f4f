#!/usr/bin/env python3
"""Findings intel-visa-2 .. intel-visa-10 (docs/findings.md): where Intel's vISA assembler,
verifier and finalizer GenX_IR (Debian libigc-tools, IGC 1.0.12504.6) differs from the vISA
documents on our own minimal DWORD_ATOMIC and SVM_SCATTER4_SCALED kernels. Standalone: Python's
standard library and GenX_IR only (no atomcts).

  python3 docs/repro/intel-visa-genx-ir.py intel-visa-N      (N = 2 .. 10)

For each check: the kernel (`.version 4.1`, `.kernel "t"`, the `.decl`s, `.kernel_attr
Target="3d"`, `.function "_main_0"`, `_main_0:`, the instruction, `ret (M1, 1)`) is written to a
fresh directory and given to `GenX_IR t.visaasm -platform <P> -output`; the script prints what the
document says (with its section) and what GenX_IR did: its exit status, its messages (standard
output and error less its echo of the command line and its pointers to t.errors.txt, plus the
`Error Message:` lines of t.errors.txt) and the atomic's `send` line of t.asm (IGA's decoding).
Checks marked `control` show the same tool agreeing with the document next to the difference;
they are printed, not counted.

Exit status: 1 while every check of the finding still shows the difference; 0 once none does,
or once some no longer do (printed: the finding needs updating either way); 2 when GenX_IR
cannot be run.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

GRF = "align=GRF"


def g(name, typ, n, align=GRF):
    """A general variable's .decl."""
    return "%s v_type=G type=%s num_elts=%d %s" % (name, typ, n, align)


def da(typ10="ud", typ11="ud", typ13="ud", n=4, extra=()):
    """The .decls of a DWORD_ATOMIC kernel: X10 offsets, X11 Src0, X12 Src1, X13 Dst."""
    return [g("X10", typ10, n), g("X11", typ11, n), g("X12", typ11, n), g("X13", typ13, n)] + list(extra)


def s4(addr="uq", off="uq", src="ud", n_off=16, n_src=64):
    """The .decls of an SVM_SCATTER4_SCALED kernel: X20 Address, X21 Element_offset, X22 Src."""
    return [g("X20", addr, 1), g("X21", off, n_off), g("X22", src, n_src)]


class Result:
    def __init__(self, rc, messages, sends, code):
        self.rc, self.messages, self.sends, self.code = rc, messages, sends, code

    @property
    def accepted(self):
        """Accepted: exit status 0 and no message."""
        return self.rc == 0 and not self.messages

    def said(self, text):
        return any(text in m for m in self.messages)

    def describe(self):
        parts = ["exit %d" % self.rc]
        parts.append("messages: " + " | ".join(self.messages) if self.messages else "no message")
        if self.sends:
            parts.append("send: " + " || ".join(re.sub(r"\s+", " ", s).strip() for s in self.sends))
        return "; ".join(parts)


def used(decls, line):
    """The .decls of the variables the instruction names (the kernel declares nothing else)."""
    return [d for d in decls if re.search(r"\b%s\b" % re.escape(d.split()[0]), line)]


def genx_ir(platform, decls, line):
    text = ('.version 4.1\n.kernel "t"\n' + "".join(".decl %s\n" % d for d in used(decls, line))
            + '.kernel_attr Target="3d"\n.function "_main_0"\n\n_main_0:\n    %s\n    ret (M1, 1)\n' % line)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.visaasm"), "w") as f:
            f.write(text)
        p = subprocess.run(["GenX_IR", "t.visaasm", "-platform", platform, "-output"], cwd=d,
                           capture_output=True, text=True, timeout=120)
        messages = []
        for ln in (p.stdout + "\n" + p.stderr).splitlines():
            ln = ln.strip()
            if (not ln or ln.startswith("GenX_IR t.visaasm") or ln.startswith("Found a total of")
                    or ln in ("Please check", "t.errors.txt", "for the exact error messages")
                    or ln == "[vISA Finalizer Messages]"):
                continue
            # The finalizer may print a message at the end of the last line of t.asm's echo.
            messages.append(ln)
        try:
            with open(os.path.join(d, "t.errors.txt")) as f:
                messages += [ln.split("Error Message:", 1)[1].strip() for ln in f if "Error Message:" in ln]
        except FileNotFoundError:
            pass
        code = []
        try:
            with open(os.path.join(d, "t.asm")) as f:
                code = [ln.rstrip() for ln in f if ln.strip() and not ln.lstrip().startswith("//")]
        except FileNotFoundError:
            pass
        sends = [ln for ln in code if re.search(r"\bsends?\b|\bsend\.", ln) and "EOT" not in ln]
        return Result(p.returncode, messages, sends, code)


def send_has(r, text):
    return any(text in s for s in r.sends)


def writes(r, reg):
    """Whether an instruction before the atomic's send writes register `reg` (its destination)."""
    for ln in r.code:
        if ln in r.sends:
            return False
        if re.search(r"\)\s+%s\.\d+<" % reg, ln):
            return True
    return False


# finding -> (title, [(platform, decls, instruction, document, test, control?)]); `test` is true
# while GenX_IR shows the difference (for a control: while it agrees with the document).
FINDINGS = {
    "intel-visa-2": ("`.16` with the 32-bit forms' operand types, and `.16` compare-exchange, are rejected", [
        ("TGLLP", da("ud", "d", "d"), "dword_atomic.minsint.16 (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Notes, 16bit Atomics: operand types remain those of the 32-bit atomics "
         "(IMIN/IMAX: D): accepted",
         lambda r: r.rc != 0 and r.said("has incorrect type"), False),
        ("TGLLP", da("ud", "f", "f"), "dword_atomic.fmin.16 (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Notes, 16bit Atomics: operand types remain those of the 32-bit atomics "
         "(float ops: F): accepted",
         lambda r: r.rc != 0 and r.said("has incorrect type"), False),
        ("TGLLP", da(), "dword_atomic.cmpxchg.16 (4) %slm X10.0 X11.0 X12.0 X13.0",
         "vISA DWORD_ATOMIC, DWORD_ATOMIC_OP table (CMPXCHG uses Src1) and Op bit 5 (.16, TGLLP+): accepted",
         lambda r: r.rc != 0 and r.said("must be V0"), False),
        ("TGLLP", da("ud", "f", "f"), "dword_atomic.fcmpwr.16 (4) %slm X10.0 X11.0 X12.0 X13.0",
         "vISA DWORD_ATOMIC, DWORD_ATOMIC_OP table (FCMPWR uses Src1) and Op bit 5 (.16, TGLLP+): accepted",
         lambda r: r.rc != 0 and r.said("must be V0"), False),
        ("TGLLP", da("ud", "d", "d"), "dword_atomic.minsint (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Notes: IMIN/IMAX take D (the 32-bit form): accepted",
         lambda r: r.accepted, True),
    ]),
    "intel-visa-3": ("accepted forms the document excludes", [
        ("SKL", da(extra=["T6 v_type=T num_elts=1"]), "dword_atomic.add (4) T6 X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Surface: only 0 (T0, SLM) and 5 (T255, stateless): rejected "
         "(a declared surface is the first user surface, id 6)",
         lambda r: r.accepted, False),
        ("SKL", da("ud", "f", "f"), "dword_atomic.fadd (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, DWORD_ATOMIC_OP table: no FADD: rejected",
         lambda r: r.accepted, False),
        ("SKL", da("ud", "f", "f"), "dword_atomic.fsub (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, DWORD_ATOMIC_OP table: no FSUB: rejected",
         lambda r: r.accepted, False),
        ("SKL", da(), "dword_atomic.inc.16 (4) %slm X10.0 %null.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Op bit 5 (.16): {TGLLP+}, not on SKL: rejected",
         lambda r: r.accepted, False),
    ]),
    "intel-visa-4": ("exec-mask controls at an offset the exec size cannot start at are replaced by M1", [
        ("SKL", da(n=32), "dword_atomic.add (M2, 8) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: bits 7..4 allow M1..M8_NM with every size: M2 kept "
         "(a send at channel offset 4 under knob N2 visa.emask_group = 4), not (8|M0)",
         lambda r: send_has(r, "(8|M0)") and r.said("Invalid emask"), False),
        ("SKL", da(n=32), "dword_atomic.add (M2_NM, 8) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: M2_NM kept: a NoMask send ((W)) at channel offset 4, not (8|M0)",
         lambda r: send_has(r, "(8|M0)") and not any(s.lstrip().startswith("(W)") for s in r.sends)
         and r.said("Invalid emask"), False),
        ("PVC", da(n=32), "dword_atomic.add (M2, 4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: M2 kept (channel offset 4), not (4|M0)",
         lambda r: send_has(r, "(4|M0)"), False),
        ("SKL", da(n=32), "dword_atomic.add (M2, 4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: M2 kept: (4|M4)",
         lambda r: r.accepted and send_has(r, "(4|M4)"), True),
    ]),
    "intel-visa-5": ("SVM_SCATTER4_SCALED on PVC reads the second channel from src[8..15] at exec size 8", [
        ("PVC", [g("X20", "uq", 1, "align=qword"), g("X21", "uq", 16, "align=hword"), g("X22", "ud", 64, "align=hword")],
         "svm_scatter4scaled.RG (M1, 8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Semantics: ch_start = ch_pos * max(exec_size, GRF_SIZE / 4) = 16 "
         "for G on PVC (64-byte GRF): R from src[0..7], G from src[16..23]; not one GRF of data that "
         "is X22's first (r4 = src[0..15], G from src[8..15])",
         lambda r: (r.accepted and send_has(r, "wr:1+1") and send_has(r, " r4:1 ") and send_has(r, "write with xy")
                    and not writes(r, "r4")), False),
        ("SKL", [g("X20", "uq", 1, "align=qword"), g("X21", "uq", 16, "align=hword"), g("X22", "ud", 64, "align=hword")],
         "svm_scatter4scaled.RG (M1, 8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Semantics: ch_start = 8 for G on a 32-byte GRF: data two GRFs (wr:2+2)",
         lambda r: r.accepted and send_has(r, "wr:2+2"), True),
    ]),
    "intel-visa-6": ("operands shorter than the exec size are accepted", [
        ("SKL", da(n=2), "dword_atomic.add (8) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format: Element_offset, Src0 and Dst hold Exec_size elements (8 here; "
         "the variables have 2): rejected",
         lambda r: r.accepted, False),
        ("SKL", s4(n_src=8), "svm_scatter4scaled.RG (8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format: Src holds Exec_size elements per enabled channel (16 for "
         ".RG (8); the variable has 8): rejected",
         lambda r: r.accepted, False),
    ]),
    "intel-visa-7": ("V0 where the op needs a source, and a source where `.16` INC needs V0, are accepted", [
        ("SKL", da(), "dword_atomic.add (4) %slm X10.0 %null.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Src0: V0 only for INC, DEC and PREDEC: rejected",
         lambda r: r.accepted, False),
        ("SKL", da(), "dword_atomic.cmpxchg (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Src1: used by CMPXCHG and FCMPWR (not V0): rejected",
         lambda r: r.accepted, False),
        ("TGLLP", da(), "dword_atomic.inc.16 (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Src0: V0 for INC (with .16 as without): rejected",
         lambda r: r.accepted, False),
        ("TGLLP", da(), "dword_atomic.inc (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Src0: V0 for INC: rejected",
         lambda r: r.rc != 0 and r.said("must be V0"), True),
    ]),
    "intel-visa-8": ("operand types the documents exclude are accepted", [
        ("SKL", da("ud", "d", "d"), "dword_atomic.add (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Notes: operations other than IMIN/IMAX and the float ops take UD: rejected",
         lambda r: r.accepted, False),
        ("SKL", s4(addr="ud", n_off=8, n_src=8), "svm_scatter4scaled.R (8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Address: type UQ: rejected",
         lambda r: r.accepted, False),
        ("SKL", s4(off="ud", n_off=8, n_src=8), "svm_scatter4scaled.R (8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Element_offset: type UQ: rejected",
         lambda r: r.accepted, False),
        ("SKL", s4(src="hf", n_off=8, n_src=8), "svm_scatter4scaled.R (8) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Src: type UD, D or F: rejected",
         lambda r: r.accepted, False),
        ("SKL", da("ud", "d", "d"), "dword_atomic.and (4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Notes: AND takes UD: rejected",
         lambda r: r.rc != 0 and r.said("has incorrect type"), True),
    ]),
    "intel-visa-9": ("exec sizes the documents exclude are accepted, or stop SKL's finalizer", [
        ("SKL", s4(n_off=4, n_src=16), "svm_scatter4scaled.RGBA (4) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Exec_size: 8 or 16 only: rejected",
         lambda r: r.accepted and send_has(r, "(4|M0)"), False),
        ("TGLLP", s4(n_off=4, n_src=16), "svm_scatter4scaled.RGBA (4) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Exec_size: 8 or 16 only: rejected",
         lambda r: r.accepted, False),
        ("DG2", s4(n_off=4, n_src=16), "svm_scatter4scaled.RGBA (4) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Exec_size: 8 or 16 only: rejected",
         lambda r: r.accepted, False),
        ("TGLLP", s4(n_off=32, n_src=128), "svm_scatter4scaled.RGBA (32) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Exec_size: 8 or 16 only: rejected",
         lambda r: r.accepted, False),
        ("SKL", s4(n_off=1, n_src=4), "svm_scatter4scaled.RGBA (1) X20(0,0)<0;1,0> X21.0 X22.0",
         "vISA SVM_SCATTER4_SCALED, Format, Exec_size: 8 or 16 only: rejected as an invalid exec size",
         lambda r: r.rc == 0 and r.said("must be GRF-aligned") and not r.said("invalid execution size"), False),
        ("SKL", da(n=32), "dword_atomic.add (32) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: 1, 2, 4, 8, 16 (the 2020-2022 copy; knob N1 "
         "visa.exec_size_32, whose `allow` is the IGC 1.0.12504 copy): rejected by the default profile",
         lambda r: r.accepted and send_has(r, "(32|M0)"), False),
    ]),
    "intel-visa-10": ("a mask control that is no `M<n>` is an invalid execution offset, not a syntax error", [
        ("SKL", da(), "dword_atomic.add (Q1, 4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Text: the grammar has no Q1 mask: a syntax error",
         lambda r: r.rc != 0 and r.said("invalid execution offset info") and not r.said("syntax error"), False),
        ("SKL", da(), "dword_atomic.add (M9, 4) %slm X10.0 X11.0 %null.0 X13.0",
         "vISA DWORD_ATOMIC, Format, Exec_size: masks M1..M8 only: an invalid mask",
         lambda r: r.rc != 0 and r.said("invalid execution offset info"), True),
    ]),
}


def igc_version():
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libigc-tools"], capture_output=True,
                              text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in FINDINGS:
        print("usage: intel-visa-genx-ir.py %s" % "|".join(FINDINGS), file=sys.stderr)
        return 2
    if shutil.which("GenX_IR") is None:
        print("cannot run: GenX_IR is not installed (tools/install-implementations.sh intel)", file=sys.stderr)
        return 2
    finding = sys.argv[1]
    title, checks = FINDINGS[finding]
    print("%s (docs/findings.md): %s; GenX_IR of libigc-tools %s" % (finding, title, igc_version()))
    shown = counted = 0
    for platform, decls, line, document, test, control in checks:
        r = genx_ir(platform, decls, line)
        print("%s %s: %s" % ("control" if control else "check", platform, line))
        print("  decls:    %s" % "; ".join(used(decls, line)))
        print("  document: %s" % document)
        print("  GenX_IR:  %s" % r.describe())
        if control:
            print("  -> %s" % ("agrees with the document (control)" if test(r) else "CONTROL CHANGED: check the finding"))
            continue
        counted += 1
        shown += bool(test(r))
        print("  -> %s" % ("differs" if test(r) else "no longer differs as docs/findings.md says"))
    print("%s: %d of %d checks show the difference" % (finding, shown, counted))
    if 0 < shown < counted:
        print("%s: PARTLY FIXED or changed: update docs/findings.md" % finding)
    return 1 if shown == counted else 0


if __name__ == "__main__":
    sys.exit(main())
