//! # atomcts-reference
//!
//! The bit-precise, spec-literal reference model of the GPU atomic memory operations in the
//! vendor documents that atomcts tests against:
//!
//! | dialect | family | document |
//! | --- | --- | --- |
//! | [`visa`] | `DWORD_ATOMIC` | Intel vISA, `DWORD_ATOMIC.md` (IGC 1.0.12504 and 2020-2022 copies) |
//! | [`visa`] | `SVM_SCATTER4_SCALED` | Intel vISA, `SVM_SCATTER4_SCALED.md` (IGC 1.0.17791) |
//! | [`sass`] | `ATOM` | NVIDIA SASS, "ATOM: Atomic Operation on generic Memory" (SPA 5.0) |
//! | [`msl`] | `atomic_fetch_*_explicit`, SIMD-group functions | Apple Metal Shading Language Specification |
//!
//! Data flows one way: text form → dialect front end (parse, validate; [`sass`], [`visa`],
//! [`msl`]) → the dialect-neutral IR of lane-level memory operations ([`ir`]) → one semantics
//! ([`semantics`], executed by [`exec`]). Observed outcomes of other implementations are judged
//! by [`check`], which uses the race checker ([`race`]) wherever lanes may be serialized in an
//! order the documents do not fix.
//!
//! Principles:
//! - Values are bit patterns (`u64` holding the low `n` bits). Floats are never compared with
//!   `==`; [`float`] implements the arithmetic on bits.
//! - Every documented ambiguity (A1..A30 of the project's research notes, and the N-numbered ones
//!   this project found) is a named knob in [`knobs`]; named [`knobs::Profile`]s pick options.
//! - Three result channels: a completed [`outcome::Outcome`], a spec-defined
//!   [`outcome::Fault`] (or an illegal form, [`error::Rejection`]), and a model error
//!   ([`error::ModelError`]). No input makes the library panic.
//!
//! The model is written for clarity, not speed: the fast path lives in `atomcts-fast`.
#![deny(missing_docs)]

pub mod check;
pub mod concurrent;
pub mod error;
pub mod exec;
pub mod float;
pub mod ir;
pub mod knobs;
pub mod memory;
pub mod msl;
pub mod outcome;
pub mod program;
pub mod race;
pub mod sass;
pub mod semantics;
pub mod state;
pub mod types;
pub mod visa;

pub use error::{ModelError, Reason, Rejection};
pub use knobs::Profile;
pub use outcome::{Fault, FaultClass, Outcome};
pub use program::{Dialect, Program};
pub use state::State;
