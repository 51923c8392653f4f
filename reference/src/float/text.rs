//! Float values as text: human display and parsing of case-file literals (FORMAT-v0, "Values":
//! `"f32:1.5"`, `"f32:-0.0"`, `"f32:inf"`, `"f16:0x0001"`).

use super::arith::{bias, round_pack, unpack};
use super::{Class, Format, Round, classify, is_negative};

/// The value as an `f64` (exact for every format here except NaN payloads).
pub fn to_f64(f: Format, x: u64) -> f64 {
    let x = x & f.mask();
    let negative = is_negative(f, x);
    let magnitude = match classify(f, x) {
        Class::QuietNan | Class::SignalingNan => return f64::NAN,
        Class::Infinite => f64::INFINITY,
        Class::Zero => 0.0,
        Class::Subnormal | Class::Normal => match f {
            Format::F64 => f64::from_bits(x & !f.sign_mask()),
            _ => {
                // At most 24 significant bits and a scale within f64's normal range: exact.
                let (exp, sig) = unpack(f, x);
                let scale = exp - bias(f) - i64::from(f.frac_bits());
                sig as f64 * pow2(scale)
            }
        },
    };
    if negative { -magnitude } else { magnitude }
}

/// A human rendering: `1.5`, `-0`, `inf`, `-inf`, `qnan(0x...)`, `snan(0x...)`, subnormals in
/// exponent form.
pub fn display(f: Format, x: u64) -> String {
    let x = x & f.mask();
    let sign = if is_negative(f, x) { "-" } else { "" };
    let frac = x & f.frac_mask();
    match classify(f, x) {
        // The payload is the fraction without the quiet bit.
        Class::QuietNan => format!("{sign}qnan({:#x})", frac & !f.quiet_bit()),
        Class::SignalingNan => format!("{sign}snan({frac:#x})"),
        Class::Infinite => format!("{sign}inf"),
        Class::Zero => format!("{sign}0"),
        class => {
            let (digits, exp10) = shortest_digits(f, x);
            let exponent_form = class == Class::Subnormal || !(-5..17).contains(&exp10);
            format!("{sign}{}", render(&digits, exp10, exponent_form))
        }
    }
}

/// Parses a value literal: a decimal or exponent float (`1.5`, `-0.0`, `1e-40`), `inf`,
/// `-inf`, `nan` (the default NaN), or `0x...` raw bits. Decimal values round to nearest even.
///
/// Also accepted: a leading `+`, `infinity`, `-nan` (the default NaN with the sign set), and
/// the NaN forms [`display`] writes (`qnan(0x1)`, `-snan(0x2)`). Raw bits must fit the format
/// and take no sign. Binary16 and bfloat16 decimals are rounded to binary64 first and then to
/// the format (both to nearest even); a decimal within a binary64 ulp of a tie of the narrow
/// format may therefore land on the tie and round to even where the exact value would not
/// (double rounding); the literals in case files are short and not affected in practice.
pub fn parse(f: Format, s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return raw_bits(f, hex);
    }
    let (sign, body) = match s.as_bytes().first() {
        Some(b'-') => (f.sign_mask(), s.get(1..)?),
        Some(b'+') => (0, s.get(1..)?),
        _ => (0, s),
    };
    let lower = body.to_ascii_lowercase();
    let magnitude = match lower.as_str() {
        "inf" | "infinity" => f.exp_mask(),
        "nan" => f.default_nan(),
        other => {
            if let Some(payload) = nan_payload(other, "qnan(") {
                if payload & !(f.frac_mask() >> 1) != 0 {
                    return None;
                }
                f.exp_mask() | f.quiet_bit() | payload
            } else if let Some(payload) = nan_payload(other, "snan(") {
                if payload == 0 || payload & !(f.frac_mask() >> 1) != 0 {
                    return None;
                }
                f.exp_mask() | payload
            } else {
                decimal(f, other)?
            }
        }
    };
    Some(sign | magnitude)
}

/// `0x...` raw bits: hex digits only, and no more bits than the format has.
fn raw_bits(f: Format, hex: &str) -> Option<u64> {
    if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let bits = u64::from_str_radix(hex, 16).ok()?;
    (bits <= f.mask()).then_some(bits)
}

