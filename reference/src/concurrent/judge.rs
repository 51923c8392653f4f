//! The judgement of an observation of a concurrent case ([`judge`]) and the shared locations
//! its accesses form ([`locations`]).

use super::fold::{commutative_final, fold_if_commuting};
use super::history::{Equality, History, MAX_SEARCHED, Reason, Thread};
use super::search::check_history;
use super::{Part, Serial, dest_regs};
use crate::check::{Judgement, MAX_MISMATCHES, Mismatch, differing_bytes};
use crate::error::ModelError;
use crate::exec::{Resolved, resolve};
use crate::ir::{AtomicOp, Dest, Instr, Lowered, MemInstr};
use crate::outcome::Outcome;
use crate::race::OpStep;
use crate::race::{Observed, Verdict};
use crate::state::{Loc, State};
use crate::types::{DataType, Space, mask};
use std::collections::{BTreeMap, HashSet};

/// One thread's operations on one address: `(instruction, access index)`.
pub type ThreadId = (usize, usize);

/// The shared locations of a concurrent case: per `(space, address)`, the accesses
/// `(instruction, access index)` that resolve there, in instruction and lane order.
///
/// The documents make each read-modify-write atomic on its own bytes, and the judgement is per
/// location (one total order of the accesses to it). So accesses to overlapping bytes must be
/// one location: the same address and the same type (FORMAT.md, "Concurrent cases"). Two
/// accesses of different types at one address, or overlapping at different addresses (a 32-bit
/// add inside a 64-bit one), are no single variable: the case is refused, naming both. So is an
/// instruction that does not run to completion (a fault, an outcome the documents leave open):
/// concurrent instructions must complete. An access outside memory that reads zero and drops
/// its write shares nothing.
pub fn locations(
    parts: &[Part<'_>],
    mems: &[&MemInstr],
) -> Result<BTreeMap<(Space, u64), Vec<ThreadId>>, ModelError> {
    let mut out: BTreeMap<(Space, u64), Vec<ThreadId>> = BTreeMap::new();
    for (k, m) in mems.iter().enumerate() {
        let resolved = resolve(m, parts[k].state).map_err(|o| {
            ModelError::BadState(format!(
                "instruction {k} does not complete ({}): concurrent instructions must",
                describe(&o)
            ))
        })?;
        for (i, r) in resolved.iter().enumerate() {
            if let Resolved::Mem(addr) = r {
                out.entry((m.space, *addr)).or_default().push((k, i));
            }
        }
    }
    let access = |(k, i): ThreadId, addr: u64| {
        let m = mems[k];
        format!(
            "instruction {k} (lane {}, {} at {addr:#x})",
            m.accesses[i].lane,
            m.ty.name()
        )
    };
    // The previous location: its space, start, end and first access. Locations come in
    // address order and each must end before the next starts, so it reaches furthest.
    let mut previous: Option<(Space, u64, u64, ThreadId)> = None;
    for (&(space, addr), members) in &out {
        let first = members[0];
        let ty = mems[first.0].ty;
        if let Some(&other) = members.iter().find(|(k, _)| mems[*k].ty != ty) {
            return Err(ModelError::BadState(format!(
                "{} and {} access one location with different types: the accesses of a concurrent case to one location must have one type",
                access(first, addr),
                access(other, addr)
            )));
        }
        if let Some((s, start, until, holder)) = previous
            && s == space
            && addr < until
        {
            return Err(ModelError::BadState(format!(
                "{} and {} access overlapping bytes at different addresses: the accesses of a concurrent case to overlapping bytes must be one location (one address, one type)",
                access(holder, start),
                access(first, addr)
            )));
        }
        previous = Some((space, addr, addr.saturating_add(ty.bytes()), first));
    }
    Ok(out)
}

/// An outcome other than completion, for people.
fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Fault(f) => {
            let lanes: Vec<String> = f
                .lanes
                .iter()
                .take(4)
                .map(|(l, c)| format!("lane {l}: {c}"))
                .collect();
            format!(
                "a fault, {}{}",
                lanes.join(", "),
                if f.lanes.len() > 4 { ", ..." } else { "" }
            )
        }
        Outcome::Unspecified(why) => format!("unspecified: {why}"),
        other => other.kind().to_string(),
    }
}

