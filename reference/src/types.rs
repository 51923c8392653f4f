//! Value types of the IR and of registers. Values are bit patterns: a `u64` holding the low
//! [`DataType::bits`] bits, little-endian in memory.

use crate::float::Format;
use std::fmt;

/// The type of the memory datum an atomic operation works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    /// Unsigned 16-bit (vISA `.16` integer ops).
    U16,
    /// Signed 16-bit (vISA `.16` IMIN/IMAX).
    S16,
    /// Unsigned 32-bit.
    U32,
    /// Signed 32-bit.
    S32,
    /// Unsigned 64-bit.
    U64,
    /// Signed 64-bit.
    S64,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// Two binary16 halves in one 32-bit word, low half first; each half is its own element.
    F16x2,
}

impl DataType {
    /// Every type.
    pub const ALL: &'static [DataType] = &[
        DataType::U16,
        DataType::S16,
        DataType::U32,
        DataType::S32,
        DataType::U64,
        DataType::S64,
        DataType::F16,
        DataType::BF16,
        DataType::F32,
        DataType::F64,
        DataType::F16x2,
    ];

    /// Width in bits of the whole datum.
    pub fn bits(self) -> u32 {
        match self {
            DataType::U16 | DataType::S16 | DataType::F16 | DataType::BF16 => 16,
            DataType::U32 | DataType::S32 | DataType::F32 | DataType::F16x2 => 32,
            DataType::U64 | DataType::S64 | DataType::F64 => 64,
        }
    }

    /// Width in bytes (the natural alignment).
    pub fn bytes(self) -> u64 {
        u64::from(self.bits() / 8)
    }

    /// All-ones mask of the datum's width.
    pub fn mask(self) -> u64 {
        mask(self.bits())
    }

    /// Whether integer comparisons are signed.
    pub fn is_signed(self) -> bool {
        matches!(self, DataType::S16 | DataType::S32 | DataType::S64)
    }

    /// The float format of the datum (of each half for [`DataType::F16x2`]), if it is a float.
    pub fn float_format(self) -> Option<Format> {
        match self {
            DataType::F16 | DataType::F16x2 => Some(Format::F16),
            DataType::BF16 => Some(Format::BF16),
            DataType::F32 => Some(Format::F32),
            DataType::F64 => Some(Format::F64),
            _ => None,
        }
    }

    /// The stable lowercase name (`u32`, `f16x2`, ...), as in typed case values.
    pub fn name(self) -> &'static str {
        match self {
            DataType::U16 => "u16",
            DataType::S16 => "s16",
            DataType::U32 => "u32",
            DataType::S32 => "s32",
            DataType::U64 => "u64",
            DataType::S64 => "s64",
            DataType::F16 => "f16",
            DataType::BF16 => "bf16",
            DataType::F32 => "f32",
            DataType::F64 => "f64",
            DataType::F16x2 => "f16x2",
        }
    }

    /// Inverse of [`DataType::name`].
    pub fn from_name(name: &str) -> Option<DataType> {
        DataType::ALL.iter().copied().find(|t| t.name() == name)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// All-ones mask of `bits` bits (`bits` up to 64).
pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Sign-extends the low `bits` bits of `v` to an `i64`.
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits == 0 {
        0
    } else if bits >= 64 {
        v as i64
    } else {
        let shift = 64 - bits;
        ((v << shift) as i64) >> shift
    }
}

/// How the bits of a register element are meant (for printing and NaN-class comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Raw bits (SASS registers).
    Bits,
    /// Unsigned integer.
    Unsigned,
    /// Signed integer.
    Signed,
    /// IEEE or bfloat float.
    Float,
    /// A predicate (1 bit).
    Bool,
}

/// The element type of a register or variable: a width and a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ElemType {
    /// Width in bits: 1, 8, 16, 32 or 64.
    pub bits: u8,
    /// How the bits are meant.
    pub kind: Kind,
}

impl ElemType {
    /// A SASS general register: 32 raw bits.
    pub const B32: ElemType = ElemType {
        bits: 32,
        kind: Kind::Bits,
    };
    /// A predicate.
    pub const BOOL: ElemType = ElemType {
        bits: 1,
        kind: Kind::Bool,
    };
    /// vISA `ub`.
    pub const UB: ElemType = ElemType {
        bits: 8,
        kind: Kind::Unsigned,
    };
    /// vISA `uw`.
    pub const UW: ElemType = ElemType {
        bits: 16,
        kind: Kind::Unsigned,
    };
    /// vISA `ud`.
    pub const UD: ElemType = ElemType {
        bits: 32,
        kind: Kind::Unsigned,
    };
    /// vISA `uq`.
    pub const UQ: ElemType = ElemType {
        bits: 64,
        kind: Kind::Unsigned,
    };
    /// vISA `b`.
    pub const B: ElemType = ElemType {
        bits: 8,
        kind: Kind::Signed,
    };
    /// vISA `w`.
    pub const W: ElemType = ElemType {
        bits: 16,
        kind: Kind::Signed,
    };
    /// vISA `d`.
    pub const D: ElemType = ElemType {
        bits: 32,
        kind: Kind::Signed,
    };
    /// vISA `q`.
    pub const Q: ElemType = ElemType {
        bits: 64,
        kind: Kind::Signed,
    };
    /// vISA `hf` (binary16).
    pub const HF: ElemType = ElemType {
        bits: 16,
        kind: Kind::Float,
    };
    /// vISA `f` (binary32).
    pub const F: ElemType = ElemType {
        bits: 32,
        kind: Kind::Float,
    };
    /// vISA `df` (binary64).
    pub const DF: ElemType = ElemType {
        bits: 64,
        kind: Kind::Float,
    };

    /// All-ones mask of the element width.
    pub fn mask(self) -> u64 {
        mask(u32::from(self.bits))
    }

    /// The vISA type name (`ud`, `hf`, ...), or a descriptive name for other kinds.
    pub fn visa_name(self) -> &'static str {
        match (self.kind, self.bits) {
            (Kind::Unsigned, 8) => "ub",
            (Kind::Unsigned, 16) => "uw",
            (Kind::Unsigned, 32) => "ud",
            (Kind::Unsigned, 64) => "uq",
            (Kind::Signed, 8) => "b",
            (Kind::Signed, 16) => "w",
            (Kind::Signed, 32) => "d",
            (Kind::Signed, 64) => "q",
            (Kind::Float, 16) => "hf",
            (Kind::Float, 32) => "f",
            (Kind::Float, 64) => "df",
            (Kind::Bool, _) => "bool",
            (Kind::Bits, 32) => "b32",
            _ => "?",
        }
    }

    /// Inverse of [`ElemType::visa_name`] for the vISA types.
    pub fn from_visa_name(name: &str) -> Option<ElemType> {
        Some(match name {
            "ub" => ElemType::UB,
            "uw" => ElemType::UW,
            "ud" => ElemType::UD,
            "uq" => ElemType::UQ,
            "b" => ElemType::B,
            "w" => ElemType::W,
            "d" => ElemType::D,
            "q" => ElemType::Q,
            "hf" => ElemType::HF,
            "f" => ElemType::F,
            "df" => ElemType::DF,
            _ => return None,
        })
    }
}

/// A memory address space the IR addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Space {
    /// Global memory: SASS generic addresses outside the windows, vISA T255 (stateless) and
    /// SVM, MSL `device`.
    Global,
    /// On-chip shared memory: vISA T0 (SLM), MSL `threadgroup`.
    Shared,
}

impl Space {
    /// Stable lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
        }
    }
}
