//! SASS ATOM on SPA 5.0 (sm_50, sm_52): the 64-bit instruction word.
//!
//! Not from the document, which gives no encoding: the layout was found by experiment with
//! NVIDIA's own tools (`tools/nvidia/README.md`). Kernels assembled by ptxas were disassembled
//! by nvdisasm 11.8 with the words printed, one field varied at a time (op, size, registers,
//! displacement, base register), and single bits of real words were flipped and disassembled
//! again (`nvdisasm --binary SM50`). The listings are `reference/tests/data/nvidia`; the test
//! `nvidia_listings` decodes every ATOM word there, checks it against the printed text, and
//! encodes the instruction back to the word. Corpus cases may state a word beside their text
//! (FORMAT.md "Encodings"); [`agree`] checks it both ways.
//!
//! ```text
//! ATOM (bits 63..56 = 0xed)                 ATOM.CAS (bits 63..52 = 0xeef)
//!   55..52  op: ADD MIN MAX INC DEC AND       51  Rb is RZ; the register field is Rc
//!           OR XOR EXCH, 10 = SAFEADD         50  Rc is RZ
//!           (9, 11..15 invalid)               49  .64
//!   51..49  size: U32 S32 U64 F32.FTZ.RN      48  .E
//!           U128 S64 (6, 7 invalid)
//!   48      .E
//! both:
//!   47..28  ImmS20 (ImmU20 when Ra = RZ)      19  guard negated
//!   27..20  Rb (CAS: Rb, or Rc with bit 51)   18..16  guard predicate (7 = PT)
//!   15..8   Ra (255 = RZ: absolute address)   7..0  Rd (255 = RZ)
//! ```
//!
//! What the words show about the document's CAS rules (ambiguity A17): the CAS word has one
//! register field. Rc is not encoded: it is Rb+1 (CAS.32) or Rb+2 (CAS.64), or RZ by bit 50;
//! with bit 51 the compare value is RZ and the field names Rc. nvdisasm prints an odd Rb
//! (`R9, R10`) and an Rb with no pair (`R254, ???255`) without complaint, so alignment is not
//! part of the encoding; ptxas itself always picks Rb = R2n (R4n) and moves zero into Rb+1
//! rather than using the RZ forms. The displacement field has 20 bits with and without `.E`
//! (N3: an ImmS32 `.E` offset cannot be encoded; ptxas forms larger offsets with IADD32I), and
//! the size field has no code for F16x2 or F64 (those table rows are not SPA 5.0 encodings).

use super::atom::{Address, Guard, Instruction, Op, Pred, Reg, Size};
use crate::error::{Reason, Rejection};

/// A word that is not an ATOM this layout can express.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The opcode bits are not ATOM or ATOM.CAS.
    #[error("{0:#018x} is not an ATOM word")]
    NotAtom(u64),
    /// The op field holds a value with no operation (nvdisasm prints `INVALIDATOMOP<n>`).
    #[error("op field {0} is no ATOM operation")]
    InvalidOp(u64),
    /// The size field holds a value with no size (nvdisasm prints `INVALIDATOMICSIZE<n>`).
    #[error("size field {0} is no ATOM size")]
    InvalidSize(u64),
    /// The size field says `.U128`, which the document names but declares illegal.
    #[error("size field 4 is .U128, which the document declares illegal")]
    IllegalSize,
    /// ATOM.CAS with both RZ bits (51 and 50) set.
    #[error("ATOM.CAS with both Rb = RZ and Rc = RZ bits set")]
    InvalidCasForm,
    /// ATOM.CAS whose implied Rc (Rb+1, Rb+2) is past R254 or whose Rb is 255 without the RZ
    /// bit (nvdisasm prints `???255`).
    #[error("ATOM.CAS register field {0} has no register pair")]
    NoCasPair(u64),
}

impl DecodeError {
    /// The rejection a corpus case expects of such a word (FORMAT.md `encoding`): a word of
    /// another instruction names an unknown operation; `.U128` is the document's illegal size
    /// (".128 aliases to .U128, but is illegal"); a CAS register field with no pair breaks the
    /// document's CAS rule (Rc is Rb+1, Rb+2 or RZ); the op, size and CAS-form codes nvdisasm
    /// prints as invalid or refuses are reserved.
    pub fn reason(&self) -> Reason {
        match self {
            DecodeError::NotAtom(_) => Reason::UnknownOperation,
            DecodeError::IllegalSize => Reason::IllegalSize,
            DecodeError::NoCasPair(_) => Reason::CasRegisterPairing,
            DecodeError::InvalidOp(_)
            | DecodeError::InvalidSize(_)
            | DecodeError::InvalidCasForm => Reason::ReservedEncoding,
        }
    }
}

