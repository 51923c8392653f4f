//! vISA SVM_SCATTER4_SCALED (opcode 0x4e, sub-opcode 0x07): `[(<P>)]
//! SVM_SCATTER4_SCALED.<channels> (<exec_size>) <address> <element_offset> <src>`. Parse and
//! print, then the lowering to one 4-byte store per enabled channel and lane, in the
//! pseudo-code's loop order (channel-major).

use super::{
    Bind, ExecSize, Line, Predicate, Var, channel_enables, lowering, need_elems, need_type,
    operands, var,
};
use crate::error::{Reason, Rejection};
use crate::ir::{
    Access, AtomicOp, Dest, Env, Instr, Lowered, Lowering, MemInstr, Misaligned, OutOfRange,
    SameAddress,
};
use crate::knobs::{
    ChannelOrder, GrfSize, Profile, ScatterSameAddress, SvmUnallocated, VisaMisaligned,
};
use crate::state::State;
use crate::types::{DataType, ElemType, Space};
use std::fmt;

/// vISA SVM_SCATTER4_SCALED, "Text": the mnemonic.
pub const MNEMONIC: &str = "SVM_SCATTER4_SCALED";

/// vISA SVM_SCATTER4_SCALED, field Exec_size: the sizes of its table.
pub const EXEC_SIZES: &[u32] = &[8, 16];

/// The channel letters in mask-bit order: R is bit 0, A bit 3.
const RGBA: [char; 4] = ['R', 'G', 'B', 'A'];

/// vISA SVM_SCATTER4_SCALED, field Channels(ub) bits 3..0: the RGBA write mask, R in bit 0;
/// never empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Channels(u8);

impl Channels {
    /// The mask of `bits` 3..0; `0000` (and bits above 3) are rejected.
    pub fn new(bits: u8) -> Result<Channels, Rejection> {
        if bits & !0xf != 0 {
            return Err(Rejection::new(
                Reason::ReservedEncoding,
                format!("channel mask {bits:#04x} sets bits above bit 3"),
            ));
        }
        if bits == 0 {
            return Err(Rejection::new(
                Reason::EmptyChannelMask,
                "no channel enabled: the channel mask 0000 is illegal",
            ));
        }
        Ok(Channels(bits))
    }

    /// The mask bits.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether channel `c` (0 = R .. 3 = A) is enabled.
    pub fn enabled(self, c: u32) -> bool {
        c < 4 && (self.0 >> c) & 1 == 1
    }

    /// The number of enabled channels.
    pub fn count(self) -> u32 {
        self.0.count_ones()
    }

    /// Parses the `<channels>` suffix: enabled channels, each once (Channels(ub) has one bit
    /// per channel). Also gives the letters as written when they are not in RGBA order: whether
    /// that is legal is knob `visa.channel_order` (N5), decided when lowering.
    pub(crate) fn parse(col: usize, s: &str) -> Result<(Channels, Option<String>), Rejection> {
        let mut bits = 0u8;
        let mut in_order = true;
        for ch in s.chars() {
            let up = ch.to_ascii_uppercase();
            let pos = RGBA.iter().position(|&c| c == up).ok_or_else(|| {
                Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("`{ch}` is not a channel R, G, B or A"),
                )
            })?;
            if bits & (1 << pos) != 0 {
                return Err(Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("channels `{s}` name {up} twice"),
                ));
            }
            in_order &= bits >> pos == 0;
            bits |= 1 << pos;
        }
        let c = Channels::new(bits).map_err(|r| Rejection {
            column: Some(col),
            ..r
        })?;
        Ok((c, (!in_order).then(|| s.to_ascii_uppercase())))
    }
}

impl fmt::Display for Channels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (c, letter) in RGBA.iter().enumerate() {
            if self.enabled(c as u32) {
                write!(f, "{letter}")?;
            }
        }
        Ok(())
    }
}

