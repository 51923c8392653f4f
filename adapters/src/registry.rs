//! Every adapter kind and every known driver, in one table: what `--adapter` accepts, how each
//! kind opens, the profile it claims, the file extension of the programs it runs, its help
//! text, and the implementations this project knows how to reach through it
//! ([`crate::discover`]). The command line, `atomcts list adapters`, the report's claimed
//! profile and the saved programs all read this table; adding a kind touches this file and the
//! kind's own folder only.

use crate::discover::Implementation;
use crate::{Adapter, AdapterError, FastAdapter, ReferenceAdapter, SubprocessAdapter};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::LazyLock;
use std::time::Duration;

/// What opening an adapter may use besides its argument.
#[derive(Clone, Debug)]
pub struct Options {
    /// The per-case deadline (`--adapter-timeout-ms`) for adapters that enforce one.
    pub timeout: Duration,
}

/// Why an adapter argument did not open.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// No kind of this build takes this argument.
    #[error("unknown adapter `{0}` (adapters: {list})", list = usage())]
    Unknown(String),
    /// The kind's constructor failed (unavailable, no such device).
    #[error(transparent)]
    Adapter(#[from] AdapterError),
    /// The adapter must run in a process with this environment (a known OpenCL driver, so
    /// that the ICD loader loads only it): the caller runs itself again with it, with
    /// [`REEXEC_VAR`] set.
    #[error("the adapter needs the environment {0:?} (run again with it)")]
    Environment(Vec<(String, String)>),
}

/// Set in a process that runs again with an adapter's environment ([`OpenError::Environment`]),
/// so that it does not run again a second time.
pub const REEXEC_VAR: &str = "ATOMCTS_OPENCL_REEXEC";

/// The program files of a kind that runs programs of its own (an OpenCL C kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramFile {
    /// The file extension, without the dot.
    pub ext: &'static str,
    /// What starts a comment line in that language.
    pub comment: &'static str,
}

/// A kind's constructor: the whole argument, the selector after `name:` (empty without one),
/// the options.
pub type Opener = fn(&str, &str, &Options) -> Result<Box<dyn Adapter>, OpenError>;

/// One kind of adapter argument.
#[derive(Clone, Copy)]
pub struct Kind {
    /// The argument itself, or the prefix before `:` when [`Kind::selector`] is set.
    pub name: &'static str,
    /// Other spellings of a kind without a selector (`builtin` for `fast`).
    pub aliases: &'static [&'static str],
    /// What follows `name:` in `list adapters` (`<command>`, `<name>`); `None`: no selector.
    pub selector: Option<&'static str>,
    /// The known selectors, for the usage line (`pocl`, `oclgrind`, ...).
    pub known: fn() -> Vec<&'static str>,
    /// A few words, for `--adapter`'s help.
    pub summary: &'static str,
    /// The lines of `atomcts list adapters` after the argument.
    pub help: &'static [&'static str],
    /// The profile an adapter of this kind claims before it is opened (a shim's handshake may
    /// name its own, which wins; see [`crate::Adapter::claimed_profile`]).
    pub profile: &'static str,
    /// Its programs' files, when it runs programs of its own.
    pub program: Option<ProgramFile>,
    /// The implementations this project knows of this kind, available or not.
    pub implementations: fn() -> Vec<Implementation>,
    /// Opens it: the whole argument, and the selector after `name:` (empty without one).
    pub open: Opener,
}

impl Kind {
    /// How an argument of this kind is written in `list adapters` (`fast`, `opencl:<name>`).
    pub fn syntax(&self) -> String {
        match self.selector {
            Some(s) => format!("{}:{s}", self.name),
            None => self.name.to_string(),
        }
    }

    /// How it is written in the usage line, its known selectors named
    /// (`opencl:<pocl|oclgrind|rusticl|name>`).
    pub fn usage(&self) -> String {
        match self.selector {
            Some(s) => {
                let known = (self.known)();
                if known.is_empty() {
                    format!("{}:{s}", self.name)
                } else {
                    let inner = s.trim_start_matches('<').trim_end_matches('>');
                    format!("{}:<{}|{inner}>", self.name, known.join("|"))
                }
            }
            None => self.name.to_string(),
        }
    }

