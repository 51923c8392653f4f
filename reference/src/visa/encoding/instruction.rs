//! Whole instructions as bytes, in the order of the documents' Format tables: DWORD_ATOMIC
//! (seeds 000/001, "Format": `0x7d`, Op, Exec_size, Pred, Surface, Element_offset, Src0, Src1,
//! Dst) and SVM_SCATTER4_SCALED (seed 003, "Format": `0x4e`, `0x07`, Exec_size, Pred, Channels,
//! Scale, Address, Element_offset, Src). Multi-byte fields are little-endian.
//!
//! The documents give the byte fields (Op, Exec_size, Surface, Channels) and the type of every
//! field (`ub`, `uw`, `raw_operand`, `scalar`) but not the layout of Pred(uw), of a raw operand
//! or of a scalar operand. Those layouts are taken from the bytes of Intel's vISA assembler
//! (`GenX_IR -binary`, IGC 1.0.12504.6) for our own kernels, committed in
//! `tests/data/intel-binary` and described with their evidence in `docs/intel-binary.md`:
//! - Pred(uw): bits 11..0 the predicate variable `P<n>`'s number (0: no predicate), bit 15 `!`;
//!   bits 14..13 are Intel's `.all`/`.any` controls, which the documents' Text has no form for;
//! - raw_operand: the variable id (ud; `V0` is the null variable) and a byte offset (uw);
//! - scalar (SCATTER4's Address): a general-variable operand, tag `0x00` (ub), the variable id
//!   (ud), row and column offsets (ub, ub) and the region `<0;1,0>` (uw `0x0121`).
//!
//! Intel's binary writer leaves out the last two operands of both instructions (see
//! `docs/findings.md`); this encoder writes every field the Format tables list.

use super::super::dword_atomic::DwordAtomic;
use super::super::scatter4::{Channels, Scatter4};
use super::super::{Instruction, Predicate, Var};
use super::{
    DwordAtomicBytes, DwordAtomicOperands, decode as decode_fields, decode_scatter4_exec_size,
    encode as encode_fields, encode_channels, encode_scatter4_exec_size,
};
use crate::error::{Reason, Rejection};

/// DWORD_ATOMIC, "Opcode": `0x7d`.
pub const DWORD_ATOMIC: u8 = 0x7d;
/// SVM_SCATTER4_SCALED, "Opcode": SVM `0x4e`.
pub const SVM: u8 = 0x4e;
/// SVM_SCATTER4_SCALED, "Opcode": the SVM sub-opcode SCATTER4_SCALED `0x07`.
pub const SCATTER4_SCALED: u8 = 0x07;

/// Pred(uw) bit 15: the predicate is negated (`!P<n>`).
const PRED_NEGATED: u16 = 0x8000;
/// Pred(uw) bits 11..0: the predicate variable's number.
const PRED_VAR: u16 = 0x0fff;
/// Tag of a general-variable vector operand without modifier (a scalar's first byte).
const GENERAL_OPERAND: u8 = 0x00;
/// The scalar region `<0;1,0>` as Intel writes it: each of vertical stride, width and
/// horizontal stride as `log2(x) + 2`, or 1 for a stride of 0, in bits 3..0, 7..4, 11..8.
const SCALAR_REGION: u16 = 0x0121;

/// Bytes of one raw operand.
pub const RAW_OPERAND_LEN: usize = 6;
/// Bytes of one scalar (general variable) operand.
pub const SCALAR_LEN: usize = 9;

fn malformed(detail: String) -> Rejection {
    Rejection::new(Reason::ReservedEncoding, detail)
}

/// vISA raw_operand: a variable and a byte offset into it. The documents' text names a whole
/// variable (`V<n>`, offset 0); Intel's text adds the offset (`V<n>.<bytes>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawOperand {
    /// The variable (its id in the binary).
    pub var: Var,
    /// Byte offset into the variable.
    pub offset: u16,
}

impl From<Var> for RawOperand {
    fn from(var: Var) -> RawOperand {
        RawOperand { var, offset: 0 }
    }
}

/// raw_operand: id (ud) then offset (uw).
pub fn encode_raw(r: RawOperand, out: &mut Vec<u8>) {
    out.extend_from_slice(&r.var.0.to_le_bytes());
    out.extend_from_slice(&r.offset.to_le_bytes());
}

