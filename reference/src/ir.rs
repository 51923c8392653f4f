//! The dialect-neutral IR: lane-level memory operations (and SIMD-group data exchange) that the
//! three front ends lower to. One instruction lowers to one [`Instr`] plus the register writes
//! that do not depend on memory.

use crate::float::{FtzMode, MinMaxRules, Round};
use crate::outcome::FaultClass;
use crate::types::{DataType, Space};

macro_rules! atomic_ops {
    ($( $(#[$doc:meta])* $Var:ident = $name:literal, sources = $n:literal; )*) => {
        /// One atomic read-modify-write operation. `old` is the memory value before, `src[0]`
        /// and `src[1]` the operands in canonical order; the [`DataType`] decides integer
        /// signedness and float format. Declared once; names, dispatch and generators derive
        /// from this table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AtomicOp {
            $( $(#[$doc])* $Var, )*
        }

        impl AtomicOp {
            /// Every op.
            pub const ALL: &'static [AtomicOp] = &[ $( AtomicOp::$Var, )* ];

            /// Stable name.
            pub fn name(self) -> &'static str {
                match self { $( AtomicOp::$Var => $name, )* }
            }

            /// Inverse of [`AtomicOp::name`].
            pub fn from_name(s: &str) -> Option<AtomicOp> {
                match s { $( $name => Some(AtomicOp::$Var), )* _ => None }
            }

            /// How many of `src` the op reads.
            pub fn sources(self) -> usize {
                match self { $( AtomicOp::$Var => $n, )* }
            }
        }
    };
}

atomic_ops! {
    /// `new = old + src0` (wrapping; float add for float types).
    Add = "add", sources = 1;
    /// `new = old - src0` (wrapping; float subtract for float types).
    Sub = "sub", sources = 1;
    /// Plain increment: `new = old + 1` modulo 2^w (vISA INC; A10).
    Inc = "inc", sources = 0;
    /// Plain decrement: `new = old - 1` modulo 2^w (vISA DEC; A10).
    Dec = "dec", sources = 0;
    /// Bounded increment: `new = (old >= src0) ? 0 : old + 1` (SASS/PTX/CUDA INC; A10).
    IncBounded = "inc_bounded", sources = 1;
    /// Bounded decrement: `new = (old == 0 || old > src0) ? src0 : old - 1` (SASS DEC; A10).
    DecBounded = "dec_bounded", sources = 1;
    /// Pre-decrement: `new = old - 1`, returns `new` (vISA PREDEC; A11).
    PreDec = "predec", sources = 0;
    /// `new = min(old, src0)`: signed or unsigned by type, float rules for float types.
    Min = "min", sources = 1;
    /// `new = max(old, src0)`.
    Max = "max", sources = 1;
    /// `new = old & src0`.
    And = "and", sources = 1;
    /// `new = old | src0`.
    Or = "or", sources = 1;
    /// `new = old ^ src0`.
    Xor = "xor", sources = 1;
    /// `new = src0`.
    Exch = "exch", sources = 1;
    /// Compare and swap: `new = (old == src0) ? src1 : old` with `src0` the comparand and
    /// `src1` the new value (canonical order; front ends map their operand slots, A8). The
    /// compare is bitwise or numeric per [`Env::compare`] (A9). With [`Env::weak`], a spurious
    /// failure is also allowed.
    Cas = "cas", sources = 2;
    /// Plain store of `src0` with no return value (SVM_SCATTER4_SCALED).
    Store = "store", sources = 1;
}

/// How a compare-and-swap compares (A9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compare {
    /// Bit equality.
    Bitwise,
    /// IEEE equality of the float type: NaN never equal, -0 == +0; `daz` flushes subnormal
    /// operands first (A7).
    Numeric {
        /// Flush subnormals before comparing.
        daz: bool,
    },
}

/// What NaN bits a float operation produces (A4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NanBits {
    /// The canonical NaN of [`crate::float::Format::canonical_nan`].
    Canonical,
    /// A quieted input NaN (IEEE propagation), or the default NaN if none.
    Propagate,
}

