//! Semantic-level back ends: one folder per target, each the same two steps over the shared
//! [`crate::plan::Plan`] (and [`crate::shuffle::ShufflePlan`] for SIMD-group exchanges): *emit*
//! (plan -> kernel source or binary for the target) and *run* (buffers in, dispatch one
//! work-group, buffers out). Drivers are loaded at run time, so every back end builds and tests
//! on a machine without its driver. Each is behind a Cargo feature, on by default: `opencl`,
//! `vulkan` (with the WGSL route), `webgpu` (a browser's WebGPU) and `cuda` (the PTX back end).

#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "cuda")]
pub mod ptx;
pub mod regions;
#[cfg(feature = "vulkan")]
pub mod vulkan;
#[cfg(feature = "webgpu")]
pub mod webgpu;
#[cfg(feature = "vulkan")]
pub mod wgsl;

use crate::{AdapterErrorKind, Request};
use atomcts_reference::ir::{AtomicOp, Lowered, Lowering};
use atomcts_reference::program::Program;

/// The integer ops one kernel or module switches on (issue 31): an op's code is its position
/// here, which the OpenCL kernels read from an argument (`OP`, per work-group `OPV`, a concurrent
/// instruction's header in `P`) and the Vulkan modules from binding 3, so that one program or
/// pipeline serves every op of a type and space. Float atomics and stores keep their op in
/// the kernel's text.
pub const OPS: [AtomicOp; 12] = [
    AtomicOp::Add,
    AtomicOp::Sub,
    AtomicOp::Inc,
    AtomicOp::Dec,
    AtomicOp::PreDec,
    AtomicOp::Min,
    AtomicOp::Max,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Exch,
    AtomicOp::Cas,
];

/// `op`'s code in a switch ([`OPS`]), `None` for an op outside it.
pub fn op_code(op: AtomicOp) -> Option<u32> {
    OPS.iter().position(|o| *o == op).map(|i| i as u32)
}

/// Little-endian bytes of `values`, the low `bytes` (at most 8) of each: an input buffer of a
/// kernel or module.
pub fn le_bytes(bytes: u64, values: &[u64]) -> Vec<u8> {
    let n = bytes.min(8) as usize;
    let mut out = Vec::with_capacity(values.len() * n);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

/// The opening every back end shares: the request's instruction parsed and lowered under its
/// state and profile. What a semantic-level implementation does not run (an illegal form, an
/// outcome the documents leave unspecified) is [`AdapterErrorKind::NotApplicable`], with the
/// reason; a lowering failure is the model's ([`AdapterErrorKind::Model`]). Where the runner
/// sends the reference front end's lowering of the same text under the same state and profile
/// ([`Request::lowered`]: it exists only for an instruction that lowered to a run), that is
/// taken rather than lowered again (issue 31: the lowering was a seventh of a generated case's
/// host time on the thread that runs the adapter); `lower_text` is this step without it.
pub fn lower<'r>(r: &Request<'r>) -> Result<std::borrow::Cow<'r, Lowered>, AdapterErrorKind> {
    match r.lowered {
        Some(l) => Ok(std::borrow::Cow::Borrowed(l)),
        None => lower_text(r).map(std::borrow::Cow::Owned),
    }
}

/// [`lower`] from the request's text alone.
pub fn lower_text(r: &Request<'_>) -> Result<Lowered, AdapterErrorKind> {
    let illegal = |code: &str| {
        AdapterErrorKind::NotApplicable(format!(
            "an illegal form ({code}); a semantic-level implementation runs valid instructions only"
        ))
    };
    let program = Program::parse(r.dialect, r.asm).map_err(|rej| illegal(rej.reason.code()))?;
    match program
        .lower(r.state, r.profile)
        .map_err(|e| AdapterErrorKind::Model(e.to_string()))?
    {
        Lowering::Run(l) => Ok(l),
        Lowering::Invalid(rej) => Err(illegal(rej.reason.code())),
        Lowering::Unspecified(why) => Err(AdapterErrorKind::NotApplicable(format!(
            "the outcome is unspecified ({why})"
        ))),
    }
}

