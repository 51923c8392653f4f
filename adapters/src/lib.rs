//! Implementations under test behind one trait.
//!
//! An [`Adapter`] takes one case's instruction, initial state and profile and reports what the
//! implementation did: a completed state, a fault, a rejection, or (for the reference only) that
//! the documents leave the outcome undefined. The runner compares that [`Observation`] with the
//! case's expectation and with the reference model.
//!
//! Built in: [`ReferenceAdapter`] (the spec-literal model) and [`FastAdapter`] (the fast path,
//! bit-identical to the reference, in `atomcts-fast`). Third-party implementations plug in
//! through the subprocess protocol ([`protocol`], documented in
//! `adapters/PROTOCOL.md`), or as semantic-level back ends over the shared [`plan`] (one folder
//! per target under [`back`]: emit, then run: OpenCL C, SPIR-V for Vulkan, WGSL through naga;
//! SIMD-group exchanges over [`shuffle`]).
//!
//! Two kinds ([`Level`]): a text-level implementation reads the instruction text and is judged
//! on every case; a semantic-level one runs the lowered IR of valid instructions, and what it
//! cannot apply to is [`AdapterErrorKind::NotApplicable`] with the reason.
#![deny(missing_docs)]

use atomcts_reference::ir::Lowered;
use atomcts_reference::outcome::{FaultClass, Outcome};
use atomcts_reference::program::{self, Dialect};
use atomcts_reference::{Profile, State};

pub mod adapter;
pub mod back;
pub mod concurrent;
pub mod discover;
pub mod fast;
pub mod float_values;
pub mod interrupt;
pub mod plan;
pub mod protocol;
pub mod registry;
pub mod repro;
pub mod shuffle;
pub mod text;
pub mod visa_asm;

pub use adapter::{Adapter, Builds, Concurrent, Pipelined, run_streamed};
pub use fast::FastAdapter;
pub use protocol::SubprocessAdapter;
pub use text::escape_controls;

/// Capabilities a case may require (`requires = [...]` in the case format).
pub const CAPABILITIES: &[&str] = &[
    "u64_atomics",
    "f32_atomic_add",
    "f64_atomic_add",
    "f16x2_atomics",
    "visa_16bit_atomics",
    "visa_scatter4",
    "msl_atomic_float",
    "msl_simd_2_0",
    "msl_simd_2_1",
    "msl_simd_2_4",
];

/// One instruction to run.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The case id (for messages).
    pub id: &'a str,
    /// The dialect of `asm`.
    pub dialect: Dialect,
    /// The instruction in the dialect's text form.
    pub asm: &'a str,
    /// The initial state.
    pub state: &'a State,
    /// The profile the implementation is judged under.
    pub profile: &'a Profile,
    /// The reference front end's lowering of `asm` under `state` and `profile`, where the
    /// runner has one (it runs the reference on every case before the adapter: issue 9).
    /// An adapter that would lower the text with the reference's own front end (the fast path)
    /// may execute this instead of parsing and lowering again; every other adapter ignores it.
    pub lowered: Option<&'a Lowered>,
}

/// What an implementation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    /// It completed with this final state.
    Completed(State),
    /// It faulted; the lanes and classes it reports (lanes may be empty if unknown).
    Fault(Vec<(u32, FaultClass)>),
    /// It rejected the instruction: the reason code if it can tell (else `rejected`), and the
    /// 1-based byte column in the instruction text that the rejection points at, if it says
    /// (FORMAT.md `column`, PROTOCOL.md `invalid`).
    Invalid {
        /// The reason code, or `rejected`.
        reason: String,
        /// The column (1-based), if the implementation locates its rejections.
        column: Option<usize>,
    },
    /// (Reference only) the documents leave the outcome undefined.
    Unspecified(String),
    /// A text-level implementation that does not execute (an assembler: `visa-asm:<platform>`)
    /// accepted the instruction. Judged on acceptance: a case that expects a rejection fails;
    /// on a case the documents call valid the values, a fault or any other run-time outcome
    /// are not applicable (nothing ran), and `differs` fails it.
    Accepted {
        /// What it made of the instruction, in its own words (the lowered message).
        lowered: String,
        /// Where what it made is not the instruction (another operation or surface), how:
        /// the acceptance of another instruction is no acceptance of this one.
        differs: Option<String>,
    },
}

