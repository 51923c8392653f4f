//! Intel vISA: DWORD_ATOMIC and SVM_SCATTER4_SCALED, and the field encodings of the documents.
//!
//! This module holds what both instructions share: the text tokens, the predicate, the
//! `(<mask>, <exec_size>)` group, `V<n>` operands, and the channel-enable computation
//! (`ChEn[i]`) of both documents' pseudo-code.

pub mod dword_atomic;
pub mod encoding;
pub mod intel;
pub mod scatter4;

use crate::error::{ModelError, Reason, Rejection};
use crate::ir::Lowering;
use crate::knobs::{EmaskGroup, Profile};
use crate::state::{Reg, State};
use crate::types::{ElemType, Kind};
use std::fmt;

/// vISA, DWORD_ATOMIC.md and SVM_SCATTER4_SCALED.md: a parsed instruction of either document.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// DWORD_ATOMIC.
    DwordAtomic(dword_atomic::DwordAtomic),
    /// SVM_SCATTER4_SCALED.
    Scatter4(scatter4::Scatter4),
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instruction::DwordAtomic(i) => i.fmt(f),
            Instruction::Scatter4(i) => i.fmt(f),
        }
    }
}

impl Instruction {
    /// Intel's concrete text of the instruction ([`intel::to_intel_text`]), variables named by
    /// `naming`.
    pub fn to_intel_text(&self, naming: &intel::Naming) -> Result<String, Rejection> {
        intel::to_intel_text(self, naming)
    }
}

/// vISA, "Text" sections of DWORD_ATOMIC and SVM_SCATTER4_SCALED: parses one text line. A
/// line in Intel's concrete form (lowercase `dword_atomic` / `svm_scatter4scaled`, X2..X7 in
/// [`intel`]) is read too, where the model can represent it: a non-zero raw-operand byte
/// offset (X6) or Address region (X7) is a [`Reason::Syntax`] rejection here, and
/// [`intel::parse`] keeps it.
pub fn parse(text: &str) -> Result<Instruction, Rejection> {
    if intel::is_intel_mnemonic(mnemonic_of(text)) {
        let l = intel::parse(text)?;
        if !l.spelling.is_plain() {
            return Err(Rejection::new(
                Reason::Syntax,
                format!(
                    "`{}`: a raw operand at a non-zero byte offset (X6) or an Address region other than (0,0) (X7) has no form in the model",
                    text.trim()
                ),
            ));
        }
        return Ok(l.instr);
    }
    let line = Line::split(text)?;
    let (col, mnemonic) = line.mnemonic;
    let base = mnemonic.split('.').next().unwrap_or("");
    match base {
        dword_atomic::MNEMONIC => dword_atomic::parse_line(&line).map(Instruction::DwordAtomic),
        scatter4::MNEMONIC => scatter4::parse_line(&line).map(Instruction::Scatter4),
        _ => Err(Rejection::at(
            Reason::UnknownOperation,
            col,
            format!("`{base}` is not DWORD_ATOMIC or SVM_SCATTER4_SCALED"),
        )),
    }
}

/// vISA, "Semantics" sections: lowers to the IR against a state, binding the operands to the
/// state's variables and listing the accesses of the enabled channels.
pub fn lower(i: &Instruction, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    Ok(match i {
        Instruction::DwordAtomic(d) => dword_atomic::lower(d, state, profile),
        Instruction::Scatter4(s) => scatter4::lower(s, state, profile),
    })
}

/// The mnemonic of a line, past an optional `(<P>)` group; empty if there is none.
fn mnemonic_of(text: &str) -> &str {
    let t = text.trim_start();
    let t = match t.strip_prefix('(') {
        Some(r) => r.split_once(')').map_or("", |(_, rest)| rest.trim_start()),
        None => t,
    };
    t.split(|c: char| c.is_ascii_whitespace() || c == '(')
        .next()
        .unwrap_or("")
}

/// One token of a text line with its byte column.
pub(crate) type Token<'a> = (usize, &'a str);

