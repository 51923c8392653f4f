//! Planted wrong answers: observations derived from the reference's run that the documents do
//! not allow, so that the judge (the case's expectation plus the reference's race-aware
//! cross-check) must reject each. The counterpart of the allowed variations of
//! `tests/perturb.rs`; the fraction rejected is the judge's own score (in the spirit of MC
//! Mutants' mutation score).
//!
//! What is planted, per case and profile:
//! - a completed outcome: one bit flipped in a register element outside every racing
//!   destination and every open field (unwritten elements and written ones alike); one bit
//!   flipped in a memory byte outside the racing addresses; a register left out; an allocated
//!   memory range left out, or a byte the case never allocated added; the final value of a racing
//!   address, or the value one racing lane got back, set to a value that no order of the lanes
//!   (and no alternative result the profile allows) produces: confirmed here by brute force
//!   over every order and every allowed effect, for histories of at most [`BRUTE_FORCE_LANES`]
//!   accesses to one address; the wrong kind of outcome;
//! - a fault: another class; another set of lanes (the case's `fault_lanes`, else the
//!   reference's faulting lanes); the wrong kind;
//! - a rejection: another reason; the wrong kind.

use crate::corpus::expectation::Expectation;
use crate::fuzzing::interleave::{elem_mut, write_return};
use atomcts_adapters::Observation;
use atomcts_reference::concurrent::{Part, Serial, fold_if_commuting};
use atomcts_reference::exec::{Resolved, resolve, writeback};
use atomcts_reference::float;
use atomcts_reference::ir::{
    AtomicOp, Dest, Instr, Lowered, MemInstr, RegField, SameAddress, Upper,
};
use atomcts_reference::memory::Memory;
use atomcts_reference::outcome::{Completed, FaultClass, Outcome};
use atomcts_reference::race::OpStep;
use atomcts_reference::race::{Observed, Step};
use atomcts_reference::semantics::Effect;
use atomcts_reference::semantics::apply;
use atomcts_reference::state::{Loc, State};
use atomcts_reference::types::{DataType, Space, mask};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

/// Histories up to this many accesses to one address are brute-forced (6! orders).
pub const BRUTE_FORCE_LANES: usize = 6;

/// At most this many plants of one kind per case and profile.
pub const PER_KIND: usize = 6;

/// Instructions with more accesses than this get one plant of each kind.
const MANY_ACCESSES: usize = 64;

/// At most this many register elements per register are planted in (written ones first).
const ELEMS_PER_REG: usize = 6;

/// The kinds of planted wrong answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlantKind {
    /// A bit flipped in a register element that is neither racing nor open.
    RegisterBit,
    /// A register of the final state left out of the answer.
    RegisterMissing,
    /// A bit flipped in a memory byte outside the racing addresses.
    MemoryBit,
    /// An allocated memory range of the final state left out of the answer, or a byte the case
    /// never allocated added to it.
    MemoryRange,
    /// A racing address left with a value no order produces.
    RacingFinal,
    /// A racing lane given back a value no order gives it.
    RacingReturn,
    /// A racing lane given back a value some order gives it, but no order together with what
    /// every other lane got and the final value.
    RacingMixed,
    /// A bit flipped above a racing lane's returned value, where the documents fix those bits
    /// (vISA `.16` writeback zero-extended, sign-extended or preserved, A12; a register's bits
    /// above a narrower value preserved).
    RacingUpperBit,
    /// A fault of another class.
    FaultClass,
    /// A fault on other lanes.
    FaultLanes,
    /// A rejection for another reason.
    RejectionReason,
    /// A rejection for the right reason at another column of the text (where the case states
    /// one).
    RejectionColumn,
    /// Another kind of outcome.
    OutcomeKind,
    /// A concurrent case's shared address left with a value no order of all its instructions'
    /// operations (each thread's in program order) produces.
    ConcurrentFinal,
    /// One iteration of one thread of a concurrent case given back a value no such order gives
    /// it.
    ConcurrentReturn,
}

impl PlantKind {
    /// Every kind.
    pub const ALL: &'static [PlantKind] = &[
        PlantKind::RegisterBit,
        PlantKind::RegisterMissing,
        PlantKind::MemoryBit,
        PlantKind::MemoryRange,
        PlantKind::RacingFinal,
        PlantKind::RacingReturn,
        PlantKind::RacingMixed,
        PlantKind::RacingUpperBit,
        PlantKind::FaultClass,
        PlantKind::FaultLanes,
        PlantKind::RejectionReason,
        PlantKind::RejectionColumn,
        PlantKind::OutcomeKind,
        PlantKind::ConcurrentFinal,
        PlantKind::ConcurrentReturn,
    ];

    /// A stable name.
    pub fn name(self) -> &'static str {
        match self {
            PlantKind::RegisterBit => "register bit",
            PlantKind::RegisterMissing => "register missing",
            PlantKind::MemoryBit => "memory bit",
            PlantKind::MemoryRange => "memory range",
            PlantKind::RacingFinal => "racing final value",
            PlantKind::RacingReturn => "racing lane's return",
            PlantKind::RacingMixed => "racing returns of no one order",
            PlantKind::RacingUpperBit => "racing upper bit",
            PlantKind::FaultClass => "fault class",
            PlantKind::FaultLanes => "fault lanes",
            PlantKind::RejectionReason => "rejection reason",
            PlantKind::RejectionColumn => "rejection column",
            PlantKind::OutcomeKind => "outcome kind",
            PlantKind::ConcurrentFinal => "concurrent final value",
            PlantKind::ConcurrentReturn => "concurrent return",
        }
    }
}

/// One planted wrong answer.
#[derive(Clone, Debug)]
pub struct Plant {
    /// Its kind.
    pub kind: PlantKind,
    /// What was changed, for people.
    pub what: String,
    /// The observation to present.
    pub observation: Observation,
}

