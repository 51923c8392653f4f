//! vISA DWORD_ATOMIC (opcode 0x7d): `[(<P>)] DWORD_ATOMIC.<Op>[.16] (<Exec_size>) <Surface>
//! <Element_offset> <Src0> <Src1> <Dst>`. Parse and print, the syntactic operand rules, then
//! the lowering to one IR access per enabled channel, in the document's order.

use super::{
    Bind, ExecSize, Line, Predicate, Token, Var, channel_enables, lowering, need_elems, need_type,
    operands, var,
};
use crate::error::{Reason, Rejection};
use crate::float::{DenormRule, MinMaxRules, NanRule, ZeroRule};
use crate::ir::{
    Access, AtomicOp, Compare, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned, NanBits,
    OutOfRange, RegField, SameAddress, Upper,
};
use crate::knobs::{
    ExecSize32, FcmpwrCompare, MinMaxDenormals, MinMaxNan, MinMaxZero, NanResult,
    PredecOperandType, PredecReturn, PredecSrc0, Profile, VisaFaddFsub, VisaMisaligned,
    VisaOutOfBounds, W16WritebackUpper,
};
use crate::state::State;
use crate::types::{DataType, ElemType, Space};
use std::fmt;

/// The mnemonic.
pub const MNEMONIC: &str = "DWORD_ATOMIC";

/// The exec sizes of the Exec_size table (`0b101` = 32 is in the IGC 1.0.12504 copy only; knob
/// `visa.exec_size_32`, N1, decides in lowering).
pub const EXEC_SIZES: &[u32] = &[1, 2, 4, 8, 16, 32];

macro_rules! ops {
    ($( $(#[$doc:meta])* $Var:ident = $name:literal, $code:literal; )*) => {
        /// vISA DWORD_ATOMIC Op(ub) bits 4..0, the atomic operation (table DWORD_ATOMIC_OP),
        /// plus FADD/FSUB, which the vISA header and verifier know but the document's table
        /// omits (A29).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $( $(#[$doc])* $Var, )*
        }

        impl Op {
            /// Every op, in encoding order.
            pub const ALL: &'static [Op] = &[ $( Op::$Var, )* ];

            /// The lowercase text form.
            pub fn name(self) -> &'static str {
                match self { $( Op::$Var => $name, )* }
            }

            /// Op bits 4..0.
            pub fn code(self) -> u8 {
                match self { $( Op::$Var => $code, )* }
            }

            /// Inverse of [`Op::code`].
            pub fn from_code(code: u8) -> Option<Op> {
                match code { $( $code => Some(Op::$Var), )* _ => None }
            }
        }
    };
}

ops! {
    /// ADD: `new = old + src0`.
    Add = "add", 0b00000;
    /// SUB: `new = old - src0`.
    Sub = "sub", 0b00001;
    /// INC: `new = old + 1`.
    Inc = "inc", 0b00010;
    /// DEC: `new = old - 1`.
    Dec = "dec", 0b00011;
    /// MIN: unsigned `new = min(old, src0)`.
    Min = "min", 0b00100;
    /// MAX: unsigned `new = max(old, src0)`.
    Max = "max", 0b00101;
    /// XCHG: `new = src0`.
    Xchg = "xchg", 0b00110;
    /// CMPXCHG: `new = (old == src1) ? src0 : old` (A8).
    Cmpxchg = "cmpxchg", 0b00111;
    /// AND: `new = old & src0`.
    And = "and", 0b01000;
    /// OR: `new = old | src0`.
    Or = "or", 0b01001;
    /// XOR: `new = old ^ src0`.
    Xor = "xor", 0b01010;
    /// IMIN: signed `new = min(old, src0)`.
    Imin = "imin", 0b01011;
    /// IMAX: signed `new = max(old, src0)`.
    Imax = "imax", 0b01100;
    /// PREDEC: `new = old - 1`, returning the new value (A11).
    Predec = "predec", 0b01101;
    /// FMAX: float `new = max(old, src0)`.
    Fmax = "fmax", 0b10000;
    /// FMIN: float `new = min(old, src0)`.
    Fmin = "fmin", 0b10001;
    /// FCMPWR: float `new = (src0 == old) ? src1 : old` (A8, A9).
    Fcmpwr = "fcmpwr", 0b10010;
    /// FADD (vISA header `ATOMIC_FADD = 0x13`; knob `visa.fadd_fsub`, A29).
    Fadd = "fadd", 0x13;
    /// FSUB (vISA header `ATOMIC_FSUB = 0x14`; knob `visa.fadd_fsub`, A29).
    Fsub = "fsub", 0x14;
}

