#!/usr/bin/env python3
"""Finding intel-visa-1 (docs/findings.md): the vISA binary that Intel's GenX_IR writes (Debian
libigc-tools, IGC 1.0.12504.6) leaves out the last two operands of DWORD_ATOMIC (Src1, Dst) and of
SVM_SCATTER4_SCALED (Element_offset, Src). Standalone: Python's standard library and GenX_IR only
(no atomcts).

  python3 docs/repro/intel-visa-1-binary-drops-operands.py

For each instruction, a kernel of our own (`.version 4.1`, the `.decl`s, the instruction, `ret (M1,
1)`) is assembled with `GenX_IR t.visaasm -platform <P> -binary` (SKL, TGLLP, DG2); the script
reads the instruction stream out of t.isa (container as docs/intel-binary.md describes it: header,
kernel entry with body offset and input offset, then at the input offset the input count, the
stream size and the stream's offset from the body) and compares the instruction's bytes with the
document's Format table:

  vISA DWORD_ATOMIC, Format: Opcode 0x7d, Op, Exec_size, Pred (uw), Surface, Element_offset, Src0,
  Src1, Dst (four raw operands): 30 bytes;
  vISA SVM_SCATTER4_SCALED (SVM, Format): Opcode 0x4e, SVM op 0x07, Exec_size, Pred (uw),
  Channels, Scale (uw), Address (scalar), Element_offset, Src (raw operands): 29 bytes.

The documents give no byte layout of a raw operand or a scalar; the expected bytes use the layouts
Intel writes for the operands it does write (raw operand: variable id ud, byte offset uw; scalar
region: tag, id ud, row, column, region uw), with Intel's variable ids (user variables from 0x20
in declaration order). Intel writes the fields up to the sixth only: after 18 bytes (DWORD_ATOMIC)
or 17 (SCATTER4) the next instruction, `ret` (opcode 0x34), follows, while the stream size still
counts the whole Format and the stream ends in that many zero bytes.

Exits 1 while the binary leaves the operands out, 0 once every instruction holds all its fields,
2 when GenX_IR cannot be run.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

PLATFORMS = ["SKL", "TGLLP", "DG2"]


def raw(var_id, offset=0):
    return struct.pack("<IH", var_id, offset)


CASES = [
    ("DWORD_ATOMIC", "vISA DWORD_ATOMIC, Format (Opcode .. Dst, 30 bytes)",
     ["X10 v_type=G type=ud num_elts=8 align=GRF", "X11 v_type=G type=ud num_elts=8 align=GRF",
      "X12 v_type=G type=ud num_elts=8 align=GRF", "X13 v_type=G type=ud num_elts=8 align=GRF"],
     "dword_atomic.cmpxchg (M1, 8) %scratch X10.0 X11.0 X12.0 X13.0",
     # opcode, op CMPXCHG 0x07, exec size 8 (M1) 0x03, pred none, surface T255 5,
     # Element_offset X10, Src0 X11, Src1 X12, Dst X13
     bytes([0x7d, 0x07, 0x03]) + struct.pack("<H", 0) + bytes([0x05])
     + raw(0x20) + raw(0x21) + raw(0x22) + raw(0x23),
     ["Src1 (X12, id 0x22)", "Dst (X13, id 0x23)"]),
    ("SVM_SCATTER4_SCALED", "vISA SVM_SCATTER4_SCALED, Format (Opcode .. Src, 29 bytes)",
     ["X20 v_type=G type=uq num_elts=1 align=GRF", "X21 v_type=G type=uq num_elts=8 align=GRF",
      "X22 v_type=G type=ud num_elts=16 align=GRF"],
     "svm_scatter4scaled.RG (M1, 8) X20(0,0)<0;1,0> X21.0 X22.0",
     # opcode SVM 0x4e, SCATTER4_SCALED 0x07, exec size 8 0x03, pred none, channels RG 0x03,
     # scale 0, Address X20(0,0)<0;1,0>, Element_offset X21, Src X22
     bytes([0x4e, 0x07, 0x03]) + struct.pack("<H", 0) + bytes([0x03]) + struct.pack("<H", 0)
     + bytes([0x00]) + struct.pack("<I", 0x20) + bytes([0x00, 0x00, 0x21, 0x01])
     + raw(0x21) + raw(0x22),
     ["Element_offset (X21, id 0x21)", "Src (X22, id 0x22)"]),
]
LABEL = bytes([0x30, 0x00, 0x00])  # `_main_0:` (label, uw id 0)
RET = 0x34


def stream_of(isa):
    """The first kernel's instruction stream and its stated size."""
    if isa[:4] != b"CISA":
        raise ValueError("not a vISA binary (magic %r)" % isa[:4])
    o = 8
    (name_len,) = struct.unpack_from("<H", isa, o)
    o += 2 + name_len
    body, _body_size, inputs = struct.unpack_from("<III", isa, o)
    input_count, size, offset = struct.unpack_from("<III", isa, inputs)
    if input_count != 0:
        raise ValueError("kernel has %d inputs (expected none)" % input_count)
    return isa[body + offset:body + offset + size], size


