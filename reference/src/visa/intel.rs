//! vISA, Intel's concrete text: the `dword_atomic` and `svm_scatter4scaled` lines IGC 1.0.12504
//! prints in its `.visaasm` dumps and its vISA assembler `GenX_IR` reads (issue 29; the
//! listings are `reference/tests/data/intel`). Read into the model's [`Instruction`] plus the
//! [`Spelling`] of what Intel's text carries beyond it, and printed back by
//! [`to_intel_text`]. Each difference from the documents' Text form is an extension, numbered
//! as in `spec-cases/FORMAT.md` (X1 is NVIDIA's):
//!
//! - X2, mnemonics: `dword_atomic.<op>[.16]` and `svm_scatter4scaled.<channels>`, lowercase
//!   (Intel's reader rejects `DWORD_ATOMIC`). Same meaning.
//! - X3, op names: IMIN and IMAX are `minsint` and `maxsint` (IGC's op-name table); PREDEC
//!   (0b01101) has no name there (the slot is skipped), so Intel's text cannot say it:
//!   [`to_intel_text`] refuses it. Same meaning for every op that has a name.
//! - X4, surfaces: `%slm` is surface index 0 (the document's T0) and `%scratch` index 5 (the
//!   document's T255). In Intel's text `T<n>` names a declared surface variable (IGC numbers
//!   them from 6, after its predefined surfaces), so Intel's `T255` is not the document's
//!   `T255`: a `T<n>` is rejected as [`Reason::InvalidSurface`] (the document allows indices 0
//!   and 5 only). Meaning preserved for `%slm` / `%scratch`.
//! - X5, names: Intel's variables are identifiers declared by `.decl`; IGC prints a general
//!   variable as `V` and its id in four digits (`V0064`) and the null variable as `%null`
//!   (its reader also takes `V0`). A [`Naming`] maps them to the model's `V<n>` (`V0064` is
//!   V64, `%null` V0) and back; a harness may print `X<n>` instead, since `GenX_IR` predefines
//!   `V1`..`V20`. Same meaning while the mapping is one-to-one.
//! - X6, raw operands carry a byte offset, `V0064.0`: `.0` is the document's operand. IGC
//!   also prints non-zero offsets (`V0087.64`: CMPXCHG's two sources packed in one variable,
//!   and `.32` in the 16-bit forms). The model's raw operand is a whole variable read from
//!   element 0, so a non-zero offset **cannot be represented**: it is kept in [`Spelling`]
//!   and printed back, and [`crate::visa::parse`] rejects such a line.
//! - X7, SVM_SCATTER4_SCALED's Address is a scalar region `V0020(0,0)<0;1,0>` (Intel's reader
//!   requires the region) or an immediate `0x0:uq`. `(0,0)` is the document's `<address>`
//!   (element 0 of a UQ variable); another row or column cannot be represented (kept in
//!   [`Spelling`], as X6), and an immediate address has no form in the model (its Address is
//!   a variable): rejected. IGC's OpenCL path never emits `svm_scatter4scaled`; only Intel's
//!   reader was run on it.
//!
//! Not extensions (the same in both forms): the `(<mask>, <size>)` group (IGC always writes
//! the mask; `(16)` is read by both and printed as written), `(P<n>)` / `(!P<n>)` predicates,
//! `.16`, and channel letters in either case. Channels out of RGBA order are printed as
//! written: Intel's reader rejects them, which is knob `visa.channel_order` (N5) for Intel.

use super::dword_atomic::{self, DwordAtomic, Op, Surface};
use super::scatter4::{self, Scatter4};
use super::{ExecSize, Instruction, Line, Predicate, Token, Var};
use crate::error::{Reason, Rejection};

/// X2: Intel's DWORD_ATOMIC mnemonic.
pub const DWORD_ATOMIC: &str = "dword_atomic";
/// X2: Intel's SVM_SCATTER4_SCALED mnemonic.
pub const SCATTER4: &str = "svm_scatter4scaled";

/// X5: how Intel's variable names map to the model's `V<n>`: a prefix and the number, printed
/// with at least `width` digits (zero-padded). The null variable V0 is always `%null`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// The name's prefix (`V` in IGC's dumps).
    pub prefix: String,
    /// The least number of digits (4 in IGC's dumps, `V0064`).
    pub width: usize,
}

impl Naming {
    /// IGC 1.0.12504's names: `V` and four digits (`V0064`).
    pub fn igc() -> Naming {
        Naming::new("V", 4)
    }

