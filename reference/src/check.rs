//! Judges an observed outcome against the reference: every location the instruction does not
//! race on must equal the reference's final state (up to the bits the documents leave open);
//! every address that lanes race on goes to the race checker, which accepts any order and any
//! alternative the documents allow.

use crate::error::ModelError;
use crate::exec::{Resolved, resolve};
use crate::float;
use crate::ir::{Dest, Instr, Lowered, MemInstr, SameAddress, Upper};
use crate::outcome::{Allowed, Completed};
use crate::race::OpStep;
use crate::race::{self, Observed, Problem};
use crate::state::{Loc, State};
use crate::types::{DataType, mask, sext};
use std::collections::{BTreeMap, BTreeSet};

/// One location where the observation differs from what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Where.
    pub loc: Loc,
    /// What the reference computed (its canonical order), if anything.
    pub expected: Option<u64>,
    /// What was observed, if anything.
    pub observed: Option<u64>,
    /// Why, for people.
    pub why: String,
}

/// The answer for one observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// The observation is allowed.
    Pass,
    /// It is not.
    Fail(Vec<Mismatch>),
    /// The race checker ran out of budget; never a pass.
    Undecided(String),
}

/// Compares an observed completed state with the reference's.
pub fn judge(
    lowered: &Lowered,
    initial: &State,
    reference: &Completed,
    observed: &State,
    budget: u64,
) -> Result<Judgement, ModelError> {
    crate::exec::validate(lowered)?;
    // Every front end lowers a returned value to fields at bit 0 of their elements (the IR
    // allows more, the judge does not read it): say so rather than judge bits it cannot place.
    if let Instr::Mem(m) = &lowered.instr
        && let Some(a) = m
            .accesses
            .iter()
            .find(|a| dest_fields(&a.dst).iter().any(|f| f.lo != 0))
    {
        return Err(crate::internal!(
            "lane {}: a destination field above bit 0 cannot be judged",
            a.lane
        ));
    }
    let mut racy_regs: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut racy_mem: BTreeSet<(crate::types::Space, u64)> = BTreeSet::new();
    let mut groups: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    let mut mem_instr: Option<(&MemInstr, Vec<Resolved>)> = None;
    if let Instr::Mem(m) = &lowered.instr
        && let Ok(resolved) = resolve(m, initial)
    {
        for (i, (a, r)) in m.accesses.iter().zip(&resolved).enumerate() {
            if let Resolved::Mem(addr) = r {
                groups.entry(*addr).or_default().push(i);
                for f in dest_fields(&a.dst) {
                    racy_regs.insert((f.name.clone(), f.idx));
                }
            }
        }
        for addr in groups.keys() {
            for b in 0..m.ty.bytes() {
                racy_mem.insert((m.space, addr + b));
            }
        }
        mem_instr = Some((m, resolved));
    }
    let mut mismatches = compare_plain(reference, observed, &racy_regs, &racy_mem);
    let mut undecided = Vec::new();
    if let Some((m, _)) = mem_instr {
        for (addr, members) in &groups {
            match judge_address(m, *addr, members, initial, observed, budget)? {
                AddressVerdict::Pass => {}
                AddressVerdict::Fail(mut ms) => mismatches.append(&mut ms),
                AddressVerdict::Undecided(why) => undecided.push(why),
            }
        }
    }
    Ok(if !mismatches.is_empty() {
        Judgement::Fail(mismatches)
    } else if !undecided.is_empty() {
        Judgement::Undecided(undecided.join("; "))
    } else {
        Judgement::Pass
    })
}

fn dest_fields(d: &Dest) -> Vec<&crate::ir::RegField> {
    match d {
        Dest::None => vec![],
        Dest::Fields(f) => f.iter().collect(),
        Dest::CasWeak { ok, expected } => ok.iter().chain(std::iter::once(expected)).collect(),
    }
}

/// The most mismatches one judgement lists (issue 7, D3): an answer that differs everywhere
/// costs a bounded report, not one entry per byte.
pub const MAX_MISMATCHES: usize = 256;

/// Exact comparison (with open fields) of everything outside the racing locations.
fn compare_plain(
    reference: &Completed,
    observed: &State,
    racy_regs: &BTreeSet<(String, u32)>,
    racy_mem: &BTreeSet<(crate::types::Space, u64)>,
) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let expected = &reference.state;
    let names: BTreeSet<&String> = expected.regs.keys().chain(observed.regs.keys()).collect();
    for name in names {
        let e = expected.regs.get(name);
        let o = observed.regs.get(name);
        let n = e
            .map_or(0, |r| r.elems.len())
            .max(o.map_or(0, |r| r.elems.len()));
        for idx in 0..n as u32 {
            let ev = e.and_then(|r| r.elems.get(idx as usize).copied());
            let ov = o.and_then(|r| r.elems.get(idx as usize).copied());
            // Equal values are admitted whatever the open fields (`admits`); the location is
            // made only for values that differ.
            if ev == ov || racy_regs.contains(&(name.clone(), idx)) {
                continue;
            }
            let loc = Loc::Reg {
                name: name.clone(),
                idx,
            };
            if !admits(reference, &loc, ev, ov) {
                out.push(Mismatch {
                    loc,
                    expected: ev,
                    observed: ov,
                    why: "differs".into(),
                });
                if out.len() >= MAX_MISMATCHES {
                    return out;
                }
            }
        }
    }
    differing_bytes(
        expected,
        observed,
        &|space, addr| racy_mem.contains(&(space, addr)),
        "differs",
        &mut out,
    );
    out
}

