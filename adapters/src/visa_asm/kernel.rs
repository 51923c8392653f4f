//! The kernel `GenX_IR` assembles for one case (issue 29, point 2): the case's instruction in
//! Intel's concrete text (`reference/src/visa/intel.rs`, extensions X2..X7 of
//! `spec-cases/FORMAT.md`) inside a minimal kernel with a `.decl` for every variable and
//! predicate it names, typed and sized from the case's state.
//!
//! How a case's text becomes Intel's:
//!
//! - An instruction the reference's parser reads in the documents' form (`visa::parse`) is
//!   printed by `to_intel_text`, its variables renamed `V<n>` -> `X<n>` (`GenX_IR` predefines
//!   `V1`..`V20`; X5). A line already in Intel's form keeps its words as the case spells them
//!   (offsets, regions, white space), IGC's names renamed `X<n>` ([`translate_words`]).
//! - A text the parser rejects (the illegal forms of the corpus: exec sizes, masks, unknown
//!   ops, malformed text, V0 rules) is translated word by word ([`translate_words`]): the
//!   mnemonic lowercased with Intel's op names (X2, X3), `T0`/`T255` as `%slm`/`%scratch` (X4),
//!   `V0` as `%null.0`, `V<n>` as `X<n>.0` (X5, X6), SCATTER4's Address as the region
//!   `X<n>(0,0)<0;1,0>` (X7), everything else as written, so that Intel's assembler judges
//!   the same illegal form.
//! - What Intel's text cannot say is [`NoForm`], with the reason: PREDEC (X3: IGC's op-name
//!   table has no name for it), a surface other than T0 and T255 (X4: Intel's `T<n>` is a
//!   declared surface variable, not the document's surface index n), a variable of a type
//!   vISA's `.decl` cannot declare. The adapter reports such a case as not applicable, whatever
//!   the case expects: `GenX_IR` never saw it, so it gave no answer to judge (a form Intel's
//!   text cannot even write is not a rejection by Intel).

use atomcts_reference::state::State;
use atomcts_reference::types::{ElemType, Kind};
use atomcts_reference::visa::dword_atomic::Op;
use atomcts_reference::visa::intel::{self, Naming};
use atomcts_reference::visa::{self, Instruction};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// X5: the names of the case's variables in the kernel, `X<n>` for the model's `V<n>`.
pub fn naming() -> Naming {
    Naming::new("X", 0)
}

/// A deliberately wrong translation, for the tests that show a wrong kernel never passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Plant {
    /// The translation as it should be.
    #[default]
    None,
    /// Another DWORD_ATOMIC op than the case's (`add` becomes `sub`, any other op `add`).
    WrongOp,
    /// The other surface (`%slm` and `%scratch` swapped).
    WrongSurface,
}

/// The kernel of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The instruction line, in Intel's text.
    pub line: String,
    /// The whole `.visaasm` file.
    pub text: String,
    /// The case's instruction as the reference reads it, when it does (what the lowered
    /// message must be: `super::lowered`); `None` for a text the parser rejects.
    pub instr: Option<Instruction>,
}

/// Why a case's instruction cannot be written in Intel's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoForm(pub String);

/// The kernel for `asm` under `state`, with `plant` applied to the instruction line.
pub fn build(asm: &str, state: &State, plant: Plant) -> Result<Kernel, NoForm> {
    let (line, instr) = intel_line(asm)?;
    let line = apply(plant, &line);
    let text = wrap(&line, state)?;
    Ok(Kernel { line, text, instr })
}

/// The instruction line in Intel's text, and the reference's reading of it where it has one.
fn intel_line(asm: &str) -> Result<(String, Option<Instruction>), NoForm> {
    let no_form = |r: atomcts_reference::Rejection| NoForm(r.detail);
    if let Ok(l) = intel::parse(asm) {
        // A line already in Intel's form reaches Intel's reader as the case spells it (white
        // space inside a region, `(4)` without a mask, `V0` for %null), names renamed only.
        let text = translate_words(asm)?;
        let instr = l.spelling.is_plain().then_some(l.instr);
        return Ok((text, instr));
    }
    match visa::parse(asm) {
        Ok(i) => Ok((i.to_intel_text(&naming()).map_err(no_form)?, Some(i))),
        Err(_) => Ok((translate_words(asm)?, None)),
    }
}

