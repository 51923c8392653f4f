//! Run: an emitted kernel on one OpenCL device, through `cl3` with the OpenCL ICD loader
//! (`libOpenCL.so.1`) loaded at run time, so nothing here is needed to build or test.
//!
//! The calls are foreign functions; this module is the only place in the workspace that
//! allows `unsafe`. Every call checks its status; each buffer is created with the size the
//! kernel indexes and is read back only after `clFinish`; every object is released on every
//! path (a guard releases them when dropped).
#![allow(unsafe_code)]

use super::emit::{KERNEL_NAME, Kernel};
use cl3::command_queue::{
    create_command_queue, enqueue_nd_range_kernel, enqueue_read_buffer, finish,
    release_command_queue,
};
use cl3::context::{create_context, release_context};
use cl3::device::{
    CL_DEVICE_EXTENSIONS, CL_DEVICE_MAX_WORK_GROUP_SIZE, CL_DEVICE_NAME,
    CL_DEVICE_OPENCL_C_ALL_VERSIONS, CL_DEVICE_OPENCL_C_FEATURES, CL_DEVICE_OPENCL_C_VERSION,
    CL_DEVICE_TYPE_ALL, CL_DEVICE_VERSION, CL_DRIVER_VERSION, get_device_data, get_device_ids,
    get_device_info,
};
use cl3::kernel::{create_kernel, release_kernel, set_kernel_arg};
use cl3::memory::{
    CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_WRITE_ONLY, create_buffer,
    release_mem_object,
};
use cl3::platform::{CL_PLATFORM_NAME, get_platform_ids, get_platform_info};
use cl3::program::{
    CL_PROGRAM_BUILD_LOG, build_program, create_program_with_source, get_program_build_info,
    release_program,
};
use cl3::types::{cl_command_queue, cl_context, cl_device_id, cl_mem};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::ptr;

/// What the device reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `CL_PLATFORM_NAME`.
    pub platform: String,
    /// `CL_DEVICE_NAME`.
    pub device: String,
    /// `CL_DEVICE_VERSION`.
    pub version: String,
    /// `CL_DEVICE_OPENCL_C_VERSION`.
    pub c_version: String,
    /// `CL_DRIVER_VERSION`.
    pub driver_version: String,
    /// Major.minor of every OpenCL C version in `CL_DEVICE_OPENCL_C_ALL_VERSIONS` (OpenCL 3.0
    /// devices), else the one of `CL_DEVICE_OPENCL_C_VERSION`.
    pub c_versions: Vec<(u32, u32)>,
    /// `CL_DEVICE_EXTENSIONS`.
    pub extensions: Vec<String>,
    /// `CL_DEVICE_OPENCL_C_FEATURES` (OpenCL 3.0 devices): the optional features' macro names.
    pub c_features: Vec<String>,
    /// `CL_DEVICE_MAX_WORK_GROUP_SIZE`.
    pub max_work_group: usize,
    /// cl_ext_float_atomics: `CL_DEVICE_{HALF,SINGLE,DOUBLE}_FP_ATOMIC_CAPABILITIES_EXT`, in
    /// that order (zero where the query fails: the device does not report the extension).
    pub fp_atomics: [u64; 3],
    /// `CL_FP_DENORM` in `CL_DEVICE_{HALF,SINGLE,DOUBLE}_FP_CONFIG`, in that order.
    pub fp_denorm: [bool; 3],
    /// cl_intel_required_subgroup_size: `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (empty where the
    /// query fails).
    pub sub_group_sizes: Vec<usize>,
    /// OpenCL 3.0 devices: `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES`, the memory orders and scopes
    /// of atomic operations (`CL_DEVICE_ATOMIC_ORDER_*`, `CL_DEVICE_ATOMIC_SCOPE_*` bits);
    /// `None` on an older device (no such query: OpenCL 1.x atomics on global memory).
    pub atomic_memory: Option<u64>,
    /// OpenCL 3.0 devices: `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES`, the same for fences.
    pub atomic_fence: Option<u64>,
}