/// The wrong answers derived from a case's reference outcome and the expectation the profile
/// selects. `initial` is the case's state, `reference` the reference's outcome on it under the
/// profile, `lowered` its IR, `lane_bound` the lanes a fault may name
/// ([`crate::corpus::verify::fault_lane_bound`]).
pub fn plants(
    expectation: &Expectation,
    initial: &State,
    reference: &Outcome,
    lowered: Option<&Lowered>,
    lane_bound: u32,
) -> Vec<Plant> {
    let mut out = Vec::new();
    match (expectation, reference) {
        (Expectation::Unspecified, _) | (_, Outcome::Unspecified(_)) => {}
        (Expectation::Values(_), Outcome::Completed(c)) => {
            completed(c, initial, lowered, &mut out);
            out.push(Plant {
                kind: PlantKind::OutcomeKind,
                what: "a fault instead of completing".into(),
                observation: Observation::Fault(vec![(0, FaultClass::AddressOutOfRange)]),
            });
        }
        (Expectation::Fault { class, lanes }, Outcome::Fault(f)) => {
            let other = FaultClass::ALL
                .iter()
                .copied()
                .find(|c| c != class)
                .unwrap_or(*class);
            out.push(Plant {
                kind: PlantKind::FaultClass,
                what: format!("{other} instead of {class}"),
                observation: Observation::Fault(f.lanes.iter().map(|(l, _)| (*l, other)).collect()),
            });
            // Other lanes, against the reference's faulting lanes (which the runner compares
            // whenever an implementation reports lanes), whether or not the case names them.
            let want: Vec<u32> = match lanes {
                Some(l) => l.clone(),
                None => f.lanes.iter().map(|(l, _)| *l).collect(),
            };
            let faulting = |l: &u32| want.contains(l);
            let spare = (0..lane_bound).find(|l| !faulting(l));
            // A lane that does not fault (or, where every lane faults, one the case lacks).
            let extra = spare.unwrap_or(lane_bound);
            let mut got: Vec<(u32, FaultClass)> = want.iter().map(|l| (*l, *class)).collect();
            got.push((extra, *class));
            out.push(Plant {
                kind: PlantKind::FaultLanes,
                what: format!("lane {extra} faults too"),
                observation: Observation::Fault(got),
            });
            if want.len() > 1 {
                out.push(Plant {
                    kind: PlantKind::FaultLanes,
                    what: format!("only lane {} faults", want[0]),
                    observation: Observation::Fault(vec![(want[0], *class)]),
                });
            } else if let (Some(other), Some(first)) = (spare, want.first()) {
                out.push(Plant {
                    kind: PlantKind::FaultLanes,
                    what: format!("lane {other} faults instead of lane {first}"),
                    observation: Observation::Fault(vec![(other, *class)]),
                });
            }
            out.push(Plant {
                kind: PlantKind::OutcomeKind,
                what: "completed, state unchanged, instead of faulting".into(),
                observation: Observation::Completed(initial.clone()),
            });
        }
        (Expectation::Invalid { reason, column }, Outcome::Invalid(_)) => {
            for other in atomcts_reference::error::Reason::ALL
                .iter()
                .map(|r| r.code())
                .filter(|c| c != reason)
                .take(2)
            {
                out.push(Plant {
                    kind: PlantKind::RejectionReason,
                    what: format!("rejected as {other} instead of {reason}"),
                    observation: Observation::Invalid {
                        reason: other.into(),
                        column: *column,
                    },
                });
            }
            // The right reason at a neighbouring column (where the case states one).
            if let Some(want) = *column {
                for c in [want - 1, want + 1].into_iter().filter(|&c| c > 0) {
                    out.push(Plant {
                        kind: PlantKind::RejectionColumn,
                        what: format!("rejected at column {c} instead of {want}"),
                        observation: Observation::Invalid {
                            reason: reason.clone(),
                            column: Some(c),
                        },
                    });
                }
            }
            out.push(Plant {
                kind: PlantKind::OutcomeKind,
                what: "completed, state unchanged, instead of a rejection".into(),
                observation: Observation::Completed(initial.clone()),
            });
        }
        _ => {}
    }
    // Bounded work per case: a few of each kind, one of each where many lanes race (each plant
    // costs a run of the race checker).
    let many = lowered.is_some_and(|l| match &l.instr {
        Instr::Mem(m) => m.accesses.len() > MANY_ACCESSES,
        _ => false,
    });
    let cap = if many { 1 } else { PER_KIND };
    let mut kept: BTreeMap<PlantKind, usize> = BTreeMap::new();
    out.retain(|p| {
        let n = kept.entry(p.kind).or_default();
        *n += 1;
        *n <= cap
    });
    out
}

/// The racing locations, as the judge sees them: destinations of accesses that reach memory,
/// and the bytes of the addresses they hit.
struct Racing<'a> {
    m: &'a MemInstr,
    groups: BTreeMap<u64, Vec<usize>>,
    regs: BTreeSet<(String, u32)>,
    bytes: BTreeSet<(Space, u64)>,
}

fn racing<'a>(lowered: Option<&'a Lowered>, initial: &State) -> Option<Racing<'a>> {
    let Some(Lowered {
        instr: Instr::Mem(m),
        ..
    }) = lowered
    else {
        return None;
    };
    let resolved = resolve(m, initial).ok()?;
    let mut r = Racing {
        m,
        groups: BTreeMap::new(),
        regs: BTreeSet::new(),
        bytes: BTreeSet::new(),
    };
    for (i, (a, res)) in m.accesses.iter().zip(&resolved).enumerate() {
        if let Resolved::Mem(addr) = res {
            r.groups.entry(*addr).or_default().push(i);
            let fields: Vec<_> = match &a.dst {
                Dest::None => vec![],
                Dest::Fields(f) => f.iter().collect(),
                Dest::CasWeak { ok, expected } => {
                    ok.iter().chain(std::iter::once(expected)).collect()
                }
            };
            for f in fields {
                r.regs.insert((f.name.clone(), f.idx));
            }
        }
    }
    for addr in r.groups.keys() {
        for b in 0..m.ty.bytes() {
            r.bytes.insert((m.space, addr + b));
        }
    }
    Some(r)
}

