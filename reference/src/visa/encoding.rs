//! The binary fields of the vISA documents, both ways: DWORD_ATOMIC Op(ub), Exec_size(ub) and
//! Surface(ub), and SVM_SCATTER4_SCALED Exec_size(ub) and Channels(ub). A field value the
//! documents do not define decodes to [`Reason::ReservedEncoding`] (a surface index other than
//! 0 and 5 to [`Reason::InvalidSurface`], an empty channel mask to
//! [`Reason::EmptyChannelMask`]). [`instruction`] writes and reads whole instructions, every
//! field of the Format tables, as Intel's vISA assembler lays them out.

pub mod instruction;

use super::dword_atomic::{DwordAtomic, Op, Surface, check_operands};
use super::scatter4::{self, Channels};
use super::{ExecSize, MaskCtrl, Predicate, Var};
use crate::error::{Reason, Rejection};

fn reserved(detail: String) -> Rejection {
    Rejection::new(Reason::ReservedEncoding, detail)
}

/// DWORD_ATOMIC Op(ub): bits 4..0 the operation, bit 5 `.16`.
pub fn encode_op(op: Op, w16: bool) -> u8 {
    op.code() | (u8::from(w16) << 5)
}

/// Inverse of [`encode_op`]: codes outside the op table (and FADD 0x13 / FSUB 0x14, A29), and
/// bits 7..6, are reserved.
pub fn decode_op(byte: u8) -> Result<(Op, bool), Rejection> {
    if byte & 0xc0 != 0 {
        return Err(reserved(format!("Op {byte:#04x} sets bits 7..6")));
    }
    let op = Op::from_code(byte & 0x1f)
        .ok_or_else(|| reserved(format!("Op code {:#07b} is not defined", byte & 0x1f)))?;
    Ok((op, byte & 0x20 != 0))
}

/// The Exec_size bits 2..0 of a channel count.
fn size_code(size: u32) -> Option<u8> {
    Some(match size {
        1 => 0b000,
        2 => 0b001,
        4 => 0b010,
        8 => 0b011,
        16 => 0b100,
        32 => 0b101,
        _ => return None,
    })
}

/// Exec_size(ub): bits 2..0 the size (0b000 = 1 .. 0b101 = 32), bits 7..4 the mask control
/// (M1..M8 = 0..7, M1_NM..M8_NM = 8..15). `None` for a size with no code.
pub fn encode_exec_size(e: &ExecSize) -> Option<u8> {
    let mask = (e.mask.n.saturating_sub(1) & 0x7) | if e.mask.no_mask { 0x8 } else { 0 };
    size_code(e.size).map(|s| s | (mask << 4))
}

/// Inverse of [`encode_exec_size`]. The byte always carries a mask control, so the result has
/// `mask_written`. Size codes 0b110, 0b111 and bit 3 are reserved.
pub fn decode_exec_size(byte: u8) -> Result<ExecSize, Rejection> {
    if byte & 0x08 != 0 {
        return Err(reserved(format!("Exec_size {byte:#04x} sets bit 3")));
    }
    let size = match byte & 0x7 {
        0b000 => 1,
        0b001 => 2,
        0b010 => 4,
        0b011 => 8,
        0b100 => 16,
        0b101 => 32,
        c => return Err(reserved(format!("Exec_size code {c:#05b} is not defined"))),
    };
    let m = byte >> 4;
    Ok(ExecSize {
        size,
        mask: MaskCtrl {
            n: (m & 0x7) + 1,
            no_mask: m & 0x8 != 0,
        },
        mask_written: true,
    })
}

/// Surface(ub): 0 = T0 (SLM), 5 = T255 (stateless).
pub fn encode_surface(s: Surface) -> u8 {
    match s {
        Surface::T0 => 0,
        Surface::T255 => 5,
    }
}

/// Inverse of [`encode_surface`]; other indices are not valid surfaces.
pub fn decode_surface(byte: u8) -> Result<Surface, Rejection> {
    match byte {
        0 => Ok(Surface::T0),
        5 => Ok(Surface::T255),
        b => Err(Rejection::new(
            Reason::InvalidSurface,
            format!("surface index {b}: only 0 (T0) and 5 (T255) are valid"),
        )),
    }
}

/// The three byte fields of a DWORD_ATOMIC instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DwordAtomicBytes {
    /// Op(ub).
    pub op: u8,
    /// Exec_size(ub).
    pub exec_size: u8,
    /// Surface(ub).
    pub surface: u8,
}

/// The operand fields, which have no byte encoding here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DwordAtomicOperands {
    /// Pred.
    pub pred: Option<Predicate>,
    /// Element_offset.
    pub element_offset: Var,
    /// Src0.
    pub src0: Var,
    /// Src1.
    pub src1: Var,
    /// Dst.
    pub dst: Var,
}