/// A text the reference's parser rejects, translated word by word, or a line already in
/// Intel's form with its names renamed (module docs).
pub fn translate_words(asm: &str) -> Result<String, NoForm> {
    let text = asm.trim();
    let words = words(text);
    let mut out = Vec::new();
    let mut i = 0;
    if words.first().is_some_and(|w| w.starts_with('(')) {
        out.push(words[0].to_string());
        i = 1;
    }
    let Some(mnemonic) = words.get(i) else {
        return Ok(asm.trim().to_string());
    };
    if intel::is_intel_mnemonic(mnemonic) {
        // Intel's operands are split at white space only (a region `X20(0,0)<0;1,0>` is one).
        out.push(mnemonic.to_string());
        let mut next = words.get(i + 1);
        if let Some(exec) = next.filter(|w| w.starts_with('(')) {
            out.push(exec.to_string());
            next = words.get(i + 2);
        }
        if let Some(first) = next {
            let at = first.as_ptr() as usize - text.as_ptr() as usize;
            for w in text[at..].split_whitespace() {
                out.push(intel_operand(w)?);
            }
        }
        return Ok(out.join(" "));
    }
    let mut parts = mnemonic.split('.');
    let base = parts.next().unwrap_or("");
    let scatter = base.eq_ignore_ascii_case("SVM_SCATTER4_SCALED");
    let mut m = if base.eq_ignore_ascii_case("DWORD_ATOMIC") {
        intel::DWORD_ATOMIC.to_string()
    } else if scatter {
        intel::SCATTER4.to_string()
    } else {
        base.to_lowercase()
    };
    for (k, p) in parts.enumerate() {
        m.push('.');
        if k == 0 && !scatter {
            match Op::from_name(p) {
                Some(op) => m.push_str(intel::op_name(op).ok_or_else(|| {
                    NoForm(format!(
                        "{} has no name in Intel's vISA text (IGC's op-name table skips it; X3)",
                        op.name().to_uppercase()
                    ))
                })?),
                None => m.push_str(&p.to_lowercase()),
            }
        } else if scatter {
            m.push_str(p);
        } else {
            m.push_str(&p.to_lowercase());
        }
    }
    out.push(m);
    i += 1;
    if let Some(exec) = words.get(i).filter(|w| w.starts_with('(')) {
        out.push(exec.to_string());
        i += 1;
    }
    for (k, w) in words.iter().enumerate().skip(i) {
        let first = k == i;
        if first && !scatter && w.starts_with('T') && *w != "T0" && *w != "T255" {
            return Err(NoForm(format!(
                "surface `{w}`: Intel's text names surfaces T0 and T255 `%slm` and `%scratch`; any other `T...` is a declared surface variable's name, not the document's surface (X4)"
            )));
        }
        out.push(operand(w, scatter && first)?);
    }
    Ok(out.join(" "))
}

/// One operand word of a document-form text in Intel's spelling.
fn operand(w: &str, address: bool) -> Result<String, NoForm> {
    let number = |s: &str| {
        (!s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0')))
        .then(|| s.parse::<u32>().ok())
        .flatten()
    };
    if let Some(n) = w.strip_prefix('T').and_then(number) {
        return match n {
            0 => Ok("%slm".into()),
            255 => Ok("%scratch".into()),
            n => Err(NoForm(format!(
                "surface T{n}: Intel's text names no surface by the document's index (its `T{n}` is a declared surface variable; X4)"
            ))),
        };
    }
    if let Some(n) = w.strip_prefix('V').and_then(number) {
        let name = naming().name(visa::Var(n));
        return Ok(if address {
            format!("{name}(0,0)<0;1,0>")
        } else {
            format!("{name}.0")
        });
    }
    Ok(w.to_string())
}

/// One word of a rejected line already in Intel's form: IGC's name `V<digits>` (X5) renamed
/// to the kernel's `X<n>`, its byte offset or region kept as written (X6, X7); a `T<n>` is a
/// declared surface variable of Intel's, never the document's surface (X4): no form.
fn intel_operand(w: &str) -> Result<String, NoForm> {
    if w.starts_with('T') {
        return Err(NoForm(format!(
            "surface `{w}`: in Intel's text a `T<n>` is a declared surface variable, not the document's surface (X4)"
        )));
    }
    let renamed = w.strip_prefix('V').and_then(|r| {
        // The digits are ASCII, so the split is on a character boundary.
        let (digits, rest) = r.split_at(r.bytes().take_while(u8::is_ascii_digit).count());
        let n = digits.parse().ok()?;
        (!rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| format!("{}{rest}", naming().name(visa::Var(n))))
    });
    Ok(renamed.unwrap_or_else(|| w.to_string()))
}

/// The words of a line: parenthesised groups whole, else split at white space.
fn words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let end = if rest.starts_with('(') {
            rest.find(')').map_or(rest.len(), |e| e + 1)
        } else {
            rest.find(|c: char| c.is_ascii_whitespace() || c == '(')
                .unwrap_or(rest.len())
                .max(1)
        };
        out.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    out
}

