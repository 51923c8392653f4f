//! The Vulkan back end: a semantic-level adapter that runs each case's lowered IR as a SPIR-V
//! compute shader on a Vulkan device (`--adapter vulkan:<lavapipe|device name>`), and the WGSL
//! translation layer over the same run (`--adapter wgsl-naga:<lavapipe|device name>`, see
//! [`crate::back::wgsl`]).
//!
//! [`emit`] turns the shared [`Plan`] (memory instructions) or [`ShufflePlan`] (SIMD-group
//! exchanges) into a SPIR-V module (pure, tested without a driver, every module checked by
//! `spirv-val`); [`run`] dispatches it through the Vulkan loader, loaded at run time. What the
//! device can express comes from its features, extensions and properties, never a hand table.
//! Concurrent cases (issue 12) go through [`concurrent`] over the shared
//! [`ConcurrentPlan`] on the SPIR-V route ([`prepare_concurrent`]).

pub mod atomic;
pub mod batch;
pub mod concurrent;
pub mod emit;
pub mod repro;
pub mod run;
pub mod shuffle;

use crate::back::wgsl;
use crate::concurrent::{ConcurrentObservation, ConcurrentRequest};
use crate::plan::{ConcurrentPlan, NotApplicable, Plan, Returned};
use crate::shuffle::ShufflePlan;
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use atomcts_reference::State;
use atomcts_reference::ir::Instr;
use atomcts_reference::ir::Lowered;
use atomcts_reference::types::Space;
use emit::{Dispatch, Features, Plant};
use std::path::Path;
use std::sync::Arc;

/// A driver this project installs and knows how to reach (research/implementations.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Known {
    /// The name after `vulkan:` / `wgsl-naga:`.
    pub name: &'static str,
    /// A substring of its device name.
    pub device: &'static str,
    /// Its ICD manifest.
    pub icd: &'static str,
    /// The Debian package.
    pub package: &'static str,
    /// Whether the manifest lies outside the loader's search path, so that the library it names
    /// is loaded directly, in place of the loader (it must export `vkGetInstanceProcAddr`, as
    /// SwiftShader's does; Debian 12's loader 1.3.239 does not offer
    /// `VK_LUNARG_direct_driver_loading`, tried first), and no layer applies; unless
    /// `VK_DRIVER_FILES` names the manifest, when the loader loads it (with the validation layer).
    pub direct: bool,
}

/// The Vulkan implementations of issues 10 and 30.
pub const KNOWN: &[Known] = &[
    Known {
        name: "lavapipe",
        device: "llvmpipe",
        icd: "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        package: "mesa-vulkan-drivers",
        direct: false,
    },
    // Google's CPU Vulkan driver, shipped inside Debian's `chromium` (the driver Chromium falls
    // back to without a GPU); its manifest sits beside the browser's libraries.
    Known {
        name: "swiftshader",
        device: "SwiftShader",
        icd: "/usr/lib/chromium/vk_swiftshader_icd.json",
        package: "chromium",
        direct: true,
    },
];

/// The known driver `selector` names, if any.
pub fn known(selector: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.name == selector)
}

/// How a case reaches the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// SPIR-V built from the IR (`vulkan:`).
    Spirv,
    /// WGSL compiled by naga (`wgsl-naga:`).
    WgslNaga,
}

impl Route {
    /// The adapter name prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            Route::Spirv => "vulkan",
            Route::WgslNaga => "wgsl-naga",
        }
    }
}

/// Whether `selector`'s driver is installed, without creating a device: `Err` says why not,
/// in one line.
pub fn availability(selector: &str) -> Result<(), String> {
    run::loader()?;
    if let Some(k) = known(selector)
        && !Path::new(k.icd).exists()
    {
        return Err(format!("{} missing (install {})", k.icd, k.package));
    }
    Ok(())
}

