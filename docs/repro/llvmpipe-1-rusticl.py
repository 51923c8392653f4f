#!/usr/bin/env python3
# Standalone reproducer written by `atomcts repro` (no atomcts needed to run it).
# case: llvmpipe-1-loop-limit::one_thread_65536_fetch_adds
# adapter: opencl:rusticl (profile spirv; atomcts judged it: fail)
# rule: atomic_fetch_add_explicit (modulo 2^32): one thread's 65,536 fetch-adds of 1 from 0 end at 65,536
#
# Runs the kernel below exactly as atomcts ran it (one launch of 1 work-item(s) in
# work-groups of 1), reads the buffers back, and prints the expected and observed
# words in hex; a word the documents leave partly free is compared on its fixed bits
# only (the mask), and where they allow several values each is listed.
# Exit status: 0 the words match, 1 they differ, 2 it cannot run (driver missing, or it
# does not give the launch what the case requires, such as the sub-group size).
# Environment (the script sets it itself when unset):
#   OCL_ICD_VENDORS=/etc/OpenCL/vendors/rusticl.icd
#   RUSTICL_ENABLE=llvmpipe
# Not judged standalone:
#   - the values each iteration returned: they need atomcts's order checker; this script judges the final memory and the iteration counts only
# Python 3, standard library only: python3 <this script>
#
# The OpenCL C kernel `atomcts_case` as atomcts built it (build options `-cl-std=CL3.0`):
#   // atomcts: llvmpipe-1-loop-limit::one_thread_65536_fetch_adds
#   // concurrent: 1 instructions, one work-group each, launched together; device-scope atomics
#   __constant uint OFF0[1] = {0u}; // byte offsets (lanes 0)
#   __constant uint SRC0_0[1] = {0x00000001u};
#   __kernel void atomcts_case(__global uchar *mem, __global ulong *ret, __global int *ok) {
#       const uint g = get_group_id(0);
#       const uint i = get_local_id(0);
#       __global uint *done = (__global uint *)(mem + 8u); // iterations each work-item executed
#       if (g == 0u && i < 1u) { // add u32
#           for (uint it = 0; it < 65536u; it++) {
#               uint old = 0;
#               int success = 1;
#               old = atomic_fetch_add_explicit((volatile __global atomic_uint *)(mem + OFF0[i]), SRC0_0[i], memory_order_relaxed, memory_scope_work_group);
#               ret[0u + it * 1u + i] = (ulong)old;
#               ok[0u + it * 1u + i] = success;
#               done[0u + i] = it + 1u; // iterations executed (issue 30)
#           }
#       }
#   }

import ctypes, os, sys

CASE = "llvmpipe-1-loop-limit::one_thread_65536_fetch_adds"
RULE = "atomic_fetch_add_explicit (modulo 2^32): one thread's 65,536 fetch-adds of 1 from 0 end at 65,536"
ADAPTER = "opencl:rusticl"
ENV = {
    "OCL_ICD_VENDORS": "/etc/OpenCL/vendors/rusticl.icd",
    "RUSTICL_ENABLE": "llvmpipe",
}
GLOBAL_SIZE = 1
LOCAL_SIZE = 1
# The kernel's arguments in order: ("buffer", name, initial bytes), ("u32", value), ("u64", value), ("local", bytes).
ARGS = [
    ("buffer", "mem", bytes(16)),
    ("buffer", "ret", bytes(524288)),
    ("buffer", "ok", bytes(262144)),
]
# The words compared: (label, argument, byte offset, bytes, mask of fixed bits, allowed values).
CHECKS = [
    ("global 0x10000000", 0, 0, 4, 0xffffffff, [0x00010000]),
    ("iterations executed, instruction 0 work-item 0", 0, 8, 4, 0xffffffff, [0x00010000]),
]
# What the launch must have been given (the sub-group size each work-item ran in), as CHECKS:
# a value outside those allowed means the driver did not run the case as it needs (exit 2).
REQUIRED = [
]
UNJUDGED = [
    "the values each iteration returned: they need atomcts's order checker; this script judges the final memory and the iteration counts only",
]


class Unavailable(Exception):
    pass