/// A semantic-level back end: the two steps after the shared opening ([`lower`]), each the
/// target's own. [`run`] is the whole of a back end's single-instruction case, written once.
pub trait Backend {
    /// What [`Backend::emit`] makes for [`Backend::run`]: the plan and the kernel (source or
    /// binary) for the target.
    type Emitted;
    /// Plans a lowered instruction and emits the target's program for it; what the target
    /// cannot express is [`AdapterErrorKind::NotApplicable`], with the reason.
    fn emit(
        &mut self,
        r: &Request<'_>,
        lowered: &Lowered,
    ) -> Result<Self::Emitted, AdapterErrorKind>;
    /// Runs what [`Backend::emit`] made (buffers in, one dispatch, buffers out) and gives the
    /// final state.
    fn run(
        &mut self,
        r: &Request<'_>,
        emitted: Self::Emitted,
    ) -> Result<atomcts_reference::State, AdapterErrorKind>;
}

/// [`crate::Adapter::screen`] for a back end: the reason a case is not applicable when
/// [`lower`] or [`Backend::emit`] gives one (what [`run`] would answer before dispatching);
/// `None` when both succeed or fail otherwise (the run then answers).
pub fn screen<B: Backend>(backend: &mut B, r: &Request<'_>) -> Option<String> {
    let emitted = lower(r).and_then(|lowered| backend.emit(r, &lowered).map(|_| ()));
    match emitted {
        Err(AdapterErrorKind::NotApplicable(why)) => Some(why),
        _ => None,
    }
}

/// One single-instruction case on a back end: parse and lower ([`lower`]), emit, run.
pub fn run<B: Backend>(
    backend: &mut B,
    r: &Request<'_>,
) -> Result<atomcts_reference::State, AdapterErrorKind> {
    let lowered = lower(r)?;
    let emitted = backend.emit(r, &lowered)?;
    backend.run(r, emitted)
}

/// The window of a batched back end that environment variable `var` asks for: `default` when
/// it is unset or empty, else a number from 1 (no batching: every case alone) to `max`; or why
/// its value is not one.
pub fn window_from_env(var: &str, default: usize, max: usize) -> Result<usize, String> {
    match std::env::var(var) {
        Err(_) => Ok(default),
        Ok(v) if v.trim().is_empty() => Ok(default),
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                format!("{var}=`{v}` (expected a window from 1, no batching, to {max})")
            }),
    }
}

/// A test's plan of a SASS instruction `asm` on two lanes: `R2` the addresses 0x1000 and
/// 0x1008 (16 bytes of global memory there, zeroed), `R4` 5 and 6, `R5` 7 and 8.
#[cfg(test)]
pub(crate) fn sass_plan(asm: &str) -> crate::plan::Plan {
    sass_plan_with(asm, [5, 6])
}

/// [`sass_plan`] with `R4` = `r4`.
#[cfg(test)]
pub(crate) fn sass_plan_with(asm: &str, r4: [u64; 2]) -> crate::plan::Plan {
    use atomcts_reference::ir::Lowering;
    use atomcts_reference::program::{Dialect, Program};
    use atomcts_reference::state::{Reg, State};
    use atomcts_reference::types::ElemType;
    let mut s = State::new(2);
    for (r, v) in [
        ("R2", [0x1000, 0x1008]),
        ("R3", [0, 0]),
        ("R4", r4),
        ("R5", [7, 8]),
    ] {
        s.regs.insert(
            r.into(),
            Reg {
                ty: ElemType::B32,
                elems: v.to_vec(),
            },
        );
    }
    s.global.alloc(0x1000, 16).unwrap();
    let p = Program::parse(Dialect::Sass, asm).unwrap();
    match p.lower(&s, &atomcts_reference::Profile::default()).unwrap() {
        Lowering::Run(l) => crate::plan::Plan::new(&l, &s).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn le_bytes_are_each_values_low_bytes_in_order() {
        let v = [0x1122_3344_5566_7788, 0x0102_0304_0506_0708];
        assert_eq!(super::le_bytes(2, &v), [0x88, 0x77, 0x08, 0x07]);
        assert_eq!(
            super::le_bytes(4, &v),
            [0x88, 0x77, 0x66, 0x55, 0x08, 0x07, 0x06, 0x05]
        );
        assert_eq!(
            super::le_bytes(8, &v[..1]),
            0x1122_3344_5566_7788u64.to_le_bytes()
        );
        assert!(super::le_bytes(4, &[]).is_empty());
    }
}
