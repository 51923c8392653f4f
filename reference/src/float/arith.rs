//! Float add and subtract on bit patterns. (Placeholder until the soft-float kernel lands.)

use super::{Format, FtzMode, Round};

/// IEEE 754-2019 §5.4.1 addition of `a` and `b` in format `f` with rounding `r`. NaN operands
/// propagate (first NaN, quieted); an invalid operation gives [`Format::default_nan`]; the
/// exact zero sum is +0 except -0 + -0 (and -0 under roundTowardNegative, not modelled).
pub fn add(f: Format, a: u64, b: u64, r: Round) -> u64 {
    let _ = (f, a, b, r);
    0
}

/// `a - b`: addition of `a` and `b` with its sign flipped; a NaN `b` propagates unflipped.
pub fn sub(f: Format, a: u64, b: u64, r: Round) -> u64 {
    let _ = (f, a, b, r);
    0
}

/// [`add`] with flush-to-zero of inputs and/or result.
pub fn add_ftz(f: Format, a: u64, b: u64, r: Round, ftz: FtzMode) -> u64 {
    let _ = (f, a, b, r, ftz);
    0
}

/// [`sub`] with flush-to-zero of inputs and/or result.
pub fn sub_ftz(f: Format, a: u64, b: u64, r: Round, ftz: FtzMode) -> u64 {
    let _ = (f, a, b, r, ftz);
    0
}