fn completed(c: &Completed, initial: &State, lowered: Option<&Lowered>, out: &mut Vec<Plant>) {
    let race = racing(lowered, initial);
    let (racy_regs, racy_bytes) = match &race {
        Some(r) => (r.regs.clone(), r.bytes.clone()),
        None => (BTreeSet::new(), BTreeSet::new()),
    };
    let fin = &c.state;
    // Register bits.
    let (mut written, mut unwritten) = (Vec::new(), Vec::new());
    for (name, reg) in &fin.regs {
        let width_mask = reg.ty.mask().max(1);
        let n = reg.elems.len() as u32;
        let mut picked: Vec<u32> = (0..n)
            .filter(|&i| initial.elem(name, i) != fin.elem(name, i))
            .collect();
        picked.truncate(ELEMS_PER_REG - 1);
        for i in [0, n.saturating_sub(1)] {
            if i < n && !picked.contains(&i) {
                picked.push(i);
            }
        }
        for idx in picked {
            if racy_regs.contains(&(name.clone(), idx)) {
                continue;
            }
            let loc = Loc::Reg {
                name: name.clone(),
                idx,
            };
            let open = c
                .open
                .iter()
                .filter(|(l, _)| *l == loc)
                .fold(0u64, |m, (_, f)| m | f.mask());
            let free = width_mask & !open;
            if free == 0 {
                continue;
            }
            // The lowest and the highest bit the instruction decides.
            let bits: BTreeSet<u32> = [free.trailing_zeros(), 63 - free.leading_zeros()].into();
            for bit in bits {
                let mut st = fin.clone();
                if let Some(e) = elem_mut(&mut st, name, idx) {
                    *e ^= 1 << bit;
                }
                let plant = Plant {
                    kind: PlantKind::RegisterBit,
                    what: format!("{loc} bit {bit} flipped"),
                    observation: Observation::Completed(st),
                };
                if initial.elem(name, idx) != fin.elem(name, idx) || open != 0 {
                    written.push(plant);
                } else {
                    unwritten.push(plant);
                }
            }
        }
    }
    // What the instruction wrote first (plants are capped per kind).
    out.append(&mut written);
    out.append(&mut unwritten);
    // A register left out (PROTOCOL.md: the final state has every register, written ones
    // included), where none of its elements races.
    for (name, reg) in &fin.regs {
        if (0..reg.elems.len() as u32).any(|i| racy_regs.contains(&(name.clone(), i))) {
            continue;
        }
        let mut st = fin.clone();
        st.regs.remove(name);
        out.push(Plant {
            kind: PlantKind::RegisterMissing,
            what: format!("{name} left out"),
            observation: Observation::Completed(st),
        });
    }
    // Memory bits: the first and last byte of every allocated range, and the bytes beside each
    // racing address.
    for space in [Space::Global, Space::Shared] {
        let mem = fin.memory(space);
        let mut addrs: BTreeSet<u64> = BTreeSet::new();
        for (base, len) in mem.ranges() {
            addrs.insert(base);
            // A range may end exactly at 2^64.
            addrs.insert(base + (len - 1));
        }
        if let Some(r) = &race
            && r.m.space == space
        {
            for a in r.groups.keys().take(4) {
                addrs.insert(a.wrapping_sub(1));
                addrs.insert(a.wrapping_add(r.m.ty.bytes()));
            }
        }
        for addr in addrs {
            if racy_bytes.contains(&(space, addr)) {
                continue;
            }
            let Some(v) = mem.read(addr, 1) else { continue };
            let mut st = fin.clone();
            st.memory_mut(space).write(addr, 1, v ^ 0x80);
            out.push(Plant {
                kind: PlantKind::MemoryBit,
                what: format!("{}[{addr:#x}] bit 7 flipped", space.name()),
                observation: Observation::Completed(st),
            });
        }
    }
    range_plants(fin, out);
    if let Some(r) = &race {
        for (addr, members) in &r.groups {
            racing_plants(r.m, *addr, members, initial, fin, out);
        }
        upper_bit_plants(r, fin, out);
    }
}

/// At most this many allocated ranges per space are left out, one at a time.
const RANGES_LEFT_OUT: usize = 4;

/// Memory the answer must allocate exactly as the reference does (PROTOCOL.md: the final state
/// has every allocated byte): each of the first ranges of a space left out, and one byte added
/// just past the last range (where one fits below 2^64).
fn range_plants(fin: &State, out: &mut Vec<Plant>) {
    for space in [Space::Global, Space::Shared] {
        let mem = fin.memory(space);
        let ranges: Vec<(u64, u64)> = mem.ranges().collect();
        for &(base, len) in ranges.iter().take(RANGES_LEFT_OUT) {
            let mut kept = Memory::new();
            for (b, bytes) in mem.regions().filter(|(b, _)| *b != base) {
                // Re-allocating what the reference allocated cannot pass its limits.
                if kept.alloc(b, bytes.len() as u64).is_err() || !kept.write_slice(b, bytes) {
                    return;
                }
            }
            let mut st = fin.clone();
            *st.memory_mut(space) = kept;
            out.push(Plant {
                kind: PlantKind::MemoryRange,
                what: format!("{}[{base:#x}..+{len:#x}] left out", space.name()),
                observation: Observation::Completed(st),
            });
        }
        let past = ranges.last().map_or(Some(0), |&(b, l)| {
            b.checked_add(l).filter(|p| *p < u64::MAX)
        });
        if let Some(addr) = past {
            let mut st = fin.clone();
            if st.memory_mut(space).alloc(addr + 1, 1).is_ok() {
                out.push(Plant {
                    kind: PlantKind::MemoryRange,
                    what: format!("{}[{:#x}] added", space.name(), addr + 1),
                    observation: Observation::Completed(st),
                });
            }
        }
    }
}

/// A bit flipped just above each racing lane's returned value, where the documents fix the
/// bits above it (every upper kind but `Unspecified`) and the register has such a bit: whatever
/// the order, those bits are not the race's to decide.
fn upper_bit_plants(r: &Racing<'_>, fin: &State, out: &mut Vec<Plant>) {
    for members in r.groups.values() {
        for &i in members {
            let a = &r.m.accesses[i];
            let Dest::Fields(fields) = &a.dst else {
                continue;
            };
            for f in fields {
                let Some(reg) = fin.regs.get(&f.name) else {
                    continue;
                };
                let width = match f.upper {
                    Upper::Keep => 64,
                    Upper::Zero { width } | Upper::Sign { width } => width,
                    Upper::Unspecified { .. } => continue,
                };
                let top = f.lo + f.bits;
                if top >= width || top >= 64 || reg.ty.mask() >> top & 1 == 0 {
                    continue;
                }
                let mut st = fin.clone();
                let Some(e) = elem_mut(&mut st, &f.name, f.idx) else {
                    continue;
                };
                *e ^= 1 << top;
                out.push(Plant {
                    kind: PlantKind::RacingUpperBit,
                    what: format!(
                        "lane {}: {}[{}] bit {top} flipped above its {:?} return",
                        a.lane, f.name, f.idx, f.upper
                    ),
                    observation: Observation::Completed(st),
                });
            }
        }
    }
}

