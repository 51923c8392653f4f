//! Bit-exact IEEE 754 arithmetic on bit patterns for binary16, bfloat16, binary32 and binary64:
//! add and subtract with round-to-nearest-even or toward zero, our own flush-to-zero layer (no
//! crate models FTZ), IEEE comparisons, and the min/max rules the vendor documents disagree on
//! (A5-A7). Every function takes and returns the low `Format::bits` bits of a `u64`.
//!
//! NaN propagation here is IEEE's: a NaN result is the first NaN operand, quieted, or the
//! format's default NaN when an invalid operation (inf - inf) makes one. Vendor NaN encodings
//! (A4) are applied by the caller ([`crate::semantics`]).

use smallvec::SmallVec;

mod arith;
mod minmax;
mod text;

pub use arith::{add, add_ftz, sub, sub_ftz};
pub use minmax::{DenormRule, MinMaxRules, NanRule, ZeroRule, max, min};
pub use text::parse;

/// A float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// IEEE 754 binary16: 5 exponent bits, 10 fraction bits.
    F16,
    /// bfloat16: 8 exponent bits, 7 fraction bits.
    BF16,
    /// IEEE 754 binary32: 8 exponent bits, 23 fraction bits.
    F32,
    /// IEEE 754 binary64: 11 exponent bits, 52 fraction bits.
    F64,
}

impl Format {
    /// Every format.
    pub const ALL: &'static [Format] = &[Format::F16, Format::BF16, Format::F32, Format::F64];

    /// Total width in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Format::F16 | Format::BF16 => 16,
            Format::F32 => 32,
            Format::F64 => 64,
        }
    }

    /// Exponent field width.
    pub const fn exp_bits(self) -> u32 {
        match self {
            Format::F16 => 5,
            Format::BF16 | Format::F32 => 8,
            Format::F64 => 11,
        }
    }

    /// Fraction (trailing significand) field width.
    pub const fn frac_bits(self) -> u32 {
        self.bits() - 1 - self.exp_bits()
    }

    /// The sign bit.
    pub const fn sign_mask(self) -> u64 {
        1u64 << (self.bits() - 1)
    }

    /// The exponent field.
    pub const fn exp_mask(self) -> u64 {
        ((1u64 << self.exp_bits()) - 1) << self.frac_bits()
    }

    /// The fraction field.
    pub const fn frac_mask(self) -> u64 {
        (1u64 << self.frac_bits()) - 1
    }

    /// The quiet bit (most significant fraction bit).
    pub const fn quiet_bit(self) -> u64 {
        1u64 << (self.frac_bits() - 1)
    }

    /// All bits of the format.
    pub const fn mask(self) -> u64 {
        if self.bits() == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits()) - 1
        }
    }

    /// NVIDIA's canonical NaN: sign 0, exponent and fraction all ones (0x7fffffff for f32, per
    /// the CUDA Programming Guide, "Floating-Point Standard"; the other widths extend the rule).
    pub const fn canonical_nan(self) -> u64 {
        self.mask() >> 1
    }

    /// The default NaN of an invalid operation: positive, quiet, fraction otherwise zero
    /// (0x7e00, 0x7fc0, 0x7fc00000, 0x7ff8000000000000).
    pub const fn default_nan(self) -> u64 {
        self.exp_mask() | self.quiet_bit()
    }

    /// Stable lowercase name.
    pub const fn name(self) -> &'static str {
        match self {
            Format::F16 => "f16",
            Format::BF16 => "bf16",
            Format::F32 => "f32",
            Format::F64 => "f64",
        }
    }
}

/// Rounding direction of add/sub (IEEE 754-2019 §4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Round {
    /// roundTiesToEven.
    NearestEven,
    /// roundTowardZero.
    TowardZero,
}

/// Flush-to-zero controls: subnormal inputs (DAZ) and subnormal results (FTZ) become a zero of
/// the same sign. Kept separate because hardware differs (x86 DAZ versus ARM FZ).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FtzMode {
    /// Flush subnormal operands before the operation.
    pub inputs: bool,
    /// Flush a subnormal result after rounding.
    pub outputs: bool,
}

impl FtzMode {
    /// No flushing.
    pub const NONE: FtzMode = FtzMode {
        inputs: false,
        outputs: false,
    };
    /// Flush inputs and results.
    pub const BOTH: FtzMode = FtzMode {
        inputs: true,
        outputs: true,
    };
    /// Flush results only.
    pub const OUTPUTS: FtzMode = FtzMode {
        inputs: false,
        outputs: true,
    };
}

