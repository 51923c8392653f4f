//! The PTX back end: a semantic-level adapter that runs each case's lowered IR as a PTX kernel
//! on an NVIDIA GPU (`--adapter cuda`).
//!
//! [`emit`] turns the shared [`Plan`] into PTX (pure; every kernel the corpus produces is
//! assembled by NVIDIA's `ptxas` for sm_50, sm_70 and sm_90 in the tests, so a malformed or
//! mistranslated kernel fails without a GPU); [`run`] loads it through the CUDA driver, loaded
//! at run time. The kernel targets the device's compute capability as the driver reports it.

pub mod emit;
pub mod run;
pub mod worker;

use crate::plan::{NotApplicable, Plan, Returned};
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::ir::{AtomicOp, Lowering};
use atomcts_reference::program::Program;
use atomcts_reference::types::Space;
use emit::Plant;

/// The newest target the emitter writes PTX for; a newer device gets this target's PTX, which
/// the driver JIT-compiles forward.
pub const NEWEST_SM: u32 = 90;

/// An NVIDIA GPU as an implementation under test, through the CUDA driver.
pub struct CudaAdapter {
    info: run::DeviceInfo,
    sm: u32,
    plant: Plant,
    last: Option<String>,
    worker: worker::Worker,
}

impl CudaAdapter {
    /// Opens device 0. Without a CUDA driver (or a device) the error says why in one line.
    /// `ATOMCTS_PTX_PLANT=min_as_max|inc_as_u64` plants a wrong `atom` (for checking the tests).
    /// Kernels run in a worker process ([`worker`]); each launch may take at most `timeout`.
    pub fn open(timeout: std::time::Duration) -> Result<CudaAdapter, AdapterError> {
        let unavailable = |why: String| AdapterError {
            adapter: "cuda".into(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        let info = run::device_info().map_err(unavailable)?;
        let plant_var = std::env::var("ATOMCTS_PTX_PLANT").unwrap_or_default();
        let plant = Plant::from_name(&plant_var).ok_or_else(|| {
            unavailable(format!(
                "ATOMCTS_PTX_PLANT=`{plant_var}` (expected min_as_max or inc_as_u64)"
            ))
        })?;
        let sm = ((info.sm.0 * 10 + info.sm.1).max(0) as u32).min(NEWEST_SM);
        Ok(CudaAdapter {
            info,
            sm,
            plant,
            last: None,
            worker: worker::Worker::new(timeout),
        })
    }

    /// What the device reports, in one line.
    pub fn describe(&self) -> String {
        format!(
            "{} (compute capability {}.{}, driver {}.{}; PTX for sm_{})",
            self.info.name,
            self.info.sm.0,
            self.info.sm.1,
            self.info.driver / 1000,
            self.info.driver % 1000 / 10,
            self.sm
        )
    }

    fn err(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: "cuda".into(),
            kind,
        }
    }
}

/// Lowers a request to a plan, or says why it does not apply to a semantic-level back end.
pub fn plan_of(r: &Request<'_>) -> Result<Plan, AdapterErrorKind> {
    let na = |why: String| AdapterErrorKind::NotApplicable(why);
    let program = Program::parse(r.dialect, r.asm).map_err(|rej| {
        na(format!(
            "an illegal form ({}); a semantic-level implementation runs valid instructions only",
            rej.reason.code()
        ))
    })?;
    let lowered = match program
        .lower(r.state, r.profile)
        .map_err(|e| AdapterErrorKind::Model(e.to_string()))?
    {
        Lowering::Run(l) => l,
        Lowering::Invalid(rej) => {
            return Err(na(format!(
                "an illegal form ({}); a semantic-level implementation runs valid instructions only",
                rej.reason.code()
            )));
        }
        Lowering::Unspecified(why) => {
            return Err(na(format!("the outcome is unspecified ({why})")));
        }
    };
    Plan::new(&lowered, r.state).map_err(|NotApplicable(why)| na(why))
}

impl Adapter for CudaAdapter {
    fn name(&self) -> &str {
        "cuda"
    }

    fn describe(&self) -> Option<String> {
        Some(CudaAdapter::describe(self))
    }

    /// PTX ISA and the CUDA Programming Guide describe what the driver runs.
    fn claimed_profile(&self) -> Option<String> {
        Some("nvidia-ptx".into())
    }

    /// Capabilities of the case format, from the device's compute capability (the per-op
    /// check is the emitter's, from the lowered IR).
    fn supports(&self, capability: &str) -> bool {
        match capability {
            "u64_atomics" | "f32_atomic_add" => true,
            "f64_atomic_add" | "f16x2_atomics" => self.sm >= 60,
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
        let plan = plan_of(r).map_err(|k| self.err(k))?;
        let kernel = emit::emit(&plan, self.sm, self.plant)
            .map_err(|e| self.err(AdapterErrorKind::NotApplicable(e.0)))?;
        let items = emit::items(&plan);
        self.last = Some(format!(
            "{}// items (offset, src0, src1 per thread): {:x?}\n",
            kernel.source, items
        ));
        let mem = plan.layout().bytes(r.state, plan.space);
        let (mem, old) = self
            .worker
            .launch(&run::single(&kernel, &items, &mem))
            .and_then(|b| run::single_answer(plan.items.len(), b))
            .map_err(|e| self.err(AdapterErrorKind::Crashed(e)))?;
        let (global, shared) = match plan.space {
            Space::Global => (mem, plan.shared.bytes(r.state, Space::Shared)),
            Space::Shared => (plan.global.bytes(r.state, Space::Global), mem),
        };
        // atom.cas returns the old value only; a strong compare-and-swap succeeded exactly when
        // it equals the compare value, bit for bit.
        let ok = plan
            .items
            .iter()
            .zip(&old)
            .map(|(i, o)| plan.op != AtomicOp::Cas || *o == i.src[0])
            .collect();
        plan.finish(r.state, &global, &shared, &Returned { old, ok })
            .map(Observation::Completed)
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))
    }
}