impl Op {
    /// The op of a text form, case-insensitively.
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL
            .iter()
            .copied()
            .find(|o| o.name().eq_ignore_ascii_case(s))
    }

    /// INC, DEC and PREDEC take no data operand.
    fn takes_no_data(self) -> bool {
        matches!(self, Op::Inc | Op::Dec | Op::Predec)
    }

    /// CMPXCHG and FCMPWR read Src1.
    fn uses_src1(self) -> bool {
        matches!(self, Op::Cmpxchg | Op::Fcmpwr)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// vISA DWORD_ATOMIC Surface(ub): the surfaces the document allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Surface {
    /// `T0`: shared local memory (SLM).
    T0,
    /// `T255`: stateless access.
    T255,
}

impl Surface {
    /// The text form.
    pub fn name(self) -> &'static str {
        match self {
            Surface::T0 => "T0",
            Surface::T255 => "T255",
        }
    }

    /// The memory the surface addresses.
    pub fn space(self) -> Space {
        match self {
            Surface::T0 => Space::Shared,
            Surface::T255 => Space::Global,
        }
    }

    fn parse((col, s): Token<'_>) -> Result<Surface, Rejection> {
        match s {
            "T0" => Ok(Surface::T0),
            "T255" => Ok(Surface::T255),
            _ if s
                .strip_prefix('T')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) =>
            {
                Err(Rejection::at(
                    Reason::InvalidSurface,
                    col,
                    format!("surface {s}: only T0 (SLM) and T255 (stateless) are allowed"),
                ))
            }
            _ => Err(Rejection::at(
                Reason::Syntax,
                col,
                format!("`{s}` is not a surface `T<n>`"),
            )),
        }
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed DWORD_ATOMIC instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DwordAtomic {
    /// Pred: predication, if any.
    pub pred: Option<Predicate>,
    /// Op bits 4..0.
    pub op: Op,
    /// Op bit 5, `.16`: a 16-bit atomic on the low half of each dword.
    pub w16: bool,
    /// Exec_size: channels and execution-mask control.
    pub exec: ExecSize,
    /// Surface.
    pub surface: Surface,
    /// Element_offset: byte offsets into the surface, type UD.
    pub element_offset: Var,
    /// Src0.
    pub src0: Var,
    /// Src1 (CMPXCHG and FCMPWR only).
    pub src1: Var,
    /// Dst: receives the returned values; V0 for none.
    pub dst: Var,
}

impl fmt::Display for DwordAtomic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.pred {
            write!(f, "{p} ")?;
        }
        let w16 = if self.w16 { ".16" } else { "" };
        write!(
            f,
            "{MNEMONIC}.{}{w16} {} {} {} {} {} {}",
            self.op, self.exec, self.surface, self.element_offset, self.src0, self.src1, self.dst
        )
    }
}

/// Parses a DWORD_ATOMIC line.
pub fn parse(text: &str) -> Result<DwordAtomic, Rejection> {
    parse_line(&Line::split(text)?)
}