/// vISA SVM_SCATTER4_SCALED, "Format": a parsed instruction. Scale has no text form: the field
/// is ignored and its value is always zero.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scatter4 {
    /// Pred: predication, if any.
    pub pred: Option<Predicate>,
    /// Channels: the RGBA write mask.
    pub channels: Channels,
    /// The channel letters as the text wrote them, where that is not RGBA order (`.GR`; knob
    /// `visa.channel_order`, N5); `None` in RGBA order and for decoded bytes, which have no
    /// order.
    pub written_order: Option<String>,
    /// Exec_size: 8 or 16 channels and the execution-mask control.
    pub exec: ExecSize,
    /// Address: the global byte offset (a UQ scalar).
    pub address: Var,
    /// Element_offset: per-lane byte offsets (UQ).
    pub element_offset: Var,
    /// Src: the values written (UD, D or F).
    pub src: Var,
}

impl fmt::Display for Scatter4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.pred {
            write!(f, "{p} ")?;
        }
        match &self.written_order {
            Some(w) => write!(f, "{MNEMONIC}.{w}")?,
            None => write!(f, "{MNEMONIC}.{}", self.channels)?,
        }
        write!(
            f,
            " {} {} {} {}",
            self.exec, self.address, self.element_offset, self.src
        )
    }
}

/// vISA SVM_SCATTER4_SCALED, "Text": parses one line.
pub fn parse(text: &str) -> Result<Scatter4, Rejection> {
    parse_line(&Line::split(text)?)
}

pub(crate) fn parse_line(line: &Line<'_>) -> Result<Scatter4, Rejection> {
    let pred = line.pred.map(Predicate::parse).transpose()?;
    let (col, mnemonic) = line.mnemonic;
    let suffix = if mnemonic == MNEMONIC {
        return Err(Rejection::at(
            Reason::Syntax,
            col,
            "SVM_SCATTER4_SCALED needs its channels: SVM_SCATTER4_SCALED.<channels>",
        ));
    } else if let Some(suffix) = mnemonic
        .strip_prefix(MNEMONIC)
        .and_then(|r| r.strip_prefix('.'))
    {
        suffix
    } else {
        return Err(Rejection::at(
            Reason::UnknownOperation,
            col,
            format!("`{mnemonic}` is not SVM_SCATTER4_SCALED"),
        ));
    };
    let (channels, written_order) = Channels::parse(col + MNEMONIC.len() + 1, suffix)?;
    let exec = ExecSize::parse(line.exec, EXEC_SIZES)?;
    let ops = operands(line, 3)?;
    let [address, offset, src] = ops.as_slice() else {
        return Err(Rejection::new(
            Reason::Syntax,
            "SVM_SCATTER4_SCALED takes 3 operands",
        ));
    };
    let s = Scatter4 {
        pred,
        channels,
        written_order,
        exec,
        address: Var::parse(*address)?,
        element_offset: Var::parse(*offset)?,
        src: Var::parse(*src)?,
    };
    check_operands(&s)?;
    Ok(s)
}

/// vISA SVM_SCATTER4_SCALED, fields Address, Element_offset and Src: the operand rule that
/// needs no state: none of them is V0.
pub(crate) fn check_operands(s: &Scatter4) -> Result<(), Rejection> {
    for (v, role) in [
        (s.address, "Address"),
        (s.element_offset, "Element_offset"),
        (s.src, "Src"),
    ] {
        if v.is_null() {
            return Err(Rejection::new(
                Reason::OperandRequired,
                format!("{role} cannot be V0"),
            ));
        }
    }
    Ok(())
}

/// vISA SVM_SCATTER4_SCALED, "Semantics": the source stride between enabled channels,
/// `max(exec_size, GRF_SIZE / 4)` dwords, with the GRF size in bytes from knob `visa.grf_size`
/// (A28).
pub fn channel_stride(exec_size: u32, grf: GrfSize) -> u32 {
    let grf_bytes = match grf {
        GrfSize::B32 => 32,
        GrfSize::B64 => 64,
    };
    exec_size.max(grf_bytes / 4)
}

/// vISA SVM_SCATTER4_SCALED, "Semantics": lowers against a state. For each enabled channel `c`
/// in RGBA order and each lane `i` with `ChEn[i]`, a 4-byte store of `src[ch_pos * stride + i]`
/// at `address + element_offset[i] + 4c`, where `ch_pos` counts enabled channels only (A28).
pub fn lower(s: &Scatter4, state: &State, p: &Profile) -> Lowering {
    lowering(bind(s, state, p))
}

