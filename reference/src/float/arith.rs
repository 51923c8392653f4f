//! Float add and subtract on bit patterns, written on integers: operands are unpacked into an
//! integer significand and a power-of-two scale, added exactly (up to a sticky bit far below
//! the rounding position), and rounded once by [`round_pack`].

use super::{Format, FtzMode, Round, flush, is_nan, is_subnormal, neg, quiet};

/// IEEE 754-2019 §5.4.1 addition of `a` and `b` in format `f` with rounding `r`. NaN operands
/// propagate (first NaN, quieted); an invalid operation gives [`Format::default_nan`]; the
/// exact zero sum is +0 except -0 + -0 (and -0 under roundTowardNegative, not modelled).
pub fn add(f: Format, a: u64, b: u64, r: Round) -> u64 {
    let (a, b) = (a & f.mask(), b & f.mask());
    // §6.2.3: a NaN operand gives a quiet NaN carrying the first NaN operand's payload.
    if is_nan(f, a) {
        return quiet(f, a);
    }
    if is_nan(f, b) {
        return quiet(f, b);
    }
    let sign = f.sign_mask();
    let (sa, sb) = (a & sign, b & sign);
    let (ia, ib) = (is_infinite(f, a), is_infinite(f, b));
    // §7.2(b): inf + -inf is invalid; otherwise an infinity is exact and wins (§6.1).
    if ia && ib {
        return if sa == sb { a } else { f.default_nan() };
    }
    if ia {
        return a;
    }
    if ib {
        return b;
    }
    // Order by magnitude so that `big` fixes the alignment and, for unlike signs, the sign.
    let (big, small) = if a & !sign >= b & !sign {
        (a, b)
    } else {
        (b, a)
    };
    let (ebig, mbig) = unpack(f, big);
    let (esmall, msmall) = unpack(f, small);
    // 64 extra low bits: the smaller significand is aligned to the larger one's scale and what
    // falls off the bottom is kept as a sticky bit, 60+ bits below the rounding position.
    let big_sig = u128::from(mbig) << EXTRA;
    let small_sig = shift_right_sticky(u128::from(msmall) << EXTRA, ebig - esmall);
    let same_sign = sa == sb;
    let sum = if same_sign {
        big_sig + small_sig
    } else {
        big_sig - small_sig
    };
    if sum == 0 {
        // §6.3: an exact zero sum of unlike signs is +0 under both modelled roundings; the sum
        // of two zeros of like sign keeps that sign.
        return if same_sign { sa } else { 0 };
    }
    let scale = ebig - bias(f) - i64::from(f.frac_bits()) - EXTRA_I;
    round_pack(f, big & sign != 0, sum, scale, r)
}

/// `a - b`: addition of `a` and `b` with its sign flipped; a NaN `b` propagates unflipped.
pub fn sub(f: Format, a: u64, b: u64, r: Round) -> u64 {
    let (a, b) = (a & f.mask(), b & f.mask());
    // §5.4.1 subtraction is x + (-y), but the NaN of y is propagated as given (§6.2.3: negation
    // is not applied to the payload's sign on the way through).
    if !is_nan(f, a) && is_nan(f, b) {
        return quiet(f, b);
    }
    add(f, a, neg(f, b), r)
}

/// [`add`] with flush-to-zero of inputs and/or result.
pub fn add_ftz(f: Format, a: u64, b: u64, r: Round, ftz: FtzMode) -> u64 {
    let (a, b) = flush_inputs(f, a, b, ftz);
    flush_output(f, add(f, a, b, r), ftz)
}

/// [`sub`] with flush-to-zero of inputs and/or result.
pub fn sub_ftz(f: Format, a: u64, b: u64, r: Round, ftz: FtzMode) -> u64 {
    let (a, b) = flush_inputs(f, a, b, ftz);
    flush_output(f, sub(f, a, b, r), ftz)
}

/// Guard bits appended below every significand before alignment.
const EXTRA: u32 = 64;
/// [`EXTRA`] as a signed scale.
const EXTRA_I: i64 = 64;

