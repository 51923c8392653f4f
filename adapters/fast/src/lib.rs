//! # atomcts-fast
//!
//! The fast path: the atomcts IR (`atomcts_reference::ir`) executed for speed, bit-identical
//! to the reference model under every profile. Written for simulator authors who want the
//! documents' semantics of GPU atomics inside an inner loop.
//!
//! - [`apply`]: one lane's atomic read-modify-write on one memory value; exactly the first
//!   (canonical) effect of `atomcts_reference::semantics::apply`.
//! - [`apply_batch`]: the same over a batch of lanes that each own one memory value, without
//!   allocation and with the dispatch on op and type hoisted out of the loop.
//! - [`execute`]: a lowered instruction on a state; equal to `atomcts_reference::exec::execute`
//!   on every input (outcome, open fields and errors).
//!
//! ```
//! use atomcts_fast::apply;
//! use atomcts_reference::ir::{AtomicOp, Env};
//! use atomcts_reference::float::Round;
//! use atomcts_reference::types::DataType;
//!
//! // f32: 1.0 + 2^-24 is a tie between 1.0 and its successor.
//! let env = Env::default();
//! let e = apply(AtomicOp::Add, DataType::F32, &env, 0x3f80_0000, [0x3380_0000, 0]).unwrap();
//! assert_eq!((e.new, e.ret), (0x3f80_0000, 0x3f80_0000));
//! // 1.0 + 0.75 ulp: nearest rounds up, toward zero does not.
//! let up = apply(AtomicOp::Add, DataType::F32, &env, 0x3f80_0000, [0x33c0_0000, 0]).unwrap();
//! assert_eq!(up.new, 0x3f80_0001);
//! let rz = Env { round: Round::TowardZero, ..env };
//! let down = apply(AtomicOp::Add, DataType::F32, &rz, 0x3f80_0000, [0x33c0_0000, 0]).unwrap();
//! assert_eq!(down.new, 0x3f80_0000);
//! // Unsigned bounded increment (SASS ATOM.INC): wraps to 0 at the bound.
//! let e = apply(AtomicOp::IncBounded, DataType::U32, &env, 5, [5, 0]).unwrap();
//! assert_eq!((e.new, e.ret), (0, 5));
//!
//! // A batch of 4 lanes, each with its own memory word.
//! let mut mem = [1u64, 2, 3, u32::MAX as u64];
//! let srcs = [[10, 0]; 4];
//! let mut rets = [0u64; 4];
//! atomcts_fast::apply_batch(AtomicOp::Add, DataType::U32, &env, &mut mem, &srcs, &mut rets)
//!     .unwrap();
//! assert_eq!(mem, [11, 12, 13, 9]);
//! assert_eq!(rets, [1, 2, 3, u32::MAX as u64]);
//! ```
//!
//! Techniques (details in the module sources): no allocation per operation; integer ops are
//! straight-line code monomorphised per width and signedness; binary32/binary64 add and
//! subtract use the host's IEEE roundTiesToEven addition, with roundTowardZero derived exactly
//! from it (Fast2Sum error term); binary16/bfloat16 add through binary64 and a bit-level
//! rounding; NaNs, infinities and the FTZ layer are handled on bits in software. Only float
//! min/max with a NaN operand or two zeros calls into the reference's min/max rules.
//!
//! Nothing falls back to the reference's soft-float: add and subtract are exact in both
//! roundings for every format. The reference is called only for float min/max with a NaN
//! operand or two zero operands (its NaN and signed-zero rules, A5/A6), and by [`execute`] to
//! produce the exact `ModelError` of an invalid input (error paths only).
//!
//! Errors: [`apply`] and [`apply_batch`] return the reference's own `ModelError`s for the op
//! and type pairs the reference does not define (integer-only ops on floats, a numeric
//! compare-and-swap on integers), with the same messages.
#![deny(missing_docs)]

mod exec;
mod float;
mod int;

pub use exec::execute;
#[doc(hidden)]
pub use exec::execute_own;

use atomcts_reference::error::ModelError;
use atomcts_reference::float::Format;
use atomcts_reference::ir::{AtomicOp, Compare, Env, NanBits};
use atomcts_reference::semantics::Effect;
use atomcts_reference::types::DataType;
use float::{BF16, F16, F32, F64, Fmt};

/// Calls `$each!(Op)` for the ops every type has.
macro_rules! dispatch_float {
    ($op:expr, $each:ident) => {
        match $op {
            AtomicOp::Add => $each!(Add),
            AtomicOp::Sub => $each!(Sub),
            AtomicOp::Min => $each!(Min),
            AtomicOp::Max => $each!(Max),
            AtomicOp::Exch => $each!(Exch),
            AtomicOp::Store => $each!(Store),
            AtomicOp::Cas => $each!(Cas),
            // Rejected before the loop for float types.
            AtomicOp::Inc
            | AtomicOp::Dec
            | AtomicOp::IncBounded
            | AtomicOp::DecBounded
            | AtomicOp::PreDec
            | AtomicOp::And
            | AtomicOp::Or
            | AtomicOp::Xor => {}
        }
    };
}