/// OpenCL 3.0 API, "Device Queries": `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` and
/// `CL_DEVICE_ATOMIC_FENCE_CAPABILITIES`.
const ATOMIC_CAPABILITIES: [u32; 2] = [0x1063, 0x1064];

/// cl_ext_float_atomics, "New API Enums": `CL_DEVICE_HALF_FP_ATOMIC_CAPABILITIES_EXT`,
/// `CL_DEVICE_SINGLE_...`, `CL_DEVICE_DOUBLE_...`.
const FP_ATOMIC_CAPABILITIES: [u32; 3] = [0x4233, 0x4231, 0x4232];

/// OpenCL 3.0 API, "Device Queries": `CL_DEVICE_HALF_FP_CONFIG`, `CL_DEVICE_SINGLE_FP_CONFIG`,
/// `CL_DEVICE_DOUBLE_FP_CONFIG`.
const FP_CONFIG: [u32; 3] = [0x1033, 0x101B, 0x1032];

/// `CL_FP_DENORM` in a `cl_device_fp_config`.
const CL_FP_DENORM: u64 = 1;

/// cl_intel_required_subgroup_size, "New API Enums": `CL_DEVICE_SUB_GROUP_SIZES_INTEL`.
const SUB_GROUP_SIZES_INTEL: u32 = 0x4108;

/// A `cl_ulong`/`cl_bitfield` answer of a device query, or zero where the query fails.
fn bits(id: cl_device_id, param: u32) -> u64 {
    get_device_data(id, param)
        .ok()
        .and_then(|b| {
            b.get(..8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap_or([0; 8])))
        })
        .unwrap_or(0)
}

/// A `size_t[]` answer of a device query, or empty where the query fails.
fn sizes(id: cl_device_id, param: u32) -> Vec<usize> {
    const W: usize = std::mem::size_of::<usize>();
    get_device_data(id, param)
        .map(|b| {
            b.chunks_exact(W)
                .map(|c| usize::from_ne_bytes(c.try_into().unwrap_or([0; W])))
                .collect()
        })
        .unwrap_or_default()
}

/// An open device: a context and an in-order queue.
pub struct Device {
    id: cl_device_id,
    context: cl_context,
    queue: cl_command_queue,
    /// What it reports.
    pub info: DeviceInfo,
    /// Built programs and their kernel by (source, build options): a shape kernel
    /// ([`Kernel::args`]) is built once and dispatched for every case of its shape (issue 9).
    programs: HashMap<(std::sync::Arc<str>, String), Built>,
    /// Programs built since the open, and runs that reused a kept one ([`Device::builds`]).
    counts: (u64, u64),
}

/// A built program and its kernel object, released with the device (or when the cache is
/// emptied).
struct Built {
    program: cl3::types::cl_program,
    kernel: cl3::types::cl_kernel,
}

impl Drop for Built {
    fn drop(&mut self) {
        unsafe {
            let _ = release_kernel(self.kernel);
            let _ = release_program(self.program);
        }
    }
}

/// The most programs kept built; when full, the cache is emptied (shape kernels are few: about
/// one per op, type, space and built-in form).
const MAX_PROGRAMS: usize = 256;

impl Drop for Device {
    fn drop(&mut self) {
        self.programs.clear();
        unsafe {
            let _ = release_command_queue(self.queue);
            let _ = release_context(self.context);
        }
    }
}

fn text(r: Result<cl3::info_type::InfoType, i32>) -> String {
    r.map(|v| v.to_string().trim_end_matches('\0').trim().to_string())
        .unwrap_or_default()
}