/// A Vulkan device as an implementation under test, through one route.
pub struct VulkanAdapter {
    name: String,
    route: Route,
    device: run::Device,
    plant: Plant,
    last: Option<batch::Last>,
    /// Whether to keep what each case dispatched ([`crate::Adapter::capture_dispatches`]).
    capture: bool,
    /// What the last case dispatched, or why it cannot be written standalone.
    dispatch: Option<Result<crate::repro::Dispatch, String>>,
    selector: String,
    /// naga's SPIR-V by WGSL source (the WGSL route; a shader's text is its shape's): keyed by
    /// the text's address, the entry holding the text so that the address stays its own.
    #[allow(clippy::type_complexity)]
    compiled: std::collections::HashMap<usize, (Arc<str>, Result<Arc<[u32]>, wgsl::CompileError>)>,
    /// Whether cases are batched ([`batch`]; `ATOMCTS_VULKAN_BATCH=1` turns it off).
    batching: bool,
    /// Cases sent, waiting for their batch ([`batch`]).
    queued: std::collections::VecDeque<batch::Queued>,
    /// Cases run, waiting to be received.
    answered: std::collections::VecDeque<batch::Answered>,
}

/// The most WGSL shaders kept compiled; when full, the map is emptied.
const MAX_COMPILED: usize = 256;

impl VulkanAdapter {
    /// Opens the device `selector` names (a known driver or a device name substring).
    /// `ATOMCTS_VULKAN_VALIDATION=1` enables the Khronos validation layer (a message fails the
    /// case as an infrastructure error); `ATOMCTS_VULKAN_PLANT=smax_as_umax|up_as_down` plants a
    /// wrong opcode in the SPIR-V route, `group_serial_rmw` non-atomic read-modify-writes across
    /// the instructions of a concurrent case (for checking the corpus), `cross_case_write` a
    /// write past a case's memory ([`batch`]). `ATOMCTS_VULKAN_BATCH=1` runs every case alone
    /// (no batching).
    pub fn open(route: Route, selector: &str) -> Result<VulkanAdapter, AdapterError> {
        let name = format!("{}:{selector}", route.prefix());
        let unavailable = |why: String| AdapterError {
            adapter: name.clone(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        availability(selector).map_err(unavailable)?;
        let plant_var = std::env::var("ATOMCTS_VULKAN_PLANT").unwrap_or_default();
        let plant = Plant::from_name(&plant_var).ok_or_else(|| {
            unavailable(format!(
                "ATOMCTS_VULKAN_PLANT=`{plant_var}` (expected smax_as_umax, up_as_down, group_serial_rmw or cross_case_write)"
            ))
        })?;
        let validation = matches!(
            std::env::var("ATOMCTS_VULKAN_VALIDATION").as_deref(),
            Ok("1" | "true")
        );
        let pattern = known(selector).map_or(selector, |k| k.device);
        let direct = known(selector)
            .filter(|k| k.direct)
            .map(|k| Path::new(k.icd));
        let device = run::Device::open(pattern, direct, validation).map_err(unavailable)?;
        Ok(VulkanAdapter {
            name,
            route,
            device,
            plant,
            last: None,
            capture: false,
            dispatch: None,
            selector: selector.to_string(),
            compiled: std::collections::HashMap::new(),
            batching: std::env::var("ATOMCTS_VULKAN_BATCH").as_deref() != Ok("1"),
            queued: Default::default(),
            answered: Default::default(),
        })
    }

    /// What the device reports, in one line.
    pub fn describe(&self) -> String {
        let i = &self.device.info;
        let f = &i.features;
        format!(
            "{} (Vulkan {}; {}; int64 atomics: buffer {} shared {}; f32 atomic add: {}/{}, min/max: {}/{}; sub-groups {}..{} lanes, shuffle {} relative {} broadcast {}, size control {})",
            i.name,
            i.api_version,
            i.driver.trim(),
            yn(f.buffer_int64_atomics),
            yn(f.shared_int64_atomics),
            yn(f.buffer_f32_add),
            yn(f.shared_f32_add),
            yn(f.buffer_f32_minmax),
            yn(f.shared_f32_minmax),
            f.min_subgroup_size,
            f.max_subgroup_size,
            yn(f.subgroup_shuffle),
            yn(f.subgroup_shuffle_relative),
            yn(f.subgroup_ballot),
            yn(f.subgroup_size_control),
        )
    }

    /// The features the emitters use.
    pub fn features(&self) -> Features {
        self.device.info.features
    }

    /// naga's SPIR-V for `src`, compiled once per shader text (the emitter writes a shape's
    /// text once and shares it, so the text's address names it without hashing it).
    fn compile(&mut self, src: &Arc<str>) -> Result<Arc<[u32]>, wgsl::CompileError> {
        let key = Arc::as_ptr(src) as *const u8 as usize;
        if let Some((_, r)) = self.compiled.get(&key) {
            return r.clone();
        }
        if self.compiled.len() >= MAX_COMPILED {
            self.compiled.clear();
        }
        let r = wgsl::compile(src).map(Arc::from);
        self.compiled.insert(key, (src.clone(), r.clone()));
        r
    }

    /// Pipelines built and runs that reused a built one, since the device was opened.
    pub fn pipeline_counts(&self) -> (u64, u64) {
        self.device.pipeline_counts()
    }

    /// `vkCmdDispatch` commands recorded since the device was opened (issue 31: a batch's
    /// cases of one shape are one).
    pub fn dispatch_count(&self) -> u64 {
        self.device.dispatch_count()
    }

    fn err(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: self.name.clone(),
            kind,
        }
    }

    /// The standalone form of a single-instruction dispatch that just ran (`args`: its buffers
    /// before the run; `prepared.dispatch`: after it).
    fn capture_single(
        &self,
        r: &Request<'_>,
        prepared: &Prepared,
        args: Vec<crate::repro::Arg>,
    ) -> Result<crate::repro::Dispatch, String> {
        let d = &prepared.dispatch;
        let plan = match &prepared.plan {
            Planned::Mem(plan) => plan,
            Planned::Shuffle(plan) => {
                return repro::shuffle_dispatch(r, plan, d, prepared.wgsl.as_deref(), args);
            }
        };
        crate::repro::single_dispatch(
            r,
            plan,
            &d.buffers[0].bytes,
            (0, 1, d.ret_bytes as usize),
            (repro::program(d, prepared.wgsl.as_deref()), args),
            (
                (d.groups.max(1) * d.local_size) as usize,
                d.local_size as usize,
            ),
        )
    }
}

/// A case's plan and its emitted program, before the device runs it.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The plan.
    pub plan: Planned,
    /// The dispatch (for the WGSL route, `words` stays empty until naga compiles `wgsl`).
    pub dispatch: Dispatch,
    /// The WGSL source (WGSL route; a memory instruction's is its shape's, shared).
    pub wgsl: Option<Arc<str>>,
    /// Its batched form (a memory instruction on the WGSL route; [`Dispatch::batched`]).
    pub wgsl_batched: Option<Arc<str>>,
}