/// An op and type pair the reference does not define (value-independent).
#[derive(Clone, Copy, Debug)]
enum Unsupported {
    /// An integer-only op on a float type.
    FloatOp(AtomicOp, Format),
    /// A numeric compare-and-swap on an integer type.
    NumericCompare(DataType),
}

impl Unsupported {
    /// The reference's error, word for word.
    #[cold]
    fn into_error(self) -> ModelError {
        match self {
            Unsupported::FloatOp(op, f) => {
                ModelError::NotImplemented(format!("{} on float type {}", op.name(), f.name()))
            }
            Unsupported::NumericCompare(ty) => {
                ModelError::NotImplemented(format!("numeric compare on integer type {ty}"))
            }
        }
    }
}

/// What `op` does to memory value `old` with operands `src` (canonical order, as in
/// `atomcts_reference::ir::AtomicOp`), under `env`: the new memory value, the value returned
/// to the lane, and the success flag of a compare-and-swap. Values are masked to the type's
/// width.
///
/// This is the first effect of `atomcts_reference::semantics::apply`, the reference's pick:
/// a weak compare-exchange that compares equal succeeds; float min/max take the first allowed
/// answer of the profile's rules. Errors are the reference's `ModelError`s for op and type
/// pairs it does not define.
#[inline]
pub fn apply(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effect, ModelError> {
    apply_raw(op, ty, env, old, src).map_err(Unsupported::into_error)
}

/// [`apply`] over a batch of lanes, each with its own memory value: for every `i`,
/// `olds[i]` becomes the new value and `rets[i]` the returned value of the op on `olds[i]`
/// with operands `srcs[i]`. No allocation; the dispatch on `op` and `ty` happens once.
/// Success flags of compare-and-swap are not reported (use [`apply`] where they matter).
///
/// Errors: the [`apply`] errors (checked once, before any lane is touched), and a
/// `ModelError::BadState` when the three slices differ in length (nothing is touched then).
pub fn apply_batch(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    olds: &mut [u64],
    srcs: &[[u64; 2]],
    rets: &mut [u64],
) -> Result<(), ModelError> {
    if olds.len() != srcs.len() || olds.len() != rets.len() {
        return Err(ModelError::BadState(format!(
            "apply_batch: {} memory values, {} operand pairs, {} returns",
            olds.len(),
            srcs.len(),
            rets.len()
        )));
    }
    // The errors depend on op, type and compare mode only.
    apply_raw(op, ty, env, 0, [0, 0]).map_err(Unsupported::into_error)?;
    match ty {
        DataType::U16 => int_batch::<16, false>(op, olds, srcs, rets),
        DataType::S16 => int_batch::<16, true>(op, olds, srcs, rets),
        DataType::U32 => int_batch::<32, false>(op, olds, srcs, rets),
        DataType::S32 => int_batch::<32, true>(op, olds, srcs, rets),
        DataType::U64 => int_batch::<64, false>(op, olds, srcs, rets),
        DataType::S64 => int_batch::<64, true>(op, olds, srcs, rets),
        DataType::F16 => float_batch::<F16>(op, env, olds, srcs, rets),
        DataType::BF16 => float_batch::<BF16>(op, env, olds, srcs, rets),
        DataType::F32 => float_batch::<F32>(op, env, olds, srcs, rets),
        DataType::F64 => float_batch::<F64>(op, env, olds, srcs, rets),
        DataType::F16x2 => {
            macro_rules! each {
                ($op:ident) => {
                    lanes(olds, srcs, rets, |o, a, b| {
                        f16x2(AtomicOp::$op, env, o, a, b).unwrap_or(NO_EFFECT)
                    })
                };
            }
            dispatch_float!(op, each)
        }
    }
    Ok(())
}

/// A stand-in for lanes of a batch whose op was rejected beforehand; never produced.
const NO_EFFECT: Effect = Effect {
    new: 0,
    ret: 0,
    success: false,
};

/// The batch loop around one monomorphised lane function.
#[inline(always)]
fn lanes<G: Fn(u64, u64, u64) -> Effect>(
    olds: &mut [u64],
    srcs: &[[u64; 2]],
    rets: &mut [u64],
    g: G,
) {
    for ((o, s), r) in olds.iter_mut().zip(srcs).zip(rets.iter_mut()) {
        let e = g(*o, s[0], s[1]);
        *r = e.ret;
        *o = e.new;
    }
}

fn int_batch<const W: u32, const SIGNED: bool>(
    op: AtomicOp,
    olds: &mut [u64],
    srcs: &[[u64; 2]],
    rets: &mut [u64],
) {
    let m = int::mask::<W>();
    macro_rules! each {
        ($op:ident) => {
            lanes(olds, srcs, rets, |o, a, b| {
                int::apply::<W, SIGNED>(AtomicOp::$op, false, o & m, a & m, b & m)
                    .unwrap_or(NO_EFFECT)
            })
        };
    }
    match op {
        AtomicOp::Add => each!(Add),
        AtomicOp::Sub => each!(Sub),
        AtomicOp::Inc => each!(Inc),
        AtomicOp::Dec => each!(Dec),
        AtomicOp::IncBounded => each!(IncBounded),
        AtomicOp::DecBounded => each!(DecBounded),
        AtomicOp::PreDec => each!(PreDec),
        AtomicOp::Min => each!(Min),
        AtomicOp::Max => each!(Max),
        AtomicOp::And => each!(And),
        AtomicOp::Or => each!(Or),
        AtomicOp::Xor => each!(Xor),
        AtomicOp::Exch => each!(Exch),
        AtomicOp::Store => each!(Store),
        AtomicOp::Cas => each!(Cas),
    }
}

fn float_batch<F: Fmt>(
    op: AtomicOp,
    env: &Env,
    olds: &mut [u64],
    srcs: &[[u64; 2]],
    rets: &mut [u64],
) {
    let env = *env;
    macro_rules! each {
        ($op:ident) => {
            lanes(olds, srcs, rets, |o, a, b| {
                float_apply::<F>(AtomicOp::$op, &env, o & F::MASK, a & F::MASK, b & F::MASK)
                    .unwrap_or(NO_EFFECT)
            })
        };
    }
    dispatch_float!(op, each)
}

/// The dispatch on type: masks the operands and calls the width's code.
#[inline(always)]
fn apply_raw(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effect, Unsupported> {
    let numeric = matches!(env.compare, Compare::Numeric { .. });
    macro_rules! int {
        ($w:literal, $s:literal) => {{
            let m = int::mask::<$w>();
            int::apply::<$w, $s>(op, numeric, old & m, src[0] & m, src[1] & m)
                .ok_or(Unsupported::NumericCompare(ty))
        }};
    }
    macro_rules! flt {
        ($f:ty) => {
            float_apply::<$f>(
                op,
                env,
                old & <$f>::MASK,
                src[0] & <$f>::MASK,
                src[1] & <$f>::MASK,
            )
        };
    }
    match ty {
        DataType::U16 => int!(16, false),
        DataType::S16 => int!(16, true),
        DataType::U32 => int!(32, false),
        DataType::S32 => int!(32, true),
        DataType::U64 => int!(64, false),
        DataType::S64 => int!(64, true),
        DataType::F16 => flt!(F16),
        DataType::BF16 => flt!(BF16),
        DataType::F32 => flt!(F32),
        DataType::F64 => flt!(F64),
        DataType::F16x2 => f16x2(op, env, old, src[0], src[1]),
    }
}

/// F16x2: each binary16 half on its own (PTX: atomicity per scalar element); the first effect
/// is the combination of the halves' first effects.
#[inline(always)]
fn f16x2(op: AtomicOp, env: &Env, old: u64, s0: u64, s1: u64) -> Result<Effect, Unsupported> {
    let h = |x: u64, i: u32| (x >> (16 * i)) & 0xffff;
    let lo = float_apply::<F16>(op, env, h(old, 0), h(s0, 0), h(s1, 0))?;
    let hi = float_apply::<F16>(op, env, h(old, 1), h(s0, 1), h(s1, 1))?;
    Ok(Effect {
        new: lo.new | (hi.new << 16),
        ret: lo.ret | (hi.ret << 16),
        success: lo.success && hi.success,
    })
}

/// Float ops of one format on masked values.
#[inline(always)]
fn float_apply<F: Fmt>(
    op: AtomicOp,
    env: &Env,
    old: u64,
    s0: u64,
    s1: u64,
) -> Result<Effect, Unsupported> {
    let canonical = env.nan == NanBits::Canonical;
    let new = match op {
        AtomicOp::Add | AtomicOp::Sub => {
            let new = float::add_sub::<F>(
                old,
                s0,
                op == AtomicOp::Sub,
                env.round,
                env.ftz.inputs,
                env.ftz.outputs,
            );
            // A3: the returned old value is flushed only if the profile says so.
            let ret = if env.ftz.inputs && env.ftz_return {
                float::flush::<F>(old)
            } else {
                old
            };
            return Ok(Effect {
                new: float::nan_bits::<F>(new, canonical),
                ret,
                success: true,
            });
        }
        AtomicOp::Min => {
            float::nan_bits::<F>(float::min_max::<F>(old, s0, env.minmax, false), canonical)
        }
        AtomicOp::Max => {
            float::nan_bits::<F>(float::min_max::<F>(old, s0, env.minmax, true), canonical)
        }
        AtomicOp::Exch | AtomicOp::Store => s0,
        AtomicOp::Cas => {
            let equal = match env.compare {
                Compare::Bitwise => old == s0,
                // vISA FCMPWR as IEEE equality (A9), after DAZ if asked (A7).
                Compare::Numeric { daz } => float::numeric_eq::<F>(old, s0, daz),
            };
            return Ok(int::cas(old, equal, s1));
        }
        AtomicOp::Inc
        | AtomicOp::Dec
        | AtomicOp::IncBounded
        | AtomicOp::DecBounded
        | AtomicOp::PreDec
        | AtomicOp::And
        | AtomicOp::Or
        | AtomicOp::Xor => return Err(Unsupported::FloatOp(op, F::FORMAT)),
    };
    Ok(Effect {
        new,
        ret: old,
        success: true,
    })
}
