//! SASS ATOM, "ATOM: Atomic Operation on generic Memory" (SPA 5.0): parse, validate, print and
//! lower to the IR.
//!
//! The document gives four syntax lines plus two sparse-predicate lines:
//!
//! ```text
//! {@{!}Pg} ATOM{.E}.op{.sz}  Rd, [Ra + ImmS20], Rb
//! {@{!}Pg} ATOM{.E}.CAS{.sz} Rd, [Ra + ImmS20], Rb, Rc
//! {@{!}Pg} ATOM{.E}.op{.sz}  Rd, [ImmU20], Rb            (absolute address)
//! {@{!}Pg} ATOM{.E}.CAS{.sz} Rd, [ImmU20], Rb, Rc
//! {@{!}Pg} ATOM{.E}.op{.sz}  Ps, Rd, [Ra], Rb            (sparse predicate, no offset)
//! {@{!}Pg} ATOM{.E}.CAS{.sz} Ps, Rd, [Ra], Rb, Rc
//! ```
//!
//! Every lane whose guard holds reads the sized value `M` at the generic address, returns it in
//! `Rd` and stores `.op(M, Rb)`, atomically. Which operations take which sizes is the document's
//! "Atomic Operations" table ([`Op::sizes`]). The scheduling annotations of the syntax lines
//! (`&req_6`, `&rdN`, `&wrN`, `?sched`) are not part of the modelled text form.
//!
//! Ambiguities resolved by knobs ([`crate::knobs`]): A1 (F16x2 flushing), A2 (F32 add
//! flushing), A3 (returned value of a flushing add), A4-A7 (NaN bits and float min/max), A15
//! (misaligned addresses), A16 (address arithmetic), A17 (CAS register pairs), N3 (the `.E`
//! immediate width). A18: SAFEADD has no public formula and lowers to
//! [`Lowering::Unspecified`].

use crate::error::{ModelError, Reason, Rejection};
use crate::float::{DenormRule, FtzMode, MinMaxRules, NanRule, Round, ZeroRule};
use crate::ir::{
    Access, AtomicOp, Compare, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned, NanBits,
    OutOfRange, RegField, SameAddress, StaticWrite, Upper,
};
use crate::knobs::{
    AddressArithmetic, CasPairing, EImmediate, F16x2AddSubnormals, F32AddFtz, FtzReturn,
    MinMaxDenormals, MinMaxNan, MinMaxZero, NanResult, Profile, SassMisaligned,
};
use crate::outcome::FaultClass;
use crate::state::{Reg as StateReg, State};
use crate::types::{DataType, ElemType, Space};
use std::fmt;

/// Lanes of a warp: SASS registers hold one 32-bit element per lane of at most 32 lanes.
pub const WARP_LANES: u32 = 32;

// ---------------------------------------------------------------------------------------------
// The "Atomic Operations" table
// ---------------------------------------------------------------------------------------------

/// SASS ATOM `.op` (the header's `.op` list plus `.CAS` of the second syntax line), in the order
/// of the "Atomic Operations" table. `M` is the memory value at the address, `Rd` receives the
/// value before the operation in every row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `.ADD`: `M = M + Rb` (integer wrap, float add).
    Add,
    /// `.MIN`: `M = min(M, Rb)`, signed or unsigned by `.sz`.
    Min,
    /// `.MAX`: `M = max(M, Rb)`.
    Max,
    /// `.INC`: `M = (M >= Rb) ? 0 : M + 1` (bounded, A10).
    Inc,
    /// `.DEC`: `M = (M == 0 || M > Rb) ? Rb : M - 1` (bounded, A10).
    Dec,
    /// `.AND`: `M = M & Rb`.
    And,
    /// `.OR`: `M = M | Rb`.
    Or,
    /// `.XOR`: `M = M ^ Rb`.
    Xor,
    /// `.EXCH`: `M = Rb`.
    Exch,
    /// `.SAFEADD`: the table only says it advances a put pointer of a circular queue; no formula
    /// is given anywhere public (A18).
    SafeAdd,
    /// `.CAS`: `if (M == Rb) M = Rc` (bit equality, A9).
    Cas,
}

