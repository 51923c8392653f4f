//! The OpenCL back end: a semantic-level adapter that runs each case's lowered IR as an
//! OpenCL C kernel on a real driver (`--adapter opencl:<pocl|oclgrind|rusticl|name>`).
//!
//! [`single`] (one memory instruction), [`concurrent`] (several at once) and [`shuffle`]
//! (SIMD-group functions) turn the shared plans into kernel source over what [`emit`] declares
//! for all of them (the device's features, the built-ins, the kernel and its arguments); pure,
//! tested without a driver. [`run`] builds and dispatches a kernel through the ICD loader,
//! loaded at run time. What the device
//! can express comes from what it reports (extensions, OpenCL C versions), never a hand table.

pub mod batch;
pub mod concurrent;
pub mod emit;
pub mod float;
pub mod repro;
pub mod run;
pub mod shuffle;
pub mod single;

use crate::plan::{NotApplicable, Plan, Returned};
use crate::shuffle::ShufflePlan;
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::State;
use atomcts_reference::ir::Lowered;
use atomcts_reference::types::Space;
use emit::{Features, Plant};
use std::path::Path;

/// A driver this project installs and knows how to reach (research/implementations.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    /// The name after `opencl:`.
    pub name: &'static str,
    /// A substring of its platform name.
    pub platform: &'static str,
    /// The ICD the loader must see (`OCL_ICD_VENDORS`: an `.icd` file or the ICD library).
    pub icd: &'static str,
    /// Other environment it needs.
    pub env: &'static [(&'static str, &'static str)],
    /// The Debian package.
    pub package: &'static str,
}

/// The three OpenCL implementations of issue 8, and Intel's OpenCL CPU runtime (issue 29).
pub const KNOWN: &[Known] = &[
    Known {
        name: "pocl",
        platform: "Portable Computing Language",
        icd: "/etc/OpenCL/vendors/pocl.icd",
        env: &[],
        package: "pocl-opencl-icd",
    },
    Known {
        name: "oclgrind",
        platform: "Oclgrind",
        // Not registered by the Debian package; the loader takes the library itself.
        icd: "/usr/lib/oclgrind/liboclgrind-rt-icd.so",
        env: &[],
        package: "oclgrind",
    },
    Known {
        name: "rusticl",
        platform: "rusticl",
        icd: "/etc/OpenCL/vendors/rusticl.icd",
        env: &[("RUSTICL_ENABLE", "llvmpipe")],
        package: "mesa-opencl-icd",
    },
    Known {
        name: "intel-cpu",
        platform: "Intel(R) OpenCL",
        // Written by tools/install-implementations.sh (the wheel's own .icd file names a build
        // path): it names target/venv/lib/libintelocl.so, which finds its libraries beside it
        // (the venv's lib is never on LD_LIBRARY_PATH: its libOpenCL.so.1 would shadow the
        // system loader). Relative to the source tree's root.
        icd: "target/opencl-vendors/intel-cpu.icd",
        env: &[],
        package: "intel-opencl-rt and intel-cmplr-lib-rt from PyPI: tools/install-implementations.sh opencl",
    },
];

/// The known driver `selector` names, if any.
pub fn known(selector: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == selector)
}

/// The environment the process must have for `selector` (so that the ICD loader loads only that
/// driver); empty for a free-form platform/device name. A relative ICD path (a driver installed
/// under `target/`) is made absolute from the working directory.
pub fn environment(selector: &str) -> Vec<(String, String)> {
    let Some(k) = known(selector) else {
        return vec![];
    };
    let icd = Path::new(k.icd);
    let icd = if icd.is_relative() {
        std::env::current_dir().map_or_else(|_| icd.to_path_buf(), |d| d.join(icd))
    } else {
        icd.to_path_buf()
    };
    let mut env = vec![(
        "OCL_ICD_VENDORS".to_string(),
        icd.to_string_lossy().into_owned(),
    )];
    env.extend(k.env.iter().map(|(a, b)| (a.to_string(), b.to_string())));
    env
}

