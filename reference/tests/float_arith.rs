//! The float add/sub kernel against independent implementations: rustc_apfloat (LLVM's
//! APFloat port) for every format and both modelled roundings, the `half` crate through f32
//! for binary16 and bfloat16 (roundTiesToEven; f32 has at least 2p+2 bits for both, so the
//! double rounding f16 -> f32 sum -> f16 is innocuous), and the host's own f32/f64 addition.

use atomcts_reference::float::{self, Format, FtzMode, Round};
use rustc_apfloat::ieee::{BFloat, Double, Half, Single};

/// A fixed-seed xorshift64* generator: the sample is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Notable values of `f`: zeros, the subnormal and normal boundaries, one, the largest
/// finite value, infinities and NaNs of both kinds, each with both signs.
fn specials(f: Format) -> Vec<u64> {
    let one = (bias(f)) << f.frac_bits();
    let positive = [
        0,
        1,
        2,
        3,
        f.frac_mask() >> 1,
        f.frac_mask() - 1,
        f.frac_mask(),
        f.frac_mask() + 1,
        f.frac_mask() + 2,
        2 << f.frac_bits(),
        one - 1,
        one,
        one + 1,
        one + 3,
        one + (1 << f.frac_bits()),
        f.exp_mask() - 2,
        f.exp_mask() - 1,
        f.exp_mask() - (1 << f.frac_bits()),
        f.exp_mask(),
        f.exp_mask() | 1,
        f.exp_mask() | (f.quiet_bit() >> 1),
        f.default_nan(),
        f.default_nan() | 1,
        f.canonical_nan(),
    ];
    positive
        .iter()
        .flat_map(|&x| [x, x | f.sign_mask()])
        .collect()
}

fn bias(f: Format) -> u64 {
    (1 << (f.exp_bits() - 1)) - 1
}

/// An operand biased to the edges: specials, small subnormals, values near the extreme
/// exponents, and uniform bit patterns.
fn operand(rng: &mut Rng, f: Format, specials: &[u64]) -> u64 {
    let sign = if rng.next() & 1 == 1 {
        f.sign_mask()
    } else {
        0
    };
    let frac = rng.next() & f.frac_mask();
    let max_field = (f.exp_mask() >> f.frac_bits()) - 1;
    match rng.below(8) {
        0 => specials[rng.below(specials.len() as u64) as usize],
        1 => sign | frac, // subnormal or zero
        2 => sign | (rng.below(f.frac_bits() as u64 + 3) << f.frac_bits()) | frac, // low exps
        3 => sign | ((max_field - rng.below(f.frac_bits() as u64 + 3)) << f.frac_bits()) | frac,
        4 => sign | (rng.next() & 0xf) | (rng.below(max_field + 1) << f.frac_bits()),
        _ => rng.next() & f.mask(),
    }
}

/// The second operand, often related to the first: the negation (cancellation), a neighbour
/// in bits, or a value a few binades away (partial cancellation, rounding near the ulp).
fn partner(rng: &mut Rng, f: Format, a: u64, specials: &[u64]) -> u64 {
    match rng.below(8) {
        0 => float::neg(f, a),
        1 => float::neg(f, a.wrapping_add(rng.below(5)).wrapping_sub(2) & f.mask()),
        2 => a.wrapping_add(rng.below(9)).wrapping_sub(4) & f.mask(),
        3 => {
            let exp = (a & f.exp_mask()) >> f.frac_bits();
            let shift = rng.below(2 * f.frac_bits() as u64 + 6);
            let new_exp = exp.saturating_sub(shift);
            let sign = rng.next() & f.sign_mask();
            sign | (new_exp << f.frac_bits()) | (rng.next() & f.frac_mask())
        }
        _ => operand(rng, f, specials),
    }
}

fn apfloat_round(r: Round) -> rustc_apfloat::Round {
    match r {
        Round::NearestEven => rustc_apfloat::Round::NearestTiesToEven,
        Round::TowardZero => rustc_apfloat::Round::TowardZero,
    }
}