/// The floating-point and compare environment of one instruction, resolved from the profile
/// by the front end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Env {
    /// Rounding of float add/sub.
    pub round: Round,
    /// Flushing of float add/sub inputs and results.
    pub ftz: FtzMode,
    /// Whether the returned old value of a flushing add is flushed too (A3).
    pub ftz_return: bool,
    /// NaN bits produced.
    pub nan: NanBits,
    /// Whether NaN results are checked bit-exactly (false: any NaN of the type matches, A4).
    pub nan_exact: bool,
    /// Float min/max rules (A5-A7).
    pub minmax: MinMaxRules,
    /// CAS compare (A9).
    pub compare: Compare,
    /// Compare-exchange may fail spuriously (MSL `atomic_compare_exchange_weak_explicit`).
    pub weak: bool,
}

impl Env {
    /// The part of the environment every dialect takes from the shared float knobs: NaN bits
    /// (`float.nan_result`, A4), min/max rules (`float.minmax_*`, A5-A7) and the returned value
    /// of a flushing add (`float.ftz_return`, A3). Rounding, flushing and compare are the
    /// front end's to set.
    pub fn from_profile(p: &crate::knobs::Profile) -> Env {
        use crate::float::{DenormRule, NanRule, ZeroRule};
        use crate::knobs::{FtzReturn, MinMaxDenormals, MinMaxNan, MinMaxZero, NanResult};
        let (nan, nan_exact) = match p.float_nan_result {
            NanResult::Canonical | NanResult::CanonicalSingle => (NanBits::Canonical, true),
            NanResult::Propagate => (NanBits::Propagate, true),
            NanResult::Any => (NanBits::Propagate, false),
        };
        let minmax = MinMaxRules {
            nan: match p.float_minmax_nan {
                MinMaxNan::MinimumNumber => NanRule::MinimumNumber,
                MinMaxNan::IntelSnanWins => NanRule::IntelSnanWins,
                MinMaxNan::SpirvEither => NanRule::SpirvEither,
            },
            zero: match p.float_minmax_signed_zero {
                MinMaxZero::Ordered => ZeroRule::Ordered,
                MinMaxZero::Either => ZeroRule::Either,
                MinMaxZero::Skylake => ZeroRule::Skylake,
            },
            denormals: match p.float_minmax_denormals {
                MinMaxDenormals::CompareRaw => DenormRule::CompareRaw,
                MinMaxDenormals::FlushBeforeCompare => DenormRule::FlushBeforeCompare,
                MinMaxDenormals::Either => DenormRule::Either,
            },
        };
        Env {
            nan,
            nan_exact,
            minmax,
            ftz_return: p.float_ftz_return == FtzReturn::Flushed,
            ..Env::default()
        }
    }
}

impl Default for Env {
    fn default() -> Env {
        Env {
            round: Round::NearestEven,
            ftz: FtzMode::NONE,
            ftz_return: false,
            nan: NanBits::Propagate,
            nan_exact: true,
            minmax: MinMaxRules::default(),
            compare: Compare::Bitwise,
            weak: false,
        }
    }
}

/// What a misaligned address does (A15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Misaligned {
    /// A `misaligned_address` fault.
    Fault,
    /// The low address bits are ignored.
    MaskLowBits,
    /// The outcome is unspecified.
    Unspecified,
}

/// What an access outside allocated memory does (A14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutOfRange {
    /// An `address_out_of_range` fault.
    Fault,
    /// Reads return zero and writes are dropped (Intel out-of-bound rule).
    ReadZeroDropWrite,
    /// The outcome is unspecified.
    Unspecified,
}

/// The order of accesses to one address within one instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SameAddress {
    /// Serialized in an order the documents do not fix: any order is allowed (A19).
    AnyOrder,
    /// In the order of [`MemInstr::accesses`] (A28 `program_order`).
    ProgramOrder,
}

/// Part of a register element that receives bits of a returned value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RegField {
    /// Register or variable name.
    pub name: String,
    /// Element index.
    pub idx: u32,
    /// Lowest bit of the element written.
    pub lo: u32,
    /// How many bits are written; the field takes the returned value's next `bits` bits.
    pub bits: u32,
    /// What the element's bits above the field become.
    pub upper: Upper,
}

