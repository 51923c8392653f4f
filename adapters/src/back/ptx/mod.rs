//! The PTX back end: a semantic-level adapter that runs each case's lowered IR as a PTX kernel
//! on an NVIDIA GPU (`--adapter cuda`).
//!
//! [`emit`] turns the shared [`Plan`] into PTX (pure; every kernel the corpus produces is
//! assembled by NVIDIA's `ptxas` for sm_50, sm_70 and sm_90 in the tests, so a malformed or
//! mistranslated kernel fails without a GPU); [`run`] loads it through the CUDA driver, loaded
//! at run time. The kernel targets the device's compute capability as the driver reports it.
//! Concurrent cases (issue 12) get one kernel per case, one CTA per instruction
//! ([`concurrent`]), under the adapter's timeout.

pub mod batch;
pub mod concurrent;
pub mod emit;
pub mod repro;
pub mod run;
pub mod worker;

use crate::concurrent::{ConcurrentObservation, ConcurrentRequest};
use crate::plan::{ConcurrentPlan, NotApplicable, Plan, Returned};
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::State;
use atomcts_reference::ir::{AtomicOp, Lowered};
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
    last: Option<batch::Last>,
    /// Whether to keep what each case dispatched ([`crate::Adapter::capture_dispatches`]).
    capture: bool,
    /// What the last case dispatched, or why it cannot be written standalone.
    dispatch: Option<Result<crate::repro::Dispatch, String>>,
    timeout: Duration,
    worker: worker::Worker,
    /// Cases a batched launch holds at most (`ATOMCTS_CUDA_BATCH`; 1: every case alone).
    window: usize,
    /// Batched cases sent, not yet launched ([`batch`]).
    queued: Vec<batch::Queued>,
    /// Batched cases launched, not yet received.
    answered: std::collections::VecDeque<batch::Answered>,
}