/// Pred(uw) of an optional predicate. `None` where the predicate number does not fit bits
/// 11..0.
pub fn encode_pred(p: Option<Predicate>) -> Option<u16> {
    match p {
        None => Some(0),
        Some(Predicate { var, negated }) => {
            let n = u16::try_from(var)
                .ok()
                .filter(|&n| n != 0 && n <= PRED_VAR)?;
            Some(n | if negated { PRED_NEGATED } else { 0 })
        }
    }
}

/// Inverse of [`encode_pred`]: the `.any`/`.all` controls (bits 14..13) and bit 12 have no
/// form in the documents' Text and are rejected as [`Reason::ReservedEncoding`].
pub fn decode_pred(w: u16) -> Result<Option<Predicate>, Rejection> {
    if w & !(PRED_VAR | PRED_NEGATED) != 0 {
        return Err(malformed(format!(
            "Pred {w:#06x} sets bits 14..12 (Intel's .any/.all controls): the documents' Text has no form for them"
        )));
    }
    match (w & PRED_VAR, w & PRED_NEGATED != 0) {
        (0, false) => Ok(None),
        (0, true) => Err(malformed(format!("Pred {w:#06x}: `!` without a predicate"))),
        (var, negated) => Ok(Some(Predicate {
            var: u32::from(var),
            negated,
        })),
    }
}

/// DWORD_ATOMIC as bytes, every field of its Format table, with raw-operand byte offsets
/// (Element_offset, Src0, Src1, Dst). `None` where the exec size or the predicate has no code.
pub fn encode_dword_atomic(d: &DwordAtomic, offsets: [u16; 4]) -> Option<Vec<u8>> {
    let f = encode_fields(d)?;
    let mut out = vec![DWORD_ATOMIC, f.op, f.exec_size];
    out.extend_from_slice(&encode_pred(d.pred)?.to_le_bytes());
    out.push(f.surface);
    for (var, offset) in [d.element_offset, d.src0, d.src1, d.dst]
        .into_iter()
        .zip(offsets)
    {
        encode_raw(RawOperand { var, offset }, &mut out);
    }
    Some(out)
}

/// SVM_SCATTER4_SCALED as bytes, every field of its Format table (Scale is always zero), with
/// raw-operand byte offsets (Element_offset, Src). `None` where the exec size or the predicate
/// has no code.
pub fn encode_scatter4(s: &Scatter4, offsets: [u16; 2]) -> Option<Vec<u8>> {
    let mut out = vec![SVM, SCATTER4_SCALED, encode_scatter4_exec_size(&s.exec)?];
    out.extend_from_slice(&encode_pred(s.pred)?.to_le_bytes());
    out.push(encode_channels(s.channels));
    out.extend_from_slice(&0u16.to_le_bytes()); // Scale(uw): ignored, always zero.
    out.push(GENERAL_OPERAND);
    out.extend_from_slice(&s.address.0.to_le_bytes());
    out.extend_from_slice(&[0, 0]); // row and column offsets
    out.extend_from_slice(&SCALAR_REGION.to_le_bytes());
    for (var, offset) in [s.element_offset, s.src].into_iter().zip(offsets) {
        encode_raw(RawOperand { var, offset }, &mut out);
    }
    Some(out)
}

/// Encodes either instruction with offsets 0.
pub fn encode(i: &Instruction) -> Option<Vec<u8>> {
    match i {
        Instruction::DwordAtomic(d) => encode_dword_atomic(d, [0; 4]),
        Instruction::Scatter4(s) => encode_scatter4(s, [0; 2]),
    }
}

/// A little-endian reader over one instruction's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self, field: &str) -> Result<[u8; N], Rejection> {
        let b = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or_else(|| malformed(format!("{field}: the bytes end at offset {}", self.at)))?;
        self.at += N;
        Ok(b.try_into().expect("slice of length N"))
    }
    fn ub(&mut self, field: &str) -> Result<u8, Rejection> {
        Ok(self.take::<1>(field)?[0])
    }
    fn uw(&mut self, field: &str) -> Result<u16, Rejection> {
        Ok(u16::from_le_bytes(self.take(field)?))
    }
    fn ud(&mut self, field: &str) -> Result<u32, Rejection> {
        Ok(u32::from_le_bytes(self.take(field)?))
    }
    fn raw(&mut self, field: &str) -> Result<RawOperand, Rejection> {
        let var = Var(self.ud(field)?);
        let offset = self.uw(field)?;
        Ok(RawOperand { var, offset })
    }
}

/// A decoded instruction, the raw operands' byte offsets in Format order, and its length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The instruction.
    pub instruction: Instruction,
    /// Byte offsets of the raw operands (DWORD_ATOMIC: 4, SVM_SCATTER4_SCALED: 2).
    pub offsets: Vec<u16>,
    /// Bytes read.
    pub len: usize,
}

