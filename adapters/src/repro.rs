//! Standalone reproducers (issue 30, point 5): what a semantic-level back end dispatched for one
//! case ([`Dispatch`]: the program exactly as it ran, every kernel argument, the launch
//! geometry) and what the reference model expects of the buffers afterwards ([`Check`]), so
//! that a back end's `repro.rs` can write one Python script (standard library only, ctypes) that
//! runs the dispatch on the driver without atomcts and prints expected and observed words.
//! The shared parts of those scripts (header, the expected table, the comparison and the exit
//! codes) are here ([`script`]); each back end writes its own host code.

use crate::plan::Plan;
use crate::shuffle::ShufflePlan;
use atomcts_reference::check::{Judgement, judge};
use atomcts_reference::ir::{AtomicOp, Lowered};
use atomcts_reference::outcome::{Completed, Outcome};
use atomcts_reference::state::{Loc, State};
use atomcts_reference::types::Space;

mod concurrent;
mod order;
mod script;
pub mod shim;
pub use concurrent::{
    ConcurrentChecks, MAX_FINALS, ORDER_PAIRS, Rets, concurrent_checks, final_values,
};
pub use order::{ORDER_BUDGET, ORDER_CHECK, ORDER_TABLE, Order, OrderThread, SWEEP_STEPS};
pub use script::{About, py_bytes, py_str, sanitise, script};

/// The program a back end ran, in its own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Program {
    /// OpenCL C source, its build options and its kernel's name.
    OpenClC {
        /// The source.
        source: String,
        /// `clBuildProgram` options.
        options: String,
        /// The kernel's name.
        entry: String,
    },
    /// A SPIR-V compute module: its words, entry point and disassembly, and the WGSL it was
    /// compiled from (the WGSL route).
    SpirV {
        /// The words.
        words: Vec<u32>,
        /// The entry point.
        entry: String,
        /// The disassembly (for the script's comment).
        disassembly: String,
        /// The WGSL source naga compiled.
        wgsl: Option<String>,
        /// The sub-group size the pipeline requires, with full sub-groups (a SIMD-group
        /// function's width); `None` for a module that needs none.
        subgroup_size: Option<u32>,
    },
    /// A WGSL shader as a browser's WebGPU compiles it (entry point `main`).
    Wgsl {
        /// The WGSL source.
        source: String,
        /// The sub-group size the shader needs (WebGPU cannot require one: the adapter must
        /// report exactly this size), or `None`.
        subgroup_size: Option<u32>,
    },
    /// A PTX module and its entry.
    Ptx {
        /// The PTX text.
        text: String,
        /// The entry to launch.
        entry: String,
    },
    /// A semantic-level shim's body (PROTOCOL.md, "Standalone reproducers"): Python in the
    /// implementation's own API that runs the case and returns what it observed ([`shim`]).
    Shim {
        /// The body's source.
        body: String,
        /// The Python modules it imports beyond the standard library.
        modules: Vec<String>,
    },
}

/// One kernel argument, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A global buffer: its name (for the printout) and its initial bytes.
    Buffer {
        /// What it holds (`mem`, `ret`, ...).
        name: String,
        /// Its bytes before the launch.
        init: Vec<u8>,
    },
    /// A 32-bit unsigned scalar.
    U32(u32),
    /// A 64-bit unsigned scalar (not a pointer).
    U64(u64),
    /// A work-group local buffer of this many bytes (no value).
    Local(u64),
}

/// One word the reproducer compares after the launch: `bytes` bytes at byte `offset` of
/// argument `arg` (a [`Arg::Buffer`]), little-endian.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What the word is (`mem 0x1000`, `ret item 0`, `iterations thread 0`).
    pub label: String,
    /// The argument (a buffer).
    pub arg: usize,
    /// Byte offset in the buffer.
    pub offset: usize,
    /// Width in bytes (1..=8).
    pub bytes: usize,
    /// The bits the documents fix (the others are free).
    pub mask: u64,
    /// Every value the documents allow (on the fixed bits); the reference's pick first.
    pub allowed: Vec<u64>,
    /// Where the profile lets any NaN of a format stand for any other and the documents allow
    /// a NaN here: (format mask, exponent mask, fraction mask); any NaN then matches.
    pub any_nan: Option<(u64, u64, u64)>,
    /// A requirement of the launch rather than a result (the sub-group size a work-item ran
    /// in): a value outside `allowed` means the driver did not give the launch the case needs,
    /// and the script says it cannot run (exit 2) instead of judging.
    pub required: bool,
}