/// A vISA text line cut into its parts: an optional `(<P>)`, the mnemonic with its dotted
/// suffixes, the parenthesised exec-size group, and the whitespace-separated operands.
#[derive(Clone, Debug)]
pub(crate) struct Line<'a> {
    /// The predicate group, without its parentheses.
    pub pred: Option<Token<'a>>,
    /// The mnemonic with its suffixes (`DWORD_ATOMIC.inc.16`).
    pub mnemonic: Token<'a>,
    /// The exec-size group, without its parentheses.
    pub exec: Token<'a>,
    /// The operands.
    pub operands: Vec<Token<'a>>,
}

/// A raw token: a parenthesised group (inner text) or a word.
enum Raw<'a> {
    Group(Token<'a>),
    Word(Token<'a>),
}

impl<'a> Line<'a> {
    /// Cuts `text` into a [`Line`].
    pub fn split(text: &'a str) -> Result<Line<'a>, Rejection> {
        let raws = lex(text)?;
        let mut it = raws.into_iter().peekable();
        let pred = match it.peek() {
            Some(Raw::Group(g)) => {
                let g = *g;
                it.next();
                Some(g)
            }
            _ => None,
        };
        let mnemonic = match it.next() {
            Some(Raw::Word(w)) => w,
            Some(Raw::Group((c, _))) => {
                return Err(Rejection::at(
                    Reason::Syntax,
                    c,
                    "expected the mnemonic, found a parenthesised group",
                ));
            }
            None => return Err(Rejection::new(Reason::Syntax, "empty instruction")),
        };
        let exec = match it.next() {
            Some(Raw::Group(g)) => g,
            Some(Raw::Word((c, w))) => {
                return Err(Rejection::at(
                    Reason::Syntax,
                    c,
                    format!("expected `(<Exec_size>)`, found `{w}`"),
                ));
            }
            None => {
                return Err(Rejection::at(
                    Reason::Syntax,
                    text.len(),
                    "missing `(<Exec_size>)`",
                ));
            }
        };
        let mut operands = Vec::new();
        for r in it {
            match r {
                Raw::Word(w) => operands.push(w),
                Raw::Group((c, _)) => {
                    return Err(Rejection::at(
                        Reason::Syntax,
                        c,
                        "unexpected parenthesised group among the operands",
                    ));
                }
            }
        }
        Ok(Line {
            pred,
            mnemonic,
            exec,
            operands,
        })
    }
}

fn lex(text: &str) -> Result<Vec<Raw<'_>>, Rejection> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or(b' ');
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b == b'(' {
            let close = text
                .get(i + 1..)
                .and_then(|rest| rest.find(')'))
                .ok_or_else(|| Rejection::at(Reason::Syntax, i, "unbalanced `(`"))?;
            let inner = text.get(i + 1..i + 1 + close).unwrap_or("");
            if inner.contains('(') {
                return Err(Rejection::at(Reason::Syntax, i, "nested `(`"));
            }
            out.push(Raw::Group((i + 1, inner)));
            i += close + 2;
        } else if b == b')' {
            return Err(Rejection::at(Reason::Syntax, i, "unbalanced `)`"));
        } else {
            let start = i;
            while i < bytes.len() {
                let c = bytes.get(i).copied().unwrap_or(b' ');
                if c.is_ascii_whitespace() || c == b'(' || c == b')' {
                    break;
                }
                i += 1;
            }
            out.push(Raw::Word((start, text.get(start..i).unwrap_or(""))));
        }
    }
    Ok(out)
}

/// Exactly `n` operands, or a syntax rejection.
pub(crate) fn operands<'a>(line: &Line<'a>, n: usize) -> Result<Vec<Token<'a>>, Rejection> {
    if line.operands.len() == n {
        Ok(line.operands.clone())
    } else {
        let col = line
            .operands
            .get(n)
            .map(|t| t.0)
            .or_else(|| line.operands.last().map(|t| t.0))
            .unwrap_or(line.exec.0);
        Err(Rejection::at(
            Reason::Syntax,
            col,
            format!(
                "{} takes {n} operands after the exec size, found {}",
                line.mnemonic.1.split('.').next().unwrap_or(""),
                line.operands.len()
            ),
        ))
    }
}