impl Observation {
    /// One word for the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Observation::Completed(_) => "completed",
            Observation::Fault(_) => "fault",
            Observation::Invalid { .. } => "invalid",
            Observation::Unspecified(_) => "unspecified",
            Observation::Accepted { .. } => "accepted",
        }
    }

    /// The observation a reference outcome corresponds to.
    pub fn from_outcome(o: &Outcome) -> Observation {
        match o {
            Outcome::Completed(c) => Observation::Completed(c.state.clone()),
            Outcome::Fault(f) => Observation::Fault(f.lanes.clone()),
            Outcome::Invalid(r) => Observation::rejection(r),
            Outcome::Unspecified(why) => Observation::Unspecified(why.clone()),
        }
    }

    /// The observation of a reference rejection: its reason code, and its column made 1-based.
    pub fn rejection(r: &atomcts_reference::Rejection) -> Observation {
        Observation::Invalid {
            reason: r.reason.code().to_string(),
            column: r.column.map(|c| c + 1),
        }
    }
}

/// An adapter could not produce an observation (it crashed, hung, spoke garbage, is absent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("adapter {adapter}: {kind}")]
pub struct AdapterError {
    /// The adapter's name.
    pub adapter: String,
    /// What went wrong (part of the message, so not also a `source`).
    pub kind: AdapterErrorKind,
}

/// The ways an adapter fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterErrorKind {
    /// The implementation is not installed or cannot start.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// It did not answer within the per-case timeout.
    #[error("timed out after {0} ms")]
    Timeout(u64),
    /// It exited or crashed.
    #[error("crashed: {0}")]
    Crashed(String),
    /// It answered something that is not the protocol.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The model could not run the case (a model error, not a finding about the implementation).
    #[error("model error: {0}")]
    Model(String),
    /// The implementation cannot run this case at all (reported as skipped).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The case does not apply to this (semantic-level) implementation: an op it has no exact
    /// primitive for, a fault its API cannot observe, undefined behaviour on its API. Counted
    /// as not applicable with the reason, never a failure.
    #[error("not applicable: {0}")]
    NotApplicable(String),
    /// The run was stopped (by this signal) while the case was in flight: the case was not
    /// run ([`interrupt`]).
    #[error("interrupted by signal {0}")]
    Interrupted(i32),
}

/// What an implementation under test consumes (DESIGN.md, "Real implementations under test").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// It reads the dialect's text (an assembler, a disassembler, a text simulator) and is
    /// judged on every case, illegal forms included.
    Text,
    /// It runs the lowered, dialect-neutral IR of a valid instruction (a driver, a simulator
    /// API). Cases expecting `invalid`, and faults its API cannot observe, are not applicable.
    Semantic,
}

impl Level {
    /// `text` or `semantic`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Text => "text",
            Level::Semantic => "semantic",
        }
    }
}

/// The reference model as an adapter: it supports everything.
#[derive(Clone, Debug, Default)]
pub struct ReferenceAdapter;

impl Adapter for ReferenceAdapter {
    fn name(&self) -> &str {
        "reference"
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "atomcts {} reference model",
            env!("CARGO_PKG_VERSION")
        ))
    }

    fn claimed_profile(&self) -> Option<String> {
        Some("default".into())
    }

    fn supports(&self, capability: &str) -> bool {
        CAPABILITIES.contains(&capability)
    }

    fn locates_rejections(&self) -> bool {
        true
    }

    fn is_builtin_model(&self) -> bool {
        true
    }

    fn fork(&self) -> Option<Box<dyn Adapter + Send>> {
        Some(Box::new(ReferenceAdapter))
    }

    fn run(&mut self, r: &Request<'_>) -> Result<Observation, AdapterError> {
        program::run(r.dialect, r.asm, r.state, r.profile)
            .map(|run| Observation::from_outcome(&run.outcome))
            .map_err(|e| AdapterError {
                adapter: "reference".into(),
                kind: AdapterErrorKind::Model(e.to_string()),
            })
    }

    fn concurrent(&self) -> Option<&dyn crate::Concurrent> {
        Some(self)
    }

    fn concurrent_mut(&mut self) -> Option<&mut dyn crate::Concurrent> {
        Some(self)
    }
}

impl Concurrent for ReferenceAdapter {
    fn run_concurrent(
        &mut self,
        r: &concurrent::ConcurrentRequest<'_>,
    ) -> Result<concurrent::ConcurrentObservation, AdapterError> {
        concurrent::serial(self.name(), r, &atomcts_reference::exec::execute)
    }

    fn runs_cas_loops(&self) -> bool {
        true
    }
}
