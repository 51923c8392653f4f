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
use crate::float::FtzMode;
use crate::ir::{
    Access, AtomicOp, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned, NanBits,
    OutOfRange, RegField, SameAddress, StaticWrite, Upper,
};
use crate::knobs::{
    AddressArithmetic, CasPairing, EImmediate, F16x2AddSubnormals, F32AddFtz, NanResult, Profile,
    SassMisaligned,
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
        self.short_name().map(|n| n.as_str().to_string())
    }

    /// [`Reg::state_name`] without an allocation (the lowering reads registers per lane).
    fn short_name(self) -> Option<ShortName> {
        match self {
            Reg::R(n) => Some(ShortName::new(b'R', n)),
            Reg::RZ => None,
        }
    }
}

/// A state name `R<n>` or `P<n>` (n at most 255) held on the stack.
#[derive(Clone, Copy)]
struct ShortName {
    buf: [u8; 4],
    len: usize,
}

impl ShortName {
    fn new(prefix: u8, n: u8) -> ShortName {
        let mut buf = [prefix, 0, 0, 0];
        let mut len = 1;
        for (d, at_least) in [(100u8, 100u8), (10, 10), (1, 0)] {
            if n >= at_least {
                buf[len] = b'0' + n / d % 10;
                len += 1;
            }
        }
        ShortName { buf, len }
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
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
            Address::Reg { ra, offset: 0 } => write!(f, "[{ra}]")?,
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

impl Instruction {
    /// The text NVIDIA's disassembler prints for this instruction (nvdisasm 11.8 on sm_50 and
    /// sm_52, `reference/tests/data/nvidia`), without its ` ;` terminator: a `PT` guard is
    /// omitted, `.U32` is omitted, CAS writes `.U64` as `.64`, a negative offset is written
    /// `[Ra+-0x..]`, and `[Ra]` has no offset. Sizes SPA 5.0 cannot encode (F16x2, F64) keep the
    /// document's spelling. [`parse`] reads this form back (extension X1 for `+-`).
    pub fn nvdisasm(&self) -> String {
        let mut out = String::new();
        match self.guard {
            Some(Guard {
                negated: false,
                pred: Pred::PT,
            })
            | None => {}
            Some(g) => out += &format!("@{}{} ", if g.negated { "!" } else { "" }, g.pred),
        }
        out += "ATOM";
        if self.extended {
            out += ".E";
        }
        out += ".";
        out += self.op.name();
        match (self.op, self.size) {
            (_, Size::U32) => {}
            (Op::Cas, Size::U64) => out += ".64",
            (_, z) => out += &format!(".{}", z.spelling()),
        }
        out += " ";
        if let Some(ps) = self.sparse {
            out += &format!("{ps}, ");
        }
        out += &format!("{}, ", self.rd);
        out += &match self.addr {
            Address::Reg { ra, offset: 0 } => format!("[{ra}]"),
            Address::Reg { ra, offset } if offset < 0 => {
                format!("[{ra}+-{:#x}]", offset.unsigned_abs())
            }
            Address::Reg { ra, offset } => format!("[{ra}+{offset:#x}]"),
            Address::Absolute(imm) => format!("[{imm:#x}]"),
        };
        out += &format!(", {}", self.rb);
        if let Some(rc) = self.rc {
            out += &format!(", {rc}");
        }
        out
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
        (true, false) => 4,
        (true, true) => 5,
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
        // CAS's Rb and Rc follow the more specific pairing rule, checked with its knob (A17).
        let mut data = vec![(rd, rd_tok, "Rd")];
        if op != Op::Cas {
            data.push((rb, rb_tok, "Rb"));
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
    if let (true, Address::Reg { ra, .. }) = (extended, addr)
        && !ra.even_or_rz()
    {
        return Err(err(
            Reason::RegisterPairAlignment,
            addr_tok.col + 1,
            format!("Ra = {ra} of a .E address must be even"),
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
        // Something shaped like a mnemonic (upper case, or dotted) is another operation;
        // anything else is not an instruction line.
        let mnemonic_like = m.s.contains('.')
            || (!head.s.is_empty()
                && head
                    .s
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()));
        return Err(err(
            if mnemonic_like {
                Reason::UnknownOperation
            } else {
                Reason::Syntax
            },
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
            if spelled == "128" || spelled == "U128" {
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

/// `R0`..`R254` or `RZ`. An immediate where the syntax line has a register is a syntax error.
fn parse_reg(t: Tok) -> Result<Reg, Rejection> {
    let n = parse_indexed(
        t,
        ('R', 254, "RZ"),
        "a register",
        "a general register (R0..R254, RZ)",
        true,
    )?;
    Ok(n.map_or(Reg::RZ, Reg::R))
}

/// `P0`..`P6` or `PT`.
fn parse_pred(t: Tok) -> Result<Pred, Rejection> {
    let n = parse_indexed(
        t,
        ('P', 6, "PT"),
        "a predicate",
        "a predicate (P0..P6, PT)",
        false,
    )?;
    Ok(n.map_or(Pred::PT, Pred::P))
}

/// A name of a register file: `<prefix><n>` with `n <= max` (`Some(n)`), or its special name
/// (`None`). Not a name at all (or, with `digit_is_syntax`, a number) is a syntax error; a
/// name outside the file is an invalid register.
fn parse_indexed(
    t: Tok,
    (prefix, max, special): (char, u8, &str),
    kind: &str,
    file: &str,
    digit_is_syntax: bool,
) -> Result<Option<u8>, Rejection> {
    if t.s.is_empty()
        || !t.s.bytes().all(|b| b.is_ascii_alphanumeric())
        || (digit_is_syntax && t.s.starts_with(|c: char| c.is_ascii_digit()))
    {
        return Err(err(
            Reason::Syntax,
            t.col,
            format!("`{}` is not {kind}", t.s),
        ));
    }
    if t.s == special {
        return Ok(None);
    }
    t.s.strip_prefix(prefix)
        .filter(|d| is_decimal(d))
        .and_then(|d| d.parse::<u8>().ok())
        .filter(|n| *n <= max)
        .map(Some)
        .ok_or_else(|| {
            err(
                Reason::InvalidRegister,
                t.col,
                format!("`{}` is not {file}", t.s),
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
    let mut num = rest.from(1).trim();
    // Extension X1 (not in the document): NVIDIA's disassembler writes a negative offset as
    // `[Ra+-0x190]` (nvdisasm 11.8, reference/tests/data/nvidia). The document's `[Ra - Imm]`
    // stays accepted; `+-`, written together as nvdisasm does, means the same.
    let neg = if rest.s.starts_with("+-") {
        num = num.from(1).trim();
        true
    } else {
        neg
    };
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
    // Round to nearest even, compare bitwise, no spurious compare-and-swap failure: `Env`'s
    // defaults, which `from_profile` keeps.
    let mut env = Env {
        ftz,
        ..Env::from_profile(profile)
    };
    // `canonical_single`: canonical NaN bits for 32- and 16-bit data only; a 64-bit NaN result
    // is any NaN (only its class is checked).
    if profile.float_nan_result == NanResult::CanonicalSingle && ty.bits() == 64 {
        env.nan = NanBits::Propagate;
        env.nan_exact = false;
    }
    env
}

/// SASS ATOM.CAS register pairing (A17): CAS.32 takes Rb = R2n and Rc = Rb+1 or RZ, CAS.64
/// takes Rb = R4n and Rc = Rb+2 or RZ. Checked unless `sass.cas_register_pairing = accept`.
fn cas_pairing(i: &Instruction, profile: &Profile) -> Option<Rejection> {
    if i.op != Op::Cas {
        return None;
    }
    if profile.sass_cas_register_pairing == CasPairing::Sm50Encoding {
        // What an SPA 5.0 word can say (`sass::encoding`): Rc = Rb+1 (Rb+2), Rc = RZ, or
        // Rb = RZ with any Rc; no alignment. A 64-bit pair still starts even (the example
        // comment on ATOM.ADD.U64), and the pair must exist (Rb+step below RZ).
        let step = if i.size.is_64() { 2 } else { 1 };
        let rc = i.rc.unwrap_or(Reg::RZ);
        let odd = [("Rb", i.rb), ("Rc", rc)]
            .into_iter()
            .find(|(_, r)| i.size.is_64() && !r.even_or_rz());
        if let Some((what, r)) = odd {
            return Some(Rejection::new(
                Reason::RegisterPairAlignment,
                format!(
                    "{what} = {r} of a 64-bit .{} must be even",
                    i.size.spelling()
                ),
            ));
        }
        let encodable = match (i.rb, rc) {
            (Reg::RZ, _) => true,
            (Reg::R(b), Reg::RZ) => u16::from(b) + step <= 254,
            (Reg::R(b), Reg::R(c)) => u16::from(c) == u16::from(b) + step,
        };
        return (!encodable).then(|| {
            Rejection::new(
                Reason::CasRegisterPairing,
                format!(
                    "ATOM.CAS.{}: an SPA 5.0 word has no field for Rc = {rc}: it is Rb+{step} \
                     (Rb = {}), RZ, or Rb is RZ",
                    i.size.spelling(),
                    i.rb
                ),
            )
        });
    }
    if profile.sass_cas_register_pairing == CasPairing::Accept {
        // Any registers, but a 64-bit operand still takes an even-odd pair (the example
        // comment on ATOM.ADD.U64); Rb = RZ compares with zero.
        let odd = [("Rb", i.rb), ("Rc", i.rc.unwrap_or(Reg::RZ))]
            .into_iter()
            .find(|(_, r)| i.size.is_64() && !r.even_or_rz());
        return odd.map(|(what, r)| {
            Rejection::new(
                Reason::RegisterPairAlignment,
                format!(
                    "{what} = {r} of a 64-bit .{} must be even",
                    i.size.spelling()
                ),
            )
        });
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
        && !(S20.0..=S20.1).contains(&i128::from(offset))
    {
        return Ok(Lowering::Invalid(Rejection::new(
            Reason::ImmediateOutOfRange,
            format!("offset {offset} is outside ImmS20 (sass.e_immediate = s20, N3)"),
        )));
    }
    if let Some(r) = cas_pairing(i, profile) {
        return Ok(Lowering::Invalid(r));
    }
    // A lane runs when it is active and its guard holds.
    let guard_holds = |lane: u32| -> bool {
        i.guard.as_ref().is_none_or(|g| {
            let v = match g.pred {
                Pred::PT => true,
                Pred::P(n) => state
                    .elem(ShortName::new(b'P', n).as_str(), lane)
                    .is_some_and(|v| v != 0),
            };
            v != g.negated
        })
    };
    let any_runs =
        (0..state.lanes).any(|l| state.active.get(l as usize) == Some(&true) && guard_holds(l));
    let Some(op) = i.op.ir() else {
        // SASS ATOM, {@{!}Pg}: a lane whose guard is false does not execute, so SAFEADD with
        // no running lane has no effect; otherwise its effect is unknown (A18).
        if !any_runs {
            return Ok(Lowering::Run(Lowered {
                instr: Instr::Mem(MemInstr {
                    op: AtomicOp::Add,
                    ty: DataType::U64,
                    space: Space::Global,
                    env: Env::default(),
                    misaligned: Misaligned::Fault,
                    out_of_range: OutOfRange::Fault,
                    same_address: SameAddress::AnyOrder,
                    accesses: vec![],
                }),
                writes: vec![],
                declare: vec![],
            }));
        }
        return Ok(Lowering::Unspecified(
            "ATOM.SAFEADD: the document names it (a circular-queue put pointer increment) \
             but gives no formula, and none is public (A18)"
                .to_string(),
        ));
    };

    let ty = i.size.data_type();
    let wide = i.size.is_64();
    let read = |r: Reg, lane: u32| -> u64 {
        r.short_name()
            .and_then(|n| state.elem(n.as_str(), lane))
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
            Pred::P(n) => state
                .elem(ShortName::new(b'P', n).as_str(), lane)
                .is_some_and(|v| v != 0),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::{DenormRule, MinMaxRules, NanRule, Round, ZeroRule};
    use crate::ir::Compare;

    use crate::outcome::Outcome;
    use crate::program::{Dialect, run};

    #[test]
    fn short_names_are_the_state_names() {
        for n in 0..=255u8 {
            assert_eq!(ShortName::new(b'R', n).as_str(), format!("R{n}"));
            assert_eq!(ShortName::new(b'P', n).as_str(), format!("P{n}"));
        }
        assert_eq!(Reg::R(17).state_name().as_deref(), Some("R17"));
        assert_eq!(Reg::RZ.state_name(), None);
    }
    use crate::state::Window;

    // ---- helpers -------------------------------------------------------------------------

    fn profile(knobs: &[(&str, &str)]) -> Profile {
        let mut p = Profile::default();
        for (k, o) in knobs {
            p.set(k, o).unwrap();
        }
        p
    }

    fn set_reg(s: &mut State, name: &str, elems: &[u64]) {
        s.regs.insert(
            name.to_string(),
            StateReg {
                ty: ElemType::B32,
                elems: elems.to_vec(),
            },
        );
    }

    fn set_pred(s: &mut State, name: &str, elems: &[u64]) {
        s.regs.insert(
            name.to_string(),
            StateReg {
                ty: ElemType::BOOL,
                elems: elems.to_vec(),
            },
        );
    }

    /// One lane, global memory 0x1000..0x1100, R2 = 0x1000.
    fn state1() -> State {
        let mut s = State::new(1);
        s.global.alloc(0x1000, 0x100).unwrap();
        set_reg(&mut s, "R2", &[0x1000]);
        s
    }

    fn lowering(text: &str, s: &State, p: &Profile) -> Lowering {
        let i = parse(text).unwrap_or_else(|r| panic!("{text}: {r}"));
        lower(&i, s, p).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn lowered(text: &str, s: &State, p: &Profile) -> Lowered {
        match lowering(text, s, p) {
            Lowering::Run(l) => l,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn mem(text: &str, s: &State, p: &Profile) -> MemInstr {
        match lowered(text, s, p).instr {
            Instr::Mem(m) => m,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn addrs(text: &str, s: &State, p: &Profile) -> Vec<u64> {
        mem(text, s, p).accesses.iter().map(|a| a.addr).collect()
    }

    fn lanes_of(text: &str, s: &State) -> Vec<u32> {
        mem(text, s, &Profile::default())
            .accesses
            .iter()
            .map(|a| a.lane)
            .collect()
    }

    fn outcome(text: &str, s: &State, p: &Profile) -> Outcome {
        run(Dialect::Sass, text, s, p).unwrap().outcome
    }

    fn completed(text: &str, s: &State, p: &Profile) -> State {
        match outcome(text, s, p) {
            Outcome::Completed(c) => {
                assert!(c.open.is_empty(), "{text}: {:?}", c.open);
                c.state
            }
            other => panic!("{text}: {other:?}"),
        }
    }

    fn faults(text: &str, s: &State, p: &Profile) -> Vec<(u32, FaultClass)> {
        match outcome(text, s, p) {
            Outcome::Fault(f) => f.lanes,
            other => panic!("{text}: {other:?}"),
        }
    }

    fn r(s: &State, name: &str) -> Vec<u64> {
        s.regs
            .get(name)
            .map(|r| r.elems.clone())
            .unwrap_or_default()
    }

    // ---- parse and print -----------------------------------------------------------------

    #[test]
    fn document_examples_and_format_forms_parse_to_their_canonical_text() {
        for (text, canonical) in [
            // The document's examples.
            (
                "ATOM.ADD.F32.FTZ.RN    R0, [R1 - 400], R9;",
                "ATOM.ADD.F32.FTZ.RN R0, [R1-0x190], R9",
            ),
            (
                "ATOM.ADD.U64           R0, [R4 + 8], R2;",
                "ATOM.ADD.U64 R0, [R4+0x8], R2",
            ),
            (
                "ATOM.ADD.S32           R9, [0xfff00], R8;",
                "ATOM.ADD.S32 R9, [0xfff00], R8",
            ),
            (
                "ATOM.MIN.S64           R0, [R4 + 8], R2;",
                "ATOM.MIN.S64 R0, [R4+0x8], R2",
            ),
            // FORMAT-v0 text forms.
            (
                "@!P1 ATOM.E.CAS.64 R0, [R2+0x8], R4, R6",
                "@!P1 ATOM.E.CAS.U64 R0, [R2+0x8], R4, R6",
            ),
            (
                "ATOM.ADD.F16x2.RN R0, [0x100], R4",
                "ATOM.ADD.F16x2.RN R0, [0x100], R4",
            ),
            (
                "ATOM.MIN.S32 P0, R0, [R2], R4",
                "ATOM.MIN.S32 P0, R0, [R2], R4",
            ),
            // Defaults, aliases, offsets.
            (
                "ATOM.INC R1, [RZ+0x40], R2",
                "ATOM.INC.U32 R1, [RZ+0x40], R2",
            ),
            (
                "ATOM.ADD.32 R0, [R2 + 16], R3",
                "ATOM.ADD.U32 R0, [R2+0x10], R3",
            ),
            (
                "ATOM.ADD R0, [R1-0x190], R3 ;",
                "ATOM.ADD.U32 R0, [R1-0x190], R3",
            ),
            (
                "  @PT ATOM.E.EXCH R0,[R2 - 0X10],R3  ",
                "@PT ATOM.E.EXCH.U32 R0, [R2-0x10], R3",
            ),
            (
                "ATOM.ADD.F16x2.FTZ.RN R0, [R2+0x0], R4",
                "ATOM.ADD.F16x2.FTZ.RN R0, [R2], R4",
            ),
            (
                "ATOM.E.CAS PT, RZ, [R2], R4, RZ",
                "ATOM.E.CAS.U32 PT, RZ, [R2], R4, RZ",
            ),
        ] {
            let i = parse(text).unwrap_or_else(|r| panic!("{text}: {r}"));
            assert_eq!(i.to_string(), canonical, "{text}");
            assert_eq!(parse(canonical), Ok(i), "{canonical}");
        }
    }

    #[test]
    fn parsed_fields_follow_the_syntax_lines() {
        let i = parse("@!P1 ATOM.E.CAS.64 R0, [R2+0x8], R4, R6").unwrap();
        assert_eq!(
            i,
            Instruction {
                guard: Some(Guard {
                    negated: true,
                    pred: Pred::P(1)
                }),
                extended: true,
                op: Op::Cas,
                size: Size::U64,
                sparse: None,
                rd: Reg::R(0),
                addr: Address::Reg {
                    ra: Reg::R(2),
                    offset: 8
                },
                rb: Reg::R(4),
                rc: Some(Reg::R(6)),
            }
        );
        let i = parse("ATOM.ADD.F32.FTZ.RN R0, [R1 - 400], R9").unwrap();
        assert_eq!(
            i.addr,
            Address::Reg {
                ra: Reg::R(1),
                offset: -400
            }
        );
        assert_eq!(
            parse("ATOM.ADD.S32 R9, [0xfff00], R8").unwrap().addr,
            Address::Absolute(0xfff00)
        );
        let i = parse("ATOM.MAX.S32 P6, R0, [R2], R4").unwrap();
        assert_eq!((i.sparse, i.rc), (Some(Pred::P(6)), None));
        // A1: the two F16x2 spellings are kept apart.
        assert_eq!(
            parse("ATOM.ADD.F16x2.FTZ.RN R0, [R2], R4").unwrap().size,
            Size::F16x2FtzRn
        );
        assert_eq!(
            parse("ATOM.MIN.F16x2.RN R0, [R2], R4").unwrap().size,
            Size::F16x2Rn
        );
        // Immediate bounds are inclusive.
        for (text, offset) in [
            ("ATOM.ADD R0, [R2+0x7ffff], R3", 0x7ffff),
            ("ATOM.ADD R0, [R2-0x80000], R3", -0x80000),
            ("ATOM.E.ADD R0, [R2+0x7fffffff], R3", 0x7fff_ffff),
            ("ATOM.E.ADD R0, [R2-0x80000000], R3", -0x8000_0000),
            ("ATOM.E.ADD R0, [R2-2147483648], R3", -0x8000_0000),
        ] {
            let a = parse(text).unwrap_or_else(|r| panic!("{text}: {r}")).addr;
            assert_eq!(
                a,
                Address::Reg {
                    ra: Reg::R(2),
                    offset
                },
                "{text}"
            );
        }
        assert_eq!(
            parse("ATOM.ADD R0, [0xfffff], R3").unwrap().addr,
            Address::Absolute(0xfffff)
        );
        assert_eq!(parse("ATOM.ADD R254, [R2], R3").unwrap().rd, Reg::R(254));
    }

    #[test]
    fn every_valid_form_round_trips_through_print() {
        let guards = [
            None,
            Some(Guard {
                negated: false,
                pred: Pred::P(0),
            }),
            Some(Guard {
                negated: true,
                pred: Pred::P(3),
            }),
            Some(Guard {
                negated: false,
                pred: Pred::PT,
            }),
            Some(Guard {
                negated: true,
                pred: Pred::PT,
            }),
        ];
        let mut n = 0;
        for &op in Op::ALL {
            for &size in op.sizes() {
                for extended in [false, true] {
                    let mut addrs = vec![
                        (
                            None,
                            Address::Reg {
                                ra: Reg::R(2),
                                offset: 0,
                            },
                        ),
                        (
                            None,
                            Address::Reg {
                                ra: Reg::R(2),
                                offset: 0x10,
                            },
                        ),
                        (
                            None,
                            Address::Reg {
                                ra: Reg::RZ,
                                offset: -4,
                            },
                        ),
                        (
                            None,
                            Address::Reg {
                                ra: Reg::R(4),
                                offset: S20.0 as i64,
                            },
                        ),
                        (
                            None,
                            Address::Reg {
                                ra: Reg::R(4),
                                offset: S20.1 as i64,
                            },
                        ),
                        (None, Address::Absolute(0)),
                        (None, Address::Absolute(0xFFFFF)),
                        (
                            Some(Pred::P(2)),
                            Address::Reg {
                                ra: Reg::R(6),
                                offset: 0,
                            },
                        ),
                        (
                            Some(Pred::PT),
                            Address::Reg {
                                ra: Reg::RZ,
                                offset: 0,
                            },
                        ),
                    ];
                    if extended {
                        addrs.push((
                            None,
                            Address::Reg {
                                ra: Reg::R(8),
                                offset: S32.0 as i64,
                            },
                        ));
                        addrs.push((
                            None,
                            Address::Reg {
                                ra: Reg::R(8),
                                offset: S32.1 as i64,
                            },
                        ));
                    } else {
                        addrs.push((
                            None,
                            Address::Reg {
                                ra: Reg::R(7),
                                offset: -1,
                            },
                        ));
                    }
                    for (sparse, addr) in addrs {
                        for guard in guards {
                            for (rd, rb, rc) in [
                                (
                                    Reg::R(0),
                                    Reg::R(4),
                                    Reg::R(if size.is_64() { 6 } else { 5 }),
                                ),
                                (Reg::RZ, Reg::R(252), Reg::RZ),
                                (Reg::R(254), Reg::R(8), Reg::R(10)),
                            ] {
                                let x = Instruction {
                                    guard,
                                    extended,
                                    op,
                                    size,
                                    sparse,
                                    rd,
                                    addr,
                                    rb,
                                    rc: (op == Op::Cas).then_some(rc),
                                };
                                let text = x.to_string();
                                assert_eq!(parse(&text), Ok(x), "{text}");
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
        // 37 (op, size) rows of the table; 10 addresses without .E, 11 with; 5 guards; 3
        // register sets.
        assert_eq!(n, 37 * (10 + 11) * 5 * 3);
    }

    #[test]
    fn illegal_forms_are_rejected_with_reason_and_column() {
        use Reason::*;
        for (text, reason, col) in [
            // Mnemonic, operation and size.
            ("", Syntax, 0),
            ("atom.add R0, [R2], R3", UnknownOperation, 0),
            ("RED.ADD R0, [R2], R3", UnknownOperation, 0),
            ("ATOM.add R0, [R2], R3", UnknownOperation, 5),
            ("ATOM.SUB R0, [R2], R3", UnknownOperation, 5),
            ("ATOM.E.FADD R0, [R2], R3", UnknownOperation, 7),
            ("ATOM R0, [R2], R3", Syntax, 4),
            ("ATOM.E R0, [R2], R3", Syntax, 6),
            ("ATOM..ADD R0, [R2], R3", Syntax, 5),
            ("ATOM.ADD. R0, [R2], R3", Syntax, 9),
            ("ATOM.ADD.E.U32 R0, [R2], R3", Syntax, 9),
            ("ATOM.ADD.128 R0, [R2], R4", IllegalSize, 9),
            ("ATOM.CAS.128 R0, [R2], R4, R5", IllegalSize, 9),
            ("ATOM.ADD.U16 R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.ADD.U128 R0, [R2], R4", IllegalSize, 9),
            ("ATOM.ADD.F32 R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.ADD.F32.RN R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.ADD.F16X2.RN R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.ADD.U32.U32 R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.ADD.u32 R0, [R2], R3", UnsupportedType, 9),
            // Sizes the table has no row for.
            ("ATOM.ADD.S64 R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.MIN.F32.FTZ.RN R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.MAX.F64.RN R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.INC.S32 R0, [R2], R3", UnsupportedType, 9),
            ("ATOM.INC.64 R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.DEC.U64 R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.AND.S64 R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.OR.F16x2.RN R0, [R2], R4", UnsupportedType, 8),
            ("ATOM.XOR.S64 R0, [R2], R4", UnsupportedType, 9),
            ("ATOM.EXCH.F32.FTZ.RN R0, [R2], R4", UnsupportedType, 10),
            ("ATOM.EXCH.S64 R0, [R2], R4", UnsupportedType, 10),
            ("ATOM.SAFEADD R0, [R2], R4", UnsupportedType, 5),
            ("ATOM.SAFEADD.U32 R0, [R2], R4", UnsupportedType, 13),
            ("ATOM.E.SAFEADD.S64 R0, [R2], R4", UnsupportedType, 15),
            ("ATOM.CAS.S64 R0, [R2], R4, R6", UnsupportedType, 9),
            ("ATOM.CAS.F32.FTZ.RN R0, [R2], R4, R5", UnsupportedType, 9),
            // Operand lists.
            ("ATOM.ADD", Syntax, 8),
            ("ATOM.ADD ;", Syntax, 8),
            ("ATOM.ADD R0, [R2]", Syntax, 9),
            ("ATOM.ADD R0, [R2], R3, R4", Syntax, 9),
            ("ATOM.CAS R0, [R2], R4", Syntax, 9),
            ("ATOM.CAS R0, [R2], R4, R5, R6", Syntax, 9),
            ("ATOM.ADD P0, R0, [R2], R3, R4", Syntax, 9),
            ("ATOM.CAS P0, R0, [R2], R4", Syntax, 9),
            ("ATOM.ADD R0, , R3", Syntax, 13),
            ("ATOM.ADD R0, [R2], R3 ;;", Syntax, 19),
            ("ATOM.ADD R0, [R2], R3 &req_6", Syntax, 19),
            ("ATOM.ADD R0, [R2], R3 ; // comment", Syntax, 19),
            ("ATOM.ADD R0, [R2], R3 \u{e9}", Syntax, 22),
            // Addresses.
            ("ATOM.ADD R0, R2, R3", Syntax, 13),
            ("ATOM.ADD R0, [R2, R3", Syntax, 13),
            ("ATOM.ADD R0, [], R3", Syntax, 14),
            ("ATOM.ADD R0, [R2 R3], R4", Syntax, 17),
            ("ATOM.ADD R0, [R2 * 4], R3", Syntax, 17),
            ("ATOM.ADD R0, [R2 + -16], R3", Syntax, 19),
            ("ATOM.ADD R0, [R2 + 0xg], R3", Syntax, 19),
            ("ATOM.ADD R0, [R2 + 0x], R3", Syntax, 19),
            ("ATOM.ADD R0, [R2 + ], R3", Syntax, 18),
            ("ATOM.ADD R0, [0x+5], R3", Syntax, 14),
            ("ATOM.ADD R0, [R2+0x80000], R3", ImmediateOutOfRange, 16),
            ("ATOM.ADD R0, [R2-0x80001], R3", ImmediateOutOfRange, 16),
            ("ATOM.ADD R0, [R2+524288], R3", ImmediateOutOfRange, 16),
            (
                "ATOM.ADD R0, [R2+99999999999999999999999], R3",
                ImmediateOutOfRange,
                16,
            ),
            ("ATOM.ADD R0, [0x100000], R3", ImmediateOutOfRange, 14),
            ("ATOM.ADD R0, [-4], R3", ImmediateOutOfRange, 14),
            (
                "ATOM.E.ADD R0, [R2+0x80000000], R3",
                ImmediateOutOfRange,
                18,
            ),
            (
                "ATOM.E.ADD R0, [R2-0x80000001], R3",
                ImmediateOutOfRange,
                18,
            ),
            ("ATOM.E.ADD R0, [0x100000], R3", ImmediateOutOfRange, 16),
            // Sparse-predicate forms take [Ra] only.
            ("ATOM.ADD P0, R0, [R2+0x4], R3", ImmediateNotAllowed, 20),
            ("ATOM.ADD P0, R0, [R2+0x0], R3", ImmediateNotAllowed, 20),
            ("ATOM.ADD P0, R0, [R2 - 8], R3", ImmediateNotAllowed, 21),
            ("ATOM.ADD P0, R0, [0x10], R3", ImmediateNotAllowed, 18),
            (
                "ATOM.E.CAS.U64 P1, R0, [R2+0x8], R4, R6",
                ImmediateNotAllowed,
                26,
            ),
            // Registers and predicates.
            ("ATOM.ADD R255, [R2], R3", InvalidRegister, 9),
            ("ATOM.ADD R0, [R2], R07", InvalidRegister, 19),
            ("ATOM.ADD R0, [R2], r3", InvalidRegister, 19),
            ("ATOM.ADD R0, [R2], R", InvalidRegister, 19),
            ("ATOM.ADD R0, [R2], R1000000", InvalidRegister, 19),
            ("ATOM.ADD R0, [X2], R3", InvalidRegister, 14),
            ("ATOM.ADD R0, [R256+0x4], R3", InvalidRegister, 14),
            ("ATOM.ADD R0, [R2], P1", InvalidRegister, 19),
            ("ATOM.ADD R0, [R2], R-1", Syntax, 19),
            ("ATOM.ADD P7, R0, [R2], R3", InvalidRegister, 9),
            ("ATOM.ADD PZ, R0, [R2], R3", InvalidRegister, 9),
            ("ATOM.ADD P0, P1, [R2], R3", InvalidRegister, 13),
            ("@P7 ATOM.ADD R0, [R2], R3", InvalidRegister, 1),
            ("@!P9 ATOM.ADD R0, [R2], R3", InvalidRegister, 2),
            ("@R0 ATOM.ADD R0, [R2], R3", InvalidRegister, 1),
            ("@pt ATOM.ADD R0, [R2], R3", InvalidRegister, 1),
            ("@ ATOM.ADD R0, [R2], R3", Syntax, 1),
            ("@!! ATOM.ADD R0, [R2], R3", Syntax, 2),
            ("@P0ATOM.ADD R0, [R2], R3", Syntax, 1),
            // Even-odd pairs of 64-bit data and of .E addresses.
            ("ATOM.ADD.U64 R1, [R2], R4", RegisterPairAlignment, 13),
            ("ATOM.ADD.U64 R0, [R2], R5", RegisterPairAlignment, 23),
            ("ATOM.MIN.S64 R0, [R4 + 8], R3", RegisterPairAlignment, 27),
            ("ATOM.ADD.F64.RN R0, [R2], R3", RegisterPairAlignment, 26),
            ("ATOM.EXCH.64 R253, [R2], R4", RegisterPairAlignment, 13),
            ("ATOM.E.ADD R0, [R3], R4", RegisterPairAlignment, 16),
            ("ATOM.E.ADD P0, R0, [R3], R4", RegisterPairAlignment, 20),
            ("ATOM.E.ADD R0, [R255+0x4], R4", InvalidRegister, 16),
        ] {
            match parse(text) {
                Ok(i) => panic!("{text:?} parsed as {i}"),
                Err(r) => {
                    assert_eq!((r.reason, r.column), (reason, Some(col)), "{text:?}: {r}")
                }
            }
        }
    }

    #[test]
    fn parse_never_panics_and_what_it_accepts_round_trips() {
        let seeds = [
            "@!P1 ATOM.E.CAS.64 R0, [R2+0x8], R4, R6;",
            "ATOM.ADD.F32.FTZ.RN R0, [R1 - 400], R9",
            "ATOM.MIN.S32 P0, R0, [R2], R4",
            "ATOM.ADD.S32 R9, [0xfff00], R8",
        ];
        let extra = [
            '@', '!', '.', ',', '[', ']', '+', '-', ' ', '0', 'x', 'R', 'P', 'Z', ';', 'é',
        ];
        let mut accepted = 0;
        for seed in seeds {
            let chars: Vec<char> = seed.chars().collect();
            let mut variants = Vec::new();
            for k in 0..=chars.len() {
                let (a, b) = chars.split_at(k);
                variants.push(a.iter().collect::<String>());
                variants.push(b.iter().collect::<String>());
                if !b.is_empty() {
                    variants.push(a.iter().chain(&b[1..]).collect::<String>());
                }
                for c in extra {
                    variants.push(a.iter().chain([&c]).chain(b).collect::<String>());
                }
            }
            for v in variants {
                if let Ok(i) = parse(&v) {
                    accepted += 1;
                    assert_eq!(parse(&i.to_string()), Ok(i), "{v:?}");
                }
            }
        }
        assert!(accepted > 20, "{accepted}");
    }

    // ---- lowering: addresses -------------------------------------------------------------

    #[test]
    fn a16_address_arithmetic_wraps_in_32_bits_or_adds_in_40() {
        let wrap32 = Profile::default();
        let add40 = profile(&[("sass.address_arithmetic", "add40")]);
        let mut s = State::new(2);
        set_reg(&mut s, "R1", &[0, 0xFFFF_FFFF]);
        // Ra = 0, imm = -4: 0x00FFFFFFFC (32-bit wrap, zero-extended) or 0xFFFFFFFFFC.
        let t = "ATOM.ADD R0, [R1-0x4], R2";
        assert_eq!(addrs(t, &s, &wrap32), vec![0xFFFF_FFFC, 0xFFFF_FFFB]);
        assert_eq!(addrs(t, &s, &add40), vec![0xFF_FFFF_FFFC, 0xFFFF_FFFB]);
        // Ra = 0xFFFFFFFF, imm = +4: 3 or 0x100000003.
        let t = "ATOM.ADD R0, [R1+0x4], R2";
        assert_eq!(addrs(t, &s, &wrap32), vec![4, 3]);
        assert_eq!(addrs(t, &s, &add40), vec![4, 0x1_0000_0003]);
        // RZ reads zero; a missing register reads zero.
        assert_eq!(
            addrs("ATOM.ADD R0, [RZ+0x40], R2", &s, &wrap32),
            vec![0x40, 0x40]
        );
        assert_eq!(
            addrs("ATOM.ADD R0, [R9-0x10], R2", &s, &add40),
            vec![0xFF_FFFF_FFF0; 2]
        );
        // ImmU20: the immediate itself, whatever the registers and the knob.
        assert_eq!(
            addrs("ATOM.ADD R0, [0xfff00], R2", &s, &add40),
            vec![0xfff00, 0xfff00]
        );
        assert_eq!(
            addrs("ATOM.E.ADD R0, [0x40], R2", &s, &wrap32),
            vec![0x40, 0x40]
        );
    }

    #[test]
    fn e_addresses_add_to_the_64_bit_pair() {
        let p = Profile::default();
        let mut s = State::new(3);
        set_reg(&mut s, "R2", &[0xFFFF_FFF0, 0, 0x10]);
        set_reg(&mut s, "R3", &[0x1, 0, 0xDEAD_BEEF]);
        // (R2, R3) + imm modulo 2^64: the carry reaches the high word; 0 - 4 wraps to 2^64 - 4.
        assert_eq!(
            addrs("ATOM.E.ADD R0, [R2+0x20], R4", &s, &p),
            vec![0x2_0000_0010, 0x20, 0xDEAD_BEEF_0000_0030]
        );
        assert_eq!(
            addrs("ATOM.E.ADD R0, [R2-0x4], R4", &s, &p),
            vec![0x1_FFFF_FFEC, u64::MAX - 3, 0xDEAD_BEEF_0000_000C]
        );
        // The A16 knob is about the 32-bit form only.
        let add40 = profile(&[("sass.address_arithmetic", "add40")]);
        assert_eq!(
            addrs("ATOM.E.ADD R0, [R2-0x4], R4", &s, &add40)[1],
            u64::MAX - 3
        );
        assert_eq!(addrs("ATOM.E.ADD R0, [RZ+0x40], R4", &s, &p), vec![0x40; 3]);
    }

    #[test]
    fn n3_e_immediate_beyond_s20_depends_on_the_knob() {
        let s = state1();
        let t = "ATOM.E.ADD R0, [R2+0x80000], R4";
        match lowering(t, &s, &Profile::default()) {
            Lowering::Invalid(r) => assert_eq!(r.reason, Reason::ImmediateOutOfRange),
            other => panic!("{other:?}"),
        }
        let s32 = profile(&[("sass.e_immediate", "s32")]);
        // R2 = 0x1000, R3 missing = 0.
        assert_eq!(addrs(t, &s, &s32), vec![0x8_1000]);
        assert_eq!(
            addrs("ATOM.E.ADD R0, [R2-0x80000000], R4", &s, &s32),
            vec![0xFFFF_FFFF_8000_1000]
        );
        // Within S20 both options agree.
        assert_eq!(
            addrs("ATOM.E.ADD R0, [R2+0x7ffff], R4", &s, &Profile::default()),
            vec![0x8_0FFF]
        );
    }

    #[test]
    fn addresses_in_the_shared_or_local_window_are_not_global() {
        let mut s = State::new(4);
        s.shared_window = Some(Window {
            base: 0x1000,
            len: 0x100,
        });
        s.local_window = Some(Window {
            base: 0x8000,
            len: 0x10,
        });
        set_reg(&mut s, "R2", &[0x10FC, 0x1100, 0x800C, 0x0FF8]);
        let faults_of = |text: &str| -> Vec<Option<FaultClass>> {
            mem(text, &s, &Profile::default())
                .accesses
                .iter()
                .map(|a| a.fault)
                .collect()
        };
        let bad = Some(FaultClass::InvalidAddressSpace);
        assert_eq!(
            faults_of("ATOM.ADD R0, [R2], R4"),
            vec![bad, None, bad, None]
        );
        // 8 bytes at 0xFF8 end at 0x1000, just outside; at 0xFFC they would overlap.
        assert_eq!(
            faults_of("ATOM.ADD.U64 R0, [R2], R4"),
            vec![bad, None, bad, None]
        );
        assert_eq!(faults_of("ATOM.ADD.U64 R0, [R2+0x4], R4")[3], bad);
        // End to end: the run faults in those lanes.
        assert_eq!(
            faults("ATOM.ADD R0, [R2], R4", &s, &Profile::default()),
            vec![
                (0, FaultClass::InvalidAddressSpace),
                (1, FaultClass::AddressOutOfRange),
                (2, FaultClass::InvalidAddressSpace),
                (3, FaultClass::AddressOutOfRange),
            ]
        );
    }

    // ---- lowering: lanes, operands, destinations -----------------------------------------

    #[test]
    fn guards_and_active_lanes_pick_the_running_lanes() {
        let mut s = State::new(4);
        s.active = vec![true, true, true, false];
        set_pred(&mut s, "P0", &[1, 0, 1, 1]);
        assert_eq!(lanes_of("ATOM.ADD R0, [R2], R4", &s), vec![0, 1, 2]);
        assert_eq!(lanes_of("@P0 ATOM.ADD R0, [R2], R4", &s), vec![0, 2]);
        assert_eq!(lanes_of("@!P0 ATOM.ADD R0, [R2], R4", &s), vec![1]);
        assert_eq!(lanes_of("@PT ATOM.ADD R0, [R2], R4", &s), vec![0, 1, 2]);
        assert_eq!(
            lanes_of("@!PT ATOM.ADD R0, [R2], R4", &s),
            Vec::<u32>::new()
        );
        // A predicate the state does not give is false.
        assert_eq!(lanes_of("@P1 ATOM.ADD R0, [R2], R4", &s), Vec::<u32>::new());
        assert_eq!(lanes_of("@!P1 ATOM.ADD R0, [R2], R4", &s), vec![0, 1, 2]);
    }

    #[test]
    fn lowering_maps_ops_types_and_fixed_rules() {
        let s = state1();
        let p = Profile::default();
        for (text, op, ty) in [
            ("ATOM.ADD R0, [R2], R4", AtomicOp::Add, DataType::U32),
            ("ATOM.MIN.S32 R0, [R2], R4", AtomicOp::Min, DataType::S32),
            ("ATOM.MAX.S64 R0, [R2], R4", AtomicOp::Max, DataType::S64),
            ("ATOM.INC R0, [R2], R4", AtomicOp::IncBounded, DataType::U32),
            ("ATOM.DEC R0, [R2], R4", AtomicOp::DecBounded, DataType::U32),
            ("ATOM.AND.64 R0, [R2], R4", AtomicOp::And, DataType::U64),
            ("ATOM.OR.S32 R0, [R2], R4", AtomicOp::Or, DataType::S32),
            ("ATOM.XOR R0, [R2], R4", AtomicOp::Xor, DataType::U32),
            ("ATOM.EXCH.U64 R0, [R2], R4", AtomicOp::Exch, DataType::U64),
            ("ATOM.CAS R0, [R2], R4, R5", AtomicOp::Cas, DataType::U32),
            (
                "ATOM.ADD.F32.FTZ.RN R0, [R2], R4",
                AtomicOp::Add,
                DataType::F32,
            ),
            (
                "ATOM.ADD.F16x2.RN R0, [R2], R4",
                AtomicOp::Add,
                DataType::F16x2,
            ),
            (
                "ATOM.MAX.F16x2.FTZ.RN R0, [R2], R4",
                AtomicOp::Max,
                DataType::F16x2,
            ),
            ("ATOM.ADD.F64.RN R0, [R2], R4", AtomicOp::Add, DataType::F64),
        ] {
            let m = mem(text, &s, &p);
            assert_eq!((m.op, m.ty), (op, ty), "{text}");
            assert_eq!(m.space, Space::Global);
            assert_eq!(m.out_of_range, OutOfRange::Fault);
            assert_eq!(m.same_address, SameAddress::AnyOrder);
            assert_eq!(m.env.compare, Compare::Bitwise);
            assert!(!m.env.weak);
        }
        for (option, want) in [
            ("fault", Misaligned::Fault),
            ("mask_low_bits", Misaligned::MaskLowBits),
            ("undefined", Misaligned::Unspecified),
        ] {
            let p = profile(&[("sass.misaligned", option)]);
            assert_eq!(mem("ATOM.ADD R0, [R2], R4", &s, &p).misaligned, want);
        }
    }

    #[test]
    fn sources_take_registers_and_pairs_per_lane() {
        let p = Profile::default();
        let mut s = State::new(2);
        set_reg(&mut s, "R4", &[0x1111, 0x3333]);
        set_reg(&mut s, "R5", &[0x2222, 0x4444]);
        set_reg(&mut s, "R6", &[0xAAAA, 0xCCCC]);
        set_reg(&mut s, "R7", &[0xBBBB, 0xDDDD]);
        set_reg(&mut s, "R9", &[0x1_0000_0009, 9]);
        let src = |text: &str| -> Vec<[u64; 2]> {
            mem(text, &s, &p).accesses.iter().map(|a| a.src).collect()
        };
        assert_eq!(src("ATOM.ADD R0, [R2], R4"), vec![[0x1111, 0], [0x3333, 0]]);
        // Register elements are 32 bits: wider state values are cut to their low word.
        assert_eq!(src("ATOM.ADD R0, [R2], R9"), vec![[9, 0], [9, 0]]);
        assert_eq!(
            src("ATOM.ADD.U64 R0, [R2], R4"),
            vec![[0x2222_0000_1111, 0], [0x4444_0000_3333, 0]]
        );
        // CAS: [compare = Rb, new = Rc], pairs for .64, RZ new value 0.
        assert_eq!(
            src("ATOM.CAS R0, [R2], R4, R5"),
            vec![[0x1111, 0x2222], [0x3333, 0x4444]]
        );
        assert_eq!(
            src("ATOM.CAS R0, [R2], R4, RZ"),
            vec![[0x1111, 0], [0x3333, 0]]
        );
        assert_eq!(
            src("ATOM.CAS.U64 R0, [R2], R4, R6"),
            vec![
                [0x2222_0000_1111, 0xBBBB_0000_AAAA],
                [0x4444_0000_3333, 0xDDDD_0000_CCCC]
            ]
        );
        assert_eq!(src("ATOM.EXCH R0, [R2], RZ"), vec![[0, 0], [0, 0]]);
        // A missing register reads zero.
        assert_eq!(src("ATOM.ADD R0, [R2], R100"), vec![[0, 0], [0, 0]]);
    }

    #[test]
    fn destinations_and_declarations() {
        let p = Profile::default();
        let s = State::new(2);
        let field = |name: &str, idx| RegField {
            name: name.to_string(),
            idx,
            lo: 0,
            bits: 32,
            upper: Upper::Keep,
        };
        let b32 = |n| StateReg {
            ty: ElemType::B32,
            elems: vec![0; n],
        };

        let l = lowered("ATOM.ADD R0, [R2], R4", &s, &p);
        let Instr::Mem(m) = &l.instr else { panic!() };
        assert_eq!(m.accesses[1].dst, Dest::Fields(vec![field("R0", 1)]));
        assert_eq!(l.declare, vec![("R0".to_string(), b32(2))]);
        assert!(l.writes.is_empty());

        let l = lowered("ATOM.ADD.U64 R0, [R2], R4", &s, &p);
        let Instr::Mem(m) = &l.instr else { panic!() };
        assert_eq!(
            m.accesses[0].dst,
            Dest::Fields(vec![field("R0", 0), field("R1", 0)])
        );
        assert_eq!(
            l.declare,
            vec![("R0".to_string(), b32(2)), ("R1".to_string(), b32(2))]
        );

        // RZ discards; a pair starting at R254 ends in RZ.
        let l = lowered("ATOM.ADD RZ, [R2], R4", &s, &p);
        let Instr::Mem(m) = &l.instr else { panic!() };
        assert_eq!(m.accesses[0].dst, Dest::None);
        assert!(l.declare.is_empty());
        let l = lowered("ATOM.EXCH.U64 R254, [R2], R4", &s, &p);
        let Instr::Mem(m) = &l.instr else { panic!() };
        assert_eq!(m.accesses[0].dst, Dest::Fields(vec![field("R254", 0)]));
        assert_eq!(l.declare, vec![("R254".to_string(), b32(2))]);

        // Registers the state has are not declared again; too small ones are a bad state.
        let mut s2 = State::new(2);
        set_reg(&mut s2, "R0", &[5, 6]);
        assert!(lowered("ATOM.ADD R0, [R2], R4", &s2, &p).declare.is_empty());
        set_reg(&mut s2, "R0", &[5]);
        let i = parse("ATOM.ADD R0, [R2], R4").unwrap();
        assert!(matches!(lower(&i, &s2, &p), Err(ModelError::BadState(_))));
        // Enough lanes but a narrower type (no corpus case can say this: the loader gives every
        // SASS register 32 bits and one element per lane).
        s2.regs.insert(
            "R0".to_string(),
            StateReg {
                ty: ElemType::UW,
                elems: vec![5, 6],
            },
        );
        assert!(matches!(lower(&i, &s2, &p), Err(ModelError::BadState(_))));
    }

    #[test]
    fn sparse_predicate_is_false_in_running_lanes() {
        let p = Profile::default();
        let mut s = State::new(3);
        s.active = vec![true, false, true];
        let l = lowered("@!P0 ATOM.ADD P2, R0, [R4], R5", &s, &p);
        let ps = |idx| StaticWrite {
            name: "P2".to_string(),
            idx,
            value: 0,
        };
        assert_eq!(l.writes, vec![ps(0), ps(2)]);
        assert!(l.declare.contains(&(
            "P2".to_string(),
            StateReg {
                ty: ElemType::BOOL,
                elems: vec![0; 3]
            }
        )));
        // PT as Ps discards.
        let l = lowered("ATOM.ADD PT, R0, [R4], R5", &s, &p);
        assert!(l.writes.is_empty());
        assert_eq!(l.declare.len(), 1);

        // End to end: a set P2 is cleared where the lane ran, kept elsewhere.
        s.global.alloc(0x1000, 0x10).unwrap();
        set_reg(&mut s, "R4", &[0x1000, 0x1000, 0x1004]);
        set_reg(&mut s, "R5", &[3, 3, 4]);
        set_pred(&mut s, "P2", &[1, 1, 1]);
        let out = completed("ATOM.ADD P2, R0, [R4], R5", &s, &p);
        assert_eq!(r(&out, "P2"), vec![0, 1, 0]);
        assert_eq!(out.global.read(0x1000, 4), Some(3));
        assert_eq!(out.global.read(0x1004, 4), Some(4));
    }

    #[test]
    fn a17_cas_register_pairing_under_both_options() {
        let s = state1();
        let reject = Profile::default();
        let accept = profile(&[("sass.cas_register_pairing", "accept")]);
        for (text, ok_under_reject) in [
            ("ATOM.CAS R0, [R2], R4, R5", true),
            ("ATOM.CAS R0, [R2], R4, RZ", true),
            ("ATOM.CAS.S32 R0, [R2], R254, RZ", true),
            ("ATOM.CAS R0, [R2], R4, R6", false),
            ("ATOM.CAS R0, [R2], R3, R4", false),
            ("ATOM.CAS R0, [R2], R5, R4", false),
            ("ATOM.CAS.U64 R0, [R2], R4, R6", true),
            ("ATOM.CAS.U64 R0, [R2], R8, RZ", true),
            ("ATOM.CAS.64 R0, [R2], R252, R254", true),
            ("ATOM.CAS.U64 R0, [R2], R6, R8", false),
            ("ATOM.CAS.U64 R0, [R2], R4, R8", false),
            ("ATOM.CAS.U64 R0, [R2], R4, R4", false),
        ] {
            match lowering(text, &s, &reject) {
                Lowering::Run(_) => assert!(ok_under_reject, "{text} ran"),
                Lowering::Invalid(r) => {
                    assert!(!ok_under_reject, "{text}: {r}");
                    assert_eq!(r.reason, Reason::CasRegisterPairing, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
            assert!(
                matches!(lowering(text, &s, &accept), Lowering::Run(_)),
                "{text}"
            );
        }
        // Under accept, Rb is the compare value and Rc the new value, whatever their numbers.
        let mut s = state1();
        s.global.write(0x1000, 4, 7);
        set_reg(&mut s, "R3", &[7]);
        set_reg(&mut s, "R9", &[0x99]);
        let out = completed("ATOM.CAS R0, [R2], R3, R9", &s, &accept);
        assert_eq!(out.global.read(0x1000, 4), Some(0x99));
        assert_eq!(r(&out, "R0"), vec![7]);
        assert!(matches!(
            outcome("ATOM.CAS R0, [R2], R3, R9", &s, &reject),
            Outcome::Invalid(Rejection {
                reason: Reason::CasRegisterPairing,
                ..
            })
        ));
    }

    #[test]
    fn a18_safeadd_is_unspecified() {
        let s = state1();
        match lowering("ATOM.SAFEADD.U64 R0, [R2], R4", &s, &Profile::default()) {
            Lowering::Unspecified(why) => assert!(why.contains("A18"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            outcome("ATOM.E.SAFEADD.64 R0, [R2], R4", &s, &Profile::default()),
            Outcome::Unspecified(_)
        ));
    }

    #[test]
    fn more_than_a_warp_is_a_limit_and_hand_built_bad_rows_are_invalid() {
        let i = parse("ATOM.ADD R0, [R2], R4").unwrap();
        assert!(matches!(
            lower(&i, &State::new(33), &Profile::default()),
            Err(ModelError::Limit(_))
        ));
        assert!(matches!(
            lower(&i, &State::new(32), &Profile::default()),
            Ok(Lowering::Run(_))
        ));
        let bad = Instruction {
            op: Op::Inc,
            size: Size::F32FtzRn,
            ..i
        };
        assert!(matches!(
            lower(&bad, &State::new(1), &Profile::default()),
            Ok(Lowering::Invalid(Rejection {
                reason: Reason::UnsupportedType,
                ..
            }))
        ));
    }

    #[test]
    fn float_env_follows_the_knobs() {
        use AtomicOp::{Add, Max, Min};
        use DataType::{F16x2, F32, F64};
        let d = Profile::default();
        // Defaults: A2 flush, A1 preserve, A3 raw, A4 any.
        assert_eq!(float_env(&d, Add, F32).ftz, FtzMode::BOTH);
        assert_eq!(float_env(&d, Add, F16x2).ftz, FtzMode::NONE);
        assert_eq!(float_env(&d, Add, F64).ftz, FtzMode::NONE);
        assert!(!float_env(&d, Add, F32).ftz_return);
        assert_eq!(
            (
                float_env(&d, Add, F32).nan,
                float_env(&d, Add, F32).nan_exact
            ),
            (NanBits::Propagate, false)
        );
        assert_eq!(float_env(&d, Add, F32).round, Round::NearestEven);
        assert_eq!(
            float_env(&profile(&[("sass.f32_add_ftz", "preserve")]), Add, F32).ftz,
            FtzMode::NONE
        );
        for (option, ftz) in [
            ("preserve", FtzMode::NONE),
            ("flush", FtzMode::BOTH),
            ("flush_results", FtzMode::OUTPUTS),
        ] {
            let p = profile(&[("sass.f16x2_add_subnormals", option)]);
            assert_eq!(float_env(&p, Add, F16x2).ftz, ftz, "{option}");
            // Flushing is about the add; min/max follow the A7 rule instead.
            assert_eq!(float_env(&p, Min, F16x2).ftz, FtzMode::NONE, "{option}");
        }
        let p = profile(&[
            ("float.ftz_return", "flushed"),
            ("float.nan_result", "canonical"),
        ]);
        let e = float_env(&p, Add, F32);
        assert!(e.ftz_return);
        assert_eq!((e.nan, e.nan_exact), (NanBits::Canonical, true));
        let e = float_env(&profile(&[("float.nan_result", "propagate")]), Add, F32);
        assert_eq!((e.nan, e.nan_exact), (NanBits::Propagate, true));
        assert_eq!(float_env(&d, Max, F16x2).minmax, MinMaxRules::default());
        let spirv = Profile::named("spirv").unwrap();
        assert_eq!(
            float_env(&spirv, Max, F16x2).minmax,
            MinMaxRules {
                nan: NanRule::SpirvEither,
                zero: ZeroRule::Either,
                denormals: DenormRule::Either
            }
        );
        let sky = profile(&[
            ("float.minmax_nan", "intel_snan_wins"),
            ("float.minmax_signed_zero", "skylake"),
            ("float.minmax_denormals", "flush_before_compare"),
        ]);
        assert_eq!(
            float_env(&sky, Min, F16x2).minmax,
            MinMaxRules {
                nan: NanRule::IntelSnanWins,
                zero: ZeroRule::Skylake,
                denormals: DenormRule::FlushBeforeCompare
            }
        );
        // The lowered instruction carries it.
        let s = state1();
        let m = mem(
            "ATOM.ADD.F16x2.FTZ.RN R0, [R2], R4",
            &s,
            &profile(&[("sass.f16x2_add_subnormals", "flush")]),
        );
        assert_eq!(m.env.ftz, FtzMode::BOTH);
    }

    // ---- end to end: integer runs --------------------------------------------------------

    /// Runs `text` on one lane with M = `old` at 0x1000 and R4 = `b` (R5 = `b >> 32`); returns
    /// (new M, R0 | R1 << 32).
    fn run1(text: &str, bytes: u64, old: u64, b: u64) -> (u64, u64) {
        let mut s = state1();
        assert!(s.global.write(0x1000, bytes, old));
        set_reg(&mut s, "R4", &[b & 0xFFFF_FFFF]);
        set_reg(&mut s, "R5", &[b >> 32]);
        let out = completed(text, &s, &Profile::default());
        let rd = r(&out, "R0").first().copied().unwrap_or(0)
            | r(&out, "R1").first().copied().unwrap_or(0) << 32;
        (out.global.read(0x1000, bytes).unwrap(), rd)
    }

    #[test]
    fn inc_is_bounded_by_rb() {
        // M = (M >= Rb) ? 0 : M + 1; Rd = M before.
        for (old, b, new) in [
            (4, 5, 5), // below the bound: +1
            (5, 5, 0), // at the bound: 0
            (7, 5, 0), // above the bound: 0
            (3, 0, 0), // bound 0: always 0
            (0, 0, 0),
            (0xFFFF_FFFE, 0xFFFF_FFFF, 0xFFFF_FFFF),
            (0xFFFF_FFFF, 0xFFFF_FFFF, 0), // bound 0xFFFFFFFF: plain wrap
        ] {
            let got = run1("ATOM.INC.U32 R0, [R2], R4", 4, old, b);
            assert_eq!(got, (new, old), "old={old:#x} Rb={b:#x}");
        }
    }

    #[test]
    fn dec_is_bounded_by_rb() {
        // M = (M == 0 || M > Rb) ? Rb : M - 1; Rd = M before.
        for (old, b, new) in [
            (3, 5, 2), // below the bound: -1
            (5, 5, 4), // at the bound: -1
            (7, 5, 5), // above the bound: Rb
            (0, 5, 5), // zero: Rb
            (3, 0, 0), // bound 0: always 0
            (0, 0, 0),
            (0, 0xFFFF_FFFF, 0xFFFF_FFFF), // bound 0xFFFFFFFF: plain wrap
            (0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFE),
        ] {
            let got = run1("ATOM.DEC R0, [R2], R4", 4, old, b);
            assert_eq!(got, (new, old), "old={old:#x} Rb={b:#x}");
        }
    }

    #[test]
    fn cas_swaps_only_when_m_equals_rb() {
        let cas = |text: &str, old: u64, cmp: u64, new_lo: u64, new_hi: u64, bytes: u64| {
            let mut s = state1();
            assert!(s.global.write(0x1008, bytes, old));
            set_reg(&mut s, "R4", &[cmp & 0xFFFF_FFFF]);
            set_reg(&mut s, "R5", &[if bytes == 8 { cmp >> 32 } else { new_lo }]);
            set_reg(&mut s, "R6", &[new_lo]);
            set_reg(&mut s, "R7", &[new_hi]);
            let out = completed(text, &s, &Profile::default());
            let rd = r(&out, "R0")[0] | r(&out, "R1").first().copied().unwrap_or(0) << 32;
            (out.global.read(0x1008, bytes).unwrap(), rd)
        };
        // CAS.32: Rb = R4 compare, Rc = R5 new.
        assert_eq!(cas("ATOM.CAS R0, [R2+0x8], R4, R5", 7, 7, 9, 0, 4), (9, 7));
        assert_eq!(cas("ATOM.CAS R0, [R2+0x8], R4, R5", 7, 8, 9, 0, 4), (7, 7));
        // Rc = RZ: the new value is 0.
        assert_eq!(cas("ATOM.CAS R0, [R2+0x8], R4, RZ", 7, 7, 9, 0, 4), (0, 7));
        // CAS.64: compare (R4, R5), new (R6, R7); Rd pair (R0, R1).
        let old = 0x1_0000_0007;
        assert_eq!(
            cas(
                "ATOM.CAS.U64 R0, [R2+0x8], R4, R6",
                old,
                old,
                0xAAAA,
                0xBBBB,
                8
            ),
            (0xBBBB_0000_AAAA, old)
        );
        // Equal low words but different high words: no swap (the whole 64 bits compare).
        assert_eq!(
            cas(
                "ATOM.CAS.U64 R0, [R2+0x8], R4, R6",
                old,
                0x2_0000_0007,
                0xAAAA,
                0xBBBB,
                8
            ),
            (old, old)
        );
    }

    #[test]
    fn sixty_four_bit_pairs_carry_into_the_high_word() {
        // M = 0x1_FFFFFFFF + (R4, R5) = 1: 0x2_00000000; Rd pair = the old value.
        assert_eq!(
            run1("ATOM.ADD.U64 R0, [R2], R4", 8, 0x1_FFFF_FFFF, 1),
            (0x2_0000_0000, 0x1_FFFF_FFFF)
        );
        // Wrap at 2^64.
        assert_eq!(
            run1("ATOM.ADD.64 R0, [R2], R4", 8, u64::MAX, 2),
            (1, u64::MAX)
        );
        assert_eq!(
            run1(
                "ATOM.EXCH.U64 R0, [R2], R4",
                8,
                0x1234_5678_9ABC_DEF0,
                0xFFFF_0000_0000_FFFF
            ),
            (0xFFFF_0000_0000_FFFF, 0x1234_5678_9ABC_DEF0)
        );
        // MIN.S64 with Rb = -1 stores -1 (the document's "signed min stored" example).
        assert_eq!(
            run1("ATOM.MIN.S64 R0, [R2], R4", 8, 1, u64::MAX),
            (u64::MAX, 1)
        );
        assert_eq!(run1("ATOM.MIN.U64 R0, [R2], R4", 8, 1, u64::MAX), (1, 1));
        // A 32-bit op leaves the next word alone.
        let mut s = state1();
        s.global.write(0x1000, 8, 0x5555_5555_FFFF_FFFF);
        set_reg(&mut s, "R4", &[1]);
        let out = completed("ATOM.ADD R0, [R2], R4", &s, &Profile::default());
        assert_eq!(out.global.read(0x1000, 8), Some(0x5555_5555_0000_0000));
    }

    #[test]
    fn signedness_comes_from_the_size() {
        // M = 1, Rb = 0xFFFFFFFF: -1 signed, 4294967295 unsigned.
        assert_eq!(run1("ATOM.MIN.U32 R0, [R2], R4", 4, 1, 0xFFFF_FFFF).0, 1);
        assert_eq!(
            run1("ATOM.MIN.S32 R0, [R2], R4", 4, 1, 0xFFFF_FFFF).0,
            0xFFFF_FFFF
        );
        assert_eq!(
            run1("ATOM.MAX.U32 R0, [R2], R4", 4, 1, 0xFFFF_FFFF).0,
            0xFFFF_FFFF
        );
        assert_eq!(run1("ATOM.MAX.S32 R0, [R2], R4", 4, 1, 0xFFFF_FFFF).0, 1);
        assert_eq!(
            run1("ATOM.AND R0, [R2], R4", 4, 0b1100, 0b1010),
            (0b1000, 0b1100)
        );
        assert_eq!(
            run1("ATOM.OR.S32 R0, [R2], R4", 4, 0b1100, 0b1010),
            (0b1110, 0b1100)
        );
        assert_eq!(
            run1("ATOM.XOR.U64 R0, [R2], R4", 8, 0b1100, 0b1010),
            (0b0110, 0b1100)
        );
        assert_eq!(
            run1("ATOM.ADD.S32 R0, [R2], R4", 4, 0x7FFF_FFFF, 1),
            (0x8000_0000, 0x7FFF_FFFF)
        );
    }

    #[test]
    fn lanes_run_in_order_and_guards_skip_lanes() {
        let mut s = State::new(4);
        s.global.alloc(0x1000, 0x10).unwrap();
        set_reg(&mut s, "R2", &[0x1000; 4]);
        set_reg(&mut s, "R4", &[1, 2, 4, 8]);
        set_reg(&mut s, "R0", &[0xEE; 4]);
        set_pred(&mut s, "P0", &[1, 0, 1, 1]);
        s.active = vec![true, true, true, false];
        // Lanes 0 and 2 add 1 and 4 to M = 0; the reference's order is ascending lanes.
        let out = completed("@P0 ATOM.ADD R0, [R2], R4", &s, &Profile::default());
        assert_eq!(out.global.read(0x1000, 4), Some(5));
        assert_eq!(r(&out, "R0"), vec![0, 0xEE, 1, 0xEE]);
        // RZ as Rd: memory changes, no register does.
        let out = completed("ATOM.ADD RZ, [R2], R4", &s, &Profile::default());
        assert_eq!(out.global.read(0x1000, 4), Some(7));
        assert_eq!(out.regs, s.regs);
    }

    #[test]
    fn absolute_and_a16_addresses_end_to_end() {
        let mut s = State::new(1);
        s.global.alloc(0xfff00, 4).unwrap();
        s.global.write(0xfff00, 4, 10);
        set_reg(&mut s, "R8", &[0xFFFF_FFFF]);
        let out = completed("ATOM.ADD.S32 R9, [0xfff00], R8;", &s, &Profile::default());
        assert_eq!(
            (out.global.read(0xfff00, 4), r(&out, "R9")),
            (Some(9), vec![10])
        );

        // Ra = 0 (missing), imm = -4: wrap32 writes 0xFFFFFFFC, add40 writes 0xFFFFFFFFFC.
        let mut s = State::new(1);
        s.global.alloc(0xFFFF_FFFC, 4).unwrap();
        s.global.alloc(0xFF_FFFF_FFFC, 4).unwrap();
        set_reg(&mut s, "R3", &[0x77]);
        let t = "ATOM.EXCH R0, [R1-0x4], R3";
        let out = completed(t, &s, &Profile::default());
        assert_eq!(out.global.read(0xFFFF_FFFC, 4), Some(0x77));
        assert_eq!(out.global.read(0xFF_FFFF_FFFC, 4), Some(0));
        let out = completed(t, &s, &profile(&[("sass.address_arithmetic", "add40")]));
        assert_eq!(out.global.read(0xFFFF_FFFC, 4), Some(0));
        assert_eq!(out.global.read(0xFF_FFFF_FFFC, 4), Some(0x77));
    }

    #[test]
    fn misaligned_and_unallocated_addresses() {
        let mut s = state1();
        s.global.write(0x1000, 4, 5);
        set_reg(&mut s, "R4", &[1]);
        let t = "ATOM.ADD R0, [R2+0x2], R4";
        // A15 fault (the document's rule, the default).
        assert_eq!(
            faults(t, &s, &Profile::default()),
            vec![(0, FaultClass::MisalignedAddress)]
        );
        // 8-byte types need 8-byte alignment.
        assert_eq!(
            faults("ATOM.ADD.U64 R0, [R2+0x4], R4", &s, &Profile::default()),
            vec![(0, FaultClass::MisalignedAddress)]
        );
        // mask_low_bits: the access lands on 0x1000.
        let out = completed(t, &s, &profile(&[("sass.misaligned", "mask_low_bits")]));
        assert_eq!(
            (out.global.read(0x1000, 4), r(&out, "R0")),
            (Some(6), vec![5])
        );
        // undefined: no outcome is stated.
        assert!(matches!(
            outcome(t, &s, &profile(&[("sass.misaligned", "undefined")])),
            Outcome::Unspecified(_)
        ));
        // Outside the allocated 0x1000..0x1100: an out-of-range fault, also half-outside.
        assert_eq!(
            faults("ATOM.ADD R0, [R2+0x100], R4", &s, &Profile::default()),
            vec![(0, FaultClass::AddressOutOfRange)]
        );
        // Only 4 bytes allocated at 0x2000: an 8-byte access there is half outside.
        let mut s = State::new(1);
        s.global.alloc(0x2000, 4).unwrap();
        set_reg(&mut s, "R2", &[0x2000]);
        assert_eq!(
            faults("ATOM.ADD.U64 R0, [R2], R4", &s, &Profile::default()),
            vec![(0, FaultClass::AddressOutOfRange)]
        );
        assert_eq!(run_ok_value(&s), Some(1));
    }

    fn run_ok_value(s: &State) -> Option<u64> {
        let mut s = s.clone();
        set_reg(&mut s, "R4", &[1]);
        completed("ATOM.ADD R0, [R2], R4", &s, &Profile::default())
            .global
            .read(0x2000, 4)
    }

    /// CAS register rules belong to the A17 knob: under `reject` every breach of "Rb = R2n
    /// (R4n) and not RZ, Rc = Rb+1 (Rb+2) or RZ" is a pairing error; under `accept` only the
    /// 64-bit even-odd rule remains, and Rb = RZ compares with zero.
    #[test]
    fn cas_register_rules_follow_the_pairing_knob() {
        use Reason::{CasRegisterPairing, RegisterPairAlignment};
        let s = State::new(1);
        let mut accept = Profile::default();
        accept.set("sass.cas_register_pairing", "accept").unwrap();
        for (text, reject_reason, accept_reason) in [
            (
                "ATOM.CAS.U64 R0, [R2], R4, R7",
                Some(CasRegisterPairing),
                Some(RegisterPairAlignment),
            ),
            (
                "ATOM.CAS.U64 R0, [R2], R4, R5",
                Some(CasRegisterPairing),
                Some(RegisterPairAlignment),
            ),
            ("ATOM.CAS R0, [R2], RZ, R5", Some(CasRegisterPairing), None),
            (
                "ATOM.CAS.U64 R0, [R2], RZ, R6",
                Some(CasRegisterPairing),
                None,
            ),
            ("ATOM.CAS R0, [R2], R3, R4", Some(CasRegisterPairing), None),
            ("ATOM.CAS R0, [R2], R4, R5", None, None),
        ] {
            for (profile, want) in [
                (Profile::default(), reject_reason),
                (accept.clone(), accept_reason),
            ] {
                let got = match lowering(text, &s, &profile) {
                    Lowering::Invalid(r) => Some(r.reason),
                    _ => None,
                };
                assert_eq!(
                    got, want,
                    "{text} under {:?}",
                    profile.sass_cas_register_pairing
                );
            }
        }
    }

    /// `sass.cas_register_pairing = sm50_encoding`: exactly the register forms an SPA 5.0
    /// ATOM.CAS word can hold (`sass::encoding`, nvdisasm 11.8): Rc = Rb+1 (Rb+2), Rc = RZ, or
    /// Rb = RZ with any Rc; an odd Rb of CAS.32 is encodable.
    #[test]
    fn sm50_encoding_pairing_accepts_what_a_word_can_hold() {
        use Reason::{CasRegisterPairing, RegisterPairAlignment};
        let s = State::new(1);
        let mut p = Profile::default();
        p.set("sass.cas_register_pairing", "sm50_encoding").unwrap();
        for (text, want) in [
            ("ATOM.CAS R0, [R2], R9, R10", None),
            ("ATOM.CAS R0, [R2], R4, RZ", None),
            ("ATOM.CAS R0, [R2], RZ, R7", None),
            ("ATOM.CAS R0, [R2], R4, R6", Some(CasRegisterPairing)),
            ("ATOM.CAS R0, [R2], R254, RZ", Some(CasRegisterPairing)),
            ("ATOM.CAS.64 R0, [R2], R6, R8", None),
            ("ATOM.CAS.64 R0, [R2], RZ, R8", None),
            ("ATOM.CAS.64 R0, [R2], R4, R5", Some(RegisterPairAlignment)),
            ("ATOM.CAS.64 R0, [R2], R4, R8", Some(CasRegisterPairing)),
        ] {
            let got = match lowering(text, &s, &p) {
                Lowering::Invalid(r) => Some(r.reason),
                _ => None,
            };
            assert_eq!(got, want, "{text}");
        }
    }
}
