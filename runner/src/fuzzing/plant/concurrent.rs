//! Plants on concurrent cases (several instructions on several threads): final values and
//! returns that no interleaving of the threads' steps produces.

use crate::fuzzing::interleave::write_return;
use crate::fuzzing::plant::kind::PlantKind;
use crate::fuzzing::plant::racing::unreachable_near;
use atomcts_reference::concurrent::{Part, Serial, fold_if_commuting};
use atomcts_reference::exec::{Resolved, resolve};
use atomcts_reference::float;
use atomcts_reference::ir::{AtomicOp, Dest, Instr, Lowered, MemInstr};
use atomcts_reference::race::OpStep;
use atomcts_reference::race::{Observed, Step};
use atomcts_reference::types::{DataType, Space, mask};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

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