/// An instruction the SPA 5.0 word cannot express.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{instruction}` has no SPA 5.0 ATOM word: {why}")]
pub struct EncodeError {
    /// The instruction, in canonical text.
    pub instruction: String,
    /// Which part has no encoding.
    pub why: String,
}

fn bits(w: u64, lo: u32, n: u32) -> u64 {
    (w >> lo) & ((1 << n) - 1)
}

fn reg(field: u64) -> Reg {
    match field {
        255 => Reg::RZ,
        n => Reg::R(n as u8),
    }
}

/// The SPA 5.0 size codes of bits 51..49 (codes 6 and 7 are invalid, 4 is `.U128`).
const SIZES: [(u64, Size); 5] = [
    (0, Size::U32),
    (1, Size::S32),
    (2, Size::U64),
    (3, Size::F32FtzRn),
    (5, Size::S64),
];

/// The op codes of bits 55..52; CAS has its own opcode.
const OPS: [(u64, Op); 10] = [
    (0, Op::Add),
    (1, Op::Min),
    (2, Op::Max),
    (3, Op::Inc),
    (4, Op::Dec),
    (5, Op::And),
    (6, Op::Or),
    (7, Op::Xor),
    (8, Op::Exch),
    (10, Op::SafeAdd),
];

/// Decodes an SPA 5.0 ATOM word into the instruction nvdisasm prints for it. The result is not
/// checked against the document's "Atomic Operations" table (the encoding has an op field and
/// a size field side by side, and nvdisasm prints e.g. `ATOM.E.INC.S64`); [`super::lower`]
/// rejects such rows.
pub fn decode(w: u64) -> Result<Instruction, DecodeError> {
    let cas = bits(w, 52, 12) == 0xeef;
    if !cas && bits(w, 56, 8) != 0xed {
        return Err(DecodeError::NotAtom(w));
    }
    let pred = bits(w, 16, 3);
    let negated = bits(w, 19, 1) == 1;
    let guard = (pred != 7 || negated).then_some(Guard {
        negated,
        pred: if pred == 7 {
            Pred::PT
        } else {
            Pred::P(pred as u8)
        },
    });
    let ra = bits(w, 8, 8);
    let imm = bits(w, 28, 20);
    let addr = if ra == 255 {
        Address::Absolute(imm as u32)
    } else {
        // ImmS20: sign-extend the 20-bit field.
        Address::Reg {
            ra: reg(ra),
            offset: ((imm << 44) as i64) >> 44,
        }
    };
    let field = bits(w, 20, 8);
    let (op, size, rb, rc) = if cas {
        let wide = bits(w, 49, 1) == 1;
        let size = if wide { Size::U64 } else { Size::U32 };
        let (rb, rc) = match (bits(w, 51, 1), bits(w, 50, 1)) {
            (1, 1) => return Err(DecodeError::InvalidCasForm),
            (1, 0) => (Reg::RZ, reg(field)),
            (0, rc_rz) => {
                let step = if wide { 2 } else { 1 };
                if field + step > 254 {
                    return Err(DecodeError::NoCasPair(field));
                }
                let rc = if rc_rz == 1 {
                    Reg::RZ
                } else {
                    reg(field + step)
                };
                (reg(field), rc)
            }
            _ => unreachable!("one-bit fields"),
        };
        (Op::Cas, size, rb, Some(rc))
    } else {
        let code = bits(w, 52, 4);
        let op = OPS
            .iter()
            .find(|(c, _)| *c == code)
            .map(|p| p.1)
            .ok_or(DecodeError::InvalidOp(code))?;
        let code = bits(w, 49, 3);
        if code == 4 {
            return Err(DecodeError::IllegalSize);
        }
        let size = SIZES
            .iter()
            .find(|(c, _)| *c == code)
            .map(|p| p.1)
            .ok_or(DecodeError::InvalidSize(code))?;
        (op, size, reg(field), None)
    };
    Ok(Instruction {
        guard,
        extended: bits(w, 48, 1) == 1,
        op,
        size,
        sparse: None,
        rd: reg(bits(w, 0, 8)),
        addr,
        rb,
        rc,
    })
}

