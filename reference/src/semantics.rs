//! The one semantics of the IR: what one access does to one memory value. Pure: `old` and the
//! operands in, the allowed effects out (the first is the reference's pick; the others are
//! what the documents also allow, e.g. a spurious compare-exchange failure or SPIR-V's
//! "either zero").

use crate::error::ModelError;
use crate::float::{self, Format};
use crate::ir::{AtomicOp, Compare, Env, NanBits};
use crate::types::{DataType, mask, sext};
use smallvec::SmallVec;

/// One allowed effect of an operation on a memory value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Effect {
    /// The memory value after (equal to the old value when nothing changes).
    pub new: u64,
    /// The value returned to the lane.
    pub ret: u64,
    /// For compare-exchange: whether it succeeded; `true` otherwise.
    pub success: bool,
}

/// The effects an operation may have on one value; the first is the reference's pick.
pub type Effects = SmallVec<[Effect; 2]>;

/// What `op` on `old` with operands `src` may do. Values are masked to the type's width.
pub fn apply(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effects, ModelError> {
    let m = ty.mask();
    let old = old & m;
    let src = [src[0] & m, src[1] & m];
    if ty == DataType::F16x2 {
        return apply_f16x2(op, env, old, src);
    }
    match ty.float_format() {
        Some(f) => apply_float(op, f, env, old, src),
        None => apply_int(op, ty, env, old, src),
    }
}

fn one(new: u64, ret: u64) -> Effects {
    let mut e = Effects::new();
    e.push(Effect {
        new,
        ret,
        success: true,
    });
    e
}

/// Integer ops, modulo 2^w.
fn apply_int(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effects, ModelError> {
    let w = ty.bits();
    let m = mask(w);
    let [s0, s1] = src;
    let lt = |a: u64, b: u64| {
        if ty.is_signed() {
            sext(a, w) < sext(b, w)
        } else {
            a < b
        }
    };
    let new = match op {
        AtomicOp::Add => old.wrapping_add(s0) & m,
        AtomicOp::Sub => old.wrapping_sub(s0) & m,
        // vISA DWORD_ATOMIC INC/DEC: `new = old+1`, `new = old-1` (plain wrap, A10).
        AtomicOp::Inc => old.wrapping_add(1) & m,
        AtomicOp::Dec => old.wrapping_sub(1) & m,
        // SASS ATOM .INC: `M = (M >= Rb)? 0 : (M + 1)` (unsigned, A10).
        AtomicOp::IncBounded => {
            if old >= s0 {
                0
            } else {
                (old + 1) & m
            }
        }
        // SASS ATOM .DEC: `M = (M == 0 || M > Rb)? Rb : M - 1` (unsigned, A10).
        AtomicOp::DecBounded => {
            if old == 0 || old > s0 {
                s0
            } else {
                old - 1
            }
        }
        // vISA DWORD_ATOMIC PREDEC: `new = old - 1`, Return Value `New value` (A11).
        AtomicOp::PreDec => {
            let new = old.wrapping_sub(1) & m;
            return Ok(one(new, new));
        }
        AtomicOp::Min => {
            if lt(s0, old) {
                s0
            } else {
                old
            }
        }
        AtomicOp::Max => {
            if lt(old, s0) {
                s0
            } else {
                old
            }
        }
        AtomicOp::And => old & s0,
        AtomicOp::Or => old | s0,
        AtomicOp::Xor => old ^ s0,
        AtomicOp::Exch | AtomicOp::Store => s0,
        AtomicOp::Cas => {
            let equal = match env.compare {
                Compare::Bitwise => old == s0,
                Compare::Numeric { .. } => {
                    return Err(ModelError::NotImplemented(format!(
                        "numeric compare on integer type {ty}"
                    )));
                }
            };
            return Ok(cas_effects(old, equal, s1, env.weak));
        }
    };
    Ok(one(new, old))
}

/// `new = equal ? swap : old`, returning `old`; a weak compare-exchange may also fail
/// spuriously (MSL `atomic_compare_exchange_weak_explicit`, C++ [atomics.types.operations]).
fn cas_effects(old: u64, equal: bool, swap: u64, weak: bool) -> Effects {
    let mut e = Effects::new();
    if equal {
        e.push(Effect {
            new: swap,
            ret: old,
            success: true,
        });
        if weak {
            e.push(Effect {
                new: old,
                ret: old,
                success: false,
            });
        }
    } else {
        e.push(Effect {
            new: old,
            ret: old,
            success: false,
        });
    }
    e
}

/// The NaN encoding of a float result (A4).
fn nan_bits(f: Format, env: &Env, x: u64) -> u64 {
    if float::is_nan(f, x) && env.nan == NanBits::Canonical {
        f.canonical_nan()
    } else {
        x
    }
}

/// Float ops of one format.
fn apply_float(
    op: AtomicOp,
    f: Format,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effects, ModelError> {
    let [s0, s1] = src;
    // A3: the returned value is the raw old value unless the profile flushes it too.
    let ret = if env.ftz.inputs && env.ftz_return {
        float::flush(f, old)
    } else {
        old
    };
    match op {
        AtomicOp::Add => {
            let new = float::add_ftz(f, old, s0, env.round, env.ftz);
            Ok(one(nan_bits(f, env, new), ret))
        }
        AtomicOp::Sub => {
            let new = float::sub_ftz(f, old, s0, env.round, env.ftz);
            Ok(one(nan_bits(f, env, new), ret))
        }
        AtomicOp::Min | AtomicOp::Max => {
            let choices = if op == AtomicOp::Min {
                float::min(f, old, s0, env.minmax)
            } else {
                float::max(f, old, s0, env.minmax)
            };
            let mut e = Effects::new();
            for c in choices {
                let new = nan_bits(f, env, c);
                if !e.iter().any(|x: &Effect| x.new == new) {
                    e.push(Effect {
                        new,
                        ret: old,
                        success: true,
                    });
                }
            }
            Ok(e)
        }
        AtomicOp::Exch | AtomicOp::Store => Ok(one(s0, old)),
        AtomicOp::Cas => {
            let equal = match env.compare {
                Compare::Bitwise => old == s0,
                // vISA FCMPWR `(src0 == old)` as IEEE equality (A9), after DAZ if asked (A7).
                Compare::Numeric { daz } => {
                    let (a, b) = if daz {
                        (float::flush(f, old), float::flush(f, s0))
                    } else {
                        (old, s0)
                    };
                    float::eq(f, a, b)
                }
            };
            Ok(cas_effects(old, equal, s1, env.weak))
        }
        AtomicOp::Inc
        | AtomicOp::Dec
        | AtomicOp::IncBounded
        | AtomicOp::DecBounded
        | AtomicOp::PreDec
        | AtomicOp::And
        | AtomicOp::Or
        | AtomicOp::Xor => Err(ModelError::NotImplemented(format!(
            "{} on float type {}",
            op.name(),
            f.name()
        ))),
    }
}

/// F16x2: the op on each half independently (PTX: "atomicity is guaranteed separately for each
/// of the individual scalar elements"); every combination of the halves' choices is allowed.
fn apply_f16x2(op: AtomicOp, env: &Env, old: u64, src: [u64; 2]) -> Result<Effects, ModelError> {
    let half = |x: u64, i: u32| (x >> (16 * i)) & 0xffff;
    let lo = apply(
        op,
        DataType::F16,
        env,
        half(old, 0),
        [half(src[0], 0), half(src[1], 0)],
    )?;
    let hi = apply(
        op,
        DataType::F16,
        env,
        half(old, 1),
        [half(src[0], 1), half(src[1], 1)],
    )?;
    let mut e = Effects::new();
    for h in &hi {
        for l in &lo {
            e.push(Effect {
                new: l.new | (h.new << 16),
                ret: l.ret | (h.ret << 16),
                success: l.success && h.success,
            });
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(op: AtomicOp, ty: DataType, old: u64, s0: u64) -> (u64, u64) {
        let e = apply(op, ty, &Env::default(), old, [s0, 0]).unwrap();
        assert_eq!(e.len(), 1);
        (e[0].new, e[0].ret)
    }

    // research/semantics.md §4, bounded inc/dec table (CUDA/PTX/SASS), returned value = old.
    #[test]
    fn bounded_inc_dec_table() {
        use AtomicOp::{DecBounded as D, IncBounded as I};
        let u = DataType::U32;
        for (op, old, b, new) in [
            (I, 5, 5, 0),
            (I, 7, 5, 0),
            (D, 0, 5, 5),
            (D, 7, 5, 5),
            (I, 3, 0, 0),
            (D, 3, 0, 0),
            (I, 0xFFFF_FFFF, 0xFFFF_FFFF, 0),
            (D, 0, 0xFFFF_FFFF, 0xFFFF_FFFF),
            (I, 4, 5, 5),
            (D, 5, 5, 4),
        ] {
            assert_eq!(int(op, u, old, b), (new, old), "{op:?} old={old} b={b}");
        }
    }

    // vISA DWORD_ATOMIC INC/DEC/PREDEC: plain wrap; PREDEC returns the new value.
    #[test]
    fn plain_inc_dec_predec_wrap() {
        assert_eq!(
            int(AtomicOp::Inc, DataType::U32, 0xFFFF_FFFF, 0),
            (0, 0xFFFF_FFFF)
        );
        assert_eq!(int(AtomicOp::Dec, DataType::U32, 0, 0), (0xFFFF_FFFF, 0));
        assert_eq!(
            int(AtomicOp::PreDec, DataType::U32, 0, 0),
            (0xFFFF_FFFF, 0xFFFF_FFFF)
        );
        assert_eq!(int(AtomicOp::Inc, DataType::U16, 0xFFFF, 0), (0, 0xFFFF));
        assert_eq!(int(AtomicOp::PreDec, DataType::S16, 5, 0), (4, 4));
    }

    #[test]
    fn signedness_comes_from_the_type() {
        assert_eq!(int(AtomicOp::Min, DataType::U32, 1, 0xFFFF_FFFF).0, 1);
        assert_eq!(
            int(AtomicOp::Min, DataType::S32, 1, 0xFFFF_FFFF).0,
            0xFFFF_FFFF
        );
        assert_eq!(int(AtomicOp::Max, DataType::S16, 0x7FFF, 0x8000).0, 0x7FFF);
        assert_eq!(int(AtomicOp::Max, DataType::U16, 0x7FFF, 0x8000).0, 0x8000);
        assert_eq!(int(AtomicOp::Min, DataType::S64, 0, u64::MAX).0, u64::MAX);
    }

    #[test]
    fn wraparound_and_bitwise() {
        assert_eq!(
            int(AtomicOp::Add, DataType::U32, 0xFFFF_FFFF, 2),
            (1, 0xFFFF_FFFF)
        );
        assert_eq!(
            int(AtomicOp::Sub, DataType::S32, 0x8000_0000, 1).0,
            0x7FFF_FFFF
        );
        assert_eq!(int(AtomicOp::And, DataType::U32, 0b1100, 0b1010).0, 0b1000);
        assert_eq!(int(AtomicOp::Or, DataType::U32, 0b1100, 0b1010).0, 0b1110);
        assert_eq!(int(AtomicOp::Xor, DataType::U32, 0b1100, 0b1010).0, 0b0110);
        assert_eq!(
            int(AtomicOp::Exch, DataType::U64, 1, u64::MAX),
            (u64::MAX, 1)
        );
        // Operands are masked to the width.
        assert_eq!(int(AtomicOp::Add, DataType::U16, 0xFFFF, 0x1_0001).0, 0);
    }

    #[test]
    fn cas_swaps_only_on_equal_and_weak_may_fail() {
        let env = Env::default();
        let e = apply(AtomicOp::Cas, DataType::U32, &env, 7, [7, 9]).unwrap();
        assert_eq!((e.len(), e[0].new, e[0].ret, e[0].success), (1, 9, 7, true));
        let e = apply(AtomicOp::Cas, DataType::U32, &env, 7, [8, 9]).unwrap();
        assert_eq!(
            (e.len(), e[0].new, e[0].ret, e[0].success),
            (1, 7, 7, false)
        );
        let weak = Env { weak: true, ..env };
        let e = apply(AtomicOp::Cas, DataType::U32, &weak, 7, [7, 9]).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[1].new, e[1].success), (7, false));
    }

    #[test]
    fn float_cas_compare_modes() {
        let bit = Env::default();
        let num = Env {
            compare: Compare::Numeric { daz: false },
            ..bit
        };
        let f32 = DataType::F32;
        // -0 versus +0: numeric equal, bitwise not.
        assert!(apply(AtomicOp::Cas, f32, &num, 0x8000_0000, [0, 5]).unwrap()[0].success);
        assert!(!apply(AtomicOp::Cas, f32, &bit, 0x8000_0000, [0, 5]).unwrap()[0].success);
        // The same NaN bits: bitwise equal, numeric never.
        let nan = 0x7fc0_0001;
        assert!(!apply(AtomicOp::Cas, f32, &num, nan, [nan, 5]).unwrap()[0].success);
        assert!(apply(AtomicOp::Cas, f32, &bit, nan, [nan, 5]).unwrap()[0].success);
    }

    #[test]
    fn float_only_ops_reject_integer_misuse_as_model_errors() {
        assert!(apply(AtomicOp::Inc, DataType::F32, &Env::default(), 0, [0, 0]).is_err());
    }
}
