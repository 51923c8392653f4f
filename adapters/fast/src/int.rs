//! Integer ops modulo 2^W as straight-line code on masked `u64`, monomorphised per width and
//! signedness. The rules are those of `atomcts_reference::semantics` (research/semantics.md §4;
//! A10 for the two increment and decrement families, A11 for PREDEC).

use atomcts_reference::ir::AtomicOp;
use atomcts_reference::semantics::Effect;

/// All-ones mask of `W` bits.
#[inline(always)]
pub(crate) const fn mask<const W: u32>() -> u64 {
    if W >= 64 { u64::MAX } else { (1u64 << W) - 1 }
}

/// `a < b` on `W`-bit values, signed or unsigned.
#[inline(always)]
fn lt<const W: u32, const SIGNED: bool>(a: u64, b: u64) -> bool {
    if SIGNED {
        let s = 64 - W;
        (((a << s) as i64) >> s) < (((b << s) as i64) >> s)
    } else {
        a < b
    }
}

/// The first effect of `op` on masked `old` and masked operands; `None` only for a numeric
/// compare-and-swap, which the reference does not define on integers.
#[inline(always)]
pub(crate) fn apply<const W: u32, const SIGNED: bool>(
    op: AtomicOp,
    numeric_cas: bool,
    old: u64,
    s0: u64,
    s1: u64,
) -> Option<Effect> {
    let m = mask::<W>();
    let new = match op {
        AtomicOp::Add => old.wrapping_add(s0) & m,
        AtomicOp::Sub => old.wrapping_sub(s0) & m,
        // vISA DWORD_ATOMIC INC/DEC: plain wrap (A10).
        AtomicOp::Inc => old.wrapping_add(1) & m,
        AtomicOp::Dec => old.wrapping_sub(1) & m,
        // SASS ATOM .INC: `(M >= Rb) ? 0 : M + 1`, unsigned (A10).
        AtomicOp::IncBounded => {
            if old >= s0 {
                0
            } else {
                old + 1
            }
        }
        // SASS ATOM .DEC: `(M == 0 || M > Rb) ? Rb : M - 1`, unsigned (A10).
        AtomicOp::DecBounded => {
            if (old == 0) | (old > s0) {
                s0
            } else {
                old - 1
            }
        }
        // vISA PREDEC: `new = old - 1`, returns the new value (A11).
        AtomicOp::PreDec => {
            let new = old.wrapping_sub(1) & m;
            return Some(Effect {
                new,
                ret: new,
                success: true,
            });
        }
        AtomicOp::Min => {
            if lt::<W, SIGNED>(s0, old) {
                s0
            } else {
                old
            }
        }
        AtomicOp::Max => {
            if lt::<W, SIGNED>(old, s0) {
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
            if numeric_cas {
                return None;
            }
            return Some(cas(old, old == s0, s1));
        }
    };
    Some(Effect {
        new,
        ret: old,
        success: true,
    })
}

/// Compare-and-swap's first effect: swap on equality (a weak compare-exchange's spurious
/// failure is the reference's second choice, never its pick).
#[inline(always)]
pub(crate) fn cas(old: u64, equal: bool, swap: u64) -> Effect {
    Effect {
        new: if equal { swap } else { old },
        ret: old,
        success: equal,
    }
}