fn parse_c_version(s: &str) -> Option<(u32, u32)> {
    // "OpenCL C <major>.<minor> ..." (OpenCL 3.0 API spec, CL_DEVICE_OPENCL_C_VERSION).
    let rest = s.strip_prefix("OpenCL C ")?;
    let v = rest.split_whitespace().next()?;
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `CL_DEVICE_VERSION`, "OpenCL <major>.<minor> <platform-specific>": major and minor.
pub fn parse_api_version(s: &str) -> Option<(u32, u32)> {
    parse_c_version(&s.replacen("OpenCL ", "OpenCL C ", 1))
}

/// Every (platform name, device) pair the loader offers.
pub fn devices() -> Result<Vec<(String, cl_device_id)>, String> {
    if !cl3::is_opencl_runtime_available() {
        return Err("no OpenCL ICD loader (libOpenCL.so.1) on this machine".into());
    }
    let platforms = get_platform_ids().map_err(|e| format!("clGetPlatformIDs: error {e}"))?;
    let mut out = Vec::new();
    for p in platforms {
        let name = text(get_platform_info(p, CL_PLATFORM_NAME));
        if let Ok(ds) = get_device_ids(p, CL_DEVICE_TYPE_ALL) {
            out.extend(ds.into_iter().map(|d| (name.clone(), d)));
        }
    }
    Ok(out)
}

impl Device {
    /// Opens the first device whose platform or device name contains `pattern`
    /// (case-insensitive).
    pub fn open(pattern: &str) -> Result<Device, String> {
        let pat = pattern.to_lowercase();
        let all = devices()?;
        let mut seen = Vec::new();
        for (platform, id) in all {
            let device = text(get_device_info(id, CL_DEVICE_NAME));
            if platform.to_lowercase().contains(&pat) || device.to_lowercase().contains(&pat) {
                return Device::open_id(platform, device, id);
            }
            seen.push(format!("{platform} / {device}"));
        }
        Err(if seen.is_empty() {
            "the OpenCL loader offers no device".into()
        } else {
            format!(
                "no OpenCL platform or device matches `{pattern}` (have: {})",
                seen.join("; ")
            )
        })
    }

    fn open_id(platform: String, device: String, id: cl_device_id) -> Result<Device, String> {
        let c_version = text(get_device_info(id, CL_DEVICE_OPENCL_C_VERSION));
        let version = text(get_device_info(id, CL_DEVICE_VERSION));
        // CL_DEVICE_OPENCL_C_ALL_VERSIONS exists from OpenCL 3.0 only; older devices answer
        // the query with garbage or an error.
        let api3 = parse_api_version(&version).is_some_and(|v| v >= (3, 0));
        let mut c_versions: Vec<(u32, u32)> = get_device_info(id, CL_DEVICE_OPENCL_C_ALL_VERSIONS)
            .ok()
            .filter(|_| api3)
            .map(|v| {
                v.to_vec_name_version()
                    .iter()
                    // CL_MAKE_VERSION: major in bits 22.., minor in bits 12..22.
                    .map(|nv| (nv.version >> 22, (nv.version >> 12) & 0x3ff))
                    .collect()
            })
            .unwrap_or_default();
        c_versions.extend(parse_c_version(&c_version));
        let info = DeviceInfo {
            platform,
            device,
            version,
            c_version,
            driver_version: text(get_device_info(id, CL_DRIVER_VERSION)),
            c_versions,
            extensions: text(get_device_info(id, CL_DEVICE_EXTENSIONS))
                .split_whitespace()
                .map(String::from)
                .collect(),
            c_features: get_device_info(id, CL_DEVICE_OPENCL_C_FEATURES)
                .ok()
                .filter(|_| api3)
                .map(|v| {
                    v.to_vec_name_version()
                        .iter()
                        .map(|nv| {
                            let name: Vec<u8> =
                                nv.name.iter().copied().take_while(|c| *c != 0).collect();
                            String::from_utf8_lossy(&name).into_owned()
                        })
                        .collect()
                })
                .unwrap_or_default(),
            max_work_group: get_device_info(id, CL_DEVICE_MAX_WORK_GROUP_SIZE)
                .map(|v| v.to_size())
                .unwrap_or(1),
            fp_atomics: FP_ATOMIC_CAPABILITIES.map(|p| bits(id, p)),
            fp_denorm: FP_CONFIG.map(|p| bits(id, p) & CL_FP_DENORM != 0),
            sub_group_sizes: sizes(id, SUB_GROUP_SIZES_INTEL),
            atomic_memory: api3.then(|| bits(id, ATOMIC_CAPABILITIES[0])),
            atomic_fence: api3.then(|| bits(id, ATOMIC_CAPABILITIES[1])),
        };
        let context = create_context(&[id], ptr::null(), None, ptr::null_mut())
            .map_err(|e| format!("clCreateContext: error {e}"))?;
        #[allow(deprecated)]
        let queue = match unsafe { create_command_queue(context, id, 0) } {
            Ok(q) => q,
            Err(e) => {
                unsafe {
                    let _ = release_context(context);
                }
                return Err(format!("clCreateCommandQueue: error {e}"));
            }
        };
        Ok(Device {
            id,
            context,
            queue,
            info,
            programs: HashMap::new(),
            counts: (0, 0),
        })
    }

    /// Builds `kernel`, runs it with `n` work-items in one work-group on `mem` (updated in
    /// place), and returns each work-item's `ret` and `ok`.
    pub fn run(
        &mut self,
        kernel: &Kernel,
        n: usize,
        mem: &mut [u8],
    ) -> Result<(Vec<u64>, Vec<i32>), String> {
        self.run_ndrange(kernel, n, n, n, mem)
    }

    /// Builds `kernel` and runs it in one launch of `global` work-items in work-groups of
    /// `local` on `mem` (updated in place); `ret` and `ok` hold `slots` values each (a
    /// concurrent case: one work-group per instruction, issue 12).
    pub fn run_ndrange(
        &mut self,
        kernel: &Kernel,
        global: usize,
        local: usize,
        slots: usize,
        mem: &mut [u8],
    ) -> Result<(Vec<u64>, Vec<i32>), String> {
        let n = slots.max(1);
        let mut g = Guard::default();
        // A shape kernel (its data in arguments or in its parameter buffer) is built once and
        // kept; a kernel holding its case's data in its text is built for this run only.
        let k = if kernel.args.is_some() || kernel.params.is_some() {
            self.cached(kernel)?
        } else {
            let built = self.build(kernel)?;
            self.counts.0 += 1;
            let k = built.kernel;
            g.built = Some(built);
            k
        };
        let mem_buf = self.buffer(&mut g, Some(mem), 0)?;
        let ret_buf = self.buffer(&mut g, None, 8 * n)?;
        let ok_buf = self.buffer(&mut g, None, 4 * n)?;
        for (i, b) in [mem_buf, ret_buf, ok_buf].iter().enumerate() {
            unsafe {
                set_kernel_arg(
                    k,
                    i as u32,
                    std::mem::size_of::<cl_mem>(),
                    ptr::from_ref(b).cast::<c_void>(),
                )
            }
            .map_err(|e| format!("clSetKernelArg {i}: error {e}"))?;
        }
        if let Some(p) = &kernel.params {
            // A concurrent case's numbers: one `ulong` buffer, argument 3.
            let bytes: Vec<u8> = p.iter().flat_map(|x| x.to_le_bytes()).collect();
            self.input_arg(&mut g, k, 3, bytes)?;
        }
        if let Some(a) = &kernel.args {
            // IDX (uint), SRC0 and SRC1 (the datum's width: 2, 4 or 8 bytes), N, OP, then the
            // __local copy and its element count for shared memory.
            let width = (kernel.elem_bytes as usize).clamp(1, 8);
            let words = |v: &[u64]| crate::back::le_bytes(width as u64, v);
            let idx: Vec<u8> = a.idx.iter().flat_map(|x| x.to_le_bytes()).collect();
            for (i, bytes) in [idx, words(&a.src0), words(&a.src1)]
                .into_iter()
                .enumerate()
            {
                self.input_arg(&mut g, k, 3 + i as u32, bytes)?;
            }
            let count =
                u32::try_from(a.idx.len()).map_err(|_| "too many work-items".to_string())?;
            u32_arg(k, 6, count)?;
            u32_arg(k, 7, a.op.unwrap_or(0))?;
            if let Some(lb) = a.local_bytes {
                let elems = u32::try_from(lb / kernel.elem_bytes.max(1))
                    .map_err(|_| "too many local elements".to_string())?;
                // A __local argument: its size, no value.
                unsafe { set_kernel_arg(k, 8, lb.max(1) as usize, ptr::null()) }
                    .map_err(|e| format!("clSetKernelArg 8 (__local): error {e}"))?;
                u32_arg(k, 9, elems)?;
            }
        }
        self.enqueue(k, global, local)?;
        let mut ret = vec![0u64; n];
        let mut ok = vec![0i32; n];
        for (buf, len, dst) in [
            (mem_buf, mem.len(), mem.as_mut_ptr().cast::<c_void>()),
            (ret_buf, 8 * n, ret.as_mut_ptr().cast::<c_void>()),
            (ok_buf, 4 * n, ok.as_mut_ptr().cast::<c_void>()),
        ] {
            let ev = unsafe {
                enqueue_read_buffer(
                    self.queue,
                    buf,
                    cl3::types::CL_BLOCKING,
                    0,
                    len,
                    dst,
                    0,
                    ptr::null(),
                )
            }
            .map_err(|e| format!("clEnqueueReadBuffer: error {e}"))?;
            release_event(ev);
        }
        finish(self.queue).map_err(|e| format!("clFinish: error {e}"))?;
        Ok((ret, ok))
    }

    /// A read-only buffer holding `bytes` (8 zero bytes where empty) as argument `arg` of
    /// `k`, released with `g`.
    fn input_arg(
        &self,
        g: &mut Guard,
        k: cl3::types::cl_kernel,
        arg: u32,
        mut bytes: Vec<u8>,
    ) -> Result<(), String> {
        if bytes.is_empty() {
            bytes = vec![0; 8];
        }
        let b = unsafe {
            create_buffer(
                self.context,
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                bytes.len(),
                bytes.as_mut_ptr().cast::<c_void>(),
            )
        }
        .map_err(|e| format!("clCreateBuffer: error {e}"))?;
        g.mems.push(b);
        unsafe {
            set_kernel_arg(
                k,
                arg,
                std::mem::size_of::<cl_mem>(),
                ptr::from_ref(&b).cast::<c_void>(),
            )
        }
        .map_err(|e| format!("clSetKernelArg {arg}: error {e}"))?;
        Ok(())
    }
}

/// Sets argument `arg` of `k` to the `uint` `v`.
fn u32_arg(k: cl3::types::cl_kernel, arg: u32, v: u32) -> Result<(), String> {
    unsafe {
        set_kernel_arg(
            k,
            arg,
            std::mem::size_of::<u32>(),
            ptr::from_ref(&v).cast::<c_void>(),
        )
    }
    .map_err(|e| format!("clSetKernelArg {arg}: error {e}"))
}

/// One case of a batched dispatch ([`Device::run_batch`]).
pub struct BatchCase<'a> {
    /// The case's per-work-item arguments.
    pub args: &'a super::emit::Args,
    /// The number of work-items running an access (the length of `args.idx`).
    pub n: usize,
    /// The bytes of its memory region.
    pub mem_bytes: usize,
}

