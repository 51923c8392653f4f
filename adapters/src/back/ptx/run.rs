//! Run: an emitted PTX kernel on an NVIDIA GPU through the CUDA driver API (`cudarc`, with
//! `libcuda` loaded at run time, so nothing here is needed to build or test).
//!
//! Each case gets its own CUDA context (`cuCtxCreate`, not the primary context): a kernel
//! error is sticky for its context, and a context per case keeps one case's error from
//! deciding the next ones. The driver JIT-compiles
//! the PTX for the device.
//!
//! `cudarc` panics when `libcuda` is absent, so [`availability`] asks first; that check is
//! the one `unsafe` call here (cudarc marks the library probe unsafe because loading a shared
//! library runs its initialisers; loading the system's CUDA driver is what this back end is
//! for). Kernel launches are `unsafe` in cudarc because argument types are not checked
//! against the kernel: the arguments below are exactly the emitted kernel's parameters
//! (`emit.rs`: three u64 device pointers, two u32).
#![allow(unsafe_code)]

use super::emit::{KERNEL_NAME, Kernel};
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

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
