//! vISA DWORD_ATOMIC (opcode 0x7d): `[(<P>)] DWORD_ATOMIC.<Op>[.16] (<Exec_size>) <Surface>
//! <Element_offset> <Src0> <Src1> <Dst>`. Parse and print, the syntactic operand rules, then
//! the lowering to one IR access per enabled channel, in the document's order.

use super::{
    Bind, ExecSize, Line, Predicate, Token, Var, channel_enables, lowering, need_elems, need_type,
    operands, var,
};
use crate::error::{Reason, Rejection};
use crate::ir::{
    Access, AtomicOp, Compare, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned,
    OutOfRange, RegField, SameAddress, Upper,
};
use crate::knobs::{
    ExecSize32, FcmpwrCompare, MinMaxDenormals, PredecOperandType, PredecReturn, PredecSrc0,
    Profile, VisaFaddFsub, VisaMisaligned, VisaOutOfBounds, W16WritebackUpper,
};
use crate::state::State;
use crate::types::{DataType, ElemType, Space};
use std::fmt;

/// vISA DWORD_ATOMIC, "Text": the mnemonic.
pub const MNEMONIC: &str = "DWORD_ATOMIC";

/// vISA DWORD_ATOMIC, field Exec_size: the sizes of its table. `0b101` = 32 is in the IGC
/// 1.0.12504 copy only; knob `visa.exec_size_32` (N1) decides in lowering.
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

/// vISA DWORD_ATOMIC, field Surface(ub): the two surfaces the document allows.
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

/// vISA DWORD_ATOMIC, "Format": a parsed instruction, one field per operand of the format.
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

/// vISA DWORD_ATOMIC, "Text": parses one line.
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

/// vISA DWORD_ATOMIC, fields Element_offset, Src0 and Src1: the operand rules that need no
/// state: Element_offset is a real variable; Src0
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