impl Device {
    /// A buffer of `bytes` (copied from the host) or of `len` bytes (written by the kernel),
    /// released with `g`.
    fn buffer(
        &self,
        g: &mut Guard,
        bytes: Option<&mut [u8]>,
        len: usize,
    ) -> Result<cl_mem, String> {
        let b = match bytes {
            Some(b) => unsafe {
                create_buffer(
                    self.context,
                    CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                    b.len(),
                    b.as_mut_ptr().cast::<c_void>(),
                )
            },
            None => unsafe { create_buffer(self.context, CL_MEM_WRITE_ONLY, len, ptr::null_mut()) },
        }
        .map_err(|e| format!("clCreateBuffer: error {e}"))?;
        g.mems.push(b);
        Ok(b)
    }

    /// Runs a batched shape kernel ([`super::single::emit_batched`]) once for several cases, one
    /// work-group of `local` work-items each: `mem` is the batch's memory (every case's region
    /// at `bases[c]` bytes, guards between them: [`super::batch`]), updated in place; `ret`
    /// and `ok` come back with every case's slots one after another.
    pub fn run_batch(
        &mut self,
        kernel: &Kernel,
        local: usize,
        cases: &[BatchCase<'_>],
        bases: &[usize],
        mem: &mut [u8],
    ) -> Result<(Vec<u64>, Vec<i32>), String> {
        let k = self.cached(kernel)?;
        let mut g = Guard::default();
        let eb = kernel.elem_bytes.max(1) as usize;
        let width = eb.clamp(1, 8);
        let total: usize = cases.iter().map(|c| c.n).sum();
        let slots = total.max(1);
        let u32s = |v: &mut dyn Iterator<Item = usize>| -> Result<Vec<u8>, String> {
            let mut out = Vec::new();
            for x in v {
                let x = u32::try_from(x).map_err(|_| "a batch offset past 32 bits".to_string())?;
                out.extend_from_slice(&x.to_le_bytes());
            }
            Ok(out)
        };
        let mut idx = Vec::with_capacity(4 * total);
        let (mut src0, mut src1) = (
            Vec::with_capacity(width * total),
            Vec::with_capacity(width * total),
        );
        for c in cases {
            for x in &c.args.idx {
                idx.extend_from_slice(&x.to_le_bytes());
            }
            for x in &c.args.src0 {
                src0.extend_from_slice(&x.to_le_bytes()[..width]);
            }
            for x in &c.args.src1 {
                src1.extend_from_slice(&x.to_le_bytes()[..width]);
            }
        }
        let mut argbase = Vec::with_capacity(cases.len());
        let mut at = 0;
        for c in cases {
            argbase.push(at);
            at += c.n;
        }
        let mut membase = u32s(&mut bases.iter().map(|b| b / eb))?;
        let mut argbase = u32s(&mut argbase.into_iter())?;
        let mut ns = u32s(&mut cases.iter().map(|c| c.n))?;
        let mut elemsv = u32s(&mut cases.iter().map(|c| c.mem_bytes / eb))?;
        let mut opv = u32s(&mut cases.iter().map(|c| c.args.op.unwrap_or(0) as usize))?;
        let mem_buf = self.buffer(&mut g, Some(mem), 0)?;
        let ret_buf = self.buffer(&mut g, None, 8 * slots)?;
        let ok_buf = self.buffer(&mut g, None, 4 * slots)?;
        let mut bufs = vec![mem_buf, ret_buf, ok_buf];
        for bytes in [
            &mut idx,
            &mut src0,
            &mut src1,
            &mut membase,
            &mut argbase,
            &mut ns,
            &mut elemsv,
            &mut opv,
        ] {
            if bytes.is_empty() {
                bytes.resize(8, 0);
            }
            bufs.push(self.buffer(&mut g, Some(bytes), 0)?);
        }
        for (i, b) in bufs.iter().enumerate() {
            unsafe {
                set_kernel_arg(
                    k,
                    i as u32,
                    std::mem::size_of::<cl_mem>(),
                    ptr::from_ref(b).cast::<c_void>(),
                )
            }
            .map_err(|e| format!("clSetKernelArg {i}: error {e}"))?;
        }
        let lm = cases.iter().filter_map(|c| c.args.local_bytes).max();
        if let Some(lb) = lm {
            // A __local argument: its size, no value.
            unsafe { set_kernel_arg(k, 11, lb.max(1) as usize, ptr::null()) }
                .map_err(|e| format!("clSetKernelArg 11 (__local): error {e}"))?;
        }
        self.enqueue(k, local * cases.len(), local)?;
        let mut ret = vec![0u64; slots];
        let mut ok = vec![0i32; slots];
        self.read_back(&[
            (mem_buf, mem.len(), mem.as_mut_ptr().cast::<c_void>()),
            (ret_buf, 8 * slots, ret.as_mut_ptr().cast::<c_void>()),
            (ok_buf, 4 * slots, ok.as_mut_ptr().cast::<c_void>()),
        ])?;
        ret.truncate(total);
        ok.truncate(total);
        Ok((ret, ok))
    }

    /// Enqueues `k` over a one-dimensional range of `global` work-items in work-groups of
    /// `local`.
    fn enqueue(&self, k: cl3::types::cl_kernel, global: usize, local: usize) -> Result<(), String> {
        let (gsize, lsize) = ([global], [local]);
        let ev = unsafe {
            enqueue_nd_range_kernel(
                self.queue,
                k,
                1,
                ptr::null(),
                gsize.as_ptr(),
                lsize.as_ptr(),
                0,
                ptr::null(),
            )
        }
        .map_err(|e| format!("clEnqueueNDRangeKernel: error {e}"))?;
        release_event(ev);
        Ok(())
    }

    /// Reads each (buffer, bytes, destination) back, blocking, then waits for the queue.
    fn read_back(&self, reads: &[(cl_mem, usize, *mut c_void)]) -> Result<(), String> {
        for (buf, len, dst) in reads {
            let ev = unsafe {
                enqueue_read_buffer(
                    self.queue,
                    *buf,
                    cl3::types::CL_BLOCKING,
                    0,
                    *len,
                    *dst,
                    0,
                    ptr::null(),
                )
            }
            .map_err(|e| format!("clEnqueueReadBuffer: error {e}"))?;
            release_event(ev);
        }
        finish(self.queue).map_err(|e| format!("clFinish: error {e}"))
    }
}

impl Device {
    /// Builds `kernel`'s program and creates its kernel object.
    fn build(&self, kernel: &Kernel) -> Result<Built, String> {
        let program = create_program_with_source(self.context, &[&kernel.source])
            .map_err(|e| format!("clCreateProgramWithSource: error {e}"))?;
        let release = |e: String| {
            unsafe {
                let _ = release_program(program);
            }
            e
        };
        let options = CString::new(kernel.options.as_str()).map_err(|e| release(e.to_string()))?;
        if let Err(e) = build_program(program, &[self.id], &options, None, ptr::null_mut()) {
            let log = text(get_program_build_info(
                program,
                self.id,
                CL_PROGRAM_BUILD_LOG,
            ));
            return Err(release(format!("clBuildProgram: error {e}: {log}")));
        }
        let name = CString::new(KERNEL_NAME).map_err(|e| release(e.to_string()))?;
        let k = create_kernel(program, &name)
            .map_err(|e| release(format!("clCreateKernel: error {e}")))?;
        Ok(Built { program, kernel: k })
    }

