//! Which implementations under test this machine has: the list `atomcts list adapters` prints
//! and `atomcts report` runs by default, each with the profile it claims and its CI baseline.
//!
//! Third-party implementations only: the built-in `fast` and `reference` adapters are the model
//! itself. Paths are relative to the source tree's root (where `tools/install-implementations.sh`
//! puts `target/venv`), so that reports name the same command on every machine.

use std::path::Path;
use std::process::{Command, Stdio};

/// One implementation atomcts knows how to reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implementation {
    /// The `--adapter` argument that runs it.
    pub adapter: String,
    /// What it is, in a few words.
    pub what: String,
    /// `Ok` when it can run here, else why not (one line).
    pub available: Result<(), String>,
    /// The baseline CI gates it against (a path from the source tree's root).
    pub baseline: Option<String>,
}

/// The command of the Numba CUDA simulator shim (protocol 2), run from the source tree's root.
pub const NUMBA_CUDASIM: &str = "cmd:target/venv/bin/python adapters/shims/numba_cudasim.py";

/// The command of the NVIDIA Warp (CPU device) shim (protocol 2), run from the source tree's root.
pub const WARP_CPU: &str = "cmd:target/venv/bin/python adapters/shims/warp_cpu.py";

/// The profile an adapter claims before it is opened (a shim's handshake may name its own,
/// which wins; see [`crate::Adapter::claimed_profile`]):
///
/// - `opencl:*`, `vulkan:*`, `wgsl-naga:*`: `spirv`. OpenCL C 2.0+/3.0 atomics and Vulkan's
///   SPIR-V atomics are both specified by the Khronos memory model and SPIR-V's atomic
///   instructions (and their float extensions, which `spirv` follows: any NaN, either signed
///   zero, SPIR-V's NaN rule for min/max); nothing in OpenCL C promises NVIDIA's FTZ or Intel's
///   rules.
/// - `cuda`: `nvidia-ptx` (the PTX ISA and the CUDA Programming Guide describe what it runs).
/// - the Numba CUDA simulator: `nvidia-ptx` (it simulates CUDA; its handshake says so too).
/// - Warp on the CPU: `default` (Warp documents no FTZ, NaN or signed-zero rule for its CPU
///   atomics; its handshake says so).
/// - `fast`, `reference` and anything else: `default`.
pub fn claimed_profile(adapter: &str) -> &'static str {
    if adapter.starts_with("opencl:")
        || adapter.starts_with("vulkan:")
        || adapter.starts_with("wgsl-naga:")
    {
        "spirv"
    } else if adapter == "cuda" || adapter == NUMBA_CUDASIM {
        "nvidia-ptx"
    } else {
        "default"
    }
}

/// A file name for an adapter argument: letters, digits, `-` and `_` kept, runs of anything
/// else one `_` (`opencl:pocl` -> `opencl_pocl`).
pub fn slug(adapter: &str) -> String {
    let named = match adapter {
        NUMBA_CUDASIM => "numba-cudasim",
        WARP_CPU => "warp-cpu",
        other => other,
    };
    let mut s = String::new();
    for c in named.chars() {
        if c.is_ascii_alphanumeric() || c == '-' {
            s.push(c);
        } else if !s.ends_with('_') {
            s.push('_');
        }
    }
    s.trim_matches('_').to_string()
}

/// Whether a Python shim can start here: the shim, and its Python with `module` importable.
fn python_availability(shim: &str, module: &str) -> Result<(), String> {
    let py = Path::new("target/venv/bin/python");
    if !Path::new(shim).is_file() {
        return Err(format!("{shim} not found (run from the source tree)"));
    }
    if !py.is_file() {
        return Err(
            "no target/venv/bin/python (run tools/install-implementations.sh python)".into(),
        );
    }
    match Command::new(py)
        .args(["-c", &format!("import {module}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(_) => Err(
            "numba does not import in target/venv (run tools/install-implementations.sh python)"
                .into(),
        ),
        Err(e) => Err(format!("target/venv/bin/python: {e}")),
    }
}

/// Every implementation atomcts knows, available or not, in a fixed order.
pub fn implementations() -> Vec<Implementation> {
    let mut out = Vec::new();
    for k in crate::back::opencl::KNOWN {
        out.push(Implementation {
            adapter: format!("opencl:{}", k.name),
            what: format!("OpenCL: {}", k.platform),
            available: crate::back::opencl::availability(k.name),
            baseline: Some(format!("adapters/baselines/opencl-{}.baseline", k.name)),
        });
    }
    for k in crate::back::vulkan::KNOWN {
        for (route, what) in [
            (
                crate::back::vulkan::Route::Spirv,
                "Vulkan (SPIR-V built from the IR)",
            ),
            (
                crate::back::vulkan::Route::WgslNaga,
                "WGSL compiled by naga, run on Vulkan",
            ),
        ] {
            let p = route.prefix();
            out.push(Implementation {
                adapter: format!("{p}:{}", k.name),
                what: format!("{what}: {} ({})", k.device, k.package),
                available: crate::back::vulkan::availability(k.name),
                baseline: Some(format!("adapters/baselines/{p}-{}.baseline", k.name)),
            });
        }
    }
    out.push(Implementation {
        adapter: NUMBA_CUDASIM.into(),
        what: "Numba's CUDA simulator (protocol 2, semantic level)".into(),
        available: python_availability("adapters/shims/numba_cudasim.py", "numba"),
        baseline: Some("adapters/shims/numba_cudasim.baseline".into()),
    });
    out.push(Implementation {
        adapter: WARP_CPU.into(),
        what: "NVIDIA Warp on its CPU device (protocol 2, semantic level)".into(),
        available: python_availability("adapters/shims/warp_cpu.py", "warp"),
        baseline: Some("adapters/shims/warp_cpu.baseline".into()),
    });
    out.push(Implementation {
        adapter: "cuda".into(),
        what: "an NVIDIA GPU through the CUDA driver (the PTX back end)".into(),
        available: crate::back::ptx::run::availability(),
        baseline: None,
    });
    out
}

/// The implementations that can run here: `atomcts report`'s default.
pub fn available() -> Vec<Implementation> {
    implementations()
        .into_iter()
        .filter(|i| i.available.is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_and_slugs() {
        assert_eq!(claimed_profile("opencl:pocl"), "spirv");
        assert_eq!(claimed_profile("cuda"), "nvidia-ptx");
        assert_eq!(claimed_profile(NUMBA_CUDASIM), "nvidia-ptx");
        assert_eq!(claimed_profile("fast"), "default");
        assert_eq!(slug("opencl:pocl"), "opencl_pocl");
        assert_eq!(slug(NUMBA_CUDASIM), "numba-cudasim");
        assert_eq!(slug(WARP_CPU), "warp-cpu");
        assert_eq!(claimed_profile(WARP_CPU), "default");
        assert_eq!(slug("cmd:python3 x/y.py"), "cmd_python3_x_y_py");
    }

    #[test]
    fn every_known_implementation_is_listed_once() {
        let all = implementations();
        let mut names: Vec<_> = all.iter().map(|i| i.adapter.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(names.iter().any(|n| n == "opencl:pocl"));
        assert!(names.iter().any(|n| n == NUMBA_CUDASIM));
    }
}
