//! The browser's WebGPU as an implementation under test (`--adapter webgpu:chromium`): each
//! case's WGSL (the same shader the `wgsl-naga:` route writes, [`crate::back::wgsl`]) is
//! compiled by the browser's own WGSL compiler (Tint, in Chromium's Dawn) and dispatched
//! through `navigator.gpu` in headless Chromium on SwiftShader, so Tint and Dawn are judged
//! beside naga. The browser is started and stopped here ([`browser`]); cases are sent in
//! batches, one page round trip per batch ([`crate::Pipelined`], window [`MAX_BATCH`]), and every
//! answer is checked before it is believed ([`answer`]).
//!
//! What the device can express comes from what the page reports (`GPUAdapter.features`,
//! `.limits`, `.info`): sub-group cases need the `subgroups` feature and a device whose
//! sub-group size is fixed (`subgroupMinSize == subgroupMaxSize`: WebGPU has no way to require
//! one), and run with WGSL's `enable subgroups;` (W3C WGSL §4.1.1), which Tint requires.
//! Concurrent cases are not translated (as on the `wgsl-naga:` route).
//! `ATOMCTS_WEBGPU_PLANT` makes the page lie on purpose (`flip`, `short`, `wide`, `drop`,
//! `extra`, `reorder`, `nobuffer`, `stall`, `garbage`), for checking the judge.

pub mod answer;
pub mod browser;
pub mod jobs;
pub mod repro;

use crate::back::vulkan::emit::Features;
use crate::back::vulkan::{self, Planned, Prepared, Route};
use crate::{Adapter, AdapterError, AdapterErrorKind, Level, Observation, Request};
use browser::{Browser, Failure};
use std::collections::VecDeque;
use std::time::Duration;

/// Cases sent to the page in one round trip at most.
pub const MAX_BATCH: usize = 64;

/// The largest answer the page may post, in bytes (a batch's buffers as JSON numbers).
pub const MAX_ANSWER_BYTES: u64 = 64 << 20;

/// The browsers this project knows how to drive.
pub const KNOWN: &[&str] = &["chromium"];

/// The page's planted lies (`ATOMCTS_WEBGPU_PLANT`).
pub const PLANTS: &[&str] = &[
    "flip", "short", "wide", "drop", "extra", "reorder", "nobuffer", "stall", "garbage",
];

/// Whether the browser is installed; `Err` says why not, in one line.
pub fn availability(selector: &str) -> Result<(), String> {
    if !KNOWN.contains(&selector) {
        return Err(format!(
            "unknown browser `{selector}` (known: {})",
            KNOWN.join(", ")
        ));
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(browser::CHROMIUM).is_file()));
    if found {
        Ok(())
    } else {
        Err(format!(
            "{} not found on PATH (install chromium: tools/install-implementations.sh vulkan)",
            browser::CHROMIUM
        ))
    }
}

/// What the page said first.
#[derive(Clone, Debug, Default)]
struct Hello {
    adapter: String,
    features: Vec<String>,
    subgroup_sizes: Option<(u32, u32)>,
    limits: serde_json::Value,
}

/// The text field `k` of `v`, or empty.
fn field<'a>(v: &'a serde_json::Value, k: &str) -> &'a str {
    v.get(k).and_then(|x| x.as_str()).unwrap_or("")
}

