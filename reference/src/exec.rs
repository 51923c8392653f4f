//! Executes a lowered instruction on a state: the reference's canonical run. Racing lanes are
//! applied in program order; [`crate::check`] accepts every other allowed order.

use crate::error::ModelError;
use crate::float;
use crate::ir::{
    Access, Dest, Instr, Lowered, MemInstr, Misaligned, OutOfRange, ShuffleInstr, Source, Upper,
};
use crate::outcome::{Allowed, Completed, Fault, FaultClass, Field, Outcome};
use crate::semantics::apply;
use crate::state::{Loc, Reg, State};
use crate::types::{DataType, sext};

/// Where one access lands after alignment and range checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// Inside allocated memory at this (possibly masked) address.
    Mem(u64),
    /// Outside: reads zero, writes dropped.
    Dropped,
}

/// Alignment and range checks of every access, in the documents' order per lane: address
/// space (decided by the front end), alignment, range. `Err` is the instruction's outcome when
/// it does not run: a fault, or an unspecified outcome.
pub fn resolve(instr: &MemInstr, state: &State) -> Result<Vec<Resolved>, Box<Outcome>> {
    let bytes = instr.ty.bytes();
    let mem = state.memory(instr.space);
    let mut faults = Vec::new();
    let mut out = Vec::with_capacity(instr.accesses.len());
    for a in &instr.accesses {
        if let Some(class) = a.fault {
            faults.push((a.lane, class));
            out.push(Resolved::Dropped);
            continue;
        }
        let mut addr = a.addr;
        if addr % bytes != 0 {
            match instr.misaligned {
                Misaligned::Fault => {
                    faults.push((a.lane, FaultClass::MisalignedAddress));
                    out.push(Resolved::Dropped);
                    continue;
                }
                Misaligned::MaskLowBits => addr &= !(bytes - 1),
                Misaligned::Unspecified => {
                    return Err(Box::new(Outcome::Unspecified(format!(
                        "lane {} address {:#x} is not {bytes}-byte aligned; the document states no consequence (A15)",
                        a.lane, a.addr
                    ))));
                }
            }
        }
        if mem.contains(addr, bytes) {
            out.push(Resolved::Mem(addr));
        } else {
            match instr.out_of_range {
                OutOfRange::Fault => {
                    faults.push((a.lane, FaultClass::AddressOutOfRange));
                    out.push(Resolved::Dropped);
                }
                OutOfRange::ReadZeroDropWrite => out.push(Resolved::Dropped),
                OutOfRange::Unspecified => {
                    return Err(Box::new(Outcome::Unspecified(format!(
                        "lane {} address {addr:#x} is outside allocated memory; the document states no rule (A14)",
                        a.lane
                    ))));
                }
            }
        }
    }
    if faults.is_empty() {
        Ok(out)
    } else {
        faults.sort();
        Err(Box::new(Outcome::Fault(Fault { lanes: faults })))
    }
}

/// Checks the shape of a lowered instruction: every destination field lies inside a 64-bit
/// element and has at least one bit, and a destination's fields hold at most 64 bits in all.
/// Front ends never produce anything else; a hand-built or fuzzed IR gets a model error.
pub fn validate(lowered: &Lowered) -> Result<(), ModelError> {
    let field_ok = |f: &crate::ir::RegField| {
        let width = match f.upper {
            Upper::Keep => 64,
            Upper::Zero { width } | Upper::Sign { width } | Upper::Unspecified { width } => width,
        };
        f.bits >= 1 && f.lo < 64 && f.bits <= 64 - f.lo && width <= 64
    };
    if let Instr::Mem(m) = &lowered.instr {
        for a in &m.accesses {
            let ok = match &a.dst {
                Dest::None => true,
                Dest::Fields(fs) => {
                    fs.iter().all(field_ok)
                        && fs.iter().map(|f| u64::from(f.bits)).sum::<u64>() <= 64
                }
                Dest::CasWeak { ok, expected } => {
                    ok.iter().chain(std::iter::once(expected)).all(field_ok)
                }
            };
            if !ok {
                return Err(ModelError::Limit(format!(
                    "lane {}: a destination field lies outside a 64-bit element",
                    a.lane
                )));
            }
        }
    }
    for w in &lowered.writes {
        if w.name.is_empty() {
            return Err(ModelError::BadState(
                "a static write names no register".into(),
            ));
        }
    }
    Ok(())
}

