//! Executes a lowered instruction: the reference's canonical run (racing lanes in program
//! order, `atomcts_reference::exec`), without the per-access allocations. Address checks run
//! first on the unchanged state, so a fault or an unspecified outcome costs no state copy.
//!
//! Errors: wherever the reference would return a `ModelError`, this path stops and asks the
//! reference for it, so the error is the reference's own, word for word (the error paths are
//! cold). The only inputs treated differently are those on which the reference's debug build
//! panics on a shift overflow (a register field at bit 64 or beyond, or a `Dest::Fields` list
//! whose earlier fields take 64 bits or more of the value, a sign-extended empty field, field
//! bounds beyond 2^32): there this path returns `ModelError::Limit`.

use atomcts_reference::error::ModelError;
use atomcts_reference::exec as reference;
use atomcts_reference::ir::{
    Access, Dest, Instr, Lowered, MemInstr, Misaligned, OutOfRange, RegField, ShuffleInstr, Source,
    Upper,
};
use atomcts_reference::outcome::{Allowed, Completed, Fault, FaultClass, Field, Outcome};
use atomcts_reference::state::{Loc, Reg, State};
use atomcts_reference::types::{DataType, mask, sext};

/// Why the fast run stopped without an outcome.
#[derive(Debug)]
enum Stop {
    /// The reference returns a `ModelError` here: ask it.
    Reference,
    /// An input on which the reference panics (see the module docs).
    Own(ModelError),
}

type Step<T> = Result<T, Stop>;

/// Runs `lowered` on a copy of `state`: equal to `atomcts_reference::exec::execute`.
pub fn execute(lowered: &Lowered, state: &State) -> Result<Outcome, ModelError> {
    match run(lowered, state) {
        Ok(o) => Ok(o),
        Err(Stop::Reference) => reference::execute(lowered, state),
        Err(Stop::Own(e)) => Err(e),
    }
}

/// The fast run alone, for tests: `Err(None)` where it would ask the reference for its error.
#[doc(hidden)]
pub fn execute_own(lowered: &Lowered, state: &State) -> Result<Outcome, Option<ModelError>> {
    run(lowered, state).map_err(|s| match s {
        Stop::Reference => None,
        Stop::Own(e) => Some(e),
    })
}

/// Where one access lands.
enum Landing {
    /// It runs: inside allocated memory at the (possibly masked) address, or outside it
    /// reading zero and dropping the write.
    Runs,
    /// A fault of this lane.
    Fault(FaultClass),
    /// The whole outcome is unspecified.
    Unspecified(String),
}

/// Alignment and range of one access, in the documents' order (space, alignment, range), as
/// `atomcts_reference::exec::resolve`.
#[inline]
fn land(instr: &MemInstr, a: &Access, bytes: u64, state: &State) -> Landing {
    if let Some(class) = a.fault {
        return Landing::Fault(class);
    }
    let mut addr = a.addr;
    if !addr.is_multiple_of(bytes) {
        match instr.misaligned {
            Misaligned::Fault => return Landing::Fault(FaultClass::MisalignedAddress),
            Misaligned::MaskLowBits => addr &= !(bytes - 1),
            Misaligned::Unspecified => {
                return Landing::Unspecified(format!(
                    "lane {} address {:#x} is not {bytes}-byte aligned; the document states no consequence (A15)",
                    a.lane, a.addr
                ));
            }
        }
    }
    if state.memory(instr.space).contains(addr, bytes) {
        return Landing::Runs;
    }
    match instr.out_of_range {
        OutOfRange::Fault => Landing::Fault(FaultClass::AddressOutOfRange),
        OutOfRange::ReadZeroDropWrite => Landing::Runs,
        OutOfRange::Unspecified => Landing::Unspecified(format!(
            "lane {} address {addr:#x} is outside allocated memory; the document states no rule (A14)",
            a.lane
        )),
    }
}

/// The outcome decided by the address checks alone, if any: a fault (every faulting lane,
/// ascending) or the first unspecified access.
fn precheck(instr: &MemInstr, state: &State) -> Option<Outcome> {
    let bytes = instr.ty.bytes();
    let mut faults: Vec<(u32, FaultClass)> = Vec::new();
    for a in &instr.accesses {
        match land(instr, a, bytes, state) {
            Landing::Runs => {}
            Landing::Fault(class) => faults.push((a.lane, class)),
            Landing::Unspecified(why) => return Some(Outcome::Unspecified(why)),
        }
    }
    if faults.is_empty() {
        None
    } else {
        faults.sort();
        Some(Outcome::Fault(Fault { lanes: faults }))
    }
}

/// The address an access that passed [`precheck`] lands on (the masked address; out-of-range
/// ones read zero and drop the write, which `Memory::read` tells by answering `None`).
#[inline]
fn landed_addr(instr: &MemInstr, a: &Access, bytes: u64) -> u64 {
    if !a.addr.is_multiple_of(bytes) && instr.misaligned == Misaligned::MaskLowBits {
        a.addr & !(bytes - 1)
    } else {
        a.addr
    }
}

fn run(lowered: &Lowered, state: &State) -> Step<Outcome> {
    state.validate().map_err(|_| Stop::Reference)?;
    if let Instr::Mem(m) = &lowered.instr
        && let Some(outcome) = precheck(m, state)
    {
        return Ok(outcome);
    }
    let mut next = state.clone();
    for (name, reg) in &lowered.declare {
        next.regs.entry(name.clone()).or_insert_with(|| reg.clone());
    }
    let mut open = Vec::new();
    match &lowered.instr {
        Instr::Mem(m) => run_mem(m, &mut next, &mut open)?,
        Instr::Shuffle(s) => run_shuffle(s, &mut next, &mut open)?,
    }
    for w in &lowered.writes {
        let bits = next
            .regs
            .get(&w.name)
            .map(|r| u32::from(r.ty.bits))
            .unwrap_or(32);
        set_field(&mut next, &w.name, w.idx, 0, bits, w.value)?;
    }
    // A final state whose values do not fit their types is the reference's model error.
    if next.validate().is_err() {
        return Err(Stop::Reference);
    }
    Ok(Outcome::Completed(Completed { state: next, open }))
}

