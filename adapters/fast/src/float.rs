//! Float ops on bit patterns, for speed. Every function here returns exactly what
//! `atomcts_reference::semantics::apply` picks first; the doc comment of each says how.
//!
//! Technique per operation:
//! - binary32 and binary64 add/sub, roundTiesToEven: the host's `+` (IEEE 754 binary addition
//!   with roundTiesToEven on every target Rust supports with hardware floats, x86-64 SSE2 and
//!   AArch64 included; Rust never changes the rounding mode). NaN operands and infinities are
//!   decided on bits before the hardware sees them, so the hardware's own NaN encoding never
//!   reaches a result.
//! - binary32 and binary64 add/sub, roundTowardZero: the roundTiesToEven sum `s` and its exact
//!   error `t = (a + b) - s` from Fast2Sum (Dekker 1971; exact for |x| >= |y| in radix 2 when
//!   `s` is finite, and free of intermediate overflow, Boldo, Graillat and Muller 2017). If `t`
//!   is nonzero and of the other sign than `s`, roundTiesToEven rounded away from zero and the
//!   result is `s` one unit in the last place toward zero; a sum that overflows to infinity
//!   under roundTiesToEven is the largest finite number under roundTowardZero.
//! - binary16 add/sub: both operands converted exactly to binary64, where the sum of two
//!   binary16 numbers is always exact (multiples of 2^-24 below 2^17: at most 41 significant
//!   bits), then rounded once to binary16 by [`narrow`], in either mode.
//! - bfloat16 add/sub: converted exactly to binary64 and added there. roundTiesToEven: the
//!   binary64 sum rounded to bfloat16 (double rounding is innocuous since 53 >= 2*8 + 2,
//!   Figueroa 1995; a sum in bfloat16's subnormal range is exact in binary64). roundTowardZero:
//!   the binary64 sum made roundTowardZero as for binary64 above, then truncated to bfloat16
//!   (truncations compose because every bfloat16 number is a binary64 number).
//! - FTZ: our own layer in software, as in the reference: subnormal operands flushed before,
//!   a subnormal result flushed after.
//! - min/max: a total-order key on bits for numbers; NaN operands, two zeros, and subnormals
//!   under the flush-before-compare rule go to `atomcts_reference::float::{min, max}` (first
//!   choice).
//! - compare-and-swap: bitwise, or IEEE equality on bits.

use atomcts_reference::float::{self as rf, DenormRule, Format, MinMaxRules, Round};

/// The constants of one float format; the methods are the format's hardware-assisted sum.
pub(crate) trait Fmt {
    /// The reference's format.
    const FORMAT: Format;
    /// Total bits.
    const BITS: u32;
    /// Fraction bits.
    const FRAC: u32;
    /// Exponent bias.
    const BIAS: i64;
    /// All bits of the format.
    const MASK: u64 = if Self::BITS == 64 {
        u64::MAX
    } else {
        (1u64 << Self::BITS) - 1
    };
    /// Sign bit.
    const SIGN: u64 = 1u64 << (Self::BITS - 1);
    /// Magnitude bits.
    const ABS: u64 = Self::MASK >> 1;
    /// Exponent field.
    const EXP_MASK: u64 = Self::ABS & !((1u64 << Self::FRAC) - 1);
    /// Quiet bit.
    const QUIET: u64 = 1u64 << (Self::FRAC - 1);
    /// Default NaN of an invalid operation.
    const DEFAULT_NAN: u64 = Self::EXP_MASK | Self::QUIET;
    /// NVIDIA's canonical NaN.
    const CANONICAL_NAN: u64 = Self::ABS;
    /// The largest finite magnitude.
    const MAX_FINITE: u64 = Self::EXP_MASK - 1;

    /// `a + b` for finite operands (bits of the format, masked), rounded by `r`.
    fn add_finite(a: u64, b: u64, r: Round) -> u64;
}

/// IEEE 754 binary16.
pub(crate) struct F16;
/// bfloat16.
pub(crate) struct BF16;
/// IEEE 754 binary32.
pub(crate) struct F32;
/// IEEE 754 binary64.
pub(crate) struct F64;