    /// A prefix and a least digit count: `Naming::new("X", 0)` prints V10 as `X10`.
    pub fn new(prefix: &str, width: usize) -> Naming {
        Naming {
            prefix: prefix.to_string(),
            width,
        }
    }

    /// The Intel name of `v`: `%null` for V0.
    pub fn name(&self, v: Var) -> String {
        if v.is_null() {
            "%null".to_string()
        } else {
            format!("{}{:0w$}", self.prefix, v.0, w = self.width)
        }
    }

    /// The model variable an Intel name stands for: `%null` (and `V0`, Intel's other name
    /// for it) is V0; `<prefix><digits>` is V<digits>.
    pub fn var(&self, s: &str) -> Option<Var> {
        if s == "%null" || s == "V0" {
            return Some(Var::NULL);
        }
        let digits = s.strip_prefix(self.prefix.as_str())?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(Var)
    }
}

impl Default for Naming {
    fn default() -> Naming {
        Naming::igc()
    }
}

/// What Intel's text carries beyond the model's instruction (X6, X7). All zero is the
/// document's meaning ([`Spelling::is_plain`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Spelling {
    /// X6: the byte offset of each raw operand, in text order (DWORD_ATOMIC: Element_offset,
    /// Src0, Src1, Dst; SVM_SCATTER4_SCALED: Element_offset, Src). Empty means all `.0`.
    pub offsets: Vec<u16>,
    /// X7: SVM_SCATTER4_SCALED's Address region `(row, column)`; `(0, 0)` is the document's.
    pub address: (u16, u16),
}

impl Spelling {
    /// Whether the instruction alone says everything: every offset 0, the address region
    /// `(0,0)`.
    pub fn is_plain(&self) -> bool {
        self.offsets.iter().all(|&o| o == 0) && self.address == (0, 0)
    }

    fn offset(&self, k: usize) -> u16 {
        self.offsets.get(k).copied().unwrap_or(0)
    }
}

/// A line of Intel's text: the model's instruction and the spelling it needs to be printed
/// back exactly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IntelLine {
    /// The instruction, in the model's terms.
    pub instr: Instruction,
    /// What the model leaves out (X6, X7).
    pub spelling: Spelling,
}

impl IntelLine {
    /// Prints the line back in Intel's form with `naming`.
    pub fn to_intel_text(&self, naming: &Naming) -> Result<String, Rejection> {
        print(&self.instr, &self.spelling, naming)
    }
}

/// Intel's text of an instruction (X2..X7), variables named by `naming` (IGC's own:
/// [`Naming::igc`]; a `GenX_IR` harness: `Naming::new("X", 0)`). Every raw operand is printed
/// at byte offset 0 and SCATTER4's Address as the scalar region `(0,0)<0;1,0>`. PREDEC has no
/// Intel name (X3): a [`Reason::UnknownOperation`] rejection.
pub fn to_intel_text(i: &Instruction, naming: &Naming) -> Result<String, Rejection> {
    print(i, &Spelling::default(), naming)
}

/// X3: the Intel name of an op, `None` for PREDEC.
pub fn op_name(op: Op) -> Option<&'static str> {
    match op {
        Op::Imin => Some("minsint"),
        Op::Imax => Some("maxsint"),
        Op::Predec => None,
        o => Some(o.name()),
    }
}

fn op_from_name(s: &str) -> Option<Op> {
    Op::ALL.iter().copied().find(|&o| op_name(o) == Some(s))
}

/// X4: the Intel name of a surface.
pub fn surface_name(s: Surface) -> &'static str {
    match s {
        Surface::T0 => "%slm",
        Surface::T255 => "%scratch",
    }
}

