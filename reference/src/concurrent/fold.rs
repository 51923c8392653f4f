//! The commuting rules of the concurrent checker: histories whose operations provably commute
//! have one final value whatever the order, found in time linear in the operations.

use crate::ir::AtomicOp;
use crate::race::OpStep;
use crate::race::{Observed, Step};
use crate::types::{DataType, mask};
use std::collections::{BTreeMap, HashSet};

/// The final value every order of these operations produces, if they all commute and none has
/// an observed returned value; `None` when the operations do not qualify.
pub fn commutative_final(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    if threads
        .iter()
        .flatten()
        .any(|(_, o)| o.ret.is_some() || o.success.is_some())
    {
        return None;
    }
    fold_if_commuting(init, threads)
}

/// The final value every order of these operations produces, whatever they were observed to
/// return, when they provably commute on every value they can meet; else `None`. Three sound
/// rules, each linear in the number of operations:
/// - integer add, subtract and wrapping increment/decrement (addition modulo 2^w);
/// - bounded increment and decrement (SASS `.INC`/`.DEC`) that can never reach a bound: from
///   `init`, no order climbs to an increment's bound or down to zero or above a decrement's
///   bound, so each is plain +1 or -1;
/// - one of and, or, xor, min, max alone; or and, or, xor on pairwise disjoint bit fields
///   (each kind its own bits) together with adds that never carry into those bits.
///
/// Operations that change no value at all ([`is_identity`]) and compare-exchanges observed to
/// fail (reads: a loop's failed attempts) commute with everything.
pub fn fold_if_commuting(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    let ops = integer_changes(threads)?;
    let Some(first) = ops.first() else {
        return Some(init);
    };
    let ty = first.ty;
    let w = mask(ty.bits());
    let fold = |v0: u64| -> Option<u64> {
        let mut v = v0;
        for s in &ops {
            v = s.step(v).ok()?.first()?.new;
        }
        Some(v)
    };
    let kinds: HashSet<AtomicOp> = ops.iter().map(|s| s.op).collect();
    let additive = |op: &AtomicOp| {
        matches!(
            op,
            AtomicOp::Add | AtomicOp::Sub | AtomicOp::Inc | AtomicOp::Dec | AtomicOp::PreDec
        )
    };
    if kinds.iter().all(additive) {
        return fold(init);
    }
    if kinds.len() == 1
        && matches!(
            first.op,
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Min | AtomicOp::Max
        )
    {
        return fold(init);
    }
    let bounded = |op: &AtomicOp| matches!(op, AtomicOp::IncBounded | AtomicOp::DecBounded);
    if kinds.iter().all(bounded) {
        let ups = ops.iter().filter(|s| s.op == AtomicOp::IncBounded).count() as u64;
        let downs = ops.len() as u64 - ups;
        let v = init & w;
        let top = v.checked_add(ups)?;
        let inc_bound = ops
            .iter()
            .filter(|s| s.op == AtomicOp::IncBounded)
            .map(|s| s.src[0] & w)
            .min()
            .unwrap_or(u64::MAX);
        let dec_bound = ops
            .iter()
            .filter(|s| s.op == AtomicOp::DecBounded)
            .map(|s| s.src[0] & w)
            .min()
            .unwrap_or(u64::MAX);
        // Before any increment the value is below `top`; it must stay below its bound. Before
        // any decrement it is between `v - downs + 1` and `top`: not zero, not above its bound.
        let safe =
            (ups == 0 || top <= inc_bound) && (downs == 0 || (v >= downs && top <= dec_bound));
        return safe.then(|| (v + ups - downs) & w);
    }
    // Bit fields: each bitwise kind's bits, pairwise disjoint; adds (non-negative increments
    // only) confined below the lowest of them.
    let (lo, sum) = fields_and_low_sum(init, &ops, ty)?;
    if lo < 64 && sum > mask(lo) {
        return None;
    }
    fold(init)
}

/// The steps of a history that may change memory ([`changes_nothing`] aside), when they all
/// share one integer type and one environment; `None` otherwise. A float type (F16x2 included:
/// each half is binary16) neither folds nor has monotone bits: its adds round, and adds of
/// either sign can lower any bit.
fn integer_changes(threads: &[Vec<(OpStep, Observed)>]) -> Option<Vec<&OpStep>> {
    let ops: Vec<&OpStep> = threads
        .iter()
        .flatten()
        .filter(|(s, o)| !changes_nothing(s, o))
        .map(|(s, _)| s)
        .collect();
    let uniform = ops.first().is_none_or(|first| {
        first.ty.float_format().is_none()
            && ops.iter().all(|s| (s.ty, s.env) == (first.ty, first.env))
    });
    uniform.then_some(ops)
}