impl Hello {
    fn parse(text: &str) -> Result<Hello, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("the page's hello is not JSON: {e}"))?;
        if v.get("type").and_then(|t| t.as_str()) != Some("hello") {
            return Err("the page's first message is not its hello".into());
        }
        if let Some(e) = v.get("error") {
            return Err(format!("the page: {}", e.as_str().unwrap_or("error")));
        }
        let info = &v["info"];
        let size = |k: &str| {
            info.get(k)
                .and_then(|x| x.as_u64())
                .and_then(|x| u32::try_from(x).ok())
        };
        Ok(Hello {
            adapter: format!("{} {}", field(info, "vendor"), field(info, "architecture"))
                .trim()
                .to_string(),
            features: v["features"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            subgroup_sizes: size("subgroupMinSize").zip(size("subgroupMaxSize")),
            limits: v["limits"].clone(),
        })
    }

    fn limit(&self, k: &str) -> u32 {
        self.limits
            .get(k)
            .and_then(|x| x.as_u64())
            .map_or(0, |x| u32::try_from(x).unwrap_or(u32::MAX))
    }

    /// What the WGSL emitter may use on this device (WGSL has no 64-bit or float atomics).
    fn features(&self) -> Features {
        let subgroups = self.features.iter().any(|f| f == "subgroups");
        let (min, max) = self.subgroup_sizes.unwrap_or((0, 0));
        Features {
            subgroup_basic: subgroups,
            subgroup_shuffle: subgroups,
            subgroup_shuffle_relative: subgroups,
            subgroup_ballot: subgroups,
            // WebGPU cannot require a sub-group size; a device with one size has it anyway.
            subgroup_size_control: subgroups && min == max && min > 0,
            min_subgroup_size: min,
            max_subgroup_size: max,
            max_shared_bytes: self.limit("maxComputeWorkgroupStorageSize"),
            max_invocations: self
                .limit("maxComputeInvocationsPerWorkgroup")
                .min(self.limit("maxComputeWorkgroupSizeX")),
            ..Features::default()
        }
    }
}

/// A case sent, waiting for its batch to run.
struct Queued {
    prepared: Prepared,
    source: String,
    id: String,
}

/// A case run, waiting for [`crate::Pipelined::receive`].
struct Answered {
    prepared: Prepared,
    program: String,
    answer: Result<Vec<Vec<u8>>, AdapterErrorKind>,
}

/// Chromium's WebGPU as an implementation under test.
pub struct WebGpuAdapter {
    name: String,
    plant: String,
    timeout: Duration,
    browser: Option<Browser>,
    hello: Hello,
    /// `chromium --version`.
    version: String,
    features: Features,
    queued: VecDeque<Queued>,
    answered: VecDeque<Answered>,
    next_id: u64,
    last: Option<String>,
    /// Whether to keep each case's standalone form (`atomcts repro`).
    capture: bool,
    /// Whether a round trip's cases of one shape are one job ([`jobs`];
    /// `ATOMCTS_WEBGPU_BATCH=1` turns it off).
    batching: bool,
    /// The last case's standalone form, or why there is none.
    dispatch: Option<Result<crate::repro::Dispatch, String>>,
}

impl WebGpuAdapter {
    /// Starts the browser `selector` names; `timeout` bounds each case of a batch (a batch may
    /// take `timeout` plus 50 ms per case).
    pub fn open(selector: &str, timeout: Duration) -> Result<WebGpuAdapter, AdapterError> {
        let name = format!("webgpu:{selector}");
        let unavailable = |why: String| AdapterError {
            adapter: name.clone(),
            kind: AdapterErrorKind::Unavailable(why),
        };
        availability(selector).map_err(unavailable)?;
        let plant = std::env::var("ATOMCTS_WEBGPU_PLANT").unwrap_or_default();
        if !plant.is_empty() && !PLANTS.contains(&plant.as_str()) {
            return Err(unavailable(format!(
                "ATOMCTS_WEBGPU_PLANT=`{plant}` (expected one of {})",
                PLANTS.join(", ")
            )));
        }
        let version = browser::version();
        let (browser, hello) = Browser::start(&plant).map_err(|f| unavailable(failure(f)))?;
        let hello = Hello::parse(&hello).map_err(unavailable)?;
        Ok(WebGpuAdapter {
            name,
            plant,
            timeout,
            browser: Some(browser),
            features: hello.features(),
            hello,
            version,
            queued: VecDeque::new(),
            answered: VecDeque::new(),
            next_id: 0,
            last: None,
            capture: false,
            batching: std::env::var("ATOMCTS_WEBGPU_BATCH").as_deref() != Ok("1"),
            dispatch: None,
        })
    }

