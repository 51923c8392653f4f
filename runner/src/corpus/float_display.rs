//! Float bit patterns for people (reports, findings, `value` rendering): `1.5`, `-0`, `inf`,
//! `qnan(0x1)`, subnormals in exponent form. The shortest decimal that
//! [`atomcts_reference::float::parse`] reads back as the same bits, so a displayed value pasted
//! into a case file means those bits. Presentation only: judging compares bits, never this text.

use atomcts_reference::float::{Class, Format, classify, is_negative, parse};

/// The value as an `f64`: exact for every format (binary16 and bfloat16 through `half`), NaN
/// payloads aside.
fn to_f64(f: Format, x: u64) -> f64 {
    match f {
        Format::F16 => half::f16::from_bits(x as u16).to_f64(),
        Format::BF16 => half::bf16::from_bits(x as u16).to_f64(),
        Format::F32 => f64::from(f32::from_bits(x as u32)),
        Format::F64 => f64::from_bits(x),
    }
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