/// `a + b` (or `a - b`) by rustc_apfloat.
fn apfloat(f: Format, a: u64, b: u64, r: Round, subtract: bool) -> u64 {
    let r = apfloat_round(r);
    fn op<T: rustc_apfloat::Float>(a: u64, b: u64, r: rustc_apfloat::Round, subtract: bool) -> u64 {
        let (x, y) = (T::from_bits(u128::from(a)), T::from_bits(u128::from(b)));
        let v = if subtract {
            x.sub_r(y, r)
        } else {
            x.add_r(y, r)
        };
        v.value.to_bits() as u64
    }
    match f {
        Format::F16 => op::<Half>(a, b, r, subtract),
        Format::BF16 => op::<BFloat>(a, b, r, subtract),
        Format::F32 => op::<Single>(a, b, r, subtract),
        Format::F64 => op::<Double>(a, b, r, subtract),
    }
}

/// Our result must equal apfloat's bit for bit, except: inf - inf, where apfloat's NaN may
/// differ from our default NaN (we check ours exactly), and `a - NaN`, where apfloat negates
/// the NaN (ours propagates it as given, checked exactly).
fn check(f: Format, a: u64, b: u64, r: Round, subtract: bool) {
    let ours = if subtract {
        float::sub(f, a, b, r)
    } else {
        float::add(f, a, b, r)
    };
    let theirs = apfloat(f, a, b, r, subtract);
    let what = if subtract { "sub" } else { "add" };
    let (na, nb) = (float::is_nan(f, a), float::is_nan(f, b));
    if na {
        assert_eq!(ours, float::quiet(f, a), "{f:?} {what} {a:#x} {b:#x} {r:?}");
    } else if nb {
        assert_eq!(ours, float::quiet(f, b), "{f:?} {what} {a:#x} {b:#x} {r:?}");
    } else if float::is_nan(f, theirs) {
        assert_eq!(ours, f.default_nan(), "{f:?} {what} {a:#x} {b:#x} {r:?}");
    } else {
        assert_eq!(
            ours, theirs,
            "{f:?} {what} {a:#x} {b:#x} {r:?}: ours {ours:#x}, apfloat {theirs:#x}"
        );
    }
    // apfloat propagates the first NaN quieted too: for add the results agree exactly.
    if !subtract && (na || nb) {
        assert_eq!(ours, theirs, "{f:?} add NaN {a:#x} {b:#x}");
    }
}

const SAMPLES: usize = 150_000;

fn sampled_against_apfloat(f: Format, seed: u64) {
    let sp = specials(f);
    // Every pair of specials first.
    for &a in &sp {
        for &b in &sp {
            for r in [Round::NearestEven, Round::TowardZero] {
                check(f, a, b, r, false);
                check(f, a, b, r, true);
            }
        }
    }
    let mut rng = Rng(seed);
    for _ in 0..SAMPLES {
        let a = operand(&mut rng, f, &sp);
        let b = partner(&mut rng, f, a, &sp);
        for r in [Round::NearestEven, Round::TowardZero] {
            check(f, a, b, r, false);
            check(f, a, b, r, true);
            check(f, b, a, r, false);
        }
    }
}

#[test]
fn f16_add_sub_against_apfloat() {
    sampled_against_apfloat(Format::F16, 0x1234_5678_9abc_def1);
}

#[test]
fn bf16_add_sub_against_apfloat() {
    sampled_against_apfloat(Format::BF16, 0x0f1e_2d3c_4b5a_6978);
}

#[test]
fn f32_add_sub_against_apfloat() {
    sampled_against_apfloat(Format::F32, 0x9e37_79b9_7f4a_7c15);
}

#[test]
fn f64_add_sub_against_apfloat() {
    sampled_against_apfloat(Format::F64, 0xd1b5_4a32_d192_ed03);
}