/// A dispatch, ready to be written as a standalone script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// The program as it ran.
    pub program: Program,
    /// The kernel's arguments, in order.
    pub args: Vec<Arg>,
    /// Work-items in all (one dimension).
    pub global: usize,
    /// Work-items per work-group.
    pub local: usize,
    /// The words compared after the launch.
    pub checks: Vec<Check>,
    /// What the script does not judge, each said in one line (printed and in the header).
    pub unjudged: Vec<String>,
    /// The order checks of a concurrent launch's returned values, one per shared address.
    pub orders: Vec<Order>,
}

/// The race budget of the judge that decides whether a word's observed value is another
/// outcome the documents allow ([`single_checks`]).
pub const JUDGE_BUDGET: u64 = 1 << 16;

pub(crate) fn read(bytes: &[u8], offset: usize, n: usize) -> u64 {
    let mut w = [0u8; 8];
    for (i, b) in bytes.iter().skip(offset).take(n).enumerate() {
        w[i] = *b;
    }
    u64::from_le_bytes(w)
}

pub(crate) fn width_mask(bytes: usize) -> u64 {
    if bytes >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * bytes)) - 1
    }
}

/// The bits of `bytes` bytes of memory at `addr` the reference leaves open.
fn open_bits(c: &Completed, space: Space, addr: u64, bytes: u64) -> u64 {
    let mut open = 0u64;
    for (loc, field) in &c.open {
        if let Loc::Mem {
            space: s,
            addr: a,
            bytes: n,
        } = loc
            && *s == space
        {
            for byte in 0..bytes {
                let at = addr + byte;
                if at >= *a && at < *a + u64::from(*n) {
                    // Bits of the location's field that fall in this byte.
                    let lo = 8 * (at - a) as u32;
                    let f = if field.bits >= 64 {
                        u64::MAX
                    } else {
                        ((1u64 << field.bits) - 1) << field.lo
                    };
                    let in_byte = (f >> lo) & 0xff;
                    open |= in_byte << (8 * byte);
                }
            }
        }
    }
    open
}

/// Whether the final value of memory some items share is the same in every order: every op
/// that writes it commutes with every other (integer add and subtract together; one of and, or,
/// xor, min, max alone).
pub(crate) fn order_free(ops: &[AtomicOp], float: bool) -> bool {
    use AtomicOp::*;
    if float {
        return false;
    }
    let additive = |o: &AtomicOp| matches!(o, Add | Sub | Inc | Dec);
    ops.iter().all(additive)
        || ops
            .first()
            .is_some_and(|f| matches!(f, And | Or | Xor | Min | Max) && ops.iter().all(|o| o == f))
}

/// A [`Check`]'s `any_nan`: where the profile is not NaN-exact (the reference's
/// `Equality::NanClass`) and a value allowed is a NaN of `ty`'s format, any NaN of it is
/// allowed (format mask, exponent mask, fraction mask); else `None`.
pub(crate) fn any_nan(
    ty: atomcts_reference::types::DataType,
    env: &atomcts_reference::ir::Env,
    allowed: &[u64],
) -> Option<(u64, u64, u64)> {
    ty.float_format()
        .filter(|f| {
            !env.nan_exact
                && allowed
                    .iter()
                    .any(|v| atomcts_reference::float::is_nan(*f, *v))
        })
        .map(|f| (f.mask(), f.exp_mask(), f.frac_mask()))
}

/// The [`Dispatch`] of a single-instruction launch of `r` (the program, its arguments, and
/// `(global, local)` work-items): `r` lowered as every back end lowers it
/// ([`crate::back::lower`]) and its checks from the reference ([`single_checks`] with `args_at`,
/// at [`JUDGE_BUDGET`]) against `observed_mem`, the memory buffer read back.
pub fn single_dispatch(
    r: &crate::Request<'_>,
    plan: &Plan,
    observed_mem: &[u8],
    args_at: (usize, usize, usize),
    (program, args): (Program, Vec<Arg>),
    (global, local): (usize, usize),
) -> Result<Dispatch, String> {
    let lowered = crate::back::lower(r).map_err(|e| format!("{e:?}"))?;
    let (checks, unjudged) =
        single_checks(plan, &lowered, r.state, observed_mem, args_at, JUDGE_BUDGET)?;
    Ok(Dispatch {
        program,
        args,
        global,
        local,
        checks,
        unjudged,
        orders: Vec::new(),
    })
}