/// Whether `selector`'s driver is installed, without loading it: `Err` says why not, in one
/// line.
pub fn availability(selector: &str) -> Result<(), String> {
    if !cl3::is_opencl_runtime_available() {
        return Err("no OpenCL ICD loader (install ocl-icd-libopencl1)".into());
    }
    if let Some(k) = known(selector)
        && !Path::new(k.icd).exists()
    {
        let root = if Path::new(k.icd).is_relative() {
            " in the source tree's root (run atomcts from there)"
        } else {
            ""
        };
        return Err(format!("{} missing{root} (install {})", k.icd, k.package));
    }
    Ok(())
}

/// The features the emitters use, from what the device reports (extensions, OpenCL C versions
/// and features, float atomic capabilities, sub-group sizes).
pub fn features(info: &run::DeviceInfo) -> Features {
    let has = |e: &str| info.extensions.iter().any(|x| x == e);
    let c3 = info.c_versions.iter().any(|v| *v >= (3, 0));
    let required_sizes = if has("cl_intel_required_subgroup_size") {
        info.sub_group_sizes
            .iter()
            .filter(|n| **n < 128)
            .fold(0u128, |m, n| m | 1u128 << n)
    } else {
        0
    };
    Features {
        int64_base: has("cl_khr_int64_base_atomics"),
        int64_extended: has("cl_khr_int64_extended_atomics"),
        c11: c3,
        fp_atomics: if has("cl_ext_float_atomics") {
            info.fp_atomics
        } else {
            [0; 3]
        },
        fp_denorm: info.fp_denorm,
        sub_groups: emit::SubGroups {
            core: has("cl_khr_subgroups")
                || (c3 && info.c_features.iter().any(|x| x == "__opencl_c_subgroups")),
            shuffle: has("cl_khr_subgroup_shuffle"),
            shuffle_relative: has("cl_khr_subgroup_shuffle_relative"),
            rotate: has("cl_khr_subgroup_rotate"),
            intel: has("cl_intel_subgroups"),
            intel_long: has("cl_intel_subgroups_long"),
            required_sizes,
        },
        work_group_scope_only: info
            .atomic_memory
            .is_some_and(|m| m & emit::ATOMIC_SCOPE_DEVICE == 0),
    }
}

/// The program that ran the last case ([`crate::Adapter::last_program`]), printed only beside
/// a failing case: a batched case keeps its kernel and writes the listing only when asked for
/// (issue 31: writing it for every case was a twentieth of a generated case's host time).
enum Last {
    Text(String),
    Listing {
        kernel: Box<emit::Kernel>,
        title: String,
        local: usize,
    },
}

/// An OpenCL device as an implementation under test.
pub struct OpenClAdapter {
    name: String,
    device: run::Device,
    features: Features,
    plant: Plant,
    last: Option<Last>,
    /// Whether to keep what each case dispatched ([`crate::Adapter::capture_dispatches`]).
    capture: bool,
    /// What the last case dispatched, or why it cannot be written standalone.
    dispatch: Option<Result<crate::repro::Dispatch, String>>,
    selector: String,
    /// Cases sent and not yet answered ([`batch`]).
    batching: batch::Batching,
    /// Single-instruction kernel texts written so far, by shape.
    texts: single::Texts,
}

/// The smallest work-group of an atomic or concurrent launch (issue 31): PoCL compiles and
/// links a kernel once per work-group size it runs with, so lane counts of 1 to 32 share one.
pub const OPENCL_MIN_LOCAL: usize = 32;