fn print(i: &Instruction, sp: &Spelling, naming: &Naming) -> Result<String, Rejection> {
    let raw = |v: Var, k: usize| format!("{}.{}", naming.name(v), sp.offset(k));
    let pred = |p: &Option<Predicate>| p.map(|p| format!("{p} ")).unwrap_or_default();
    Ok(match i {
        Instruction::DwordAtomic(d) => {
            let op = op_name(d.op).ok_or_else(|| {
                Rejection::new(
                    Reason::UnknownOperation,
                    format!(
                        "{} has no name in Intel's vISA text (IGC's op-name table skips 0b{:05b}; X3)",
                        d.op,
                        d.op.code()
                    ),
                )
            })?;
            let w16 = if d.w16 { ".16" } else { "" };
            format!(
                "{}{DWORD_ATOMIC}.{op}{w16} {} {} {} {} {} {}",
                pred(&d.pred),
                d.exec,
                surface_name(d.surface),
                raw(d.element_offset, 0),
                raw(d.src0, 1),
                raw(d.src1, 2),
                raw(d.dst, 3)
            )
        }
        Instruction::Scatter4(s) => {
            let channels = match &s.written_order {
                Some(w) => w.clone(),
                None => s.channels.to_string(),
            };
            let (r, c) = sp.address;
            format!(
                "{}{SCATTER4}.{channels} {} {}({r},{c})<0;1,0> {} {}",
                pred(&s.pred),
                s.exec,
                naming.name(s.address),
                raw(s.element_offset, 0),
                raw(s.src, 1)
            )
        }
    })
}

/// Whether a mnemonic is Intel's (X2): `dword_atomic...` or `svm_scatter4scaled...`.
pub fn is_intel_mnemonic(mnemonic: &str) -> bool {
    let base = mnemonic.split('.').next().unwrap_or("");
    base == DWORD_ATOMIC || base == SCATTER4
}

/// Reads one line of Intel's text with IGC's names ([`Naming::igc`]).
pub fn parse(text: &str) -> Result<IntelLine, Rejection> {
    parse_with(text, &Naming::igc())
}