/// The low bits of the value that never decrease in any order of these operations, when
/// there are such bits: integer adds of non-negative increments (and increments) that cannot
/// carry out of those bits, beside and/or/xor on pairwise disjoint fields above them (failed
/// compare-exchanges and operations that change nothing aside). Then the low bits count the
/// increments applied so far, and a step observed to return a value whose low bits are below
/// the current ones can never run: [`check_threads`](super::check_threads) prunes such states at once.
pub fn monotone_field(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    let ops = integer_changes(threads)?;
    let ty = ops.first()?.ty;
    let (lo, sum) = fields_and_low_sum(init, &ops, ty)?;
    let low = mask(lo);
    (lo > 0 && sum <= low).then_some(low)
}

/// Integer adds of non-negative increments and increments beside and/or/xor on pairwise
/// disjoint bit fields (each bitwise kind's bits, an AND's being the bits it clears): the
/// position of the lowest field's lowest bit (the type's width without fields) and the sum of
/// `init`'s bits below it and every increment. `None` for any other operation, overlapping
/// fields, or a sum past 64 bits.
fn fields_and_low_sum(init: u64, ops: &[&OpStep], ty: DataType) -> Option<(u32, u64)> {
    let w = mask(ty.bits());
    let bitwise = |op: AtomicOp| matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor);
    if !ops
        .iter()
        .all(|s| bitwise(s.op) || matches!(s.op, AtomicOp::Add | AtomicOp::Inc))
    {
        return None;
    }
    let mut fields: BTreeMap<AtomicOp, u64> = BTreeMap::new();
    for s in ops.iter().filter(|s| bitwise(s.op)) {
        let region = match s.op {
            AtomicOp::And => !s.src[0] & w,
            _ => s.src[0] & w,
        };
        *fields.entry(s.op).or_insert(0) |= region;
    }
    let regions: Vec<u64> = fields.values().copied().collect();
    for (i, a) in regions.iter().enumerate() {
        if regions[i + 1..].iter().any(|b| a & b != 0) {
            return None;
        }
    }
    let all_bits = regions.iter().fold(0u64, |m, r| m | r);
    let lo = if all_bits == 0 {
        ty.bits()
    } else {
        all_bits.trailing_zeros()
    };
    let mut sum = init & mask(lo);
    for s in ops.iter().filter(|s| !bitwise(s.op)) {
        sum = sum.checked_add(if s.op == AtomicOp::Inc {
            1
        } else {
            s.src[0] & w
        })?;
    }
    Some((lo, sum))
}

/// Whether a step leaves memory as it is wherever it runs: [`is_identity`], or a
/// compare-exchange observed to fail (a read: a loop's failed attempt).
fn changes_nothing(s: &OpStep, o: &Observed) -> bool {
    is_identity(s) || (s.op == AtomicOp::Cas && o.success == Some(false))
}

/// Whether `op` leaves every memory value unchanged: a bitwise compare-exchange whose new
/// value is its comparand; an integer add, subtract, or, xor of zero; an integer and of all
/// ones; an integer max of the type's least value or min of its greatest (0 and all ones
/// unsigned, the sign bit alone and all ones but the sign bit signed), which no value passes.
pub fn is_identity(op: &OpStep) -> bool {
    // F16x2 has a float format too (its halves').
    let int = op.ty.float_format().is_none();
    let m = op.ty.mask();
    let sign = 1u64 << (op.ty.bits() - 1);
    let (least, greatest) = if op.ty.is_signed() {
        (sign, m & !sign)
    } else {
        (0, m)
    };
    let src = op.src[0] & m;
    match op.op {
        AtomicOp::Cas => {
            op.src[0] == op.src[1] && (int || matches!(op.env.compare, crate::ir::Compare::Bitwise))
        }
        AtomicOp::Add | AtomicOp::Sub | AtomicOp::Or | AtomicOp::Xor => int && op.src[0] == 0,
        AtomicOp::And => int && src == m,
        AtomicOp::Max => int && src == least,
        AtomicOp::Min => int && src == greatest,
        _ => false,
    }
}
