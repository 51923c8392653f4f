//! The checks of a concurrent launch ([`concurrent_checks`]): the final value of every
//! location its work-items share, and the iterations each work-item executed. Where the final
//! value depends on the order of the operations (an exchange or a compare-exchange against an
//! add, min against max, a compare-and-swap loop whose update does not commute with the rest),
//! the script lists every value some order gives ([`final_values`]), the values the reference's
//! concurrent checker (`atomcts_reference::concurrent::judge`) accepts as a final value when no
//! returned value is observed: some total order of all the read-modify-writes, each thread's in
//! its own order. Enumerated within stated bounds ([`ORDER_PAIRS`], [`MAX_FINALS`]); beyond
//! them the case is refused with the reason.

use super::order::{Order, OrderThread, SWEEP_STEPS, reachable, sweep, table};
use super::{Check, order_free, read, width_mask};
use crate::plan::ConcurrentPlan;
use atomcts_reference::concurrent::is_identity;
use atomcts_reference::ir::AtomicOp;
use atomcts_reference::race::OpStep;
use atomcts_reference::state::State;
use atomcts_reference::types::{DataType, Space};
use std::collections::BTreeMap;

/// Most (remaining operations, memory value) pairs [`final_values`] visits for one location,
/// all steps together.
pub const ORDER_PAIRS: usize = 1 << 22;

/// Most final values a script lists for one location.
pub const MAX_FINALS: usize = 1024;

/// Every value memory can hold after every operation of `classes` ran once per count, in any
/// order, from `init`: each class is one operation (`OpStep`) with how many times it runs.
/// With nothing returned observed, a thread's iterations of one operation constrain no order
/// among the others, so only how many of each class remain matters: a breadth-first walk over
/// (remaining per class, value), every effect an operation may have ([`Step::step`]) followed.
/// `Err` with the reason past [`ORDER_PAIRS`] pairs or [`MAX_FINALS`] values.
pub fn final_values(init: u64, classes: &[(OpStep, u32)]) -> Result<Vec<u64>, String> {
    let total: u64 = classes.iter().map(|(_, n)| u64::from(*n)).sum();
    let (_, finals) = super::order::reachable(init, classes, ORDER_PAIRS).map_err(|why| {
        format!("{why}: too many to enumerate the final values a script would list")
    })?;
    if finals.len() > MAX_FINALS {
        return Err(format!(
            "its {total} operations end at {} different values depending on the order: more than the {MAX_FINALS} a script lists",
            finals.len()
        ));
    }
    Ok(finals.into_iter().collect())
}