pub(crate) fn parse_line(line: &Line<'_>) -> Result<DwordAtomic, Rejection> {
    let pred = line.pred.map(Predicate::parse).transpose()?;
    let (col, mnemonic) = line.mnemonic;
    let mut parts = mnemonic.split('.');
    if parts.next() != Some(MNEMONIC) {
        return Err(Rejection::at(
            Reason::UnknownOperation,
            col,
            format!("`{mnemonic}` is not DWORD_ATOMIC"),
        ));
    }
    let op_text = parts.next().ok_or_else(|| {
        Rejection::at(
            Reason::Syntax,
            col,
            "DWORD_ATOMIC needs an operation: DWORD_ATOMIC.<Op>",
        )
    })?;
    let op = Op::from_name(op_text).ok_or_else(|| {
        Rejection::at(
            Reason::UnknownOperation,
            col + MNEMONIC.len() + 1,
            format!("`{op_text}` is not a DWORD_ATOMIC operation"),
        )
    })?;
    let w16 = match (parts.next(), parts.next()) {
        (None, _) => false,
        (Some("16"), None) => true,
        (Some(s), _) => {
            return Err(Rejection::at(
                Reason::Syntax,
                col,
                format!("unexpected suffix `.{s}`: only `.16` may follow the operation"),
            ));
        }
    };
    let exec = ExecSize::parse(line.exec, EXEC_SIZES)?;
    let ops = operands(line, 5)?;
    let [surface, offset, src0, src1, dst] = ops.as_slice() else {
        return Err(Rejection::new(
            Reason::Syntax,
            "DWORD_ATOMIC takes 5 operands",
        ));
    };
    let d = DwordAtomic {
        pred,
        op,
        w16,
        exec,
        surface: Surface::parse(*surface)?,
        element_offset: Var::parse(*offset)?,
        src0: Var::parse(*src0)?,
        src1: Var::parse(*src1)?,
        dst: Var::parse(*dst)?,
    };
    check_operands(&d)?;
    Ok(d)
}

/// The document's operand rules that need no state: Element_offset is a real variable; Src0
/// is V0 for INC and DEC; Src1 is V0 except for CMPXCHG and FCMPWR, which need both sources;
/// every other op (PREDEC aside: knob `visa.predec_src0`, A29) needs Src0.
pub fn check_operands(d: &DwordAtomic) -> Result<(), Rejection> {
    let req = |what: &str| Rejection::new(Reason::OperandRequired, what.to_string());
    let v0 = |what: &str| Rejection::new(Reason::OperandMustBeV0, what.to_string());
    if d.element_offset.is_null() {
        return Err(req("Element_offset cannot be V0"));
    }
    if matches!(d.op, Op::Inc | Op::Dec) && !d.src0.is_null() {
        return Err(v0(&format!("Src0 of {} must be V0", d.op)));
    }
    if !d.op.uses_src1() && !d.src1.is_null() {
        return Err(v0(&format!(
            "Src1 of {} must be V0 (only CMPXCHG and FCMPWR read it)",
            d.op
        )));
    }
    if !d.op.takes_no_data() && d.src0.is_null() {
        return Err(req(&format!("{} needs Src0", d.op)));
    }
    if d.op.uses_src1() && d.src1.is_null() {
        return Err(req(&format!("{} needs Src1", d.op)));
    }
    Ok(())
}

/// The floating-point environment of vISA float atomics, from the profile: round to nearest
/// even with no flushing (the document names none), NaN bits per `float.nan_result` (A4),
/// min/max rules per `float.minmax_*` (A5-A7), bitwise compare (FCMPWR sets its own, A9).
pub fn float_env(p: &Profile) -> Env {
    let (nan, nan_exact) = match p.float_nan_result {
        NanResult::Canonical => (NanBits::Canonical, true),
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
        ..Env::default()
    }
}