/// Runs `lowered` on a copy of `state`.
pub fn execute(lowered: &Lowered, state: &State) -> Result<Outcome, ModelError> {
    state.validate()?;
    validate(lowered)?;
    let mut next = state.clone();
    for (name, reg) in &lowered.declare {
        next.regs.entry(name.clone()).or_insert_with(|| reg.clone());
    }
    let mut open = Vec::new();
    match &lowered.instr {
        Instr::Mem(m) => {
            let resolved = match resolve(m, state) {
                Ok(r) => r,
                Err(outcome) => return Ok(*outcome),
            };
            run_mem(m, &resolved, &mut next, &mut open)?;
        }
        Instr::Shuffle(s) => run_shuffle(s, &mut next, &mut open)?,
    }
    for w in &lowered.writes {
        let bits = next
            .regs
            .get(&w.name)
            .map(|r| u32::from(r.ty.bits))
            .unwrap_or(32);
        next.set_field(&w.name, w.idx, 0, bits, w.value)?;
    }
    // The final state keeps every invariant of the input (values fit their types).
    next.validate()
        .map_err(|e| crate::internal!("execution broke the state: {e}"))?;
    Ok(Outcome::Completed(Completed { state: next, open }))
}

fn run_mem(
    m: &MemInstr,
    resolved: &[Resolved],
    state: &mut State,
    open: &mut Vec<(Loc, Field)>,
) -> Result<(), ModelError> {
    let bytes = m.ty.bytes();
    for (a, r) in m.accesses.iter().zip(resolved) {
        let (ret, success) = match *r {
            // Intel out-of-bound access: "On read: zeros are returned. On write: data is dropped."
            Resolved::Dropped => (0, false),
            Resolved::Mem(addr) => {
                let mem = state.memory_mut(m.space);
                let old = mem
                    .read(addr, bytes)
                    .ok_or_else(|| crate::internal!("resolved address {addr:#x} unreadable"))?;
                let effects = apply(m.op, m.ty, &m.env, old, a.src)?;
                let e = effects
                    .first()
                    .ok_or_else(|| crate::internal!("{} gave no effect", m.op.name()))?;
                if !mem.write(addr, bytes, e.new) {
                    return Err(crate::internal!("resolved address {addr:#x} unwritable"));
                }
                (e.ret, e.success)
            }
        };
        writeback(a, m.ty, ret, success, state, open)?;
    }
    // A4 `any`: NaN results are checked by class only.
    if !m.env.nan_exact
        && let Some(f) = m.ty.float_format()
    {
        let lanes = if m.ty == DataType::F16x2 { 2 } else { 1 };
        for r in resolved {
            if let Resolved::Mem(addr) = *r {
                let v = state.memory(m.space).read(addr, bytes).unwrap_or(0);
                for h in 0..lanes {
                    let lo = 16 * h;
                    if float::is_nan(f, v >> lo) {
                        let loc = Loc::Mem {
                            space: m.space,
                            addr,
                            bytes: bytes as u8,
                        };
                        open.push((
                            loc,
                            Field {
                                lo,
                                bits: f.bits(),
                                allowed: Allowed::AnyNan(f),
                            },
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Writes an access's returned value to its destination; records unspecified bits in `open`.
pub fn writeback(
    a: &Access,
    ty: DataType,
    ret: u64,
    success: bool,
    state: &mut State,
    open: &mut Vec<(Loc, Field)>,
) -> Result<(), ModelError> {
    match &a.dst {
        Dest::None => {}
        Dest::Fields(fields) => {
            let mut shift = 0;
            for f in fields {
                let part = (ret >> shift) & crate::types::mask(f.bits);
                shift += f.bits;
                write_field(state, f, part, open)?;
            }
        }
        Dest::CasWeak { ok, expected } => {
            if let Some(ok) = ok {
                write_field(state, ok, u64::from(success), open)?;
            }
            if !success {
                write_field(state, expected, ret, open)?;
            }
        }
    }
    let _ = ty;
    Ok(())
}

fn write_field(
    state: &mut State,
    f: &crate::ir::RegField,
    value: u64,
    open: &mut Vec<(Loc, Field)>,
) -> Result<(), ModelError> {
    state.set_field(&f.name, f.idx, f.lo, f.bits, value)?;
    let top = f.lo + f.bits;
    match f.upper {
        Upper::Keep => {}
        Upper::Zero { width } if width > top => {
            state.set_field(&f.name, f.idx, top, width - top, 0)?
        }
        Upper::Sign { width } if width > top => {
            let ext = (sext(value, f.bits) >> f.bits.min(63)) as u64;
            state.set_field(&f.name, f.idx, top, width - top, ext)?
        }
        Upper::Unspecified { width } if width > top => {
            state.set_field(&f.name, f.idx, top, width - top, 0)?;
            let loc = Loc::Reg {
                name: f.name.clone(),
                idx: f.idx,
            };
            open.push((
                loc,
                Field {
                    lo: top,
                    bits: width - top,
                    allowed: Allowed::Any,
                },
            ));
        }
        Upper::Zero { .. } | Upper::Sign { .. } | Upper::Unspecified { .. } => {}
    }
    Ok(())
}

fn run_shuffle(
    s: &ShuffleInstr,
    state: &mut State,
    open: &mut Vec<(Loc, Field)>,
) -> Result<(), ModelError> {
    let data = state
        .regs
        .get(&s.data)
        .cloned()
        .ok_or_else(|| crate::internal!("shuffle data {} undeclared", s.data))?;
    let fill: Option<Reg> = match &s.fill {
        Some(n) => Some(
            state
                .regs
                .get(n)
                .cloned()
                .ok_or_else(|| crate::internal!("shuffle fill {n} undeclared"))?,
        ),
        None => None,
    };
    if !state.regs.contains_key(&s.dst) {
        let lanes = state.lanes as usize;
        state.regs.insert(
            s.dst.clone(),
            Reg {
                ty: data.ty,
                elems: vec![0; lanes],
            },
        );
    }
    let bits = u32::from(data.ty.bits);
    for &(lane, src) in &s.lanes {
        let value = match src {
            Source::Data(j) => data.elems.get(j as usize).copied(),
            Source::Fill(j) => fill.as_ref().and_then(|f| f.elems.get(j as usize).copied()),
            Source::Undefined => None,
        };
        match value {
            Some(v) => state.set_field(&s.dst, lane, 0, bits, v)?,
            None => {
                open.push((
                    Loc::Reg {
                        name: s.dst.clone(),
                        idx: lane,
                    },
                    Field {
                        lo: 0,
                        bits,
                        allowed: Allowed::Any,
                    },
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AtomicOp, Env, MemInstr, OutOfRange, RegField, SameAddress};
    use crate::state::Reg;
    use crate::types::{DataType, ElemType, Space};

    fn lowered(fields: Vec<RegField>) -> Lowered {
        Lowered {
            instr: Instr::Mem(MemInstr {
                op: AtomicOp::Add,
                ty: DataType::U32,
                space: Space::Global,
                env: Env::default(),
                misaligned: Misaligned::Fault,
                out_of_range: OutOfRange::Fault,
                same_address: SameAddress::AnyOrder,
                accesses: vec![Access {
                    lane: 0,
                    addr: 0x1000,
                    src: [1, 0],
                    dst: Dest::Fields(fields),
                    fault: None,
                }],
            }),
            writes: vec![],
            declare: vec![],
        }
    }

    fn field(lo: u32, bits: u32, upper: Upper) -> RegField {
        RegField {
            name: "R0".into(),
            idx: 0,
            lo,
            bits,
            upper,
        }
    }

    fn state() -> State {
        let mut s = State::new(1);
        s.global.alloc(0x1000, 4).unwrap();
        s.global.write(0x1000, 4, 0x1234_5678);
        s.regs.insert(
            "R0".into(),
            Reg {
                ty: ElemType::B32,
                elems: vec![0],
            },
        );
        s
    }

    /// Destination fields must lie inside a 64-bit element, have at least one bit, and hold at
    /// most 64 bits in all; anything else is a model error, never a panic or a wrong write.
    #[test]
    fn malformed_destination_fields_are_model_errors() {
        let s = state();
        for bad in [
            vec![field(64, 1, Upper::Keep)],
            vec![field(0, 0, Upper::Keep)],
            vec![field(60, 8, Upper::Keep)],
            vec![field(0, 16, Upper::Zero { width: 65 })],
            vec![field(0, 40, Upper::Keep), field(0, 40, Upper::Keep)],
        ] {
            assert!(
                matches!(validate(&lowered(bad.clone())), Err(ModelError::Limit(_))),
                "{bad:?}"
            );
            assert!(
                matches!(
                    execute(&lowered(bad.clone()), &s),
                    Err(ModelError::Limit(_))
                ),
                "{bad:?}"
            );
        }
        for good in [
            vec![field(0, 32, Upper::Keep)],
            vec![field(0, 16, Upper::Zero { width: 32 })],
            vec![field(63, 1, Upper::Keep)],
        ] {
            assert!(validate(&lowered(good.clone())).is_ok(), "{good:?}");
        }
    }

    /// A field that fits 64 bits but not the register's type breaks the state's invariant:
    /// the model reports it instead of returning a register holding out-of-range bits.
    #[test]
    fn writes_beyond_the_register_type_are_caught() {
        let r = execute(&lowered(vec![field(16, 32, Upper::Keep)]), &state());
        assert!(matches!(r, Err(ModelError::Internal { .. })), "{r:?}");
        let ok = execute(&lowered(vec![field(0, 32, Upper::Keep)]), &state()).unwrap();
        let Outcome::Completed(c) = ok else {
            panic!("{ok:?}")
        };
        assert_eq!(c.state.elem("R0", 0), Some(0x1234_5678));
        assert_eq!(c.state.global.read(0x1000, 4), Some(0x1234_5679));
    }
}