    /// What the browser reports, in one line.
    pub fn describe_line(&self) -> String {
        let h = &self.hello;
        let version = &self.version;
        let sg = match (self.features.subgroup_basic, h.subgroup_sizes) {
            (true, Some((a, b))) => format!("subgroups {a}..{b} lanes"),
            _ => "no subgroups".into(),
        };
        format!(
            "{version} WebGPU (Dawn, Tint) on {}; {sg}; {} invocations per work-group, {} bytes of work-group memory",
            h.adapter, self.features.max_invocations, self.features.max_shared_bytes
        )
    }

    /// Shader creation only (W3C WebGPU `createShaderModule` and `createComputePipeline`, entry
    /// point `main`): for each WGSL source, in one round trip, `Ok` when the browser created
    /// the pipeline, else its error (for the shader-creation cases of `adapters/wgsl-cases/`).
    pub fn create_shaders(
        &mut self,
        sources: &[String],
    ) -> Result<Vec<Result<(), String>>, AdapterError> {
        let first = self.next_id;
        self.next_id += sources.len() as u64;
        let shapes: Vec<answer::JobShape> = (0..sources.len())
            .map(|i| answer::JobShape {
                id: (first + i as u64).to_string(),
                lens: vec![],
            })
            .collect();
        let jobs: Vec<serde_json::Value> = sources
            .iter()
            .zip(&shapes)
            .map(|(src, s)| serde_json::json!({"id": s.id, "source": src, "compile": true, "groups": 1, "buffers": []}))
            .collect();
        let text = serde_json::json!({"type": "batch", "jobs": jobs}).to_string();
        let deadline = self.timeout + Duration::from_millis(50) * sources.len() as u32;
        let b = self.browser.as_mut().ok_or_else(|| AdapterError {
            adapter: self.name.clone(),
            kind: AdapterErrorKind::Crashed("the browser is gone".into()),
        })?;
        let t = b
            .exchange(&text, deadline)
            .map_err(|f| self.err(failure_kind(f)))?;
        let answers =
            answer::check(&shapes, &t).map_err(|e| self.err(AdapterErrorKind::Protocol(e)))?;
        Ok(answers.into_iter().map(|a| a.map(|_| ())).collect())
    }

    fn err(&self, kind: AdapterErrorKind) -> AdapterError {
        AdapterError {
            adapter: self.name.clone(),
            kind,
        }
    }