fn run_mem(m: &MemInstr, state: &mut State, open: &mut Vec<(Loc, Field)>) -> Step<()> {
    let bytes = m.ty.bytes();
    for a in &m.accesses {
        let addr = landed_addr(m, a, bytes);
        let mem = state.memory_mut(m.space);
        let (ret, success) = match mem.read(addr, bytes) {
            // Intel out-of-bound access: reads return zero, writes are dropped.
            None => (0, false),
            Some(old) => {
                let e =
                    crate::apply(m.op, m.ty, &m.env, old, a.src).map_err(|_| Stop::Reference)?;
                mem.write(addr, bytes, e.new);
                (e.ret, e.success)
            }
        };
        writeback(a, ret, success, state, open)?;
    }
    // A4 `any`: NaN results are checked by class only.
    if !m.env.nan_exact
        && let Some(f) = m.ty.float_format()
    {
        let halves = if m.ty == DataType::F16x2 { 2 } else { 1 };
        for a in &m.accesses {
            let addr = landed_addr(m, a, bytes);
            let Some(v) = state.memory(m.space).read(addr, bytes) else {
                continue;
            };
            for h in 0..halves {
                let lo = 16 * h;
                if atomcts_reference::float::is_nan(f, v >> lo) {
                    open.push((
                        Loc::Mem {
                            space: m.space,
                            addr,
                            bytes: bytes as u8,
                        },
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
    Ok(())
}

/// `State::set_field`, refusing the shifts the reference's debug build panics on.
#[inline]
fn set_field(state: &mut State, name: &str, idx: u32, lo: u32, bits: u32, value: u64) -> Step<()> {
    if lo >= 64
        && state
            .regs
            .get(name)
            .is_some_and(|r| r.elems.len() > idx as usize)
    {
        return Err(Stop::Own(ModelError::Limit(format!(
            "field of {name}[{idx}] starts at bit {lo}, beyond 64-bit elements"
        ))));
    }
    state
        .set_field(name, idx, lo, bits, value)
        .map_err(|_| Stop::Reference)
}

/// Writes an access's returned value to its destination, as the reference's `writeback`.
fn writeback(
    a: &Access,
    ret: u64,
    success: bool,
    state: &mut State,
    open: &mut Vec<(Loc, Field)>,
) -> Step<()> {
    match &a.dst {
        Dest::None => {}
        Dest::Fields(fields) => {
            let mut shift: u32 = 0;
            for f in fields {
                if shift >= 64 {
                    return Err(Stop::Own(ModelError::Limit(format!(
                        "destination fields of lane {} take more than the 64 bits of the value",
                        a.lane
                    ))));
                }
                let part = (ret >> shift) & mask(f.bits);
                shift = shift.checked_add(f.bits).ok_or_else(|| {
                    Stop::Own(ModelError::Limit(format!(
                        "destination fields of lane {} are wider than 2^32 bits",
                        a.lane
                    )))
                })?;
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
    Ok(())
}

fn write_field(
    state: &mut State,
    f: &RegField,
    value: u64,
    open: &mut Vec<(Loc, Field)>,
) -> Step<()> {
    set_field(state, &f.name, f.idx, f.lo, f.bits, value)?;
    let top = f.lo.checked_add(f.bits).ok_or_else(|| {
        Stop::Own(ModelError::Limit(format!(
            "field of {}[{}] ends beyond bit 2^32",
            f.name, f.idx
        )))
    })?;
    match f.upper {
        Upper::Keep => {}
        Upper::Zero { width } if width > top => {
            set_field(state, &f.name, f.idx, top, width - top, 0)?
        }
        Upper::Sign { width } if width > top => {
            if f.bits == 0 {
                return Err(Stop::Own(ModelError::Limit(format!(
                    "sign extension of the empty field of {}[{}]",
                    f.name, f.idx
                ))));
            }
            let ext = (sext(value, f.bits) >> f.bits.min(63)) as u64;
            set_field(state, &f.name, f.idx, top, width - top, ext)?
        }
        Upper::Unspecified { width } if width > top => {
            set_field(state, &f.name, f.idx, top, width - top, 0)?;
            open.push((
                Loc::Reg {
                    name: f.name.clone(),
                    idx: f.idx,
                },
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

fn run_shuffle(s: &ShuffleInstr, state: &mut State, open: &mut Vec<(Loc, Field)>) -> Step<()> {
    let data = state.regs.get(&s.data).cloned().ok_or(Stop::Reference)?;
    let fill: Option<Reg> = match &s.fill {
        Some(n) => Some(state.regs.get(n).cloned().ok_or(Stop::Reference)?),
        None => None,
    };
    if !state.regs.contains_key(&s.dst) {
        state.regs.insert(
            s.dst.clone(),
            Reg {
                ty: data.ty,
                elems: vec![0; state.lanes as usize],
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
            Some(v) => set_field(state, &s.dst, lane, 0, bits, v)?,
            None => open.push((
                Loc::Reg {
                    name: s.dst.clone(),
                    idx: lane,
                },
                Field {
                    lo: 0,
                    bits,
                    allowed: Allowed::Any,
                },
            )),
        }
    }
    Ok(())
}
