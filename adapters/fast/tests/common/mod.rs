//! Shared generators for the differential tests: a seeded PRNG, edge values per type, and
//! environments.
#![allow(dead_code)]

use atomcts_reference::error::ModelError;
use atomcts_reference::float::{
    DenormRule, Format, FtzMode, MinMaxRules, NanRule, Round, ZeroRule,
};
use atomcts_reference::ir::{AtomicOp, Compare, Env, NanBits};
use atomcts_reference::semantics;
use atomcts_reference::semantics::Effect;
use atomcts_reference::types::DataType;

/// SplitMix64 (Steele, Lea, Flood 2014): small, seeded, good enough for test inputs.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bool(&mut self) -> bool {
        self.next() & 1 == 1
    }

    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn fmt_consts(f: Format) -> (u64, u64, u64, u64) {
    // (sign, exp mask, frac mask, frac bits)
    (
        f.sign_mask(),
        f.exp_mask(),
        f.frac_mask(),
        u64::from(f.frac_bits()),
    )
}

/// Edge values of a float format: zeros, subnormals, normals at the ends of the range, 1 and
/// its neighbours, half and quarter ulps of 1, infinities, quiet and signaling NaNs with
/// payloads, all with both signs.
pub fn float_edges(f: Format) -> Vec<u64> {
    let (sign, exp, frac, fb) = fmt_consts(f);
    let bias = (1u64 << (f.exp_bits() - 1)) - 1;
    let one = bias << fb;
    let q = f.quiet_bit();
    let pos = [
        0,
        1,
        2,
        3,
        frac >> 1,
        frac,
        frac - 1,
        1 << fb,
        (1 << fb) | 1,
        (2 << fb) | frac,
        one,
        one + 1,
        one - 1,
        one | (frac >> 1),
        one | (1 << (fb - 1)) | 1,
        (bias - fb - 1) << fb, // half an ulp of 1
        ((bias - fb - 1) << fb) | 1,
        (bias - fb - 2) << fb, // a quarter ulp of 1
        (bias - fb) << fb,     // an ulp of 1
        (bias + 1) << fb,      // 2
        ((bias + 1) << fb) | 1,
        exp - (1 << fb), // largest binade, fraction 0
        exp - 1,         // max finite
        exp - 2,
        exp - (frac >> 1) - 1,
        exp,               // inf
        exp | q,           // default NaN
        exp | q | 1,       // qNaN with payload
        exp | 1,           // sNaN
        exp | (frac >> 1), // sNaN with a big payload (quiet bit clear)
        exp | frac,        // qNaN all ones
    ];
    let mut v: Vec<u64> = Vec::new();
    for p in pos {
        let p = p & (exp | frac);
        if !v.contains(&p) {
            v.push(p);
        }
        if !v.contains(&(p | sign)) {
            v.push(p | sign);
        }
    }
    v
}

/// A random float of format `f`: mostly structured (exponents near the ends and the middle,
/// sparse fractions), sometimes raw bits.
pub fn float_random(rng: &mut Rng, f: Format) -> u64 {
    let (sign, exp, frac, fb) = fmt_consts(f);
    let emax = exp >> fb;
    if rng.below(4) == 0 {
        return rng.next() & f.mask();
    }
    let e = match rng.below(6) {
        0 => 0,
        1 => rng.below(3) + 1,
        2 => emax - rng.below(3).min(emax),
        3 => (emax / 2).saturating_sub(rng.below(8)) + rng.below(8),
        _ => rng.below(emax + 1),
    };
    let m = match rng.below(5) {
        0 => 0,
        1 => frac,
        2 => rng.next() & frac & !((1u64 << rng.below(fb)) - 1),
        3 => rng.below(8),
        _ => rng.next() & frac,
    };
    let s = if rng.bool() { sign } else { 0 };
    s | ((e << fb) & exp) | (m & frac)
}

/// An operand for `a` that makes `a + b` a tie or a near tie, or cancels `a` nearly.
pub fn float_partner(rng: &mut Rng, f: Format, a: u64) -> u64 {
    let (sign, exp, frac, fb) = fmt_consts(f);
    let ea = (a & exp) >> fb;
    let s = if rng.bool() { sign } else { 0 };
    match rng.below(4) {
        0 | 1 => {
            // Half an ulp of a (exponent ea - fb - 1), possibly with a low bit set or cleared.
            let eb = ea.saturating_sub(fb + rng.below(3));
            let m = match rng.below(3) {
                0 => 0,
                1 => 1,
                _ => rng.next() & frac,
            };
            s | ((eb << fb) & exp) | m
        }
        2 => {
            // -a plus or minus a few ulps: cancellation.
            let d = rng.below(5);
            let mag = (a & !sign & f.mask()).wrapping_add(d).wrapping_sub(2) & (exp | frac);
            ((a & sign) ^ sign) | mag
        }
        _ => float_random(rng, f),
    }
}