/// Which plan a case has.
#[derive(Clone, Debug)]
pub enum Planned {
    /// A memory instruction.
    Mem(Plan),
    /// A SIMD-group exchange.
    Shuffle(ShufflePlan),
}

/// Parses, lowers, plans and emits `r` for a device with `f` (no driver needed): what a run
/// dispatches, or why the case does not apply.
pub fn prepare(
    route: Route,
    r: &Request<'_>,
    f: &Features,
    plant: Plant,
) -> Result<Prepared, AdapterErrorKind> {
    prepare_lowered(route, r, &*crate::back::lower(r)?, f, plant)
}

/// [`prepare`] of an instruction already lowered (the [`crate::back::Backend`] step after the
/// shared opening).
pub fn prepare_lowered(
    route: Route,
    r: &Request<'_>,
    lowered: &atomcts_reference::ir::Lowered,
    f: &Features,
    plant: Plant,
) -> Result<Prepared, AdapterErrorKind> {
    let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
    match &lowered.instr {
        Instr::Mem(_) => {
            let plan = Plan::new(lowered, r.state).map_err(na)?;
            let mem = plan.layout().bytes(r.state, plan.space);
            let (dispatch, wgsl, wgsl_batched) = match route {
                Route::Spirv => (
                    atomic::emit_atomic(&plan, mem, f, plant).map_err(na)?,
                    None,
                    None,
                ),
                Route::WgslNaga => {
                    let s = wgsl::emit_atomic(&plan, mem, f).map_err(na)?;
                    (s.dispatch, Some(s.source), s.batched)
                }
            };
            Ok(Prepared {
                plan: Planned::Mem(plan),
                dispatch,
                wgsl,
                wgsl_batched,
            })
        }
        Instr::Shuffle(_) => {
            let plan = ShufflePlan::new(r.asm, lowered, r.state, r.profile).map_err(na)?;
            let (dispatch, wgsl) = match route {
                Route::Spirv => (shuffle::emit_shuffle(&plan, f, plant).map_err(na)?, None),
                Route::WgslNaga => {
                    let s = wgsl::emit_shuffle(&plan, f).map_err(na)?;
                    (s.dispatch, Some(s.source))
                }
            };
            Ok(Prepared {
                plan: Planned::Shuffle(plan),
                dispatch,
                wgsl,
                wgsl_batched: None,
            })
        }
    }
}