impl Fmt for F32 {
    const FORMAT: Format = Format::F32;
    const BITS: u32 = 32;
    const FRAC: u32 = 23;
    const BIAS: i64 = 127;

    #[inline(always)]
    fn add_finite(a: u64, b: u64, r: Round) -> u64 {
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        let s = x + y;
        let sb = u64::from(s.to_bits());
        match r {
            Round::NearestEven => sb,
            Round::TowardZero => {
                if sb & Self::ABS == Self::EXP_MASK {
                    // roundTiesToEven overflowed: the exact sum is at least MAX + ulp/2.
                    return (sb & Self::SIGN) | Self::MAX_FINITE;
                }
                // Fast2Sum with the larger magnitude first (selected on bits, branch-free).
                let (big, small) = order::<Self>(a, b);
                let (big, small) = (f32::from_bits(big as u32), f32::from_bits(small as u32));
                let t = u64::from((small - (s - big)).to_bits());
                toward_zero_fixup::<Self>(sb, t)
            }
        }
    }
}

impl Fmt for F64 {
    const FORMAT: Format = Format::F64;
    const BITS: u32 = 64;
    const FRAC: u32 = 52;
    const BIAS: i64 = 1023;

    #[inline(always)]
    fn add_finite(a: u64, b: u64, r: Round) -> u64 {
        let s = f64::from_bits(a) + f64::from_bits(b);
        match r {
            Round::NearestEven => s.to_bits(),
            Round::TowardZero => f64_sum_toward_zero(a, b, s),
        }
    }
}

/// The roundTowardZero sum of binary64 `a` and `b` (finite) given their roundTiesToEven sum
/// `s`.
#[inline(always)]
fn f64_sum_toward_zero(a: u64, b: u64, s: f64) -> u64 {
    let sb = s.to_bits();
    if sb & F64::ABS == F64::EXP_MASK {
        return (sb & F64::SIGN) | F64::MAX_FINITE;
    }
    let (big, small) = order::<F64>(a, b);
    let t = (f64::from_bits(small) - (s - f64::from_bits(big))).to_bits();
    toward_zero_fixup::<F64>(sb, t)
}

/// `(a, b)` ordered by magnitude, larger first (Fast2Sum's precondition), branch-free.
#[inline(always)]
fn order<F: Fmt>(a: u64, b: u64) -> (u64, u64) {
    let swap = a & F::ABS < b & F::ABS;
    let d = (a ^ b) & 0u64.wrapping_sub(u64::from(swap));
    (a ^ d, b ^ d)
}

/// Given the roundTiesToEven sum `s` (finite) and the exact error `t = exact - s`: the
/// roundTowardZero sum. A nonzero error of the other sign means `|s| > |exact|`; then `s` is
/// nonzero (a sum that rounds to zero is exact) and the next number toward zero is one less in
/// magnitude bits.
#[inline(always)]
fn toward_zero_fixup<F: Fmt>(s: u64, t: u64) -> u64 {
    // Branch-free: the direction of rounding is data, not control flow.
    s.wrapping_sub(u64::from((t & F::ABS != 0) & ((t ^ s) & F::SIGN != 0)))
}

impl Fmt for F16 {
    const FORMAT: Format = Format::F16;
    const BITS: u32 = 16;
    const FRAC: u32 = 10;
    const BIAS: i64 = 15;

    #[inline(always)]
    fn add_finite(a: u64, b: u64, r: Round) -> u64 {
        // Exact in binary64: one rounding, in `narrow`.
        let s = f16_to_f64(a) + f16_to_f64(b);
        narrow::<Self>(s.to_bits(), r == Round::TowardZero)
    }
}

impl Fmt for BF16 {
    const FORMAT: Format = Format::BF16;
    const BITS: u32 = 16;
    const FRAC: u32 = 7;
    const BIAS: i64 = 127;

    #[inline(always)]
    fn add_finite(a: u64, b: u64, r: Round) -> u64 {
        let s = bf16_to_f64(a) + bf16_to_f64(b);
        match r {
            Round::NearestEven => narrow::<Self>(s.to_bits(), false),
            Round::TowardZero => narrow::<Self>(f64_sum_toward_zero_bf16(a, b, s), true),
        }
    }
}