/// Reads one line of Intel's text, variables named by `naming`.
pub fn parse_with(text: &str, naming: &Naming) -> Result<IntelLine, Rejection> {
    let line = split(text)?;
    let (col, mnemonic) = line.mnemonic;
    let mut parts = mnemonic.split('.');
    let base = parts.next().unwrap_or("");
    let pred = line.pred.map(Predicate::parse).transpose()?;
    match base {
        DWORD_ATOMIC => {
            let op_text = parts.next().ok_or_else(|| {
                Rejection::at(Reason::Syntax, col, "dword_atomic needs an operation")
            })?;
            let op = op_from_name(op_text).ok_or_else(|| {
                Rejection::at(
                    Reason::UnknownOperation,
                    col + DWORD_ATOMIC.len() + 1,
                    format!("`{op_text}` is not an operation of Intel's dword_atomic (X3)"),
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
            let exec = ExecSize::parse(line.exec, dword_atomic::EXEC_SIZES)?;
            let ops = super::operands(&line, 5)?;
            let [surface, offset, src0, src1, dst] = ops.as_slice() else {
                return Err(Rejection::new(
                    Reason::Syntax,
                    "dword_atomic takes 5 operands",
                ));
            };
            let mut offsets = Vec::new();
            let mut raw = |t: Token<'_>| -> Result<Var, Rejection> {
                let (v, o) = raw_operand(t, naming)?;
                offsets.push(o);
                Ok(v)
            };
            let d = DwordAtomic {
                pred,
                op,
                w16,
                exec,
                surface: surface_of(*surface)?,
                element_offset: raw(*offset)?,
                src0: raw(*src0)?,
                src1: raw(*src1)?,
                dst: raw(*dst)?,
            };
            dword_atomic::check_operands(&d)?;
            Ok(IntelLine {
                instr: Instruction::DwordAtomic(d),
                spelling: Spelling {
                    offsets,
                    address: (0, 0),
                },
            })
        }
        SCATTER4 => {
            let suffix = mnemonic
                .strip_prefix(SCATTER4)
                .and_then(|r| r.strip_prefix('.'))
                .ok_or_else(|| {
                    Rejection::at(Reason::Syntax, col, "svm_scatter4scaled needs its channels")
                })?;
            let (channels, written_order) =
                scatter4::Channels::parse(col + SCATTER4.len() + 1, suffix)?;
            let exec = ExecSize::parse(line.exec, scatter4::EXEC_SIZES)?;
            let ops = super::operands(&line, 3)?;
            let [address, offset, src] = ops.as_slice() else {
                return Err(Rejection::new(
                    Reason::Syntax,
                    "svm_scatter4scaled takes 3 operands",
                ));
            };
            let (address, region) = address_operand(*address, naming)?;
            let (element_offset, o1) = raw_operand(*offset, naming)?;
            let (src, o2) = raw_operand(*src, naming)?;
            let s = Scatter4 {
                pred,
                channels,
                written_order,
                exec,
                address,
                element_offset,
                src,
            };
            scatter4::check_operands(&s)?;
            Ok(IntelLine {
                instr: Instruction::Scatter4(s),
                spelling: Spelling {
                    offsets: vec![o1, o2],
                    address: region,
                },
            })
        }
        _ => Err(Rejection::at(
            Reason::UnknownOperation,
            col,
            format!("`{base}` is not dword_atomic or svm_scatter4scaled"),
        )),
    }
}

/// Cuts a line of Intel's text: `[(<pred>)] <mnemonic> (<exec>) <operands>`, the operands
/// separated by whitespace (a region operand `V(0,0)<0;1,0>` is one word).
fn split(text: &str) -> Result<Line<'_>, Rejection> {
    let mut i = skip_ws(text, 0);
    let group = |i: usize| -> Result<(Token<'_>, usize), Rejection> {
        let close = text
            .get(i + 1..)
            .and_then(|r| r.find(')'))
            .ok_or_else(|| Rejection::at(Reason::Syntax, i, "unbalanced `(`"))?;
        let inner = text.get(i + 1..i + 1 + close).unwrap_or("");
        Ok(((i + 1, inner), i + close + 2))
    };
    let pred = if text.get(i..).is_some_and(|r| r.starts_with('(')) {
        let (g, next) = group(i)?;
        i = skip_ws(text, next);
        Some(g)
    } else {
        None
    };
    let (mnemonic, next) = word(text, i);
    if mnemonic.1.is_empty() {
        return Err(Rejection::at(Reason::Syntax, i, "expected the mnemonic"));
    }
    i = skip_ws(text, next);
    if !text.get(i..).is_some_and(|r| r.starts_with('(')) {
        return Err(Rejection::at(
            Reason::Syntax,
            i,
            "expected `(<mask>, <exec_size>)`",
        ));
    }
    let (exec, next) = group(i)?;
    i = skip_ws(text, next);
    let mut operands = Vec::new();
    while i < text.len() {
        let (w, next) = word(text, i);
        if next == i {
            return Err(Rejection::at(Reason::Syntax, i, "expected an operand"));
        }
        operands.push(w);
        i = skip_ws(text, next);
    }
    Ok(Line {
        pred,
        mnemonic,
        exec,
        operands,
    })
}

fn skip_ws(text: &str, mut i: usize) -> usize {
    while text.as_bytes().get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The word at `i` (up to whitespace, or `(` for a mnemonic-like word) and the index after it.
fn word(text: &str, i: usize) -> (Token<'_>, usize) {
    let bytes = text.as_bytes();
    let mut j = i;
    let mut depth = 0usize;
    while let Some(&b) = bytes.get(j) {
        if b.is_ascii_whitespace() && depth == 0 {
            break;
        }
        match b {
            // A `(` starts a group unless the word has a name before it (a region operand).
            b'(' if j == i => break,
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        j += 1;
    }
    ((i, text.get(i..j).unwrap_or("")), j)
}

/// X4: `%slm` or `%scratch`.
fn surface_of((col, s): Token<'_>) -> Result<Surface, Rejection> {
    match s {
        "%slm" => Ok(Surface::T0),
        "%scratch" => Ok(Surface::T255),
        _ if s.starts_with('T') || s.starts_with('%') => Err(Rejection::at(
            Reason::InvalidSurface,
            col,
            format!(
                "surface {s}: only %slm (index 0, T0) and %scratch (index 5, T255) are allowed; \
                 Intel's `T<n>` is a declared surface (X4)"
            ),
        )),
        _ => Err(Rejection::at(
            Reason::Syntax,
            col,
            format!("`{s}` is not a surface"),
        )),
    }
}

/// X5, X6: `<name>.<byte offset>`.
fn raw_operand((col, s): Token<'_>, naming: &Naming) -> Result<(Var, u16), Rejection> {
    let bad = |what: String| Rejection::at(Reason::Syntax, col, what);
    let (name, off) = s.rsplit_once('.').ok_or_else(|| {
        bad(format!(
            "`{s}` is not a raw operand `<name>.<byte offset>` (X6)"
        ))
    })?;
    let v = naming.var(name).ok_or_else(|| {
        bad(format!(
            "`{name}` is not a variable `{}<n>` or %null (X5)",
            naming.prefix
        ))
    })?;
    let off = super::decimal(off)
        .and_then(|o| u16::try_from(o).ok())
        .ok_or_else(|| bad(format!("`{off}` is not a byte offset 0..=65535 (X6)")))?;
    Ok((v, off))
}

/// X7: `<name>(<row>,<col>)<0;1,0>`; an immediate is rejected.
fn address_operand((col, s): Token<'_>, naming: &Naming) -> Result<(Var, (u16, u16)), Rejection> {
    let bad = |what: String| Rejection::at(Reason::Syntax, col, what);
    if s.starts_with("0x") || s.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return Err(bad(format!(
            "immediate Address `{s}`: the model's Address is a UQ variable (X7)"
        )));
    }
    let parsed = s.split_once('(').and_then(|(name, rest)| {
        let (rc, region) = rest.split_once(')')?;
        let (r, c) = rc.split_once(',')?;
        let r = u16::try_from(super::decimal(r.trim())?).ok()?;
        let c = u16::try_from(super::decimal(c.trim())?).ok()?;
        (region == "<0;1,0>").then_some((name, (r, c)))
    });
    let (name, rc) = parsed.ok_or_else(|| {
        bad(format!(
            "`{s}` is not a scalar region `<name>(<row>,<col>)<0;1,0>` (X7)"
        ))
    })?;
    let v = naming
        .var(name)
        .ok_or_else(|| bad(format!("`{name}` is not a variable (X5)")))?;
    Ok((v, rc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(text: &str) -> IntelLine {
        let l = parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(l.to_intel_text(&Naming::igc()).unwrap(), text);
        l
    }

    #[test]
    fn reads_and_prints_igc_lines() {
        let l = round("dword_atomic.add (M1, 16) %slm V0064.0 V0069.0 %null.0 V0068.0");
        assert!(l.spelling.is_plain());
        assert_eq!(
            l.instr.to_string(),
            "DWORD_ATOMIC.add (M1, 16) T0 V64 V69 V0 V68"
        );
        let l = round("dword_atomic.cmpxchg (M5, 16) %slm V0077.0 V0088.64 V0088.0 V0091.0");
        assert_eq!(l.spelling.offsets, vec![0, 64, 0, 0]);
        assert!(!l.spelling.is_plain());
        let l =
            round("dword_atomic.minsint.16 (M1_NM, 1) %scratch V0010.0 V0011.0 %null.0 %null.0");
        assert_eq!(
            l.instr.to_string(),
            "DWORD_ATOMIC.imin.16 (M1_NM, 1) T255 V10 V11 V0 V0"
        );
        round("(!P1) dword_atomic.maxsint (M1, 8) %slm V0010.0 V0011.0 %null.0 V0013.0");
        let s = round("svm_scatter4scaled.RGA (M1, 16) V0020(0,0)<0;1,0> V0021.0 V0022.0");
        assert_eq!(
            s.instr.to_string(),
            "SVM_SCATTER4_SCALED.RGA (M1, 16) V20 V21 V22"
        );
        let s = round("svm_scatter4scaled.R (M1, 8) V0020(0,1)<0;1,0> V0021.0 V0022.0");
        assert_eq!(s.spelling.address, (0, 1));
        assert!(!s.spelling.is_plain());
    }

    #[test]
    fn prints_the_document_form_in_intel_text() {
        let i = crate::visa::parse("(P2) DWORD_ATOMIC.imax.16 (8) T255 V10 V11 V0 V13").unwrap();
        assert_eq!(
            to_intel_text(&i, &Naming::new("X", 0)).unwrap(),
            "(P2) dword_atomic.maxsint.16 (8) %scratch X10.0 X11.0 %null.0 X13.0"
        );
        let i = crate::visa::parse("SVM_SCATTER4_SCALED.GR (16) V1 V2 V3").unwrap();
        assert_eq!(
            to_intel_text(&i, &Naming::new("X", 0)).unwrap(),
            "svm_scatter4scaled.GR (16) X1(0,0)<0;1,0> X2.0 X3.0"
        );
        let p = crate::visa::parse("DWORD_ATOMIC.predec (8) T0 V1 V0 V0 V3").unwrap();
        assert_eq!(
            to_intel_text(&p, &Naming::igc()).unwrap_err().reason,
            Reason::UnknownOperation
        );
        // Every op but PREDEC has an Intel name, read back as itself.
        for &op in Op::ALL {
            assert_eq!(
                op_name(op).and_then(op_from_name),
                (op != Op::Predec).then_some(op)
            );
        }
    }

    #[test]
    fn rejections() {
        let r = |t: &str| parse(t).unwrap_err().reason;
        assert_eq!(
            r("dword_atomic.add (M1, 16) T6 V0010.0 V0011.0 %null.0 V0013.0"),
            Reason::InvalidSurface
        );
        assert_eq!(
            r("dword_atomic.imin (M1, 16) %slm V0010.0 V0011.0 %null.0 V0013.0"),
            Reason::UnknownOperation
        );
        assert_eq!(
            r("dword_atomic.add (M1, 16) %slm V0010 V0011.0 %null.0 V0013.0"),
            Reason::Syntax
        );
        assert_eq!(
            r("dword_atomic.add (M1, 16) %slm V0010.0 V0011.0 V0012.0 V0013.0"),
            Reason::OperandMustBeV0
        );
        assert_eq!(
            r("svm_scatter4scaled.RGA (M1, 16) 0x0:uq V0021.0 V0022.0"),
            Reason::Syntax
        );
        assert_eq!(
            r("svm_scatter4scaled.RGA (M1, 16) V0020 V0021.0 V0022.0"),
            Reason::Syntax
        );
        assert_eq!(
            r("DWORD_ATOMIC.add (16) T0 V1 V2 V0 V3"),
            Reason::UnknownOperation
        );
        assert_eq!(r(""), Reason::Syntax);
        assert_eq!(r("dword_atomic.add (M1, 16"), Reason::Syntax);
    }

    #[test]
    fn mangled_lines_are_rejected_without_panicking() {
        let lines = [
            "(!P1) dword_atomic.cmpxchg.16 (M5_NM, 16) %slm V0010.0 V0011.64 V0011.0 V0013.0",
            "(P2) svm_scatter4scaled.RGA (M1, 16) V0020(0,0)<0;1,0> V0021.0 V0022.0",
        ];
        let inserts = [
            "(", ")", ",", ".", "<", ";", " ", "\u{e9}", "%", "V", "99999999",
        ];
        let mut parsed = 0;
        for line in lines {
            let cuts: Vec<usize> = (0..=line.len())
                .filter(|&i| line.is_char_boundary(i))
                .collect();
            for &i in &cuts {
                let (head, tail) = line.split_at(i);
                for x in [head.to_string(), tail.to_string()]
                    .into_iter()
                    .chain(inserts.iter().map(|ins| format!("{head}{ins}{tail}")))
                {
                    if let Ok(l) = parse(&x) {
                        // What reads prints back to text that reads as itself.
                        let t = l.to_intel_text(&Naming::igc()).unwrap();
                        assert_eq!(parse(&t).as_ref(), Ok(&l), "{x}");
                        parsed += 1;
                    }
                    let _ = crate::visa::parse(&x);
                }
            }
        }
        assert!(parsed > 0);
    }

    #[test]
    fn naming_maps_both_ways() {
        let n = Naming::igc();
        assert_eq!(n.name(Var(64)), "V0064");
        assert_eq!(n.name(Var(12345)), "V12345");
        assert_eq!(n.name(Var::NULL), "%null");
        assert_eq!(n.var("V0064"), Some(Var(64)));
        assert_eq!(n.var("V0"), Some(Var::NULL));
        assert_eq!(n.var("X1"), None);
        let x = Naming::new("X", 0);
        assert_eq!(x.name(Var(10)), "X10");
        assert_eq!(x.var("X10"), Some(Var(10)));
    }

    /// The messages of two refusals whose reason and column are the same either way (so no
    /// corpus case tells them apart): an operand that starts with `(` is no operand at all, and
    /// a decimal or negative Address is an immediate (X7), as `0x10` is.
    #[test]
    fn refusals_say_what_was_wrong() {
        let refused = |text: &str| parse(text).expect_err(text);
        let r = refused("dword_atomic.add (M1, 16) %slm (V0064.0) V0069.0 %null.0 V0068.0");
        assert_eq!((r.reason, r.column), (Reason::Syntax, Some(31)), "{r:?}");
        assert!(r.detail.contains("expected an operand"), "{r:?}");
        for a in ["0x10", "7", "-1"] {
            let text = format!("svm_scatter4scaled.RB (M1, 16) {a} V0021.0 V0022.0");
            let r = refused(&text);
            assert_eq!(r.reason, Reason::Syntax, "{r:?}");
            assert!(r.detail.contains("immediate Address"), "{text}: {r:?}");
        }
    }
}