/// A concurrent case's plan and module, before the device runs it.
#[derive(Clone, Debug)]
pub struct PreparedConcurrent {
    /// The plan (one work-group per instruction, or one work-group on local memory).
    pub plan: ConcurrentPlan,
    /// The instructions as the reference lowers them.
    pub lowered: Vec<atomcts_reference::ir::Lowered>,
    /// Each instruction's initial state.
    pub states: Vec<atomcts_reference::State>,
    /// The dispatch.
    pub dispatch: Dispatch,
}

/// Lowers, plans and emits the concurrent case `r` for a device with `f` (no driver needed):
/// what a run dispatches, or why the case does not apply. Instructions on work-group local
/// memory run as disjoint invocation ranges of one work-group ([`ConcurrentPlan::new_local`]).
pub fn prepare_concurrent(
    r: &ConcurrentRequest<'_>,
    f: &Features,
    plant: Plant,
) -> Result<PreparedConcurrent, AdapterErrorKind> {
    let na = |why: NotApplicable| AdapterErrorKind::NotApplicable(why.0);
    let (lowered, states) = r.lowered_states()?;
    let iterations = r.iterations();
    let mut plan = ConcurrentPlan::new_or_local(&lowered, &states, &iterations).map_err(na)?;
    plan.start_line = crate::plan::start_line_from_env();
    let mem = plan.image(&states[0]);
    let dispatch = concurrent::emit(&plan, mem, f, plant).map_err(na)?;
    Ok(PreparedConcurrent {
        plan,
        lowered,
        states,
        dispatch,
    })
}

/// The final state of a case from its dispatch's buffers as read back after the run (the
/// memory, then the returned values and success flags; a shuffle's results), as every route
/// that runs a [`Prepared`] dispatch reads them (Vulkan's and the browser's WebGPU).
pub fn finish(
    plan: &Planned,
    r: &Request<'_>,
    d: &mut Dispatch,
) -> Result<State, AdapterErrorKind> {
    let done = match plan {
        Planned::Mem(plan) => {
            let n = plan.items.len();
            let old = bytes_to_values(&d.buffers[1].bytes, d.ret_bytes, n);
            let ok = bytes_to_values(&d.buffers[2].bytes, 4, n);
            let mem = std::mem::take(&mut d.buffers[0].bytes);
            let (global, shared) = match plan.space {
                Space::Global => (mem, plan.shared.bytes(r.state, Space::Shared)),
                Space::Shared => (plan.global.bytes(r.state, Space::Global), mem),
            };
            let returned = Returned {
                old,
                ok: ok.iter().map(|v| *v != 0).collect(),
            };
            let lowered = crate::back::lower(r)?;
            plan.finish(&lowered, r.state, &global, &shared, &returned)
        }
        Planned::Shuffle(plan) => {
            let results = bytes_to_values(&d.buffers[0].bytes, d.ret_bytes, plan.threads.len());
            plan.finish(r.state, &results)
        }
    };
    done.map_err(AdapterErrorKind::Model)
}