/// The roundTowardZero binary64 sum of two bfloat16 numbers (which cannot overflow binary64).
#[inline(always)]
fn f64_sum_toward_zero_bf16(a: u64, b: u64, s: f64) -> u64 {
    let (big, small) = order::<BF16>(a, b);
    let t = (bf16_to_f64(small) - (s - bf16_to_f64(big))).to_bits();
    toward_zero_fixup::<F64>(s.to_bits(), t)
}

/// A finite binary16 number as binary64 (exact).
#[inline(always)]
fn f16_to_f64(h: u64) -> f64 {
    let sign = (h & 0x8000) << 48;
    let e = (h >> 10) & 0x1f;
    let frac = h & 0x3ff;
    if e == 0 {
        // frac * 2^-24: exact.
        let v = (frac as f64) * f64::from_bits(0x3e70_0000_0000_0000);
        f64::from_bits(v.to_bits() | sign)
    } else {
        f64::from_bits(sign | ((e + 1023 - 15) << 52) | (frac << 42))
    }
}

/// A finite bfloat16 number as binary64 (exact).
#[inline(always)]
fn bf16_to_f64(h: u64) -> f64 {
    f64::from(f32::from_bits(((h & 0xffff) << 16) as u32))
}

/// IEEE 754-2019 §4.3, §7.4: a finite binary64 value (bits) rounded to format `F`,
/// roundTiesToEven or (with `rz`) roundTowardZero, with gradual underflow and overflow to
/// infinity (RNE) or the largest finite number (RZ). Written on bits, not with `half`.
#[inline(always)]
pub(crate) fn narrow<F: Fmt>(x: u64, rz: bool) -> u64 {
    let sign = (x >> 63) << (F::BITS - 1);
    let field = (x >> 52) & 0x7ff;
    // Common case: a normal result. Rounding on the magnitude bits carries into the exponent
    // by itself (up to infinity, which is the roundTiesToEven overflow); roundTowardZero only
    // truncates.
    let lo = (1023 + 1 - F::BIAS) as u64;
    let hi = (1023 + F::BIAS) as u64;
    if field.wrapping_sub(lo) <= hi - lo {
        let sh = 52 - F::FRAC;
        let mag = x & (u64::MAX >> 1);
        let lsb = (mag >> sh) & 1;
        let mag = if rz {
            mag
        } else {
            mag + (1u64 << (sh - 1)) - 1 + lsb
        };
        return sign | ((mag >> sh) - (((1023 - F::BIAS) as u64) << F::FRAC));
    }
    narrow_edge::<F>(x, rz, sign)
}

/// [`narrow`] for zero, subnormal and overflowing results (16-bit formats only: the rounding
/// position must lie at least two bits into the binary64 fraction).
#[inline(never)]
fn narrow_edge<F: Fmt>(x: u64, rz: bool, sign: u64) -> u64 {
    let e = ((x >> 52) & 0x7ff) as i64;
    if e == 0 {
        // Zero, or a binary64 subnormal: far below half of the smallest subnormal of F.
        return sign;
    }
    let m = (x & ((1u64 << 52) - 1)) | (1u64 << 52);
    let ue = e - 1023;
    let fb = i64::from(F::FRAC);
    let emin = 1 - F::BIAS;
    let normal = ue >= emin;
    let shift = if normal {
        52 - fb
    } else {
        52 - fb + (emin - ue)
    };
    if shift > 60 {
        // Below half of the smallest subnormal: zero in both modes.
        return sign;
    }
    let n = shift as u32;
    let q = m >> n;
    let rem = m & ((1u64 << n) - 1);
    let half = 1u64 << (n - 1);
    // Branch-free: whether a value rounds up is data, not control flow.
    let up = !rz & ((rem > half) | ((rem == half) & (q & 1 == 1)));
    let q = q + u64::from(up);
    let bits = if normal {
        (((ue + F::BIAS - 1) as u64) << F::FRAC) + q
    } else {
        q
    };
    if bits >= F::EXP_MASK {
        return sign | if rz { F::MAX_FINITE } else { F::EXP_MASK };
    }
    sign | bits
}