    /// Runs every queued case in one round trip, and files their answers.
    fn flush(&mut self) {
        let batch: Vec<Queued> = self.queued.drain(..).collect();
        if batch.is_empty() {
            return;
        }
        // One job per batched shader's cases (a workgroup each), the rest alone ([`jobs`]);
        // not while reproducers are captured (each is written as its case runs alone).
        let cases: Vec<jobs::Case<'_>> = batch
            .iter()
            .map(|q| jobs::Case {
                id: &q.id,
                source: &q.source,
                batched: q.prepared.wgsl_batched.as_deref(),
                groups: q.prepared.dispatch.groups,
                buffers: q
                    .prepared
                    .dispatch
                    .buffers
                    .iter()
                    .map(|b| &b.bytes[..])
                    .collect(),
                roles: q.prepared.dispatch.buffers.iter().map(|b| b.role).collect(),
            })
            .collect();
        let js = jobs::jobs(&cases, self.next_id, self.batching && !self.capture);
        self.next_id += js.len() as u64;
        let shapes: Vec<answer::JobShape> = js.iter().map(|j| j.shape.clone()).collect();
        let jobs: Vec<serde_json::Value> = js
            .iter()
            .map(|j| {
                serde_json::json!({
                    "id": j.shape.id,
                    "source": j.source,
                    "groups": j.groups,
                    "buffers": j.buffers,
                })
            })
            .collect();
        let text = serde_json::json!({"type": "batch", "jobs": jobs}).to_string();
        let deadline = self.timeout + Duration::from_millis(50) * batch.len() as u32;
        let result = match self.browser.as_mut() {
            Some(b) => b.exchange(&text, deadline).map_err(failure_kind),
            None => match Browser::start(&self.plant) {
                Ok((mut b, _hello)) => {
                    let r = b.exchange(&text, deadline).map_err(failure_kind);
                    self.browser = Some(b);
                    r
                }
                Err(f) => Err(failure_kind(f)),
            },
        };
        let answers =
            result.and_then(|t| answer::check(&shapes, &t).map_err(AdapterErrorKind::Protocol));
        if answers.is_err() {
            // A browser that lied, stalled or died is not asked again: the next batch starts a
            // fresh one.
            self.browser = None;
        }
        // Each case's answer: its job's, split where the job was batched.
        let mut each: Vec<Option<Result<Vec<Vec<u8>>, AdapterErrorKind>>> =
            (0..batch.len()).map(|_| None).collect();
        let mut ran_batched = vec![false; batch.len()];
        for (k, j) in js.iter().enumerate() {
            let split = match &answers {
                Ok(a) => j.split(&a[k], &cases),
                Err(e) => j.cases.iter().map(|_| Err(e.clone())).collect(),
            };
            for (&c, a) in j.cases.iter().zip(split) {
                each[c] = Some(a);
                ran_batched[c] = j.batched();
            }
        }
        drop(cases);
        for ((q, answer), batched) in batch.into_iter().zip(each).zip(ran_batched) {
            let answer = answer.unwrap_or_else(|| {
                Err(AdapterErrorKind::Model(
                    "the case was in no job (a back-end bug)".into(),
                ))
            });
            // What ran, where it is not what is printed.
            let ran = if batched {
                "// ran batched: one workgroup of a dispatch of the round trip's cases of this shape, of this shader's batched form (its buffers' offsets read from a bases buffer); printed as it runs alone (ATOMCTS_WEBGPU_BATCH=1)\n"
            } else {
                ""
            };
            let program = format!("{ran}{}{}", q.prepared.dispatch.operands.text(), q.source);
            self.answered.push_back(Answered {
                prepared: q.prepared,
                program,
                answer,
            });
        }
    }
}

fn failure(f: Failure) -> String {
    match f {
        Failure::Timeout(t) => format!("the page did not answer within {} ms", t.as_millis()),
        Failure::Interrupted(s) => format!("interrupted by signal {s}"),
        Failure::Other(s) => s,
    }
}

fn failure_kind(f: Failure) -> AdapterErrorKind {
    match f {
        Failure::Timeout(t) => AdapterErrorKind::Timeout(t.as_millis() as u64),
        Failure::Interrupted(s) => AdapterErrorKind::Interrupted(s),
        Failure::Other(s) => AdapterErrorKind::Crashed(s),
    }
}

/// The WGSL the browser compiles: the `wgsl-naga:` route's shader, with `enable subgroups;`
/// where it calls sub-group built-ins (W3C WGSL §4.1.1; naga rejects the directive, Tint
/// requires it), and the `subgroup_uniformity` diagnostic off (WGSL §2.3 "Diagnostics",
/// §15.2 uniformity analysis): the shader calls the built-in only in the lanes the case makes
/// active, the control flow MSL's inactive lanes need, which WGSL's analysis rejects by
/// default. naga does not apply that analysis (so the `wgsl-naga:` shader omits both).
fn browser_source(p: &Prepared) -> Option<String> {
    let src = p.wgsl.as_ref()?;
    Some(match p.plan {
        Planned::Shuffle(_) => {
            format!("enable subgroups;\ndiagnostic(off, subgroup_uniformity);\n{src}")
        }
        Planned::Mem(_) => src.to_string(),
    })
}