/// A number: decimal digits, no sign. The documents write only `<Exec_size>`; a leading zero is
/// read as decimal (`08` is 8, `010` is 10), as Intel's vISA assembler reads its `DEC_LIT`
/// token (`[0-9]+`, converted with `atoi`: IGC `visa/CISA.l`), never as C's octal.
fn decimal(s: &str) -> Option<u32> {
    // `str::parse` alone would also take a `+` sign; an empty or too long text fails there.
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The number of a name `V<n>`, `P<n>` or `M<n>`: a decimal without a leading zero (`0` itself
/// aside). Intel's assembler lexes a name as one identifier (`[[:alpha:]_][[:alnum:]_]*`, IGC
/// `visa/CISA.l`), so `V010` is another name than `V10`, not a second spelling of it.
fn name_number(s: &str) -> Option<u32> {
    if s.len() > 1 && s.starts_with('0') {
        return None;
    }
    decimal(s)
}

/// vISA, field Pred(uw), predication control: `(P<n>)` or `(!P<n>)`. A channel is enabled where the
/// predicate variable's element is true (false with `!`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Predicate {
    /// The predicate variable number `n` of `P<n>`.
    pub var: u32,
    /// `!`: the channel is enabled where the predicate is false.
    pub negated: bool,
}

impl Predicate {
    /// The variable name, `P<n>`.
    pub fn name(&self) -> String {
        format!("P{}", self.var)
    }

    /// Parses the inside of `(<P>)`.
    pub(crate) fn parse((col, s): Token<'_>) -> Result<Predicate, Rejection> {
        let t = s.trim();
        let (negated, rest) = match t.strip_prefix('!') {
            Some(r) => (true, r.trim_start()),
            None => (false, t),
        };
        rest.strip_prefix('P')
            .and_then(name_number)
            .map(|var| Predicate { var, negated })
            .ok_or_else(|| {
                Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("`({s})` is not a predicate `(P<n>)` or `(!P<n>)`"),
                )
            })
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bang = if self.negated { "!" } else { "" };
        write!(f, "({bang}P{})", self.var)
    }
}

/// vISA, field Exec_size(ub) bits 7..4, the execution-mask control: `M1`..`M8`, or
/// `M1_NM`..`M8_NM`, which ignore the thread's execution mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MaskCtrl {
    /// `n` of `Mn`, 1..=8.
    pub n: u8,
    /// `_NM`: no mask.
    pub no_mask: bool,
}

impl MaskCtrl {
    /// `M1`, the default when the text omits the mask.
    pub const M1: MaskCtrl = MaskCtrl {
        n: 1,
        no_mask: false,
    };

    /// Every mask control, in encoding order (`M1`..`M8`, then `M1_NM`..`M8_NM`): the unit
    /// tests' enumeration (nothing in the model iterates the masks).
    #[cfg(test)]
    pub fn all() -> impl Iterator<Item = MaskCtrl> {
        [false, true]
            .into_iter()
            .flat_map(|no_mask| (1..=8).map(move |n| MaskCtrl { n, no_mask }))
    }

    /// The first channel of the execution mask this control selects: `(n-1) * group`, with the
    /// group size from knob `visa.emask_group` (N2).
    pub fn offset(&self, group: EmaskGroup) -> u32 {
        let g = match group {
            EmaskGroup::Four => 4,
            EmaskGroup::Eight => 8,
        };
        (u32::from(self.n).saturating_sub(1)) * g
    }

