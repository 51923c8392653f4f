//! The OpenCL back end's standalone reproducer (issue 30, point 5): the kernel arguments of a
//! launch as [`super::run::Device::run_ndrange`] sets them ([`args`]), and the Python host code
//! that makes the same launch through `libOpenCL.so.1` with ctypes ([`script`]).

use super::emit::{KERNEL_NAME, Kernel};
use crate::repro::{About, Arg, Dispatch, Program, py_str, script as shared_script};
use crate::shuffle::ShufflePlan;

/// The arguments [`super::run::Device::run_ndrange`] gives `kernel` on `mem` with `slots`
/// returned values: `mem`, `ret` (8 bytes a slot), `ok` (4 bytes a slot), then, for a shape
/// kernel, `IDX`, `SRC0`, `SRC1` (the datum's width each), `N`, `OP`, and for shared memory the
/// `__local` copy and its element count; for a concurrent case's kernel its parameter buffer
/// `P`.
pub fn args(kernel: &Kernel, mem: &[u8], slots: usize) -> Vec<Arg> {
    let n = slots.max(1);
    let mut out = vec![
        Arg::Buffer {
            name: "mem".into(),
            init: mem.to_vec(),
        },
        Arg::Buffer {
            name: "ret".into(),
            init: vec![0; 8 * n],
        },
        Arg::Buffer {
            name: "ok".into(),
            init: vec![0; 4 * n],
        },
    ];
    if let Some(p) = &kernel.params {
        let bytes: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.push(Arg::Buffer {
            name: "P".into(),
            init: if bytes.is_empty() { vec![0; 8] } else { bytes },
        });
    }
    if let Some(a) = &kernel.args {
        let width = (kernel.elem_bytes as usize).clamp(1, 8);
        let words = |v: &[u64]| crate::back::le_bytes(width as u64, v);
        let idx: Vec<u8> = a.idx.iter().flat_map(|x| x.to_le_bytes()).collect();
        for (name, bytes) in [
            ("IDX", idx),
            ("SRC0", words(&a.src0)),
            ("SRC1", words(&a.src1)),
        ] {
            out.push(Arg::Buffer {
                name: name.into(),
                init: if bytes.is_empty() { vec![0; 8] } else { bytes },
            });
        }
        out.push(Arg::U32(u32::try_from(a.idx.len()).unwrap_or(u32::MAX)));
        out.push(Arg::U32(a.op.unwrap_or(0)));
        if let Some(lb) = a.local_bytes {
            out.push(Arg::Local(lb.max(1)));
            out.push(Arg::U32(
                u32::try_from(lb / kernel.elem_bytes.max(1)).unwrap_or(u32::MAX),
            ));
        }
    }
    out
}

/// The [`Dispatch`] of the SIMD-group function `plan` as the back end runs its `kernel`: one
/// work-group of the plan's threads (the sub-group size required in the source by
/// `intel_reqd_sub_group_size`), each thread's result in `ret` (8 bytes a thread) and the
/// sub-group size it ran in in `ok` (a requirement of the launch: the script cannot run the
/// case where the driver gives another), expected results from the reference.
pub fn shuffle_dispatch(
    r: &crate::Request<'_>,
    plan: &ShufflePlan,
    kernel: &Kernel,
) -> Result<Dispatch, String> {
    let n = plan.threads.len();
    let lowered = crate::back::lower(r).map_err(|e| format!("{e:?}"))?;
    let (checks, unjudged) =
        crate::repro::shuffle_checks(plan, &lowered, r.state, (1, 8), Some(2))?;
    Ok(Dispatch {
        program: program(kernel),
        args: args(kernel, &[0; 8], n),
        global: n,
        local: n,
        checks,
        unjudged,
        orders: Vec::new(),
    })
}

/// The program of `kernel` for [`Dispatch::program`].
pub fn program(kernel: &Kernel) -> Program {
    Program::OpenClC {
        source: kernel.source.to_string(),
        options: kernel.options.clone(),
        entry: KERNEL_NAME.into(),
    }
}

/// The whole script for a dispatch on the OpenCL device whose platform or device name contains
/// `pattern` (case-insensitive, as atomcts chooses it); `Err` for a program of another back end.
pub fn script(about: &About, d: &Dispatch, pattern: &str) -> Result<String, String> {
    let Program::OpenClC {
        source,
        options,
        entry,
    } = &d.program
    else {
        return Err("not an OpenCL C program (a back-end bug)".into());
    };
    let listing: String = source
        .lines()
        .map(|l| format!("#   {l}\n").replace("#   \n", "#\n"))
        .collect();
    let comment = format!(
        "#\n# The OpenCL C kernel `{entry}` as atomcts built it (build options `{options}`):\n{listing}\n"
    );
    let host = HOST
        .replace("@PATTERN@", &py_str(&pattern.to_lowercase()))
        .replace("@SOURCE@", &py_str(source))
        .replace("@OPTIONS@", &py_str(options))
        .replace("@ENTRY@", &py_str(entry));
    Ok(shared_script(about, d, &comment, &host))
}

/// The host code: platform and device by name, context, queue, program, kernel, buffers, one
/// launch, blocking reads. Every call's status is checked.
const HOST: &str = r#"PATTERN = @PATTERN@
SOURCE = @SOURCE@
OPTIONS = @OPTIONS@
ENTRY = @ENTRY@

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
"#;