    /// Whether `arg` is of this kind; the selector when it is (empty without one).
    pub fn matches<'a>(&self, arg: &'a str) -> Option<&'a str> {
        match self.selector {
            Some(_) => arg
                .strip_prefix(self.name)
                .and_then(|rest| rest.strip_prefix(':')),
            None => (arg == self.name || self.aliases.contains(&arg)).then_some(""),
        }
    }
}

fn none() -> Vec<&'static str> {
    vec![]
}

fn no_implementations() -> Vec<Implementation> {
    vec![]
}

/// The built-in fast path.
const FAST: Kind = Kind {
    name: "fast",
    aliases: &["builtin"],
    selector: None,
    known: none,
    summary: "the built-in fast path, the default",
    help: &["the built-in fast path, bit-identical to the reference (default)"],
    profile: "default",
    program: None,
    implementations: no_implementations,
    open: |_, _, _| Ok(Box::new(FastAdapter)),
};

/// The reference model.
const REFERENCE: Kind = Kind {
    name: "reference",
    aliases: &[],
    selector: None,
    known: none,
    summary: "the spec-literal model",
    help: &["the spec-literal reference model"],
    profile: "default",
    program: None,
    implementations: no_implementations,
    open: |_, _, _| Ok(Box::new(ReferenceAdapter)),
};

#[cfg(feature = "opencl")]
/// OpenCL drivers.
const OPENCL: Kind = Kind {
    name: "opencl",
    aliases: &[],
    selector: Some("<name>"),
    known: || crate::back::opencl::KNOWN.iter().map(|k| k.name).collect(),
    summary: "an OpenCL driver",
    help: &[
        "an OpenCL driver (semantic level: runs the lowered IR as OpenCL C); name is",
        "a known driver below or a platform/device name substring",
    ],
    profile: "spirv",
    program: Some(ProgramFile {
        ext: "cl",
        comment: "//",
    }),
    implementations: || {
        crate::back::opencl::KNOWN
            .iter()
            .map(|k| Implementation {
                adapter: format!("opencl:{}", k.name),
                what: format!("OpenCL: {}", k.platform),
                available: crate::back::opencl::availability(k.name),
                baseline: Some(format!("adapters/baselines/opencl-{}.baseline", k.name)),
            })
            .collect()
    },
    open: open_opencl,
};

#[cfg(feature = "vulkan")]
/// Vulkan drivers, SPIR-V built from the IR.
const VULKAN: Kind = Kind {
    name: "vulkan",
    aliases: &[],
    selector: Some("<name>"),
    known: vulkan_known,
    summary: "a Vulkan driver",
    help: &["a Vulkan driver (semantic level: runs the lowered IR as SPIR-V built from it)"],
    profile: "spirv",
    program: Some(ProgramFile {
        ext: "spvasm",
        comment: ";",
    }),
    implementations: || vulkan_implementations(crate::back::vulkan::Route::Spirv),
    open: |arg, sel, _| open_vulkan(arg, crate::back::vulkan::Route::Spirv, sel),
};

#[cfg(feature = "vulkan")]
/// WGSL compiled by naga, run on Vulkan drivers.
const WGSL_NAGA: Kind = Kind {
    name: "wgsl-naga",
    aliases: &[],
    selector: Some("<name>"),
    known: vulkan_known,
    summary: "WGSL compiled by naga on a Vulkan driver",
    help: &[
        "the same cases as WGSL compiled by naga, run on a Vulkan driver",
        "name is a known driver or a device name substring",
    ],
    profile: "spirv",
    program: Some(ProgramFile {
        ext: "wgsl",
        comment: "//",
    }),
    implementations: || vulkan_implementations(crate::back::vulkan::Route::WgslNaga),
    open: |arg, sel, _| open_vulkan(arg, crate::back::vulkan::Route::WgslNaga, sel),
};