impl Op {
    /// Every op, in table order.
    pub const ALL: &'static [Op] = &[
        Op::Add,
        Op::Min,
        Op::Max,
        Op::Inc,
        Op::Dec,
        Op::And,
        Op::Or,
        Op::Xor,
        Op::Exch,
        Op::SafeAdd,
        Op::Cas,
    ];

    /// The document's spelling (without the dot).
    pub fn name(self) -> &'static str {
        match self {
            Op::Add => "ADD",
            Op::Min => "MIN",
            Op::Max => "MAX",
            Op::Inc => "INC",
            Op::Dec => "DEC",
            Op::And => "AND",
            Op::Or => "OR",
            Op::Xor => "XOR",
            Op::Exch => "EXCH",
            Op::SafeAdd => "SAFEADD",
            Op::Cas => "CAS",
        }
    }

    /// Inverse of [`Op::name`] (case-sensitive, as the document spells them).
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.name() == s)
    }

    /// SASS ATOM, "Atomic Operations" table: the sizes each op takes. Rows marked `*` need SPA
    /// 3.5 or higher, which SPA 5.0 is, so they are all allowed. Both F16x2 spellings stand for
    /// the one F16x2 row (A1: the header writes `.F16x2.FTZ.RN`, the table `.F16x2.RN`).
    pub fn sizes(self) -> &'static [Size] {
        use Size::*;
        match self {
            Op::Add => &[U32, S32, U64, F32FtzRn, F16x2Rn, F16x2FtzRn, F64Rn],
            Op::Min | Op::Max => &[U32, S32, U64, S64, F16x2Rn, F16x2FtzRn],
            Op::Inc | Op::Dec => &[U32],
            Op::And | Op::Or | Op::Xor | Op::Exch | Op::Cas => &[U32, S32, U64],
            Op::SafeAdd => &[U64],
        }
    }

    /// Whether the table has a row for `size`.
    pub fn allows(self, size: Size) -> bool {
        self.sizes().contains(&size)
    }

    /// The IR operation, or `None` for SAFEADD (A18).
    pub fn ir(self) -> Option<AtomicOp> {
        Some(match self {
            Op::Add => AtomicOp::Add,
            Op::Min => AtomicOp::Min,
            Op::Max => AtomicOp::Max,
            Op::Inc => AtomicOp::IncBounded,
            Op::Dec => AtomicOp::DecBounded,
            Op::And => AtomicOp::And,
            Op::Or => AtomicOp::Or,
            Op::Xor => AtomicOp::Xor,
            Op::Exch => AtomicOp::Exch,
            Op::Cas => AtomicOp::Cas,
            Op::SafeAdd => return None,
        })
    }
}

/// SASS ATOM `.sz`. `.U32` when omitted; `.32` and `.64` alias `.U32` and `.U64`; `.128` is
/// named but illegal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Size {
    /// `.U32` (the default).
    U32,
    /// `.S32`.
    S32,
    /// `.U64`.
    U64,
    /// `.S64`.
    S64,
    /// `.F32.FTZ.RN`.
    F32FtzRn,
    /// `.F16x2.RN` (the table's spelling, A1).
    F16x2Rn,
    /// `.F16x2.FTZ.RN` (the header's spelling, A1).
    F16x2FtzRn,
    /// `.F64.RN`.
    F64Rn,
}

impl Size {
    /// Every size.
    pub const ALL: &'static [Size] = &[
        Size::U32,
        Size::S32,
        Size::U64,
        Size::S64,
        Size::F32FtzRn,
        Size::F16x2Rn,
        Size::F16x2FtzRn,
        Size::F64Rn,
    ];

    /// The document's spelling (without the leading dot).
    pub fn spelling(self) -> &'static str {
        match self {
            Size::U32 => "U32",
            Size::S32 => "S32",
            Size::U64 => "U64",
            Size::S64 => "S64",
            Size::F32FtzRn => "F32.FTZ.RN",
            Size::F16x2Rn => "F16x2.RN",
            Size::F16x2FtzRn => "F16x2.FTZ.RN",
            Size::F64Rn => "F64.RN",
        }
    }

    /// A size spelling, with the `.32`/`.64` aliases. `.128` is not a size here: the parser
    /// rejects it as [`Reason::IllegalSize`].
    pub fn from_spelling(s: &str) -> Option<Size> {
        match s {
            "32" => Some(Size::U32),
            "64" => Some(Size::U64),
            _ => Size::ALL.iter().copied().find(|z| z.spelling() == s),
        }
    }

    /// The IR datum type.
    pub fn data_type(self) -> DataType {
        match self {
            Size::U32 => DataType::U32,
            Size::S32 => DataType::S32,
            Size::U64 => DataType::U64,
            Size::S64 => DataType::S64,
            Size::F32FtzRn => DataType::F32,
            Size::F16x2Rn | Size::F16x2FtzRn => DataType::F16x2,
            Size::F64Rn => DataType::F64,
        }
    }

    /// Whether data takes a register pair (64-bit types).
    pub fn is_64(self) -> bool {
        self.data_type().bits() == 64
    }
}

// ---------------------------------------------------------------------------------------------
// Operands and the instruction
// ---------------------------------------------------------------------------------------------

/// A general register: `R0`..`R254`, or `RZ` (reads zero, writes are discarded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reg {
    /// `R<n>`, n in 0..=254.
    R(u8),
    /// `RZ`, the zero register (encoding 255).
    RZ,
}