fn yn(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

fn bytes_to_values(bytes: &[u8], width: u64, count: usize) -> Vec<u64> {
    (0..count)
        .map(|i| {
            let o = i * width as usize;
            let mut v = [0u8; 8];
            v[..width as usize].copy_from_slice(&bytes[o..o + width as usize]);
            u64::from_le_bytes(v)
        })
        .collect()
}

impl Adapter for VulkanAdapter {
    fn screen(&mut self, request: &Request<'_>) -> Option<String> {
        crate::back::screen(self, request)
    }

    fn builds(&self) -> Option<crate::Builds> {
        let (built, reused) = self.pipeline_counts();
        Some(crate::Builds {
            what: "pipelines",
            built,
            reused,
        })
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn device(&self) -> Option<String> {
        Some(self.device.info.name.trim().to_string())
    }

    /// The device, API and driver versions (not the CPU-dependent part of llvmpipe's name), and
    /// the translator on the WGSL route.
    fn describe(&self) -> Option<String> {
        let i = &self.device.info;
        let device = i.name.split(" (").next().unwrap_or(&i.name);
        let base = format!(
            "{device} (Vulkan {}; driver {})",
            i.api_version,
            i.driver.trim()
        );
        Some(match self.route {
            Route::Spirv => base,
            Route::WgslNaga => format!("WGSL compiled by naga 30 to SPIR-V, on {base}"),
        })
    }

    /// Capabilities of the case format: what the device's features allow (the per-op check is
    /// the emitter's, from the lowered IR).
    fn supports(&self, capability: &str) -> bool {
        let f = self.device.info.features;
        match (self.route, capability) {
            (Route::Spirv, "u64_atomics") => f.int64 && f.buffer_int64_atomics,
            (Route::Spirv, "f32_atomic_add") => f.buffer_f32_add,
            (_, "msl_simd_2_0") => f.subgroup_shuffle && f.subgroup_shuffle_relative,
            _ => false,
        }
    }

    fn level(&self) -> Level {
        Level::Semantic
    }

    fn last_program(&self) -> Option<String> {
        self.last.as_ref().map(batch::Last::text)
    }

    /// Capturing (`atomcts repro`) turns batching off: each case runs alone, as its
    /// reproducer does.
    fn capture_dispatches(&mut self, on: bool) {
        self.capture = on;
    }

    /// Batched ([`batch`]) unless `ATOMCTS_VULKAN_BATCH=1` or dispatches are captured.
    fn pipelined(&self) -> Option<&dyn crate::Pipelined> {
        (self.batching && !self.capture).then_some(self as &dyn crate::Pipelined)
    }

    fn pipelined_mut(&mut self) -> Option<&mut dyn crate::Pipelined> {
        (self.batching && !self.capture).then_some(self as &mut dyn crate::Pipelined)
    }

    fn reproducer(&mut self, about: &crate::repro::About) -> Option<Result<String, String>> {
        let pattern = known(&self.selector).map_or(self.selector.as_str(), |k| k.device);
        Some(match &self.dispatch {
            Some(Ok(d)) => {
                let mut about = about.clone();
                // The loader loads exactly the driver atomcts ran (SwiftShader's manifest lies
                // outside its search path).
                about.env = known(&self.selector)
                    .map(|k| vec![("VK_DRIVER_FILES".to_string(), k.icd.to_string())])
                    .unwrap_or_default();
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

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

impl VulkanAdapter {
    /// A concurrent case planned and emitted on this route and device, or why not.
    fn prepare_concurrent(
        &self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<PreparedConcurrent, AdapterErrorKind> {
        if self.route == Route::WgslNaga {
            return Err(AdapterErrorKind::NotApplicable(
                "the WGSL route does not translate concurrent cases (the SPIR-V route, vulkan:, runs them)"
                    .into(),
            ));
        }
        prepare_concurrent(r, &self.device.info.features, self.plant)
    }
}

/// The Vulkan back end, both routes: plan and emit SPIR-V (or WGSL, compiled by naga at run
/// time), and dispatch it.
impl crate::back::Backend for VulkanAdapter {
    type Emitted = Prepared;

    fn emit(
        &mut self,
        r: &Request<'_>,
        lowered: &Lowered,
    ) -> Result<Self::Emitted, AdapterErrorKind> {
        let f = self.device.info.features;
        prepare_lowered(self.route, r, lowered, &f, self.plant)
    }

    fn run(&mut self, r: &Request<'_>, emitted: Self::Emitted) -> Result<State, AdapterErrorKind> {
        let mut prepared = emitted;
        self.ready(&mut prepared)?;
        self.last = Some(batch::Last::program(&prepared));
        let args = self.capture.then(|| repro::args(&prepared.dispatch));
        let d = &mut prepared.dispatch;
        self.device.run(d).map_err(AdapterErrorKind::Crashed)?;
        if let Some(args) = args {
            self.dispatch = Some(self.capture_single(r, &prepared, args));
        }
        let d = &mut prepared.dispatch;
        finish(&prepared.plan, r, d)
    }
}

impl VulkanAdapter {
    /// Makes `prepared` ready to dispatch (naga's SPIR-V on the WGSL route); where naga does
    /// not compile it, sets the program printed ([`Adapter::last_program`]).
    fn ready(&mut self, prepared: &mut Prepared) -> Result<(), AdapterErrorKind> {
        let words = match &prepared.wgsl {
            Some(src) => match self.compile(src) {
                Ok(words) => words.to_vec(),
                // A shader naga does not compile: printed as its WGSL.
                Err(e) => {
                    self.last = Some(batch::Last::Text(format!(
                        "{}{src}",
                        prepared.dispatch.operands.text()
                    )));
                    return Err(match e {
                        wgsl::CompileError::Rejected(e) => {
                            AdapterErrorKind::NotApplicable(format!(
                                "naga rejected the WGSL translation (a shader-creation error): {}",
                                e.lines().next().unwrap_or("")
                            ))
                        }
                        wgsl::CompileError::Writer(e) => {
                            AdapterErrorKind::Crashed(format!("naga's SPIR-V writer failed: {e}"))
                        }
                    });
                }
            },
            None => std::mem::take(&mut prepared.dispatch.words),
        };
        prepared.dispatch.words = words;
        // The batched form, where naga compiles it (else the case is its own dispatch, as
        // where batching is off).
        if let Some(src) = &prepared.wgsl_batched {
            prepared.dispatch.batched = self.compile(src).ok();
        }
        Ok(())
    }
}

impl crate::Concurrent for VulkanAdapter {
    /// The SPIR-V route runs concurrent cases ([`concurrent`]); the WGSL route does not
    /// translate them.
    fn screen_concurrent(&mut self, r: &ConcurrentRequest<'_>) -> Option<String> {
        match self.prepare_concurrent(r) {
            Err(AdapterErrorKind::NotApplicable(why)) => Some(why),
            _ => None,
        }
    }

    fn run_concurrent(
        &mut self,
        r: &ConcurrentRequest<'_>,
    ) -> Result<ConcurrentObservation, AdapterError> {
        self.last = None;
        self.dispatch = None;
        let mut p = self.prepare_concurrent(r).map_err(|e| self.err(e))?;
        self.last = Some(batch::Last::Text(format!(
            "; {} work-group(s) of {} invocations\n{}",
            p.dispatch.groups,
            p.dispatch.local_size,
            p.dispatch.listing()
        )));
        let args = self.capture.then(|| repro::args(&p.dispatch));
        let d = &mut p.dispatch;
        self.device
            .run(d)
            .map_err(|e| self.err(AdapterErrorKind::Crashed(e)))?;
        if let Some(args) = args {
            let d = &p.dispatch;
            self.dispatch = Some(
                crate::concurrent::serial(&self.name, r, &atomcts_reference::exec::execute)
                    .map_err(|e| e.to_string())
                    .and_then(|s| {
                        crate::repro::concurrent_checks(
                            &p.plan,
                            &p.states[0],
                            &s.states[0],
                            0,
                            Some((3, 0)),
                            Some(crate::repro::Rets {
                                ret: (1, d.ret_bytes as usize),
                                ok: (2, 4),
                            }),
                        )
                    })
                    .map(|(checks, unjudged, orders)| crate::repro::Dispatch {
                        program: repro::program(d, None),
                        args,
                        global: (d.groups.max(1) * d.local_size) as usize,
                        local: d.local_size as usize,
                        checks,
                        unjudged,
                        orders,
                    }),
            );
        }
        let d = &mut p.dispatch;
        let slots = p.plan.ret_len();
        let old = bytes_to_values(&d.buffers[1].bytes, d.ret_bytes, slots);
        let ok: Vec<bool> = bytes_to_values(&d.buffers[2].bytes, 4, slots)
            .iter()
            .map(|v| *v != 0)
            .collect();
        let executed: Vec<u32> = bytes_to_values(&d.buffers[3].bytes, 4, p.plan.threads())
            .iter()
            .map(|v| *v as u32)
            .collect();
        p.plan
            .observe(
                &p.lowered,
                &p.states,
                &d.buffers[0].bytes,
                &old,
                &ok,
                None,
                Some(&executed),
            )
            .map_err(|e| self.err(AdapterErrorKind::Model(e)))
    }
}
