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
use crate::knobs::{GrfSize, Profile, ScatterSameAddress, SvmUnallocated, VisaMisaligned};
use crate::state::State;
use crate::types::{DataType, ElemType, Space};
use std::fmt;

/// The mnemonic.
pub const MNEMONIC: &str = "SVM_SCATTER4_SCALED";

/// The exec sizes of SVM_SCATTER4_SCALED's Exec_size table.
pub const EXEC_SIZES: &[u32] = &[8, 16];

/// The channel letters in mask-bit order: R is bit 0, A bit 3.
const RGBA: [char; 4] = ['R', 'G', 'B', 'A'];

/// SVM_SCATTER4_SCALED Channels(ub) bits 3..0: the RGBA write mask, R in bit 0; never empty.
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
                "at least one channel must be enabled (`0000` is not allowed)",
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

    /// Parses the `<channels>` suffix: enabled channels in RGBA order, each once.
    fn parse(col: usize, s: &str) -> Result<Channels, Rejection> {
        let mut bits = 0u8;
        let mut next = 0usize;
        for ch in s.chars() {
            let up = ch.to_ascii_uppercase();
            let pos = RGBA.iter().position(|&c| c == up).ok_or_else(|| {
                Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("`{ch}` is not a channel R, G, B or A"),
                )
            })?;
            if pos < next {
                return Err(Rejection::at(
                    Reason::Syntax,
                    col,
                    format!("channels `{s}` are not each once in RGBA order"),
                ));
            }
            bits |= 1 << pos;
            next = pos + 1;
        }
        Channels::new(bits).map_err(|r| Rejection {
            column: Some(col),
            ..r
        })
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

/// A parsed SVM_SCATTER4_SCALED instruction. (Scale is ignored and always zero, so the text
/// form has none.)
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scatter4 {
    /// Pred: predication, if any.
    pub pred: Option<Predicate>,
    /// Channels: the RGBA write mask.
    pub channels: Channels,
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
        write!(
            f,
            "{MNEMONIC}.{} {} {} {} {}",
            self.channels, self.exec, self.address, self.element_offset, self.src
        )
    }
}

/// Parses an SVM_SCATTER4_SCALED line.
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
    let channels = Channels::parse(col + MNEMONIC.len() + 1, suffix)?;
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
        exec,
        address: Var::parse(*address)?,
        element_offset: Var::parse(*offset)?,
        src: Var::parse(*src)?,
    };
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
    Ok(s)
}

/// The source stride between enabled channels: `max(exec_size, GRF_SIZE / 4)` dwords, with
/// the GRF size in bytes from knob `visa.grf_size` (A28).
pub fn channel_stride(exec_size: u32, grf: GrfSize) -> u32 {
    let grf_bytes = match grf {
        GrfSize::B32 => 32,
        GrfSize::B64 => 64,
    };
    exec_size.max(grf_bytes / 4)
}

/// Lowers SVM_SCATTER4_SCALED against a state: for each enabled channel `c` in RGBA order and
/// each lane `i` with `ChEn[i]`, a 4-byte store of `src[ch_pos * stride + i]` at `address +
/// element_offset[i] + 4c`, where `ch_pos` counts enabled channels only (A28).
pub fn lower(s: &Scatter4, state: &State, p: &Profile) -> Lowering {
    lowering(bind(s, state, p))
}

fn bind(s: &Scatter4, state: &State, p: &Profile) -> Bind<Lowered> {
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
            // "the final address must be dword-aligned", with no consequence stated (A15).
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