#[cfg(feature = "webgpu")]
/// A browser's WebGPU (headless Chromium on SwiftShader), judging its WGSL compiler and runtime.
const WEBGPU: Kind = Kind {
    name: "webgpu",
    aliases: &[],
    selector: Some("<browser>"),
    known: || crate::back::webgpu::KNOWN.to_vec(),
    summary: "a browser's WebGPU (headless Chromium)",
    help: &[
        "the WGSL route's shaders compiled and run by a browser's WebGPU (semantic level:",
        "Chromium's Tint and Dawn, headless on SwiftShader, cases batched per page round trip)",
    ],
    profile: "spirv",
    program: Some(ProgramFile {
        ext: "wgsl",
        comment: "//",
    }),
    implementations: || {
        crate::back::webgpu::KNOWN
            .iter()
            .map(|b| Implementation {
                adapter: format!("webgpu:{b}"),
                what: format!("WebGPU in headless {b} (Dawn, Tint) on SwiftShader"),
                available: crate::back::webgpu::availability(b),
                baseline: Some(format!("adapters/baselines/webgpu-{b}.baseline")),
            })
            .collect()
    },
    open: |arg, sel, o| {
        let a = crate::back::webgpu::WebGpuAdapter::open(sel, o.timeout)?;
        eprintln!("{arg}: {}", a.describe_line());
        Ok(Box::new(a))
    },
};

/// A shim speaking adapters/PROTOCOL.md.
const CMD: Kind = Kind {
    name: "cmd",
    aliases: &[],
    selector: Some("<command>"),
    known: none,
    summary: "a shim speaking adapters/PROTOCOL.md",
    help: &[
        "an implementation behind a shim speaking adapters/PROTOCOL.md, e.g.",
        "cmd:'python3 adapters/shims/mini_sass.py' (a small independent SASS integer ATOM,",
        "protocol 1, text level)",
    ],
    profile: "default",
    program: None,
    implementations: shim_implementations,
    open: |_, command, o| Ok(Box::new(SubprocessAdapter::start(command, o.timeout)?)),
};

/// Intel's vISA assembler, `GenX_IR`, for one platform (text level, issue 29).
const VISA_ASM: Kind = Kind {
    name: "visa-asm",
    aliases: &[],
    selector: Some("<platform>"),
    known: || crate::visa_asm::PLATFORMS.to_vec(),
    summary: "Intel's vISA assembler GenX_IR for a platform",
    help: &[
        "Intel's vISA assembler and finalizer GenX_IR (Debian libigc-tools) for a platform",
        "(text level: assembles each vISA case's instruction in Intel's text, judged on",
        "acceptance and its rejection reason; it executes nothing: values not applicable)",
    ],
    profile: crate::visa_asm::PROFILE,
    program: Some(ProgramFile {
        ext: "visaasm",
        comment: "//",
    }),
    implementations: || {
        crate::visa_asm::GATED
            .iter()
            .map(|p| Implementation {
                adapter: format!("visa-asm:{p}"),
                what: format!("Intel's vISA assembler GenX_IR (IGC 1.0.12504.6), platform {p}"),
                available: crate::visa_asm::availability(),
                baseline: Some(format!("adapters/baselines/visa-asm-{p}.baseline")),
            })
            .collect()
    },
    open: |_, sel, o| {
        Ok(Box::new(crate::visa_asm::VisaAsmAdapter::open(
            sel, o.timeout,
        )?))
    },
};

#[cfg(feature = "cuda")]
/// An NVIDIA GPU through the CUDA driver.
const CUDA: Kind = Kind {
    name: "cuda",
    aliases: &[],
    selector: None,
    known: none,
    summary: "an NVIDIA GPU through the CUDA driver",
    help: &["an NVIDIA GPU through the CUDA driver (semantic level: runs the lowered IR as PTX)"],
    profile: "nvidia-ptx",
    program: Some(ProgramFile {
        ext: "ptx",
        comment: "//",
    }),
    implementations: || {
        vec![Implementation {
            adapter: "cuda".into(),
            what: "an NVIDIA GPU through the CUDA driver (the PTX back end)".into(),
            available: crate::back::ptx::run::availability(),
            baseline: None,
        }]
    },
    // The PTX back end on an NVIDIA GPU (CUDA driver loaded at run time); without a
    // driver this is one line.
    open: |_, _, o| {
        let a = crate::back::ptx::CudaAdapter::open()?.with_timeout(o.timeout);
        eprintln!("cuda: {}", a.describe());
        Ok(Box::new(a))
    },
};

