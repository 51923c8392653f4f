//! Planted bugs (issue 31 point 3): the adversary answers honestly (the reference's one
//! serialization, at semantic level) except where one chosen bug of a real implementation
//! touches the answer. `atomcts-adversary --planted <bug>` serves it; `runner/tests/fuzz_finds.rs`
//! measures how many cases and seconds `atomcts fuzz` needs to find each (BENCHMARKS.md,
//! "Fuzzing finds planted bugs").

use atomcts_reference::ir::AtomicOp;
use atomcts_reference::types::DataType;

/// One planted bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// Two instructions' updates to one word, one of them lost: in a concurrent request, the
    /// first read-modify-write that would change a word another instruction has already
    /// written (in the same round of iterations) returns its value but never writes it.
    LostUpdate,
    /// A stale float min/max return under contention (as docs/findings.md numba-cuda-1): every
    /// lane of one float min or max instruction racing on one address gets back the value the
    /// address held before the instruction (the final value stays right).
    StaleMinMax,
    /// A wrong rounding in one op: a 32-bit float add (or subtract) whose result is inexact
    /// stores the result rounded toward zero instead of to nearest even (the returned value
    /// stays right).
    RoundTowardZero,
}

/// Every planted bug: its name (the binary's argument) and what it does.
pub const BUGS: &[(&str, Bug, &str)] = &[
    (
        "lost-update",
        Bug::LostUpdate,
        "a concurrent update to a word another instruction wrote is lost (its return kept)",
    ),
    (
        "stale-minmax",
        Bug::StaleMinMax,
        "lanes of a float min/max racing on one address all get the value before the instruction",
    ),
    (
        "round-toward-zero",
        Bug::RoundTowardZero,
        "an inexact f32 add/sub stores its result rounded toward zero, not to nearest even",
    ),
];

/// The bug named `name`.
pub fn find_bug(name: &str) -> Option<Bug> {
    BUGS.iter().find(|(n, ..)| *n == name).map(|(_, b, _)| *b)
}

/// The bug's name.
pub fn bug_name(bug: Bug) -> &'static str {
    BUGS.iter()
        .find(|(_, b, _)| *b == bug)
        .map_or("?", |(n, ..)| n)
}

pub(super) fn is_float(t: DataType) -> bool {
    matches!(
        t,
        DataType::F16 | DataType::BF16 | DataType::F32 | DataType::F64 | DataType::F16x2
    )
}

/// `new`, the reference's (nearest-even) result of `old op src` on f32 bits, rounded toward
/// zero instead when the exact result is not representable; `None` when nothing changes (an
/// exact result, a zero, subnormal, infinite or NaN operand or result).
pub(super) fn toward_zero(op: AtomicOp, ty: DataType, old: u64, src: u64, new: u64) -> Option<u64> {
    if ty != DataType::F32 || !matches!(op, AtomicOp::Add | AtomicOp::Sub) {
        return None;
    }
    let normal = |b: u64| {
        let e = (b >> 23) & 0xFF;
        e != 0 && e != 0xFF
    };
    if !normal(old) || !normal(src) || !normal(new) {
        return None;
    }
    let (a, b) = (
        f64::from(f32::from_bits(old as u32)),
        f64::from(f32::from_bits(src as u32)),
    );
    let exact = if op == AtomicOp::Add { a + b } else { a - b };
    let r = f64::from(f32::from_bits(new as u32));
    // Rounded away from zero: one step back toward it (the magnitude's bits less one).
    (r.abs() > exact.abs() && r.signum() == exact.signum()).then(|| new - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toward_zero_steps_back_only_results_rounded_away() {
        let f = |x: f32| u64::from(x.to_bits());
        // 1 + 2^-24 + 2^-25 rounds up to 1 + 2^-23 to nearest; toward zero it is 1.
        let (a, b) = (1.0f32, 3.0f32 * 2f32.powi(-25));
        let near = a + b;
        assert_eq!(near, 1.0 + 2f32.powi(-23));
        assert_eq!(
            toward_zero(AtomicOp::Add, DataType::F32, f(a), f(b), f(near)),
            Some(f(1.0))
        );
        // An exact sum and a sum rounded down are left alone.
        assert_eq!(
            toward_zero(AtomicOp::Add, DataType::F32, f(1.5), f(2.25), f(3.75)),
            None
        );
        let (c, d) = (1.0f32, 2f32.powi(-25));
        assert_eq!(
            toward_zero(AtomicOp::Add, DataType::F32, f(c), f(d), f(c + d)),
            None
        );
        // Negative: -1 - 3 * 2^-25 rounds to -(1 + 2^-23); toward zero, -1.
        assert_eq!(
            toward_zero(AtomicOp::Add, DataType::F32, f(-a), f(-b), f(-near)),
            Some(f(-1.0))
        );
        assert_eq!(find_bug("stale-minmax"), Some(Bug::StaleMinMax));
        assert_eq!(bug_name(Bug::LostUpdate), "lost-update");
    }
}