impl OpenClAdapter {
    /// Opens the device `selector` names (a known driver or a platform/device name substring).
    /// `ATOMCTS_OPENCL_PLANT=add_as_sub` (or `up_as_down`) plants a wrong built-in (for checking
    /// the corpus), `cross_case_write` a batched kernel that writes outside its case's memory
    /// (for checking the batch's guards); `ATOMCTS_OPENCL_BATCH=1` runs every case alone
    /// ([`batch`]).
    pub fn open(selector: &str) -> Result<OpenClAdapter, AdapterError> {
        let name = format!("opencl:{selector}");
        let unavailable = |why: String| AdapterError {
            adapter: name.clone(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        availability(selector).map_err(unavailable)?;
        let pattern = known(selector).map_or(selector, |k| k.platform);
        let device = run::Device::open(pattern).map_err(unavailable)?;
        let plant_var = std::env::var("ATOMCTS_OPENCL_PLANT").unwrap_or_default();
        let plant = Plant::from_name(&plant_var).ok_or_else(|| {
            unavailable(format!(
                "ATOMCTS_OPENCL_PLANT=`{plant_var}` (expected add_as_sub, up_as_down or cross_case_write)"
            ))
        })?;
        let features = features(&device.info);
        let window = batch::window_from_env().map_err(unavailable)?;
        Ok(OpenClAdapter {
            name,
            device,
            features,
            plant,
            last: None,
            capture: false,
            dispatch: None,
            selector: selector.to_string(),
            batching: batch::Batching::new(window),
            texts: single::Texts::default(),
        })
    }

    /// What the device reports, in one line.
    pub fn describe(&self) -> String {
        let i = &self.device.info;
        let f = &self.features;
        let sg = &f.sub_groups;
        let yn = |b: bool| if b { "yes" } else { "no" };
        let caps = |c: Option<u64>| {
            c.map_or_else(
                || "not reported (OpenCL 1.x)".to_string(),
                emit::atomic_capabilities,
            )
        };
        let sizes: Vec<String> = (0..128)
            .filter(|n| sg.can_require(*n))
            .map(|n| n.to_string())
            .collect();
        format!(
            "{} / {} ({}; {}; int64 atomics: {}/{}; C11 atomics: {}; atomic memory capabilities: {}; atomic fence capabilities: {}; float atomics (half/float/double): {:#x}/{:#x}/{:#x}; sub-group shuffle {} relative {} rotate {} intel {}; required sub-group sizes: {})",
            i.platform,
            i.device,
            i.version,
            i.c_version,
            if self.features.int64_base {
                "base"
            } else {
                "-"
            },
            if self.features.int64_extended {
                "extended"
            } else {
                "-"
            },
            if self.features.c11 { "yes" } else { "no" },
            caps(i.atomic_memory),
            caps(i.atomic_fence),
            f.fp_atomics[0],
            f.fp_atomics[1],
            f.fp_atomics[2],
            yn(sg.shuffle),
            yn(sg.shuffle_relative),
            yn(sg.rotate),
            yn(sg.intel),
            if sizes.is_empty() {
                "none".to_string()
            } else {
                sizes.join(", ")
            }
        )
    }

    /// The features the emitter uses.
    pub fn features(&self) -> Features {
        self.features
    }

    fn err(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: self.name.clone(),
            kind,
        }
    }
}

impl Adapter for OpenClAdapter {
    fn screen(&mut self, request: &Request<'_>) -> Option<String> {
        crate::back::screen(self, request)
    }

    fn builds(&self) -> Option<crate::Builds> {
        let (built, reused) = self.device.builds();
        Some(crate::Builds {
            what: "programs",
            built,
            reused,
        })
    }

    fn name(&self) -> &str {
        &self.name
    }

    /// The platform, the driver's version and the OpenCL and OpenCL C versions: what is the
    /// same on every machine with the same packages (the device name and `CL_DEVICE_VERSION`
    /// name the CPU, which [`OpenClAdapter::describe`] prints).
    fn device(&self) -> Option<String> {
        Some(self.device.info.device.trim().to_string())
    }

    fn describe(&self) -> Option<String> {
        let i = &self.device.info;
        let api = run::parse_api_version(&i.version)
            .map_or_else(|| i.version.clone(), |(a, b)| format!("OpenCL {a}.{b}"));
        Some(format!(
            "{} (driver {}; {api}; {})",
            i.platform.trim(),
            i.driver_version.trim(),
            i.c_version.trim()
        ))
    }

    /// OpenCL C atomics are specified, like SPIR-V's, by the Khronos memory model: the `spirv`
    /// profile is what an OpenCL driver claims.
    fn claimed_profile(&self) -> Option<String> {
        Some("spirv".into())
    }