/// Our flush-to-zero layer, input side (DAZ): subnormal operands become zeros of their sign.
fn flush_inputs(f: Format, a: u64, b: u64, ftz: FtzMode) -> (u64, u64) {
    if ftz.inputs {
        (flush(f, a), flush(f, b))
    } else {
        (a & f.mask(), b & f.mask())
    }
}

/// Our flush-to-zero layer, output side (FTZ): a subnormal result after rounding becomes the
/// zero of its sign.
fn flush_output(f: Format, x: u64, ftz: FtzMode) -> u64 {
    if ftz.outputs && is_subnormal(f, x) {
        x & f.sign_mask()
    } else {
        x
    }
}

/// Whether `x` is +inf or -inf.
fn is_infinite(f: Format, x: u64) -> bool {
    x & !f.sign_mask() & f.mask() == f.exp_mask()
}

/// A finite value as (biased exponent, integer significand) with magnitude
/// `significand * 2^(exponent - bias - frac_bits)`; subnormals use exponent 1 (§3.4).
pub(super) fn unpack(f: Format, x: u64) -> (i64, u64) {
    let field = (x & f.exp_mask()) >> f.frac_bits();
    let frac = x & f.frac_mask();
    if field == 0 {
        (1, frac)
    } else {
        // The field is at most 11 bits wide, so the conversion is lossless.
        (
            i64::try_from(field).unwrap_or(i64::MAX),
            frac | (1u64 << f.frac_bits()),
        )
    }
}

/// The exponent bias of `f` (§3.3, `emax`).
pub(super) fn bias(f: Format) -> i64 {
    (1i64 << (f.exp_bits() - 1)) - 1
}

/// `x >> n` with every bit shifted out OR-ed into bit 0 (the sticky bit).
fn shift_right_sticky(x: u128, n: i64) -> u128 {
    if n <= 0 {
        x
    } else if n >= 128 {
        u128::from(x != 0)
    } else {
        let lost = x & ((1u128 << n) - 1);
        (x >> n) | u128::from(lost != 0)
    }
}