/// The checks of a single-instruction launch: the memory the plan's items address (argument
/// `mem_arg`, laid out as [`Plan::layout`]) and each item's returned value (argument `ret_arg`,
/// `ret_stride` bytes per item), from the reference's outcome on `state`. `observed` is the
/// memory buffer the back end read back: where it differs from the reference's pick, the
/// judge says whether it is another outcome the documents allow (then both are listed).
pub fn single_checks(
    plan: &Plan,
    lowered: &Lowered,
    state: &State,
    observed_mem: &[u8],
    (mem_arg, ret_arg, ret_stride): (usize, usize, usize),
    budget: u64,
) -> Result<(Vec<Check>, Vec<String>), String> {
    let c = match atomcts_reference::exec::execute(lowered, state).map_err(|e| e.to_string())? {
        Outcome::Completed(c) => c,
        other => return Err(format!("the reference's outcome is {}", other.kind())),
    };
    let layout = plan.layout();
    let pick = layout.bytes(&c.state, plan.space);
    let initial = layout.bytes(state, plan.space);
    let w = plan.ty.bytes() as usize;
    let float = plan.ty.float_format().is_some();
    let raced = plan.has_shared_addresses();
    let mut checks = Vec::new();
    let mut unjudged = Vec::new();
    let mut offsets: Vec<(u64, u32)> = plan.items.iter().map(|i| (i.offset, i.lane)).collect();
    offsets.sort_unstable();
    offsets.dedup_by_key(|o| o.0);
    for (off, _) in &offsets {
        let o = *off as usize;
        let addr = layout
            .ranges
            .iter()
            .find(|r| *off >= r.offset && *off < r.offset + r.len)
            .map_or(*off, |r| r.base + (off - r.offset));
        let shared = plan.items.iter().filter(|i| i.offset == *off).count() > 1;
        let mask = !open_bits(&c, plan.space, addr, w as u64) & width_mask(w);
        let p = read(&pick, o, w);
        let mut allowed = vec![p];
        if shared && !order_free(&[plan.op], float) {
            // Every value some order of the work-items on it gives (the concurrent scripts'
            // enumeration), else not judged here.
            match race_finals(plan, *off, read(&initial, o, w)) {
                Ok(finals) if finals.contains(&p) => {
                    if finals.len() > 1 {
                        unjudged.push(format!(
                            "which order ran on memory at {addr:#x} (several work-items on it): the script accepts each of the {} final values some order gives",
                            finals.len()
                        ));
                    }
                    allowed.extend(finals.into_iter().filter(|v| *v != p));
                }
                _ => {
                    unjudged.push(format!(
                        "memory at {addr:#x}: several work-items on it, and its final value depends on their order; atomcts's order checker judges it, not this script"
                    ));
                    continue;
                }
            }
        }
        let seen = read(observed_mem, o, w);
        if (seen ^ p) & mask != 0 && !shared {
            // Another outcome the documents allow? The reference's state with this word as seen.
            let mut bytes = pick.clone();
            bytes[o..o + w].copy_from_slice(&seen.to_le_bytes()[..w]);
            let mut alt = c.state.clone();
            layout.store(&bytes, &mut alt, plan.space);
            if let Ok(Judgement::Pass) = judge(lowered, state, &c, &alt, budget) {
                allowed.push(seen);
            }
        }
        checks.push(Check {
            label: format!("{} {addr:#010x}", plan.space.name()),
            arg: mem_arg,
            offset: o,
            bytes: w,
            mask,
            allowed,
            any_nan: None,
            required: false,
        });
    }
    let race_rets = if raced {
        race_returns(plan, &initial)
    } else {
        Err(String::new())
    };
    match (raced, returned_values(plan, lowered, state, &c, &initial, &pick, budget)) {
        (true, _) => match race_rets {
            Ok(rets) => {
                unjudged.push(
                    "the returned values together (several work-items share an address): each is checked against every value some order returns to it, not for one order of all; atomcts's order checker judges them together".into(),
                );
                for (i, (item, allowed)) in plan.items.iter().zip(rets).enumerate() {
                    if item.returns {
                        checks.push(Check {
                            label: format!("ret item {i} (lane {})", item.lane),
                            arg: ret_arg,
                            offset: i * ret_stride,
                            bytes: w,
                            mask: width_mask(w),
                            any_nan: any_nan(plan.ty, &plan.env, &allowed),
                            allowed,
                            required: false,
                        });
                    }
                }
            }
            Err(_) => unjudged.push(
                "the returned values (several work-items share an address): they depend on the order; atomcts's order checker judges them, not this script".into(),
            ),
        },
        (false, None) => unjudged.push(
            "the returned values: neither what memory held before nor what it holds after is what the model's outcome returns".into(),
        ),
        (false, Some(olds)) => {
            for (i, (item, old)) in plan.items.iter().zip(olds).enumerate() {
                if item.returns {
                    checks.push(Check {
                        label: format!("ret item {i} (lane {})", item.lane),
                        arg: ret_arg,
                        offset: i * ret_stride,
                        bytes: w,
                        mask: width_mask(w),
                        allowed: vec![old],
                        any_nan: None,
                        required: false,
                    });
                }
            }
        }
    }
    if plan.op == AtomicOp::Cas {
        unjudged.push(
            "a compare-exchange's success flags (memory and the returned values show what it did)"
                .into(),
        );
    }
    Ok((checks, unjudged))
}