/// Whether `x` is a NaN.
#[inline(always)]
pub(crate) fn is_nan<F: Fmt>(x: u64) -> bool {
    x & F::ABS > F::EXP_MASK
}

/// Whether `x` is an infinity or NaN.
#[inline(always)]
fn non_finite<F: Fmt>(x: u64) -> bool {
    x & F::EXP_MASK == F::EXP_MASK
}

/// Flush-to-zero of one value: a subnormal becomes the zero of its sign.
#[inline(always)]
pub(crate) fn flush<F: Fmt>(x: u64) -> u64 {
    if x & F::EXP_MASK == 0 { x & F::SIGN } else { x }
}

/// The vendor NaN encoding (A4): with `canonical`, any NaN result becomes the canonical NaN.
#[inline(always)]
pub(crate) fn nan_bits<F: Fmt>(x: u64, canonical: bool) -> u64 {
    if canonical && is_nan::<F>(x) {
        F::CANONICAL_NAN
    } else {
        x
    }
}

/// IEEE 754-2019 §5.4.1 `a + b` (or `a - b` with `sub`) of masked operands under our FTZ
/// layer: NaN operands propagate (first NaN, quieted; a NaN `b` of a subtraction unflipped),
/// inf - inf is the default NaN, an infinity is exact.
#[inline(always)]
pub(crate) fn add_sub<F: Fmt>(
    a: u64,
    b: u64,
    sub: bool,
    r: Round,
    ftz_in: bool,
    ftz_out: bool,
) -> u64 {
    let (a, b) = if ftz_in {
        (flush::<F>(a), flush::<F>(b))
    } else {
        (a, b)
    };
    let sum = if non_finite::<F>(a) || non_finite::<F>(b) {
        special_sum::<F>(a, b, sub)
    } else {
        let b = if sub { b ^ F::SIGN } else { b };
        F::add_finite(a, b, r)
    };
    // Only a finite sum can be subnormal; the exponent field of a NaN or infinity is all ones.
    if ftz_out { flush::<F>(sum) } else { sum }
}

/// The sum when an operand is an infinity or a NaN (cold).
#[cold]
fn special_sum<F: Fmt>(a: u64, b: u64, sub: bool) -> u64 {
    if is_nan::<F>(a) {
        return a | F::QUIET;
    }
    if is_nan::<F>(b) {
        return b | F::QUIET;
    }
    let b = if sub { b ^ F::SIGN } else { b };
    let (ia, ib) = (non_finite::<F>(a), non_finite::<F>(b));
    if ia && ib {
        if (a ^ b) & F::SIGN == 0 {
            a
        } else {
            F::DEFAULT_NAN
        }
    } else if ia {
        a
    } else {
        b
    }
}

/// The total-order key of a non-NaN value: ascending keys are ascending values, with -0 just
/// below +0.
#[inline(always)]
fn key<F: Fmt>(x: u64) -> u64 {
    if x & F::SIGN != 0 {
        !x & F::MASK
    } else {
        x | F::SIGN
    }
}

/// `min(old, s0)` (`max` with `is_max`) under `rules`: the reference's first choice.
#[inline(always)]
pub(crate) fn min_max<F: Fmt>(old: u64, s0: u64, rules: MinMaxRules, is_max: bool) -> u64 {
    // A7: under flush-before-compare the operands are the flushed values (the first choice of
    // `Either` is the as-given answer).
    let (a, b) = if rules.denormals == DenormRule::FlushBeforeCompare {
        (flush::<F>(old), flush::<F>(s0))
    } else {
        (old, s0)
    };
    if is_nan::<F>(a) || is_nan::<F>(b) || (a | b) & F::ABS == 0 {
        return min_max_slow::<F>(old, s0, rules, is_max);
    }
    let (ka, kb) = (key::<F>(a), key::<F>(b));
    let b_wins = if is_max { ka < kb } else { kb < ka };
    if b_wins { b } else { a }
}