/// How one op lowers: the IR op, the signedness or float-ness of the datum, the operand type
/// the Notes require, and which of Src0/Src1 go to the canonical `src[0]`, `src[1]`.
struct OpPlan {
    op: AtomicOp,
    kind: DatumKind,
    types: &'static [ElemType],
    /// The canonical operand order: `true` swaps Src0 and Src1 (CMPXCHG, A8).
    swap: bool,
    compare: Compare,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DatumKind {
    Unsigned,
    Signed,
    Float,
}

const UD: &[ElemType] = &[ElemType::UD];
const D: &[ElemType] = &[ElemType::D];
const F: &[ElemType] = &[ElemType::F];
const UD_OR_D: &[ElemType] = &[ElemType::UD, ElemType::D];

/// The DWORD_ATOMIC_OP table and the Notes' type rule, per op and profile.
fn plan(op: Op, p: &Profile) -> Bind<OpPlan> {
    use DatumKind::*;
    let int = |op, kind, types| OpPlan {
        op,
        kind,
        types,
        swap: false,
        compare: Compare::Bitwise,
    };
    Ok(match op {
        Op::Add => int(AtomicOp::Add, Unsigned, UD),
        Op::Sub => int(AtomicOp::Sub, Unsigned, UD),
        // INC/DEC wrap modulo 2^w (A10).
        Op::Inc => int(AtomicOp::Inc, Unsigned, UD),
        Op::Dec => int(AtomicOp::Dec, Unsigned, UD),
        Op::Min => int(AtomicOp::Min, Unsigned, UD),
        Op::Max => int(AtomicOp::Max, Unsigned, UD),
        Op::Xchg => int(AtomicOp::Exch, Unsigned, UD),
        // `new = (old == src1) ? src0 : old`: Src1 is the comparand, Src0 the new value (A8).
        Op::Cmpxchg => OpPlan {
            swap: true,
            ..int(AtomicOp::Cas, Unsigned, UD)
        },
        Op::And => int(AtomicOp::And, Unsigned, UD),
        Op::Or => int(AtomicOp::Or, Unsigned, UD),
        Op::Xor => int(AtomicOp::Xor, Unsigned, UD),
        Op::Imin => int(AtomicOp::Min, Signed, D),
        Op::Imax => int(AtomicOp::Max, Signed, D),
        // PREDEC returns the new value, or the old one where it is emulated by IDEC (A11).
        Op::Predec => {
            let ir = match p.visa_predec_return {
                PredecReturn::New => AtomicOp::PreDec,
                PredecReturn::Old => AtomicOp::Dec,
            };
            let types = match p.visa_predec_operand_type {
                PredecOperandType::Ud => UD,
                PredecOperandType::D => D,
                PredecOperandType::Either => UD_OR_D,
            };
            int(ir, Unsigned, types)
        }
        Op::Fmax => int(AtomicOp::Max, Float, F),
        Op::Fmin => int(AtomicOp::Min, Float, F),
        // `new = (src0 == old) ? src1 : old`: Src0 is the comparand, Src1 the new value (A8);
        // the compare is IEEE or bitwise (A9), with subnormals flushed first if min/max
        // flush them (A7).
        Op::Fcmpwr => OpPlan {
            compare: match p.visa_fcmpwr_compare {
                FcmpwrCompare::Numeric => Compare::Numeric {
                    daz: p.float_minmax_denormals == MinMaxDenormals::FlushBeforeCompare,
                },
                FcmpwrCompare::Bitwise => Compare::Bitwise,
            },
            ..int(AtomicOp::Cas, Float, F)
        },
        Op::Fadd | Op::Fsub => {
            if p.visa_fadd_fsub == VisaFaddFsub::Reject {
                return Err(Rejection::new(
                    Reason::UnknownOperation,
                    format!(
                        "{op} is not in the DWORD_ATOMIC_OP table (knob visa.fadd_fsub = reject, A29)"
                    ),
                ));
            }
            let ir = if op == Op::Fadd {
                AtomicOp::Add
            } else {
                AtomicOp::Sub
            };
            int(ir, Float, F)
        }
    })
}

fn data_type(kind: DatumKind, w16: bool) -> DataType {
    match (kind, w16) {
        (DatumKind::Unsigned, false) => DataType::U32,
        (DatumKind::Signed, false) => DataType::S32,
        (DatumKind::Float, false) => DataType::F32,
        (DatumKind::Unsigned, true) => DataType::U16,
        (DatumKind::Signed, true) => DataType::S16,
        (DatumKind::Float, true) => DataType::F16,
    }
}

/// Lowers DWORD_ATOMIC against a state: for each channel `i` with `ChEn[i]`, one access at
/// byte offset `element_offset[i]` of the surface that returns the old value into `dst[i]`.
pub fn lower(d: &DwordAtomic, state: &State, p: &Profile) -> Lowering {
    lowering(bind(d, state, p))
}

fn bind(d: &DwordAtomic, state: &State, p: &Profile) -> Bind<Lowered> {
    // The form's knob-dependent legality.
    let plan = plan(d.op, p)?;
    if d.exec.size == 32 && p.visa_exec_size_32 == ExecSize32::Reject {
        return Err(Rejection::new(
            Reason::InvalidExecSize,
            "exec size 32 is not in this Exec_size table (knob visa.exec_size_32 = reject, N1)",
        ));
    }
    if d.op == Op::Predec && p.visa_predec_src0 == PredecSrc0::MustBeV0 && !d.src0.is_null() {
        return Err(Rejection::new(
            Reason::OperandMustBeV0,
            "Src0 of predec must be V0 (knob visa.predec_src0 = must_be_v0, A29)",
        ));
    }
    let n = d.exec.size as usize;

    // Element_offset: UD byte offsets.
    let offsets = var(state, d.element_offset, "Element_offset")?;
    need_type(offsets, d.element_offset, "Element_offset", UD)?;
    need_elems(offsets, d.element_offset, "Element_offset", n)?;

    // Dst, Src0 and Src1, where present, share one type of the op's row.
    let mut shared: Option<ElemType> = None;
    let mut data = |v: Var, role: &str, used: bool| -> Bind<Option<Vec<u64>>> {
        if v.is_null() {
            return Ok(None);
        }
        let reg = var(state, v, role)?;
        need_type(reg, v, role, plan.types)?;
        match shared {
            Some(t) if t != reg.ty => {
                return Err(Rejection::new(
                    Reason::OperandType,
                    format!(
                        "{role} {v} has type {}; Dst, Src0 and Src1 must share one type ({})",
                        reg.ty.visa_name(),
                        t.visa_name()
                    ),
                ));
            }
            _ => shared = Some(reg.ty),
        }
        if used {
            need_elems(reg, v, role, n)?;
        }
        Ok(Some(reg.elems.clone()))
    };
    let dst_ok = data(d.dst, "Dst", true)?.is_some();
    let src0 = data(d.src0, "Src0", !d.op.takes_no_data())?;
    let src1 = data(d.src1, "Src1", d.op.uses_src1())?;

    let ch_en = channel_enables(&d.exec, d.pred.as_ref(), state, p)?;

    let ty = data_type(plan.kind, d.w16);
    let width = ty.bits();
    let elem = |v: &Option<Vec<u64>>, i: usize| -> u64 {
        v.as_ref().and_then(|e| e.get(i).copied()).unwrap_or(0) & ty.mask()
    };
    // `.16`: bits 31..16 of each returned dword (A12).
    let upper = if d.w16 {
        match p.visa_w16_writeback_upper {
            W16WritebackUpper::Any => Upper::Unspecified { width: 32 },
            W16WritebackUpper::Zero => Upper::Zero { width: 32 },
            W16WritebackUpper::SignExtend => Upper::Sign { width: 32 },
            W16WritebackUpper::Preserve => Upper::Keep,
        }
    } else {
        Upper::Keep
    };
    let mut accesses = Vec::new();
    for (i, on) in ch_en.iter().enumerate() {
        if !on {
            continue;
        }
        let (a, b) = (elem(&src0, i), elem(&src1, i));
        let src = if plan.swap { [b, a] } else { [a, b] };
        let dst = if dst_ok {
            Dest::Fields(vec![RegField {
                name: d.dst.name(),
                idx: i as u32,
                lo: 0,
                bits: width,
                upper,
            }])
        } else {
            Dest::None
        };
        accesses.push(Access {
            lane: i as u32,
            addr: offsets.elems.get(i).copied().unwrap_or(0) & 0xffff_ffff,
            src,
            dst,
            fault: None,
        });
    }
    let env = Env {
        compare: plan.compare,
        ..float_env(p)
    };
    Ok(Lowered {
        instr: Instr::Mem(MemInstr {
            op: plan.op,
            ty,
            space: d.surface.space(),
            env,
            misaligned: match p.visa_misaligned {
                VisaMisaligned::Undefined => Misaligned::Unspecified,
                VisaMisaligned::MaskLowBits => Misaligned::MaskLowBits,
                VisaMisaligned::Fault => Misaligned::Fault,
            },
            // Out-of-bound access: reads return zero, writes are dropped (A14).
            out_of_range: match p.visa_out_of_bounds {
                VisaOutOfBounds::ReadZeroDropWrite => OutOfRange::ReadZeroDropWrite,
                VisaOutOfBounds::Fault => OutOfRange::Fault,
            },
            // Channels on one address are serialized in an unspecified order.
            same_address: SameAddress::AnyOrder,
            accesses,
        }),
        writes: Vec::new(),
        declare: Vec::new(),
    })
}