/// Encodes a parsed DWORD_ATOMIC's byte fields. `None` where its exec size has no code.
pub fn encode(d: &DwordAtomic) -> Option<DwordAtomicBytes> {
    Some(DwordAtomicBytes {
        op: encode_op(d.op, d.w16),
        exec_size: encode_exec_size(&d.exec)?,
        surface: encode_surface(d.surface),
    })
}

/// Decodes byte fields and operands into a DWORD_ATOMIC, with the same operand rules as the
/// text form.
pub fn decode(b: DwordAtomicBytes, o: DwordAtomicOperands) -> Result<DwordAtomic, Rejection> {
    let (op, w16) = decode_op(b.op)?;
    let d = DwordAtomic {
        pred: o.pred,
        op,
        w16,
        exec: decode_exec_size(b.exec_size)?,
        surface: decode_surface(b.surface)?,
        element_offset: o.element_offset,
        src0: o.src0,
        src1: o.src1,
        dst: o.dst,
    };
    check_operands(&d)?;
    Ok(d)
}

/// SVM_SCATTER4_SCALED Exec_size(ub): as DWORD_ATOMIC's, sizes 8 and 16 only.
pub fn encode_scatter4_exec_size(e: &ExecSize) -> Option<u8> {
    if scatter4::EXEC_SIZES.contains(&e.size) {
        encode_exec_size(e)
    } else {
        None
    }
}

/// Inverse of [`encode_scatter4_exec_size`]: a defined size other than 8 or 16 is
/// [`Reason::InvalidExecSize`].
pub fn decode_scatter4_exec_size(byte: u8) -> Result<ExecSize, Rejection> {
    let e = decode_exec_size(byte)?;
    if scatter4::EXEC_SIZES.contains(&e.size) {
        Ok(e)
    } else {
        Err(Rejection::new(
            Reason::InvalidExecSize,
            format!("SVM_SCATTER4_SCALED exec size {} (only 8 and 16)", e.size),
        ))
    }
}

/// SVM_SCATTER4_SCALED Channels(ub): bits 3..0 = R, G, B, A.
pub fn encode_channels(c: Channels) -> u8 {
    c.bits()
}

/// Inverse of [`encode_channels`]: `0000` is [`Reason::EmptyChannelMask`], bits 7..4 reserved.
pub fn decode_channels(byte: u8) -> Result<Channels, Rejection> {
    Channels::new(byte)
}

/// Byte fields a corpus case states beside its text form (FORMAT.md, `encoding`). A field not
/// stated is taken from the text's own encoding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stated {
    /// DWORD_ATOMIC Op(ub).
    pub op: Option<u8>,
    /// Exec_size(ub) of either instruction.
    pub exec_size: Option<u8>,
    /// DWORD_ATOMIC Surface(ub).
    pub surface: Option<u8>,
    /// SVM_SCATTER4_SCALED Channels(ub).
    pub channels: Option<u8>,
}

/// What stated bytes say about a text form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// The bytes (with the text's operands) decode to the text's instruction, and the text
    /// encodes to the bytes.
    Agrees,
    /// The decoder rejects the bytes (reserved or invalid field values).
    Rejected(Rejection),
    /// They disagree; one line per difference.
    Differs(Vec<String>),
}