fn bind(s: &Scatter4, state: &State, p: &Profile) -> Bind<Lowered> {
    if let Some(w) = &s.written_order
        && p.visa_channel_order == ChannelOrder::Rgba
    {
        return Err(Rejection::new(
            Reason::Syntax,
            format!("channels `{w}` are not in RGBA order (knob visa.channel_order = rgba, N5)"),
        ));
    }
    let n = s.exec.size;
    let stride = channel_stride(n, p.visa_grf_size);

    let address = var(state, s.address, "Address")?;
    need_type(address, s.address, "Address", &[ElemType::UQ])?;
    need_elems(address, s.address, "Address", 1)?;
    let base = address.elems.first().copied().unwrap_or(0);

    let offsets = var(state, s.element_offset, "Element_offset")?;
    need_type(offsets, s.element_offset, "Element_offset", &[ElemType::UQ])?;
    need_elems(offsets, s.element_offset, "Element_offset", n as usize)?;

    let src = var(state, s.src, "Src")?;
    need_type(src, s.src, "Src", &[ElemType::UD, ElemType::D, ElemType::F])?;
    let src_len = (s.channels.count().saturating_sub(1)) * stride + n;
    need_elems(src, s.src, "Src", src_len as usize)?;

    let ch_en = channel_enables(&s.exec, s.pred.as_ref(), state, p)?;

    let mut accesses = Vec::new();
    let mut ch_pos = 0u32;
    for c in 0..4u32 {
        if !s.channels.enabled(c) {
            continue;
        }
        let ch_start = ch_pos * stride;
        for (i, on) in ch_en.iter().enumerate() {
            if !on {
                continue;
            }
            let off = offsets.elems.get(i).copied().unwrap_or(0);
            let value = src.elems.get((ch_start as usize) + i).copied().unwrap_or(0) & 0xffff_ffff;
            accesses.push(Access {
                lane: i as u32,
                addr: base.wrapping_add(off).wrapping_add(4 * u64::from(c)),
                src: [value, 0],
                dst: Dest::None,
                fault: None,
            });
        }
        ch_pos += 1;
    }
    Ok(Lowered {
        instr: Instr::Mem(MemInstr {
            op: AtomicOp::Store,
            ty: DataType::U32,
            space: Space::Global,
            env: Env::default(),
            // Description: addresses are to be dword-aligned; no consequence is stated (A15).
            misaligned: match p.visa_misaligned {
                VisaMisaligned::Undefined => Misaligned::Unspecified,
                VisaMisaligned::MaskLowBits => Misaligned::MaskLowBits,
                VisaMisaligned::Fault => Misaligned::Fault,
            },
            out_of_range: match p.visa_svm_unallocated {
                SvmUnallocated::Undefined => OutOfRange::Unspecified,
                SvmUnallocated::DropWrite => OutOfRange::ReadZeroDropWrite,
                SvmUnallocated::Fault => OutOfRange::Fault,
            },
            same_address: match p.visa_scatter_same_address {
                ScatterSameAddress::AnyOrder => SameAddress::AnyOrder,
                ScatterSameAddress::ProgramOrder => SameAddress::ProgramOrder,
            },
            accesses,
        }),
        writes: Vec::new(),
        declare: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;
    use crate::program::{Dialect, run};
    use crate::visa::MaskCtrl;
    use crate::visa::test_util::*;

    const BASE: u64 = 0x1_0000;

    /// V1: UQ address BASE; V2: UQ offsets 0x10*i (16 lanes); V3: UD src 0x1000+k (64 elems).
    fn state() -> State {
        let mut s = State::default();
        with_var(&mut s, "V1", ElemType::UQ, &[BASE]);
        with_var(
            &mut s,
            "V2",
            ElemType::UQ,
            &(0..16).map(|i| 0x10 * i).collect::<Vec<_>>(),
        );
        with_var(
            &mut s,
            "V3",
            ElemType::UD,
            &(0..64).map(|k| 0x1000 + k).collect::<Vec<_>>(),
        );
        s.global.alloc(BASE, 0x100).unwrap();
        s
    }

    fn with(knob: &str, option: &str) -> Profile {
        let mut p = Profile::default();
        p.set(knob, option).unwrap();
        p
    }

    fn lowered(text: &str, s: &State, p: &Profile) -> Result<MemInstr, Rejection> {
        let i = parse(text)?;
        match lower(&i, s, p) {
            Lowering::Run(l) => match l.instr {
                Instr::Mem(m) => Ok(m),
                Instr::Shuffle(_) => panic!("not a memory instruction"),
            },
            Lowering::Invalid(r) => Err(r),
            Lowering::Unspecified(u) => panic!("unspecified: {u}"),
        }
    }

    #[test]
    fn text_form_round_trips() {
        let t = "SVM_SCATTER4_SCALED.RGA (M1, 16) V20 V21 V22";
        let s = parse(t).unwrap();
        assert_eq!(s.channels.bits(), 0b1011);
        assert_eq!(s.exec.size, 16);
        assert_eq!(
            (s.address, s.element_offset, s.src),
            (Var(20), Var(21), Var(22))
        );
        assert_eq!(s.to_string(), t);
        assert_eq!(
            parse("(!P2)  SVM_SCATTER4_SCALED.rgba (8) V1 V2 V3")
                .unwrap()
                .to_string(),
            "(!P2) SVM_SCATTER4_SCALED.RGBA (8) V1 V2 V3"
        );
        let mut n = 0;
        for bits in 1..16u8 {
            for &size in EXEC_SIZES {
                for mask in MaskCtrl::all() {
                    for pred in [
                        None,
                        Some(Predicate {
                            var: 4,
                            negated: true,
                        }),
                    ] {
                        let s = Scatter4 {
                            pred,
                            channels: Channels::new(bits).unwrap(),
                            written_order: None,
                            exec: ExecSize {
                                size,
                                mask,
                                mask_written: true,
                            },
                            address: Var(1),
                            element_offset: Var(2),
                            src: Var(3),
                        };
                        assert_eq!(parse(&s.to_string()).unwrap(), s, "{s}");
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, 15 * 2 * 16 * 2);
    }

    /// N5: letters out of RGBA order parse (and print as written); `rgba` rejects them when
    /// lowering, `any_order` lowers them as the same set in RGBA order.
    #[test]
    fn channel_order_is_a_knob() {
        let s = parse("SVM_SCATTER4_SCALED.ar (8) V1 V2 V3").unwrap();
        assert_eq!(s.channels.bits(), 0b1001);
        assert_eq!(s.written_order.as_deref(), Some("AR"));
        assert_eq!(s.to_string(), "SVM_SCATTER4_SCALED.AR (8) V1 V2 V3");
        assert_eq!(parse(&s.to_string()).unwrap(), s);
        assert_eq!(
            parse("SVM_SCATTER4_SCALED.RA (8) V1 V2 V3")
                .unwrap()
                .written_order,
            None
        );
        let st = state();
        let p = Profile::default();
        let e = lowered("SVM_SCATTER4_SCALED.AR (8) V1 V2 V3", &st, &p).unwrap_err();
        assert_eq!(e.reason, Reason::Syntax);
        let any = with("visa.channel_order", "any_order");
        assert_eq!(
            lowered("SVM_SCATTER4_SCALED.AR (8) V1 V2 V3", &st, &any).unwrap(),
            lowered("SVM_SCATTER4_SCALED.RA (8) V1 V2 V3", &st, &p).unwrap()
        );
    }

    #[test]
    fn parse_rejections() {
        let r = |t: &str| parse(t).unwrap_err().reason;
        assert_eq!(
            r("SVM_SCATTER4_SCALED. (8) V1 V2 V3"),
            Reason::EmptyChannelMask
        );
        for t in [
            "SVM_SCATTER4_SCALED (8) V1 V2 V3",
            "SVM_SCATTER4_SCALED.RR (8) V1 V2 V3",
            "SVM_SCATTER4_SCALED.GRG (8) V1 V2 V3",
            "SVM_SCATTER4_SCALED.RGX (8) V1 V2 V3",
            "SVM_SCATTER4_SCALED.R.16 (8) V1 V2 V3",
            "SVM_SCATTER4_SCALED.R (8) V1 V2",
            "SVM_SCATTER4_SCALED.R (8) V1 V2 V3 V4",
            "SVM_SCATTER4_SCALED.R (8) V1 V2 T3",
        ] {
            assert_eq!(r(t), Reason::Syntax, "{t}");
        }
        assert_eq!(
            r("SVM_SCATTER4_SCALEDX.R (8) V1 V2 V3"),
            Reason::UnknownOperation
        );
        for e in ["(1)", "(4)", "(32)", "(M1, 2)"] {
            assert_eq!(
                r(&format!("SVM_SCATTER4_SCALED.R {e} V1 V2 V3")),
                Reason::InvalidExecSize,
                "{e}"
            );
        }
        assert_eq!(
            r("SVM_SCATTER4_SCALED.R (M9_NM, 8) V1 V2 V3"),
            Reason::InvalidMask
        );
        for t in [
            "SVM_SCATTER4_SCALED.R (8) V0 V2 V3",
            "SVM_SCATTER4_SCALED.R (8) V1 V0 V3",
            "SVM_SCATTER4_SCALED.R (8) V1 V2 V0",
        ] {
            assert_eq!(r(t), Reason::OperandRequired, "{t}");
        }
    }

    #[test]
    fn operand_binding_rejections() {
        let p = Profile::default();
        let t = "SVM_SCATTER4_SCALED.RGBA (16) V1 V2 V3";
        let reason = |s: &State, p: &Profile| lowered(t, s, p).unwrap_err().reason;
        assert!(lowered(t, &state(), &p).is_ok());
        for name in ["V1", "V2", "V3"] {
            let mut s = state();
            s.regs.remove(name);
            assert_eq!(reason(&s, &p), Reason::UnknownOperand, "{name}");
        }
        // Address and Element_offset are UQ; Src is UD, D or F.
        let mut s = state();
        with_var(&mut s, "V1", ElemType::UD, &[BASE]);
        assert_eq!(reason(&s, &p), Reason::OperandType);
        let mut s = state();
        with_var(&mut s, "V2", ElemType::UD, &[0; 16]);
        assert_eq!(reason(&s, &p), Reason::OperandType);
        for ty in [ElemType::UQ, ElemType::UW, ElemType::HF] {
            let mut s = state();
            with_var(&mut s, "V3", ty, &[0; 64]);
            assert_eq!(reason(&s, &p), Reason::OperandType);
        }
        for ty in [ElemType::D, ElemType::F] {
            let mut s = state();
            with_var(&mut s, "V3", ty, &[0; 64]);
            assert!(lowered(t, &s, &p).is_ok());
        }
        // Sizes.
        let mut s = state();
        with_var(&mut s, "V1", ElemType::UQ, &[]);
        assert_eq!(reason(&s, &p), Reason::OperandSize);
        let mut s = state();
        with_var(&mut s, "V2", ElemType::UQ, &[0; 15]);
        assert_eq!(reason(&s, &p), Reason::OperandSize);
        // RGBA at exec 16: 3 * 16 + 16 = 64 source elements.
        let mut s = state();
        with_var(&mut s, "V3", ElemType::UD, &[0; 63]);
        assert_eq!(reason(&s, &p), Reason::OperandSize);
        // M8 with 8 channels runs past the execution mask.
        assert_eq!(
            lowered("SVM_SCATTER4_SCALED.R (M8, 8) V1 V2 V3", &state(), &p)
                .unwrap_err()
                .reason,
            Reason::InvalidMask
        );
    }

    #[test]
    fn source_size_depends_on_the_grf_size() {
        // GA at exec 8: stride 8 on a 32-byte GRF needs 1*8 + 8 = 16 elements; stride 16 on a
        // 64-byte GRF needs 1*16 + 8 = 24.
        let t = "SVM_SCATTER4_SCALED.GA (8) V1 V2 V3";
        let g32 = with("visa.grf_size", "32");
        let g64 = with("visa.grf_size", "64");
        for (n, grf, ok) in [
            (16, &g32, true),
            (15, &g32, false),
            (24, &g64, true),
            (23, &g64, false),
        ] {
            let mut s = state();
            with_var(&mut s, "V3", ElemType::UD, &vec![0; n]);
            let r = lowered(t, &s, grf);
            if ok {
                assert!(r.is_ok(), "{n}");
            } else {
                assert_eq!(r.unwrap_err().reason, Reason::OperandSize, "{n}");
            }
        }
        assert_eq!(channel_stride(8, GrfSize::B32), 8);
        assert_eq!(channel_stride(16, GrfSize::B32), 16);
        assert_eq!(channel_stride(8, GrfSize::B64), 16);
        assert_eq!(channel_stride(16, GrfSize::B64), 16);
    }

    #[test]
    fn accesses_follow_the_pseudo_code_for_both_grf_sizes() {
        // (grf, exec, channels, [(c, ch_pos)], stride worked out from max(exec, GRF/4)).
        let ga = [(1u64, 0u64), (3, 1)];
        let rgba = [(0u64, 0u64), (1, 1), (2, 2), (3, 3)];
        type Row<'a> = (&'a str, u64, &'a str, &'a [(u64, u64)], u64);
        let rows: [Row; 8] = [
            ("32", 8, "GA", &ga, 8),
            ("64", 8, "GA", &ga, 16),
            ("32", 16, "GA", &ga, 16),
            ("64", 16, "GA", &ga, 16),
            ("32", 8, "RGBA", &rgba, 8),
            ("64", 8, "RGBA", &rgba, 16),
            ("32", 16, "RGBA", &rgba, 16),
            ("64", 16, "RGBA", &rgba, 16),
        ];
        for (grf, exec, ch, chans, stride) in rows {
            let t = format!("SVM_SCATTER4_SCALED.{ch} ({exec}) V1 V2 V3");
            let m = lowered(&t, &state(), &with("visa.grf_size", grf)).unwrap();
            let mut want = Vec::new();
            for &(c, pos) in chans {
                for i in 0..exec {
                    // address + element_offset[i] + 4c  <-  src[ch_pos * stride + i]
                    want.push((i as u32, BASE + 0x10 * i + 4 * c, 0x1000 + pos * stride + i));
                }
            }
            let got: Vec<(u32, u64, u64)> = m
                .accesses
                .iter()
                .map(|a| (a.lane, a.addr, a.src[0]))
                .collect();
            assert_eq!(got, want, "{t} grf {grf}");
            assert!(m.accesses.iter().all(|a| a.dst == Dest::None));
            assert_eq!(
                (m.op, m.ty, m.space),
                (AtomicOp::Store, DataType::U32, Space::Global)
            );
        }
        // Spot checks by hand: GA exec 8 on a 64-byte GRF, lane 3 of A stores src[19] at
        // BASE + 0x30 + 12; on a 32-byte GRF, src[11].
        let m = lowered(
            "SVM_SCATTER4_SCALED.GA (8) V1 V2 V3",
            &state(),
            &with("visa.grf_size", "64"),
        )
        .unwrap();
        assert_eq!(
            (m.accesses[11].addr, m.accesses[11].src[0]),
            (0x1_003c, 0x1013)
        );
        let m = lowered(
            "SVM_SCATTER4_SCALED.GA (8) V1 V2 V3",
            &state(),
            &with("visa.grf_size", "32"),
        )
        .unwrap();
        assert_eq!(
            (m.accesses[11].addr, m.accesses[11].src[0]),
            (0x1_003c, 0x100b)
        );
    }

    #[test]
    fn enables_apply_to_every_channel() {
        let mut s = state();
        s.emask = 0x0000_00f0;
        with_pred(&mut s, "P1", 0b1010_1010, 8);
        let p = Profile::default();
        // M1 on emask 0xf0: lanes 4..7; with P1 on odd lanes: 5 and 7.
        let m = lowered("(P1) SVM_SCATTER4_SCALED.RB (8) V1 V2 V3", &s, &p).unwrap();
        let got: Vec<(u32, u64, u64)> = m
            .accesses
            .iter()
            .map(|a| (a.lane, a.addr, a.src[0]))
            .collect();
        assert_eq!(
            got,
            vec![
                (5, BASE + 0x50, 0x1005),
                (7, BASE + 0x70, 0x1007),
                (5, BASE + 0x58, 0x100d),
                (7, BASE + 0x78, 0x100f),
            ]
        );
        // M2 with group 4 starts at emask bit 4: lanes 0..3 on; NM: all lanes.
        let m = lowered("SVM_SCATTER4_SCALED.R (M2, 8) V1 V2 V3", &s, &p).unwrap();
        assert_eq!(
            m.accesses.iter().map(|a| a.lane).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        let m = lowered("SVM_SCATTER4_SCALED.R (M1_NM, 8) V1 V2 V3", &s, &p).unwrap();
        assert_eq!(m.accesses.len(), 8);
    }

    #[test]
    fn addresses_wrap_at_64_bits_and_knobs_apply() {
        let mut s = state();
        with_var(&mut s, "V1", ElemType::UQ, &[u64::MAX - 0xf]);
        let p = Profile::default();
        let m = lowered("SVM_SCATTER4_SCALED.G (M1_NM, 8) V1 V2 V3", &s, &p).unwrap();
        // 2^64 - 16 + 0x10*i + 4 wraps to 0x10*(i-1) + 4 from lane 1 on.
        assert_eq!(m.accesses[0].addr, u64::MAX - 0xb);
        assert_eq!(m.accesses[1].addr, 4);
        assert_eq!(m.accesses[2].addr, 0x14);
        assert_eq!(m.out_of_range, OutOfRange::Unspecified);
        assert_eq!(m.same_address, SameAddress::AnyOrder);
        assert_eq!(m.misaligned, Misaligned::Unspecified);
        let m = lowered(
            "SVM_SCATTER4_SCALED.G (8) V1 V2 V3",
            &s,
            &with("visa.svm_unallocated", "drop_write"),
        )
        .unwrap();
        assert_eq!(m.out_of_range, OutOfRange::ReadZeroDropWrite);
        let m = lowered(
            "SVM_SCATTER4_SCALED.G (8) V1 V2 V3",
            &s,
            &with("visa.svm_unallocated", "fault"),
        )
        .unwrap();
        assert_eq!(m.out_of_range, OutOfRange::Fault);
        let m = lowered(
            "SVM_SCATTER4_SCALED.G (8) V1 V2 V3",
            &s,
            &with("visa.scatter_same_address", "program_order"),
        )
        .unwrap();
        assert_eq!(m.same_address, SameAddress::ProgramOrder);
        let m = lowered(
            "SVM_SCATTER4_SCALED.G (8) V1 V2 V3",
            &s,
            &with("visa.misaligned", "fault"),
        )
        .unwrap();
        assert_eq!(m.misaligned, Misaligned::Fault);
    }

    #[test]
    fn run_stores_enabled_channels_and_leaves_holes() {
        let mut s = state();
        for k in 0..0x40 {
            s.global.write(BASE + 4 * k, 4, 0xeeee_eeee);
        }
        let c = match run(
            Dialect::Visa,
            "SVM_SCATTER4_SCALED.GA (8) V1 V2 V3",
            &s,
            &Profile::default(),
        )
        .unwrap()
        .outcome
        {
            Outcome::Completed(c) => c,
            o => panic!("{o:?}"),
        };
        let g = |a: u64| c.state.global.read(a, 4).unwrap();
        for i in 0..8 {
            let lane = BASE + 0x10 * i;
            assert_eq!(g(lane), 0xeeee_eeee, "R hole, lane {i}");
            assert_eq!(g(lane + 4), 0x1000 + i, "G, lane {i}");
            assert_eq!(g(lane + 8), 0xeeee_eeee, "B hole, lane {i}");
            assert_eq!(g(lane + 12), 0x1008 + i, "A, lane {i}");
        }
        assert_eq!(c.state.regs, s.regs);
        // Outside allocated memory: unspecified by default, a fault under the knob.
        let mut far = s.clone();
        with_var(&mut far, "V1", ElemType::UQ, &[0x9000_0000]);
        let o = run(
            Dialect::Visa,
            "SVM_SCATTER4_SCALED.R (8) V1 V2 V3",
            &far,
            &Profile::default(),
        )
        .unwrap()
        .outcome;
        assert!(matches!(o, Outcome::Unspecified(_)), "{o:?}");
        let o = run(
            Dialect::Visa,
            "SVM_SCATTER4_SCALED.R (8) V1 V2 V3",
            &far,
            &with("visa.svm_unallocated", "fault"),
        )
        .unwrap()
        .outcome;
        match o {
            Outcome::Fault(f) => assert_eq!(f.lanes.len(), 8),
            o => panic!("{o:?}"),
        }
    }
}