/// The element bits above a written field (vISA `.16` writeback, A12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Upper {
    /// Left as they were.
    Keep,
    /// Zero-extended up to `width` bits.
    Zero {
        /// Element width.
        width: u32,
    },
    /// Sign-extended up to `width` bits.
    Sign {
        /// Element width.
        width: u32,
    },
    /// Unspecified up to `width` bits: written as zero, not checked.
    Unspecified {
        /// Element width.
        width: u32,
    },
}

/// Where an access's returned value goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dest {
    /// Nowhere (SASS `RZ`, vISA `V0`, a statement with no result).
    None,
    /// Into these fields, low bits of the value first.
    Fields(Vec<RegField>),
    /// MSL `atomic_compare_exchange_weak_explicit`: the success flag (`bool`) into `ok` (if
    /// kept), and on failure the old value into `expected`.
    CasWeak {
        /// Where the returned `bool` goes.
        ok: Option<RegField>,
        /// The `expected` operand, which receives the old value on failure.
        expected: RegField,
    },
}

/// One lane's (or one channel's) access.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Access {
    /// The lane (SASS/MSL lane, vISA channel) this access belongs to; for reports.
    pub lane: u32,
    /// Byte address in [`MemInstr::space`].
    pub addr: u64,
    /// Operands in canonical order; unused ones are zero.
    pub src: [u64; 2],
    /// Where the returned value goes.
    pub dst: Dest,
    /// A fault the front end already knows of (SASS address outside global memory).
    pub fault: Option<FaultClass>,
}

/// One memory instruction: the same op on every access.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemInstr {
    /// The operation.
    pub op: AtomicOp,
    /// The datum type.
    pub ty: DataType,
    /// The memory addressed.
    pub space: Space,
    /// Float and compare environment.
    pub env: Env,
    /// Misaligned addresses.
    pub misaligned: Misaligned,
    /// Addresses outside allocated memory.
    pub out_of_range: OutOfRange,
    /// Accesses to one address.
    pub same_address: SameAddress,
    /// The enabled accesses, in program order (ascending lane, or channel-major for SCATTER4).
    pub accesses: Vec<Access>,
}

/// Where a SIMD-group lane's result comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// `data` of this lane.
    Data(u32),
    /// `fill` (the second value operand) of this lane.
    Fill(u32),
    /// Undefined or unspecified: any value.
    Undefined,
}

/// One SIMD-group data exchange (MSL simd_shuffle and friends).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShuffleInstr {
    /// Register holding each lane's `data`.
    pub data: String,
    /// Register holding each lane's fill value, for the and_fill functions.
    pub fill: Option<String>,
    /// Register receiving the result.
    pub dst: String,
    /// For each active lane: the lane and where its result comes from.
    pub lanes: Vec<(u32, Source)>,
}

/// A lowered instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Instr {
    /// Memory accesses.
    Mem(MemInstr),
    /// SIMD-group exchange.
    Shuffle(ShuffleInstr),
}

/// A register write that does not depend on memory (SASS sparse predicate `Ps`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StaticWrite {
    /// Register name.
    pub name: String,
    /// Element.
    pub idx: u32,
    /// Value.
    pub value: u64,
}

/// What a front end produces for a valid instruction on a given state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lowered {
    /// The IR instruction.
    pub instr: Instr,
    /// Register writes independent of memory.
    pub writes: Vec<StaticWrite>,
    /// Destination registers to create, zero-filled, where the state does not declare them
    /// (a SASS `Rd` or MSL result that the case does not give).
    pub declare: Vec<(String, crate::state::Reg)>,
}

/// The result of lowering: something to run, or an outcome decided before running.
#[derive(Clone, Debug, PartialEq)]
pub enum Lowering {
    /// Run this.
    Run(Lowered),
    /// The instruction is an illegal form for this state (operand types, sizes, ...).
    Invalid(crate::error::Rejection),
    /// The documents leave the whole outcome undefined (A18 SAFEADD, a non-uniform shuffle
    /// delta, ...); the reason says which.
    Unspecified(String),
}