/// Checks stated byte fields against a text form both ways: decoding the bytes with the text's
/// operands must give the text's instruction, and encoding the text must give the bytes. `Err`
/// when the text itself is rejected (it then states no instruction to compare with).
pub fn agree(text: &str, stated: &Stated) -> Result<Agreement, Rejection> {
    let norm = |mut e: ExecSize| {
        e.mask_written = true;
        e
    };
    let mut differs = Vec::new();
    let mut field = |name: &str, stated: Option<u8>, encoded: Option<u8>| {
        if let Some(b) = stated
            && encoded != Some(b)
        {
            differs.push(match encoded {
                Some(e) => {
                    format!("{name}: the text encodes to {e:#04x}, the case states {b:#04x}")
                }
                None => format!("{name}: the text has no encoding, the case states {b:#04x}"),
            });
        }
    };
    match super::parse(text)? {
        super::Instruction::DwordAtomic(d) => {
            if let Some(c) = stated.channels {
                return Ok(Agreement::Differs(vec![format!(
                    "Channels ({c:#04x}) is a field of SVM_SCATTER4_SCALED, not DWORD_ATOMIC"
                )]));
            }
            let encoded = encode(&d);
            let bytes = DwordAtomicBytes {
                op: stated.op.unwrap_or(encode_op(d.op, d.w16)),
                exec_size: match (stated.exec_size, &encoded) {
                    (Some(b), _) => b,
                    (None, Some(e)) => e.exec_size,
                    (None, None) => {
                        return Ok(Agreement::Differs(vec![format!(
                            "exec size {} has no Exec_size code",
                            d.exec.size
                        )]));
                    }
                },
                surface: stated.surface.unwrap_or(encode_surface(d.surface)),
            };
            let operands = DwordAtomicOperands {
                pred: d.pred,
                element_offset: d.element_offset,
                src0: d.src0,
                src1: d.src1,
                dst: d.dst,
            };
            let decoded = match decode(bytes, operands) {
                Ok(x) => x,
                Err(r) => return Ok(Agreement::Rejected(r)),
            };
            field("Op", stated.op, encoded.map(|e| e.op));
            field("Exec_size", stated.exec_size, encoded.map(|e| e.exec_size));
            field("Surface", stated.surface, encoded.map(|e| e.surface));
            let text_form = DwordAtomic {
                exec: norm(d.exec),
                ..d
            };
            if decoded != text_form {
                differs.push(format!(
                    "the bytes decode to `{decoded}`, the text is `{d}`"
                ));
            }
        }
        super::Instruction::Scatter4(s) => {
            if stated.op.is_some() || stated.surface.is_some() {
                return Ok(Agreement::Differs(vec![
                    "Op and Surface are fields of DWORD_ATOMIC, not SVM_SCATTER4_SCALED".into(),
                ]));
            }
            let exec = match stated
                .exec_size
                .map(decode_scatter4_exec_size)
                .unwrap_or(Ok(s.exec))
            {
                Ok(e) => e,
                Err(r) => return Ok(Agreement::Rejected(r)),
            };
            if let Some(Err(r)) = stated.channels.map(decode_channels) {
                return Ok(Agreement::Rejected(r));
            }
            field(
                "Exec_size",
                stated.exec_size,
                encode_scatter4_exec_size(&s.exec),
            );
            field(
                "Channels",
                stated.channels,
                Some(encode_channels(s.channels)),
            );
            // Bytes have no channel order: the text's order (N5) is not compared. A Channels
            // byte that decodes to other channels than the text's is the field difference
            // just above (decoding and encoding are inverse on the four channel bits).
            let decoded = scatter4::Scatter4 {
                exec: norm(exec),
                written_order: None,
                ..s.clone()
            };
            let text_form = scatter4::Scatter4 {
                exec: norm(s.exec),
                written_order: None,
                ..s.clone()
            };
            if decoded != text_form {
                differs.push(format!(
                    "the bytes decode to `{decoded}`, the text is `{s}`"
                ));
            }
        }
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
    use crate::visa::dword_atomic::EXEC_SIZES;

    fn operands_for(op: Op) -> DwordAtomicOperands {
        let src0 = if matches!(op, Op::Inc | Op::Dec | Op::Predec) {
            Var::NULL
        } else {
            Var(2)
        };
        let src1 = if matches!(op, Op::Cmpxchg | Op::Fcmpwr) {
            Var(3)
        } else {
            Var::NULL
        };
        DwordAtomicOperands {
            pred: Some(Predicate {
                var: 1,
                negated: true,
            }),
            element_offset: Var(1),
            src0,
            src1,
            dst: Var(4),
        }
    }

    #[test]
    fn op_codes_match_the_table() {
        // Table DWORD_ATOMIC_OP plus FADD 0x13 / FSUB 0x14 (A29).
        let expect: &[(Op, u8)] = &[
            (Op::Add, 0b00000),
            (Op::Sub, 0b00001),
            (Op::Inc, 0b00010),
            (Op::Dec, 0b00011),
            (Op::Min, 0b00100),
            (Op::Max, 0b00101),
            (Op::Xchg, 0b00110),
            (Op::Cmpxchg, 0b00111),
            (Op::And, 0b01000),
            (Op::Or, 0b01001),
            (Op::Xor, 0b01010),
            (Op::Imin, 0b01011),
            (Op::Imax, 0b01100),
            (Op::Predec, 0b01101),
            (Op::Fmax, 0b10000),
            (Op::Fmin, 0b10001),
            (Op::Fcmpwr, 0b10010),
            (Op::Fadd, 0x13),
            (Op::Fsub, 0x14),
        ];
        assert_eq!(expect.len(), Op::ALL.len());
        for &(op, code) in expect {
            assert_eq!(encode_op(op, false), code, "{op}");
            assert_eq!(encode_op(op, true), code | 0x20, "{op}.16");
            assert_eq!(decode_op(code).unwrap(), (op, false));
            assert_eq!(decode_op(code | 0x20).unwrap(), (op, true));
        }
        for code in [0x0e, 0x0f, 0x15, 0x16, 0x1f, 0x2e, 0x40, 0x80] {
            assert_eq!(
                decode_op(code).unwrap_err().reason,
                Reason::ReservedEncoding,
                "{code:#x}"
            );
        }
    }

    #[test]
    fn exec_size_bytes_match_the_table() {
        let e = |size, n, no_mask| ExecSize {
            size,
            mask: MaskCtrl { n, no_mask },
            mask_written: true,
        };
        assert_eq!(encode_exec_size(&e(1, 1, false)), Some(0x00));
        assert_eq!(encode_exec_size(&e(8, 1, false)), Some(0x03));
        assert_eq!(encode_exec_size(&e(16, 5, true)), Some(0xc4));
        assert_eq!(encode_exec_size(&e(32, 8, true)), Some(0xf5));
        assert_eq!(encode_exec_size(&e(4, 2, false)), Some(0x12));
        assert_eq!(encode_exec_size(&e(3, 1, false)), None);
        assert_eq!(decode_exec_size(0x74).unwrap(), e(16, 8, false));
        assert_eq!(decode_exec_size(0x81).unwrap(), e(2, 1, true));
        for b in [0x06, 0x07, 0x08, 0x0b] {
            assert_eq!(
                decode_exec_size(b).unwrap_err().reason,
                Reason::ReservedEncoding
            );
        }
        assert_eq!(decode_scatter4_exec_size(0x13).unwrap(), e(8, 2, false));
        assert_eq!(
            decode_scatter4_exec_size(0x02).unwrap_err().reason,
            Reason::InvalidExecSize
        );
        assert_eq!(
            decode_scatter4_exec_size(0x05).unwrap_err().reason,
            Reason::InvalidExecSize
        );
        assert_eq!(encode_scatter4_exec_size(&e(4, 1, false)), None);
        assert_eq!(encode_scatter4_exec_size(&e(16, 1, true)), Some(0x84));
    }

    #[test]
    fn surfaces_and_channels() {
        assert_eq!(encode_surface(Surface::T0), 0);
        assert_eq!(encode_surface(Surface::T255), 5);
        assert_eq!(decode_surface(0).unwrap(), Surface::T0);
        assert_eq!(decode_surface(5).unwrap(), Surface::T255);
        for b in [1, 4, 6, 255] {
            assert_eq!(
                decode_surface(b).unwrap_err().reason,
                Reason::InvalidSurface
            );
        }
        for bits in 1..16u8 {
            let c = decode_channels(bits).unwrap();
            assert_eq!(encode_channels(c), bits);
        }
        assert_eq!(decode_channels(0b1010).unwrap().to_string(), "GA");
        assert_eq!(
            decode_channels(0).unwrap_err().reason,
            Reason::EmptyChannelMask
        );
        assert_eq!(
            decode_channels(0x10).unwrap_err().reason,
            Reason::ReservedEncoding
        );
    }

    #[test]
    fn decode_encode_round_trips_every_op_size_and_mask() {
        let mut n = 0;
        for &op in Op::ALL {
            for w16 in [false, true] {
                for &size in EXEC_SIZES {
                    for mask in MaskCtrl::all() {
                        for surface in [Surface::T0, Surface::T255] {
                            let o = operands_for(op);
                            let d = DwordAtomic {
                                pred: o.pred,
                                op,
                                w16,
                                exec: ExecSize {
                                    size,
                                    mask,
                                    mask_written: true,
                                },
                                surface,
                                element_offset: o.element_offset,
                                src0: o.src0,
                                src1: o.src1,
                                dst: o.dst,
                            };
                            let b = encode(&d).unwrap();
                            assert_eq!(decode(b, o).unwrap(), d);
                            n += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(n, 19 * 2 * 6 * 16 * 2);
        // And the bytes themselves round-trip through decode.
        let mut m = 0;
        for op in 0..=0x3fu8 {
            let Ok((o, _)) = decode_op(op) else { continue };
            for exec in 0..=0xffu8 {
                let Ok(e) = decode_exec_size(exec) else {
                    continue;
                };
                let d = decode(
                    DwordAtomicBytes {
                        op,
                        exec_size: exec,
                        surface: 5,
                    },
                    operands_for(o),
                )
                .unwrap();
                assert_eq!(d.exec, e);
                let b = encode(&d).unwrap();
                assert_eq!((b.op, b.exec_size, b.surface), (op, exec, 5));
                m += 1;
            }
        }
        assert_eq!(m, 19 * 2 * 6 * 16);
    }

    #[test]
    fn decode_applies_the_operand_rules() {
        let b = DwordAtomicBytes {
            op: 0x02, // inc
            exec_size: 0x03,
            surface: 0,
        };
        let mut o = operands_for(Op::Inc);
        o.src0 = Var(7);
        assert_eq!(decode(b, o).unwrap_err().reason, Reason::OperandMustBeV0);
    }
}