/// The payload of `prefix` `0x...` `)`.
fn nan_payload(s: &str, prefix: &str) -> Option<u64> {
    let inner = s.strip_prefix(prefix)?.strip_suffix(')')?;
    let hex = inner.strip_prefix("0x")?;
    if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// An unsigned decimal `digits[.digits][e[+-]digits]` (at least one mantissa digit), rounded
/// to nearest even in `f`.
fn decimal(f: Format, s: &str) -> Option<u64> {
    if !is_decimal(s) {
        return None;
    }
    match f {
        // Rust's float parsing is correctly rounded (roundTiesToEven), overflowing to inf.
        Format::F64 => Some(s.parse::<f64>().ok()?.to_bits()),
        Format::F32 => Some(u64::from(s.parse::<f32>().ok()?.to_bits())),
        Format::F16 | Format::BF16 => Some(from_f64(f, s.parse::<f64>().ok()?)),
    }
}

/// Whether `s` matches `digits[.digits][e[+-]digits]` or `.digits[e...]`.
fn is_decimal(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((int, frac)) => (int, frac),
        None => (mantissa, ""),
    };
    let digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = match exponent {
        None => true,
        Some(e) => {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && digits(e)
        }
    };
    mantissa_ok && exponent_ok
}

/// A nonnegative finite or infinite `f64` rounded to nearest even in `f` (§7.4 overflow to
/// inf, gradual underflow).
fn from_f64(f: Format, v: f64) -> u64 {
    let bits = v.to_bits() & !(1u64 << 63);
    match classify(Format::F64, bits) {
        Class::Infinite => f.exp_mask(),
        Class::QuietNan | Class::SignalingNan => f.default_nan(),
        Class::Zero => 0,
        Class::Subnormal | Class::Normal => {
            let (exp, sig) = unpack(Format::F64, bits);
            let scale = exp - bias(Format::F64) - i64::from(Format::F64.frac_bits());
            round_pack(f, false, u128::from(sig), scale, Round::NearestEven)
        }
    }
}

/// `2^k` for `k` within f64's normal exponent range (clamped to it otherwise).
fn pow2(k: i64) -> f64 {
    let field = (k + 1023).clamp(1, 2046);
    f64::from_bits(u64::try_from(field).unwrap_or(1) << 52)
}

/// The fewest significant decimal digits that [`parse`] reads back as the finite nonzero `x`,
/// as (digits without leading zeros, decimal exponent of the first digit).
fn shortest_digits(f: Format, x: u64) -> (String, i32) {
    let magnitude = x & !f.sign_mask();
    let v = to_f64(f, magnitude);
    let mut best = (String::from("0"), 0);
    for precision in 0..17 {
        let text = format!("{v:.precision$e}");
        if let Some((mantissa, exp)) = text.split_once('e') {
            let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
            let digits = digits.trim_end_matches('0');
            let digits = if digits.is_empty() { "0" } else { digits };
            best = (digits.to_owned(), exp.parse().unwrap_or(0));
            if parse(f, &text) == Some(magnitude) {
                break;
            }
        }
    }
    best
}