/// What every order of a group's accesses (and every allowed effect) can produce, for one part
/// (half of an F16x2, else the whole value): the final values, what each member can get back,
/// and each order's returns with its final value together.
struct Reachable {
    finals: Vec<u64>,
    rets: Vec<Vec<u64>>,
    outcomes: BTreeSet<(Vec<u64>, u64)>,
}

fn brute_force(steps: &[OpStep], init: u64, orders_free: bool) -> Option<Reachable> {
    let n = steps.len();
    let mut r = Reachable {
        finals: Vec::new(),
        rets: vec![Vec::new(); n],
        outcomes: BTreeSet::new(),
    };
    fn go(
        steps: &[OpStep],
        value: u64,
        used: &mut Vec<bool>,
        got: &mut Vec<u64>,
        orders_free: bool,
        r: &mut Reachable,
    ) -> Option<()> {
        let n = steps.len();
        if used.iter().all(|u| *u) {
            r.finals.push(value);
            for (i, v) in got.iter().enumerate() {
                r.rets[i].push(*v);
            }
            r.outcomes.insert((got.clone(), value));
            return Some(());
        }
        for i in 0..n {
            if used[i] {
                continue;
            }
            for e in steps[i].step(value).ok()? {
                used[i] = true;
                got[i] = e.ret;
                go(steps, e.new, used, got, orders_free, r)?;
                used[i] = false;
            }
            if !orders_free {
                break;
            }
        }
        Some(())
    }
    go(
        steps,
        init,
        &mut vec![false; n],
        &mut vec![0; n],
        orders_free,
        &mut r,
    )?;
    r.finals.sort();
    r.finals.dedup();
    for v in &mut r.rets {
        v.sort();
        v.dedup();
    }
    Some(r)
}

/// A value near `around` (one bit flipped) that matches none of `reachable` under the judge's
/// comparison (NaNs alike where the profile allows any NaN).
fn unreachable_near(
    around: u64,
    width: u32,
    reachable: &[u64],
    fmt: Option<float::Format>,
) -> Option<u64> {
    (0..width).map(|k| around ^ (1 << k)).find(|c| {
        let nan = fmt.is_some_and(|f| float::is_nan(f, *c));
        !nan && !reachable.contains(c)
    })
}

fn racing_plants(
    m: &MemInstr,
    addr: u64,
    members: &[usize],
    initial: &State,
    fin: &State,
    out: &mut Vec<Plant>,
) {
    let orders_free = members.len() == 1 || m.same_address == SameAddress::AnyOrder;
    // Too many orders to brute-force: only where every order ends at the same value (integer
    // add, subtract, and, or, xor, min, max commute and associate), which is then the
    // reference's final value; the judge must refute another one by its exhaustive search.
    let order_independent = m.ty.float_format().is_none()
        && matches!(
            m.op,
            AtomicOp::Add
                | AtomicOp::Sub
                | AtomicOp::And
                | AtomicOp::Or
                | AtomicOp::Xor
                | AtomicOp::Min
                | AtomicOp::Max
        );
    let many = orders_free && members.len() > BRUTE_FORCE_LANES;
    if many && !order_independent {
        return;
    }
    let bytes = m.ty.bytes();
    let (Some(init), Some(end)) = (
        initial.memory(m.space).read(addr, bytes),
        fin.memory(m.space).read(addr, bytes),
    ) else {
        return;
    };
    let (parts, width, part_ty) = if m.ty == DataType::F16x2 {
        (2, 16, DataType::F16)
    } else {
        (1, m.ty.bits(), m.ty)
    };
    // NaNs are alike only where the profile allows any NaN; elsewhere another NaN is wrong.
    let fmt = part_ty.float_format().filter(|_| !m.env.nan_exact);
    for p in 0..parts {
        let lo = p * width;
        let pm = mask(width);
        let steps: Vec<OpStep> = members
            .iter()
            .map(|&i| {
                let a = &m.accesses[i];
                OpStep {
                    op: m.op,
                    ty: part_ty,
                    env: m.env,
                    src: [(a.src[0] >> lo) & pm, (a.src[1] >> lo) & pm],
                }
            })
            .collect();
        let reach = if many {
            Reachable {
                finals: vec![(end >> lo) & pm],
                rets: vec![Vec::new(); members.len()],
                outcomes: BTreeSet::new(),
            }
        } else {
            let Some(reach) = brute_force(&steps, (init >> lo) & pm, orders_free) else {
                continue;
            };
            reach
        };
        // The final value.
        if let Some(v) = unreachable_near((end >> lo) & pm, width, &reach.finals, fmt) {
            let mut st = fin.clone();
            st.memory_mut(m.space)
                .write(addr, bytes, (end & !(pm << lo)) | (v << lo));
            out.push(Plant {
                kind: PlantKind::RacingFinal,
                what: format!(
                    "{}[{addr:#x}] part {p} left as {v:#x}; every order gives one of {:x?}",
                    m.space.name(),
                    reach.finals
                ),
                observation: Observation::Completed(st),
            });
        }
        // Where the profile fixes program order (A28 `program_order`): a final value only
        // another order gives.
        if !orders_free
            && members.len() <= BRUTE_FORCE_LANES
            && let Some(any) = brute_force(&steps, (init >> lo) & pm, true)
            && let Some(v) = any.finals.iter().copied().find(|v| {
                !reach.finals.contains(v)
                    && !(fmt.is_some_and(|f| {
                        float::is_nan(f, *v) && reach.finals.iter().any(|r| float::is_nan(f, *r))
                    }))
            })
        {
            let mut st = fin.clone();
            st.memory_mut(m.space)
                .write(addr, bytes, (end & !(pm << lo)) | (v << lo));
            // First, so that the cap per kind keeps it.
            out.insert(0, Plant {
                kind: PlantKind::RacingFinal,
                what: format!(
                    "{}[{addr:#x}] part {p} left as {v:#x}, which only another order gives; program order gives one of {:x?}",
                    m.space.name(),
                    reach.finals
                ),
                observation: Observation::Completed(st),
            });
        }
        // A lone weak compare-exchange's success flag flipped, where no effect the documents
        // allow gives that flag with the returned value and final memory observed.
        if let [i] = members
            && let Dest::CasWeak {
                ok: Some(okf),
                expected,
            } = &m.accesses[*i].dst
            && let (Some(flag), Some(exp)) = (
                fin.elem(&okf.name, okf.idx),
                fin.elem(&expected.name, expected.idx),
            )
        {
            let (ret, success, last) = (exp & mask(expected.bits), flag & 1 == 0, (end >> lo) & pm);
            let explained = steps[0].step((init >> lo) & pm).is_ok_and(|effects| {
                effects
                    .iter()
                    .any(|e| e.success == success && e.ret == ret && e.new == last)
            });
            if !explained {
                let mut st = fin.clone();
                if let Some(e) = elem_mut(&mut st, &okf.name, okf.idx) {
                    *e ^= 1;
                }
                out.push(Plant {
                    kind: PlantKind::RacingReturn,
                    what: format!(
                        "lane {}: compare-exchange success flag {}[{}] flipped",
                        m.accesses[*i].lane, okf.name, okf.idx
                    ),
                    observation: Observation::Completed(st),
                });
            }
        }
        // What each member got back (destinations made of plain fields only), where
        // brute-forced.
        let returned: Vec<Option<(&[RegField], u64)>> = members
            .iter()
            .map(|&i| match &m.accesses[i].dst {
                Dest::Fields(fields) if !many => {
                    let total: u32 = fields.iter().map(|f| f.bits).sum();
                    (total >= lo + width).then(|| (fields.as_slice(), read_return(fin, fields)))
                }
                _ => None,
            })
            .collect();
        // Each member's return.
        for (k, &i) in members.iter().enumerate() {
            let a = &m.accesses[i];
            let Some((fields, got)) = returned[k] else {
                continue;
            };
            let Some(v) = unreachable_near((got >> lo) & pm, width, &reach.rets[k], fmt) else {
                continue;
            };
            let planted = (got & !(pm << lo)) | (v << lo);
            let mut st = fin.clone();
            write_return(&mut st, fields, planted);
            out.push(Plant {
                kind: PlantKind::RacingReturn,
                what: format!(
                    "lane {} got {v:#x} from {:#x} (part {p}); every order gives it one of {:x?}",
                    a.lane, addr, reach.rets[k]
                ),
                observation: Observation::Completed(st),
            });
        }
        // One member's return swapped for another it gets in some order, where no order gives
        // it together with what every other member got and the final value (integers: values
        // compare exactly). The judge must find that no single order explains them all.
        let gots: Option<Vec<(&[RegField], u64)>> = returned.iter().copied().collect();
        if let Some(gots) = gots
            && part_ty.float_format().is_none()
        {
            let observed: Vec<u64> = gots.iter().map(|(_, g)| (g >> lo) & pm).collect();
            let last = (end >> lo) & pm;
            'member: for (k, &i) in members.iter().enumerate() {
                for &v in &reach.rets[k] {
                    if v == observed[k] {
                        continue;
                    }
                    let mut mixed = observed.clone();
                    mixed[k] = v;
                    if reach.outcomes.contains(&(mixed, last)) {
                        continue;
                    }
                    let (fields, got) = gots[k];
                    let mut st = fin.clone();
                    write_return(&mut st, fields, (got & !(pm << lo)) | (v << lo));
                    out.push(Plant {
                        kind: PlantKind::RacingMixed,
                        what: format!(
                            "lane {} got {v:#x} from {addr:#x} (part {p}), which it gets in some order, but in no order together with the others' {observed:x?} and the final {last:#x}",
                            m.accesses[i].lane
                        ),
                        observation: Observation::Completed(st),
                    });
                    continue 'member;
                }
            }
        }
    }
}