impl Reg {
    /// The upper register of a pair starting here: `R<n+1>`; past `R254` that is encoding 255,
    /// `RZ`, and `RZ`'s pair is `RZ` too.
    pub fn next(self) -> Reg {
        match self {
            Reg::R(n) if n < 254 => Reg::R(n + 1),
            _ => Reg::RZ,
        }
    }

    /// Whether the register can start a pair (even, or RZ).
    fn even_or_rz(self) -> bool {
        match self {
            Reg::R(n) => n % 2 == 0,
            Reg::RZ => true,
        }
    }

    /// The state register name, `None` for RZ.
    fn state_name(self) -> Option<String> {
        match self {
            Reg::R(n) => Some(format!("R{n}")),
            Reg::RZ => None,
        }
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reg::R(n) => write!(f, "R{n}"),
            Reg::RZ => f.write_str("RZ"),
        }
    }
}

/// A predicate register: `P0`..`P6`, or `PT` (always true; as `Ps` its writes are discarded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pred {
    /// `P<n>`, n in 0..=6.
    P(u8),
    /// `PT`, the true predicate.
    PT,
}

impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pred::P(n) => write!(f, "P{n}"),
            Pred::PT => f.write_str("PT"),
        }
    }
}

/// The guard `@Pg` or `@!Pg`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Guard {
    /// `!`: the lane runs where the predicate is false.
    pub negated: bool,
    /// The predicate.
    pub pred: Pred,
}

/// The memory operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Address {
    /// `[Ra + ImmS20]` (`[Ra]` when the offset is 0): ImmS20 range, or ImmS32 with `.E` (N3).
    Reg {
        /// The base register (the low register of a pair with `.E`).
        ra: Reg,
        /// The signed immediate offset.
        offset: i64,
    },
    /// `[ImmU20]`: an unsigned absolute address (Ra omitted).
    Absolute(u32),
}

/// A parsed SASS ATOM instruction. Sizes are normalized (`.32` is stored as `.U32`), the F16x2
/// spelling is kept (A1).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// `@{!}Pg`, if given.
    pub guard: Option<Guard>,
    /// `.E`: a 64-bit address in the pair (Ra, Ra+1).
    pub extended: bool,
    /// `.op`.
    pub op: Op,
    /// `.sz`.
    pub size: Size,
    /// `Ps` of the sparse-predicate forms.
    pub sparse: Option<Pred>,
    /// `Rd`: receives the prior memory value.
    pub rd: Reg,
    /// The memory operand.
    pub addr: Address,
    /// `Rb`: the operand (the compare value for CAS).
    pub rb: Reg,
    /// `Rc`: the new value of CAS; `None` for every other op.
    pub rc: Option<Reg>,
}

impl fmt::Display for Instruction {
    /// The canonical text: `@!P1 ATOM.E.CAS.U64 R0, [R2+0x8], R4, R6`. The size is always
    /// written, offsets in hex, `[Ra]` for a zero offset.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = self.guard {
            write!(f, "@{}{} ", if g.negated { "!" } else { "" }, g.pred)?;
        }
        f.write_str("ATOM")?;
        if self.extended {
            f.write_str(".E")?;
        }
        write!(f, ".{}.{} ", self.op.name(), self.size.spelling())?;
        if let Some(ps) = self.sparse {
            write!(f, "{ps}, ")?;
        }
        write!(f, "{}, ", self.rd)?;
        match self.addr {
            Address::Reg { ra, offset } if offset == 0 => write!(f, "[{ra}]")?,
            Address::Reg { ra, offset } if offset < 0 => {
                write!(f, "[{ra}-{:#x}]", offset.unsigned_abs())?
            }
            Address::Reg { ra, offset } => write!(f, "[{ra}+{offset:#x}]")?,
            Address::Absolute(imm) => write!(f, "[{imm:#x}]")?,
        }
        write!(f, ", {}", self.rb)?;
        if let Some(rc) = self.rc {
            write!(f, ", {rc}")?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Parse
// ---------------------------------------------------------------------------------------------

/// ImmS20: -2^19 ..= 2^19-1.
const S20: (i128, i128) = (-(1 << 19), (1 << 19) - 1);
/// ImmS32: -2^31 ..= 2^31-1 (the `.E` description, N3).
const S32: (i128, i128) = (-(1 << 31), (1 << 31) - 1);
/// ImmU20: 0 ..= 0xFFFFF.
const U20_MAX: u64 = 0xF_FFFF;

/// A piece of the text with the byte column of its first byte.
#[derive(Clone, Copy, Debug)]
struct Tok<'a> {
    s: &'a str,
    col: usize,
}

