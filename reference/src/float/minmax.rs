//! Float min and max under the vendors' NaN, signed-zero and subnormal rules (A5-A7).
//! (Placeholder until the soft-float kernel lands.)

use super::{Choices, Format};

/// NaN operands of min/max (A5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum NanRule {
    /// One NaN operand: the other operand; two NaNs: the first, quieted. sNaN as qNaN (PTX min_num).
    #[default]
    MinimumNumber,
    /// One qNaN: the other operand; an sNaN operand is the result as is (first sNaN if both);
    /// two qNaNs: either (Intel).
    IntelSnanWins,
    /// One qNaN: the other operand; an sNaN with a number: the number or a NaN (SPIR-V).
    SpirvEither,
}

/// -0 versus +0 in min/max (A6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ZeroRule {
    /// -0 < +0.
    #[default]
    Ordered,
    /// Either zero.
    Either,
    /// The wrongly signed zero (Skylake).
    Skylake,
}

/// Subnormal operands of min/max (A7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DenormRule {
    /// Compare as given.
    #[default]
    CompareRaw,
    /// Flush both operands first; the result is the flushed value.
    FlushBeforeCompare,
    /// Either of the two answers above.
    Either,
}

/// The three rules together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MinMaxRules {
    /// NaN operands.
    pub nan: NanRule,
    /// Signed zeros.
    pub zero: ZeroRule,
    /// Subnormals.
    pub denormals: DenormRule,
}

/// `min(a, b)` under `rules`; the first choice is the reference's pick.
pub fn min(f: Format, a: u64, b: u64, rules: MinMaxRules) -> Choices {
    let _ = (f, b, rules);
    Choices::from_slice(&[a])
}

/// `max(a, b)` under `rules`; the first choice is the reference's pick.
pub fn max(f: Format, a: u64, b: u64, rules: MinMaxRules) -> Choices {
    let _ = (f, b, rules);
    Choices::from_slice(&[a])
}