PATTERN = "rusticl"
SOURCE = "// atomcts: llvmpipe-1-loop-limit::one_thread_65536_fetch_adds\n// concurrent: 1 instructions, one work-group each, launched together; device-scope atomics\n__constant uint OFF0[1] = {0u}; // byte offsets (lanes 0)\n__constant uint SRC0_0[1] = {0x00000001u};\n__kernel void atomcts_case(__global uchar *mem, __global ulong *ret, __global int *ok) {\n    const uint g = get_group_id(0);\n    const uint i = get_local_id(0);\n    __global uint *done = (__global uint *)(mem + 8u); // iterations each work-item executed\n    if (g == 0u && i < 1u) { // add u32\n        for (uint it = 0; it < 65536u; it++) {\n            uint old = 0;\n            int success = 1;\n            old = atomic_fetch_add_explicit((volatile __global atomic_uint *)(mem + OFF0[i]), SRC0_0[i], memory_order_relaxed, memory_scope_work_group);\n            ret[0u + it * 1u + i] = (ulong)old;\n            ok[0u + it * 1u + i] = success;\n            done[0u + i] = it + 1u; // iterations executed (issue 30)\n        }\n    }\n}\n"
OPTIONS = "-cl-std=CL3.0"
ENTRY = "atomcts_case"

CL_PLATFORM_NAME = 0x0902
CL_DEVICE_NAME = 0x102B
CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
CL_PROGRAM_BUILD_LOG = 0x1183
CL_MEM_READ_WRITE = 1 << 0
CL_MEM_COPY_HOST_PTR = 1 << 5


def run():
    try:
        cl = ctypes.CDLL("libOpenCL.so.1")
    except OSError as e:
        raise Unavailable(f"no OpenCL ICD loader (libOpenCL.so.1): {e}")
    vp = ctypes.c_void_p
    for f in ("clCreateContext", "clCreateCommandQueue", "clCreateProgramWithSource",
              "clCreateKernel", "clCreateBuffer"):
        getattr(cl, f).restype = vp
    err = ctypes.c_int(0)

    def check(status, what):
        if status != 0:
            raise RuntimeError(f"{what}: error {status}")

    def info(fn, obj, param):
        size = ctypes.c_size_t(0)
        if fn(vp(obj), ctypes.c_uint(param), ctypes.c_size_t(0), None, ctypes.byref(size)) != 0:
            return ""
        buf = ctypes.create_string_buffer(size.value)
        fn(vp(obj), ctypes.c_uint(param), size, buf, None)
        return buf.value.decode(errors="replace")

    n = ctypes.c_uint(0)
    if cl.clGetPlatformIDs(0, None, ctypes.byref(n)) != 0 or n.value == 0:
        raise Unavailable("the OpenCL loader offers no platform (is the driver's ICD installed?)")
    platforms = (vp * n.value)()
    check(cl.clGetPlatformIDs(n, platforms, None), "clGetPlatformIDs")
    device, seen = None, []
    for p in platforms:
        pname = info(cl.clGetPlatformInfo, p, CL_PLATFORM_NAME)
        nd = ctypes.c_uint(0)
        if cl.clGetDeviceIDs(vp(p), ctypes.c_ulong(CL_DEVICE_TYPE_ALL), 0, None, ctypes.byref(nd)) != 0:
            continue
        ids = (vp * nd.value)()
        cl.clGetDeviceIDs(vp(p), ctypes.c_ulong(CL_DEVICE_TYPE_ALL), nd, ids, None)
        for d in ids:
            dname = info(cl.clGetDeviceInfo, d, CL_DEVICE_NAME)
            if PATTERN in pname.lower() or PATTERN in dname.lower():
                device = d
                print(f"device: {pname} / {dname}")
                break
            seen.append(f"{pname} / {dname}")
        if device is not None:
            break
    if device is None:
        raise Unavailable(f"no OpenCL platform or device matches {PATTERN!r} (have: {'; '.join(seen) or 'none'})")
    dev = (vp * 1)(device)
    ctx = cl.clCreateContext(None, 1, dev, None, None, ctypes.byref(err))
    check(err.value, "clCreateContext")
    queue = cl.clCreateCommandQueue(vp(ctx), vp(device), ctypes.c_ulong(0), ctypes.byref(err))
    check(err.value, "clCreateCommandQueue")
    src = ctypes.c_char_p(SOURCE.encode())
    prog = cl.clCreateProgramWithSource(vp(ctx), 1, ctypes.byref(src), None, ctypes.byref(err))
    check(err.value, "clCreateProgramWithSource")
    status = cl.clBuildProgram(vp(prog), 1, dev, OPTIONS.encode(), None, None)
    if status != 0:
        size = ctypes.c_size_t(0)
        cl.clGetProgramBuildInfo(vp(prog), vp(device), ctypes.c_uint(CL_PROGRAM_BUILD_LOG), ctypes.c_size_t(0), None, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value + 1)
        cl.clGetProgramBuildInfo(vp(prog), vp(device), ctypes.c_uint(CL_PROGRAM_BUILD_LOG), size, log, None)
        raise RuntimeError(f"clBuildProgram: error {status}: {log.value.decode(errors='replace')}")
    kernel = cl.clCreateKernel(vp(prog), ENTRY.encode(), ctypes.byref(err))
    check(err.value, "clCreateKernel")
    mems, hosts = [], []
    for i, arg in enumerate(ARGS):
        if arg[0] == "buffer":
            host = ctypes.create_string_buffer(arg[2], len(arg[2]))
            m = cl.clCreateBuffer(vp(ctx), ctypes.c_ulong(CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR),
                                  ctypes.c_size_t(len(arg[2])), host, ctypes.byref(err))
            check(err.value, f"clCreateBuffer {arg[1]}")
            handle = vp(m)
            check(cl.clSetKernelArg(vp(kernel), i, ctypes.c_size_t(ctypes.sizeof(vp)), ctypes.byref(handle)), f"clSetKernelArg {i}")
            mems.append(m)
            hosts.append(host)
        elif arg[0] == "u32":
            v = ctypes.c_uint(arg[1])
            check(cl.clSetKernelArg(vp(kernel), i, ctypes.c_size_t(4), ctypes.byref(v)), f"clSetKernelArg {i}")
            mems.append(None)
            hosts.append(None)
        else:
            check(cl.clSetKernelArg(vp(kernel), i, ctypes.c_size_t(arg[1]), None), f"clSetKernelArg {i} (__local)")
            mems.append(None)
            hosts.append(None)
    gsize = (ctypes.c_size_t * 1)(GLOBAL_SIZE)
    lsize = (ctypes.c_size_t * 1)(LOCAL_SIZE)
    check(cl.clEnqueueNDRangeKernel(vp(queue), vp(kernel), 1, None, gsize, lsize, 0, None, None), "clEnqueueNDRangeKernel")
    out = []
    for m, host, arg in zip(mems, hosts, ARGS):
        if m is None:
            out.append(None)
            continue
        check(cl.clEnqueueReadBuffer(vp(queue), vp(m), 1, ctypes.c_size_t(0), ctypes.c_size_t(len(arg[2])), host, 0, None, None), "clEnqueueReadBuffer")
        out.append(host.raw[:len(arg[2])])
    check(cl.clFinish(vp(queue)), "clFinish")
    return out