/// Every final value of the datum at buffer offset `off` (from `init`) that some order of the
/// plan's work-items on it gives ([`final_values`]); `Err` where it is not listed standalone:
/// F16x2 data, too many orders, or a NaN the profile leaves free.
fn race_finals(plan: &Plan, off: u64, init: u64) -> Result<Vec<u64>, String> {
    if plan.ty == atomcts_reference::types::DataType::F16x2 {
        return Err("F16x2 data".into());
    }
    let mut classes: Vec<(atomcts_reference::race::OpStep, u32)> = Vec::new();
    for i in plan.items.iter().filter(|i| i.offset == off) {
        let step = atomcts_reference::race::OpStep {
            op: plan.op,
            ty: plan.ty,
            env: plan.env,
            src: i.src,
        };
        match classes.iter_mut().find(|(s, _)| *s == step) {
            Some((_, n)) => *n += 1,
            None => classes.push((step, 1)),
        }
    }
    let finals = final_values(init, &classes)?;
    if let Some(f) = plan.ty.float_format()
        && !plan.env.nan_exact
        && finals
            .iter()
            .any(|v| atomcts_reference::float::is_nan(f, *v))
    {
        return Err("a NaN the profile leaves free".into());
    }
    Ok(finals)
}

/// Every value some order of the work-items on its address returns to each work-item of a
/// raced launch (memory from `initial`, the buffer before the launch): the union over the
/// orders, reached as (work-items left, memory value) states of each address, at most
/// [`ORDER_PAIRS`] of them. `Err` for F16x2 data, past the bound, or a NaN the profile leaves
/// free.
fn race_returns(plan: &Plan, initial: &[u8]) -> Result<Vec<Vec<u64>>, String> {
    use std::collections::{BTreeSet, HashSet};
    if plan.ty == atomcts_reference::types::DataType::F16x2 {
        return Err("F16x2 data".into());
    }
    let w = plan.ty.bytes() as usize;
    let mut rets: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); plan.items.len()];
    let mut offsets: Vec<u64> = plan.items.iter().map(|i| i.offset).collect();
    offsets.sort_unstable();
    offsets.dedup();
    let mut visited = 0usize;
    for off in offsets {
        let members: Vec<usize> = (0..plan.items.len())
            .filter(|&i| plan.items[i].offset == off)
            .collect();
        if members.len() > 63 {
            return Err("more than 63 work-items on one address".into());
        }
        let all = (1u64 << members.len()) - 1;
        let mut seen: HashSet<(u64, u64)> = HashSet::new();
        let mut stack = vec![(all, read(initial, off as usize, w))];
        while let Some((left, value)) = stack.pop() {
            if !seen.insert((left, value)) {
                continue;
            }
            visited += 1;
            if visited > ORDER_PAIRS {
                return Err("too many orders".into());
            }
            for (k, &i) in members.iter().enumerate() {
                if left & (1 << k) == 0 {
                    continue;
                }
                let step = atomcts_reference::race::OpStep {
                    op: plan.op,
                    ty: plan.ty,
                    env: plan.env,
                    src: plan.items[i].src,
                };
                use atomcts_reference::race::Step as _;
                for e in step.step(value).map_err(|e| e.to_string())? {
                    rets[i].insert(e.ret);
                    stack.push((left & !(1 << k), e.new));
                }
            }
        }
    }
    if let Some(f) = plan.ty.float_format()
        && !plan.env.nan_exact
        && rets
            .iter()
            .flatten()
            .any(|v| atomcts_reference::float::is_nan(f, *v))
    {
        return Err("a NaN the profile leaves free".into());
    }
    Ok(rets.into_iter().map(|r| r.into_iter().collect()).collect())
}

