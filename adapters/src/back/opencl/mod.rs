//! The OpenCL back end: a semantic-level adapter that runs each case's lowered IR as an
//! OpenCL C kernel on a real driver (`--adapter opencl:<pocl|oclgrind|rusticl|name>`).
//!
//! [`emit`] turns the shared [`Plan`] into kernel source (pure, tested without a driver);
//! [`run`] builds and dispatches it through the ICD loader, loaded at run time. What the device
//! can express comes from what it reports (extensions, OpenCL C versions), never a hand table.

pub mod concurrent;
pub mod emit;
pub mod run;

use crate::plan::{NotApplicable, Plan, Returned};
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

/// The three OpenCL implementations of issue 8.
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
];

/// The known driver `selector` names, if any.
pub fn known(selector: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == selector)
}

/// The environment the process must have for `selector` (so that the ICD loader loads only that
/// driver); empty for a free-form platform/device name.
pub fn environment(selector: &str) -> Vec<(String, String)> {
    let Some(k) = known(selector) else {
        return vec![];
    };
    let mut env = vec![("OCL_ICD_VENDORS".to_string(), k.icd.to_string())];
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
        return Err(format!("{} missing (install {})", k.icd, k.package));
    }
    Ok(())
}

/// An OpenCL device as an implementation under test.
pub struct OpenClAdapter {
    name: String,
    device: run::Device,
    features: Features,
    plant: Plant,
    last: Option<String>,
}

impl OpenClAdapter {
    /// Opens the device `selector` names (a known driver or a platform/device name substring).
    /// `ATOMCTS_OPENCL_PLANT=add_as_sub` plants a wrong built-in (for checking the corpus).
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
                "ATOMCTS_OPENCL_PLANT=`{plant_var}` (expected add_as_sub)"
            ))
        })?;
        let info = &device.info;
        let has = |e: &str| info.extensions.iter().any(|x| x == e);
        let features = Features {
            int64_base: has("cl_khr_int64_base_atomics"),
            int64_extended: has("cl_khr_int64_extended_atomics"),
            c11: info.c_versions.iter().any(|v| *v >= (3, 0)),
        };
        Ok(OpenClAdapter {
            name,
            device,
            features,
            plant,
            last: None,
        })
    }

    /// What the device reports, in one line.
    pub fn describe(&self) -> String {
        let i = &self.device.info;
        format!(
            "{} / {} ({}; {}; int64 atomics: {}/{}; C11 atomics: {})",
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
            if self.features.c11 { "yes" } else { "no" }
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
    /// both cl_khr_int64 atomics extensions; float, f16x2 and 16-bit atomics never (OpenCL C
    /// has no such built-ins without cl_ext_float_atomics, which this back end does not emit).
    /// The per-op check is the emitter's, from the lowered IR.
    fn supports(&self, capability: &str) -> bool {
        match capability {
            "u64_atomics" => self.features.int64_base && self.features.int64_extended,
            _ => false,
        }
    }

    fn level(&self) -> Level {
        Level::Semantic
    }

    fn last_program(&self) -> Option<String> {
        self.last.clone()
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        self.last = None;
        crate::back::run(self, r)
            .map(Observation::Completed)
            .map_err(|k| self.err(k))
    }

    fn concurrent(&self) -> Option<&dyn crate::Concurrent> {
        Some(self)
    }

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

/// The OpenCL back end: plan, emit OpenCL C (shuffles are not applicable), and run it on one
/// work-group.
impl crate::back::Backend for OpenClAdapter {
    type Emitted = (Plan, emit::Kernel);

    fn emit(
        &mut self,
        r: &Request<'_>,
        lowered: &Lowered,
    ) -> Result<Self::Emitted, AdapterErrorKind> {
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        if let atomcts_reference::ir::Instr::Shuffle(_) = lowered.instr {
            // OpenCL C sub-group shuffles: cl_khr_subgroup_shuffle (and _relative for up/down).
            let has = |e: &str| self.device.info.extensions.iter().any(|x| x == e);
            // The reason names the device generically: its name names the host's processor,
            // and reasons are compared across machines (issue 27, H19).
            let why = if has("cl_khr_subgroup_shuffle") {
                "a SIMD-group shuffle: this back end does not emit sub-group shuffles yet"
            } else {
                "a SIMD-group shuffle: the device does not report cl_khr_subgroup_shuffle"
            };
            return Err(na(NotApplicable(why.into())));
        }
        let plan = Plan::new(lowered, r.state).map_err(na)?;
        let kernel = emit::emit(&plan, &self.features, self.plant, r.id).map_err(na)?;
        let n = plan.items.len();
        if n > self.device.info.max_work_group {
            return Err(na(NotApplicable(format!(
                "{n} work-items exceed the device's work-group size {}",
                self.device.info.max_work_group
            ))));
        }
        Ok((plan, kernel))
    }

    fn run(&mut self, r: &Request<'_>, emitted: Self::Emitted) -> Result<State, AdapterErrorKind> {
        let (plan, kernel) = emitted;
        let n = plan.items.len();
        let mut mem = plan.layout().bytes(r.state, plan.space);
        // A power-of-two work-group (work-items past `n` only copy memory): drivers that
        // specialize a kernel per work-group size (PoCL) then build one of few per shape.
        let local = Some(n.next_power_of_two())
            .filter(|p| *p <= self.device.info.max_work_group)
            .unwrap_or(n);
        self.last = Some(kernel.listing(r.id, local));
        let (old, ok) = self
            .device
            .run_ndrange(&kernel, local, local, n, &mut mem)
            .map_err(AdapterErrorKind::Crashed)?;
        let (global, shared) = match plan.space {
            Space::Global => (mem, plan.shared.bytes(r.state, Space::Shared)),
            Space::Shared => (plan.global.bytes(r.state, Space::Global), mem),
        };
        let returned = Returned {
            old,
            ok: ok.iter().map(|v| *v != 0).collect(),
        };
        plan.finish(r.state, &global, &shared, &returned)
            .map_err(AdapterErrorKind::Model)
    }
}

impl crate::Concurrent for OpenClAdapter {
    fn runs_cas_loops(&self) -> bool {
        true
    }

    fn run_concurrent(
        &mut self,
        r: &crate::concurrent::ConcurrentRequest<'_>,
    ) -> Result<crate::concurrent::ConcurrentObservation, AdapterError> {
        self.last = None;
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        let (lowered, states) = r.lowered_states().map_err(|k| self.err(k))?;
        let cp =
            crate::plan::ConcurrentPlan::for_request(r, &lowered).map_err(|e| self.err(na(e)))?;
        let kernel =
            concurrent::emit(&cp, &self.features, self.plant, r.id).map_err(|e| self.err(na(e)))?;
        let local = concurrent::local_size(&cp);
        if local > self.device.info.max_work_group {
            return Err(self.err(na(NotApplicable(format!(
                "{local} work-items exceed the device's work-group size {}",
                self.device.info.max_work_group
            )))));
        }
        self.last = Some(format!(
            "// build options: `{}`; {} work-groups of {local}\n{}",
            kernel.options,
            cp.work_groups(),
            kernel.source
        ));
        let mut mem = cp.image(&states[0]);
        mem.resize(mem.len() + concurrent::extra_bytes(&cp), 0);
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
        cp.observe(&lowered, &states, &mem, &old, &ok, Some(&counts))
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))
    }
}