    /// Programs built since the open, and runs that reused a kept one.
    pub fn builds(&self) -> (u64, u64) {
        self.counts
    }

    /// The kernel object of a shape kernel's program, built once per (source, options) and
    /// kept.
    fn cached(&mut self, kernel: &Kernel) -> Result<cl3::types::cl_kernel, String> {
        let key = (kernel.source.clone(), kernel.options.clone());
        if let Some(b) = self.programs.get(&key) {
            self.counts.1 += 1;
            return Ok(b.kernel);
        }
        let built = self.build(kernel)?;
        self.counts.0 += 1;
        let k = built.kernel;
        if self.programs.len() >= MAX_PROGRAMS {
            self.programs.clear();
        }
        self.programs.insert(key, built);
        Ok(k)
    }
}

fn release_event(ev: cl3::types::cl_event) {
    if !ev.is_null() {
        unsafe {
            let _ = cl3::event::release_event(ev);
        }
    }
}

/// Releases what a run created, on every path.
#[derive(Default)]
struct Guard {
    built: Option<Built>,
    mems: Vec<cl_mem>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        unsafe {
            for m in self.mems.drain(..) {
                let _ = release_mem_object(m);
            }
        }
        // The kernel and program after the buffers.
        self.built = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencl_c_versions_parse() {
        assert_eq!(parse_c_version("OpenCL C 1.2 PoCL"), Some((1, 2)));
        assert_eq!(parse_c_version("OpenCL C 3.0 "), Some((3, 0)));
        assert_eq!(parse_c_version("CL 3"), None);
        assert_eq!(
            parse_api_version("OpenCL 1.2 (Oclgrind 21.10)"),
            Some((1, 2))
        );
        assert_eq!(parse_api_version("OpenCL 3.0 PoCL HSTR: x"), Some((3, 0)));
    }
}
