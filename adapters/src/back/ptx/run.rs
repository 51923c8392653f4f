//! Run: an emitted PTX kernel on an NVIDIA GPU through the CUDA driver API (`cudarc`, with
//! `libcuda` loaded at run time, so nothing here is needed to build or test).
//!
//! Kernels run in a worker process (`worker.rs`), never in the runner's: on a real H100 a
//! faulting kernel (CUDA_ERROR_ILLEGAL_ADDRESS) left every later context creation in the
//! process failing with the same error, so a context per case was not enough. The driver
//! JIT-compiles the PTX for the device.
//!
//! `cudarc` panics when `libcuda` is absent, so [`availability`] asks first; that check is
//! the one `unsafe` call here (cudarc marks the library probe unsafe because loading a shared
//! library runs its initialisers; loading the system's CUDA driver is what this back end is
//! for). Kernel launches are `unsafe` in cudarc because argument types are not checked
//! against the kernel: the arguments below are exactly the emitted kernel's parameters
//! (`emit.rs`: three u64 device pointers, two u32; `concurrent.rs`: [`concurrent::PARAMS`],
//! four device pointers and a u64, checked against the emitted `.entry` before every launch).
#![allow(unsafe_code)]

use super::concurrent::{self, ConcurrentKernel};
use super::emit::{KERNEL_NAME, Kernel};
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::time::Duration;

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

/// One kernel launch, as the worker process receives it (`worker.rs`): the PTX module, the
/// entry's name, the grid and block sizes, and the entry's parameters in order.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Launch {
    /// The PTX module's text.
    pub ptx: String,
    /// The entry to launch.
    pub entry: String,
    /// Thread blocks (x only).
    pub grid: u32,
    /// Threads per block (x only).
    pub block: u32,
    /// The entry's parameters, in order.
    pub args: Vec<Arg>,
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Arg {
    /// A device buffer (`.param .u64`, a global pointer) holding these bytes before the launch;
    /// its bytes after the launch are answered.
    Buffer(#[serde(with = "hex_bytes")] Vec<u8>),
    /// A `.param .u32`.
    U32(u32),
    /// A `.param .u64` that is not a pointer.
    U64(u64),
}

/// Buffers travel to and from the worker as hex strings (two characters a byte).
mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        let mut out = String::with_capacity(2 * b.len());
        for x in b {
            out.push_str(&format!("{x:02x}"));
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        let digits = text.as_bytes();
        if digits.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd number of hex digits"));
        }
        digits
            .chunks_exact(2)
            .map(|p| {
                std::str::from_utf8(p)
                    .ok()
                    .and_then(|t| u8::from_str_radix(t, 16).ok())
                    .ok_or_else(|| serde::de::Error::custom("not a hex byte"))
            })
            .collect()
    }
}

/// Every buffer's bytes after a launch, as the worker answers them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Buffers(#[serde(with = "hex_vec")] pub Vec<Vec<u8>>);

mod hex_vec {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Hex(#[serde(with = "super::hex_bytes")] Vec<u8>);

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(v.len()))?;
        for b in v {
            seq.serialize_element(&Hex(b.clone()))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        Ok(Vec::<Hex>::deserialize(d)?
            .into_iter()
            .map(|h| h.0)
            .collect())
    }
}