/// What a lane got back, read from its destination fields (the first field lowest).
fn read_return(fin: &State, fields: &[RegField]) -> u64 {
    let mut got = 0u64;
    let mut shift = 0;
    for f in fields {
        let e = fin.elem(&f.name, f.idx).unwrap_or(0);
        got |= ((e >> f.lo) & mask(f.bits)) << shift;
        shift += f.bits;
    }
    got
}

/// One allowed alternative result: the state an implementation leaves when one access takes
/// another effect the documents allow (the other signed zero, the other NaN or number, the
/// other denormal comparison, a spurious compare-exchange failure), every other access taking
/// the reference's pick, lanes in program order.
#[derive(Clone, Debug)]
pub struct Alternative {
    /// What differs: `other signed zero`, `other NaN choice`, `other denormal comparison`,
    /// `spurious compare-exchange failure` or `other allowed result`.
    pub kind: &'static str,
    /// The lane whose access took it.
    pub lane: u32,
    /// The final state.
    pub state: State,
}

/// Every alternative result of a memory instruction on `initial`, one access at a time (at most
/// `limit` accesses with alternatives).
pub fn alternatives(lowered: &Lowered, initial: &State, limit: usize) -> Vec<Alternative> {
    let Instr::Mem(m) = &lowered.instr else {
        return vec![];
    };
    let Ok(resolved) = resolve(m, initial) else {
        return vec![];
    };
    let bytes = m.ty.bytes();
    // The effects each access may take with the reference's picks before it.
    let replay = |choice: Option<(usize, usize)>| -> Option<(State, Vec<Vec<Effect>>)> {
        let mut st = initial.clone();
        let mut all = Vec::new();
        let mut open = Vec::new();
        for (j, (a, r)) in m.accesses.iter().zip(&resolved).enumerate() {
            let (ret, success, effects) = match *r {
                Resolved::Dropped => (0, false, vec![]),
                Resolved::Mem(addr) => {
                    let old = st.memory(m.space).read(addr, bytes)?;
                    let effects: Vec<Effect> = apply(m.op, m.ty, &m.env, old, a.src).ok()?.to_vec();
                    let k = match choice {
                        Some((cj, ck)) if cj == j => ck,
                        _ => 0,
                    };
                    let e = *effects.get(k)?;
                    st.memory_mut(m.space).write(addr, bytes, e.new);
                    (e.ret, e.success, effects)
                }
            };
            writeback(a, m.ty, ret, success, &mut st, &mut open).ok()?;
            all.push(effects);
        }
        Some((st, all))
    };
    let Some((_, effects)) = replay(None) else {
        return vec![];
    };
    let mut out = Vec::new();
    for (j, e) in effects
        .iter()
        .enumerate()
        .filter(|(_, e)| e.len() > 1)
        .take(limit)
    {
        for k in 1..e.len() {
            let Some((state, _)) = replay(Some((j, k))) else {
                continue;
            };
            out.push(Alternative {
                kind: classify(m, &e[0], &e[k]),
                lane: m.accesses[j].lane,
                state,
            });
        }
    }
    out
}