impl<'a> Tok<'a> {
    /// Without surrounding whitespace.
    fn trim(self) -> Tok<'a> {
        let lead = self.s.len() - self.s.trim_start().len();
        Tok {
            s: self.s.trim(),
            col: self.col + lead,
        }
    }

    /// The text from byte `i` on (empty past the end).
    fn from(self, i: usize) -> Tok<'a> {
        Tok {
            s: self.s.get(i..).unwrap_or(""),
            col: self.col + i.min(self.s.len()),
        }
    }

    /// The text before byte `i`.
    fn until(self, i: usize) -> Tok<'a> {
        Tok {
            s: self.s.get(..i).unwrap_or(self.s),
            col: self.col,
        }
    }

    /// Split at every `sep`, keeping columns.
    fn split(self, sep: char) -> Vec<Tok<'a>> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, c) in self.s.char_indices() {
            if c == sep {
                out.push(self.from(start).until(i - start));
                start = i + c.len_utf8();
            }
        }
        out.push(self.from(start));
        out
    }
}

fn err(reason: Reason, col: usize, detail: impl Into<String>) -> Rejection {
    Rejection::at(reason, col, detail)
}

/// Parses one ATOM line (the syntax lines above, with an optional trailing `;`). Mnemonics
/// and register names are case-sensitive, as the document writes them.
pub fn parse(text: &str) -> Result<Instruction, Rejection> {
    if let Some(i) = text.bytes().position(|b| !b.is_ascii()) {
        return Err(err(Reason::Syntax, i, "non-ASCII character"));
    }
    let mut line = Tok { s: text, col: 0 }.trim();
    if let Some(s) = line.s.strip_suffix(';') {
        line = Tok { s, col: line.col }.trim();
    }
    if line.s.is_empty() {
        return Err(err(Reason::Syntax, line.col, "empty instruction"));
    }

    // {@{!}Pg}
    let mut rest = line;
    let mut guard = None;
    if rest.s.starts_with('@') {
        let end = rest.s.find(char::is_whitespace).unwrap_or(rest.s.len());
        let tok = rest.until(end);
        let negated = tok.s.starts_with("@!");
        let pred = tok.from(if negated { 2 } else { 1 });
        guard = Some(Guard {
            negated,
            pred: parse_pred(pred)?,
        });
        rest = rest.from(end).trim();
    }

    // ATOM{.E}.op{.sz}
    let end = rest.s.find(char::is_whitespace).unwrap_or(rest.s.len());
    let mnemonic = rest.until(end);
    let operands = rest.from(end).trim();
    let (extended, op, size) = parse_mnemonic(mnemonic)?;
    if operands.s.is_empty() {
        return Err(err(Reason::Syntax, operands.col, "missing operands"));
    }

    // Operands: the sparse-predicate forms start with Ps.
    let ops: Vec<Tok> = operands.split(',').into_iter().map(Tok::trim).collect();
    let sparse_form = ops.first().is_some_and(|t| t.s.starts_with('P'));
    let want = match (sparse_form, op == Op::Cas) {
        (false, false) => 3,
        (false, true) => 4,
        (true, false) => 5,
        (true, true) => 6,
    };
    if ops.len() != want {
        return Err(err(
            Reason::Syntax,
            operands.col,
            format!(
                "ATOM.{}{} takes {want} operands, found {}",
                op.name(),
                if sparse_form { " (sparse form)" } else { "" },
                ops.len()
            ),
        ));
    }
    let mut it = ops.into_iter();
    let mut next = || it.next().unwrap_or(Tok { s: "", col: 0 });
    let sparse = if sparse_form {
        Some(parse_pred(next())?)
    } else {
        None
    };
    let rd_tok = next();
    let rd = parse_reg(rd_tok)?;
    let addr_tok = next();
    let addr = parse_address(addr_tok, extended, sparse_form)?;
    let rb_tok = next();
    let rb = parse_reg(rb_tok)?;
    let rc_tok = if op == Op::Cas { Some(next()) } else { None };
    let rc = match rc_tok {
        Some(t) => Some(parse_reg(t)?),
        None => None,
    };

    // Register rules that need no knob: 64-bit data and `.E` addresses use even-odd pairs
    // (the example comment on ATOM.ADD.U64), and CAS's Rb is never RZ.
    if size.is_64() {
        let mut data = vec![(rd, rd_tok, "Rd"), (rb, rb_tok, "Rb")];
        if let (Some(rc), Some(t)) = (rc, rc_tok) {
            data.push((rc, t, "Rc"));
        }
        for (r, t, what) in data {
            if !r.even_or_rz() {
                return Err(err(
                    Reason::RegisterPairAlignment,
                    t.col,
                    format!("{what} = {r} of a 64-bit .{} must be even", size.spelling()),
                ));
            }
        }
    }
    if let (true, Address::Reg { ra, .. }) = (extended, addr) {
        if !ra.even_or_rz() {
            return Err(err(
                Reason::RegisterPairAlignment,
                addr_tok.col + 1,
                format!("Ra = {ra} of a .E address must be even"),
            ));
        }
    }
    if op == Op::Cas && rb == Reg::RZ {
        return Err(err(
            Reason::CasRegisterPairing,
            rb_tok.col,
            "ATOM.CAS: Rb cannot be RZ",
        ));
    }

    Ok(Instruction {
        guard,
        extended,
        op,
        size,
        sparse,
        rd,
        addr,
        rb,
        rc,
    })
}