    fn parse((col, s): Token<'_>) -> Result<MaskCtrl, Rejection> {
        let (body, no_mask) = match s.strip_suffix("_NM") {
            Some(b) => (b, true),
            None => (s, false),
        };
        let n = body.strip_prefix('M').and_then(name_number);
        match n {
            Some(n @ 1..=8) => Ok(MaskCtrl {
                n: n as u8,
                no_mask,
            }),
            _ if s.starts_with('M') => Err(Rejection::at(
                Reason::InvalidMask,
                col,
                format!("`{s}` is not one of M1..M8, M1_NM..M8_NM"),
            )),
            _ => Err(Rejection::at(
                Reason::Syntax,
                col,
                format!("`{s}` is not an execution-mask control"),
            )),
        }
    }
}

impl fmt::Display for MaskCtrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nm = if self.no_mask { "_NM" } else { "" };
        write!(f, "M{}{nm}", self.n)
    }
}

/// vISA, field Exec_size(ub): the number of channels (bits 2..0) and the execution-mask control.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExecSize {
    /// Channels: 1, 2, 4, 8, 16 or 32.
    pub size: u32,
    /// The execution-mask control.
    pub mask: MaskCtrl,
    /// Whether the text wrote the mask (`(M1, 8)`) or left it to its default (`(8)`); kept so
    /// that printing gives back the text.
    pub mask_written: bool,
}

impl ExecSize {
    /// Parses the inside of `(<mask>, <size>)` or `(<size>)`; `sizes` are the sizes the
    /// instruction's Exec_size table lists.
    pub(crate) fn parse((col, s): Token<'_>, sizes: &[u32]) -> Result<ExecSize, Rejection> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        let (mask, mask_written, size_text) = match parts.as_slice() {
            [size] => (MaskCtrl::M1, false, *size),
            [mask, size] => (MaskCtrl::parse((col, mask))?, true, *size),
            _ => {
                return Err(Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("`({s})` is not `(<Exec_size>)` or `(<mask>, <Exec_size>)`"),
                ));
            }
        };
        let size = decimal(size_text).ok_or_else(|| {
            Rejection::at(
                Reason::Syntax,
                col,
                format!("exec size `{size_text}` is not a number"),
            )
        })?;
        if !sizes.contains(&size) {
            return Err(Rejection::at(
                Reason::InvalidExecSize,
                col,
                format!("exec size {size} is not one of {sizes:?}"),
            ));
        }
        Ok(ExecSize {
            size,
            mask,
            mask_written,
        })
    }
}

impl fmt::Display for ExecSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mask_written {
            write!(f, "({}, {})", self.mask, self.size)
        } else {
            write!(f, "({})", self.size)
        }
    }
}

/// vISA, raw operands: a variable `V<n>`; `V0` is the null variable (DWORD_ATOMIC Dst: no value
/// returned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

impl Var {
    /// The null variable `V0`.
    pub const NULL: Var = Var(0);

    /// Whether this is `V0`.
    pub fn is_null(self) -> bool {
        self.0 == 0
    }

    /// The variable's name, `V<n>`.
    pub fn name(self) -> String {
        format!("V{}", self.0)
    }

    pub(crate) fn parse((col, s): Token<'_>) -> Result<Var, Rejection> {
        s.strip_prefix('V')
            .and_then(name_number)
            .map(Var)
            .ok_or_else(|| {
                Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("`{s}` is not a variable `V<n>`"),
                )
            })
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "V{}", self.0)
    }
}

/// A binding failure: the instruction is an illegal form for this state.
pub(crate) type Bind<T> = Result<T, Rejection>;

/// Looks a variable up: [`Reason::UnknownOperand`] if the state does not declare it.
pub(crate) fn var<'s>(state: &'s State, v: Var, role: &str) -> Bind<&'s Reg> {
    state.regs.get(&v.name()).ok_or_else(|| {
        Rejection::new(
            Reason::UnknownOperand,
            format!("{role} {v} is not declared"),
        )
    })
}

/// Checks a variable's element count against what the instruction reads or writes.
pub(crate) fn need_elems(reg: &Reg, v: Var, role: &str, n: usize) -> Bind<()> {
    if reg.elems.len() >= n {
        Ok(())
    } else {
        Err(Rejection::new(
            Reason::OperandSize,
            format!(
                "{role} {v} has {} elements; the instruction uses {n}",
                reg.elems.len()
            ),
        ))
    }
}