/// The register field of `r` (RZ is 255).
fn reg_field(r: Reg) -> u64 {
    match r {
        Reg::R(n) => u64::from(n),
        Reg::RZ => 255,
    }
}

/// Encodes an instruction into the SPA 5.0 ATOM word [`decode`] reads back; the inverse of
/// `decode` on every word it accepts. `Err` for what the layout cannot express: the
/// sparse-predicate forms, the F16x2 and F64 sizes and CAS `.S32` (no size code), a
/// displacement outside the 20-bit field, `[RZ + Imm]` (RZ as Ra is the absolute form), and
/// CAS registers other than Rc = Rb+1 (Rb+2 for `.64`), Rc = RZ, or Rb = RZ.
pub fn encode(i: &Instruction) -> Result<u64, EncodeError> {
    let no = |why: &str| EncodeError {
        instruction: i.to_string(),
        why: why.into(),
    };
    if i.sparse.is_some() {
        return Err(no("the sparse-predicate forms have no SPA 5.0 encoding"));
    }
    let (negated, pred) = match i.guard {
        None => (false, Pred::PT),
        Some(Guard { negated, pred }) => (negated, pred),
    };
    let pred = match pred {
        Pred::P(n) => u64::from(n),
        Pred::PT => 7,
    };
    let (ra, imm) = match i.addr {
        Address::Absolute(a) if a < 1 << 20 => (255, u64::from(a)),
        Address::Reg { ra: Reg::RZ, .. } => {
            return Err(no("Ra = RZ is the encoding of the absolute form [ImmU20]"));
        }
        Address::Reg { ra, offset } if (-0x80000..0x80000).contains(&offset) => {
            (reg_field(ra), (offset as u64) & 0xf_ffff)
        }
        _ => return Err(no("the displacement does not fit the 20-bit field")),
    };
    // (value, lowest bit) of each field, as `decode` reads them.
    let mut fields = vec![
        (reg_field(i.rd), 0),
        (ra, 8),
        (pred, 16),
        (u64::from(negated), 19),
        (imm, 28),
        (u64::from(i.extended), 48),
    ];
    if i.op == Op::Cas {
        let (wide, step) = match i.size {
            Size::U32 => (0, 1),
            Size::U64 => (1, 2),
            _ => return Err(no("the CAS word has a .64 bit and no other size code")),
        };
        // (Rb = RZ bit, Rc = RZ bit, register field)
        let (rb_rz, rc_rz, field) = match (i.rb, i.rc) {
            (Reg::RZ, Some(rc)) => (1, 0, reg_field(rc)),
            (Reg::R(n), _) if u64::from(n) + step > 254 => {
                return Err(no("Rb has no register pair below RZ"));
            }
            (Reg::R(n), Some(Reg::RZ)) => (0, 1, u64::from(n)),
            (Reg::R(n), Some(Reg::R(c))) if u64::from(c) == u64::from(n) + step => {
                (0, 0, u64::from(n))
            }
            _ => return Err(no("Rc is neither Rb's pair (Rb+1, Rb+2 for .64) nor RZ")),
        };
        fields.extend([
            (0xeef, 52),
            (rb_rz, 51),
            (rc_rz, 50),
            (wide, 49),
            (field, 20),
        ]);
    } else {
        let op = OPS.iter().find(|p| p.1 == i.op).map(|p| p.0);
        let size = SIZES.iter().find(|p| p.1 == i.size).map(|p| p.0);
        let (None, Some(op), Some(size)) = (i.rc, op, size) else {
            return Err(no(
                "the op or size field has no code for it, or Rc is given",
            ));
        };
        fields.extend([(0xed, 56), (op, 52), (size, 49), (reg_field(i.rb), 20)]);
    }
    Ok(fields.into_iter().fold(0, |w, (v, lo)| w | (v << lo)))
}

/// What a stated word says about a text form (FORMAT.md `encoding`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// The word decodes to the text's instruction, and the text encodes to the word.
    Agrees,
    /// The decoder rejects the word.
    Rejected(Rejection),
    /// They disagree; one line per difference.
    Differs(Vec<String>),
}