/// NaN operands and zero pairs: the reference's rules (A5, A6), first choice.
#[cold]
fn min_max_slow<F: Fmt>(old: u64, s0: u64, rules: MinMaxRules, is_max: bool) -> u64 {
    let choices = if is_max {
        rf::max(F::FORMAT, old, s0, rules)
    } else {
        rf::min(F::FORMAT, old, s0, rules)
    };
    // The reference always gives at least one choice; `old` is a stand-in that is never used.
    choices.first().copied().unwrap_or(old)
}

/// IEEE 754 `compareQuietEqual` after DAZ if asked (A7, A9).
#[inline(always)]
pub(crate) fn numeric_eq<F: Fmt>(a: u64, b: u64, daz: bool) -> bool {
    let (a, b) = if daz {
        (flush::<F>(a), flush::<F>(b))
    } else {
        (a, b)
    };
    if is_nan::<F>(a) || is_nan::<F>(b) {
        return false;
    }
    (a | b) & F::ABS == 0 || a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    // Worked by hand: f16 1.0 = 0x3c00 (2^0); 2^-11 is half an ulp of 1.0 in f16 (ulp 2^-10).
    #[test]
    fn narrow_rounds_ties_to_even_and_truncates() {
        let one_plus_half_ulp = (1.0f64 + 2f64.powi(-11)).to_bits();
        assert_eq!(narrow::<F16>(one_plus_half_ulp, false), 0x3c00);
        assert_eq!(narrow::<F16>(one_plus_half_ulp, true), 0x3c00);
        // 1 + 3 * 2^-11 = 1 + 1.5 ulp: tie between 0x3c01 (odd) and 0x3c02 (even).
        let x = (1.0f64 + 3.0 * 2f64.powi(-11)).to_bits();
        assert_eq!(narrow::<F16>(x, false), 0x3c02);
        assert_eq!(narrow::<F16>(x, true), 0x3c01);
        // 65520 = max f16 (65504) + half ulp (16): ties to even -> inf; RZ -> max.
        assert_eq!(narrow::<F16>(65520f64.to_bits(), false), 0x7c00);
        assert_eq!(narrow::<F16>(65520f64.to_bits(), true), 0x7bff);
        // 2^-25 is half the smallest subnormal 2^-24: ties to even -> +0; 1.5 * 2^-24 -> 2.
        assert_eq!(narrow::<F16>(2f64.powi(-25).to_bits(), false), 0);
        assert_eq!(narrow::<F16>((1.5 * 2f64.powi(-24)).to_bits(), false), 2);
        assert_eq!(
            narrow::<F16>((-1.5 * 2f64.powi(-24)).to_bits(), true),
            0x8001
        );
        // bf16: 1 + 2^-8 is a tie between 0x3f80 (even) and 0x3f81.
        assert_eq!(
            narrow::<BF16>((1.0f64 + 2f64.powi(-8)).to_bits(), false),
            0x3f80
        );
    }

    #[test]
    fn f32_toward_zero_steps_down_when_nearest_rounds_up() {
        // 1 + (1 - 2^-24) * 2^-23... simpler: 1 + 0.75 ulp rounds to 1 + ulp under RNE and to
        // 1 under RZ. ulp(1) = 2^-23 = 0x34000000; 0.75 ulp = 0x33c00000.
        assert_eq!(
            F32::add_finite(0x3f80_0000, 0x33c0_0000, Round::NearestEven),
            0x3f80_0001
        );
        assert_eq!(
            F32::add_finite(0x3f80_0000, 0x33c0_0000, Round::TowardZero),
            0x3f80_0000
        );
        // -1 - 0.75 ulp: RZ keeps -1.
        assert_eq!(
            F32::add_finite(0xbf80_0000, 0xb3c0_0000, Round::TowardZero),
            0xbf80_0000
        );
        // max + max overflows: RZ gives max.
        assert_eq!(
            F32::add_finite(0x7f7f_ffff, 0x7f7f_ffff, Round::TowardZero),
            0x7f7f_ffff
        );
    }
}