/// Checks a variable's type against the types the document allows.
pub(crate) fn need_type(reg: &Reg, v: Var, role: &str, allowed: &[ElemType]) -> Bind<()> {
    if allowed.contains(&reg.ty) {
        Ok(())
    } else {
        let names: Vec<&str> = allowed.iter().map(|t| t.visa_name()).collect();
        Err(Rejection::new(
            Reason::OperandType,
            format!(
                "{role} {v} has type {}; it must have type {}",
                reg.ty.visa_name(),
                names.join(" or ")
            ),
        ))
    }
}

/// vISA, "Semantics" pseudo-code of both documents: `ChEn[i]` for `i` in `0..exec.size`, the
/// execution mask (the thread's `emask` from the mask control's offset on, or all on with
/// `_NM`) and the predicate. An offset that runs past the 32-bit execution mask is
/// [`Reason::InvalidMask`].
pub(crate) fn channel_enables(
    exec: &ExecSize,
    pred: Option<&Predicate>,
    state: &State,
    profile: &Profile,
) -> Bind<Vec<bool>> {
    let offset = exec.mask.offset(profile.visa_emask_group);
    if offset + exec.size > 32 {
        return Err(Rejection::new(
            Reason::InvalidMask,
            format!(
                "{} selects channels {offset}..{} of the 32-channel execution mask (knob visa.emask_group = {})",
                exec.mask,
                offset + exec.size,
                profile.visa_emask_group.name()
            ),
        ));
    }
    let pred_elems = match pred {
        None => None,
        Some(p) => {
            let name = p.name();
            let reg = state.regs.get(&name).ok_or_else(|| {
                Rejection::new(
                    Reason::UnknownOperand,
                    format!("predicate {name} is not declared"),
                )
            })?;
            if reg.ty.kind != Kind::Bool {
                return Err(Rejection::new(
                    Reason::OperandType,
                    format!("{name} is not a predicate variable"),
                ));
            }
            if reg.elems.len() < exec.size as usize {
                return Err(Rejection::new(
                    Reason::OperandSize,
                    format!(
                        "predicate {name} has {} elements; the instruction uses {}",
                        reg.elems.len(),
                        exec.size
                    ),
                ));
            }
            Some((reg, p.negated))
        }
    };
    Ok((0..exec.size)
        .map(|i| {
            let by_mask = exec.mask.no_mask || (state.emask >> (offset + i)) & 1 == 1;
            let by_pred = match pred_elems {
                None => true,
                Some((reg, negated)) => {
                    let on = reg.elems.get(i as usize).copied().unwrap_or(0) & 1 == 1;
                    on != negated
                }
            };
            by_mask && by_pred
        })
        .collect())
}

