//! Float min and max under the vendors' NaN, signed-zero and subnormal rules (A5-A7).
//!
//! The rules compose: the subnormal rule picks the operands (as given, flushed, or both
//! answers), then the NaN rule decides NaN operands and the zero rule decides -0 versus +0;
//! every allowed answer is collected once, the reference's pick first.

use super::{Choices, Format, flush, is_nan, is_negative, is_snan, is_zero, lt, quiet};

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
    /// Either of the two answers above, or (Metal) either operand when both are subnormal.
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
    min_max(f, a, b, rules, Pick::Min)
}

/// `max(a, b)` under `rules`; the first choice is the reference's pick.
pub fn max(f: Format, a: u64, b: u64, rules: MinMaxRules) -> Choices {
    min_max(f, a, b, rules, Pick::Max)
}

/// Which of the two the operation keeps.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pick {
    Min,
    Max,
}

/// A7 first: the operands as given, flushed, or both answers (as given first).
fn min_max(f: Format, a: u64, b: u64, rules: MinMaxRules, pick: Pick) -> Choices {
    let (a, b) = (a & f.mask(), b & f.mask());
    let raw = || decide(f, a, b, rules, pick);
    let flushed = || decide(f, flush(f, a), flush(f, b), rules, pick);
    match rules.denormals {
        DenormRule::CompareRaw => raw(),
        DenormRule::FlushBeforeCompare => flushed(),
        DenormRule::Either => {
            let mut out = raw();
            for x in flushed() {
                push_unique(&mut out, x);
            }
            // Metal fmin/fmax: "If x and y are denormals and the GPU doesn't support denormals,
            // either value may be returned" (research A7).
            if super::is_subnormal(f, a) && super::is_subnormal(f, b) {
                push_unique(&mut out, a);
                push_unique(&mut out, b);
            }
            out
        }
    }
}

/// A5 (NaN operands), then A6 (zeros of unlike sign), then the ordinary comparison.
fn decide(f: Format, a: u64, b: u64, rules: MinMaxRules, pick: Pick) -> Choices {
    let (na, nb) = (is_nan(f, a), is_nan(f, b));
    if na || nb {
        return nan_operands(f, a, b, rules.nan);
    }
    if is_zero(f, a) && is_zero(f, b) && is_negative(f, a) != is_negative(f, b) {
        let (neg_zero, pos_zero) = (f.sign_mask(), 0);
        let (ordered, other) = match pick {
            Pick::Min => (neg_zero, pos_zero),
            Pick::Max => (pos_zero, neg_zero),
        };
        return match rules.zero {
            ZeroRule::Ordered => one(ordered),
            ZeroRule::Either => Choices::from_slice(&[ordered, other]),
            ZeroRule::Skylake => one(other),
        };
    }
    // Equal values (including zeros of like sign): the first operand.
    let b_wins = match pick {
        Pick::Min => lt(f, b, a),
        Pick::Max => lt(f, a, b),
    };
    one(if b_wins { b } else { a })
}

/// A5: the result when at least one operand is a NaN.
fn nan_operands(f: Format, a: u64, b: u64, rule: NanRule) -> Choices {
    let (na, nb) = (is_nan(f, a), is_nan(f, b));
    let (sa, sb) = (is_snan(f, a), is_snan(f, b));
    match rule {
        // PTX min_num / SPIR-V with quiet NaNs: a NaN is missing data, signaling or not.
        NanRule::MinimumNumber => match (na, nb) {
            (true, true) => one(quiet(f, a)),
            (true, false) => one(b),
            _ => one(a),
        },
        // Mesa INTEL_shader_atomic_float_minmax: a signaling NaN is returned unchanged (the first
        // one if both are); a quiet NaN yields to the other operand; two quiet NaNs: either.
        NanRule::IntelSnanWins => {
            if sa {
                one(a)
            } else if sb {
                one(b)
            } else if na && nb {
                let mut out = one(a);
                push_unique(&mut out, b);
                out
            } else if na {
                one(b)
            } else {
                one(a)
            }
        }
        // SPIR-V: a quiet NaN yields to the number; a signaling NaN with a number may give the
        // number or a NaN; two NaNs give a NaN.
        NanRule::SpirvEither => match (na, nb) {
            (true, true) => one(quiet(f, a)),
            (true, false) if sa => Choices::from_slice(&[b, quiet(f, a)]),
            (true, false) => one(b),
            _ if sb => Choices::from_slice(&[a, quiet(f, b)]),
            _ => one(a),
        },
    }
}