fn classify(m: &MemInstr, pick: &Effect, alt: &Effect) -> &'static str {
    if pick.success != alt.success {
        return "spurious compare-exchange failure";
    }
    let (parts, width, fmt) = if m.ty == DataType::F16x2 {
        (2, 16, Some(float::Format::F16))
    } else {
        (1, m.ty.bits(), m.ty.float_format())
    };
    let Some(f) = fmt else {
        return "other allowed result";
    };
    for p in 0..parts {
        let (a, b) = (
            (pick.new >> (p * width)) & mask(width),
            (alt.new >> (p * width)) & mask(width),
        );
        if a == b {
            continue;
        }
        let zero = |v: u64| v & !(1 << (width - 1)) == 0;
        if zero(a) && zero(b) {
            return "other signed zero";
        }
        if float::is_nan(f, a) || float::is_nan(f, b) {
            return "other NaN choice";
        }
        return "other denormal comparison";
    }
    "other allowed result"
}

/// Histories of concurrent cases up to this many operations on one address are brute-forced
/// ([`concurrent_plants`]).
pub const CONCURRENT_OPS: usize = 32;

/// ... and up to this many reachable search states.
pub const CONCURRENT_STATES: usize = 50_000;

/// A planted observation of a concurrent case: each instruction's final state and what each
/// iteration of each access returned, as [`atomcts_reference::concurrent::Serial`] holds them.
#[derive(Clone, Debug)]
pub struct ConcurrentPlant {
    /// Its kind; `None` for an allowed alternative.
    pub kind: Option<PlantKind>,
    /// What was changed, for people.
    pub what: String,
    /// The observation to present.
    pub observation: Serial,
}

/// One thread of a concurrent case on one address: access `access` of instruction `instr`,
/// one step per iteration.
struct Thread {
    instr: usize,
    access: usize,
    steps: Vec<OpStep>,
}

/// What every order of some threads' steps on one address produces, each thread's steps in its
/// own order and every allowed effect of each step: the final values, and per thread and step
/// the values it can get back. `None` past [`CONCURRENT_STATES`] states (or a step the model
/// cannot run).
fn brute_force_threads(threads: &[Thread], init: u64) -> Option<ThreadsReach> {
    // A progress vector as one mixed-radix number: thread t's digit is how many steps it ran.
    let mut radix = Vec::with_capacity(threads.len());
    let mut place = 1u64;
    for t in threads {
        radix.push(place);
        place = place.checked_mul(t.steps.len() as u64 + 1)?;
    }
    let mut seen: std::collections::HashSet<(u64, u64)> = std::collections::HashSet::new();
    let mut finals = BTreeSet::new();
    let mut rets: Vec<Vec<BTreeSet<u64>>> = threads
        .iter()
        .map(|t| vec![BTreeSet::new(); t.steps.len()])
        .collect();
    let mut stack = vec![(0u64, init)];
    while let Some((progress, value)) = stack.pop() {
        if !seen.insert((progress, value)) {
            continue;
        }
        if seen.len() > CONCURRENT_STATES {
            return None;
        }
        let mut done = true;
        for (t, thread) in threads.iter().enumerate() {
            let j = (progress / radix[t] % (thread.steps.len() as u64 + 1)) as usize;
            let Some(step) = thread.steps.get(j) else {
                continue;
            };
            done = false;
            for e in step.step(value).ok()? {
                rets[t][j].insert(e.ret);
                stack.push((progress + radix[t], e.new));
            }
        }
        if done {
            finals.insert(value);
        }
    }
    let rets = rets
        .into_iter()
        .map(|t| t.into_iter().map(|r| r.into_iter().collect()).collect())
        .collect();
    Some(ThreadsReach {
        finals: finals.into_iter().collect(),
        rets,
    })
}

/// Whether some order of the threads' steps (each thread's in its own order, every effect the
/// documents allow) gives every observed return and success flag, and ends at `end`: brute
/// force over every progress vector and value, with no reduction, for at most
/// [`CONCURRENT_STATES`] states (`None` past that). Bitwise comparison: integer types only (or
/// no NaN anywhere). An oracle for the concurrent judge independent of its search.
pub fn order_exists(threads: &[Vec<(OpStep, Observed)>], init: u64, end: u64) -> Option<bool> {
    let mut seen: std::collections::HashSet<(Vec<usize>, u64)> = std::collections::HashSet::new();
    let mut stack = vec![(vec![0usize; threads.len()], init)];
    while let Some((progress, value)) = stack.pop() {
        if !seen.insert((progress.clone(), value)) {
            continue;
        }
        if seen.len() > CONCURRENT_STATES {
            return None;
        }
        let mut done = true;
        for (t, thread) in threads.iter().enumerate() {
            let Some((step, o)) = thread.get(progress[t]) else {
                continue;
            };
            done = false;
            for e in step.step(value).ok()? {
                if o.ret_fits(e.ret, &|a, b| a == b) && o.success.is_none_or(|s| s == e.success) {
                    let mut next = progress.clone();
                    next[t] += 1;
                    stack.push((next, e.new));
                }
            }
        }
        if done && value == end {
            return Some(true);
        }
    }
    Some(false)
}

/// The reference's observation with one thread's first and last returns swapped, and the
/// register that holds the last set to the first: `None` where the thread has one iteration,
/// does not keep both returns in a plain register field, or they agree on the kept bits (or,
/// `whole`, the lane keeps fewer than all bits). Also the first and last returns.
fn swap_first_last(
    reference: &Serial,
    th: &Thread,
    mems: &[&MemInstr],
    whole: bool,
) -> Option<(Serial, u64, u64)> {
    let n = th.steps.len();
    let at = |j: usize| reference.returned[th.instr][j][th.access];
    let (first, last) = (at(0).ret?, at(n - 1).ret?);
    let Dest::Fields(fields) = &mems[th.instr].accesses[th.access].dst else {
        return None;
    };
    let kept = at(0).kept & at(n - 1).kept;
    if n < 2 || (first ^ last) & kept == 0 || (whole && kept != u64::MAX) {
        return None;
    }
    let mut planted = reference.clone();
    planted.returned[th.instr][0][th.access].ret = Some(last);
    planted.returned[th.instr][n - 1][th.access].ret = Some(first);
    write_return(&mut planted.states[th.instr], fields, first);
    Some((planted, first, last))
}

/// What [`brute_force_threads`] found: the final values, and per thread and step the values it
/// can get back.
struct ThreadsReach {
    finals: Vec<u64>,
    rets: Vec<Vec<Vec<u64>>>,
}