/// The `Lowering` of a binding result.
pub(crate) fn lowering(r: Bind<crate::ir::Lowered>) -> Lowering {
    match r {
        Ok(l) => Lowering::Run(l),
        Err(e) => Lowering::Invalid(e),
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! State builders shared by the vISA tests.
    use crate::state::{Reg, State};
    use crate::types::ElemType;

    /// Adds variable `name` of type `ty`.
    pub fn with_var(state: &mut State, name: &str, ty: ElemType, elems: &[u64]) {
        state.regs.insert(
            name.to_string(),
            Reg {
                ty,
                elems: elems.to_vec(),
            },
        );
    }

    /// Adds predicate variable `name` with channel `i` = bit `i` of `bits`.
    pub fn with_pred(state: &mut State, name: &str, bits: u32, n: u32) {
        let elems: Vec<u64> = (0..n).map(|i| u64::from((bits >> i) & 1)).collect();
        with_var(state, name, ElemType::BOOL, &elems);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_util::*;

    #[test]
    fn predicates_and_masks_parse_and_print() {
        let p = Predicate::parse((0, "!P3")).unwrap();
        assert_eq!(
            p,
            Predicate {
                var: 3,
                negated: true
            }
        );
        assert_eq!(p.to_string(), "(!P3)");
        assert_eq!(Predicate::parse((0, "P12")).unwrap().to_string(), "(P12)");
        assert_eq!(
            Predicate::parse((0, "X1")).unwrap_err().reason,
            Reason::Syntax
        );
        let m = MaskCtrl::parse((0, "M5_NM")).unwrap();
        assert_eq!(
            m,
            MaskCtrl {
                n: 5,
                no_mask: true
            }
        );
        assert_eq!(m.to_string(), "M5_NM");
        assert_eq!(
            MaskCtrl::parse((0, "M9")).unwrap_err().reason,
            Reason::InvalidMask
        );
        assert_eq!(
            MaskCtrl::parse((0, "M0_NM")).unwrap_err().reason,
            Reason::InvalidMask
        );
        assert_eq!(MaskCtrl::all().count(), 16);
        // A name's number has no leading zero (`M01` is another identifier, not M1)...
        assert_eq!(
            MaskCtrl::parse((0, "M01")).unwrap_err().reason,
            Reason::InvalidMask
        );
    }

    #[test]
    fn exec_size_numbers_are_decimal() {
        // ...but an exec size is a number: `08` is 8 and `010` is 10 (not octal 8), as Intel's
        // assembler reads it.
        let sizes = [1, 2, 4, 8, 16];
        assert_eq!(ExecSize::parse((0, "08"), &sizes).unwrap().size, 8);
        assert_eq!(ExecSize::parse((0, "M1, 016"), &sizes).unwrap().size, 16);
        assert_eq!(
            ExecSize::parse((0, "010"), &sizes).unwrap_err().reason,
            Reason::InvalidExecSize
        );
        for bad in ["+8", "", "8x", "99999999999"] {
            assert_eq!(
                ExecSize::parse((0, bad), &sizes).unwrap_err().reason,
                Reason::Syntax,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn mask_offsets_follow_the_group_knob() {
        let m3 = MaskCtrl {
            n: 3,
            no_mask: false,
        };
        assert_eq!(m3.offset(EmaskGroup::Four), 8);
        assert_eq!(m3.offset(EmaskGroup::Eight), 16);
        assert_eq!(MaskCtrl::M1.offset(EmaskGroup::Eight), 0);
    }

    #[test]
    fn channel_enable_combines_emask_offset_and_predicate() {
        // emask: channels 4..7 on (0xF0), everything else off.
        let mut s = State {
            emask: 0x0000_00F0,
            ..State::default()
        };
        // P1: channels 0 and 2 true.
        with_pred(&mut s, "P1", 0b0101, 4);
        let p = Profile::default();
        let m2 = ExecSize {
            size: 4,
            mask: MaskCtrl {
                n: 2,
                no_mask: false,
            },
            mask_written: true,
        };
        // M2 with group 4 reads emask bits 4..7: all on.
        assert_eq!(channel_enables(&m2, None, &s, &p).unwrap(), vec![true; 4]);
        let pred = Predicate {
            var: 1,
            negated: false,
        };
        assert_eq!(
            channel_enables(&m2, Some(&pred), &s, &p).unwrap(),
            vec![true, false, true, false]
        );
        let npred = Predicate {
            var: 1,
            negated: true,
        };
        assert_eq!(
            channel_enables(&m2, Some(&npred), &s, &p).unwrap(),
            vec![false, true, false, true]
        );
        // Group 8: M2 reads bits 8..11, all off.
        let mut p8 = Profile::default();
        p8.set("visa.emask_group", "8").unwrap();
        assert_eq!(channel_enables(&m2, None, &s, &p8).unwrap(), vec![false; 4]);
        // M1 reads bits 0..3: off; M1_NM ignores the mask.
        let m1 = ExecSize {
            size: 4,
            mask: MaskCtrl::M1,
            mask_written: false,
        };
        assert_eq!(channel_enables(&m1, None, &s, &p).unwrap(), vec![false; 4]);
        let m1nm = ExecSize {
            mask: MaskCtrl {
                n: 1,
                no_mask: true,
            },
            ..m1
        };
        assert_eq!(channel_enables(&m1nm, None, &s, &p).unwrap(), vec![true; 4]);
        // M8 with 8 channels: 28 + 8 > 32.
        let m8 = ExecSize {
            size: 8,
            mask: MaskCtrl {
                n: 8,
                no_mask: false,
            },
            mask_written: true,
        };
        assert_eq!(
            channel_enables(&m8, None, &s, &p).unwrap_err().reason,
            Reason::InvalidMask
        );
        // The mask check comes before the predicate is bound.
        let p9 = Predicate {
            var: 9,
            negated: false,
        };
        assert_eq!(
            channel_enables(&m8, Some(&p9), &s, &p8).unwrap_err().reason,
            Reason::InvalidMask
        );
        assert_eq!(
            channel_enables(&m1, Some(&p9), &s, &p).unwrap_err().reason,
            Reason::UnknownOperand
        );
        with_pred(&mut s, "P2", 0, 2);
        let p2 = Predicate {
            var: 2,
            negated: false,
        };
        assert_eq!(
            channel_enables(&m1, Some(&p2), &s, &p).unwrap_err().reason,
            Reason::OperandSize
        );
        with_var(&mut s, "P3", ElemType::UD, &[1, 1, 1, 1]);
        let p3 = Predicate {
            var: 3,
            negated: false,
        };
        assert_eq!(
            channel_enables(&m1, Some(&p3), &s, &p).unwrap_err().reason,
            Reason::OperandType
        );
    }

    #[test]
    fn mangled_lines_are_rejected_without_panicking() {
        let lines = [
            "(!P1) DWORD_ATOMIC.cmpxchg.16 (M5_NM, 16) T255 V10 V11 V12 V13",
            "(P2) SVM_SCATTER4_SCALED.RGA (M1, 16) V20 V21 V22",
        ];
        let inserts = [
            "(",
            ")",
            ",",
            ".",
            "!",
            " ",
            "\u{e9}",
            "\u{1F600}",
            "V",
            "M",
            "_NM",
            "99999999999",
        ];
        let mut parsed = 0;
        for line in lines {
            assert!(parse(line).is_ok());
            let cuts: Vec<usize> = (0..=line.len())
                .filter(|&i| line.is_char_boundary(i))
                .collect();
            for &i in &cuts {
                let head = &line[..i];
                let tail = &line[i..];
                for x in [head.to_string(), tail.to_string()]
                    .into_iter()
                    .chain(inserts.iter().map(|ins| format!("{head}{ins}{tail}")))
                {
                    // Only the result matters: Ok or a rejection, never a panic; and whatever
                    // parses prints to text that parses back to itself.
                    if let Ok(p) = parse(&x) {
                        assert_eq!(parse(&p.to_string()).as_ref(), Ok(&p), "{x}");
                        parsed += 1;
                    }
                }
            }
        }
        assert!(parsed > 0);
    }

    #[test]
    fn unknown_mnemonics_and_bad_lines_are_rejected() {
        let r = parse("QWORD_ATOMIC.add (8) T0 V1 V2 V0 V3").unwrap_err();
        assert_eq!(r.reason, Reason::UnknownOperation);
        assert_eq!(r.column, Some(0));
        assert_eq!(parse("").unwrap_err().reason, Reason::Syntax);
        assert_eq!(
            parse("DWORD_ATOMIC.add (8 T0 V1 V2 V0 V3")
                .unwrap_err()
                .reason,
            Reason::Syntax
        );
        assert_eq!(
            parse("DWORD_ATOMIC.add 8) T0 V1 V2 V0 V3")
                .unwrap_err()
                .reason,
            Reason::Syntax
        );
        assert_eq!(
            parse("(P1) (P2) DWORD_ATOMIC.add (8) T0 V1 V2 V0 V3")
                .unwrap_err()
                .reason,
            Reason::Syntax
        );
    }
}