/// `ATOM{.E}.op{.sz}`, validated against the "Atomic Operations" table.
fn parse_mnemonic(m: Tok) -> Result<(bool, Op, Size), Rejection> {
    let parts = m.split('.');
    let mut parts = parts.into_iter();
    let head = parts.next().unwrap_or(m);
    if head.s != "ATOM" {
        return Err(err(
            Reason::UnknownOperation,
            head.col,
            format!("`{}` is not ATOM", head.s),
        ));
    }
    let mut rest: Vec<Tok> = parts.collect();
    if let Some(t) = rest.iter().find(|t| t.s.is_empty()) {
        return Err(err(Reason::Syntax, t.col, "empty `.` suffix"));
    }
    let extended = rest.first().is_some_and(|t| t.s == "E");
    if extended {
        rest.remove(0);
    }
    let Some(op_tok) = rest.first().copied() else {
        return Err(err(
            Reason::Syntax,
            m.col + m.s.len(),
            "missing .op after ATOM",
        ));
    };
    let op = Op::from_name(op_tok.s).ok_or_else(|| {
        err(
            Reason::UnknownOperation,
            op_tok.col,
            format!("`.{}` is not an ATOM operation", op_tok.s),
        )
    })?;
    let size_parts = rest.get(1..).unwrap_or(&[]);
    let (size, size_col) = match size_parts.first() {
        None => (Size::U32, op_tok.col),
        Some(first) => {
            if let Some(e) = size_parts.iter().find(|t| t.s == "E") {
                return Err(err(Reason::Syntax, e.col, ".E must follow ATOM directly"));
            }
            let spelled: Vec<&str> = size_parts.iter().map(|t| t.s).collect();
            let spelled = spelled.join(".");
            if spelled == "128" {
                return Err(err(
                    Reason::IllegalSize,
                    first.col,
                    ".128 (.U128) is named by the document but illegal",
                ));
            }
            let size = Size::from_spelling(&spelled).ok_or_else(|| {
                err(
                    Reason::UnsupportedType,
                    first.col,
                    format!("`.{spelled}` is not an ATOM size"),
                )
            })?;
            (size, first.col)
        }
    };
    if !op.allows(size) {
        return Err(err(
            Reason::UnsupportedType,
            size_col,
            format!(
                "the Atomic Operations table has no .{} .{} row",
                op.name(),
                size.spelling()
            ),
        ));
    }
    Ok((extended, op, size))
}

/// `R0`..`R254` or `RZ`.
fn parse_reg(t: Tok) -> Result<Reg, Rejection> {
    if t.s.is_empty() || !t.s.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(err(
            Reason::Syntax,
            t.col,
            format!("`{}` is not a register", t.s),
        ));
    }
    if t.s == "RZ" {
        return Ok(Reg::RZ);
    }
    let n =
        t.s.strip_prefix('R')
            .filter(|d| is_decimal(d))
            .and_then(|d| d.parse::<u8>().ok())
            .filter(|n| *n <= 254);
    n.map(Reg::R).ok_or_else(|| {
        err(
            Reason::InvalidRegister,
            t.col,
            format!("`{}` is not a general register (R0..R254, RZ)", t.s),
        )
    })
}

/// `P0`..`P6` or `PT`.
fn parse_pred(t: Tok) -> Result<Pred, Rejection> {
    if t.s.is_empty() || !t.s.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(err(
            Reason::Syntax,
            t.col,
            format!("`{}` is not a predicate", t.s),
        ));
    }
    if t.s == "PT" {
        return Ok(Pred::PT);
    }
    let n =
        t.s.strip_prefix('P')
            .filter(|d| is_decimal(d))
            .and_then(|d| d.parse::<u8>().ok())
            .filter(|n| *n <= 6);
    n.map(Pred::P).ok_or_else(|| {
        err(
            Reason::InvalidRegister,
            t.col,
            format!("`{}` is not a predicate (P0..P6, PT)", t.s),
        )
    })
}

/// Decimal digits without a leading zero (except `0` itself).
fn is_decimal(d: &str) -> bool {
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && (d == "0" || !d.starts_with('0'))
}