/// The reference's observation with the final value at `addr` set to `v` (in every state: each
/// carries the shared memory), which `why` says no order produces.
fn final_plant(
    reference: &Serial,
    (space, addr, bytes): (Space, u64, u64),
    v: u64,
    why: String,
) -> ConcurrentPlant {
    let mut planted = reference.clone();
    for st in &mut planted.states {
        st.memory_mut(space).write(addr, bytes, v);
    }
    ConcurrentPlant {
        kind: Some(PlantKind::ConcurrentFinal),
        what: format!("{}[{addr:#x}] left as {v:#x}; {why}", space.name()),
        observation: planted,
    }
}

/// Wrong answers for a concurrent case and allowed alternatives to the reference's serial
/// answer, per shared address, brute-forced over every order of its threads (each thread in
/// program order, every allowed effect): the final value set to one no order produces; one
/// iteration's returned value set to one no order gives it; and, as an alternative the judge
/// must accept, the whole observation of another order (the threads one after another, the
/// last first, and a seeded random interleaving, at any size). Past [`CONCURRENT_OPS`] or
/// [`CONCURRENT_STATES`] the wrong answers come from theory instead: a final value other than
/// the commuting fold's, swapped returns of adds that cannot wrap. Cases with a
/// compare-and-swap loop get two random interleavings of single attempts
/// (`crate::fuzzing::interleave::random_interleaving`); F16x2 addresses get none.
pub fn concurrent_plants(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    reference: &Serial,
) -> Vec<ConcurrentPlant> {
    let mut out = Vec::new();
    if lowered.len() != parts.len() {
        return out;
    }
    if parts.iter().any(|p| p.cas_loop.is_some()) {
        // Loops: two seeded random interleavings of single attempts, as hardware runs them
        // (an attempt fails, and the lane retries with the value it read, whenever another
        // thread changed the value since the lane last read it): must pass.
        for seed in [1, 2] {
            if let Some(o) =
                crate::fuzzing::interleave::random_interleaving(parts, lowered, reference, seed)
            {
                out.push(ConcurrentPlant {
                    kind: None,
                    what: format!(
                        "a random interleaving (seed {seed}) of single attempts of the loops and the other threads"
                    ),
                    observation: o,
                });
            }
        }
        return out;
    }
    let mut mems: Vec<&MemInstr> = Vec::new();
    let mut groups: BTreeMap<(Space, u64), Vec<(usize, usize)>> = BTreeMap::new();
    for (k, l) in lowered.iter().enumerate() {
        let Instr::Mem(m) = &l.instr else {
            return out;
        };
        let Ok(resolved) = resolve(m, parts[k].state) else {
            return out;
        };
        for (i, r) in resolved.iter().enumerate() {
            if let Resolved::Mem(addr) = r {
                groups.entry((m.space, *addr)).or_default().push((k, i));
            }
        }
        mems.push(m);
    }
    let fin = &reference.states[0];
    for ((space, addr), members) in groups {
        let m0 = mems[members[0].0];
        if m0.ty == DataType::F16x2 {
            continue;
        }
        let (bytes, width) = (m0.ty.bytes(), m0.ty.bits());
        let (Some(init), Some(end)) = (
            parts[0].state.memory(space).read(addr, bytes),
            fin.memory(space).read(addr, bytes),
        ) else {
            continue;
        };
        let threads: Vec<Thread> = members
            .iter()
            .map(|&(k, i)| {
                let m = mems[k];
                let step = OpStep {
                    op: m.op,
                    ty: m.ty,
                    env: m.env,
                    src: m.accesses[i].src,
                };
                Thread {
                    instr: k,
                    access: i,
                    steps: vec![step; parts[k].iterations as usize],
                }
            })
            .collect();
        let fmt = m0.ty.float_format().filter(|_| !m0.env.nan_exact);
        let ops: usize = threads.iter().map(|t| t.steps.len()).sum();
        let brute = (ops <= CONCURRENT_OPS)
            .then(|| brute_force_threads(&threads, init))
            .flatten();
        if let Some(ThreadsReach { finals, rets }) = brute {
            if let Some(v) = unreachable_near(end, width, &finals, fmt) {
                out.push(final_plant(
                    reference,
                    (space, addr, bytes),
                    v,
                    format!("every order gives one of {finals:x?}"),
                ));
            }
            // One return per thread that keeps its returns: the first iteration, and the last.
            for (t, th) in threads.iter().enumerate() {
                let n = th.steps.len();
                for j in [0, n - 1] {
                    let o = reference.returned[th.instr][j][th.access];
                    let Some(got) = o.ret else {
                        continue;
                    };
                    // Only the bits the lane kept are compared.
                    let Some(v) = (0..width)
                        .filter(|b| o.kept >> b & 1 == 1)
                        .map(|b| got ^ (1 << b))
                        .find(|c| {
                            !fmt.is_some_and(|f| float::is_nan(f, *c))
                                && !rets[t][j].iter().any(|r| (r ^ c) & o.kept == 0)
                        })
                    else {
                        continue;
                    };
                    let mut planted = reference.clone();
                    planted.returned[th.instr][j][th.access].ret = Some(v);
                    let lane = mems[th.instr].accesses[th.access].lane;
                    out.push(ConcurrentPlant {
                        kind: Some(PlantKind::ConcurrentReturn),
                        what: format!(
                            "instruction {} lane {lane} iteration {j} got {v:#x} from {addr:#x}; every order gives it one of {:x?}",
                            th.instr, rets[t][j]
                        ),
                        observation: planted,
                    });
                    if n == 1 {
                        break;
                    }
                }
            }
            // Program order: one thread's first and last returns swapped (with the register that
            // holds the last). Wrong when no order gives them in that order, which the brute force
            // over whole observations decides; else another observation that must pass.
            if fmt.is_none() && m0.ty.float_format().is_none() {
                for (t, th) in threads.iter().enumerate() {
                    let Some((planted, first, last)) = swap_first_last(reference, th, &mems, false)
                    else {
                        continue;
                    };
                    let observed: Vec<Vec<(OpStep, Observed)>> = threads
                        .iter()
                        .map(|u| {
                            u.steps
                                .iter()
                                .enumerate()
                                .map(|(j, s)| (s.clone(), planted.returned[u.instr][j][u.access]))
                                .collect()
                        })
                        .collect();
                    let Some(possible) = order_exists(&observed, init, end) else {
                        continue;
                    };
                    let lane = mems[th.instr].accesses[th.access].lane;
                    out.push(ConcurrentPlant {
                        kind: (!possible).then_some(PlantKind::ConcurrentReturn),
                        what: format!(
                            "instruction {} lane {lane} got {last:#x} first and {first:#x} last from {addr:#x} (thread {t}'s returns swapped): {}",
                            th.instr,
                            if possible { "some order gives them" } else { "no order gives them in that order" }
                        ),
                        observation: planted,
                    });
                }
            }
        } else {
            // Too many orders: where the operations commute every order ends at the same value
            // (`fold_if_commuting`: addition modulo 2^w, one bitwise kind alone, ...), so any
            // other final value is wrong.
            let history: Vec<Vec<(OpStep, Observed)>> = threads
                .iter()
                .map(|t| {
                    t.steps
                        .iter()
                        .enumerate()
                        .map(|(j, s)| (s.clone(), reference.returned[t.instr][j][t.access]))
                        .collect()
                })
                .collect();
            if let Some(f) = fold_if_commuting(init, &history)
                && let Some(v) = unreachable_near(end, width, &[f], fmt)
            {
                out.push(final_plant(
                    reference,
                    (space, addr, bytes),
                    v,
                    format!("the {ops} operations commute, so every order ends at {f:#x}"),
                ));
            }
            // Integer adds of positive increments that cannot wrap: the value only grows, so
            // each thread's returns grow in its own order. Its first and last swapped (with
            // the register that holds the last) are wrong, whatever the other threads did.
            let growing = fmt.is_none()
                && m0.ty.float_format().is_none()
                && threads.iter().all(|t| {
                    t.steps.iter().all(|s| {
                        s.op == AtomicOp::Add && s.ty == m0.ty && s.src[0] & mask(width) != 0
                    })
                })
                && threads
                    .iter()
                    .flat_map(|t| &t.steps)
                    .try_fold(init & mask(width), |v, s| {
                        v.checked_add(s.src[0] & mask(width))
                            .filter(|n| *n <= mask(width))
                    })
                    .is_some();
            let mut swapped = 0;
            for th in threads.iter().filter(|_| growing) {
                if swapped == 4 {
                    break;
                }
                let Some((planted, first, last)) = swap_first_last(reference, th, &mems, true)
                else {
                    continue;
                };
                let lane = mems[th.instr].accesses[th.access].lane;
                out.push(ConcurrentPlant {
                    kind: Some(PlantKind::ConcurrentReturn),
                    what: format!(
                        "instruction {} lane {lane} got {last:#x} first and {first:#x} last from {addr:#x}: the {ops} adds never wrap, so its returns grow",
                        th.instr
                    ),
                    observation: planted,
                });
                swapped += 1;
            }
        }
        // Another order: the threads one after another, the last first (at any size: the
        // judge's search must find it within the default budget).
        let reversed: Vec<usize> = (0..threads.len())
            .rev()
            .flat_map(|t| std::iter::repeat_n(t, threads[t].steps.len()))
            .collect();
        // And a seeded random interleaving, as real hardware runs them (each thread's steps in
        // its own order): far from the serial order, so the search's reductions must find it.
        let mut rng = ChaCha8Rng::seed_from_u64(addr);
        let mut left: Vec<usize> = threads.iter().map(|t| t.steps.len()).collect();
        let mut shuffled = Vec::with_capacity(ops);
        while shuffled.len() < ops {
            let live: Vec<usize> = (0..threads.len()).filter(|&t| left[t] > 0).collect();
            let t = live[(rng.next_u64() % live.len() as u64) as usize];
            left[t] -= 1;
            shuffled.push(t);
        }
        for (order, how) in [
            (reversed, "the threads one after another, the last first"),
            (shuffled, "a random interleaving of the threads"),
        ] {
            let Some((alt, value)) = replay(
                reference,
                &threads,
                &mems,
                (space, addr, bytes),
                init,
                &order,
            ) else {
                continue;
            };
            if alt != *reference {
                out.push(ConcurrentPlant {
                    kind: None,
                    what: format!("{}[{addr:#x}]: {how} (final {value:#x})", space.name()),
                    observation: alt,
                });
            }
        }
    }
    out
}

