//! Plants on the racing locations of one instruction: values that no order of the racing lanes
//! (and no alternative result the profile allows) produces, confirmed by brute force.

use crate::fuzzing::interleave::{elem_mut, write_return};
use crate::fuzzing::plant::kind::{BRUTE_FORCE_LANES, Plant, PlantKind};
use atomcts_adapters::Observation;
use atomcts_reference::exec::{Resolved, resolve};
use atomcts_reference::float;
use atomcts_reference::ir::{
    AtomicOp, Dest, Instr, Lowered, MemInstr, RegField, SameAddress, Upper,
};
use atomcts_reference::race::OpStep;
use atomcts_reference::race::Step;
use atomcts_reference::state::State;
use atomcts_reference::types::{DataType, Space, mask};
use std::collections::{BTreeMap, BTreeSet};

/// The racing locations, as the judge sees them: destinations of accesses that reach memory,
/// and the bytes of the addresses they hit.
pub(super) struct Racing<'a> {
    pub(super) m: &'a MemInstr,
    pub(super) groups: BTreeMap<u64, Vec<usize>>,
    pub(super) regs: BTreeSet<(String, u32)>,
    pub(super) bytes: BTreeSet<(Space, u64)>,
}

pub(super) fn racing<'a>(lowered: Option<&'a Lowered>, initial: &State) -> Option<Racing<'a>> {
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

/// A bit flipped just above each racing lane's returned value, where the documents fix the
/// bits above it (every upper kind but `Unspecified`) and the register has such a bit: whatever
/// the order, those bits are not the race's to decide.
pub(super) fn upper_bit_plants(r: &Racing<'_>, fin: &State, out: &mut Vec<Plant>) {
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
pub(super) fn unreachable_near(
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

pub(super) fn racing_plants(
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