    /// Capabilities of the case format, from what the device reports: 64-bit atomics with
    /// both cl_khr_int64 atomics extensions; f32/f64 atomic add with cl_ext_float_atomics' add
    /// in either space; the MSL SIMD-group generations with the sub-group extensions their
    /// functions map to; f16x2 and 16-bit integer atomics never (OpenCL C has no such
    /// built-ins). The per-op check (space, width, data) is the emitter's, from the lowered IR.
    fn supports(&self, capability: &str) -> bool {
        let f = &self.features;
        let add = float::FP_GLOBAL_ADD | float::FP_LOCAL_ADD;
        match capability {
            "u64_atomics" => f.int64_base && f.int64_extended,
            "f32_atomic_add" | "msl_atomic_float" => f.fp_atomics[1] & add != 0,
            "f64_atomic_add" => f.fp_atomics[2] & add != 0,
            "msl_simd_2_0" => f.sub_groups.shuffle && f.sub_groups.shuffle_relative,
            "msl_simd_2_1" => f.sub_groups.rotate,
            "msl_simd_2_4" => f.sub_groups.intel,
            _ => false,
        }
    }

    fn level(&self) -> Level {
        Level::Semantic
    }

    fn last_program(&self) -> Option<String> {
        self.last.as_ref().map(|l| match l {
            Last::Text(t) => t.clone(),
            Last::Listing {
                kernel,
                title,
                local,
            } => format!(
                // What ran (every single-instruction case runs through the batch), where it is
                // not what is printed.
                "// ran batched: one work-group of a dispatch of this kernel's batched form (its memory's offset, operands and lane count read per work-group), with the other cases of its shape; printed as it runs alone\n{}",
                kernel.listing(title, *local)
            ),
        })
    }

    fn capture_dispatches(&mut self, on: bool) {
        self.capture = on;
    }

    fn reproducer(&mut self, about: &crate::repro::About) -> Option<Result<String, String>> {
        let pattern = known(&self.selector).map_or(self.selector.as_str(), |k| k.platform);
        Some(match &self.dispatch {
            Some(Ok(d)) => {
                let mut about = about.clone();
                about.env = environment(&self.selector);
                repro::script(&about, d, pattern)
            }
            Some(Err(why)) => Err(why.clone()),
            None => Err("the case dispatched nothing on the device".into()),
        })
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.last = None;
        self.dispatch = None;
        crate::back::run(self, r)
            .map(Observation::Completed)
            .map_err(|k| self.err(k))
    }

    fn concurrent(&self) -> Option<&dyn crate::Concurrent> {
        Some(self)
    }

    fn pipelined(&self) -> Option<&dyn crate::Pipelined> {
        Some(self)
    }

    fn pipelined_mut(&mut self) -> Option<&mut dyn crate::Pipelined> {
        Some(self)
    }

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

/// What the OpenCL back end emitted for one case: a memory instruction's plan and kernel, or a
/// SIMD-group exchange's.
pub enum Emitted {
    /// An atomic (or store) over the shared [`Plan`].
    Atomic(Plan, emit::Kernel),
    /// A SIMD-group function over its [`ShufflePlan`] ([`shuffle`]).
    Shuffle(ShufflePlan, emit::Kernel),
}

/// The OpenCL back end: plan, emit OpenCL C (an atomic built-in, or a sub-group built-in for a
/// SIMD-group function), and run it on one work-group.
impl crate::back::Backend for OpenClAdapter {
    type Emitted = Emitted;

    fn emit(
        &mut self,
        r: &Request<'_>,
        lowered: &Lowered,
    ) -> Result<Self::Emitted, AdapterErrorKind> {
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        if let atomcts_reference::ir::Instr::Shuffle(_) = lowered.instr {
            // The reasons name the device generically: its name names the host's processor,
            // and reasons are compared across machines (issue 27, H19).
            let plan = ShufflePlan::new(r.asm, lowered, r.state, r.profile).map_err(na)?;
            let kernel = shuffle::emit(
                &plan,
                &self.features,
                self.device.info.max_work_group,
                self.plant,
            )
            .map_err(na)?;
            return Ok(Emitted::Shuffle(plan, kernel));
        }
        let plan = Plan::new(lowered, r.state).map_err(na)?;
        let kernel =
            single::emit_kept(&plan, &self.features, self.plant, &mut self.texts).map_err(na)?;
        float::check_float_values(
            &plan,
            &plan.layout().bytes(r.state, plan.space),
            &self.features,
        )
        .map_err(na)?;
        let n = plan.items.len();
        if n > self.device.info.max_work_group {
            return Err(na(NotApplicable(format!(
                "{n} work-items exceed the device's work-group size {}",
                self.device.info.max_work_group
            ))));
        }
        Ok(Emitted::Atomic(plan, kernel))
    }