impl Adapter for WebGpuAdapter {
    /// The reason [`crate::Pipelined::send`] would refuse the case before the page sees it.
    fn screen(&mut self, request: &Request<'_>) -> Option<String> {
        let prepared = crate::back::lower(request).and_then(|lowered| {
            vulkan::prepare_lowered(
                Route::WgslNaga,
                request,
                &lowered,
                &self.features,
                vulkan::emit::Plant::None,
            )
        });
        match prepared {
            Err(AdapterErrorKind::NotApplicable(why)) => Some(why),
            _ => None,
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn supports(&self, _capability: &str) -> bool {
        false
    }

    fn run(&mut self, request: &Request<'_>) -> Result<Observation, AdapterError> {
        crate::Pipelined::send(self, request)?;
        crate::Pipelined::receive(self, request)
    }

    fn level(&self) -> Level {
        Level::Semantic
    }

    fn last_program(&self) -> Option<String> {
        self.last.clone()
    }

    fn describe(&self) -> Option<String> {
        Some(self.describe_line())
    }

    fn claimed_profile(&self) -> Option<String> {
        Some("spirv".into())
    }

    fn capture_dispatches(&mut self, on: bool) {
        self.capture = on;
    }

    fn reproducer(&mut self, about: &crate::repro::About) -> Option<Result<String, String>> {
        Some(match &self.dispatch {
            Some(Ok(d)) => repro::script(about, d),
            Some(Err(why)) => Err(why.clone()),
            None => Err("the case dispatched nothing in the browser".into()),
        })
    }

    fn pipelined(&self) -> Option<&dyn crate::Pipelined> {
        Some(self)
    }

    fn pipelined_mut(&mut self) -> Option<&mut dyn crate::Pipelined> {
        Some(self)
    }
}

impl crate::Pipelined for WebGpuAdapter {
    fn window(&self) -> usize {
        MAX_BATCH
    }

    fn send(&mut self, request: &Request<'_>) -> Result<(), AdapterError> {
        self.last = None;
        let lowered = crate::back::lower(request).map_err(|k| self.err(k))?;
        let prepared = vulkan::prepare_lowered(
            Route::WgslNaga,
            request,
            &lowered,
            &self.features,
            vulkan::emit::Plant::None,
        )
        .map_err(|k| self.err(k))?;
        let source = browser_source(&prepared).ok_or_else(|| {
            self.err(AdapterErrorKind::Model(
                "the WGSL route wrote no shader".into(),
            ))
        })?;
        self.queued.push_back(Queued {
            prepared,
            source,
            id: request.id.to_string(),
        });
        Ok(())
    }

    fn receive(&mut self, request: &Request<'_>) -> Result<Observation, AdapterError> {
        if self.answered.is_empty() {
            self.flush();
        }
        let Some(mut a) = self.answered.pop_front() else {
            return Err(self.err(AdapterErrorKind::Protocol(
                "an answer was asked for a case that was never sent".into(),
            )));
        };
        self.last = Some(a.program);
        self.dispatch = None;
        let buffers = a.answer.map_err(|k| self.err(k))?;
        let before = self.capture.then(|| a.prepared.dispatch.buffers.clone());
        for (b, bytes) in a.prepared.dispatch.buffers.iter_mut().zip(buffers) {
            b.bytes = bytes;
        }
        if let Some(before) = before {
            self.dispatch = Some(match browser_source(&a.prepared) {
                Some(source) => repro::dispatch(
                    request,
                    &a.prepared,
                    &before,
                    &source,
                    &a.prepared.dispatch.buffers[0].bytes,
                ),
                None => Err("the WGSL route wrote no shader".into()),
            });
        }
        vulkan::finish(&a.prepared.plan, request, &mut a.prepared.dispatch)
            .map(Observation::Completed)
            .map_err(|k| self.err(k))
    }
}