/// Every f16 `a` against a fixed set of `b` (the specials plus a random sample), RNE, checked
/// against `half` through f32.
#[test]
fn f16_every_a_against_half() {
    let f = Format::F16;
    let mut bs = specials(f);
    let mut rng = Rng(0x5555_aaaa_1234_4321);
    bs.extend((0..16).map(|_| rng.next() & 0xffff));
    for a in 0..=u16::MAX {
        for &b in &bs {
            let x = half::f16::from_bits(a).to_f32();
            let y = half::f16::from_bits(b as u16).to_f32();
            let theirs = u64::from(half::f16::from_f32(x + y).to_bits());
            let ours = float::add(f, u64::from(a), b, Round::NearestEven);
            if float::is_nan(f, theirs) {
                assert!(float::is_nan(f, ours), "f16 {a:#x} + {b:#x}");
            } else {
                assert_eq!(ours, theirs, "f16 {a:#x} + {b:#x}");
            }
        }
    }
}

/// Every bf16 `a` against a fixed set of `b`, RNE, against `half` through f32.
#[test]
fn bf16_every_a_against_half() {
    let f = Format::BF16;
    let mut bs = specials(f);
    let mut rng = Rng(0x7777_1111_2222_3333);
    bs.extend((0..16).map(|_| rng.next() & 0xffff));
    for a in 0..=u16::MAX {
        for &b in &bs {
            let x = half::bf16::from_bits(a).to_f32();
            let y = half::bf16::from_bits(b as u16).to_f32();
            let theirs = u64::from(half::bf16::from_f32(x + y).to_bits());
            let ours = float::add(f, u64::from(a), b, Round::NearestEven);
            if float::is_nan(f, theirs) {
                assert!(float::is_nan(f, ours), "bf16 {a:#x} + {b:#x}");
            } else {
                assert_eq!(ours, theirs, "bf16 {a:#x} + {b:#x}");
            }
        }
    }
}

/// The host's f32 and f64 addition (roundTiesToEven) on random bit patterns.
#[test]
fn f32_f64_against_host() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    for _ in 0..200_000 {
        let (a, b) = (rng.next() & 0xffff_ffff, rng.next() & 0xffff_ffff);
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        let host = u64::from((x + y).to_bits());
        let ours = float::add(Format::F32, a, b, Round::NearestEven);
        if float::is_nan(Format::F32, host) {
            assert!(float::is_nan(Format::F32, ours));
        } else {
            assert_eq!(ours, host, "f32 {a:#x} + {b:#x}");
        }
        let (a, b) = (rng.next(), rng.next());
        let host = (f64::from_bits(a) - f64::from_bits(b)).to_bits();
        let ours = float::sub(Format::F64, a, b, Round::NearestEven);
        if float::is_nan(Format::F64, host) {
            assert!(float::is_nan(Format::F64, ours));
        } else {
            assert_eq!(ours, host, "f64 {a:#x} - {b:#x}");
        }
    }
}

/// The FTZ layer against apfloat on pre-flushed operands, with the result flushed by hand.
#[test]
fn ftz_layer_matches_flush_then_apfloat() {
    for &f in Format::ALL {
        let sp = specials(f);
        let mut rng = Rng(0xabcd_ef01_2345_6789 ^ u64::from(f.bits()));
        for _ in 0..20_000 {
            let a = operand(&mut rng, f, &sp);
            let b = partner(&mut rng, f, a, &sp);
            if float::is_nan(f, a) || float::is_nan(f, b) {
                continue;
            }
            for r in [Round::NearestEven, Round::TowardZero] {
                let flushed = apfloat(f, float::flush(f, a), float::flush(f, b), r, false);
                let expected = if float::is_nan(f, flushed) {
                    f.default_nan()
                } else {
                    float::flush(f, flushed)
                };
                assert_eq!(
                    float::add_ftz(f, a, b, r, FtzMode::BOTH),
                    expected,
                    "{f:?} {a:#x} + {b:#x} {r:?}"
                );
                let raw = apfloat(f, a, b, r, false);
                let expected = if float::is_nan(f, raw) {
                    f.default_nan()
                } else {
                    float::flush(f, raw)
                };
                assert_eq!(
                    float::add_ftz(f, a, b, r, FtzMode::OUTPUTS),
                    expected,
                    "{f:?} {a:#x} + {b:#x} {r:?} outputs"
                );
            }
        }
    }
}