/// The checks of a concurrent launch (argument `mem_arg`, [`ConcurrentPlan::image`]'s layout,
/// from `initial_state`; work-group local memory is judged in the copy the kernel makes of it
/// after its barrier, at [`ConcurrentPlan::shared_base`]): each location's final value, the
/// reference's serial one (`final_state`) where every order gives it (its operations commute, or are all one),
/// else every value some order gives ([`final_values`]; a compare-and-swap loop's iteration
/// counts as the update its success applies); and, where the launch counts them, the
/// iterations every work-item executed (`counts`: argument and byte offset of
/// `[group][item]` 32-bit counts); and, where the launch keeps them (`rets`), the values every
/// iteration returned, per address, by the order check ([`super::order`]).
pub fn concurrent_checks(
    cp: &ConcurrentPlan,
    initial_state: &State,
    final_state: &State,
    mem_arg: usize,
    counts: Option<(usize, usize)>,
    rets: Option<Rets>,
) -> Result<ConcurrentChecks, String> {
    if cp.uses_shared() && !cp.has_local_image() {
        return Err(
            "a concurrent case on work-group local memory whose launch keeps no copy of it".into(),
        );
    }
    if cp.groups.iter().any(|g| g.ty == DataType::F16x2) {
        return Err("a concurrent case on f16x2 (judged per half): not written standalone".into());
    }
    // Per space: its layout, where its image starts in the buffer, memory before and after.
    let image = |space: Space| match space {
        Space::Global => (&cp.global, 0u64),
        Space::Shared => (&cp.shared, cp.shared_base()),
    };
    let bytes = |space: Space, st: &State| image(space).0.bytes(st, space);
    let (pick_g, initial_g) = (
        bytes(Space::Global, final_state),
        bytes(Space::Global, initial_state),
    );
    let (pick_s, initial_s) = if cp.has_local_image() {
        (
            bytes(Space::Shared, final_state),
            bytes(Space::Shared, initial_state),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let mut at: BTreeMap<(Space, u64), Vec<(usize, usize)>> = BTreeMap::new();
    for (k, g) in cp.groups.iter().enumerate() {
        for (i, item) in g.items.iter().enumerate() {
            at.entry((g.space, item.offset)).or_default().push((k, i));
        }
    }
    let mut checks = Vec::new();
    let mut orders = Vec::new();
    let mut unordered = Vec::new();
    for (&(space, off), members) in &at {
        let offset = &off;
        let (layout, base) = image(space);
        let (pick, initial) = match space {
            Space::Global => (&pick_g, &initial_g),
            Space::Shared => (&pick_s, &initial_s),
        };
        let g0 = &cp.groups[members[0].0];
        let w = g0.ty.bytes() as usize;
        let addr = layout
            .ranges
            .iter()
            .find(|r| *offset >= r.offset && *offset < r.offset + r.len)
            .map_or(*offset, |r| r.base + (offset - r.offset));
        let mut classes: Vec<(OpStep, u32)> = Vec::new();
        for &(k, i) in members {
            let step = step_of(cp, k, i);
            if is_identity(&step) {
                continue;
            }
            match classes.iter_mut().find(|(s, _)| *s == step) {
                Some((_, n)) => *n += cp.iterations[k],
                None => classes.push((step, cp.iterations[k])),
            }
        }
        let ops: Vec<AtomicOp> = classes.iter().map(|(s, _)| s.op).collect();
        let float = classes.iter().any(|(s, _)| s.ty.float_format().is_some());
        let serial = read(pick, *offset as usize, w);
        let mut note = String::new();
        let allowed = if classes.len() <= 1 || order_free(&ops, float) {
            vec![serial]
        } else {
            let init = read(initial, *offset as usize, w);
            let finals = final_values(init, &classes).map_err(|why| {
                format!(
                    "its final memory at {addr:#x} depends on the order of its operations ({}), and {why}",
                    names(&ops)
                )
            })?;
            if !finals.contains(&serial) {
                return Err(format!(
                    "the reference's serial final value {serial:#x} at {addr:#x} is not among the {} values enumerated (a bug in the reproducer's enumeration)",
                    finals.len()
                ));
            }
            // Judged, not a gap: said beside the word's check.
            note = format!(
                " (any of the {} values some order gives: {} operations, {})",
                finals.len(),
                classes.iter().map(|(_, n)| u64::from(*n)).sum::<u64>(),
                names(&ops)
            );
            std::iter::once(serial)
                .chain(finals.into_iter().filter(|v| *v != serial))
                .collect()
        };
        if let Some(rets) = rets {
            let at = Place {
                space,
                offset: *offset,
                addr,
                base,
            };
            match order_of(cp, at, members, initial, mem_arg, rets) {
                Ok(o) => orders.push(o),
                Err(why) => unordered.push(format!(
                    "the values returned on {addr:#x} (and their order): {why}"
                )),
            }
        }
        // A NaN the documents allow stands for any NaN where the profile is not NaN-exact
        // (the reference's `Equality::NanClass`).
        let any_nan = super::any_nan(g0.ty, &g0.env, &allowed);
        checks.push(Check {
            label: format!("{} {addr:#010x}{note}", space.name()),
            arg: mem_arg,
            offset: (base + *offset) as usize,
            bytes: w,
            mask: width_mask(w),
            allowed,
            any_nan,
            required: false,
        });
    }
    if let Some((counts_arg, at)) = counts {
        for (k, g) in cp.groups.iter().enumerate() {
            for i in 0..g.items.len() {
                let t = cp.thread_base(k) + i;
                checks.push(Check {
                    label: format!("iterations executed, instruction {k} work-item {i}"),
                    arg: counts_arg,
                    offset: at + 4 * t,
                    bytes: 4,
                    mask: u64::from(u32::MAX),
                    allowed: vec![u64::from(cp.iterations[k])],
                    any_nan: None,
                    required: false,
                });
            }
        }
    }
    let mut unjudged = if rets.is_none() {
        vec!["the values each iteration returned: this launch does not keep them; this script judges the final memory and the iteration counts only".to_string()]
    } else {
        unordered
    };
    unjudged.push(
        "memory no operation touches (atomcts checks it is unchanged; this script reads only the shared locations)"
            .into(),
    );
    Ok((checks, unjudged, orders))
}

/// What [`concurrent_checks`] gives: the words compared, what is not judged (one line each),
/// the order checks.
pub type ConcurrentChecks = (Vec<Check>, Vec<String>, Vec<Order>);

/// Where a concurrent launch keeps what every iteration returned: the returned values
/// (argument, bytes a slot) and the compare-exchange success flags (argument, bytes a slot),
/// both laid out `[group][iteration][item]` ([`ConcurrentPlan::ret_base`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rets {
    /// The returned values: argument and bytes a slot (the value read is the slot's).
    pub ret: (usize, usize),
    /// The success flags: argument and bytes a slot.
    pub ok: (usize, usize),
}

/// Where a shared location lies: its space, its offset in that space's layout, its address
/// (for people) and where the space's image starts in the launch's buffer.
#[derive(Clone, Copy, Debug)]
struct Place {
    space: Space,
    offset: u64,
    addr: u64,
    base: u64,
}

/// The order check of the location `at` that the work-items `members` (`(instruction, item)`)
/// share (`initial`: its space's memory before the launch), or why it is not written: a
/// compare-and-swap loop on it, or past the bounds of [`reachable`] ([`ORDER_PAIRS`]), of
/// [`sweep`] or of the effect table.
fn order_of(
    cp: &ConcurrentPlan,
    at: Place,
    members: &[(usize, usize)],
    initial: &[u8],
    mem_arg: usize,
    rets: Rets,
) -> Result<Order, String> {
    let Place {
        space,
        offset,
        addr,
        base,
    } = at;
    let g0 = &cp.groups[members[0].0];
    let w = g0.ty.bytes() as usize;
    let init = read(initial, offset as usize, w);
    let mut kinds: Vec<OpStep> = Vec::new();
    let mut classes: Vec<(OpStep, u32)> = Vec::new();
    let mut threads = Vec::new();
    for &(k, i) in members {
        let g = &cp.groups[k];
        let lp = cp.loops.get(k).copied().flatten();
        let step = step_of(cp, k, i);
        let kind = kinds.iter().position(|s| *s == step).unwrap_or_else(|| {
            kinds.push(step.clone());
            kinds.len() - 1
        });
        if !is_identity(&step) {
            match classes.iter_mut().find(|(s, _)| *s == step) {
                Some((_, n)) => *n += cp.iterations[k],
                None => classes.push((step, cp.iterations[k])),
            }
        }
        let (n, slot) = (g.items.len(), cp.ret_base(k) + i);
        let kept = g.items[i].returns;
        let (ra, rb) = rets.ret;
        let (oa, ob) = rets.ok;
        threads.push(OrderThread {
            kind,
            iterations: cp.iterations[k],
            ret: kept.then_some((ra, slot * rb, n * rb, rb)),
            // A loop's `ok` slots hold its attempts, whatever it keeps of its returns.
            ok: (lp.is_some() || (kept && g.op == AtomicOp::Cas)).then_some((
                oa,
                slot * ob,
                n * ob,
            )),
            cas_loop: lp.map(|_| (g.items[i].src[0] & width_mask(w), g.env.weak)),
        });
    }
    let ops: Vec<AtomicOp> = classes.iter().map(|(s, _)| s.op).collect();
    let values = if order_free(&ops, g0.ty.float_format().is_some()) {
        sweep(init, &classes, SWEEP_STEPS)?
    } else {
        reachable(init, &classes, ORDER_PAIRS)?.0
    };
    let table = table(&kinds, &values)?;
    let nan = g0
        .ty
        .float_format()
        .filter(|_| !g0.env.nan_exact)
        .map(|f| (f.mask(), f.exp_mask(), f.frac_mask()));
    Ok(Order {
        label: format!("{} {addr:#010x}", space.name()),
        init,
        final_at: (mem_arg, (base + offset) as usize, w),
        nan,
        table,
        threads,
    })
}

fn names(ops: &[AtomicOp]) -> String {
    let mut v: Vec<&str> = ops.iter().map(|o| o.name()).collect();
    v.dedup();
    v.join(", ")
}

/// The operation item `i` of instruction `k` applies each iteration: its op and operands, or
/// for a compare-and-swap loop the update its success applies.
fn step_of(cp: &ConcurrentPlan, k: usize, i: usize) -> OpStep {
    let g = &cp.groups[k];
    match cp.loops.get(k).copied().flatten() {
        Some(lp) => lp.step(g.ty, g.env),
        None => OpStep {
            op: g.op,
            ty: g.ty,
            env: g.env,
            src: g.items[i].src,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atomcts_reference::ir::Env;

    fn step(op: AtomicOp, src: u64) -> OpStep {
        OpStep {
            op,
            ty: DataType::U32,
            env: Env::default(),
            src: [src, 0],
        }
    }

    #[test]
    fn exchanges_against_adds_end_at_the_last_exchange_plus_the_adds_after_it() {
        // SASS exch_against_add_returns_two_by_two: exchanges of 0x100 and 0x200 (twice each)
        // against 4 adds of 1, from 0.
        let classes = [
            (step(AtomicOp::Exch, 0x100), 2),
            (step(AtomicOp::Exch, 0x200), 2),
            (step(AtomicOp::Add, 1), 4),
        ];
        let want: Vec<u64> = (0x100..=0x104).chain(0x200..=0x204).collect();
        assert_eq!(final_values(0, &classes).unwrap(), want);
    }

    #[test]
    fn max_against_min_ends_at_either() {
        let classes = [(step(AtomicOp::Max, 10), 2), (step(AtomicOp::Min, 7), 2)];
        assert_eq!(final_values(5, &classes).unwrap(), vec![7, 10]);
    }

    #[test]
    fn bounds_are_stated_not_exceeded() {
        // 4 kinds of 200 operations each: 201^4 combinations of operations left.
        let classes = [
            (step(AtomicOp::Add, 1), 200),
            (step(AtomicOp::Or, 0x1_0000), 200),
            (step(AtomicOp::Xor, 0x10_0000), 200),
            (step(AtomicOp::And, 0xbfff_ffff), 200),
        ];
        let why = final_values(0x4000_0000, &classes).unwrap_err();
        assert!(why.contains(&ORDER_PAIRS.to_string()), "{why}");
        // Distinct exchanged values: 12 are listed (each can come last), 2,000 are refused.
        let many: Vec<(OpStep, u32)> = (0..2000).map(|v| (step(AtomicOp::Exch, v), 1)).collect();
        assert_eq!(
            final_values(0, &many[..12]).unwrap(),
            (0..12).collect::<Vec<u64>>()
        );
        let why = final_values(0, &many).unwrap_err();
        assert!(why.contains("more than"), "{why}");
    }
}