    fn run(&mut self, r: &Request<'_>, emitted: Self::Emitted) -> Result<State, AdapterErrorKind> {
        let (plan, kernel) = match emitted {
            Emitted::Atomic(plan, kernel) => (plan, kernel),
            Emitted::Shuffle(plan, kernel) => return self.run_shuffle(r, &plan, &kernel),
        };
        let n = plan.items.len();
        let mut mem = plan.layout().bytes(r.state, plan.space);
        let local = self.local_size(n);
        self.last = Some(Last::Text(kernel.listing(r.id, local)));
        let args = self.capture.then(|| repro::args(&kernel, &mem, n));
        let (old, ok) = self
            .device
            .run_ndrange(&kernel, local, local, n, &mut mem)
            .map_err(AdapterErrorKind::Crashed)?;
        if let Some(args) = args {
            self.dispatch = Some(crate::repro::single_dispatch(
                r,
                &plan,
                &mem,
                (0, 1, 8),
                (repro::program(&kernel), args),
                (local, local),
            ));
        }
        self.finish_atomic(r, &plan, mem, old, &ok)
    }
}

impl OpenClAdapter {
    /// The work-group size of a case of `n` work-items: a power of two, at least
    /// [`OPENCL_MIN_LOCAL`] (work-items past `n` only copy memory), so that a driver that
    /// specializes a kernel per work-group size (PoCL compiles and links one for each) builds
    /// one per shape for most cases; smaller where the device's limit is smaller.
    fn local_size(&self, n: usize) -> usize {
        let max = self.device.info.max_work_group;
        [
            n.next_power_of_two().max(OPENCL_MIN_LOCAL),
            n.next_power_of_two(),
        ]
        .into_iter()
        .find(|p| *p <= max)
        .unwrap_or(n)
    }

    /// The final state of a memory instruction's case from what its dispatch gave: its memory
    /// region, `ret` and `ok`.
    fn finish_atomic(
        &self,
        r: &Request<'_>,
        plan: &Plan,
        mem: Vec<u8>,
        old: Vec<u64>,
        ok: &[i32],
    ) -> Result<State, AdapterErrorKind> {
        let (global, shared) = match plan.space {
            Space::Global => (mem, plan.shared.bytes(r.state, Space::Shared)),
            Space::Shared => (plan.global.bytes(r.state, Space::Global), mem),
        };
        let returned = Returned {
            old,
            ok: ok.iter().map(|v| *v != 0).collect(),
        };
        plan.finish(
            &*crate::back::lower(r)?,
            r.state,
            &global,
            &shared,
            &returned,
        )
        .map_err(AdapterErrorKind::Model)
    }