/// Every kind this build has, in the order `list adapters` names them (a kind whose back end's
/// feature is off is absent).
pub fn kinds() -> &'static [Kind] {
    static KINDS: LazyLock<Vec<Kind>> = LazyLock::new(|| {
        let mut kinds = vec![FAST, REFERENCE];
        #[cfg(feature = "opencl")]
        kinds.push(OPENCL);
        #[cfg(feature = "vulkan")]
        kinds.extend([VULKAN, WGSL_NAGA]);
        #[cfg(feature = "webgpu")]
        kinds.push(WEBGPU);
        kinds.push(CMD);
        kinds.push(VISA_ASM);
        #[cfg(feature = "cuda")]
        kinds.push(CUDA);
        kinds
    });
    &KINDS
}

/// The kind of an adapter argument, and its selector (empty without one).
pub fn parse(arg: &str) -> Option<(&'static Kind, &str)> {
    kinds()
        .iter()
        .find_map(|k| k.matches(arg).map(|sel| (k, sel)))
}

/// Opens the adapter an argument names.
pub fn open(arg: &str, options: &Options) -> Result<Box<dyn Adapter>, OpenError> {
    let (kind, selector) = parse(arg).ok_or_else(|| OpenError::Unknown(arg.to_string()))?;
    (kind.open)(arg, selector, options)
}