def main():
    for k, v in ENV.items():
        os.environ.setdefault(k, v)
    print(f"case: {CASE}")
    print(f"rule: {RULE}")
    print(f"adapter: {ADAPTER}")
    try:
        buffers = run()
    except (Unavailable, RuntimeError, OSError) as e:
        print(f"cannot run: {e}", file=sys.stderr)
        return 2
    for label, arg, offset, nbytes, mask, allowed in REQUIRED:
        seen = int.from_bytes(buffers[arg][offset:offset + nbytes], "little")
        if not any((seen ^ a) & mask == 0 for a in allowed):
            want = " or ".join(str(a) for a in allowed)
            print(f"cannot run: {label} is {seen} where the kernel requires {want}: the driver did not run the launch the case needs", file=sys.stderr)
            return 2
    if REQUIRED:
        print(f"launch as required: {len(REQUIRED)} requirement(s) held ({REQUIRED[0][0]}: {REQUIRED[0][5][0]}, ...)")
    differ = 0
    print(f"{'word':<48} {'expected':<24} {'observed':<20}")
    for label, arg, offset, nbytes, mask, allowed in CHECKS:
        data = buffers[arg]
        seen = int.from_bytes(data[offset:offset + nbytes], "little")
        ok = any((seen ^ a) & mask == 0 for a in allowed)
        digits = 2 * nbytes
        if len(allowed) <= 4:
            exp = " or ".join(f"0x{a:0{digits}x}" for a in allowed)
        else:
            exp = f"one of {len(allowed)} values (CHECKS)"
        if mask != (1 << (8 * nbytes)) - 1:
            exp += f" (bits 0x{mask:0{digits}x})"
        mark = "" if ok else "   <-- differs"
        print(f"{label:<48} {exp:<24} 0x{seen:0{digits}x}{mark}")
        if not ok:
            differ += 1
    for u in UNJUDGED:
        print(f"not judged: {u}")
    if differ:
        print(f"{differ} word(s) differ from what the documents allow: {RULE}")
        return 1
    print("every judged word is what the documents allow")
    return 0


if __name__ == "__main__":
    sys.exit(main())