/// The reference's observation with the accesses to one address run in `order` (a thread
/// index per step, each thread's steps in its own order) instead: their returns, success
/// flags, the registers that hold each thread's last return, and the final value. `None` where
/// a step has no single effect or its destination is not a plain register field.
fn replay(
    reference: &Serial,
    threads: &[Thread],
    mems: &[&MemInstr],
    (space, addr, bytes): (Space, u64, u64),
    init: u64,
    order: &[usize],
) -> Option<(Serial, u64)> {
    let mut alt = reference.clone();
    let mut value = init;
    let mut next = vec![0usize; threads.len()];
    for &t in order {
        let th = &threads[t];
        let j = next[t];
        next[t] += 1;
        let step = th.steps.get(j)?;
        let e = step.step(value).ok()?.first().copied()?;
        value = e.new;
        let o = &mut alt.returned[th.instr][j][th.access];
        if o.ret.is_some() {
            o.ret = Some(e.ret & o.kept);
        }
        if o.success.is_some() {
            o.success = Some(e.success);
        }
        match &mems[th.instr].accesses[th.access].dst {
            Dest::None => {}
            Dest::Fields(fields) => {
                if j + 1 == th.steps.len() {
                    write_return(&mut alt.states[th.instr], fields, e.ret);
                }
            }
            _ => return None,
        }
    }
    for st in &mut alt.states {
        st.memory_mut(space).write(addr, bytes, value);
    }
    Some((alt, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::ir::Env;

    fn add(v: u64) -> OpStep {
        OpStep {
            op: AtomicOp::Add,
            ty: DataType::U32,
            env: Env::default(),
            src: [v, 0],
        }
    }

    #[test]
    fn brute_force_lists_every_order() {
        let r = brute_force(&[add(1), add(2)], 10, true).unwrap();
        assert_eq!(r.finals, vec![13]);
        assert_eq!(r.rets, vec![vec![10, 12], vec![10, 11]]);
        let r = brute_force(&[add(1), add(2)], 10, false).unwrap();
        assert_eq!(r.rets, vec![vec![10], vec![11]]);
        assert_eq!(unreachable_near(13, 32, &[13, 12], None), Some(15));
    }
}