/// Digits `d1 d2 ...` with the first digit worth `10^exp10`, as `d1.d2...e<exp10>` or as a
/// plain decimal.
fn render(digits: &str, exp10: i32, exponent_form: bool) -> String {
    let (first, rest) = digits.split_at(1.min(digits.len()));
    if exponent_form {
        let dot = if rest.is_empty() { "" } else { "." };
        return format!("{first}{dot}{rest}e{exp10}");
    }
    let len = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if exp10 < 0 {
        let zeros = "0".repeat(usize::try_from(-exp10 - 1).unwrap_or(0));
        format!("0.{zeros}{digits}")
    } else if exp10 + 1 >= len {
        let zeros = "0".repeat(usize::try_from(exp10 + 1 - len).unwrap_or(0));
        format!("{digits}{zeros}")
    } else {
        let point = usize::try_from(exp10 + 1).unwrap_or(0);
        format!("{}.{}", &digits[..point], &digits[point..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::*;

    #[test]
    fn to_f64_is_exact() {
        assert_eq!(to_f64(F32, 0x3fc0_0000).to_bits(), 1.5f64.to_bits());
        assert_eq!(to_f64(F16, 0x3c00).to_bits(), 1.0f64.to_bits());
        assert_eq!(to_f64(F16, 0xc000).to_bits(), (-2.0f64).to_bits());
        // f16 smallest subnormal 2^-24, largest finite 65504.
        assert_eq!(to_f64(F16, 0x0001).to_bits(), (2f64.powi(-24)).to_bits());
        assert_eq!(to_f64(F16, 0x7bff).to_bits(), 65504f64.to_bits());
        // bf16 0x3fc0 = 1.5; smallest subnormal 2^-133.
        assert_eq!(to_f64(BF16, 0x3fc0).to_bits(), 1.5f64.to_bits());
        assert_eq!(to_f64(BF16, 0x0001).to_bits(), (2f64.powi(-133)).to_bits());
        assert_eq!(to_f64(F32, 0x8000_0000).to_bits(), (-0.0f64).to_bits());
        assert_eq!(to_f64(F16, 0xfc00).to_bits(), f64::NEG_INFINITY.to_bits());
        assert!(to_f64(F16, 0x7e00).is_nan());
        assert!(to_f64(F64, 0x7ff0_0000_0000_0001).is_nan());
        assert_eq!(
            to_f64(F64, 0x4009_21fb_5444_2d18).to_bits(),
            0x4009_21fb_5444_2d18
        );
    }

    #[test]
    fn display_forms() {
        assert_eq!(display(F32, 0x3fc0_0000), "1.5");
        assert_eq!(display(F32, 0x3f80_0000), "1");
        assert_eq!(display(F32, 0xc2c8_0000), "-100");
        assert_eq!(display(F32, 0x8000_0000), "-0");
        assert_eq!(display(F32, 0), "0");
        assert_eq!(display(F32, 0x7f80_0000), "inf");
        assert_eq!(display(F32, 0xff80_0000), "-inf");
        assert_eq!(display(F32, 0x7fc0_0000), "qnan(0x0)");
        assert_eq!(display(F32, 0x7fc0_0001), "qnan(0x1)");
        assert_eq!(display(F32, 0x7f80_0001), "snan(0x1)");
        assert_eq!(display(F16, 0xfd00), "-snan(0x100)");
        // 0.1f32 is 0x3dcccccd; the shortest round-trip decimal is 0.1.
        assert_eq!(display(F32, 0x3dcc_cccd), "0.1");
        // Smallest normal f32 2^-126 = 1.17549435e-38 (9 digits needed).
        assert_eq!(display(F32, 0x0080_0000), "1.1754944e-38");
        // Subnormals in exponent form: 2^-149 reads back from 1e-45.
        assert_eq!(display(F32, 0x0000_0001), "1e-45");
        // f16: 2^-24 = 5.96e-8, shortest is 6e-8; 65504; 0x3555 = 0.333251953125, ulp 2^-12.
        assert_eq!(display(F16, 0x0001), "6e-8");
        assert_eq!(display(F16, 0x7bff), "65500");
        assert_eq!(display(F16, 0x3555), "0.3333");
        // bf16 1.5, and 2^100 = 1.2676506e30 in exponent form (ulp 2^-7 relative).
        assert_eq!(display(BF16, 0x3fc0), "1.5");
        assert_eq!(display(BF16, 0x7180), "1.27e30");
        assert_eq!(display(F64, 0x3fb9_9999_9999_999a), "0.1");
        assert_eq!(display(F64, 0x0000_0000_0000_0001), "5e-324");
        assert_eq!(display(F64, 0x4415_af1d_78b5_8c40), "1e20");
        assert_eq!(display(F64, 0x3ee4_f8b5_88e3_68f1), "0.00001");
    }

    #[test]
    fn parse_forms() {
        assert_eq!(parse(F32, "1.5"), Some(0x3fc0_0000));
        assert_eq!(parse(F32, "-0.0"), Some(0x8000_0000));
        assert_eq!(parse(F32, "0"), Some(0));
        assert_eq!(parse(F32, "+2"), Some(0x4000_0000));
        assert_eq!(parse(F32, "-2.5e3"), Some(0xc51c_4000));
        assert_eq!(parse(F32, ".5"), Some(0x3f00_0000));
        assert_eq!(parse(F32, "2."), Some(0x4000_0000));
        // 1e-40 is an f32 subnormal: 1e-40 / 2^-149 = 71362.38 -> 71362 = 0x116c2.
        assert_eq!(parse(F32, "1e-40"), Some(0x0001_16c2));
        assert_eq!(parse(F32, "1e39"), Some(0x7f80_0000));
        assert_eq!(parse(F32, "inf"), Some(0x7f80_0000));
        assert_eq!(parse(F32, "+inf"), Some(0x7f80_0000));
        assert_eq!(parse(F32, "-Infinity"), Some(0xff80_0000));
        assert_eq!(parse(F32, "nan"), Some(0x7fc0_0000));
        assert_eq!(parse(F32, "-nan"), Some(0xffc0_0000));
        assert_eq!(parse(F16, "nan"), Some(0x7e00));
        assert_eq!(parse(F32, "0x7fc00001"), Some(0x7fc0_0001));
        assert_eq!(parse(F16, "0x0001"), Some(0x0001));
        assert_eq!(parse(F16, "0x10000"), None);
        assert_eq!(parse(F16, "-0x1"), None);
        assert_eq!(parse(F32, "qnan(0x1)"), Some(0x7fc0_0001));
        assert_eq!(parse(F32, "-snan(0x2)"), Some(0xff80_0002));
        assert_eq!(parse(F32, "snan(0x0)"), None);
        assert_eq!(parse(F32, "qnan(0x400000)"), None);
        for garbage in [
            "", "-", "abc", "1.5.2", "1e", "e5", ".", "1e+", "0x", "0xg", "1 2", "nan1",
        ] {
            assert_eq!(parse(F32, garbage), None, "{garbage:?}");
        }
        // Huge exponents overflow to inf or underflow to zero; non-ASCII input is garbage.
        assert_eq!(parse(F32, "1e99999999999999999999"), Some(0x7f80_0000));
        assert_eq!(parse(F16, "-1e-99999999999999999999"), Some(0x8000));
        assert_eq!(parse(F32, "1\u{e9}5"), None);
        assert_eq!(parse(F32, "\u{e9}"), None);
        // f16: 1.5 = 0x3e00; 65520 is the tie between 65504 and 2^16: even -> inf.
        assert_eq!(parse(F16, "1.5"), Some(0x3e00));
        assert_eq!(parse(F16, "65519"), Some(0x7bff));
        assert_eq!(parse(F16, "65520"), Some(0x7c00));
        // 2^-25 is half the smallest subnormal: tie to even -> +0; a bit more -> 0x0001.
        assert_eq!(parse(F16, "2.98023223876953125e-8"), Some(0));
        assert_eq!(parse(F16, "3e-8"), Some(1));
        // bf16 1 + 2^-8 is the tie between 1.0 and 1 + 2^-7: even -> 1.0 (0x3f80).
        assert_eq!(parse(BF16, "1.00390625"), Some(0x3f80));
        assert_eq!(parse(BF16, "1.01171875"), Some(0x3f82));
        assert_eq!(parse(F64, "0.1"), Some(0x3fb9_9999_9999_999a));
    }

    #[test]
    fn display_round_trips() {
        // Every f16 and bf16, and a sample of f32/f64 patterns.
        for f in [F16, BF16] {
            for x in 0..=0xffffu64 {
                assert_eq!(
                    parse(f, &display(f, x)),
                    Some(x),
                    "{f:?} {x:#x} {}",
                    display(f, x)
                );
            }
        }
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            assert_eq!(parse(F64, &display(F64, s)), Some(s));
            let x = s >> 32;
            assert_eq!(parse(F32, &display(F32, x)), Some(x));
        }
    }
}