/// Decodes one instruction from the start of `bytes`, every field of its Format table; a
/// field value the documents do not define is rejected as the byte-field decoders do.
pub fn decode(bytes: &[u8]) -> Result<Decoded, Rejection> {
    let mut r = Reader { bytes, at: 0 };
    match r.ub("opcode")? {
        DWORD_ATOMIC => {
            let op = r.ub("Op")?;
            let exec_size = r.ub("Exec_size")?;
            let pred = decode_pred(r.uw("Pred")?)?;
            let surface = r.ub("Surface")?;
            let [eo, s0, s1, dst] = [
                r.raw("Element_offset")?,
                r.raw("Src0")?,
                r.raw("Src1")?,
                r.raw("Dst")?,
            ];
            let d = decode_fields(
                DwordAtomicBytes {
                    op,
                    exec_size,
                    surface,
                },
                DwordAtomicOperands {
                    pred,
                    element_offset: eo.var,
                    src0: s0.var,
                    src1: s1.var,
                    dst: dst.var,
                },
            )?;
            Ok(Decoded {
                instruction: Instruction::DwordAtomic(d),
                offsets: vec![eo.offset, s0.offset, s1.offset, dst.offset],
                len: r.at,
            })
        }
        SVM => {
            let sub = r.ub("SVM sub-opcode")?;
            if sub != SCATTER4_SCALED {
                return Err(malformed(format!(
                    "SVM sub-opcode {sub:#04x} is not SCATTER4_SCALED ({SCATTER4_SCALED:#04x})"
                )));
            }
            let exec = decode_scatter4_exec_size(r.ub("Exec_size")?)?;
            let pred = decode_pred(r.uw("Pred")?)?;
            let channels = Channels::new(r.ub("Channels")?)?;
            let scale = r.uw("Scale")?;
            if scale != 0 {
                return Err(malformed(format!(
                    "Scale {scale:#06x}: the field is ignored and always zero"
                )));
            }
            let tag = r.ub("Address")?;
            let address = Var(r.ud("Address")?);
            let (row, col) = (r.ub("Address")?, r.ub("Address")?);
            let region = r.uw("Address")?;
            if tag != GENERAL_OPERAND || row != 0 || col != 0 || region != SCALAR_REGION {
                return Err(malformed(format!(
                    "Address: operand tag {tag:#04x}, offsets ({row},{col}), region {region:#06x} is not a scalar variable"
                )));
            }
            let eo = r.raw("Element_offset")?;
            let src = r.raw("Src")?;
            Ok(Decoded {
                instruction: Instruction::Scatter4(Scatter4 {
                    pred,
                    channels,
                    written_order: None,
                    exec,
                    address,
                    element_offset: eo.var,
                    src: src.var,
                }),
                offsets: vec![eo.offset, src.offset],
                len: r.at,
            })
        }
        other => Err(malformed(format!(
            "opcode {other:#04x} is neither DWORD_ATOMIC ({DWORD_ATOMIC:#04x}) nor SVM ({SVM:#04x})"
        ))),
    }
}