/// Judges an observation of a concurrent case: `observed` holds each instruction's final state
/// (registers; the memory of `observed[0]` is the final shared memory) and `returned`, where
/// the implementation reports it, every iteration's returned values (one row per iteration,
/// one value per access). Registers the instructions do not write must equal the reference
/// serialization's (`reference`); memory no access touches must be unchanged; each location
/// ([`locations`]) goes to [`check_history`] (or [`commutative_final`]).
#[allow(clippy::too_many_arguments)]
pub fn judge(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    reference: &Serial,
    observed: &[State],
    returned: Option<&[Vec<Vec<Observed>>]>,
    attempts: Option<&[Vec<Vec<u32>>]>,
    budget: u64,
) -> Result<Judgement, ModelError> {
    if observed.len() != parts.len() || parts.is_empty() {
        return Ok(fail(
            "instructions",
            0,
            Some(parts.len() as u64),
            Some(observed.len() as u64),
            "one final state per instruction".into(),
        ));
    }
    if lowered.len() != parts.len() || reference.states.len() != parts.len() {
        return Err(crate::internal!(
            "{} lowered instructions and {} reference states for {} parts",
            lowered.len(),
            reference.states.len(),
            parts.len()
        ));
    }
    let mems: Vec<&MemInstr> = lowered
        .iter()
        .map(|l| match &l.instr {
            Instr::Mem(m) => Ok(m),
            _ => Err(crate::internal!(
                "concurrent part is not a memory instruction"
            )),
        })
        .collect::<Result<_, _>>()?;
    let groups = locations(parts, &mems)?;
    let mut mismatches = registers(&mems, reference, observed);
    mismatches.truncate(MAX_MISMATCHES);
    untouched_memory(&mems, &groups, reference, &observed[0], &mut mismatches);
    if !mismatches.is_empty() {
        return Ok(Judgement::Fail(mismatches));
    }
    let obs = match observations(parts, &mems, observed, returned) {
        Ok(o) => o,
        Err(mm) => return Ok(Judgement::Fail(mm)),
    };
    let loops = match loop_steps(parts, &mems, &obs, attempts)? {
        Ok(l) => l,
        Err(mm) => return Ok(Judgement::Fail(vec![mm])),
    };
    let mut undecided = Vec::new();
    for ((space, addr), members) in &groups {
        let at = Location {
            space: *space,
            addr: *addr,
            members,
            instructions: parts.len(),
        };
        match at.judge(parts, &mems, &obs, &loops, &observed[0], budget)? {
            Ok(None) => {}
            Ok(Some(why)) => undecided.push(why),
            Err(mm) => return Ok(Judgement::Fail(vec![mm])),
        }
    }
    Ok(if undecided.is_empty() {
        Judgement::Pass
    } else {
        Judgement::Undecided(undecided.join("; "))
    })
}

/// A failing judgement with one mismatch at register-like location `name[idx]`.
fn fail(
    name: &str,
    idx: u32,
    expected: Option<u64>,
    observed: Option<u64>,
    why: String,
) -> Judgement {
    Judgement::Fail(vec![mismatch(name, idx, expected, observed, why)])
}

fn mismatch(
    name: &str,
    idx: u32,
    expected: Option<u64>,
    observed: Option<u64>,
    why: String,
) -> Mismatch {
    Mismatch {
        loc: Loc::Reg {
            name: name.into(),
            idx,
        },
        expected,
        observed,
        why,
    }
}

/// Registers the instructions do not write, where they differ from the reference's.
fn registers(mems: &[&MemInstr], reference: &Serial, observed: &[State]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (k, m) in mems.iter().enumerate() {
        let dests: HashSet<(&str, u32)> = m
            .accesses
            .iter()
            .flat_map(|a| dest_regs(&a.dst))
            .map(|f| (f.name.as_str(), f.idx))
            .collect();
        let (want, seen) = (&reference.states[k], &observed[k]);
        for (name, reg) in &want.regs {
            for (idx, v) in reg.elems.iter().enumerate() {
                if dests.contains(&(name.as_str(), idx as u32)) {
                    continue;
                }
                let o = seen.elem(name, idx as u32);
                if o != Some(*v) {
                    out.push(mismatch(
                        name,
                        idx as u32,
                        Some(*v),
                        o,
                        format!("instruction {k}: a register it does not write changed"),
                    ));
                }
            }
        }
    }
    out
}