/// What each work-item of a launch with no shared address returns in the model's outcome `c`,
/// as the back end's result buffer holds it: what memory held before (`initial`, most ops) or
/// after (`pick`, an op that returns its new value): the one whose writeback
/// ([`Plan::finish`]) the judge passes; `None` when neither does.
fn returned_values(
    plan: &Plan,
    lowered: &Lowered,
    state: &State,
    c: &Completed,
    initial: &[u8],
    pick: &[u8],
    budget: u64,
) -> Option<Vec<u64>> {
    let w = plan.ty.bytes() as usize;
    let mask = width_mask(w);
    let other = match plan.space {
        Space::Global => plan.shared.bytes(state, Space::Shared),
        Space::Shared => plan.global.bytes(state, Space::Global),
    };
    let (global, shared) = match plan.space {
        Space::Global => (pick, other.as_slice()),
        Space::Shared => (other.as_slice(), pick),
    };
    [initial, pick].into_iter().find_map(|mem| {
        let old: Vec<u64> = plan
            .items
            .iter()
            .map(|i| read(mem, i.offset as usize, w))
            .collect();
        let ok = plan
            .items
            .iter()
            .zip(&old)
            .map(|(i, o)| plan.op != AtomicOp::Cas || (o & mask) == (i.src[0] & mask))
            .collect();
        let seen = plan
            .finish(
                lowered,
                state,
                global,
                shared,
                &crate::plan::Returned {
                    old: old.clone(),
                    ok,
                },
            )
            .ok()?;
        matches!(judge(lowered, state, c, &seen, budget), Ok(Judgement::Pass)).then_some(old)
    })
}

/// The checks of a SIMD-group function's launch: each active thread's result (argument
/// `ret_arg`, `stride` bytes a thread, its low `plan.bits` bits compared) from the reference's
/// outcome on `state`, the bits the documents leave open masked (a lane read from an inactive
/// thread: MSL §5.13, SPIR-V 1.6 §3.42.24), and, where the kernel writes them (`sizes`:
/// argument of 32-bit words, one per thread), the sub-group size each thread ran in as a
/// requirement of the launch (the case's SIMD width).
pub fn shuffle_checks(
    plan: &ShufflePlan,
    lowered: &Lowered,
    state: &State,
    (ret_arg, stride): (usize, usize),
    sizes: Option<usize>,
) -> Result<(Vec<Check>, Vec<String>), String> {
    let atomcts_reference::ir::Instr::Shuffle(s) = &lowered.instr else {
        return Err("not a SIMD-group function (a back-end bug)".into());
    };
    let c = match atomcts_reference::exec::execute(lowered, state).map_err(|e| e.to_string())? {
        Outcome::Completed(c) => c,
        other => return Err(format!("the reference's outcome is {}", other.kind())),
    };
    let w = (plan.bits / 8) as usize;
    let full = width_mask(w);
    let mut checks = Vec::new();
    let mut unjudged = Vec::new();
    let mut open_lanes = Vec::new();
    for &(lane, _) in &s.lanes {
        let value = c
            .state
            .elem(&s.dst, lane)
            .ok_or_else(|| format!("the reference wrote no `{}` for thread {lane}", s.dst))?;
        let mut mask = full;
        for (loc, field) in &c.open {
            if let Loc::Reg { name, idx } = loc
                && *name == s.dst
                && *idx == lane
            {
                let f = if field.bits >= 64 {
                    u64::MAX
                } else {
                    ((1u64 << field.bits) - 1) << field.lo
                };
                mask &= !f;
            }
        }
        if mask == 0 {
            open_lanes.push(lane.to_string());
            continue;
        }
        checks.push(Check {
            label: format!("{} thread {lane}", s.dst),
            arg: ret_arg,
            offset: lane as usize * stride,
            bytes: w,
            mask,
            allowed: vec![value & full],
            any_nan: None,
            required: false,
        });
    }
    if !open_lanes.is_empty() {
        unjudged.push(format!(
            "the result of thread(s) {}: the documents leave it undefined (it reads an inactive thread)",
            open_lanes.join(", ")
        ));
    }
    if plan.threads.iter().any(|t| !t.active) {
        unjudged.push(
            "inactive threads and padding: they take no part in the exchange, their results are not read".into(),
        );
    }
    if let Some(arg) = sizes {
        for t in 0..plan.threads.len() {
            checks.push(Check {
                label: format!("sub-group size of work-item {t}"),
                arg,
                offset: 4 * t,
                bytes: 4,
                mask: u64::from(u32::MAX),
                allowed: vec![u64::from(plan.width)],
                any_nan: None,
                required: true,
            });
        }
    }
    Ok((checks, unjudged))
}