/// The kinds as the usage line names them: `fast, reference, opencl:<pocl|...|name>, ...`.
pub fn usage() -> String {
    kinds()
        .iter()
        .map(Kind::usage)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--adapter`'s help: every kind, in a few words each.
pub fn adapter_help() -> String {
    let kinds: Vec<String> = kinds()
        .iter()
        .map(|k| format!("{} ({})", k.syntax(), k.summary))
        .collect();
    format!(
        "Adapter: {} (`atomcts list adapters` says more)",
        kinds.join(", ")
    )
}

/// The kinds part of `atomcts list adapters`: one entry per kind, its help lines indented.
pub fn kinds_help() -> String {
    let mut s = String::new();
    for k in kinds() {
        for (i, line) in k.help.iter().enumerate() {
            if i == 0 {
                s.push_str(&format!("{:<9}  {line}\n", k.syntax()));
            } else {
                s.push_str(&format!("{:15}{line}\n", ""));
            }
        }
    }
    s
}

/// The command of the Numba CUDA simulator shim (protocol 2), run from the source tree's root.
pub const NUMBA_CUDASIM: &str = "cmd:target/venv/bin/python adapters/shims/numba_cudasim.py";

/// The command of the NVIDIA Warp (CPU device) shim (protocol 2), run from the source tree's root.
pub const WARP_CPU: &str = "cmd:target/venv/bin/python adapters/shims/warp_cpu.py";

/// The command of the Taichi (CPU backend) shim (protocol 2), run from the source tree's root.
pub const TAICHI_CPU: &str = "cmd:target/venv/bin/python adapters/shims/taichi_cpu.py";

/// The command of the Taichi (Vulkan backend) shim (protocol 2), run from the source tree's root.
pub const TAICHI_VULKAN: &str = "cmd:target/venv/bin/python adapters/shims/taichi_vulkan.py";

/// The command of the Triton interpreter shim (protocol 2), run from the source tree's root.
pub const TRITON_INTERP: &str = "cmd:target/venv/bin/python adapters/shims/triton_interp.py";

/// Known shims with a name of their own: the argument, its file name, the profile it claims.
///
/// - the Numba CUDA simulator: `nvidia-ptx` (it simulates CUDA; its handshake says so too).
/// - Warp on the CPU: `default` (Warp documents no FTZ, NaN or signed-zero rule for its CPU
///   atomics; its handshake says so).
/// - Taichi (CPU and Vulkan) and Triton's interpreter: `default` (their documentation states no
///   FTZ, rounding, NaN or signed-zero rule for their atomics; their handshakes say so).
const NAMED_SHIMS: &[(&str, &str, &str)] = &[
    (NUMBA_CUDASIM, "numba-cudasim", "nvidia-ptx"),
    (WARP_CPU, "warp-cpu", "default"),
    (TAICHI_CPU, "taichi-cpu", "default"),
    (TAICHI_VULKAN, "taichi-vulkan", "default"),
    (TRITON_INTERP, "triton-interp", "default"),
];

fn shim_implementations() -> Vec<Implementation> {
    vec![
        Implementation {
            adapter: NUMBA_CUDASIM.into(),
            what: "Numba's CUDA simulator (protocol 2, semantic level)".into(),
            available: python_availability("adapters/shims/numba_cudasim.py", "numba"),
            baseline: Some("adapters/shims/numba_cudasim.baseline".into()),
        },
        Implementation {
            adapter: WARP_CPU.into(),
            what: "NVIDIA Warp on its CPU device (protocol 2, semantic level)".into(),
            available: python_availability("adapters/shims/warp_cpu.py", "warp"),
            baseline: Some("adapters/shims/warp_cpu.baseline".into()),
        },
        Implementation {
            adapter: TAICHI_CPU.into(),
            what: "Taichi on its CPU backend (protocol 2, semantic level)".into(),
            available: python_availability("adapters/shims/taichi_cpu.py", "taichi"),
            baseline: Some("adapters/shims/taichi_cpu.baseline".into()),
        },
        Implementation {
            adapter: TAICHI_VULKAN.into(),
            what: "Taichi on its Vulkan backend (protocol 2, semantic level)".into(),
            available: python_availability("adapters/shims/taichi_vulkan.py", "taichi"),
            baseline: Some("adapters/shims/taichi_vulkan.baseline".into()),
        },
        Implementation {
            adapter: TRITON_INTERP.into(),
            what: "Triton's interpreter, TRITON_INTERPRET=1 (protocol 2, semantic level)".into(),
            available: python_availability("adapters/shims/triton_interp.py", "triton"),
            baseline: Some("adapters/shims/triton_interp.baseline".into()),
        },
    ]
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
        Ok(_) => Err(format!(
            "{module} does not import in target/venv (run tools/install-implementations.sh python)"
        )),
        Err(e) => Err(format!("target/venv/bin/python: {e}")),
    }
}

#[cfg(feature = "vulkan")]
fn vulkan_known() -> Vec<&'static str> {
    crate::back::vulkan::KNOWN.iter().map(|k| k.name).collect()
}

#[cfg(feature = "vulkan")]
fn vulkan_implementations(route: crate::back::vulkan::Route) -> Vec<Implementation> {
    use crate::back::vulkan::Route;
    let what = match route {
        Route::Spirv => "Vulkan (SPIR-V built from the IR)",
        Route::WgslNaga => "WGSL compiled by naga, run on Vulkan",
    };
    let p = route.prefix();
    crate::back::vulkan::KNOWN
        .iter()
        .map(|k| Implementation {
            adapter: format!("{p}:{}", k.name),
            what: format!("{what}: {} ({})", k.device, k.package),
            available: crate::back::vulkan::availability(k.name),
            baseline: Some(format!("adapters/baselines/{p}-{}.baseline", k.name)),
        })
        .collect()
}

#[cfg(feature = "vulkan")]
/// `vulkan:<selector>` (SPIR-V from the IR) or `wgsl-naga:<selector>` (WGSL through naga). A
/// missing driver is one line.
fn open_vulkan(
    arg: &str,
    route: crate::back::vulkan::Route,
    selector: &str,
) -> Result<Box<dyn Adapter>, OpenError> {
    let a = crate::back::vulkan::VulkanAdapter::open(route, selector)?;
    eprintln!("{arg}: {}", a.describe());
    Ok(Box::new(a))
}

#[cfg(feature = "opencl")]
/// `opencl:<selector>`. A known driver needs the ICD loader to see only it (and rusticl needs
/// `RUSTICL_ENABLE`): without that environment, [`OpenError::Environment`] asks the caller to
/// run again with it, so that two drivers' LLVMs never share one process.
fn open_opencl(arg: &str, selector: &str, _: &Options) -> Result<Box<dyn Adapter>, OpenError> {
    use crate::back::opencl;
    let env = opencl::environment(selector);
    let differs = env
        .iter()
        .any(|(k, v)| std::env::var(k).ok().as_deref() != Some(v.as_str()));
    if differs && std::env::var_os(REEXEC_VAR).is_none() {
        if let Err(why) = opencl::availability(selector) {
            return Err(OpenError::Adapter(AdapterError {
                adapter: arg.to_string(),
                kind: crate::AdapterErrorKind::Unavailable(why),
            }));
        }
        return Err(OpenError::Environment(env));
    }
    let a = opencl::OpenClAdapter::open(selector)?;
    eprintln!("{arg}: {}", a.describe());
    Ok(Box::new(a))
}

/// Every implementation this project knows, available or not, in a fixed order.
pub fn implementations() -> Vec<Implementation> {
    kinds().iter().flat_map(|k| (k.implementations)()).collect()
}

/// The profile an adapter argument claims before it is opened (a shim's handshake may name its
/// own, which wins; see [`crate::Adapter::claimed_profile`]): a known shim's own, else its
/// kind's, else `default`.
///
/// - `opencl:*`, `vulkan:*`, `wgsl-naga:*`, `webgpu:*`: `spirv` (WebGPU's WGSL atomics are
///   Vulkan's on SwiftShader). OpenCL C 2.0+/3.0 atomics and Vulkan's
///   SPIR-V atomics are both specified by the Khronos memory model and SPIR-V's atomic
///   instructions (and their float extensions, which `spirv` follows: any NaN, either signed
///   zero, SPIR-V's NaN rule for min/max); nothing in OpenCL C promises NVIDIA's FTZ or Intel's
///   rules.
/// - `cuda`: `nvidia-ptx` (the PTX ISA and the CUDA Programming Guide describe what it runs).
/// - `visa-asm:*`: `default` (an assembler, judged on legality against the documents' defaults:
///   [`crate::visa_asm::PROFILE`]).
/// - `fast`, `reference` and anything else: `default`.
pub fn claimed_profile(adapter: &str) -> &'static str {
    if let Some((_, _, profile)) = NAMED_SHIMS.iter().find(|(a, _, _)| *a == adapter) {
        return profile;
    }
    parse(adapter).map_or("default", |(k, _)| k.profile)
}

/// The program files of an adapter argument's programs (`.cl` for a kind that does not say).
pub fn program_file(adapter: &str) -> ProgramFile {
    parse(adapter)
        .and_then(|(k, _)| k.program)
        .unwrap_or(ProgramFile {
            ext: "cl",
            comment: "//",
        })
}

/// A file name for an adapter argument: a known shim's name, else letters, digits and `-`
/// kept, runs of anything else one `_` (`opencl:pocl` -> `opencl_pocl`).
pub fn slug(adapter: &str) -> String {
    let named = NAMED_SHIMS
        .iter()
        .find(|(a, _, _)| *a == adapter)
        .map_or(adapter, |(_, name, _)| name);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An argument of each kind: its name, with a selector where it takes one.
    fn example(k: &Kind) -> String {
        match k.selector {
            Some(_) => format!("{}:x", k.name),
            None => k.name.to_string(),
        }
    }

    #[test]
    fn every_kind_parses_back_to_itself() {
        for k in kinds() {
            let arg = example(k);
            let (found, sel) = parse(&arg).expect("parses");
            assert_eq!(found.name, k.name);
            assert_eq!(sel, if k.selector.is_some() { "x" } else { "" });
            for alias in k.aliases {
                assert_eq!(parse(alias).map(|(f, _)| f.name), Some(k.name));
            }
        }
        assert!(parse("nonsense").is_none());
        assert!(
            parse("opencl").is_none(),
            "a selector kind needs its selector"
        );
    }

    #[test]
    fn help_names_every_kind() {
        let (help, list, usage) = (adapter_help(), kinds_help(), usage());
        for k in kinds() {
            assert!(
                help.contains(&k.syntax()),
                "--adapter help lacks {}",
                k.name
            );
            assert!(
                list.lines().any(|l| l.starts_with(&k.syntax())),
                "list adapters lacks {}",
                k.name
            );
            assert!(usage.contains(k.name), "{usage}");
        }
        let unknown = OpenError::Unknown("x".into()).to_string();
        assert!(unknown.contains("cmd:<command>"), "{unknown}");
        #[cfg(feature = "opencl")]
        assert!(
            unknown.contains("opencl:<pocl|oclgrind|rusticl|intel-cpu|name>"),
            "{unknown}"
        );
        #[cfg(feature = "cuda")]
        assert!(unknown.contains("cuda"), "{unknown}");
    }

    #[test]
    fn every_implementation_parses_to_a_kind() {
        for i in implementations() {
            assert!(parse(&i.adapter).is_some(), "{}", i.adapter);
        }
    }

    #[test]
    fn claims_slugs_and_program_files() {
        assert_eq!(claimed_profile(NUMBA_CUDASIM), "nvidia-ptx");
        assert_eq!(claimed_profile(WARP_CPU), "default");
        assert_eq!(claimed_profile(TAICHI_CPU), "default");
        assert_eq!(claimed_profile(TAICHI_VULKAN), "default");
        assert_eq!(claimed_profile(TRITON_INTERP), "default");
        assert_eq!(claimed_profile("fast"), "default");
        assert_eq!(claimed_profile("cmd:python3 x.py"), "default");
        assert_eq!(slug("opencl:pocl"), "opencl_pocl");
        assert_eq!(slug(NUMBA_CUDASIM), "numba-cudasim");
        assert_eq!(slug(WARP_CPU), "warp-cpu");
        assert_eq!(slug(TAICHI_CPU), "taichi-cpu");
        assert_eq!(slug(TAICHI_VULKAN), "taichi-vulkan");
        assert_eq!(slug(TRITON_INTERP), "triton-interp");
        assert_eq!(slug("cmd:python3 x/y.py"), "cmd_python3_x_y_py");
        assert_eq!(program_file("fast").ext, "cl");
    }

    #[cfg(all(
        feature = "opencl",
        feature = "vulkan",
        feature = "webgpu",
        feature = "cuda"
    ))]
    #[test]
    fn back_ends_claim_and_save_programs() {
        assert_eq!(claimed_profile("opencl:pocl"), "spirv");
        assert_eq!(claimed_profile("wgsl-naga:lavapipe"), "spirv");
        assert_eq!(claimed_profile("cuda"), "nvidia-ptx");
        assert_eq!(program_file("cuda").ext, "ptx");
        assert_eq!(program_file("opencl:pocl").ext, "cl");
        assert_eq!(program_file("vulkan:lavapipe").ext, "spvasm");
        assert_eq!(program_file("vulkan:lavapipe").comment, ";");
        assert_eq!(program_file("wgsl-naga:lavapipe").ext, "wgsl");
        assert_eq!(claimed_profile("webgpu:chromium"), "spirv");
        assert_eq!(program_file("webgpu:chromium").ext, "wgsl");
        let names: Vec<_> = kinds().iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            [
                "fast",
                "reference",
                "opencl",
                "vulkan",
                "wgsl-naga",
                "webgpu",
                "cmd",
                "visa-asm",
                "cuda"
            ]
        );
    }

    #[cfg(not(any(feature = "opencl", feature = "vulkan", feature = "cuda")))]
    #[test]
    fn without_back_ends_only_the_model_and_shims_remain() {
        let names: Vec<_> = kinds().iter().map(|k| k.name).collect();
        assert_eq!(names, ["fast", "reference", "cmd", "visa-asm"]);
        assert!(parse("cuda").is_none() && parse("opencl:pocl").is_none());
        assert_eq!(claimed_profile("cuda"), "default");
    }
}