/// How long a concurrent kernel may run unless [`CudaAdapter::with_timeout`] says otherwise
/// (the runner's default `--adapter-timeout-ms`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl CudaAdapter {
    /// Opens device 0. Without a CUDA driver (or a device) the error says why in one line.
    /// `ATOMCTS_PTX_PLANT=min_as_max|inc_as_u64|split_rmw|cross_case_write` plants a wrong
    /// `atom` (for checking the tests; `split_rmw`: concurrent kernels only, a load and a store
    /// for each integer read-modify-write; `cross_case_write`: batched kernels only, a byte
    /// written past each case's memory). Kernels run in a worker process ([`worker`]).
    pub fn open() -> Result<CudaAdapter, AdapterError> {
        let unavailable = |why: String| AdapterError {
            adapter: "cuda".into(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        let info = run::device_info().map_err(unavailable)?;
        let plant_var = std::env::var("ATOMCTS_PTX_PLANT").unwrap_or_default();
        let plant = Plant::from_name(&plant_var).ok_or_else(|| {
            unavailable(format!(
                "ATOMCTS_PTX_PLANT=`{plant_var}` (expected min_as_max, inc_as_u64, split_rmw or cross_case_write)"
            ))
        })?;
        let window = batch::window_from_env().map_err(unavailable)?;
        let sm = ((info.sm.0 * 10 + info.sm.1).max(0) as u32).min(NEWEST_SM);
        Ok(CudaAdapter {
            info,
            sm,
            plant,
            last: None,
            capture: false,
            dispatch: None,
            timeout: DEFAULT_TIMEOUT,
            worker: worker::Worker::new(DEFAULT_TIMEOUT + run::HOST_GRACE),
            window,
            queued: Vec::new(),
            answered: std::collections::VecDeque::new(),
        })
    }

    /// The per-case time limit (`--adapter-timeout-ms`): a concurrent kernel stops itself at
    /// it and the case is a timeout; any kernel still running [`run::HOST_GRACE`] later has its
    /// worker process stopped (the case is an adapter error, the next case gets a fresh worker).
    pub fn with_timeout(mut self, timeout: Duration) -> CudaAdapter {
        self.timeout = timeout;
        self.worker = worker::Worker::new(timeout.saturating_add(run::HOST_GRACE));
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

/// The observation of a concurrent case from what the device left: the global buffer `mem`
/// after the launch and the returned values `old` (`[group][iteration][item]`); every
/// iteration's returned value (and a compare-and-swap's success) is reported.
pub fn observe(
    cp: &ConcurrentPlan,
    lowered: &[Lowered],
    states: &[State],
    mem: &[u8],
    old: &[u64],
    attempts: Option<&[u32]>,
) -> Result<ConcurrentObservation, String> {
    if old.len() != cp.ret_len() {
        return Err(format!(
            "{} returned values for {} operations",
            old.len(),
            cp.ret_len()
        ));
    }
    let ok = concurrent::successes(cp, old);
    cp.observe(lowered, states, mem, old, &ok, attempts, None)
}

/// Lowers a request to a plan, or says why it does not apply to a semantic-level back end.
pub fn plan_of(r: &Request<'_>) -> Result<Plan, AdapterErrorKind> {
    let lowered = crate::back::lower(r)?;
    Plan::new(&lowered, r.state).map_err(|NotApplicable(why)| AdapterErrorKind::NotApplicable(why))
}

impl Adapter for CudaAdapter {
    fn screen(&mut self, request: &Request<'_>) -> Option<String> {
        crate::back::screen(self, request)
    }

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
        self.last.as_ref().map(batch::Last::text)
    }

    /// Batched ([`batch`]) when `ATOMCTS_CUDA_BATCH` asks for a window over 1 and dispatches
    /// are not captured.
    fn pipelined(&self) -> Option<&dyn crate::Pipelined> {
        (self.window > 1 && !self.capture).then_some(self as &dyn crate::Pipelined)
    }

    fn pipelined_mut(&mut self) -> Option<&mut dyn crate::Pipelined> {
        (self.window > 1 && !self.capture).then_some(self as &mut dyn crate::Pipelined)
    }

    fn capture_dispatches(&mut self, on: bool) {
        self.capture = on;
    }

    fn reproducer(&mut self, about: &crate::repro::About) -> Option<Result<String, String>> {
        Some(match &self.dispatch {
            Some(Ok(d)) => repro::script(about, d),
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

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

/// The PTX back end: plan, emit PTX, and launch it through the worker process.
impl crate::back::Backend for CudaAdapter {
    type Emitted = (Plan, emit::Kernel, Vec<u64>);

    fn emit(
        &mut self,
        r: &Request<'_>,
        lowered: &Lowered,
    ) -> Result<Self::Emitted, AdapterErrorKind> {
        let plan = Plan::new(lowered, r.state)
            .map_err(|NotApplicable(why)| AdapterErrorKind::NotApplicable(why))?;
        let kernel = emit::emit(&plan, self.sm, self.plant)
            .map_err(|e| AdapterErrorKind::NotApplicable(e.0))?;
        let items = emit::items(&plan);
        Ok((plan, kernel, items))
    }

    fn run(&mut self, r: &Request<'_>, emitted: Self::Emitted) -> Result<State, AdapterErrorKind> {
        let (plan, kernel, items) = emitted;
        self.last = Some(batch::Last::Text(format!(
            "{}// items (offset, src0, src1 per thread): {:x?}\n",
            kernel.source, items
        )));
        let mem = plan.layout().bytes(r.state, plan.space);
        let launch = run::single(&kernel, &items, &mem);
        let (mem, old) = self
            .worker
            .launch(&launch)
            .and_then(|b| run::single_answer(plan.items.len(), b))
            .map_err(AdapterErrorKind::Crashed)?;
        if self.capture {
            self.dispatch = Some(crate::repro::single_dispatch(
                r,
                &plan,
                &mem,
                (0, 2, 8),
                (repro::program(&launch), repro::args(&launch)),
                (
                    (launch.grid.max(1) * launch.block.max(1)) as usize,
                    launch.block.max(1) as usize,
                ),
            ));
        }
        finish(&plan, r, mem, old)
    }
}

/// The state a case's run left, from its flat buffer after the launch (`mem`) and each
/// thread's returned value (`old`): the same for a case run alone and one of a batch.
fn finish(
    plan: &Plan,
    r: &Request<'_>,
    mem: Vec<u8>,
    old: Vec<u64>,
) -> Result<State, AdapterErrorKind> {
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
    plan.finish(
        &*crate::back::lower(r)?,
        r.state,
        &global,
        &shared,
        &Returned { old, ok },
    )
    .map_err(AdapterErrorKind::Model)
}

impl crate::Concurrent for CudaAdapter {
    /// Compare-and-swap loops are real retry loops around `atom.cas` (`concurrent.rs`).
    fn runs_cas_loops(&self) -> bool {
        true
    }

    /// One kernel, one launch, one CTA per instruction (`concurrent.rs`); the returned value of
    /// every iteration is reported.
    fn run_concurrent(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError> {
        self.last = None;
        self.dispatch = Some(Err(
            "a concurrent case on cuda: its reproducer is not written standalone yet".into(),
        ));
        let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
        let (lowered, states) = r.lowered_states().map_err(|k| self.err(k))?;
        let iterations = r.iterations();
        let mut cp =
            ConcurrentPlan::new(&lowered, &states, &iterations).map_err(|e| self.err(na(e)))?;
        cp.loops = r.instrs.iter().map(|i| i.cas_loop).collect();
        let kernel =
            concurrent::emit(&cp, self.sm, self.plant, r.id).map_err(|e| self.err(na(e)))?;
        let items = concurrent::items(&cp);
        self.last = Some(batch::Last::Text(format!(
            "// launch: {} CTAs of {} threads; budget {} ms\n{}// items (offset, src0, src1 per thread, group after group): {:x?}\n",
            kernel.grid,
            kernel.block,
            self.timeout.as_millis(),
            kernel.source,
            items
        )));
        let mem = cp.global.bytes(&states[0], Space::Global);
        let ret_len = cp.ret_len();
        let result = run::concurrent_launch(&kernel, &items, ret_len, &mem, self.timeout)
            .and_then(|l| {
                self.worker.launch(&l).map_err(|why| {
                    if why.contains("did not finish within") {
                        run::LaunchError::Timeout(why)
                    } else {
                        run::LaunchError::Failed(why)
                    }
                })
            })
            .and_then(|b| run::concurrent_answer(ret_len, self.timeout, b));
        let (mem, old, attempts) = match result {
            Ok(r) => r,
            Err(run::LaunchError::Timeout(why)) => {
                // The report shows the program of a case in error: say there why it stopped.
                if let Some(batch::Last::Text(last)) = &mut self.last {
                    last.push_str(&format!("// timed out: {why}\n"));
                }
                let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
                return Err(self.err(AdapterErrorKind::Timeout(ms)));
            }
            Err(run::LaunchError::Failed(why)) => {
                return Err(self.err(AdapterErrorKind::Crashed(why)));
            }
        };
        observe(&cp, &lowered, &states, &mem, &old, Some(&attempts))
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::Profile;
    use atomcts_reference::check::Judgement;
    use atomcts_reference::concurrent::{self as rc, Part};
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::Reg;
    use atomcts_reference::types::ElemType;

    fn state(lanes: u32, r4: u64, r5: u64) -> State {
        let mut s = State::new(lanes);
        for (r, v) in [("R2", 0x1000), ("R3", 0), ("R4", r4), ("R5", r5)] {
            s.regs.insert(
                r.into(),
                Reg {
                    ty: ElemType::B32,
                    elems: vec![v; lanes as usize],
                },
            );
        }
        s.global.alloc(0x1000, 8).unwrap();
        s.global.write(0x1000, 4, 3);
        s
    }

    /// Plays the GPU for a kernel of u32 add, exch and cas groups: runs every (group,
    /// iteration, item) in `order` on the flat buffer, writing each returned value where the
    /// kernel does (`ret_base(k) + it * n + i`); `lose` drops the first add's write.
    fn device(
        cp: &ConcurrentPlan,
        mem: &mut [u8],
        order: &[(usize, usize, usize)],
        lose: bool,
    ) -> Vec<u64> {
        let flat = concurrent::items(cp);
        let mut old = vec![0u64; cp.ret_len()];
        let mut lost = !lose;
        for &(k, it, i) in order {
            let g = &cp.groups[k];
            let at = cp.groups[..k].iter().map(|g| g.items.len()).sum::<usize>() + i;
            let (off, a, b) = (
                flat[3 * at] as usize,
                flat[3 * at + 1] as u32,
                flat[3 * at + 2] as u32,
            );
            let m = u32::from_le_bytes(mem[off..off + 4].try_into().unwrap());
            let new = match g.op {
                AtomicOp::Add => m.wrapping_add(a),
                AtomicOp::Exch => a,
                AtomicOp::Cas if m == a => b,
                AtomicOp::Cas => m,
                other => panic!("{other:?}"),
            };
            if g.op == AtomicOp::Add && !lost {
                lost = true;
            } else {
                mem[off..off + 4].copy_from_slice(&new.to_le_bytes());
            }
            old[cp.ret_base(k) + it * g.items.len() + i] = u64::from(m);
        }
        old
    }

    #[test]
    fn a_device_run_in_any_legal_order_passes_the_judge_and_a_lost_update_fails() {
        let instrs = [
            ("ATOM.ADD R0, [R2], R4", state(4, 1, 0), 3u32),
            ("ATOM.EXCH R0, [R2], R4", state(2, 1000, 0), 2),
            ("ATOM.CAS R0, [R2], R4, R5", state(1, 1000, 7), 1),
        ];
        let profile = Profile::default();
        let programs: Vec<Program> = instrs
            .iter()
            .map(|(asm, ..)| Program::parse(Dialect::Sass, asm).unwrap())
            .collect();
        let parts: Vec<Part<'_>> = programs
            .iter()
            .zip(&instrs)
            .map(|(program, (_, state, iterations))| Part {
                program,
                state,
                iterations: *iterations,
                cas_loop: None,
            })
            .collect();
        let lowered = rc::lower_all(&parts, &profile).unwrap();
        let states: Vec<State> = instrs.iter().map(|i| i.1.clone()).collect();
        let iterations: Vec<u32> = instrs.iter().map(|i| i.2).collect();
        let cp = ConcurrentPlan::new(&lowered, &states, &iterations).unwrap();
        assert!(concurrent::emit(&cp, 90, Plant::None, "t").is_ok());
        let reference = rc::execute_serial(&parts, &profile, &atomcts_reference::exec::execute)
            .unwrap()
            .unwrap();
        // Orders the GPU may take: the exchanges and the CAS first, then every add thread's
        // iterations in turn; and the adds interleaved with them, last iteration first across
        // threads (each thread's own iterations stay in order).
        let mut first: Vec<(usize, usize, usize)> = vec![(1, 0, 0), (1, 0, 1), (1, 1, 1)];
        first.extend([(2, 0, 0), (1, 1, 0)]);
        for i in 0..4 {
            first.extend((0..3).map(|it| (0, it, i)));
        }
        let mut mixed = Vec::new();
        for it in 0..3 {
            for i in (0..4).rev() {
                mixed.push((0, it, i));
                if it < 2 && i < 2 {
                    mixed.push((1, it, i));
                }
            }
            if it == 1 {
                mixed.push((2, 0, 0));
            }
        }
        for (order, lose, pass) in [
            (&first, false, true),
            (&mixed, false, true),
            (&mixed, true, false),
        ] {
            assert_eq!(order.len(), cp.ret_len());
            let mut mem = cp.global.bytes(&states[0], Space::Global);
            let old = device(&cp, &mut mem, order, lose);
            let obs = observe(&cp, &lowered, &states, &mem, &old, None).unwrap();
            let returned = obs.returned.as_deref().unwrap();
            assert_eq!(returned.len(), 3);
            assert_eq!(returned.iter().map(Vec::len).collect::<Vec<_>>(), [3, 2, 1]);
            let verdict = rc::judge(
                &parts,
                &lowered,
                &reference,
                &obs.states,
                obs.returned.as_deref(),
                None,
                2_000_000,
            )
            .unwrap();
            assert_eq!(
                matches!(verdict, Judgement::Pass),
                pass,
                "order {order:?}, lose {lose}: {verdict:?}"
            );
        }
        // The length of the returned values is checked.
        let mem = cp.global.bytes(&states[0], Space::Global);
        assert!(observe(&cp, &lowered, &states, &mem, &[0; 3], None).is_err());
    }
}