#[cfg(test)]
mod tests {
    use super::script::hex;
    use super::*;

    #[test]
    fn python_literals_escape() {
        assert_eq!(py_str("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(py_str("é"), "\"\\U000000e9\"");
        assert_eq!(py_bytes(&[0, 0xff]), "bytes.fromhex(\"00ff\")");
        assert_eq!(py_bytes(&[0xff, 0, 0]), "bytes.fromhex(\"ff\") + bytes(2)");
        assert_eq!(py_bytes(&[0; 3]), "bytes(3)");
        assert_eq!(py_bytes(&[]), "bytes(0)");
    }

    /// Runs the script of `d` whose host returns `buffers` (Python expressions); its exit code
    /// and output.
    fn run_script(d: &Dispatch, buffers: &[&str]) -> (Option<i32>, String) {
        let host = format!("def run():\n    return [{}]\n", buffers.join(", "));
        run_host(d, &host, &[])
    }

    /// Runs the script of `d` with the host code `host` and the command-line `args`.
    fn run_host(d: &Dispatch, host: &str, args: &[&str]) -> (Option<i32>, String) {
        let about = About {
            id: "t".into(),
            cite: "r".into(),
            adapter: "none".into(),
            env: Vec::new(),
            profile: "spirv".into(),
            status: "pass".into(),
        };
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(script(&about, d, "", host))
            .args(args)
            .output()
            .expect("python3 runs (the scripts need it)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    }

    /// A launch of one work-item whose script checks one word.
    fn one_word(check: Check) -> Dispatch {
        Dispatch {
            program: Program::Wgsl {
                source: String::new(),
                subgroup_size: None,
            },
            args: Vec::new(),
            global: 1,
            local: 1,
            checks: vec![check],
            unjudged: Vec::new(),
            orders: Vec::new(),
        }
    }

    #[test]
    fn a_final_value_that_may_be_any_nan_accepts_any_nan_of_its_format() {
        use atomcts_reference::float::Format;
        let f = Format::F32;
        let check = |any_nan| Check {
            label: "global 0x00001000".into(),
            arg: 0,
            offset: 0,
            bytes: 4,
            mask: 0xffff_ffff,
            allowed: vec![0x7fc0_0000, 0x3f80_0000],
            any_nan,
            required: false,
        };
        let d = |any_nan| one_word(check(any_nan));
        let nan = Some((f.mask(), f.exp_mask(), f.frac_mask()));
        let word = |v: u32| format!("bytes.fromhex({:?})", hex(&v.to_le_bytes()));
        let (code, out) = run_script(&d(nan), &[&word(0xffc0_0001)]);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("0x7fc00000 or 0x3f800000 or any NaN"), "{out}");
        for (any_nan, seen) in [(nan, 0x7f80_0000), (nan, 0x3f80_0001), (None, 0xffc0_0001)] {
            let (code, out) = run_script(&d(any_nan), &[&word(seen)]);
            assert_eq!(code, Some(1), "{seen:#x}: {out}");
        }
        let (code, _) = run_script(&d(None), &[&word(0x3f80_0000)]);
        assert_eq!(code, Some(0));
    }

    #[test]
    fn a_script_reads_its_order_checks_from_the_buffers() {
        use atomcts_reference::race::{OpStep, Step};
        // Two work-items add 1 once each from 5 (memory: argument 0; returned values: argument
        // 1, 8 bytes a slot, one slot each).
        let add = OpStep {
            op: AtomicOp::Add,
            ty: atomcts_reference::types::DataType::U32,
            env: atomcts_reference::ir::Env::default(),
            src: [1, 0],
        };
        let table = vec![
            (5..8)
                .map(|v| {
                    (
                        v,
                        add.step(v)
                            .unwrap()
                            .iter()
                            .map(|e| (e.new, e.ret, e.success))
                            .collect(),
                    )
                })
                .collect(),
        ];
        let thread = |slot: usize| OrderThread {
            kind: 0,
            iterations: 1,
            ret: Some((1, 8 * slot, 16, 8)),
            ok: None,
            cas_loop: None,
        };
        let d = Dispatch {
            program: Program::Wgsl {
                source: String::new(),
                subgroup_size: None,
            },
            args: Vec::new(),
            global: 2,
            local: 2,
            checks: Vec::new(),
            unjudged: Vec::new(),
            orders: vec![Order {
                label: "global 0x00001000".into(),
                init: 5,
                final_at: (0, 0, 4),
                nan: None,
                table,
                threads: vec![thread(0), thread(1)],
            }],
        };
        let mem = "bytes.fromhex(\"07000000\")";
        let (code, out) = run_script(
            &d,
            &[
                mem,
                "bytes.fromhex(\"0600000000000000\" \"0500000000000000\")",
            ],
        );
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("global 0x00001000: the returned values of its 2 operations and its final value fit one order"), "{out}");
        // Both returned 5: no order gives that.
        let (code, out) = run_script(
            &d,
            &[
                mem,
                "bytes.fromhex(\"0500000000000000\" \"0500000000000000\")",
            ],
        );
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("no order of its 2 operations"), "{out}");
    }