/// Edge values of an integer type of `w` bits.
pub fn int_edges(w: u32) -> Vec<u64> {
    let m = if w == 64 { u64::MAX } else { (1 << w) - 1 };
    let s = 1u64 << (w - 1);
    let mut v = vec![0, 1, 2, 5, 7, m, m - 1, s, s - 1, s + 1, m >> 2];
    v.dedup();
    v
}

/// An edge or random value of `ty` (bits above the width set sometimes, to test masking).
pub fn value(rng: &mut Rng, ty: DataType) -> u64 {
    let v = match ty.float_format() {
        Some(f) if ty == DataType::F16x2 => {
            let e = float_edges(f);
            let mut h = || {
                if rng.bool() {
                    rng.pick(&e)
                } else {
                    float_random(rng, f)
                }
            };
            h() | (h() << 16)
        }
        Some(f) => {
            if rng.bool() {
                rng.pick(&float_edges(f))
            } else {
                float_random(rng, f)
            }
        }
        None => {
            if rng.bool() {
                rng.pick(&int_edges(ty.bits()))
            } else if rng.bool() {
                rng.below(16)
            } else {
                rng.next()
            }
        }
    };
    if rng.below(16) == 0 {
        v | (rng.next() & !ty.mask())
    } else {
        v
    }
}

pub const FTZ_MODES: [FtzMode; 4] = [
    FtzMode::NONE,
    FtzMode::OUTPUTS,
    FtzMode {
        inputs: true,
        outputs: false,
    },
    FtzMode::BOTH,
];

pub const COMPARES: [Compare; 3] = [
    Compare::Bitwise,
    Compare::Numeric { daz: false },
    Compare::Numeric { daz: true },
];

/// Every MinMaxRules combination (27).
pub fn all_minmax() -> Vec<MinMaxRules> {
    let mut v = Vec::new();
    for nan in [
        NanRule::MinimumNumber,
        NanRule::IntelSnanWins,
        NanRule::SpirvEither,
    ] {
        for zero in [ZeroRule::Ordered, ZeroRule::Either, ZeroRule::Skylake] {
            for denormals in [
                DenormRule::CompareRaw,
                DenormRule::FlushBeforeCompare,
                DenormRule::Either,
            ] {
                v.push(MinMaxRules {
                    nan,
                    zero,
                    denormals,
                });
            }
        }
    }
    v
}

/// A uniformly random environment over the full product of the fields.
pub fn random_env(rng: &mut Rng) -> Env {
    Env {
        round: if rng.bool() {
            Round::NearestEven
        } else {
            Round::TowardZero
        },
        ftz: rng.pick(&FTZ_MODES),
        ftz_return: rng.bool(),
        nan: if rng.bool() {
            NanBits::Canonical
        } else {
            NanBits::Propagate
        },
        nan_exact: rng.bool(),
        minmax: rng.pick(&all_minmax()),
        compare: rng.pick(&COMPARES),
        weak: rng.bool(),
    }
}

/// The environments that matter for `op`: the full product of the fields it reads, with the
/// other fields random.
pub fn envs_for(rng: &mut Rng, op: AtomicOp) -> Vec<Env> {
    let mut v = Vec::new();
    match op {
        AtomicOp::Add | AtomicOp::Sub => {
            for round in [Round::NearestEven, Round::TowardZero] {
                for ftz in FTZ_MODES {
                    for ftz_return in [false, true] {
                        for nan in [NanBits::Propagate, NanBits::Canonical] {
                            v.push(Env {
                                round,
                                ftz,
                                ftz_return,
                                nan,
                                ..random_env(rng)
                            });
                        }
                    }
                }
            }
        }
        AtomicOp::Min | AtomicOp::Max => {
            for minmax in all_minmax() {
                for nan in [NanBits::Propagate, NanBits::Canonical] {
                    v.push(Env {
                        minmax,
                        nan,
                        ..random_env(rng)
                    });
                }
            }
        }
        AtomicOp::Cas => {
            for compare in COMPARES {
                for weak in [false, true] {
                    v.push(Env {
                        compare,
                        weak,
                        ..random_env(rng)
                    });
                }
            }
        }
        _ => {
            for compare in COMPARES {
                v.push(Env {
                    compare,
                    ..random_env(rng)
                });
            }
        }
    }
    v
}

/// The reference's pick: its first effect, or its error.
pub fn reference_first(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effect, ModelError> {
    semantics::apply(op, ty, env, old, src).map(|e| e[0])
}