/// The bytes Intel's vISA binary writer (IGC 1.0.12504.6) emits for an instruction of this
/// encoding: the fields up to and including the sixth operand of the Format table, that is
/// without Src1 and Dst (DWORD_ATOMIC) or Element_offset and Src (SVM_SCATTER4_SCALED). A
/// finding (`docs/findings.md`), modelled so that the committed binaries can be compared; the
/// encoder itself writes every field.
pub fn intel_written_len(encoded: &[u8]) -> usize {
    encoded.len() - 2 * RAW_OPERAND_LEN
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visa::parse;

    fn bytes(text: &str) -> Vec<u8> {
        encode(&parse(text).unwrap()).unwrap()
    }

    #[test]
    fn dword_atomic_field_order() {
        let b = bytes("(!P3) DWORD_ATOMIC.cmpxchg (M2_NM, 8) T255 V32 V33 V34 V35");
        assert_eq!(
            b,
            [
                0x7d, 0x07, 0x93, 0x03, 0x80, 0x05, //
                32, 0, 0, 0, 0, 0, 33, 0, 0, 0, 0, 0, 34, 0, 0, 0, 0, 0, 35, 0, 0, 0, 0, 0,
            ]
        );
        assert_eq!(intel_written_len(&b), 18);
    }

    #[test]
    fn scatter4_field_order() {
        let b = bytes("(P1) SVM_SCATTER4_SCALED.RGA (16) V32 V33 V34");
        assert_eq!(
            b,
            [
                0x4e, 0x07, 0x04, 0x01, 0x00, 0x0b, 0x00, 0x00, //
                0x00, 32, 0, 0, 0, 0, 0, 0x21, 0x01, //
                33, 0, 0, 0, 0, 0, 34, 0, 0, 0, 0, 0,
            ]
        );
        assert_eq!(intel_written_len(&b), 17);
    }

    #[test]
    fn decode_inverts_encode() {
        for text in [
            "DWORD_ATOMIC.add (4) T0 V10 V11 V0 V13",
            "(P7) DWORD_ATOMIC.fcmpwr (M8_NM, 32) T0 V1 V2 V3 V4",
            "(!P4095) DWORD_ATOMIC.inc.16 (1) T255 V100000 V0 V0 V0",
            "SVM_SCATTER4_SCALED.B (M5, 8) V20 V21 V22",
            "(!P2) SVM_SCATTER4_SCALED.RGBA (M1_NM, 16) V70000 V21 V22",
        ] {
            let i = parse(text).unwrap();
            let mut b = encode(&i).unwrap();
            let mut want = i.clone();
            match &mut want {
                Instruction::DwordAtomic(d) => d.exec.mask_written = true,
                Instruction::Scatter4(s) => s.exec.mask_written = true,
            }
            b.push(0xee); // a following byte is not read
            let d = decode(&b).unwrap();
            assert_eq!(d.instruction, want, "{text}");
            assert_eq!(d.len, b.len() - 1);
            assert!(d.offsets.iter().all(|&o| o == 0));
        }
    }

    #[test]
    fn offsets_and_predicates() {
        let d = match parse("DWORD_ATOMIC.add (8) T0 V32 V33 V0 V35").unwrap() {
            Instruction::DwordAtomic(d) => d,
            Instruction::Scatter4(_) => unreachable!(),
        };
        let b = encode_dword_atomic(&d, [0x20, 0x40, 0, 0x1234]).unwrap();
        assert_eq!(&b[6..12], &[32, 0, 0, 0, 0x20, 0]);
        assert_eq!(&b[24..30], &[35, 0, 0, 0, 0x34, 0x12]);
        assert_eq!(decode(&b).unwrap().offsets, [0x20, 0x40, 0, 0x1234]);
        assert_eq!(encode_pred(None), Some(0));
        let p = |var, negated| Some(Predicate { var, negated });
        assert_eq!(encode_pred(p(1, true)), Some(0x8001));
        assert_eq!(encode_pred(p(4096, false)), None);
        assert_eq!(encode_pred(p(0, false)), None);
        assert_eq!(
            decode_pred(0xc002).unwrap_err().reason,
            Reason::ReservedEncoding
        );
        assert_eq!(
            decode_pred(0x2001).unwrap_err().reason,
            Reason::ReservedEncoding
        );
        assert_eq!(
            decode_pred(0x8000).unwrap_err().reason,
            Reason::ReservedEncoding
        );
        assert_eq!(decode_pred(0x8002).unwrap(), p(2, true));
    }

    #[test]
    fn malformed_bytes_are_rejected() {
        let good = bytes("SVM_SCATTER4_SCALED.R (8) V20 V21 V22");
        for (at, v, reason) in [
            (0, 0x7e, Reason::ReservedEncoding), // opcode
            (1, 0x06, Reason::ReservedEncoding), // sub-opcode
            (2, 0x02, Reason::InvalidExecSize),  // (4)
            (5, 0x00, Reason::EmptyChannelMask),
            (6, 0x01, Reason::ReservedEncoding),  // Scale
            (8, 0x05, Reason::ReservedEncoding),  // an immediate Address
            (15, 0x10, Reason::ReservedEncoding), // region
        ] {
            let mut b = good.clone();
            b[at] = v;
            assert_eq!(decode(&b).unwrap_err().reason, reason, "byte {at} = {v:#x}");
        }
        assert_eq!(
            decode(&good[..good.len() - 1]).unwrap_err().reason,
            Reason::ReservedEncoding
        );
        let mut da = bytes("DWORD_ATOMIC.inc (8) T0 V32 V0 V0 V35");
        da[12] = 33; // Src0 of INC
        assert_eq!(decode(&da).unwrap_err().reason, Reason::OperandMustBeV0);
        da[5] = 6; // a declared surface T6
        assert_eq!(decode(&da).unwrap_err().reason, Reason::InvalidSurface);
    }
}