/// vISA DWORD_ATOMIC, FMAX/FMIN/FCMPWR (and FADD/FSUB, A29): the floating-point environment
/// from the profile. Round to nearest even with no flushing (the document names none), NaN
/// bits per `float.nan_result` (A4), min/max rules per `float.minmax_*` (A5-A7), bitwise
/// compare (FCMPWR sets its own, A9).
pub fn float_env(p: &Profile) -> Env {
    Env::from_profile(p)
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

/// vISA DWORD_ATOMIC, table DWORD_ATOMIC_OP and "Notes" (operand types), per op and profile.
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

/// vISA DWORD_ATOMIC, "Semantics": lowers against a state. Each channel `i` with `ChEn[i]`
/// makes one access at byte offset `element_offset[i]` of the surface, returning the old value
/// into `dst[i]`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::{DenormRule, NanRule, ZeroRule};
    use crate::ir::NanBits;

    use crate::ir::Instr;
    use crate::outcome::{Allowed, Completed, Field, Outcome};
    use crate::program::{Dialect, run};
    use crate::state::Loc;
    use crate::visa::MaskCtrl;
    use crate::visa::test_util::*;

    /// V1: UD offsets 4*i; V2, V3, V4: `ty` with src0 = 100+i, src1 = 200+i, dst = 0xdead0000+i;
    /// 32 elements each. SLM of 256 bytes, global memory [0, 256).
    fn state(ty: ElemType) -> State {
        let mut s = State::default();
        let n = 32u64;
        with_var(
            &mut s,
            "V1",
            ElemType::UD,
            &(0..n).map(|i| 4 * i).collect::<Vec<_>>(),
        );
        with_var(
            &mut s,
            "V2",
            ty,
            &(0..n).map(|i| 100 + i).collect::<Vec<_>>(),
        );
        with_var(
            &mut s,
            "V3",
            ty,
            &(0..n).map(|i| 200 + i).collect::<Vec<_>>(),
        );
        with_var(
            &mut s,
            "V4",
            ty,
            &(0..n).map(|i| 0xdead_0000 + i).collect::<Vec<_>>(),
        );
        s.shared.alloc(0, 256).unwrap();
        s.slm_size = Some(256);
        s.global.alloc(0, 256).unwrap();
        s
    }

    fn lowered(text: &str, s: &State, p: &Profile) -> Result<MemInstr, Rejection> {
        let d = parse(text)?;
        match lower(&d, s, p) {
            Lowering::Run(l) => match l.instr {
                Instr::Mem(m) => Ok(m),
                Instr::Shuffle(_) => panic!("not a memory instruction"),
            },
            Lowering::Invalid(r) => Err(r),
            Lowering::Unspecified(u) => panic!("unspecified: {u}"),
        }
    }

    fn reason(text: &str, s: &State, p: &Profile) -> Reason {
        lowered(text, s, p).unwrap_err().reason
    }

    fn with(knob: &str, option: &str) -> Profile {
        let mut p = Profile::default();
        p.set(knob, option).unwrap();
        p
    }

    fn completed(text: &str, s: &State, p: &Profile) -> Completed {
        match run(Dialect::Visa, text, s, p).unwrap().outcome {
            Outcome::Completed(c) => c,
            o => panic!("{text}: {o:?}"),
        }
    }

    fn slm(s: &State, addr: u64) -> u64 {
        s.shared.read(addr, 4).unwrap()
    }

    fn v(s: &State, name: &str, i: u32) -> u64 {
        s.elem(name, i).unwrap()
    }

    // ---- text form ----

    #[test]
    fn parses_the_documented_text_form() {
        let d = parse("(!P1) DWORD_ATOMIC.cmpxchg (M1, 8) T255 V10 V11 V12 V13").unwrap();
        assert_eq!(
            d,
            DwordAtomic {
                pred: Some(Predicate {
                    var: 1,
                    negated: true
                }),
                op: Op::Cmpxchg,
                w16: false,
                exec: ExecSize {
                    size: 8,
                    mask: MaskCtrl::M1,
                    mask_written: true
                },
                surface: Surface::T255,
                element_offset: Var(10),
                src0: Var(11),
                src1: Var(12),
                dst: Var(13),
            }
        );
        let d = parse("DWORD_ATOMIC.inc.16 (16) T0 V10 V0 V0 V13").unwrap();
        assert!(d.w16 && d.op == Op::Inc && d.pred.is_none());
        assert_eq!(d.exec.size, 16);
        assert!(!d.exec.mask_written);
        assert_eq!(d.exec.mask, MaskCtrl::M1);
    }

    #[test]
    fn printing_is_canonical_and_round_trips() {
        for t in [
            "(!P1) DWORD_ATOMIC.cmpxchg (M1, 8) T255 V10 V11 V12 V13",
            "DWORD_ATOMIC.inc.16 (16) T0 V10 V0 V0 V13",
            "(P2) DWORD_ATOMIC.fcmpwr (M5_NM, 16) T0 V1 V2 V3 V0",
        ] {
            assert_eq!(parse(t).unwrap().to_string(), t);
        }
        // Ops are case-insensitive and print lowercase; spacing is normalised.
        assert_eq!(
            parse("  (! P1)   DWORD_ATOMIC.CmpXchg  (M1,8)  T255 V10 V11 V12 V13 ")
                .unwrap()
                .to_string(),
            "(!P1) DWORD_ATOMIC.cmpxchg (M1, 8) T255 V10 V11 V12 V13"
        );
        assert_eq!(
            parse("DWORD_ATOMIC.IMAX.16 (4) T0 V1 V2 V0 V4")
                .unwrap()
                .to_string(),
            "DWORD_ATOMIC.imax.16 (4) T0 V1 V2 V0 V4"
        );
        // parse(print(x)) == x over every op, width, size, mask and predicate.
        let mut n = 0;
        for &op in Op::ALL {
            let (src0, src1) = match op {
                Op::Inc | Op::Dec | Op::Predec => (Var::NULL, Var::NULL),
                Op::Cmpxchg | Op::Fcmpwr => (Var(2), Var(3)),
                _ => (Var(2), Var::NULL),
            };
            for w16 in [false, true] {
                for &size in EXEC_SIZES {
                    for mask in MaskCtrl::all() {
                        for mask_written in [true, false] {
                            if !mask_written && mask != MaskCtrl::M1 {
                                continue;
                            }
                            for pred in [
                                None,
                                Some(Predicate {
                                    var: 1,
                                    negated: false,
                                }),
                                Some(Predicate {
                                    var: 7,
                                    negated: true,
                                }),
                            ] {
                                let d = DwordAtomic {
                                    pred,
                                    op,
                                    w16,
                                    exec: ExecSize {
                                        size,
                                        mask,
                                        mask_written,
                                    },
                                    surface: Surface::T0,
                                    element_offset: Var(1),
                                    src0,
                                    src1,
                                    dst: Var(4),
                                };
                                assert_eq!(parse(&d.to_string()).unwrap(), d, "{d}");
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(n, 19 * 2 * 6 * 17 * 3);
    }

    #[test]
    fn parse_rejections() {
        let r = |t: &str| parse(t).unwrap_err().reason;
        use Reason::*;
        for t in [
            "DWORD_ATOMIC (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add.32 (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add.16.16 (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V2 V0",
            "DWORD_ATOMIC.add (8) T0 V1 V2 V0 V4 V5",
            "DWORD_ATOMIC.add (8) T0 R1 V2 V0 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V02 V0 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V2 V0 V",
            "DWORD_ATOMIC.add (x) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add (M1, 8, 8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add (8) S0 V1 V2 V0 V4",
            "(Q1) DWORD_ATOMIC.add (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V2 (V0) V4",
        ] {
            assert_eq!(r(t), Syntax, "{t}");
        }
        let e = parse("DWORD_ATOMIC.nand (8) T0 V1 V2 V0 V4").unwrap_err();
        assert_eq!(e.reason, UnknownOperation);
        assert_eq!(e.column, Some(13));
        assert_eq!(r("DWORD_ATOMIC.fadd2 (8) T0 V1 V2 V0 V4"), UnknownOperation);
        for t in ["(3)", "(0)", "(64)", "(M1, 12)"] {
            assert_eq!(
                r(&format!("DWORD_ATOMIC.add {t} T0 V1 V2 V0 V4")),
                InvalidExecSize,
                "{t}"
            );
        }
        for t in ["(M9, 8)", "(M0, 8)", "(M1_XX, 8)"] {
            assert_eq!(
                r(&format!("DWORD_ATOMIC.add {t} T0 V1 V2 V0 V4")),
                InvalidMask,
                "{t}"
            );
        }
        for t in ["T1", "T5", "T254"] {
            assert_eq!(
                r(&format!("DWORD_ATOMIC.add (8) {t} V1 V2 V0 V4")),
                InvalidSurface
            );
        }
        // INC/DEC take no Src0; only CMPXCHG/FCMPWR take Src1.
        for t in [
            "DWORD_ATOMIC.inc (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.dec (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V2 V3 V4",
            "DWORD_ATOMIC.predec (8) T0 V1 V0 V3 V4",
            "DWORD_ATOMIC.fmax (8) T0 V1 V2 V3 V4",
        ] {
            assert_eq!(r(t), OperandMustBeV0, "{t}");
        }
        for t in [
            "DWORD_ATOMIC.cmpxchg (8) T0 V1 V2 V0 V4",
            "DWORD_ATOMIC.cmpxchg (8) T0 V1 V0 V3 V4",
            "DWORD_ATOMIC.fcmpwr (8) T0 V1 V0 V3 V4",
            "DWORD_ATOMIC.add (8) T0 V1 V0 V0 V4",
            "DWORD_ATOMIC.xchg (8) T0 V1 V0 V0 V4",
            "DWORD_ATOMIC.inc (8) T0 V0 V0 V0 V4",
        ] {
            assert_eq!(r(t), OperandRequired, "{t}");
        }
        // PREDEC's Src0 is a knob, decided in lowering; FADD/FSUB and exec size 32 parse.
        assert!(parse("DWORD_ATOMIC.predec (8) T0 V1 V2 V0 V4").is_ok());
        assert!(parse("DWORD_ATOMIC.fadd (8) T0 V1 V2 V0 V4").is_ok());
        assert!(parse("DWORD_ATOMIC.add (32) T0 V1 V2 V0 V4").is_ok());
    }

    // ---- lowering: legality against the state and the profile ----

    #[test]
    fn knob_dependent_forms() {
        let s = state(ElemType::F);
        let p = Profile::default();
        let fadd = "DWORD_ATOMIC.fadd (8) T0 V1 V2 V0 V4";
        assert_eq!(reason(fadd, &s, &p), Reason::UnknownOperation);
        let m = lowered(fadd, &s, &with("visa.fadd_fsub", "accept")).unwrap();
        assert_eq!((m.op, m.ty), (AtomicOp::Add, DataType::F32));
        let m = lowered(
            "DWORD_ATOMIC.fsub (8) T0 V1 V2 V0 V4",
            &s,
            &with("visa.fadd_fsub", "accept"),
        )
        .unwrap();
        assert_eq!((m.op, m.ty), (AtomicOp::Sub, DataType::F32));

        let s = state(ElemType::UD);
        let x32 = "DWORD_ATOMIC.add (32) T0 V1 V2 V0 V4";
        assert_eq!(reason(x32, &s, &p), Reason::InvalidExecSize);
        let m = lowered(x32, &s, &with("visa.exec_size_32", "allow")).unwrap();
        assert_eq!(m.accesses.len(), 32);
        assert_eq!(m.accesses[31].addr, 124);
        // M2 with 32 channels runs past the 32-bit mask.
        assert_eq!(
            reason(
                "DWORD_ATOMIC.add (M2, 32) T0 V1 V2 V0 V4",
                &s,
                &with("visa.exec_size_32", "allow")
            ),
            Reason::InvalidMask
        );

        let predec = "DWORD_ATOMIC.predec (8) T0 V1 V2 V0 V4";
        assert_eq!(reason(predec, &s, &p), Reason::OperandMustBeV0);
        let m = lowered(predec, &s, &with("visa.predec_src0", "unchecked")).unwrap();
        assert_eq!(m.op, AtomicOp::PreDec);
    }

    #[test]
    fn mask_controls_must_fit_the_execution_mask() {
        let s = state(ElemType::UD);
        let p = Profile::default();
        // Group 4: M8 starts at channel 28; 28 + 8 > 32, but 28 + 4 fits.
        assert_eq!(
            reason("DWORD_ATOMIC.add (M8, 8) T0 V1 V2 V0 V4", &s, &p),
            Reason::InvalidMask
        );
        assert!(lowered("DWORD_ATOMIC.add (M8_NM, 4) T0 V1 V2 V0 V4", &s, &p).is_ok());
        assert!(lowered("DWORD_ATOMIC.add (M5_NM, 16) T0 V1 V2 V0 V4", &s, &p).is_ok());
        // Group 8: M5 starts at channel 32.
        let p8 = with("visa.emask_group", "8");
        assert_eq!(
            reason("DWORD_ATOMIC.add (M5_NM, 16) T0 V1 V2 V0 V4", &s, &p8),
            Reason::InvalidMask
        );
        assert!(lowered("DWORD_ATOMIC.add (M4, 8) T0 V1 V2 V0 V4", &s, &p8).is_ok());
    }

    #[test]
    fn operand_binding_rejections() {
        let p = Profile::default();
        let ud = state(ElemType::UD);
        let t = "DWORD_ATOMIC.add (8) T0 V1 V2 V0 V4";
        // Unknown variables.
        for name in ["V1", "V2", "V4"] {
            let mut s = ud.clone();
            s.regs.remove(name);
            assert_eq!(reason(t, &s, &p), Reason::UnknownOperand, "{name}");
        }
        assert_eq!(
            reason("(P3) DWORD_ATOMIC.add (8) T0 V1 V2 V0 V4", &ud, &p),
            Reason::UnknownOperand
        );
        // Element_offset must be UD.
        let mut s = ud.clone();
        with_var(&mut s, "V1", ElemType::D, &[0; 8]);
        assert_eq!(reason(t, &s, &p), Reason::OperandType);
        // Data types per op.
        assert_eq!(reason(t, &state(ElemType::D), &p), Reason::OperandType);
        assert_eq!(reason(t, &state(ElemType::F), &p), Reason::OperandType);
        let imin = "DWORD_ATOMIC.imin (8) T0 V1 V2 V0 V4";
        assert_eq!(reason(imin, &ud, &p), Reason::OperandType);
        assert!(lowered(imin, &state(ElemType::D), &p).is_ok());
        let fmax = "DWORD_ATOMIC.fmax (8) T0 V1 V2 V0 V4";
        assert_eq!(reason(fmax, &ud, &p), Reason::OperandType);
        assert!(lowered(fmax, &state(ElemType::F), &p).is_ok());
        let fcmpwr = "DWORD_ATOMIC.fcmpwr (8) T0 V1 V2 V3 V4";
        assert_eq!(reason(fcmpwr, &state(ElemType::D), &p), Reason::OperandType);
        // Dst, Src0 and Src1 share one type.
        let mut s = ud.clone();
        with_var(&mut s, "V3", ElemType::D, &[0; 32]);
        assert_eq!(
            reason("DWORD_ATOMIC.cmpxchg (8) T0 V1 V2 V3 V4", &s, &p),
            Reason::OperandType
        );
        // Sizes: each used variable has at least exec_size elements.
        for name in ["V1", "V2", "V3", "V4"] {
            let mut s = ud.clone();
            with_var(&mut s, name, ElemType::UD, &[0; 7]);
            assert_eq!(
                reason("DWORD_ATOMIC.cmpxchg (8) T0 V1 V2 V3 V4", &s, &p),
                Reason::OperandSize,
                "{name}"
            );
            let mut s8 = ud.clone();
            with_var(&mut s8, name, ElemType::UD, &[0; 8]);
            assert!(lowered("DWORD_ATOMIC.cmpxchg (8) T0 V1 V2 V3 V4", &s8, &p).is_ok());
        }
    }

    #[test]
    fn predec_operand_type_follows_its_knob() {
        let t = "DWORD_ATOMIC.predec (8) T0 V1 V0 V0 V4";
        let (ud, d, f) = (state(ElemType::UD), state(ElemType::D), state(ElemType::F));
        let p = Profile::default();
        assert!(lowered(t, &ud, &p).is_ok());
        assert_eq!(reason(t, &d, &p), Reason::OperandType);
        let pd = with("visa.predec_operand_type", "d");
        assert!(lowered(t, &d, &pd).is_ok());
        assert_eq!(reason(t, &ud, &pd), Reason::OperandType);
        let pe = with("visa.predec_operand_type", "either");
        assert!(lowered(t, &ud, &pe).is_ok());
        assert!(lowered(t, &d, &pe).is_ok());
        assert_eq!(reason(t, &f, &pe), Reason::OperandType);
        // Either type, but one type: Dst D with Src0 UD (Src0 allowed by knob) is rejected.
        let mut pu = pe.clone();
        pu.set("visa.predec_src0", "unchecked").unwrap();
        let mut mixed = d.clone();
        with_var(&mut mixed, "V2", ElemType::UD, &[0; 32]);
        assert_eq!(
            reason("DWORD_ATOMIC.predec (8) T0 V1 V2 V0 V4", &mixed, &pu),
            Reason::OperandType
        );
    }

    // ---- lowering: the IR ----

    #[test]
    fn op_table_maps_to_the_ir() {
        use AtomicOp as A;
        let p = Profile::default();
        let rows: &[(&str, ElemType, AtomicOp, DataType, DataType)] = &[
            ("add", ElemType::UD, A::Add, DataType::U32, DataType::U16),
            ("sub", ElemType::UD, A::Sub, DataType::U32, DataType::U16),
            ("inc", ElemType::UD, A::Inc, DataType::U32, DataType::U16),
            ("dec", ElemType::UD, A::Dec, DataType::U32, DataType::U16),
            ("min", ElemType::UD, A::Min, DataType::U32, DataType::U16),
            ("max", ElemType::UD, A::Max, DataType::U32, DataType::U16),
            ("xchg", ElemType::UD, A::Exch, DataType::U32, DataType::U16),
            (
                "cmpxchg",
                ElemType::UD,
                A::Cas,
                DataType::U32,
                DataType::U16,
            ),
            ("and", ElemType::UD, A::And, DataType::U32, DataType::U16),
            ("or", ElemType::UD, A::Or, DataType::U32, DataType::U16),
            ("xor", ElemType::UD, A::Xor, DataType::U32, DataType::U16),
            ("imin", ElemType::D, A::Min, DataType::S32, DataType::S16),
            ("imax", ElemType::D, A::Max, DataType::S32, DataType::S16),
            (
                "predec",
                ElemType::UD,
                A::PreDec,
                DataType::U32,
                DataType::U16,
            ),
            ("fmax", ElemType::F, A::Max, DataType::F32, DataType::F16),
            ("fmin", ElemType::F, A::Min, DataType::F32, DataType::F16),
            ("fcmpwr", ElemType::F, A::Cas, DataType::F32, DataType::F16),
        ];
        for &(name, ty, op, t32, t16) in rows {
            let op_enum = Op::from_name(name).unwrap();
            let src0 = if matches!(op_enum, Op::Inc | Op::Dec | Op::Predec) {
                "V0"
            } else {
                "V2"
            };
            let src1 = if matches!(op_enum, Op::Cmpxchg | Op::Fcmpwr) {
                "V3"
            } else {
                "V0"
            };
            for (w, want) in [("", t32), (".16", t16)] {
                for (surface, space) in [("T0", Space::Shared), ("T255", Space::Global)] {
                    let t = format!("DWORD_ATOMIC.{name}{w} (4) {surface} V1 {src0} {src1} V4");
                    let m = lowered(&t, &state(ty), &p).unwrap();
                    assert_eq!((m.op, m.ty, m.space), (op, want, space), "{t}");
                    assert_eq!(m.same_address, SameAddress::AnyOrder);
                    assert_eq!(m.out_of_range, OutOfRange::ReadZeroDropWrite);
                    assert_eq!(m.misaligned, Misaligned::Unspecified);
                }
            }
        }
        let m = lowered(
            "DWORD_ATOMIC.predec (4) T0 V1 V0 V0 V4",
            &state(ElemType::UD),
            &with("visa.predec_return", "old"),
        )
        .unwrap();
        assert_eq!(m.op, AtomicOp::Dec);
    }

    #[test]
    fn cmpxchg_and_fcmpwr_map_their_operand_slots() {
        let p = Profile::default();
        // CMPXCHG: new = (old == src1) ? src0 : old, so src1 (200+i) is the comparand.
        let m = lowered(
            "DWORD_ATOMIC.cmpxchg (2) T0 V1 V2 V3 V4",
            &state(ElemType::UD),
            &p,
        )
        .unwrap();
        assert_eq!(m.accesses[0].src, [200, 100]);
        assert_eq!(m.accesses[1].src, [201, 101]);
        assert_eq!(m.env.compare, Compare::Bitwise);
        // FCMPWR: new = (src0 == old) ? src1 : old, so src0 (100+i) is the comparand.
        let f = state(ElemType::F);
        let t = "DWORD_ATOMIC.fcmpwr (2) T0 V1 V2 V3 V4";
        let m = lowered(t, &f, &p).unwrap();
        assert_eq!(m.accesses[0].src, [100, 200]);
        assert_eq!(m.accesses[1].src, [101, 201]);
        assert_eq!(m.env.compare, Compare::Numeric { daz: false });
        let m = lowered(
            t,
            &f,
            &with("float.minmax_denormals", "flush_before_compare"),
        )
        .unwrap();
        assert_eq!(m.env.compare, Compare::Numeric { daz: true });
        let m = lowered(t, &f, &with("visa.fcmpwr_compare", "bitwise")).unwrap();
        assert_eq!(m.env.compare, Compare::Bitwise);
    }

    #[test]
    fn float_env_follows_the_float_knobs() {
        let e = float_env(&Profile::default());
        assert_eq!(e.nan, NanBits::Propagate);
        assert!(!e.nan_exact);
        assert_eq!(e.round, crate::float::Round::NearestEven);
        assert_eq!(e.ftz, crate::float::FtzMode::NONE);
        let e = float_env(&with("float.nan_result", "canonical"));
        assert_eq!((e.nan, e.nan_exact), (NanBits::Canonical, true));
        let e = float_env(&with("float.nan_result", "propagate"));
        assert_eq!((e.nan, e.nan_exact), (NanBits::Propagate, true));
        let sky = float_env(&Profile::named("intel-skylake").unwrap());
        assert_eq!(sky.minmax.nan, NanRule::IntelSnanWins);
        assert_eq!(sky.minmax.zero, ZeroRule::Skylake);
        let spv = float_env(&Profile::named("spirv").unwrap());
        assert_eq!(spv.minmax.nan, NanRule::SpirvEither);
        assert_eq!(spv.minmax.zero, ZeroRule::Either);
        assert_eq!(spv.minmax.denormals, DenormRule::Either);
    }

    #[test]
    fn accesses_follow_offsets_enables_and_dst() {
        let p = Profile::default();
        let mut s = state(ElemType::UD);
        with_var(
            &mut s,
            "V1",
            ElemType::UD,
            &[0x40, 0x10, 0x1_0000_0008, 0x20],
        );
        // Channels 1 and 3 off in the execution mask.
        s.emask = 0b0101;
        let m = lowered("DWORD_ATOMIC.add (4) T255 V1 V2 V0 V4", &s, &p).unwrap();
        let got: Vec<(u32, u64, [u64; 2])> =
            m.accesses.iter().map(|a| (a.lane, a.addr, a.src)).collect();
        // Offsets are UD: only the low 32 bits count.
        assert_eq!(got, vec![(0, 0x40, [100, 0]), (2, 0x8, [102, 0])]);
        assert_eq!(
            m.accesses[1].dst,
            Dest::Fields(vec![RegField {
                name: "V4".into(),
                idx: 2,
                lo: 0,
                bits: 32,
                upper: Upper::Keep
            }])
        );
        // _NM ignores the mask; a negated predicate masks channels 0 and 1.
        with_pred(&mut s, "P1", 0b0011, 4);
        let m = lowered("(!P1) DWORD_ATOMIC.add (M1_NM, 4) T255 V1 V2 V0 V4", &s, &p).unwrap();
        let lanes: Vec<u32> = m.accesses.iter().map(|a| a.lane).collect();
        assert_eq!(lanes, vec![2, 3]);
        // Dst V0: no destination.
        let m = lowered("DWORD_ATOMIC.add (M1_NM, 4) T255 V1 V2 V0 V0", &s, &p).unwrap();
        assert!(m.accesses.iter().all(|a| a.dst == Dest::None));
        assert_eq!(m.accesses.len(), 4);
        // M2 with group 4 reads emask bits 4..7.
        s.emask = 0b1010_0000;
        let m = lowered("DWORD_ATOMIC.add (M2, 4) T255 V1 V2 V0 V4", &s, &p).unwrap();
        let lanes: Vec<u32> = m.accesses.iter().map(|a| a.lane).collect();
        assert_eq!(lanes, vec![1, 3]);
    }

    #[test]
    fn w16_writes_back_sixteen_bits_with_the_upper_half_per_knob() {
        let s = state(ElemType::UD);
        let t = "DWORD_ATOMIC.add.16 (1) T0 V1 V2 V0 V4";
        for (option, upper) in [
            ("any", Upper::Unspecified { width: 32 }),
            ("zero", Upper::Zero { width: 32 }),
            ("sign_extend", Upper::Sign { width: 32 }),
            ("preserve", Upper::Keep),
        ] {
            let m = lowered(t, &s, &with("visa.w16_writeback_upper", option)).unwrap();
            assert_eq!(
                m.accesses[0].dst,
                Dest::Fields(vec![RegField {
                    name: "V4".into(),
                    idx: 0,
                    lo: 0,
                    bits: 16,
                    upper
                }]),
                "{option}"
            );
        }
        // Only the low 16 bits of each source dword are used.
        let mut s = s;
        with_var(&mut s, "V2", ElemType::UD, &[0xabcd_0001]);
        let m = lowered(t, &s, &Profile::default()).unwrap();
        assert_eq!(m.accesses[0].src, [0x0001, 0]);
    }

    #[test]
    fn knobs_set_misaligned_and_out_of_range() {
        let s = state(ElemType::UD);
        let t = "DWORD_ATOMIC.add (1) T0 V1 V2 V0 V4";
        let m = lowered(t, &s, &with("visa.misaligned", "fault")).unwrap();
        assert_eq!(m.misaligned, Misaligned::Fault);
        let m = lowered(t, &s, &with("visa.misaligned", "mask_low_bits")).unwrap();
        assert_eq!(m.misaligned, Misaligned::MaskLowBits);
        let m = lowered(t, &s, &with("visa.out_of_bounds", "fault")).unwrap();
        assert_eq!(m.out_of_range, OutOfRange::Fault);
    }

    // ---- end to end through program::run ----

    #[test]
    fn cmpxchg_stores_src0_when_old_equals_src1() {
        let mut s = state(ElemType::UD);
        // Channel 0: old 5, Src0 (new) 9, Src1 (compare) 5 -> swaps.
        // Channel 1: old 5, Src0 9, Src1 6 -> no swap. Reading the slots the other way round
        // (compare = Src0 = 9) would leave channel 0 unchanged.
        with_var(&mut s, "V2", ElemType::UD, &[9, 9]);
        with_var(&mut s, "V3", ElemType::UD, &[5, 6]);
        s.shared.write(0, 4, 5);
        s.shared.write(4, 4, 5);
        let c = completed(
            "DWORD_ATOMIC.cmpxchg (2) T0 V1 V2 V3 V4",
            &s,
            &Profile::default(),
        );
        assert_eq!(slm(&c.state, 0), 9);
        assert_eq!(slm(&c.state, 4), 5);
        assert_eq!(v(&c.state, "V4", 0), 5);
        assert_eq!(v(&c.state, "V4", 1), 5);
    }

    #[test]
    fn fcmpwr_compares_src0_and_stores_src1() {
        let mut s = state(ElemType::F);
        // Channel 0: old 1.0, Src0 (compare) 1.0, Src1 (new) 2.0 -> 2.0.
        // Channel 1: old +0.0, compare -0.0: IEEE-equal under `numeric`, not bitwise.
        with_var(&mut s, "V2", ElemType::F, &[0x3f80_0000, 0x8000_0000]);
        with_var(&mut s, "V3", ElemType::F, &[0x4000_0000, 0x4040_0000]);
        s.global.write(0, 4, 0x3f80_0000);
        s.global.write(4, 4, 0);
        let t = "DWORD_ATOMIC.fcmpwr (2) T255 V1 V2 V3 V4";
        let c = completed(t, &s, &Profile::default());
        assert_eq!(c.state.global.read(0, 4), Some(0x4000_0000));
        assert_eq!(c.state.global.read(4, 4), Some(0x4040_0000));
        assert_eq!(v(&c.state, "V4", 0), 0x3f80_0000);
        let c = completed(t, &s, &with("visa.fcmpwr_compare", "bitwise"));
        assert_eq!(c.state.global.read(4, 4), Some(0));
    }

    #[test]
    fn inc_and_dec_wrap() {
        let mut s = state(ElemType::UD);
        s.shared.write(0, 4, 0xffff_ffff);
        let c = completed(
            "DWORD_ATOMIC.inc (1) T0 V1 V0 V0 V4",
            &s,
            &Profile::default(),
        );
        assert_eq!(slm(&c.state, 0), 0);
        assert_eq!(v(&c.state, "V4", 0), 0xffff_ffff);
        s.shared.write(0, 4, 0);
        let c = completed(
            "DWORD_ATOMIC.dec (1) T0 V1 V0 V0 V4",
            &s,
            &Profile::default(),
        );
        assert_eq!(slm(&c.state, 0), 0xffff_ffff);
        assert_eq!(v(&c.state, "V4", 0), 0);
    }

    #[test]
    fn predec_returns_the_new_value_or_the_old_under_the_knob() {
        let mut s = state(ElemType::UD);
        s.shared.write(0, 4, 5);
        let t = "DWORD_ATOMIC.predec (1) T0 V1 V0 V0 V4";
        let c = completed(t, &s, &Profile::default());
        assert_eq!(slm(&c.state, 0), 4);
        assert_eq!(v(&c.state, "V4", 0), 4);
        let c = completed(t, &s, &with("visa.predec_return", "old"));
        assert_eq!(slm(&c.state, 0), 4);
        assert_eq!(v(&c.state, "V4", 0), 5);
    }

    #[test]
    fn inc16_wraps_the_halfword_and_leaves_its_neighbour() {
        let mut s = state(ElemType::UD);
        with_var(&mut s, "V1", ElemType::UD, &[0, 6]);
        with_var(&mut s, "V4", ElemType::UD, &[0x1234_5678, 0x1234_5678]);
        // Channel 0: low halfword of dword 0; channel 1: high halfword of dword 4.
        s.shared.write(0, 4, 0xabcd_ffff);
        s.shared.write(4, 4, 0xffff_1234);
        let t = "DWORD_ATOMIC.inc.16 (2) T0 V1 V0 V0 V4";
        let c = completed(t, &s, &Profile::default());
        assert_eq!(slm(&c.state, 0), 0xabcd_0000);
        assert_eq!(slm(&c.state, 4), 0x0000_1234);
        // `any`: the low 16 bits are the old halfword; bits 31..16 are open.
        assert_eq!(v(&c.state, "V4", 0) & 0xffff, 0xffff);
        assert!(c.open.contains(&(
            Loc::Reg {
                name: "V4".into(),
                idx: 0
            },
            Field {
                lo: 16,
                bits: 16,
                allowed: Allowed::Any
            }
        )));
        let c = completed(t, &s, &with("visa.w16_writeback_upper", "zero"));
        assert_eq!(v(&c.state, "V4", 0), 0x0000_ffff);
        assert!(c.open.is_empty());
        let c = completed(t, &s, &with("visa.w16_writeback_upper", "sign_extend"));
        assert_eq!(v(&c.state, "V4", 1), 0xffff_ffff);
        let c = completed(t, &s, &with("visa.w16_writeback_upper", "preserve"));
        assert_eq!(v(&c.state, "V4", 0), 0x1234_ffff);
    }

    #[test]
    fn slm_out_of_bounds_reads_zero_and_drops_the_write() {
        let mut s = State::default();
        s.shared.alloc(0, 64).unwrap();
        s.slm_size = Some(64);
        s.shared.write(60, 4, 10);
        with_var(&mut s, "V1", ElemType::UD, &[60, 64]);
        with_var(&mut s, "V2", ElemType::UD, &[1, 1]);
        with_var(&mut s, "V4", ElemType::UD, &[0xdead, 0xdead]);
        let t = "DWORD_ATOMIC.add (2) T0 V1 V2 V0 V4";
        let c = completed(t, &s, &Profile::default());
        assert_eq!(slm(&c.state, 60), 11);
        assert_eq!(v(&c.state, "V4", 0), 10);
        assert_eq!(v(&c.state, "V4", 1), 0);
        assert_eq!(c.state.shared, {
            let mut m = s.shared.clone();
            m.write(60, 4, 11);
            m
        });
        match run(Dialect::Visa, t, &s, &with("visa.out_of_bounds", "fault"))
            .unwrap()
            .outcome
        {
            Outcome::Fault(f) => assert_eq!(
                f.lanes,
                vec![(1, crate::outcome::FaultClass::AddressOutOfRange)]
            ),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn disabled_channels_and_null_dst_leave_state_untouched() {
        let mut s = state(ElemType::UD);
        s.emask = 0b0101;
        for i in 0..4 {
            s.shared.write(4 * i, 4, 1000 + i);
        }
        let c = completed(
            "DWORD_ATOMIC.add (4) T0 V1 V2 V0 V4",
            &s,
            &Profile::default(),
        );
        assert_eq!(
            (0..4).map(|i| slm(&c.state, 4 * i)).collect::<Vec<_>>(),
            vec![1100, 1001, 1104, 1003]
        );
        assert_eq!(
            (0..4).map(|i| v(&c.state, "V4", i)).collect::<Vec<_>>(),
            vec![1000, 0xdead_0001, 1002, 0xdead_0003]
        );
        // Predicate P1 true on channel 1 only, with M1_NM: only channel 1 runs.
        with_pred(&mut s, "P1", 0b0010, 4);
        let c = completed(
            "(P1) DWORD_ATOMIC.xchg (M1_NM, 4) T0 V1 V2 V0 V0",
            &s,
            &Profile::default(),
        );
        assert_eq!(
            (0..4).map(|i| slm(&c.state, 4 * i)).collect::<Vec<_>>(),
            vec![1000, 101, 1002, 1003]
        );
        // Dst V0: no variable changes.
        assert_eq!(c.state.regs, s.regs);
    }

    #[test]
    fn misaligned_word_is_unspecified_by_default() {
        let mut s = state(ElemType::UD);
        with_var(&mut s, "V1", ElemType::UD, &[1]);
        let o = run(
            Dialect::Visa,
            "DWORD_ATOMIC.inc.16 (1) T0 V1 V0 V0 V4",
            &s,
            &Profile::default(),
        )
        .unwrap()
        .outcome;
        assert!(matches!(o, Outcome::Unspecified(_)), "{o:?}");
        // mask_low_bits: offset 1 acts on the word at 0.
        s.shared.write(0, 4, 0x0007_0007);
        let c = completed(
            "DWORD_ATOMIC.inc.16 (1) T0 V1 V0 V0 V4",
            &s,
            &with("visa.misaligned", "mask_low_bits"),
        );
        assert_eq!(slm(&c.state, 0), 0x0007_0008);
    }
}