/// A single answer.
fn one(x: u64) -> Choices {
    Choices::from_slice(&[x])
}

/// Appends `x` unless it is already a choice.
fn push_unique(out: &mut Choices, x: u64) {
    if !out.contains(&x) {
        out.push(x);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::*;

    const ONE: u64 = 0x3f80_0000;
    const TWO: u64 = 0x4000_0000;
    const NEG_ONE: u64 = 0xbf80_0000;
    const NEG_TWO: u64 = 0xc000_0000;
    const QNAN: u64 = 0x7fc0_0001;
    const QNAN2: u64 = 0x7fc0_0002;
    const SNAN: u64 = 0x7f80_0001; // quieted: 0x7fc00001
    const NEG_SNAN2: u64 = 0xff80_0002; // quieted: 0xffc00002
    const PZ: u64 = 0;
    const NZ: u64 = 0x8000_0000;
    const SUB: u64 = 0x0000_0001;
    const NEG_SUB: u64 = 0x8000_0001;

    fn rules(nan: NanRule, zero: ZeroRule, denormals: DenormRule) -> MinMaxRules {
        MinMaxRules {
            nan,
            zero,
            denormals,
        }
    }

    fn nan_rule(nan: NanRule) -> MinMaxRules {
        rules(nan, ZeroRule::Ordered, DenormRule::CompareRaw)
    }

    fn zero_rule(zero: ZeroRule) -> MinMaxRules {
        rules(NanRule::MinimumNumber, zero, DenormRule::CompareRaw)
    }

    fn denorm_rule(zero: ZeroRule, denormals: DenormRule) -> MinMaxRules {
        rules(NanRule::MinimumNumber, zero, denormals)
    }

    #[test]
    fn ordinary_values() {
        let r = MinMaxRules::default();
        assert_eq!(&min(F32, ONE, TWO, r)[..], &[ONE]);
        assert_eq!(&max(F32, ONE, TWO, r)[..], &[TWO]);
        assert_eq!(&min(F32, NEG_ONE, NEG_TWO, r)[..], &[NEG_TWO]);
        assert_eq!(&max(F32, NEG_ONE, NEG_TWO, r)[..], &[NEG_ONE]);
        assert_eq!(&min(F32, NEG_ONE, ONE, r)[..], &[NEG_ONE]);
        assert_eq!(&max(F32, 0xff80_0000, NEG_TWO, r)[..], &[NEG_TWO]);
        // f16 and f64, and bits above the format are ignored.
        assert_eq!(&min(F16, 0x3c00, 0xbc00, r)[..], &[0xbc00]);
        assert_eq!(&max(F16, 0x1_3c00, 0x4000, r)[..], &[0x4000]);
        assert_eq!(&min(F16, 0x1_3c00, 0x4000, r)[..], &[0x3c00]);
        assert_eq!(
            &max(F64, 0x3ff0_0000_0000_0000, 0x7ff0_0000_0000_0000, r)[..],
            &[0x7ff0_0000_0000_0000]
        );
    }

    #[test]
    fn minimum_number_nans() {
        let r = nan_rule(NanRule::MinimumNumber);
        assert_eq!(&min(F32, QNAN, ONE, r)[..], &[ONE]);
        assert_eq!(&max(F32, ONE, QNAN, r)[..], &[ONE]);
        // A signaling NaN is treated as missing data too.
        assert_eq!(&min(F32, ONE, SNAN, r)[..], &[ONE]);
        assert_eq!(&max(F32, SNAN, NZ, r)[..], &[NZ]);
        // Two NaNs: the first, quieted.
        assert_eq!(&min(F32, SNAN, QNAN2, r)[..], &[0x7fc0_0001]);
        assert_eq!(&max(F32, QNAN2, SNAN, r)[..], &[QNAN2]);
        assert_eq!(&max(F32, NEG_SNAN2, SNAN, r)[..], &[0xffc0_0002]);
    }

    #[test]
    fn intel_snan_wins() {
        let r = nan_rule(NanRule::IntelSnanWins);
        // The sNaN comes back unchanged, not quieted.
        assert_eq!(&min(F32, SNAN, ONE, r)[..], &[SNAN]);
        assert_eq!(&max(F32, ONE, SNAN, r)[..], &[SNAN]);
        assert_eq!(&min(F32, QNAN, SNAN, r)[..], &[SNAN]);
        assert_eq!(&max(F32, SNAN, QNAN, r)[..], &[SNAN]);
        // Two sNaNs: the first.
        assert_eq!(&min(F32, NEG_SNAN2, SNAN, r)[..], &[NEG_SNAN2]);
        // One qNaN: the number.
        assert_eq!(&min(F32, QNAN, ONE, r)[..], &[ONE]);
        assert_eq!(&max(F32, TWO, QNAN, r)[..], &[TWO]);
        // Two qNaNs: either, first listed first; identical ones once.
        assert_eq!(&min(F32, QNAN, QNAN2, r)[..], &[QNAN, QNAN2]);
        assert_eq!(&max(F32, QNAN2, QNAN, r)[..], &[QNAN2, QNAN]);
        assert_eq!(&max(F32, QNAN, QNAN, r)[..], &[QNAN]);
    }

    #[test]
    fn spirv_either() {
        let r = nan_rule(NanRule::SpirvEither);
        assert_eq!(&min(F32, QNAN, ONE, r)[..], &[ONE]);
        assert_eq!(&max(F32, ONE, QNAN, r)[..], &[ONE]);
        // sNaN with a number: the number, or the sNaN quieted.
        assert_eq!(&min(F32, SNAN, ONE, r)[..], &[ONE, 0x7fc0_0001]);
        assert_eq!(&max(F32, TWO, NEG_SNAN2, r)[..], &[TWO, 0xffc0_0002]);
        // A NaN with an sNaN: the first, quieted.
        assert_eq!(&min(F32, QNAN2, SNAN, r)[..], &[QNAN2]);
        assert_eq!(&min(F32, SNAN, QNAN2, r)[..], &[0x7fc0_0001]);
        // Two qNaNs: the first.
        assert_eq!(&max(F32, QNAN2, QNAN, r)[..], &[QNAN2]);
    }

    #[test]
    fn signed_zeros() {
        let r = zero_rule(ZeroRule::Ordered);
        assert_eq!(&min(F32, PZ, NZ, r)[..], &[NZ]);
        assert_eq!(&min(F32, NZ, PZ, r)[..], &[NZ]);
        assert_eq!(&max(F32, NZ, PZ, r)[..], &[PZ]);
        assert_eq!(&max(F32, PZ, NZ, r)[..], &[PZ]);
        assert_eq!(&min(F32, NZ, NZ, r)[..], &[NZ]);
        assert_eq!(&max(F32, PZ, PZ, r)[..], &[PZ]);
        let r = zero_rule(ZeroRule::Either);
        assert_eq!(&min(F32, PZ, NZ, r)[..], &[NZ, PZ]);
        assert_eq!(&max(F32, PZ, NZ, r)[..], &[PZ, NZ]);
        // Zeros of like sign are not affected.
        assert_eq!(&max(F32, NZ, NZ, r)[..], &[NZ]);
        let r = zero_rule(ZeroRule::Skylake);
        assert_eq!(&min(F32, PZ, NZ, r)[..], &[PZ]);
        assert_eq!(&min(F32, NZ, PZ, r)[..], &[PZ]);
        assert_eq!(&max(F32, NZ, PZ, r)[..], &[NZ]);
        assert_eq!(&max(F16, 0x8000, 0x0000, r)[..], &[0x8000]);
        assert_eq!(&max(F32, NZ, ONE, r)[..], &[ONE]);
    }

    #[test]
    fn subnormals() {
        let r = denorm_rule(ZeroRule::Ordered, DenormRule::CompareRaw);
        assert_eq!(&min(F32, SUB, PZ, r)[..], &[PZ]);
        assert_eq!(&max(F32, SUB, PZ, r)[..], &[SUB]);
        assert_eq!(&min(F32, NEG_SUB, PZ, r)[..], &[NEG_SUB]);
        // Flushed first: 0x1 vs +0 are equal zeros, the (flushed) first operand comes back.
        let r = denorm_rule(ZeroRule::Ordered, DenormRule::FlushBeforeCompare);
        assert_eq!(&max(F32, SUB, PZ, r)[..], &[PZ]);
        assert_eq!(&max(F32, SUB, ONE, r)[..], &[ONE]);
        assert_eq!(&min(F32, SUB, 0x0000_0002, r)[..], &[PZ]);
        // -subnormal vs +0 becomes -0 vs +0.
        assert_eq!(&min(F32, NEG_SUB, PZ, r)[..], &[NZ]);
        assert_eq!(&max(F32, NEG_SUB, PZ, r)[..], &[PZ]);
        let r = denorm_rule(ZeroRule::Skylake, DenormRule::FlushBeforeCompare);
        assert_eq!(&min(F32, NEG_SUB, PZ, r)[..], &[PZ]);
        // Either: the raw answer first, then the flushed one.
        let r = denorm_rule(ZeroRule::Ordered, DenormRule::Either);
        assert_eq!(&max(F32, SUB, PZ, r)[..], &[SUB, PZ]);
        assert_eq!(&min(F32, SUB, PZ, r)[..], &[PZ]);
        assert_eq!(&max(F32, SUB, ONE, r)[..], &[ONE]);
        // Both rules multiply out: raw -sub; flushed -0 or +0.
        let r = denorm_rule(ZeroRule::Either, DenormRule::Either);
        assert_eq!(&min(F32, NEG_SUB, PZ, r)[..], &[NEG_SUB, NZ, PZ]);
        // f16 subnormal 0x0001 vs 0x8001: raw max is 0x0001; flushed +0 vs -0 is +0 or -0;
        // both subnormal, so (Metal) either operand too.
        assert_eq!(
            &max(F16, 0x8001, 0x0001, r)[..],
            &[0x0001, 0x0000, 0x8000, 0x8001]
        );
    }

    #[test]
    fn rules_combine_with_nans() {
        // SPIR-V sNaN with a subnormal, flushed: the flushed number or the quiet NaN.
        let r = rules(
            NanRule::SpirvEither,
            ZeroRule::Ordered,
            DenormRule::FlushBeforeCompare,
        );
        assert_eq!(&min(F32, SNAN, SUB, r)[..], &[PZ, 0x7fc0_0001]);
        let r = rules(NanRule::SpirvEither, ZeroRule::Ordered, DenormRule::Either);
        assert_eq!(&min(F32, SNAN, SUB, r)[..], &[SUB, 0x7fc0_0001, PZ]);
        // Intel sNaN is unaffected by flushing.
        let r = rules(NanRule::IntelSnanWins, ZeroRule::Either, DenormRule::Either);
        assert_eq!(&max(F32, NEG_SUB, SNAN, r)[..], &[SNAN]);
        // MinimumNumber with a qNaN and a subnormal under Either: raw, then flushed.
        let r = rules(
            NanRule::MinimumNumber,
            ZeroRule::Ordered,
            DenormRule::Either,
        );
        assert_eq!(&max(F32, QNAN, NEG_SUB, r)[..], &[NEG_SUB, NZ]);
    }
}
