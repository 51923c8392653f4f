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

mod alternatives;
mod concurrent;
mod kind;
mod racing;

use crate::corpus::expectation::Expectation;
use crate::fuzzing::interleave::elem_mut;
pub use alternatives::{Alternative, alternatives};
use atomcts_adapters::Observation;
use atomcts_reference::ir::{Instr, Lowered};
use atomcts_reference::memory::Memory;
use atomcts_reference::outcome::{Completed, FaultClass, Outcome};
use atomcts_reference::state::{Loc, State};
use atomcts_reference::types::Space;
pub use concurrent::{ConcurrentPlant, concurrent_plants, order_exists};
pub use kind::{BRUTE_FORCE_LANES, PER_KIND, Plant, PlantKind};
use kind::{ELEMS_PER_REG, MANY_ACCESSES};
use racing::{racing, racing_plants, upper_bit_plants};
use std::collections::{BTreeMap, BTreeSet};

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