/// Adds to `out` a mismatch saying `why` for each memory byte where `observed` differs from
/// `expected`, outside the bytes `skip` names, while `out` holds fewer than
/// [`MAX_MISMATCHES`].
pub(crate) fn differing_bytes(
    expected: &State,
    observed: &State,
    skip: &dyn Fn(crate::types::Space, u64) -> bool,
    why: &str,
    out: &mut Vec<Mismatch>,
) {
    for space in [crate::types::Space::Global, crate::types::Space::Shared] {
        for span in expected.memory(space).diff(observed.memory(space)) {
            for (addr, ev, ov) in span.bytes() {
                if skip(space, addr) {
                    continue;
                }
                if out.len() >= MAX_MISMATCHES {
                    return;
                }
                out.push(Mismatch {
                    loc: Loc::Mem {
                        space,
                        addr,
                        bytes: 1,
                    },
                    expected: ev.map(u64::from),
                    observed: ov.map(u64::from),
                    why: why.into(),
                });
            }
        }
    }
}

/// Whether the observed register value is allowed given the reference's value and open fields.
/// A register's open fields are the bits the documents leave undefined (unspecified upper bits,
/// undefined shuffle lanes): any value. A field of another kind would be compared exactly.
fn admits(reference: &Completed, loc: &Loc, expected: Option<u64>, observed: Option<u64>) -> bool {
    let (Some(e), Some(o)) = (expected, observed) else {
        return expected == observed;
    };
    let covered = reference
        .open
        .iter()
        .filter(|(l, f)| l == loc && f.allowed == Allowed::Any)
        .fold(0u64, |m, (_, f)| m | f.mask());
    (e ^ o) & !covered == 0
}

enum AddressVerdict {
    Pass,
    Fail(Vec<Mismatch>),
    Undecided(String),
}

/// The race checker on one address (each half on its own for F16x2, A20).
fn judge_address(
    m: &MemInstr,
    addr: u64,
    members: &[usize],
    initial: &State,
    observed: &State,
    budget: u64,
) -> Result<AddressVerdict, ModelError> {
    let bytes = m.ty.bytes();
    let loc = Loc::Mem {
        space: m.space,
        addr,
        bytes: bytes as u8,
    };
    let init = initial
        .memory(m.space)
        .read(addr, bytes)
        .ok_or_else(|| crate::internal!("initial {addr:#x}"))?;
    let fin = observed.memory(m.space).read(addr, bytes);
    let Some(fin) = fin else {
        return Ok(AddressVerdict::Fail(vec![Mismatch {
            loc,
            expected: None,
            observed: None,
            why: "the observed state has no memory at this address".into(),
        }]));
    };
    // Observed returns, plus checks of destination bits the op does not decide.
    let mut obs = Vec::new();
    let mut problems = Vec::new();
    for &i in members {
        let a = &m.accesses[i];
        match observe(a, m.ty, initial, observed) {
            Ok(o) => obs.push(o),
            Err(mismatch) => problems.push(mismatch),
        }
    }
    if !problems.is_empty() {
        return Ok(AddressVerdict::Fail(problems));
    }
    let (parts, width): (u32, u32) = if m.ty == DataType::F16x2 {
        (2, 16)
    } else {
        (1, m.ty.bits())
    };
    let part_ty = if m.ty == DataType::F16x2 {
        DataType::F16
    } else {
        m.ty
    };
    // Any NaN matches any NaN where the profile allows it; `fmt` is `None` for integers.
    let nan_lenient = !m.env.nan_exact;
    let fmt = part_ty.float_format();
    let eq = move |model: u64, seen: u64| {
        model == seen
            || (nan_lenient
                && fmt.is_some_and(|f| float::is_nan(f, model) && float::is_nan(f, seen)))
    };
    let single = members.len() == 1 || m.same_address == SameAddress::AnyOrder;
    for p in 0..parts {
        let lo = p * width;
        let pm = mask(width);
        let ops: Vec<(OpStep, Observed)> = members
            .iter()
            .zip(&obs)
            .map(|(&i, o)| {
                let a = &m.accesses[i];
                let src = [(a.src[0] >> lo) & pm, (a.src[1] >> lo) & pm];
                let ret = o.ret.map(|r| (r >> lo) & pm);
                (
                    OpStep {
                        op: m.op,
                        ty: part_ty,
                        env: m.env,
                        src,
                    },
                    Observed {
                        ret,
                        kept: o.kept >> lo,
                        success: o.success,
                    },
                )
            })
            .collect();
        let problem = Problem {
            init: (init >> lo) & pm,
            ops: &ops,
            final_value: Some((fin >> lo) & pm),
        };
        let verdict = if single {
            race::check(&problem, &eq, budget)?
        } else {
            race::check_program_order(&problem, &eq)?
        };
        match verdict {
            race::Verdict::Pass { .. } => {}
            race::Verdict::Fail { longest_prefix, .. } => {
                let lanes: Vec<u32> = members.iter().map(|&i| m.accesses[i].lane).collect();
                return Ok(AddressVerdict::Fail(vec![Mismatch {
                    loc,
                    expected: None,
                    observed: Some(fin),
                    why: format!(
                        "no allowed order of lanes {lanes:?} on {:#x}{} produces the observed returns and final value (longest consistent prefix: {} of {})",
                        addr,
                        if parts == 2 {
                            format!(" (half {p})")
                        } else {
                            String::new()
                        },
                        longest_prefix.len(),
                        members.len()
                    ),
                }]));
            }
            race::Verdict::Undecided { explored } => {
                return Ok(AddressVerdict::Undecided(format!(
                    "race checker budget of {budget} states ran out on {addr:#x} after {explored}"
                )));
            }
        }
    }
    Ok(AddressVerdict::Pass)
}