    /// `RUNS` launches: each is judged, one that differs among passing ones makes the script
    /// exit 1 and is the table shown; a bad `RUNS` is a usage error (2).
    #[test]
    fn a_race_that_shows_in_one_launch_of_several_fails_the_script() {
        let d = one_word(Check {
            label: "global 0x00001000".into(),
            arg: 0,
            offset: 0,
            bytes: 4,
            mask: 0xffff_ffff,
            allowed: vec![0x0000_0007],
            any_nan: None,
            required: false,
        });
        // The third launch loses an update: 6 for 7.
        let host = "N = [0]\ndef run():\n    N[0] += 1\n    return [bytes([6 if N[0] == 3 else 7, 0, 0, 0])]\n";
        let (code, out) = run_host(&d, host, &[]);
        assert_eq!(code, Some(0), "{out}");
        let (code, out) = run_host(&d, host, &["2"]);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("in all 2 launches"), "{out}");
        let (code, out) = run_host(&d, host, &["5"]);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("launch 3 of 5:"), "{out}");
        assert!(out.contains("0x00000006   <-- differs"), "{out}");
        assert!(
            out.contains("launches that differ: 1 of 5 (launch 3: 1)"),
            "{out}"
        );
        for bad in ["0", "x", "-1", "1000001"] {
            let (code, out) = run_host(&d, host, &[bad]);
            assert_eq!(code, Some(2), "{bad}: {out}");
            assert!(out.contains("usage:"), "{bad}: {out}");
        }
        let (code, out) = run_host(&d, host, &["1", "2"]);
        assert_eq!(code, Some(2), "{out}");
    }

    #[test]
    fn ids_become_file_names() {
        assert_eq!(sanitise("a/b::c d.e"), "a_b__c_d.e");
    }

    #[test]
    fn order_matters_unless_ops_commute() {
        use AtomicOp::*;
        assert!(order_free(&[Add, Sub], false));
        assert!(order_free(&[Or, Or], false));
        assert!(!order_free(&[Or, And], false));
        assert!(!order_free(&[Exch], false));
        assert!(!order_free(&[Add], true));
    }
}
