//! Float min/max against rustc_apfloat: with no NaN operand, the default rules (MinimumNumber,
//! Ordered zeros, raw subnormals) are IEEE 754-2019 minimum/maximum; with exactly one NaN
//! operand they are minNum/maxNum (the other operand).

use atomcts_reference::float::{self, Format, MinMaxRules};
use rustc_apfloat::Float;
use rustc_apfloat::ieee::{BFloat, Double, Half, Single};

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
}

/// (minimum, maximum, minNum, maxNum) by apfloat.
fn apfloat(f: Format, a: u64, b: u64) -> [u64; 4] {
    fn ops<T: Float>(a: u64, b: u64) -> [u64; 4] {
        let (x, y) = (T::from_bits(u128::from(a)), T::from_bits(u128::from(b)));
        [x.minimum(y), x.maximum(y), x.min(y), x.max(y)].map(|v| v.to_bits() as u64)
    }
    match f {
        Format::F16 => ops::<Half>(a, b),
        Format::BF16 => ops::<BFloat>(a, b),
        Format::F32 => ops::<Single>(a, b),
        Format::F64 => ops::<Double>(a, b),
    }
}

/// A value from a small pool of each class, so that equal values, zeros and NaNs meet often.
fn operand(rng: &mut Rng, f: Format) -> u64 {
    let sign = if rng.next() & 1 == 1 {
        f.sign_mask()
    } else {
        0
    };
    let pool = [
        0,
        1,
        f.frac_mask(),
        f.frac_mask() + 1,
        f.exp_mask() - 1,
        f.exp_mask(),
        f.exp_mask() | 1,
        f.default_nan(),
        rng.next() & f.frac_mask(),
        (f.exp_mask() >> 1) & f.exp_mask(),
    ];
    match rng.next() % 3 {
        0 => sign | pool[(rng.next() % pool.len() as u64) as usize],
        _ => rng.next() & f.mask() & !(rng.next() & 0xf),
    }
}

#[test]
fn default_rules_against_apfloat() {
    let r = MinMaxRules::default();
    let mut checked = 0;
    for &f in Format::ALL {
        let mut rng = Rng(0x1357_9bdf_2468_ace0 ^ u64::from(f.bits()));
        for _ in 0..100_000 {
            let (a, b) = (operand(&mut rng, f), operand(&mut rng, f));
            let [minimum, maximum, min_num, max_num] = apfloat(f, a, b);
            let (ours_min, ours_max) = (float::min(f, a, b, r), float::max(f, a, b, r));
            assert_eq!(ours_min.len(), 1);
            assert_eq!(ours_max.len(), 1);
            let (na, nb) = (float::is_nan(f, a), float::is_nan(f, b));
            if !na && !nb {
                assert_eq!(ours_min[0], minimum, "{f:?} min {a:#x} {b:#x}");
                assert_eq!(ours_max[0], maximum, "{f:?} max {a:#x} {b:#x}");
                checked += 1;
            } else if na != nb {
                assert_eq!(ours_min[0], min_num, "{f:?} min {a:#x} {b:#x}");
                assert_eq!(ours_max[0], max_num, "{f:?} max {a:#x} {b:#x}");
                checked += 1;
            } else {
                assert_eq!(ours_min[0], float::quiet(f, a));
                assert_eq!(ours_max[0], float::quiet(f, a));
            }
        }
    }
    assert!(checked > 300_000);
}