/// Runs one launch in this process on `ctx` and answers every buffer's bytes after it, in the
/// order of the buffers among the parameters. `Err` is the driver's message (a fault included).
pub fn launch(ctx: &std::sync::Arc<CudaContext>, l: &Launch) -> Result<Vec<Vec<u8>>, String> {
    let stream = ctx.default_stream();
    let module = ctx
        .load_module(Ptx::from_src(l.ptx.clone()))
        .map_err(|e| format!("cuModuleLoadData (PTX JIT): {e}"))?;
    let f = module
        .load_function(&l.entry)
        .map_err(|e| format!("cuModuleGetFunction: {e}"))?;
    let mut buffers = Vec::new();
    let mut words = Vec::new();
    let mut wides = Vec::new();
    for a in &l.args {
        match a {
            // An empty buffer still gets a device allocation (one byte) so the pointer is valid.
            Arg::Buffer(b) if b.is_empty() => {
                buffers.push(stream.alloc_zeros::<u8>(1).map_err(|e| e.to_string())?)
            }
            Arg::Buffer(b) => {
                buffers.push(stream.clone_htod(b.as_slice()).map_err(|e| e.to_string())?)
            }
            Arg::U32(w) => words.push(*w),
            Arg::U64(w) => wides.push(*w),
        }
    }
    let mut builder = stream.launch_builder(&f);
    let (mut nb, mut nw, mut nd) = (0, 0, 0);
    for a in &l.args {
        match a {
            Arg::Buffer(_) => {
                builder.arg(&buffers[nb]);
                nb += 1;
            }
            Arg::U32(_) => {
                builder.arg(&words[nw]);
                nw += 1;
            }
            Arg::U64(_) => {
                builder.arg(&wides[nd]);
                nd += 1;
            }
        }
    }
    let cfg = LaunchConfig {
        grid_dim: (l.grid.max(1), 1, 1),
        block_dim: (l.block.max(1), 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: `l.args` are the entry's parameters in order and type: each back end's emitter
    // declares them and builds the launch from the same list (module docs).
    unsafe { builder.launch(cfg) }.map_err(|e| format!("cuLaunchKernel: {e}"))?;
    stream
        .synchronize()
        .map_err(|e| format!("the kernel faulted or failed: {e}"))?;
    let mut out = Vec::new();
    for (a, d) in l
        .args
        .iter()
        .filter(|a| matches!(a, Arg::Buffer(_)))
        .zip(&buffers)
    {
        let mut bytes = stream.clone_dtoh(d).map_err(|e| e.to_string())?;
        if let Arg::Buffer(b) = a {
            bytes.truncate(b.len());
        }
        out.push(bytes);
    }
    Ok(out)
}

/// The launch of `kernel` with one thread per item over the flat buffer `mem`: parameters
/// `mem`, `items` (three u64 per thread), `old` (one u64 per thread), `n`, `bytes`.
pub fn single(kernel: &Kernel, items: &[u64], mem: &[u8]) -> Launch {
    let n = items.len() / 3;
    Launch {
        ptx: kernel.source.clone(),
        entry: KERNEL_NAME.into(),
        grid: 1,
        block: n.max(1) as u32,
        args: vec![
            Arg::Buffer(mem.to_vec()),
            Arg::Buffer(items.iter().flat_map(|v| v.to_le_bytes()).collect()),
            Arg::Buffer(vec![0; 8 * n.max(1)]),
            Arg::U32(n as u32),
            Arg::U32(mem.len() as u32),
        ],
    }
}

/// The answer of [`single`]'s launch: the memory after it and each thread's returned value.
pub fn single_answer(n: usize, mut buffers: Vec<Vec<u8>>) -> Result<(Vec<u8>, Vec<u64>), String> {
    if buffers.len() != 3 {
        return Err(format!(
            "the worker answered {} buffers, not 3",
            buffers.len()
        ));
    }
    let old_bytes = buffers.pop().unwrap_or_default();
    let mem = buffers.swap_remove(0);
    let mut old = le_words(&old_bytes);
    old.truncate(n);
    if old.len() != n {
        return Err(format!(
            "the worker answered {} returned values, not {n}",
            old.len()
        ));
    }
    Ok((mem, old))
}

/// Why a concurrent launch gave no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The kernel ran past its budget (it stopped itself, or the worker was stopped).
    Timeout(String),
    /// The driver's message (a JIT error, a fault, an allocation failure).
    Failed(String),
}

/// How long the runner waits past a kernel's own deadline before it stops the worker.
pub const HOST_GRACE: Duration = Duration::from_secs(5);

/// The launch of a concurrent kernel: [`ConcurrentKernel::grid`] CTAs of
/// [`ConcurrentKernel::block`] threads over the flat global buffer `mem`, with `items` (three
/// u64 per thread, group after group), `ret_len` returned values (`[group][iteration][item]`),
/// the control words and the budget. The kernel stops itself once `budget` has passed since its
/// first thread started (`ctl[1]` set: a timeout). Checks the kernel's parameters first.
pub fn concurrent_launch(
    kernel: &ConcurrentKernel,
    items: &[u64],
    ret_len: usize,
    mem: &[u8],
    budget: Duration,
) -> Result<Launch, LaunchError> {
    let params = concurrent::entry_params(&kernel.source);
    let pushed: Vec<(String, String)> = concurrent::PARAMS
        .iter()
        .map(|p| (".u64".to_string(), p.to_string()))
        .collect();
    if params != pushed {
        return Err(LaunchError::Failed(format!(
            "the kernel's parameters {params:?} are not the launch's {pushed:?}"
        )));
    }
    let words = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    Ok(Launch {
        ptx: kernel.source.clone(),
        entry: KERNEL_NAME.into(),
        grid: kernel.grid,
        block: kernel.block,
        args: vec![
            Arg::Buffer(mem.to_vec()),
            Arg::Buffer(words(if items.is_empty() { &[0] } else { items })),
            Arg::Buffer(vec![0; 8 * ret_len.max(1)]),
            Arg::Buffer(vec![0; 16]),
            Arg::U64(u64::try_from(budget.as_nanos()).unwrap_or(u64::MAX)),
            Arg::Buffer(vec![0; 4 * ret_len.max(1)]),
        ],
    })
}

/// The answer of [`concurrent_launch`]'s launch: the memory after it, the returned values and
/// the attempts (of compare-and-swap loops; zero elsewhere).
#[allow(clippy::type_complexity)]
pub fn concurrent_answer(
    ret_len: usize,
    budget: Duration,
    buffers: Vec<Vec<u8>>,
) -> Result<(Vec<u8>, Vec<u64>, Vec<u32>), LaunchError> {
    let [mem, _items, ret, ctl, att]: [Vec<u8>; 5] =
        buffers.try_into().map_err(|b: Vec<Vec<u8>>| {
            LaunchError::Failed(format!("the worker answered {} buffers, not 5", b.len()))
        })?;
    if le_words(&ctl).get(1).copied().unwrap_or(0) != 0 {
        return Err(LaunchError::Timeout(format!(
            "the kernel stopped itself at its budget of {} ms before every thread ran all its iterations",
            budget.as_millis()
        )));
    }
    let mut ret = le_words(&ret);
    if ret.len() < ret_len {
        return Err(LaunchError::Failed(format!(
            "the worker answered {} returned values, not {ret_len}",
            ret.len()
        )));
    }
    ret.truncate(ret_len);
    let attempts: Vec<u32> = att
        .chunks_exact(4)
        .take(ret_len)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((mem, ret, attempts))
}

/// A device buffer of u64s (little-endian, as the GPU writes them); a trailing partial word is
/// dropped.
fn le_words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect()
}