/// What an access was observed to return, read back from its destination, or a mismatch in
/// destination bits that do not depend on the order.
pub(crate) fn observe(
    a: &crate::ir::Access,
    ty: DataType,
    initial: &State,
    observed: &State,
) -> Result<Observed, Mismatch> {
    let read = |name: &str, idx: u32| observed.elem(name, idx);
    let missing = |name: &str, idx: u32| Mismatch {
        loc: Loc::Reg {
            name: name.to_string(),
            idx,
        },
        expected: None,
        observed: None,
        why: "the observed state lacks this destination".into(),
    };
    match &a.dst {
        Dest::None => Ok(Observed::default()),
        Dest::Fields(fields) => {
            let mut value = 0u64;
            let mut shift = 0;
            for f in fields {
                let e = read(&f.name, f.idx).ok_or_else(|| missing(&f.name, f.idx))?;
                // Fields start at bit 0: every front end lowers them so (`judge` checks it).
                let part = e & mask(f.bits);
                value |= part << shift;
                shift += f.bits;
                let top = f.bits;
                let before = initial.elem(&f.name, f.idx).unwrap_or(0);
                let (want, width) = match f.upper {
                    Upper::Keep => (Some(before >> top), 64),
                    Upper::Zero { width } => (Some(0), width),
                    Upper::Sign { width } => {
                        (Some((sext(part, f.bits) >> f.bits.min(63)) as u64), width)
                    }
                    Upper::Unspecified { .. } => (None, 64),
                };
                let upper_bits = width.saturating_sub(top);
                if let Some(w) = want
                    && upper_bits > 0
                    && (e >> top) & mask(upper_bits) != w & mask(upper_bits)
                {
                    return Err(Mismatch {
                        loc: Loc::Reg {
                            name: f.name.clone(),
                            idx: f.idx,
                        },
                        expected: None,
                        observed: Some(e),
                        why: format!("bits above {top} should be {:?}", f.upper),
                    });
                }
            }
            // Fields narrower than the datum (a SASS pair ending in RZ) keep only the low bits.
            Ok(Observed {
                ret: Some(value),
                kept: if shift < ty.bits() {
                    mask(shift)
                } else {
                    u64::MAX
                },
                success: None,
            })
        }
        Dest::CasWeak { ok, expected } => {
            let before =
                initial.elem(&expected.name, expected.idx).unwrap_or(0) & mask(expected.bits);
            let after = read(&expected.name, expected.idx)
                .ok_or_else(|| missing(&expected.name, expected.idx))?
                & mask(expected.bits);
            match ok {
                Some(okf) => {
                    let flag =
                        read(&okf.name, okf.idx).ok_or_else(|| missing(&okf.name, okf.idx))? & 1
                            != 0;
                    if flag && after != before {
                        return Err(Mismatch {
                            loc: Loc::Reg {
                                name: expected.name.clone(),
                                idx: expected.idx,
                            },
                            expected: Some(before),
                            observed: Some(after),
                            why: "a successful compare-exchange must leave `expected` unchanged"
                                .into(),
                        });
                    }
                    // On success the old value equalled `expected`; on failure it is in `expected`.
                    Ok(Observed {
                        ret: Some(after),
                        kept: u64::MAX,
                        success: Some(flag),
                    })
                }
                None => Ok(Observed::ret(after)),
            }
        }
    }
}