/// An unsigned decimal or `0x` hex number; `Ok(None)` when it does not fit 64 bits.
fn parse_number(t: Tok) -> Result<Option<u64>, Rejection> {
    let (digits, radix) = match t.s.strip_prefix("0x").or_else(|| t.s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (t.s, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Err(err(
            Reason::Syntax,
            t.col,
            format!("`{}` is not a number", t.s),
        ));
    }
    Ok(u64::from_str_radix(digits, radix).ok())
}

/// An optionally negative number as an `i128` (`None` past 64 bits of magnitude).
fn parse_signed(t: Tok) -> Result<Option<i128>, Rejection> {
    let (neg, num) = match t.s.strip_prefix('-') {
        Some(_) => (true, t.from(1).trim()),
        None => (false, t),
    };
    Ok(parse_number(num)?.map(|v| if neg { -i128::from(v) } else { i128::from(v) }))
}

/// `[Ra + Imm]`, `[Ra - Imm]`, `[Ra]` or `[ImmU20]`. The sparse forms allow `[Ra]` only.
fn parse_address(t: Tok, extended: bool, sparse: bool) -> Result<Address, Rejection> {
    let Some(inner) = t.s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) else {
        return Err(err(
            Reason::Syntax,
            t.col,
            format!("`{}` is not a [Ra + Imm] address", t.s),
        ));
    };
    let inner = Tok {
        s: inner,
        col: t.col + 1,
    }
    .trim();
    let Some(first) = inner.s.bytes().next() else {
        return Err(err(Reason::Syntax, inner.col, "empty address"));
    };
    if first.is_ascii_digit() || first == b'-' {
        if sparse {
            return Err(err(
                Reason::ImmediateNotAllowed,
                inner.col,
                "the sparse-predicate forms take [Ra] only",
            ));
        }
        let v = parse_signed(inner)?
            .filter(|v| (0..=i128::from(U20_MAX)).contains(v))
            .ok_or_else(|| {
                err(
                    Reason::ImmediateOutOfRange,
                    inner.col,
                    format!("`{}` is outside ImmU20 (0..0xfffff)", inner.s),
                )
            })?;
        return Ok(Address::Absolute(v as u32));
    }
    let reg_end = inner
        .s
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(inner.s.len());
    let ra = parse_reg(inner.until(reg_end))?;
    let rest = inner.from(reg_end).trim();
    if rest.s.is_empty() {
        return Ok(Address::Reg { ra, offset: 0 });
    }
    if sparse {
        return Err(err(
            Reason::ImmediateNotAllowed,
            rest.col,
            "the sparse-predicate forms take no immediate offset",
        ));
    }
    let neg = match rest.s.bytes().next() {
        Some(b'+') => false,
        Some(b'-') => true,
        _ => {
            return Err(err(
                Reason::Syntax,
                rest.col,
                format!("expected `+ Imm` or `- Imm`, found `{}`", rest.s),
            ));
        }
    };
    let num = rest.from(1).trim();
    let (lo, hi, field) = if extended {
        (S32.0, S32.1, "ImmS32")
    } else {
        (S20.0, S20.1, "ImmS20")
    };
    let offset = parse_number(num)?
        .map(|v| if neg { -i128::from(v) } else { i128::from(v) })
        .filter(|v| (lo..=hi).contains(v))
        .ok_or_else(|| {
            err(
                Reason::ImmediateOutOfRange,
                rest.col,
                format!("offset `{}` is outside {field}", rest.s),
            )
        })?;
    Ok(Address::Reg {
        ra,
        offset: offset as i64,
    })
}

// ---------------------------------------------------------------------------------------------
// Lower
// ---------------------------------------------------------------------------------------------