/// The instruction line with the plant applied.
fn apply(plant: Plant, line: &str) -> String {
    match plant {
        Plant::None => line.to_string(),
        Plant::WrongSurface => line
            .replace("%slm", "\u{0}")
            .replace("%scratch", "%slm")
            .replace('\u{0}', "%scratch"),
        Plant::WrongOp => {
            let Some(at) = line.find("dword_atomic.") else {
                return line.to_string();
            };
            let start = at + "dword_atomic.".len();
            let end = line[start..]
                .find(['.', ' '])
                .map_or(line.len(), |e| start + e);
            let other = if &line[start..end] == "add" {
                "sub"
            } else {
                "add"
            };
            format!("{}{other}{}", &line[..start], &line[end..])
        }
    }
}

/// vISA `.decl` type names (vISA "Data types"); `None` for a type `.decl` cannot declare.
pub fn type_name(t: ElemType) -> Option<&'static str> {
    Some(match (t.kind, t.bits) {
        (Kind::Unsigned, 8) => "ub",
        (Kind::Signed, 8) => "b",
        (Kind::Unsigned, 16) => "uw",
        (Kind::Signed, 16) => "w",
        (Kind::Unsigned, 32) => "ud",
        (Kind::Signed, 32) => "d",
        (Kind::Unsigned, 64) => "uq",
        (Kind::Signed, 64) => "q",
        (Kind::Float, 16) => "hf",
        (Kind::Float, 32) => "f",
        (Kind::Float, 64) => "df",
        _ => return None,
    })
}

/// The names `<prefix><digits>` in `line` (whole identifiers only).
fn names(line: &str, prefix: char) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let b = line.as_bytes();
    for (i, c) in line.char_indices() {
        let starts = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if c != prefix || !starts {
            continue;
        }
        let digits: String = line[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let after = line[i + 1 + digits.len()..].chars().next();
        if !digits.is_empty()
            && !after.is_some_and(|a| a.is_ascii_alphanumeric() || a == '_')
            && let Ok(n) = digits.parse()
        {
            out.insert(n);
        }
    }
    out
}

