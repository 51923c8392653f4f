//! Float values as text: parsing of literals (case-file values, FORMAT-v0 "Values":
//! `"f32:1.5"`, `"f32:-0.0"`, `"f32:inf"`; MSL float operands). Raw bits (`"f16:0x0001"`) are
//! the runner's to read, and MSL reads `0x...` as an integer: neither comes here. Their human
//! display is the runner's (`atomcts::corpus::float_display`): no model semantics depends on it.

use super::arith::{bias, round_pack, unpack};
use super::{Class, Format, Round, classify};

/// Parses a value literal: a decimal or exponent float (`1.5`, `-0.0`, `1e-40`), `inf`,
/// `-inf` or `nan` (the default NaN). Decimal values round to nearest even.
///
/// Also accepted: a leading `+`, `infinity`, `-nan` (the default NaN with the sign set), and
/// the NaN forms the runner's display writes (`qnan(0x1)`, `-snan(0x2)`). Binary16 and bfloat16 decimals are rounded to binary64 first and then to
/// the format (both to nearest even); a decimal within a binary64 ulp of a tie of the narrow
/// format may therefore land on the tie and round to even where the exact value would not
/// (double rounding); the literals in case files are short and not affected in practice.
pub fn parse(f: Format, s: &str) -> Option<u64> {
    let s = s.trim();
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

/// The payload of `prefix` `0x...` `)`.
fn nan_payload(s: &str, prefix: &str) -> Option<u64> {
    let inner = s.strip_prefix(prefix)?.strip_suffix(')')?;
    let hex = inner.strip_prefix("0x")?;
    // `from_str_radix` alone would also take a `+` sign; an empty text fails there.
    if !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// An unsigned decimal `digits[.digits][e[+-]digits]` or `.digits[e...]`, rounded to nearest
/// even in `f`. Rust's float grammar (`f64::from_str`) is exactly this plus a leading sign and the
/// words `inf`, `infinity` and `nan`; a text that starts with a digit or `.` can be none of those,
/// so its first byte is all there is to check.
fn decimal(f: Format, s: &str) -> Option<u64> {
    if !s.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    match f {
        // Rust's float parsing is correctly rounded (roundTiesToEven), overflowing to inf.
        Format::F64 => Some(s.parse::<f64>().ok()?.to_bits()),
        Format::F32 => Some(u64::from(s.parse::<f32>().ok()?.to_bits())),
        Format::F16 | Format::BF16 => Some(from_f64(f, s.parse::<f64>().ok()?)),
    }
}

/// A nonnegative finite or infinite `f64` rounded to nearest even in `f` (§7.4 overflow to
/// inf, gradual underflow). `decimal` reads no sign, so the sign bit is clear.
fn from_f64(f: Format, v: f64) -> u64 {
    let bits = v.to_bits();
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

#[cfg(test)]
mod tests {
    use super::*;
    use Format::*;

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
        // Raw bits are not a literal here (the runner reads them; MSL's `0x` is an integer).
        assert_eq!(parse(F32, "0x7fc00001"), None);
        assert_eq!(parse(F32, "qnan(0x1)"), Some(0x7fc0_0001));
        assert_eq!(parse(F32, "-snan(0x2)"), Some(0xff80_0002));
        assert_eq!(parse(F32, "snan(0x0)"), None);
        assert_eq!(parse(F32, "qnan(0x400000)"), None);
        assert_eq!(parse(F32, "qnan(0x+1)"), None);
        assert_eq!(parse(F32, "qnan(0x)"), None);
        for garbage in [
            "",
            "-",
            "abc",
            "1.5.2",
            "1e",
            "e5",
            ".",
            "1e+",
            "0x",
            "0xg",
            "1 2",
            "nan1",
            // Rust's own float parser would take these (a second sign, a spelled-out name).
            "--5",
            "+-1.5",
            "-+inf",
            "--nan",
            "-+infinity",
            "1e5.5",
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
}