/// IEEE 754 class of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// +0 or -0.
    Zero,
    /// Nonzero with a zero exponent field.
    Subnormal,
    /// Finite, nonzero exponent field.
    Normal,
    /// +inf or -inf.
    Infinite,
    /// NaN with the quiet bit set.
    QuietNan,
    /// NaN with the quiet bit clear.
    SignalingNan,
}

/// The class of `x`.
pub fn classify(f: Format, x: u64) -> Class {
    let x = x & f.mask();
    let exp = x & f.exp_mask();
    let frac = x & f.frac_mask();
    if exp == f.exp_mask() {
        if frac == 0 {
            Class::Infinite
        } else if frac & f.quiet_bit() != 0 {
            Class::QuietNan
        } else {
            Class::SignalingNan
        }
    } else if exp == 0 {
        if frac == 0 {
            Class::Zero
        } else {
            Class::Subnormal
        }
    } else {
        Class::Normal
    }
}

/// Whether `x` is a NaN.
pub fn is_nan(f: Format, x: u64) -> bool {
    matches!(classify(f, x), Class::QuietNan | Class::SignalingNan)
}

/// Whether `x` is a signaling NaN.
pub fn is_snan(f: Format, x: u64) -> bool {
    classify(f, x) == Class::SignalingNan
}

/// Whether `x` is subnormal.
pub fn is_subnormal(f: Format, x: u64) -> bool {
    classify(f, x) == Class::Subnormal
}

/// Whether `x` is +0 or -0.
pub fn is_zero(f: Format, x: u64) -> bool {
    classify(f, x) == Class::Zero
}

/// Whether the sign bit is set.
pub fn is_negative(f: Format, x: u64) -> bool {
    x & f.sign_mask() != 0
}

/// The NaN `x` quieted: its quiet bit set, sign and payload kept (IEEE 754-2019 §6.2.3). Every
/// caller has already found `x` to be a NaN.
pub fn quiet(f: Format, x: u64) -> u64 {
    (x | f.quiet_bit()) & f.mask()
}

/// `x` with the sign flipped (also for NaN).
pub fn neg(f: Format, x: u64) -> u64 {
    (x ^ f.sign_mask()) & f.mask()
}

/// Flush-to-zero of one value: a subnormal becomes the zero of its sign; anything else is
/// returned unchanged.
pub fn flush(f: Format, x: u64) -> u64 {
    if is_subnormal(f, x) {
        x & f.sign_mask()
    } else {
        x & f.mask()
    }
}

/// IEEE 754 `compareQuietEqual`: false if either is NaN; +0 equals -0.
pub fn eq(f: Format, a: u64, b: u64) -> bool {
    if is_nan(f, a) || is_nan(f, b) {
        return false;
    }
    if is_zero(f, a) && is_zero(f, b) {
        return true;
    }
    a & f.mask() == b & f.mask()
}

/// IEEE 754 `compareQuietLess` for two numbers: `a < b`; -0 is not less than +0. Neither may be
/// a NaN: the one caller (`minmax::decide`) settles NaN operands first, by A5's rule.
pub fn lt(f: Format, a: u64, b: u64) -> bool {
    debug_assert!(!is_nan(f, a) && !is_nan(f, b), "lt of a NaN");
    if is_zero(f, a) && is_zero(f, b) {
        return false;
    }
    let (a, b) = (a & f.mask(), b & f.mask());
    let (na, nb) = (is_negative(f, a), is_negative(f, b));
    let (ma, mb) = (a & !f.sign_mask(), b & !f.sign_mask());
    match (na, nb) {
        (false, false) => ma < mb,
        (true, true) => ma > mb,
        (true, false) => true,
        (false, true) => false,
    }
}

/// Several results a rule allows; the first is the reference's pick.
pub type Choices = SmallVec<[u64; 4]>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_and_default_nans() {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, ["f16", "bf16", "f32", "f64"]);
        let nans: Vec<u64> = Format::ALL.iter().map(|f| f.default_nan()).collect();
        assert_eq!(nans, [0x7e00, 0x7fc0, 0x7fc0_0000, 0x7ff8_0000_0000_0000]);
    }
}