/// IEEE 754-2019 §4.3 and §7.4: rounds the positive value `sig * 2^scale` (`sig != 0`; its
/// lowest bit may be a sticky bit standing for a nonzero remainder far below it) to format
/// `f` under `r`, with gradual underflow to subnormals and overflow to infinity
/// (roundTiesToEven) or the largest finite number (roundTowardZero), and gives the bits with
/// the sign applied.
pub(super) fn round_pack(f: Format, negative: bool, sig: u128, scale: i64, r: Round) -> u64 {
    let sign = if negative { f.sign_mask() } else { 0 };
    if sig == 0 {
        return sign;
    }
    let frac_bits = i64::from(f.frac_bits());
    let precision = frac_bits + 1;
    let len = 128 - i64::from(sig.leading_zeros());
    // The weight of the result's last place: `precision` significant bits, but never below the
    // subnormal quantum 2^(emin - frac_bits) with emin = 1 - bias.
    let quantum_min = 1 - bias(f) - frac_bits;
    let shift = (len - precision).max(quantum_min - scale);
    let q: u128 = if shift <= 0 {
        // Exact: fewer bits than the precision (the shift is at most `precision`).
        sig << u32::try_from(-shift).unwrap_or(0)
    } else if shift >= 128 {
        // Far below half of the smallest subnormal: truncates to zero in both modes.
        0
    } else {
        let n = u32::try_from(shift).unwrap_or(127);
        let q = sig >> n;
        let rem = sig & ((1u128 << n) - 1);
        let half = 1u128 << (n - 1);
        let up = match r {
            Round::NearestEven => rem > half || (rem == half && q & 1 == 1),
            Round::TowardZero => false,
        };
        q + u128::from(up)
    };
    // The biased exponent field minus one, for a significand with its hidden bit in `q`: the
    // hidden bit adds the one back, and a carry out of rounding bumps the exponent by itself.
    let field_minus_one = scale + shift + frac_bits + bias(f) - 1;
    let bits = (i128::from(field_minus_one) << frac_bits) + i128::try_from(q).unwrap_or(i128::MAX);
    let max_finite = i128::from(f.exp_mask() - 1);
    if bits > max_finite {
        // §7.4 overflow.
        return match r {
            Round::NearestEven => sign | f.exp_mask(),
            Round::TowardZero => sign | (f.exp_mask() - 1),
        };
    }
    sign | u64::try_from(bits).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::*;
    use Round::*;

    const ONE: u64 = 0x3f80_0000;

    #[test]
    fn ties_to_even_at_the_ulp() {
        // f32 ulp of 1.0 is 2^-23; 2^-24 is exactly half of it: tie, 1.0 has an even significand.
        let half_ulp = 0x3380_0000; // 2^-24 = 2^(103-127)
        assert_eq!(add(F32, ONE, half_ulp, NearestEven), ONE);
        assert_eq!(add(F32, ONE, half_ulp, TowardZero), ONE);
        // 1 + 3*2^-24 = 1 + 1.5 ulp: tie between 1+ulp (odd) and 1+2ulp (even) -> 1 + 2^-22.
        let three_half_ulp = 0x3440_0000; // 1.5 * 2^-23
        assert_eq!(add(F32, ONE, three_half_ulp, NearestEven), 0x3f80_0002);
        assert_eq!(add(F32, ONE, three_half_ulp, TowardZero), 0x3f80_0001);
        // (1 + ulp) + half ulp: tie from an odd significand rounds up to 1 + 2 ulp.
        assert_eq!(add(F32, 0x3f80_0001, half_ulp, NearestEven), 0x3f80_0002);
        // Just above the tie (2^-24 + 2^-47): rounds up in RNE, truncates in RZ.
        let above = 0x3380_0001;
        assert_eq!(add(F32, ONE, above, NearestEven), 0x3f80_0001);
        assert_eq!(add(F32, ONE, above, TowardZero), ONE);
        // A value far below the ulp still makes 1 - tiny truncate down in RZ.
        assert_eq!(sub(F32, ONE, 0x0000_0001, TowardZero), 0x3f7f_ffff);
        assert_eq!(sub(F32, ONE, 0x0000_0001, NearestEven), ONE);
    }

    #[test]
    fn subnormals() {
        // Smallest subnormals: 1 + 1 = 2 quanta, exact.
        assert_eq!(add(F32, 1, 1, NearestEven), 2);
        // Largest subnormal + smallest subnormal = smallest normal 0x00800000.
        assert_eq!(add(F32, 0x007f_ffff, 1, NearestEven), 0x0080_0000);
        // Smallest normal - smallest subnormal = largest subnormal.
        assert_eq!(sub(F32, 0x0080_0000, 1, TowardZero), 0x007f_ffff);
        // f16: 0x0001 is 2^-24; 0x03ff + 0x0001 = 0x0400 (2^-14).
        assert_eq!(add(F16, 0x03ff, 0x0001, NearestEven), 0x0400);
        // bf16 smallest subnormal 2^-133, two of them: 0x0002.
        assert_eq!(add(BF16, 0x0001, 0x0001, TowardZero), 0x0002);
        // f64 -subnormal + -subnormal.
        assert_eq!(
            add(
                F64,
                0x8000_0000_0000_0003,
                0x8000_0000_0000_0004,
                NearestEven
            ),
            0x8000_0000_0000_0007
        );
    }

    #[test]
    fn overflow() {
        let max = 0x7f7f_ffff;
        // max + max = 2^129 - 2^105: RNE overflows to inf, RZ stays at max.
        assert_eq!(add(F32, max, max, NearestEven), 0x7f80_0000);
        assert_eq!(add(F32, max, max, TowardZero), max);
        assert_eq!(
            add(F32, max | 0x8000_0000, 0xff7f_ffff, TowardZero),
            0xff7f_ffff
        );
        assert_eq!(add(F32, 0xff7f_ffff, 0xff7f_ffff, NearestEven), 0xff80_0000);
        // max + half ulp (2^103): a tie, max is odd, rounds up to 2^128 = inf under RNE.
        assert_eq!(add(F32, max, 0x7300_0000, NearestEven), 0x7f80_0000);
        // max + just under half an ulp (2^102) stays at max.
        assert_eq!(add(F32, max, 0x7280_0000, NearestEven), max);
        // f16: 65504 + 65504 -> inf (0x7c00), RZ -> 0x7bff.
        assert_eq!(add(F16, 0x7bff, 0x7bff, NearestEven), 0x7c00);
        assert_eq!(add(F16, 0x7bff, 0x7bff, TowardZero), 0x7bff);
    }

    #[test]
    fn signed_zeros() {
        let nz = 0x8000_0000;
        assert_eq!(add(F32, 0, 0, NearestEven), 0);
        assert_eq!(add(F32, nz, 0, NearestEven), 0);
        assert_eq!(add(F32, 0, nz, TowardZero), 0);
        assert_eq!(add(F32, nz, nz, NearestEven), nz);
        assert_eq!(add(F32, nz, nz, TowardZero), nz);
        // x + (-x) = +0 in both modes.
        assert_eq!(add(F32, 0xbfc0_0000, 0x3fc0_0000, NearestEven), 0);
        assert_eq!(add(F32, 0xbfc0_0000, 0x3fc0_0000, TowardZero), 0);
        assert_eq!(sub(F32, 0xbfc0_0000, 0xbfc0_0000, TowardZero), 0);
        // -0 - +0 = -0 + -0 = -0; +0 - +0 = +0.
        assert_eq!(sub(F32, nz, 0, NearestEven), nz);
        assert_eq!(sub(F32, 0, 0, NearestEven), 0);
        // x + 0 keeps x exactly, also -0 as the other zero.
        assert_eq!(add(F32, 0x8000_0001, 0, NearestEven), 0x8000_0001);
        assert_eq!(
            add(
                F64,
                0x8000_0000_0000_0000,
                0x4000_0000_0000_0000,
                TowardZero
            ),
            1 << 62
        );
    }

    #[test]
    fn nans_and_infinities() {
        // sNaN 0x7f800001 + 1.0: the first NaN quieted, payload kept.
        assert_eq!(add(F32, 0x7f80_0001, ONE, NearestEven), 0x7fc0_0001);
        assert_eq!(add(F32, ONE, 0xff80_0002, NearestEven), 0xffc0_0002);
        // Two NaNs: the first one wins.
        assert_eq!(add(F32, 0x7fc0_0005, 0x7f80_0007, NearestEven), 0x7fc0_0005);
        // inf - inf is invalid: the default NaN.
        assert_eq!(add(F32, 0x7f80_0000, 0xff80_0000, NearestEven), 0x7fc0_0000);
        assert_eq!(sub(F16, 0x7c00, 0x7c00, TowardZero), 0x7e00);
        assert_eq!(sub(BF16, 0xff80, 0xff80, NearestEven), 0x7fc0);
        assert_eq!(
            sub(
                F64,
                0x7ff0_0000_0000_0000,
                0x7ff0_0000_0000_0000,
                NearestEven
            ),
            0x7ff8_0000_0000_0000
        );
        // inf + inf, inf + finite.
        assert_eq!(add(F32, 0xff80_0000, 0xff80_0000, TowardZero), 0xff80_0000);
        assert_eq!(add(F32, 0x7f7f_ffff, 0x7f80_0000, TowardZero), 0x7f80_0000);
        // sub with a NaN b: b is quieted but not negated.
        assert_eq!(sub(F32, ONE, 0x7f80_0003, NearestEven), 0x7fc0_0003);
        assert_eq!(sub(F32, ONE, 0xffc0_0003, NearestEven), 0xffc0_0003);
        // sub with a NaN a: a is kept.
        assert_eq!(sub(F32, 0xff80_0001, 0x7fc0_0000, NearestEven), 0xffc0_0001);
        // 1 - inf = -inf.
        assert_eq!(sub(F32, ONE, 0x7f80_0000, NearestEven), 0xff80_0000);
    }

    #[test]
    fn results_are_masked_to_the_format() {
        // High garbage bits above the format are ignored and never come back.
        assert_eq!(add(F16, 0xffff_3c00, 0x3c00, NearestEven), 0x4000);
        assert_eq!(add(F32, 0xdead_0000_bf80_0000, 0, NearestEven), 0xbf80_0000);
        assert_eq!(sub(BF16, 0x1_0000, 0x3f80, NearestEven), 0xbf80);
    }

    #[test]
    fn flush_to_zero() {
        // 0x00000001 + 0 with both flushes: the input is flushed -> +0 + +0 = +0.
        assert_eq!(add_ftz(F32, 1, 0, NearestEven, FtzMode::BOTH), 0);
        // Without input flushing the subnormal result is flushed on the way out: +0.
        assert_eq!(add_ftz(F32, 1, 0, NearestEven, FtzMode::OUTPUTS), 0);
        assert_eq!(add_ftz(F32, 1, 0, NearestEven, FtzMode::NONE), 1);
        // -subnormal + -0 with input flushing: -0 + -0 = -0.
        assert_eq!(
            add_ftz(F32, 0x8000_0001, 0x8000_0000, TowardZero, FtzMode::BOTH),
            0x8000_0000
        );
        // A result of 2^-127 (subnormal 0x00200000): 2^-126 - 2^-127.
        let res = sub(F32, 0x0080_0000, 0x0020_0000, NearestEven);
        assert_eq!(res, 0x0060_0000);
        assert_eq!(
            sub_ftz(F32, 0x0080_0000, 0x0060_0000, NearestEven, FtzMode::OUTPUTS),
            0
        );
        // With input flushing only, 2^-126 - subnormal = 2^-126 - 0.
        let inputs = FtzMode {
            inputs: true,
            outputs: false,
        };
        assert_eq!(
            sub_ftz(F32, 0x0080_0000, 0x0060_0000, NearestEven, inputs),
            0x0080_0000
        );
        // Negative subnormal result flushed to -0.
        assert_eq!(
            sub_ftz(F32, 0x8080_0000, 0x8060_0000, NearestEven, FtzMode::OUTPUTS),
            0x8000_0000
        );
        // Subnormal operands whose sum is normal keep the sum (the flush looks at the result):
        // f16 0x03ff + 0x0001 = 0x0400, f32 0x007fffff + 0x007fffff = 0x00fffffe.
        assert_eq!(
            add_ftz(F16, 0x03ff, 0x0001, NearestEven, FtzMode::OUTPUTS),
            0x0400
        );
        assert_eq!(
            add_ftz(F32, 0x007f_ffff, 0x007f_ffff, NearestEven, FtzMode::OUTPUTS),
            0x00ff_fffe
        );
        // NaNs pass through the layer.
        assert_eq!(
            add_ftz(F32, 0x7f80_0001, 1, NearestEven, FtzMode::BOTH),
            0x7fc0_0001
        );
    }

    #[test]
    fn round_pack_rounds_a_sticky_tail() {
        // 1 + 2^-24 + sticky: above the tie, rounds up in f32.
        let sig = (1u128 << 90) | (1u128 << 66) | 1;
        assert_eq!(round_pack(F32, false, sig, -90, NearestEven), 0x3f80_0001);
        assert_eq!(round_pack(F32, true, sig, -90, TowardZero), 0xbf80_0000);
        // Far below the smallest subnormal: zero of the sign (RZ) and also RNE.
        assert_eq!(round_pack(F32, true, 1, -400, NearestEven), 0x8000_0000);
        // Exactly half the smallest f16 subnormal (2^-25): tie to even -> 0; a bit more -> 1.
        assert_eq!(round_pack(F16, false, 1, -25, NearestEven), 0);
        assert_eq!(round_pack(F16, false, 3, -26, NearestEven), 1);
    }

    #[test]
    fn round_pack_widens_a_short_exact_significand() {
        // No caller reaches this branch (add passes 64 guard bits, the f16/bf16 literal path a
        // 53-bit binary64 significand), so the corpus cannot pin it: 3 * 2^0 is exact in f32
        // (0x40400000), and 5 * 2^-2 = 1.25 (0x3fa00000).
        assert_eq!(round_pack(F32, false, 3, 0, NearestEven), 0x4040_0000);
        assert_eq!(round_pack(F32, true, 5, -2, TowardZero), 0xbfa0_0000);
    }
}