/// The float environment of a SASS ATOM from the profile's knobs. Rounding is always to nearest
/// even (`.RN`). Flushing applies to `.ADD` only: F32 per `sass.f32_add_ftz` (A2), F16x2 per
/// `sass.f16x2_add_subnormals` (A1), F64 never; the returned value per `float.ftz_return` (A3).
/// NaN bits per `float.nan_result` (A4), min/max per `float.minmax_*` (A5-A7). CAS compares
/// bits (A9).
pub fn float_env(profile: &Profile, op: AtomicOp, ty: DataType) -> Env {
    let ftz = match (op, ty) {
        (AtomicOp::Add, DataType::F32) => match profile.sass_f32_add_ftz {
            F32AddFtz::Flush => FtzMode::BOTH,
            F32AddFtz::Preserve => FtzMode::NONE,
        },
        (AtomicOp::Add, DataType::F16x2) => match profile.sass_f16x2_add_subnormals {
            F16x2AddSubnormals::Preserve => FtzMode::NONE,
            F16x2AddSubnormals::Flush => FtzMode::BOTH,
            F16x2AddSubnormals::FlushResults => FtzMode::OUTPUTS,
        },
        _ => FtzMode::NONE,
    };
    let (nan, nan_exact) = match profile.float_nan_result {
        NanResult::Canonical => (NanBits::Canonical, true),
        NanResult::Propagate => (NanBits::Propagate, true),
        NanResult::Any => (NanBits::Propagate, false),
    };
    let minmax = MinMaxRules {
        nan: match profile.float_minmax_nan {
            MinMaxNan::MinimumNumber => NanRule::MinimumNumber,
            MinMaxNan::IntelSnanWins => NanRule::IntelSnanWins,
            MinMaxNan::SpirvEither => NanRule::SpirvEither,
        },
        zero: match profile.float_minmax_signed_zero {
            MinMaxZero::Ordered => ZeroRule::Ordered,
            MinMaxZero::Either => ZeroRule::Either,
            MinMaxZero::Skylake => ZeroRule::Skylake,
        },
        denormals: match profile.float_minmax_denormals {
            MinMaxDenormals::CompareRaw => DenormRule::CompareRaw,
            MinMaxDenormals::FlushBeforeCompare => DenormRule::FlushBeforeCompare,
            MinMaxDenormals::Either => DenormRule::Either,
        },
    };
    Env {
        round: Round::NearestEven,
        ftz,
        ftz_return: profile.float_ftz_return == FtzReturn::Flushed,
        nan,
        nan_exact,
        minmax,
        compare: Compare::Bitwise,
        weak: false,
    }
}

/// SASS ATOM.CAS register pairing (A17): CAS.32 takes Rb = R2n and Rc = Rb+1 or RZ, CAS.64
/// takes Rb = R4n and Rc = Rb+2 or RZ. Checked unless `sass.cas_register_pairing = accept`.
fn cas_pairing(i: &Instruction, profile: &Profile) -> Option<Rejection> {
    if i.op != Op::Cas || profile.sass_cas_register_pairing == CasPairing::Accept {
        return None;
    }
    let (align, step) = if i.size.is_64() { (4, 2) } else { (2, 1) };
    let rc = i.rc.unwrap_or(Reg::RZ);
    let ok = match i.rb {
        Reg::R(b) if b % align == 0 => match rc {
            Reg::RZ => true,
            Reg::R(c) => u16::from(c) == u16::from(b) + step,
        },
        _ => false,
    };
    (!ok).then(|| {
        Rejection::new(
            Reason::CasRegisterPairing,
            format!(
                "ATOM.CAS.{}: Rb = {} must be R{}n and Rc = {rc} must be Rb+{step} or RZ",
                i.size.spelling(),
                i.rb,
                align
            ),
        )
    })
}