/// The whole kernel around `line`: a `.decl` for every `X<n>` and `P<n>` it names that the
/// state declares (as `V<n>`, `P<n>`), typed and sized from the state. A name the state does
/// not declare stays undeclared, as in the case.
pub fn wrap(line: &str, state: &State) -> Result<String, NoForm> {
    let mut decls = String::new();
    for n in names(line, 'X') {
        let Some(reg) = state.regs.get(&format!("V{n}")) else {
            continue;
        };
        let ty = type_name(reg.ty).ok_or_else(|| {
            NoForm(format!(
                "V{n}'s type ({}-bit {:?}) has no vISA .decl type",
                reg.ty.bits, reg.ty.kind
            ))
        })?;
        let _ = writeln!(
            decls,
            ".decl X{n} v_type=G type={ty} num_elts={} align=GRF",
            reg.elems.len().max(1)
        );
    }
    for n in names(line, 'P') {
        if let Some(reg) = state.regs.get(&format!("P{n}")) {
            let _ = writeln!(
                decls,
                ".decl P{n} v_type=P num_elts={}",
                reg.elems.len().max(1)
            );
        }
    }
    Ok(format!(
        ".version 4.1\n.kernel \"t\"\n{decls}.kernel_attr Target=\"3d\"\n.function \"_main_0\"\n\n_main_0:\n    {line}\n    ret (M1, 1)\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::state::Reg;

    fn var(s: &mut State, name: &str, ty: ElemType, n: usize) {
        s.regs.insert(
            name.into(),
            Reg {
                ty,
                elems: vec![0; n],
            },
        );
    }

    fn state() -> State {
        let mut s = State::new(1);
        var(&mut s, "V10", ElemType::UD, 4);
        var(&mut s, "V11", ElemType::UD, 4);
        var(&mut s, "V12", ElemType::UD, 4);
        var(&mut s, "V13", ElemType::UD, 4);
        var(&mut s, "P1", ElemType::BOOL, 8);
        s
    }

    const HEAD: &str = ".version 4.1\n.kernel \"t\"\n";
    const TAIL: &str = ".kernel_attr Target=\"3d\"\n.function \"_main_0\"\n\n_main_0:\n";

    #[test]
    fn a_dword_atomic_kernel_declares_what_the_instruction_names() {
        let k = build(
            "DWORD_ATOMIC.add (4) T0 V10 V11 V0 V13",
            &state(),
            Plant::None,
        )
        .unwrap();
        assert_eq!(
            k.line,
            "dword_atomic.add (4) %slm X10.0 X11.0 %null.0 X13.0"
        );
        assert_eq!(
            k.text,
            format!(
                "{HEAD}.decl X10 v_type=G type=ud num_elts=4 align=GRF\n\
                 .decl X11 v_type=G type=ud num_elts=4 align=GRF\n\
                 .decl X13 v_type=G type=ud num_elts=4 align=GRF\n\
                 {TAIL}    dword_atomic.add (4) %slm X10.0 X11.0 %null.0 X13.0\n    ret (M1, 1)\n"
            )
        );
        assert!(k.instr.is_some());
    }

    #[test]
    fn predicates_signed_ops_and_stateless_are_intels_spelling() {
        let mut s = state();
        var(&mut s, "V20", ElemType::D, 8);
        let k = build(
            "(!P1) DWORD_ATOMIC.imax (M1, 8) T255 V10 V20 V0 V20",
            &s,
            Plant::None,
        )
        .unwrap();
        assert_eq!(
            k.line,
            "(!P1) dword_atomic.maxsint (M1, 8) %scratch X10.0 X20.0 %null.0 X20.0"
        );
        assert!(
            k.text
                .contains(".decl X20 v_type=G type=d num_elts=8 align=GRF\n")
        );
        assert!(k.text.contains(".decl P1 v_type=P num_elts=8\n"));
        assert_eq!(k.text.matches(".decl X20").count(), 1, "{}", k.text);
    }

    #[test]
    fn a_scatter4_kernel_reads_its_address_as_a_scalar_region() {
        let mut s = State::new(1);
        var(&mut s, "V20", ElemType::UQ, 1);
        var(&mut s, "V21", ElemType::UQ, 8);
        var(&mut s, "V22", ElemType::F, 24);
        let k = build("SVM_SCATTER4_SCALED.RGA (8) V20 V21 V22", &s, Plant::None).unwrap();
        assert_eq!(
            k.line,
            "svm_scatter4scaled.RGA (8) X20(0,0)<0;1,0> X21.0 X22.0"
        );
        assert!(
            k.text
                .contains(".decl X20 v_type=G type=uq num_elts=1 align=GRF\n")
        );
        assert!(
            k.text
                .contains(".decl X22 v_type=G type=f num_elts=24 align=GRF\n")
        );
    }

    #[test]
    fn illegal_forms_are_translated_word_by_word() {
        let s = state();
        for (doc, intel) in [
            (
                "DWORD_ATOMIC.add (3) T0 V10 V11 V0 V13",
                "dword_atomic.add (3) %slm X10.0 X11.0 %null.0 X13.0",
            ),
            (
                "DWORD_ATOMIC.add (M9, 8) T0 V10 V11 V0 V13",
                "dword_atomic.add (M9, 8) %slm X10.0 X11.0 %null.0 X13.0",
            ),
            (
                "DWORD_ATOMIC.inc (4) T0 V10 V11 V0 V13",
                "dword_atomic.inc (4) %slm X10.0 X11.0 %null.0 X13.0",
            ),
            (
                "DWORD_ATOMIC.bogus (4) T0 V10 V11 V0 V13",
                "dword_atomic.bogus (4) %slm X10.0 X11.0 %null.0 X13.0",
            ),
            (
                "SVM_SCATTER4_SCALED.GR (8) V20 V21 V22",
                "svm_scatter4scaled.GR (8) X20(0,0)<0;1,0> X21.0 X22.0",
            ),
        ] {
            let k = build(doc, &s, Plant::None).unwrap();
            assert_eq!(k.line, intel, "{doc}");
            // `.GR` is read by the reference (knob `visa.channel_order` decides in lowering).
            assert_eq!(k.instr.is_none(), !doc.contains(".GR"), "{doc}");
        }
        // An undeclared variable stays undeclared, as in the case.
        let k = build("DWORD_ATOMIC.add (4) T0 V10 V11 V0 V99", &s, Plant::None).unwrap();
        assert!(!k.text.contains("X99 v_type"), "{}", k.text);
    }

    #[test]
    fn rejected_intel_lines_keep_their_words_with_the_kernels_names() {
        let t = |asm: &str| translate_words(asm).map_err(|e| e.0);
        assert_eq!(
            t("(P1) dword_atomic.add (M1, 3) %slm V0010.0 V0011.x V0.0 V0013.0").as_deref(),
            Ok("(P1) dword_atomic.add (M1, 3) %slm X10.0 X11.x %null.0 X13.0")
        );
        assert_eq!(
            t("svm_scatter4scaled.RX (M1, 16) V0020(0,0)<0;1,0> V0021.0 V0022.0").as_deref(),
            Ok("svm_scatter4scaled.RX (M1, 16) X20(0,0)<0;1,0> X21.0 X22.0")
        );
        // Only IGC's names are renamed: `V0010x` and `W0013` are other identifiers.
        assert_eq!(
            t("dword_atomic.add.32 (M1, 4) %slm V0010x.0 V0011 %null.0 W0013.0").as_deref(),
            Ok("dword_atomic.add.32 (M1, 4) %slm V0010x.0 X11 %null.0 W0013.0")
        );
        // Any other word as written, whatever its characters (no panic on a multi-byte one).
        assert_eq!(
            t("dword_atomic.add (M1, 4) %slm \u{e9}.0 V\u{e9}.0 V.0 %null.0").as_deref(),
            Ok("dword_atomic.add (M1, 4) %slm \u{e9}.0 V\u{e9}.0 V.0 %null.0")
        );
        // X4: Intel's `T<n>` is a declared surface variable, never the document's surface.
        assert!(t("dword_atomic.add (M1, 4) T255 V0010.0 V0011.0 %null.0 V0013.0").is_err());
    }

    #[test]
    fn what_intels_text_cannot_say_has_no_form() {
        let s = state();
        let predec = build("DWORD_ATOMIC.predec (4) T0 V10 V0 V0 V13", &s, Plant::None);
        assert!(predec.unwrap_err().0.contains("X3"));
        let surface = build("DWORD_ATOMIC.add (4) T3 V10 V11 V0 V13", &s, Plant::None);
        assert!(surface.unwrap_err().0.contains("X4"));
        let mut b = s.clone();
        var(&mut b, "V13", ElemType::B32, 4);
        let raw = build("DWORD_ATOMIC.add (4) T0 V10 V11 V0 V13", &b, Plant::None);
        assert!(raw.unwrap_err().0.contains("V13"));
    }

    #[test]
    fn plants_change_the_op_or_the_surface() {
        let s = state();
        let asm = "DWORD_ATOMIC.add (4) T0 V10 V11 V0 V13";
        let op = build(asm, &s, Plant::WrongOp).unwrap();
        assert_eq!(
            op.line,
            "dword_atomic.sub (4) %slm X10.0 X11.0 %null.0 X13.0"
        );
        let surface = build(asm, &s, Plant::WrongSurface).unwrap();
        assert_eq!(
            surface.line,
            "dword_atomic.add (4) %scratch X10.0 X11.0 %null.0 X13.0"
        );
        let inc = build(
            "DWORD_ATOMIC.inc.16 (4) T255 V10 V0 V0 V13",
            &s,
            Plant::WrongOp,
        );
        assert_eq!(
            inc.unwrap().line,
            "dword_atomic.add.16 (4) %scratch X10.0 %null.0 %null.0 X13.0"
        );
    }
}