/// Adds to `out` the memory bytes no access touches where the final memory differs from the
/// reference's.
fn untouched_memory(
    mems: &[&MemInstr],
    groups: &BTreeMap<(Space, u64), Vec<ThreadId>>,
    reference: &Serial,
    fin: &State,
    out: &mut Vec<Mismatch>,
) {
    let racy = |space: Space, addr: u64| {
        groups
            .range(..=(space, addr))
            .next_back()
            .is_some_and(|(&(s, a), m)| s == space && addr - a < mems[m[0].0].ty.bytes())
    };
    let why = "memory no instruction accesses changed";
    differing_bytes(&reference.states[0], fin, &racy, why, out);
}

/// What each access returned in each iteration, `[instruction][iteration][access]`: from the
/// reported rows (exactly one per iteration, one value per access), else from the registers
/// after the last iteration. Mismatches where the shape is wrong or a destination is missing.
fn observations(
    parts: &[Part<'_>],
    mems: &[&MemInstr],
    observed: &[State],
    returned: Option<&[Vec<Vec<Observed>>]>,
) -> Result<Vec<Vec<Vec<Observed>>>, Vec<Mismatch>> {
    let mut obs = Vec::new();
    let mut mismatches = Vec::new();
    for (k, m) in mems.iter().enumerate() {
        let n = parts[k].iterations as usize;
        let mut per = vec![vec![Observed::default(); m.accesses.len()]; n];
        match returned {
            Some(r) => {
                let Some(rk) = r.get(k).filter(|rk| rk.len() == n) else {
                    return Err(vec![mismatch(
                        &format!("returned[{k}]"),
                        0,
                        Some(n as u64),
                        r.get(k).map(|x| x.len() as u64),
                        "one list of returned values per iteration".into(),
                    )]);
                };
                for (it, row) in rk.iter().enumerate() {
                    if row.len() != m.accesses.len() {
                        return Err(vec![mismatch(
                            &format!("returned[{k}][{it}]"),
                            0,
                            Some(m.accesses.len() as u64),
                            Some(row.len() as u64),
                            "one returned value per access of the instruction".into(),
                        )]);
                    }
                    for (i, a) in m.accesses.iter().enumerate() {
                        if !matches!(a.dst, Dest::None) {
                            per[it][i] = row[i];
                        }
                    }
                }
            }
            None => {
                for (i, a) in m.accesses.iter().enumerate() {
                    if parts[k].cas_loop.is_some()
                        && let Dest::CasWeak { expected, .. } = &a.dst
                    {
                        // A loop lane's `expected` ends at the compare it succeeded with.
                        per[n - 1][i].ret = observed[k]
                            .elem(&expected.name, expected.idx)
                            .map(|v| (v >> expected.lo) & mask(expected.bits));
                        continue;
                    }
                    match crate::check::observe(a, m.ty, parts[k].state, &observed[k]) {
                        Ok(o) => per[n - 1][i] = o,
                        Err(mm) => mismatches.push(mm),
                    }
                }
            }
        }
        obs.push(per);
    }
    if mismatches.is_empty() {
        Ok(obs)
    } else {
        Err(mismatches)
    }
}

/// Each loop lane's steps: per iteration, its first attempt where it failed and its compare
/// is known (a read that must see another value), then its success (the update applied at the
/// value it read). A mismatch where the reported attempts cannot be a loop's.
#[allow(clippy::type_complexity)]
fn loop_steps(
    parts: &[Part<'_>],
    mems: &[&MemInstr],
    obs: &[Vec<Vec<Observed>>],
    attempts: Option<&[Vec<Vec<u32>>]>,
) -> Result<Result<BTreeMap<ThreadId, Thread>, Mismatch>, ModelError> {
    let mut out: BTreeMap<ThreadId, Thread> = BTreeMap::new();
    for (k, m) in mems.iter().enumerate() {
        let Some(lp) = parts[k].cas_loop else {
            continue;
        };
        let n = parts[k].iterations as usize;
        if let Some(at) = attempts {
            let shape_ok = at.get(k).is_some_and(|ak| {
                ak.len() == n && ak.iter().all(|row| row.len() == m.accesses.len())
            });
            if !shape_ok {
                return Ok(Err(mismatch(
                    &format!("attempts[{k}]"),
                    0,
                    Some(n as u64),
                    at.get(k).map(|x| x.len() as u64),
                    "a compare-and-swap loop reports its attempts per iteration, per lane".into(),
                )));
            }
        }
        let success = lp.step(m.ty, m.env);
        for (i, a) in m.accesses.iter().enumerate() {
            let mut steps = Vec::new();
            let mut first = Some(a.src[0]);
            for it in 0..n {
                let (r, kept) = (obs[k][it][i].ret, obs[k][it][i].kept);
                let count = attempts.map(|at| at[k][it][i]);
                let why = |w: String| {
                    Ok(Err(mismatch(
                        &format!("attempts[{k}][{it}]"),
                        i as u32,
                        None,
                        count.map(u64::from),
                        format!("lane {}: {w}", a.lane),
                    )))
                };
                let known = match (count, first) {
                    (Some(0), _) => {
                        return why(
                            "an iteration ends with one successful attempt, so it makes at least one"
                                .into(),
                        );
                    }
                    (Some(1), Some(c)) => {
                        if r.is_some_and(|r| r != c) {
                            return why(format!(
                                "its only attempt succeeded with compare {c:#x}, so it returned {c:#x}, not {:#x}",
                                r.unwrap_or(0)
                            ));
                        }
                        Some(c)
                    }
                    (Some(t), Some(c)) => {
                        steps.push((
                            OpStep {
                                op: AtomicOp::Cas,
                                ty: m.ty,
                                env: m.env,
                                src: [c, lp.new_value(m.ty, m.env, c)?],
                            },
                            Observed {
                                ret: if t == 2 { r } else { None },
                                kept,
                                success: Some(false),
                            },
                        ));
                        r
                    }
                    _ => r,
                };
                steps.push((
                    success.clone(),
                    Observed {
                        ret: known,
                        kept,
                        success: None,
                    },
                ));
                first = match known {
                    Some(c) => Some(lp.new_value(m.ty, m.env, c)?),
                    None => None,
                };
            }
            out.insert((k, i), steps);
        }
    }
    Ok(Ok(out))
}

/// One shared location and its accesses.
struct Location<'a> {
    space: Space,
    addr: u64,
    members: &'a [ThreadId],
    instructions: usize,
}

impl Location<'_> {
    /// The location's verdict: `Ok(None)` a pass, `Ok(Some(why))` undecided, `Err` the
    /// mismatch. F16x2 is judged per half (A20).
    fn judge(
        &self,
        parts: &[Part<'_>],
        mems: &[&MemInstr],
        obs: &[Vec<Vec<Observed>>],
        loops: &BTreeMap<ThreadId, Thread>,
        fin: &State,
        budget: u64,
    ) -> Result<Result<Option<String>, Mismatch>, ModelError> {
        let (space, addr) = (self.space, self.addr);
        let m0 = mems[self.members[0].0];
        let bytes = m0.ty.bytes();
        let loc = Loc::Mem {
            space,
            addr,
            bytes: bytes as u8,
        };
        let init = parts[0]
            .state
            .memory(space)
            .read(addr, bytes)
            .ok_or_else(|| crate::internal!("initial {addr:#x}"))?;
        let Some(seen) = fin.memory(space).read(addr, bytes) else {
            return Ok(Err(Mismatch {
                loc,
                expected: None,
                observed: None,
                why: "the observed state has no memory here".into(),
            }));
        };
        let (halves, width, part_ty) = if m0.ty == DataType::F16x2 {
            (2, 16, DataType::F16)
        } else {
            (1, m0.ty.bits(), m0.ty)
        };
        let eq = match part_ty.float_format() {
            Some(f) if !m0.env.nan_exact => Equality::NanClass(f),
            _ => Equality::Bits,
        };
        let instrs: Vec<usize> = self.members.iter().map(|(k, _)| *k).collect();
        // A thread's block: its instruction and its SIMD-group (lane / SIMD width).
        let blocks: Vec<usize> = self
            .members
            .iter()
            .map(|&(k, i)| {
                let group = mems[k].accesses[i].lane / parts[k].state.simd_width.max(1);
                k * (crate::state::MAX_LANES as usize) + group as usize
            })
            .collect();
        let mut undecided = Vec::new();
        for p in 0..halves {
            let lo = p * width;
            let pm = mask(width);
            let threads: Vec<Thread> = self
                .members
                .iter()
                .map(|&(k, i)| {
                    if let Some(steps) = loops.get(&(k, i)) {
                        // Loops run on integer types only: the address is one part.
                        return steps.clone();
                    }
                    let m = mems[k];
                    let a = &m.accesses[i];
                    let step = OpStep {
                        op: m.op,
                        ty: part_ty,
                        env: m.env,
                        src: [(a.src[0] >> lo) & pm, (a.src[1] >> lo) & pm],
                    };
                    obs[k]
                        .iter()
                        .map(|row| {
                            let o = row[i];
                            (
                                step.clone(),
                                Observed {
                                    ret: o.ret.map(|r| (r >> lo) & pm),
                                    kept: o.kept >> lo,
                                    success: o.success,
                                },
                            )
                        })
                        .collect()
                })
                .collect();
            let (init_p, seen_p) = ((init >> lo) & pm, (seen >> lo) & pm);
            let half = if halves == 2 {
                format!(" (half {p})")
            } else {
                String::new()
            };
            let ops: usize = threads.iter().map(Vec::len).sum();
            let folded = fold_if_commuting(init_p, &threads);
            // When the operations commute, the final value is known whatever they returned:
            // a different one fails at once; with nothing observed, the same one passes.
            if let Some(f) = folded
                && !eq.eq(f, seen_p)
            {
                return Ok(Err(Mismatch {
                    loc,
                    expected: Some(f),
                    observed: Some(seen),
                    why: format!(
                        "no order of the {ops} operations of {} instructions on {addr:#x}{half}, each thread in its own order, produces the observed final value: these operations commute, so every order ends at the expected value",
                        self.instructions
                    ),
                }));
            }
            if folded.is_some() && commutative_final(init_p, &threads).is_some() {
                continue;
            }
            let history = History {
                init: init_p,
                threads: &threads,
                instrs: &instrs,
                blocks: &blocks,
                final_value: Some(seen_p),
            };
            let checked = check_history(&history, eq, budget)?;
            match (checked.verdict, checked.reason) {
                (Verdict::Pass { .. }, _) => {}
                (Verdict::Fail { longest_prefix, .. }, reason) => {
                    let why = match reason {
                        Reason::Walk(w) => format!(": {w}"),
                        _ => format!(
                            " (longest consistent prefix: {} of {ops})",
                            longest_prefix.len()
                        ),
                    };
                    return Ok(Err(Mismatch {
                        loc,
                        expected: folded,
                        observed: Some(seen),
                        why: format!(
                            "no order of the {ops} operations of {} instructions on {addr:#x}{half}, each thread in its own order, produces the observed returns and final value{why}",
                            self.instructions
                        ),
                    }));
                }
                (Verdict::Undecided { explored }, reason) => {
                    undecided.push(format!(
                        "concurrent checker on {addr:#x}{half} ({ops} operations): {}",
                        match reason {
                            Reason::TooMany if folded.is_some() => format!(
                                "the operations commute and the final value is theirs, but their observed returns are more than {MAX_SEARCHED} operations to order, and no candidate schedule produces them"
                            ),
                            Reason::TooMany => format!(
                                "more than {MAX_SEARCHED} operations that do not all commute, and no candidate schedule produces the observation"
                            ),
                            _ => format!("budget of {budget} states ran out after {explored} states"),
                        }
                    ));
                }
            }
        }
        Ok(Ok((!undecided.is_empty()).then(|| undecided.join("; "))))
    }
}
