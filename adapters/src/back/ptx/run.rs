//! Run: an emitted PTX kernel on an NVIDIA GPU through the CUDA driver API (`cudarc`, with
//! `libcuda` loaded at run time, so nothing here is needed to build or test).
//!
//! Each case gets its own CUDA context (`cuCtxCreate`, not the primary context): a kernel
//! error is sticky for its context, and a context per case keeps one case's error from
//! deciding the next ones (a concurrent launch reuses the context of the previous one only when
//! that one succeeded in every step and the context reports no error: [`run_concurrent`]).
//! The driver JIT-compiles the PTX for the device.
//!
//! `cudarc` panics when `libcuda` is absent, so [`availability`] asks first; that check is
//! the one `unsafe` call here (cudarc marks the library probe unsafe because loading a shared
//! library runs its initialisers; loading the system's CUDA driver is what this back end is
//! for). Kernel launches are `unsafe` in cudarc because argument types are not checked
//! against the kernel: the arguments below are exactly the emitted kernel's parameters
//! (`emit.rs`: three u64 device pointers, two u32; `concurrent.rs`: [`concurrent::PARAMS`],
//! five u64, checked against the emitted `.entry` before every launch).
#![allow(unsafe_code)]

use super::concurrent::{self, ConcurrentKernel};
use super::emit::{KERNEL_NAME, Kernel};
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether the CUDA driver library can be loaded: `Err` says why not, in one line.
pub fn availability() -> Result<(), String> {
    // SAFETY: loads (and unloads) the system's libcuda to see that it exists; see the module
    // documentation.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if !present {
        return Err(
            "the CUDA driver library (libcuda.so) is not installed: no NVIDIA GPU driver on this machine"
                .into(),
        );
    }
    let count = CudaContext::device_count().map_err(|e| format!("cuInit/cuDeviceGetCount: {e}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    Ok(())
}

/// What the device reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `cuDeviceGetName`.
    pub name: String,
    /// Compute capability, `(major, minor)`.
    pub sm: (i32, i32),
    /// `cuDriverGetVersion` (e.g. 12080).
    pub driver: i32,
}

/// Device 0, as the driver reports it.
pub fn device_info() -> Result<DeviceInfo, String> {
    availability()?;
    let ctx = CudaContext::new(0).map_err(|e| format!("cuCtxCreate: {e}"))?;
    let name = ctx.name().map_err(|e| e.to_string())?;
    let sm = ctx.compute_capability().map_err(|e| e.to_string())?;
    let mut driver = 0i32;
    // SAFETY: the driver writes one int; the library is loaded (availability above).
    let rc = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    if rc != cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        return Err(format!("cuDriverGetVersion: {rc:?}"));
    }
    Ok(DeviceInfo { name, sm, driver })
}

/// Runs `kernel` with one thread per item over the flat buffer `mem` (updated in place);
/// returns each thread's returned value. `Err` is the driver's message (a fault included).
pub fn run(kernel: &Kernel, items: &[u64], mem: &mut Vec<u8>) -> Result<Vec<u64>, String> {
    let n = items.len() / 3;
    // A context of its own (cuCtxCreate, destroyed on drop), not the device's primary context:
    // an error in a kernel is sticky for its context, and must not decide later cases.
    let ctx = CudaContext::new_non_primary(0, 0).map_err(|e| format!("cuCtxCreate: {e}"))?;
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_src(kernel.source.clone()))
        .map_err(|e| format!("cuModuleLoadData (PTX JIT): {e}"))?;
    let f = module
        .load_function(KERNEL_NAME)
        .map_err(|e| format!("cuModuleGetFunction: {e}"))?;
    let d_mem = stream
        .clone_htod(mem.as_slice())
        .map_err(|e| e.to_string())?;
    let d_items = stream.clone_htod(items).map_err(|e| e.to_string())?;
    let d_old = stream
        .alloc_zeros::<u64>(n.max(1))
        .map_err(|e| e.to_string())?;
    let n32 = n as u32;
    let bytes = mem.len() as u32;
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&d_mem)
        .arg(&d_items)
        .arg(&d_old)
        .arg(&n32)
        .arg(&bytes);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (n32.max(1), 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments are the kernel's parameters in order and type (module docs).
    unsafe { launch.launch(cfg) }.map_err(|e| format!("cuLaunchKernel: {e}"))?;
    stream
        .synchronize()
        .map_err(|e| format!("the kernel faulted or failed: {e}"))?;
    *mem = stream.clone_dtoh(&d_mem).map_err(|e| e.to_string())?;
    let mut old = stream.clone_dtoh(&d_old).map_err(|e| e.to_string())?;
    old.truncate(n);
    Ok(old)
}

/// Why a concurrent launch gave no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The kernel ran past its budget (it stopped itself, or the host stopped waiting).
    Timeout(String),
    /// The driver's message (a JIT error, a fault, an allocation failure).
    Failed(String),
}

/// How long the host waits past the kernel's own deadline before it gives the kernel up.
pub const HOST_GRACE: Duration = Duration::from_secs(5);

