//! The PTX back end: a semantic-level adapter that runs each case's lowered IR as a PTX kernel
//! on an NVIDIA GPU (`--adapter cuda`).
//!
//! [`emit`] turns the shared [`Plan`] into PTX (pure; every kernel the corpus produces is
//! assembled by NVIDIA's `ptxas` for sm_50, sm_70 and sm_90 in the tests, so a malformed or
//! mistranslated kernel fails without a GPU); [`run`] loads it through the CUDA driver, loaded
//! at run time. The kernel targets the device's compute capability as the driver reports it.
//! Concurrent cases (issue 12) get one kernel per case, one CTA per instruction
//! ([`concurrent`]), under the adapter's timeout.

pub mod concurrent;
pub mod emit;
pub mod run;

use crate::concurrent::{ConcurrentObservation, ConcurrentRequest};
use crate::plan::{ConcurrentPlan, NotApplicable, Plan, Returned};
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::ir::{AtomicOp, Lowering};
use atomcts_reference::program::Program;
use atomcts_reference::types::Space;
use emit::Plant;
use std::time::Duration;

/// The newest target the emitter writes PTX for; a newer device gets this target's PTX, which
/// the driver JIT-compiles forward.
pub const NEWEST_SM: u32 = 90;

/// An NVIDIA GPU as an implementation under test, through the CUDA driver.
pub struct CudaAdapter {
    info: run::DeviceInfo,
    sm: u32,
    plant: Plant,
    last: Option<String>,
    timeout: Duration,
}

/// How long a concurrent kernel may run unless [`CudaAdapter::with_timeout`] says otherwise
/// (the runner's default `--adapter-timeout-ms`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl CudaAdapter {
    /// Opens device 0. Without a CUDA driver (or a device) the error says why in one line.
    /// `ATOMCTS_PTX_PLANT=min_as_max|inc_as_u64|split_rmw` plants a wrong `atom` (for checking
    /// the tests; `split_rmw`: concurrent kernels only, a load and a store for each integer
    /// read-modify-write).
    pub fn open() -> Result<CudaAdapter, AdapterError> {
        let unavailable = |why: String| AdapterError {
            adapter: "cuda".into(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        let info = run::device_info().map_err(unavailable)?;
        let plant_var = std::env::var("ATOMCTS_PTX_PLANT").unwrap_or_default();
        let plant = Plant::from_name(&plant_var).ok_or_else(|| {
            unavailable(format!(
                "ATOMCTS_PTX_PLANT=`{plant_var}` (expected min_as_max, inc_as_u64 or split_rmw)"
            ))
        })?;
        let sm = ((info.sm.0 * 10 + info.sm.1).max(0) as u32).min(NEWEST_SM);
        Ok(CudaAdapter {
            info,
            sm,
            plant,
            last: None,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// The per-case time limit of concurrent kernels (`--adapter-timeout-ms`): the kernel stops
    /// itself at it and the case is a timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> CudaAdapter {
        self.timeout = timeout;
        self
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

    /// One kernel, one launch, one CTA per instruction (`concurrent.rs`); the returned value of
    /// every iteration is reported.
    fn run_concurrent(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError> {
        self.last = None;
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        let (_, lowered) = r
            .lowered()
            .map_err(|e| self.err(AdapterErrorKind::NotApplicable(e)))?;
        let states: Vec<atomcts_reference::State> =
            r.instrs.iter().map(|i| i.state.clone()).collect();
        let iterations: Vec<u32> = r.instrs.iter().map(|i| i.iterations).collect();
        let cp =
            ConcurrentPlan::new(&lowered, &states, &iterations).map_err(|e| self.err(na(e)))?;
        let kernel =
            concurrent::emit(&cp, self.sm, self.plant, r.id).map_err(|e| self.err(na(e)))?;
        let items = concurrent::items(&cp);
        self.last = Some(format!(
            "// launch: {} CTAs of {} threads; budget {} ms\n{}// items (offset, src0, src1 per thread, group after group): {:x?}\n",
            kernel.grid,
            kernel.block,
            self.timeout.as_millis(),
            kernel.source,
            items
        ));
        let mut mem = cp.global.bytes(&states[0], Space::Global);
        let old = match run::run_concurrent(&kernel, &items, cp.ret_len(), &mut mem, self.timeout) {
            Ok(old) => old,
            Err(run::LaunchError::Timeout(why)) => {
                // The report shows the program of a case in error: say there why it stopped.
                if let Some(last) = &mut self.last {
                    last.push_str(&format!("// timed out: {why}\n"));
                }
                let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
                return Err(self.err(AdapterErrorKind::Timeout(ms)));
            }
            Err(run::LaunchError::Failed(why)) => {
                return Err(self.err(AdapterErrorKind::Crashed(why)));
            }
        };
        let ok = concurrent::successes(&cp, &old);
        let (finals, per) = cp
            .finish(&states, &mem, &old, &ok)
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))?;
        let returned = per
            .iter()
            .zip(&lowered)
            .map(|(its, l)| {
                its.iter()
                    .map(|x| crate::concurrent::observed_of(l, &x.old, &x.ok))
                    .collect()
            })
            .collect();
        Ok(ConcurrentObservation {
            states: finals,
            returned: Some(returned),
        })
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
        let mut mem = plan.layout().bytes(r.state, plan.space);
        let old = run::run(&kernel, &items, &mut mem)
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