/// Lowers an ATOM to one global-memory [`MemInstr`] over the running lanes of `state`.
///
/// A lane runs when it is active and its guard holds (`P<n>` element nonzero; a missing
/// predicate is false). Registers read 32 bits per lane, a missing register reads 0. Addresses
/// (A16): `[Ra + Imm]` wraps in 32 bits before zero-extension (`wrap32`) or adds in 40 bits
/// (`add40`); `.E` adds to the 64-bit pair (Ra, Ra+1) modulo 2^64; `[ImmU20]` is the
/// immediate. An address that overlaps the shared or local window is not global memory and
/// faults with an invalid address space error; misaligned addresses follow `sass.misaligned`
/// (A15) and addresses outside allocated memory fault with an out-of-range error.
pub fn lower(i: &Instruction, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    if state.lanes > WARP_LANES {
        return Err(ModelError::Limit(format!(
            "SASS state has {} lanes; a warp has {WARP_LANES}",
            state.lanes
        )));
    }
    // Validity that depends on knobs, and the table for instructions built by hand.
    if !i.op.allows(i.size) {
        return Ok(Lowering::Invalid(Rejection::new(
            Reason::UnsupportedType,
            format!("no .{} .{} row", i.op.name(), i.size.spelling()),
        )));
    }
    if let (true, EImmediate::S20, Address::Reg { offset, .. }) =
        (i.extended, profile.sass_e_immediate, i.addr)
    {
        if !(S20.0..=S20.1).contains(&i128::from(offset)) {
            return Ok(Lowering::Invalid(Rejection::new(
                Reason::ImmediateOutOfRange,
                format!("offset {offset} is outside ImmS20 (sass.e_immediate = s20, N3)"),
            )));
        }
    }
    if let Some(r) = cas_pairing(i, profile) {
        return Ok(Lowering::Invalid(r));
    }
    let Some(op) = i.op.ir() else {
        return Ok(Lowering::Unspecified(
            "ATOM.SAFEADD: the document names it (a circular-queue put pointer increment) \
             but gives no formula, and none is public (A18)"
                .to_string(),
        ));
    };

    let ty = i.size.data_type();
    let wide = i.size.is_64();
    let read = |r: Reg, lane: u32| -> u64 {
        r.state_name()
            .and_then(|n| state.elem(&n, lane))
            .unwrap_or(0)
            & 0xFFFF_FFFF
    };
    let read_data = |r: Reg, lane: u32| -> u64 {
        if wide {
            read(r, lane) | read(r.next(), lane) << 32
        } else {
            read(r, lane)
        }
    };
    let holds = |g: &Guard, lane: u32| -> bool {
        let v = match g.pred {
            Pred::PT => true,
            Pred::P(n) => state.elem(&format!("P{n}"), lane).is_some_and(|v| v != 0),
        };
        v != g.negated
    };

    // Destination registers: Rd (and Rd+1), Ps.
    let mut dest_regs: Vec<String> = Vec::new();
    for r in [Some(i.rd), wide.then(|| i.rd.next())]
        .into_iter()
        .flatten()
    {
        if let Some(n) = r.state_name() {
            dest_regs.push(n);
        }
    }
    let ps_name = match i.sparse {
        Some(Pred::P(n)) => Some(format!("P{n}")),
        _ => None,
    };
    let mut declare = Vec::new();
    let lanes = state.lanes as usize;
    for (name, ty) in dest_regs
        .iter()
        .map(|n| (n, ElemType::B32))
        .chain(ps_name.iter().map(|n| (n, ElemType::BOOL)))
    {
        match state.regs.get(name) {
            None => declare.push((
                name.clone(),
                StateReg {
                    ty,
                    elems: vec![0; lanes],
                },
            )),
            Some(r) if r.elems.len() < lanes || r.ty.bits < ty.bits => {
                return Err(ModelError::BadState(format!(
                    "{name} ({} x {} bits) cannot receive {lanes} lanes of {} bits",
                    r.elems.len(),
                    r.ty.bits,
                    ty.bits
                )));
            }
            Some(_) => {}
        }
    }

    let mut accesses = Vec::new();
    let mut writes = Vec::new();
    for lane in 0..state.lanes {
        let active = state.active.get(lane as usize).copied().unwrap_or(false);
        if !active || !i.guard.as_ref().is_none_or(|g| holds(g, lane)) {
            continue;
        }
        let addr = match i.addr {
            Address::Absolute(imm) => u64::from(imm),
            Address::Reg { ra, offset } if i.extended => {
                let base = read(ra, lane) | read(ra.next(), lane) << 32;
                base.wrapping_add(offset as u64)
            }
            Address::Reg { ra, offset } => {
                let sum = read(ra, lane).wrapping_add(offset as u64);
                match profile.sass_address_arithmetic {
                    AddressArithmetic::Wrap32 => sum & 0xFFFF_FFFF,
                    AddressArithmetic::Add40 => sum & 0xFF_FFFF_FFFF,
                }
            }
        };
        let bytes = ty.bytes();
        let in_window = [state.shared_window, state.local_window]
            .iter()
            .flatten()
            .any(|w| w.overlaps(addr, bytes));
        let src = match i.op {
            Op::Cas => [
                read_data(i.rb, lane),
                read_data(i.rc.unwrap_or(Reg::RZ), lane),
            ],
            _ => [read_data(i.rb, lane), 0],
        };
        let dst = if dest_regs.is_empty() {
            Dest::None
        } else {
            // A pair starting at R254 ends in RZ: its high word goes nowhere, which the
            // shorter field list expresses.
            Dest::Fields(
                dest_regs
                    .iter()
                    .map(|name| RegField {
                        name: name.clone(),
                        idx: lane,
                        lo: 0,
                        bits: 32,
                        upper: Upper::Keep,
                    })
                    .collect(),
            )
        };
        accesses.push(Access {
            lane,
            addr,
            src,
            dst,
            fault: in_window.then_some(FaultClass::InvalidAddressSpace),
        });
        // Sparse forms: the model has no sparse pages, so Ps is false in every running lane.
        if let Some(name) = &ps_name {
            writes.push(StaticWrite {
                name: name.clone(),
                idx: lane,
                value: 0,
            });
        }
    }

    Ok(Lowering::Run(Lowered {
        instr: Instr::Mem(MemInstr {
            op,
            ty,
            space: Space::Global,
            env: float_env(profile, op, ty),
            misaligned: match profile.sass_misaligned {
                SassMisaligned::Fault => Misaligned::Fault,
                SassMisaligned::MaskLowBits => Misaligned::MaskLowBits,
                SassMisaligned::Undefined => Misaligned::Unspecified,
            },
            out_of_range: OutOfRange::Fault,
            same_address: SameAddress::AnyOrder,
            accesses,
        }),
        writes,
        declare,
    }))
}