/// Checks a stated word against a text form both ways: the word must decode to the text's
/// instruction (a guard `@PT` is the word's no guard), and the text must encode to the word.
/// `Err` when the text itself is rejected.
pub fn agree(text: &str, word: u64) -> Result<Agreement, Rejection> {
    let mut text_form = super::parse(text)?;
    let decoded = match decode(word) {
        Ok(i) => i,
        Err(e) => {
            return Ok(Agreement::Rejected(Rejection::new(
                e.reason(),
                e.to_string(),
            )));
        }
    };
    let mut differs = Vec::new();
    match encode(&text_form) {
        Ok(w) if w != word => differs.push(format!(
            "the text encodes to {w:#018x}, the case states {word:#018x} (bits {:#018x} differ)",
            w ^ word
        )),
        Ok(_) => {}
        Err(e) => differs.push(e.to_string()),
    }
    if text_form.guard
        == Some(Guard {
            negated: false,
            pred: Pred::PT,
        })
    {
        text_form.guard = None;
    }
    if decoded != text_form {
        differs.push(format!(
            "the word decodes to `{}`, the text is `{}`",
            decoded.nvdisasm(),
            text.trim()
        ));
    }
    Ok(if differs.is_empty() {
        Agreement::Agrees
    } else {
        Agreement::Differs(differs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Words and texts from nvdisasm 11.8 (`reference/tests/data/nvidia/probe_sm_50.sass`).
    #[test]
    fn decodes_words_nvdisasm_printed() {
        for (w, text) in [
            (0xed01ffe700970200, "ATOM.E.ADD R0, [R2+-0x190], R9"),
            (0xed00ffffc097ff00, "ATOM.ADD R0, [0xffffc], R9"),
            (
                0xeef3800001470418,
                "ATOM.E.CAS.64 R24, [R4+-0x80000], R20, R22",
            ),
            (0xeef5000080870208, "ATOM.E.CAS R8, [R2+0x8], R8, RZ"),
            (0xeef9000080870208, "ATOM.E.CAS R8, [R2+0x8], RZ, R8"),
            (0xed010000004f0200, "@!PT ATOM.E.ADD R0, [R2], R4"),
            (0xeda1000000470200, "ATOM.E.SAFEADD R0, [R2], R4"),
        ] {
            let i = decode(w).unwrap_or_else(|e| panic!("{w:#x}: {e}"));
            assert_eq!(i.nvdisasm(), text, "{w:#x}");
        }
    }

    /// The encoder is the decoder's inverse on these words, and refuses what the word cannot hold.
    #[test]
    fn encodes_back_and_refuses_what_has_no_word() {
        for w in [
            0xed01ffe700970200,
            0xed00ffffc097ff00,
            0xeef3800001470418,
            0xeef5000080870208,
            0xeef9000080870208,
            0xed010000004f0200,
            0xeda1000000470200,
        ] {
            assert_eq!(encode(&decode(w).unwrap()), Ok(w), "{w:#x}");
        }
        for text in [
            "ATOM.ADD.F16x2.RN R0, [R2], R4",
            "ATOM.E.ADD.F64.RN R0, [R2], R4",
            "ATOM.MIN.S32 P0, R0, [R2], R4",
            "ATOM.CAS.S32 R0, [R2], R4, R5",
            "ATOM.CAS.32 R0, [R2], R4, R6",
            "ATOM.E.ADD.U64 R0, [R2+0x80000], R4",
            "ATOM.ADD R0, [RZ+0x10], R4",
        ] {
            let i = super::super::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(encode(&i).is_err(), "{text}");
        }
        assert_eq!(
            agree("@PT ATOM.E.ADD R0, [R2], R4", 0xed01000000470200),
            Ok(Agreement::Agrees)
        );
        assert!(matches!(
            agree("ATOM.E.ADD R0, [R2], R5", 0xed01000000470200),
            Ok(Agreement::Differs(l)) if l.len() == 2
        ));
    }

    #[test]
    fn rejects_what_nvdisasm_calls_invalid() {
        assert_eq!(decode(0xed91000000470200), Err(DecodeError::InvalidOp(9)));
        assert_eq!(decode(0xed0d000000470200), Err(DecodeError::InvalidSize(6)));
        assert_eq!(decode(0xed09000000470200), Err(DecodeError::IllegalSize));
        assert_eq!(decode(0xeef100008ff70208), Err(DecodeError::NoCasPair(255)));
        assert_eq!(decode(0xeefd000080870208), Err(DecodeError::InvalidCasForm));
        assert!(matches!(
            decode(0xeed4200000070404),
            Err(DecodeError::NotAtom(_))
        ));
    }
}
