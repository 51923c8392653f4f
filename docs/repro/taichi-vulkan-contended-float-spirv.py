#!/usr/bin/env python3
"""Finding taichi-3 (docs/findings.md), its cause: the SPIR-V Taichi 1.7.4 emits for the f64
atomic_add of taichi-vulkan-contended-float-returns.py, disassembled, then run again on lavapipe
with the instruction after the compare-exchange loop changed. Needs taichi, spirv-as, spirv-dis.

  target/venv/bin/python docs/repro/taichi-vulkan-contended-float-spirv.py

Taichi's offline cache (a .tic file: JSON, then the body, then the SHA-256 of both) holds the
kernel's SPIR-V; this script rewrites it there, fixes the lengths and the hash, and runs the
kernel from the cache. Each variant runs 20 times; memory 1.0, operands 0.25 and -0.5.
  as emitted : the loop's result (%96, the compare-exchange's return) used after the loop
  load-after : the plain load of the successful attempt (%92) used after the loop
  load-inside: the same load written to out[] inside the loop, on the success path, then break
  cas-inside : the compare-exchange's return written to out[] inside the loop, then break
Exit 1 while a value used after the loop differs from the same value written inside it.
"""
import glob
import hashlib
import os
import struct
import subprocess
import sys
import tempfile


MAGIC = struct.pack("<I", 0x07230203)


def locate(d):
    hl = struct.unpack("<Q", d[8:16])[0]
    i = d.find(MAGIC)
    return 24 + hl, i, struct.unpack("<Q", d[i - 8:i])[0]


def extract(cache, asm):
    d = open(glob.glob(cache + "/*.tic")[0], "rb").read()
    _, i, n = locate(d)
    spv = asm[:-7] + "spv"
    open(spv, "wb").write(d[i:i + 4 * n])
    subprocess.run(["spirv-dis", spv, "-o", asm], check=True)
    return open(asm).read()


def replace(cache, text, tmp):
    src, spv = os.path.join(tmp, "v.spvasm"), os.path.join(tmp, "v.spv")
    open(src, "w").write(text)
    subprocess.run(["spirv-as", "--target-env", "spv1.5", src, "-o", spv], check=True)
    new = open(spv, "rb").read()
    f = glob.glob(cache + "/*.tic")[0]
    d = open(f, "rb").read()
    body_start, i, _ = locate(d)
    rest = d[body_start + 8:i - 8] + struct.pack("<Q", len(new) // 4) + new
    body = struct.pack("<Q", len(rest) + 8) + rest
    payload = d[24:body_start] + body
    out = d[:16] + struct.pack("<Q", len(body)) + payload
    open(f, "wb").write(out + hashlib.sha256(payload).hexdigest().encode())
    tcb = os.path.join(cache, "ticache.tcb")
    t = open(tcb, "rb").read()
    open(tcb, "wb").write(t.replace(struct.pack("<Q", len(d)), struct.pack("<Q", len(out))))


RUN = r"""
import sys, numpy as np, taichi as ti
ti.init(arch=ti.vulkan, log_level=ti.ERROR, offline_cache=True, offline_cache_file_path=sys.argv[1])
@ti.kernel
def add(mem: ti.types.ndarray(), b: ti.types.ndarray(), out: ti.types.ndarray()):
    for i in range(b.shape[0]):
        out[i] = ti.atomic_add(mem[0], b[i])
seen = set()
for t in range(20):
    mem = np.array([1.0]); b = np.array([0.25, -0.5]); out = np.zeros(2)
    add(mem, b, out); ti.sync(); seen.add((tuple(out.tolist()), float(mem[0])))
print(sorted(seen))
"""


def run(cache, tmp):
    script = os.path.join(tmp, "run_kernel.py")  # Taichi reads a kernel's source from its file
    open(script, "w").write(RUN)
    r = subprocess.run([sys.executable, script, cache], capture_output=True, text=True,
                       check=True)
    return eval(r.stdout.strip().splitlines()[-1])


TAIL = """   %tmp9_f64 = OpBitcast %double %96
        %100 = OpAccessChain %_ptr_Uniform_int %args %int_2 %int_0 %int_0
%tmp11_size0__i32 = OpLoad %int %100
        %111 = OpAccessChain %_ptr_StorageBuffer_ulong %ext_arr_buffer_2_u64 %int_0 %67
        %112 = OpBitcast %ulong %tmp9_f64
               OpStore %111 %112
"""
BRANCH = "               OpBranchConditional %97 %88 %89\n         %88 = OpLabel\n"


def inside(text, value):
    text = text.replace(TAIL, "")
    return text.replace(BRANCH, (
        "               OpBranchConditional %97 %ok %89\n         %ok = OpLabel\n"
        "        %111 = OpAccessChain %_ptr_StorageBuffer_ulong %ext_arr_buffer_2_u64 %int_0 %67\n"
        "               OpStore %111 " + value + "\n               OpBranch %88\n"
        "         %88 = OpLabel\n"))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        run(base, tmp)
        text = extract(base, os.path.join(tmp, "base.spvasm"))
        body = text[text.index("         %86 = OpLabel"):text.index("         %89 = OpLabel")]
        print("Taichi's loop for ti.atomic_add(mem[0], b[i]) on f64 (spirv-dis):")
        print(body)
        if TAIL not in text or BRANCH not in text:
            print("the SPIR-V is not the one this script knows (another Taichi?)")
            return 2
        variants = [
            ("as emitted", text),
            ("load-after", text.replace("%tmp9_f64 = OpBitcast %double %96",
                                        "%tmp9_f64 = OpBitcast %double %92")),
            ("load-inside", inside(text, "%92")),
            ("cas-inside", inside(text, "%96")),
        ]
        results = {}
        for name, v in variants:
            cache = os.path.join(tmp, name.replace(" ", "_"))
            subprocess.run(["cp", "-r", base, cache], check=True)
            replace(cache, v, tmp)
            results[name] = run(cache, tmp)
            print("%-11s: out, memory seen in 20 launches: %s" % (name, results[name]))
        differs = (results["as emitted"] != results["cas-inside"]
                   or results["load-after"] != results["load-inside"])
        return 1 if differs else 0


sys.exit(main())
