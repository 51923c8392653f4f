//! Float text against independent code: decimal parsing (through f64, round to nearest even)
//! against rustc_apfloat's f64 -> narrow conversion and, where it is exact, half's.
//!
//! half 2.7.1's software `from_f64` looks only at the high 32 bits of the f64 (its sticky bit
//! ignores the low 32 fraction bits), so a value just above a tie whose excess lies in those
//! low bits rounds to even instead of up (e.g. bf16 from 0x47501000b47487fa gives 0x7a80; the
//! correctly rounded result is 0x7a81). half is compared only where those bits are zero.

use atomcts_reference::float::{self, Format};
use rustc_apfloat::Float as _;
use rustc_apfloat::FloatConvert;
use rustc_apfloat::ieee::{BFloat, Double, Half};

#[test]
fn half_from_f64_ignores_the_low_word() {
    // The case above, so that a fixed half shows up here (then the filter can go).
    let v = f64::from_bits(0x4750_1000_b474_87fa);
    assert_eq!(half::bf16::from_f64(v).to_bits(), 0x7a80);
    assert_eq!(float::parse(Format::BF16, &format!("{v:e}")), Some(0x7a81));
}

#[test]
fn parse_matches_from_f64() {
    let mut s = 0x0bad_cafe_dead_beefu64;
    let mut checked = 0;
    for i in 0..100_000u32 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        // Magnitudes around the narrow formats' ranges: 2^-140 .. 2^130, often near a tie
        // (low f64 fraction bits cleared).
        let exp = 1023 - 140 + (s >> 52) % 270;
        let mut frac = s & ((1 << 52) - 1);
        if i % 2 == 0 {
            frac &= !((1 << 40) - 1);
        }
        let v = f64::from_bits((s & (1 << 63)) | (exp << 52) | frac);
        let text = format!("{v:e}");
        let f16 = float::parse(Format::F16, &text);
        let bf16 = float::parse(Format::BF16, &text);
        let x = <Double as rustc_apfloat::Float>::from_bits(u128::from(v.to_bits()));
        let apfloat_f16: Half = x.convert(&mut false).value;
        let apfloat_bf16: BFloat = x.convert(&mut false).value;
        assert_eq!(f16, Some(apfloat_f16.to_bits() as u64), "f16 {text}");
        assert_eq!(bf16, Some(apfloat_bf16.to_bits() as u64), "bf16 {text}");
        if v.to_bits() & 0xffff_ffff == 0 {
            assert_eq!(
                f16,
                Some(u64::from(half::f16::from_f64(v).to_bits())),
                "f16 {text}"
            );
            assert_eq!(
                bf16,
                Some(u64::from(half::bf16::from_f64(v).to_bits())),
                "bf16 {text}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 100_000);
}