/// Runs a concurrent kernel: [`ConcurrentKernel::grid`] CTAs of [`ConcurrentKernel::block`]
/// threads in one launch over the flat global buffer `mem` (updated in place), with
/// `items` (three u64 per thread, group after group) and `ret_len` returned values; returns
/// them (`[group][iteration][item]`).
///
/// Deadline: the kernel stops itself once `budget` has passed since its first thread started
/// (`ctl[1]` set: a timeout); the host polls for completion and gives up `HOST_GRACE` after
/// the budget, leaving the context to the driver (not destroyed, which would wait for the
/// kernel) so the run goes on.
///
/// `reuse` holds the context of the last launch that succeeded in every step: a repeated case
/// (`--repeat`) does not pay a context creation per run. It is taken out for the launch, used
/// again only if it reports no error (`cuCtxSynchronize`, cudarc's recorded errors), and put
/// back only after a launch that succeeded, so one case's error never reaches the next.
pub fn run_concurrent(
    kernel: &ConcurrentKernel,
    items: &[u64],
    ret_len: usize,
    mem: &mut Vec<u8>,
    budget: Duration,
    reuse: &mut Option<Arc<CudaContext>>,
) -> Result<Vec<u64>, LaunchError> {
    let fail = LaunchError::Failed;
    let params = concurrent::entry_params(&kernel.source);
    let pushed: Vec<(String, String)> = concurrent::PARAMS
        .iter()
        .map(|p| (".u64".to_string(), p.to_string()))
        .collect();
    if params != pushed {
        return Err(fail(format!(
            "the kernel's parameters {params:?} are not the launch's {pushed:?}"
        )));
    }
    let ctx = match reuse.take() {
        Some(c) if c.synchronize().is_ok() && c.check_err().is_ok() => c,
        _ => CudaContext::new_non_primary(0, 0).map_err(|e| fail(format!("cuCtxCreate: {e}")))?,
    };
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_src(kernel.source.clone()))
        .map_err(|e| fail(format!("cuModuleLoadData (PTX JIT): {e}")))?;
    let f = module
        .load_function(KERNEL_NAME)
        .map_err(|e| fail(format!("cuModuleGetFunction: {e}")))?;
    let d_mem = stream
        .clone_htod(mem.as_slice())
        .map_err(|e| fail(e.to_string()))?;
    let d_items = stream
        .clone_htod(if items.is_empty() { &[0u64][..] } else { items })
        .map_err(|e| fail(e.to_string()))?;
    let d_ret = stream
        .alloc_zeros::<u64>(ret_len.max(1))
        .map_err(|e| fail(e.to_string()))?;
    let d_ctl = stream
        .alloc_zeros::<u64>(2)
        .map_err(|e| fail(e.to_string()))?;
    let budget_ns = u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX);
    // The arguments, in the order and types of concurrent::PARAMS (checked above against the
    // kernel's .entry): four device pointers (CudaSlice pushes its u64 device address) and a u64.
    let mut launch = stream.launch_builder(&f);
    launch
        .arg(&d_mem)
        .arg(&d_items)
        .arg(&d_ret)
        .arg(&d_ctl)
        .arg(&budget_ns);
    let cfg = LaunchConfig {
        grid_dim: (kernel.grid.max(1), 1, 1),
        block_dim: (kernel.block.max(1), 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments are the kernel's parameters in order and type (checked above).
    unsafe { launch.launch(cfg) }.map_err(|e| fail(format!("cuLaunchKernel: {e}")))?;
    let done = stream
        .record_event(None)
        .map_err(|e| fail(format!("cuEventRecord: {e}")))?;
    let start = Instant::now();
    let give_up = budget.saturating_add(HOST_GRACE);
    loop {
        match done.try_is_complete() {
            Ok(true) => break,
            Ok(false) if start.elapsed() > give_up => {
                // Destroying the context or freeing the buffers would wait for the kernel.
                std::mem::forget((done, d_mem, d_items, d_ret, d_ctl, f, module, stream, ctx));
                return Err(LaunchError::Timeout(format!(
                    "the kernel did not finish within {} ms (its budget plus {} s); left running",
                    budget.as_millis(),
                    HOST_GRACE.as_secs()
                )));
            }
            Ok(false) => {
                if start.elapsed() < Duration::from_millis(2) {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            Err(e) => return Err(fail(format!("the kernel faulted or failed: {e}"))),
        }
    }
    let ctl = stream.clone_dtoh(&d_ctl).map_err(|e| fail(e.to_string()))?;
    if ctl.get(1).copied().unwrap_or(0) != 0 {
        return Err(LaunchError::Timeout(format!(
            "the kernel stopped itself at its budget of {} ms before every thread ran all its iterations",
            budget.as_millis()
        )));
    }
    *mem = stream.clone_dtoh(&d_mem).map_err(|e| fail(e.to_string()))?;
    let mut ret = stream.clone_dtoh(&d_ret).map_err(|e| fail(e.to_string()))?;
    ret.truncate(ret_len);
    *reuse = Some(ctx.clone());
    Ok(ret)
}