def assemble(platform, decls, line):
    text = ('.version 4.1\n.kernel "t"\n' + "".join(".decl %s\n" % d for d in decls)
            + '.kernel_attr Target="3d"\n.function "_main_0"\n\n_main_0:\n    %s\n    ret (M1, 1)\n' % line)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "t.visaasm"), "w") as f:
            f.write(text)
        p = subprocess.run(["GenX_IR", "t.visaasm", "-platform", platform, "-binary"], cwd=d,
                           capture_output=True, text=True, timeout=120)
        path = os.path.join(d, "t.isa")
        if p.returncode != 0 or not os.path.exists(path):
            raise RuntimeError("GenX_IR -binary failed (exit %d): %s" % (p.returncode, (p.stdout + p.stderr).strip()))
        with open(path, "rb") as f:
            return f.read()


def hexs(b):
    return " ".join("%02x" % x for x in b)


def main():
    if shutil.which("GenX_IR") is None:
        print("cannot run: GenX_IR is not installed (tools/install-implementations.sh intel)", file=sys.stderr)
        return 2
    try:
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libigc-tools"], capture_output=True,
                                 text=True).stdout.strip() or "unknown"
    except OSError:
        version = "unknown"
    print("intel-visa-1 (docs/findings.md): GenX_IR -binary of libigc-tools %s" % version)
    shown = total = 0
    for name, cite, decls, line, want, missing in CASES:
        for platform in PLATFORMS:
            try:
                stream, size = stream_of(assemble(platform, decls, line))
            except (RuntimeError, ValueError, struct.error) as e:
                print("cannot run: %s %s: %s" % (name, platform, e), file=sys.stderr)
                return 2
            total += 1
            got = stream[len(LABEL):len(LABEL) + len(want)]
            # Where Intel's instruction ends: the first `ret` opcode after the fields it writes.
            ends = next((i for i in range(len(LABEL), len(stream)) if stream[i] == RET
                         and stream[i:i + 4] == bytes([RET, 0, 0, 0])), None)
            written = None if ends is None else ends - len(LABEL)
            differs = got != want
            shown += differs
            print("%s %s: %s" % (name, platform, line))
            print("  document: %s: %s" % (cite, hexs(want)))
            print("  GenX_IR:  the same %d bytes of the stream: %s" % (len(want), hexs(got)))
            print("            instruction written in %s bytes, then ret; stream size field %d, stream ends %s" % (
                written, size, hexs(stream[-(len(want) - (written or 0)):]) if written and written < len(want) else "-"))
            print("  -> %s" % ("differs: %s left out" % " and ".join(missing) if differs else "holds every field"))
    print("intel-visa-1: %d of %d binaries leave operands out" % (shown, total))
    return 1 if shown == total else 0


if __name__ == "__main__":
    sys.exit(main())