    /// Runs a SIMD-group function's kernel: one work-group of the plan's threads, each
    /// work-item's result in `ret`; every work-item must have run in a sub-group of the SIMD
    /// width (its `ok`), else the dispatch did not give the case's SIMD-groups.
    fn run_shuffle(
        &mut self,
        r: &Request<'_>,
        plan: &ShufflePlan,
        kernel: &emit::Kernel,
    ) -> Result<State, AdapterErrorKind> {
        let n = plan.threads.len();
        self.last = Some(Last::Text(kernel.listing(r.id, n)));
        self.dispatch = self
            .capture
            .then(|| repro::shuffle_dispatch(r, plan, kernel));
        let mut mem = vec![0u8; 8];
        let (ret, ok) = self
            .device
            .run_ndrange(kernel, n, n, n, &mut mem)
            .map_err(AdapterErrorKind::Crashed)?;
        if let Some((i, size)) = ok
            .iter()
            .enumerate()
            .find(|(_, s)| u32::try_from(**s).ok() != Some(plan.width))
        {
            return Err(AdapterErrorKind::Crashed(format!(
                "work-item {i} ran in a sub-group of {size} work-items where the kernel requires {} (intel_reqd_sub_group_size)",
                plan.width
            )));
        }
        plan.finish(r.state, &ret).map_err(AdapterErrorKind::Model)
    }
}

/// A concurrent case's plan, kernel, work-group size, lowered instructions and states.
type ConcurrentKernel = (
    crate::plan::ConcurrentPlan,
    emit::Kernel,
    usize,
    Vec<Lowered>,
    Vec<atomcts_reference::State>,
);

impl OpenClAdapter {
    /// A concurrent case planned and emitted for this device, or why not.
    fn concurrent_kernel(
        &self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<ConcurrentKernel, AdapterErrorKind> {
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        let (lowered, states) = r.lowered_states()?;
        let cp = crate::plan::ConcurrentPlan::for_request(r, &lowered).map_err(na)?;
        let kernel = concurrent::emit(&cp, &self.features, self.plant).map_err(na)?;
        // Rounded up as a single instruction's is ([`OpenClAdapter::local_size`]): the extra
        // work-items run nothing (the kernel's `i < n` guards).
        let local = self.local_size(concurrent::local_size(&cp));
        if local > self.device.info.max_work_group {
            return Err(na(NotApplicable(format!(
                "{local} work-items exceed the device's work-group size {}",
                self.device.info.max_work_group
            ))));
        }
        Ok((cp, kernel, local, lowered, states))
    }
}

impl crate::Concurrent for OpenClAdapter {
    fn runs_cas_loops(&self) -> bool {
        true
    }

    fn screen_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Option<String> {
        match self.concurrent_kernel(r) {
            Err(AdapterErrorKind::NotApplicable(why)) => Some(why),
            _ => None,
        }
    }

    fn run_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<crate::concurrent::ConcurrentObservation, AdapterError> {
        self.last = None;
        self.dispatch = None;
        let (cp, kernel, local, lowered, states) =
            self.concurrent_kernel(r).map_err(|k| self.err(k))?;
        self.last = Some(Last::Text(format!(
            "// atomcts: {}\n// build options: `{}`; {} work-groups of {local}\n{}{}",
            r.id,
            kernel.options,
            cp.work_groups(),
            concurrent::params_listing(&cp),
            kernel.source
        )));
        let mut mem = cp.image(&states[0]);
        mem.resize(mem.len() + concurrent::extra_bytes(&cp), 0);
        if self.capture {
            let global = local * cp.work_groups();
            let args = repro::args(&kernel, &mem, cp.ret_len());
            self.dispatch = Some(
                crate::concurrent::serial(&self.name, r, &atomcts_reference::exec::execute)
                    .map_err(|e| e.to_string())
                    .and_then(|s| {
                        crate::repro::concurrent_checks(
                            &cp,
                            &states[0],
                            &s.states[0],
                            0,
                            Some((0, concurrent::counts_at(&cp))),
                            Some(crate::repro::Rets {
                                ret: (1, 8),
                                ok: (2, 4),
                            }),
                        )
                    })
                    .map(|(checks, unjudged, orders)| crate::repro::Dispatch {
                        // The kernel with its parameters' values in a comment above it.
                        program: repro::program(&emit::Kernel {
                            source: format!("{}{}", concurrent::params_listing(&cp), kernel.source)
                                .into(),
                            ..kernel.clone()
                        }),
                        args,
                        global,
                        local,
                        checks,
                        unjudged,
                        orders,
                    }),
            );
        }
        let (old, ok) = self
            .device
            .run_ndrange(
                &kernel,
                local * cp.work_groups(),
                local,
                cp.ret_len(),
                &mut mem,
            )
            .map_err(|e| self.err(AdapterErrorKind::Crashed(e)))?;
        // A loop's `ok` slots hold its attempts; it always ends with a success.
        let counts: Vec<u32> = ok.iter().map(|c| u32::try_from(*c).unwrap_or(0)).collect();
        let ok: Vec<bool> = ok.iter().map(|v| *v != 0).collect();
        let executed = concurrent::read_counts(&cp, &mem);
        cp.observe(
            &lowered,
            &states,
            &mem,
            &old,
            &ok,
            Some(&counts),
            Some(&executed),
        )
        .map_err(|e| self.err(AdapterErrorKind::Model(e)))
    }
}
