//! The concurrent judge on the answers of an implementation that runs the instructions really
//! concurrently and reports everything (issue 27, H6): seeded random interleavings of every
//! concurrent case of the corpus, as `atomcts::fuzzing::interleave` runs them (a thread-level random
//! schedule in program order, every kept return reported, compare-and-swap loops retrying with
//! random failed attempts, weak compare-exchanges failing spuriously now and then), must all
//! be decided and pass at the default budget, through the runner and before the judge alone.
//! Each answer with one value corrupted (a final value or a returned value that no order
//! gives, proven here without the judge's search) must fail.

use super::{PlantedConcurrent, lowered_and_serial, states_and_programs};
use atomcts::corpus::case::load;
use atomcts::fuzzing::interleave::random_interleaving;
use atomcts::fuzzing::plant::order_exists;
use atomcts::run::results::{Options, Status};
use atomcts::run::run_case;
use atomcts_adapters::concurrent::ConcurrentObservation;
use atomcts_reference::Profile;
use atomcts_reference::check::Judgement;
use atomcts_reference::concurrent::{
    Part, Serial, fold_if_commuting, is_identity, judge, locations,
};
use atomcts_reference::float;
use atomcts_reference::ir::{AtomicOp, Dest, Instr, Lowered, MemInstr};
use atomcts_reference::race::OpStep;
use atomcts_reference::race::{DEFAULT_BUDGET, Observed, Step};
use atomcts_reference::types::mask;
use std::collections::{BTreeMap, HashSet};

/// The seeds every concurrent case is judged on under the default profile (fixed: CI judges
/// the same answers in every run); under every other named profile, the first.
const SEEDS: std::ops::Range<u64> = 0..10;

/// Histories of at most this many steps on one location are brute-forced.
const BRUTE_FORCE_STEPS: usize = 32;

pub(super) type Thread = Vec<(OpStep, Observed)>;

/// The first of `v` with one bit flipped (lowest first) that `possible` refutes; `None` at the
/// first it cannot decide, or where it refutes none.
fn first_refuted(width: u32, v: u64, possible: impl Fn(u64) -> Option<bool>) -> Option<u64> {
    for b in 0..width {
        match possible(v ^ (1 << b)) {
            Some(false) => return Some(v ^ (1 << b)),
            Some(true) => {}
            None => return None,
        }
    }
    None
}

/// The runner's options under `profile`, at the default budget.
pub(super) fn options(profile: &Profile) -> Options {
    Options {
        profile: profile.clone(),
        race_budget: DEFAULT_BUDGET,
        cases_arg: "spec-cases".into(),
        adapter_arg: String::new(),
    }
}

/// The judge alone on answer `o` at the default budget: with every return and attempt
/// reported, or (`every_return` false) as an adapter that reports only the registers after
/// each thread's last iteration.
pub(super) fn judged(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    reference: &Serial,
    o: &Serial,
    every_return: bool,
) -> Result<Judgement, atomcts_reference::ModelError> {
    judge(
        parts,
        lowered,
        reference,
        &o.states,
        every_return.then_some(&o.returned),
        every_return.then_some(&o.attempts),
        DEFAULT_BUDGET,
    )
}

/// Runs `f` on a concurrent case's parts under `profile`, lowered, with the reference's
/// serialization.
pub(super) fn with_parts<R>(
    case: &atomcts::corpus::case::Case,
    profile: &Profile,
    f: impl FnOnce(&[Part<'_>], &[Lowered], &Serial) -> R,
) -> R {
    let (states, programs) = states_and_programs(case);
    let parts = atomcts::run::concurrent::parts(case, &programs, &states);
    let (lowered, reference) = lowered_and_serial(&parts, profile);
    f(&parts, &lowered, &reference)
}

/// Where a walk of these edges (value read, value left) from `init` that takes each once must
/// end: the one value left once less than it is held; `init` where every value balances.
/// `None` where the degrees allow no walk at all.
fn walk_end(init: u64, edges: &[(u64, u64)]) -> Option<u64> {
    let mut balance: BTreeMap<u64, i64> = BTreeMap::new();
    *balance.entry(init).or_default() += 1;
    for &(from, to) in edges {
        *balance.entry(from).or_default() -= 1;
        *balance.entry(to).or_default() += 1;
    }
    let open: Vec<(u64, i64)> = balance.into_iter().filter(|(_, b)| *b != 0).collect();
    match open.as_slice() {
        [] => Some(init),
        [(v, 1)] => Some(*v),
        _ => None,
    }
}

/// A step's edge (the value it read, the value it left) and its place in the answer
/// `(instruction, iteration, access)`.
type Edge = ((u64, u64), (usize, usize, usize));

/// One shared location of an answer, as the tests here read it.
struct Location {
    space: atomcts_reference::types::Space,
    addr: u64,
    bytes: u64,
    width: u32,
    init: u64,
    seen: u64,
    /// Each thread's steps with what the answer says it returned (a loop lane's are its
    /// compare-and-swap attempts, not judged here).
    threads: Vec<Thread>,
    /// The steps that change memory, for the commuting fold: a loop lane's successes (its
    /// update at the value it read), every other thread as above.
    changes: Vec<Thread>,
    /// Where every access keeps its return and each fixes its effect: each step's edge, with
    /// the step's place in the answer `(instruction, iteration, access)`.
    edges: Option<Vec<Edge>>,
    /// Whether a compare-and-swap loop accesses it (its threads above are not its steps).
    looped: bool,
    /// Whether a NaN is involved (any NaN may stand for another).
    nan: bool,
    /// Whether every value memory holds lies between the initial and the final value: every
    /// change is an integer add of a non-negative amount that cannot wrap.
    grows: bool,
}

/// The answer's shared locations.
fn answer_locations(parts: &[Part<'_>], mems: &[&MemInstr], o: &Serial) -> Vec<Location> {
    let mut out = Vec::new();
    for ((space, addr), members) in locations(parts, mems).unwrap() {
        let m0 = mems[members[0].0];
        let bytes = m0.ty.bytes();
        let init = parts[0].state.memory(space).read(addr, bytes).unwrap();
        let seen = o.states[0].memory(space).read(addr, bytes).unwrap();
        let nan = |v: u64| m0.ty.float_format().is_some_and(|f| float::is_nan(f, v));
        let mut has_nan = nan(init) || nan(seen);
        let mut looped = false;
        let mut threads = Vec::new();
        let mut changes = Vec::new();
        let mut edges = Some(Vec::new());
        for &(k, i) in &members {
            let m = mems[k];
            let a = &m.accesses[i];
            let step = OpStep {
                op: m.op,
                ty: m.ty,
                env: m.env,
                src: a.src,
            };
            let mut thread = Vec::new();
            for (it, row) in o.returned[k].iter().enumerate() {
                let obs = row[i];
                has_nan |= obs.ret.is_some_and(nan);
                let edge = match (parts[k].cas_loop, obs.ret) {
                    _ if matches!(a.dst, Dest::None) || obs.kept != u64::MAX => None,
                    (Some(lp), Some(r)) => lp.new_value(m.ty, m.env, r).ok().map(|n| (r, n)),
                    (None, Some(r)) => {
                        let fit: Vec<u64> = step
                            .step(r)
                            .unwrap()
                            .iter()
                            .filter(|e| e.ret == r && obs.success.is_none_or(|s| s == e.success))
                            .map(|e| e.new)
                            .collect();
                        (fit.len() == 1).then(|| (r, fit[0]))
                    }
                    _ => None,
                };
                match (&mut edges, edge) {
                    (Some(es), Some(e)) => es.push((e, (k, it, i))),
                    _ => edges = None,
                }
                thread.push((step.clone(), obs));
            }
            changes.push(match parts[k].cas_loop {
                Some(lp) => vec![(lp.step(m.ty, m.env), Observed::default()); thread.len()],
                None => thread.clone(),
            });
            looped |= parts[k].cas_loop.is_some();
            threads.push(thread);
        }
        let amounts: Option<Vec<u64>> = changes
            .iter()
            .flatten()
            .filter(|(s, _)| !is_identity(s))
            .map(|(s, _)| match s.op {
                AtomicOp::Add if s.ty.float_format().is_none() => {
                    Some(s.src[0] & mask(s.ty.bits()))
                }
                AtomicOp::Inc => Some(1),
                _ => None,
            })
            .collect();
        let grows = amounts.is_some_and(|a| {
            a.iter()
                .try_fold(init, |v, x| {
                    v.checked_add(*x).filter(|n| *n <= mask(m0.ty.bits()))
                })
                .is_some()
        });
        out.push(Location {
            space,
            addr,
            bytes,
            width: m0.ty.bits(),
            init,
            seen,
            threads,
            changes,
            edges: edges.filter(|_| !has_nan),
            looped,
            nan: has_nan,
            grows,
        });
    }
    out
}

/// Wrong answers derived from a right one `o`, each with why it is wrong: per location, the
/// final value changed where every order provably ends elsewhere (the operations commute; or
/// every return is observed, so the walk they draw ends at the observed value; or brute force
/// over every order), and one returned value changed to one memory never holds before that
/// step (every other step's effect is fixed by its return) or that brute force refutes.
pub(super) fn corruptions(
    parts: &[Part<'_>],
    lowered: &[Lowered],
    o: &Serial,
) -> Vec<(String, Serial)> {
    let mems: Vec<&MemInstr> = lowered
        .iter()
        .map(|l| match &l.instr {
            Instr::Mem(m) => m,
            _ => panic!("a concurrent part is a memory instruction"),
        })
        .collect();
    let mut out = Vec::new();
    for loc in answer_locations(parts, &mems, o) {
        let with_final = |v: u64| {
            let mut w = o.clone();
            for st in &mut w.states {
                st.memory_mut(loc.space).write(loc.addr, loc.bytes, v);
            }
            w
        };
        let at = format!("{}[{:#x}]", loc.space.name(), loc.addr);
        let folded = fold_if_commuting(loc.init, &loc.changes);
        let edges: Option<Vec<(u64, u64)>> = loc
            .edges
            .as_ref()
            .map(|es| es.iter().map(|(e, _)| *e).collect());
        if let Some(f) = folded {
            out.push((
                format!(
                    "{at} left as {:#x}: the operations commute, every order ends at {f:#x}",
                    f ^ 1
                ),
                with_final(f ^ 1),
            ));
        } else if let Some(end) = edges.as_deref().and_then(|es| walk_end(loc.init, es)) {
            assert_eq!(
                end, loc.seen,
                "{at}: a right answer's walk ends at its final value"
            );
            out.push((
                format!(
                    "{at} left as {:#x}: every return is observed, so every order ends at {end:#x}",
                    end ^ 1
                ),
                with_final(end ^ 1),
            ));
        } else if loc.small() {
            let wrong = first_refuted(loc.width, loc.seen, |v| {
                order_exists(&loc.threads, loc.init, v)
            });
            if let Some(v) = wrong {
                out.push((
                    format!("{at} left as {v:#x}: no order ends there (brute force)"),
                    with_final(v),
                ));
            }
        }
        // A returned value memory never holds before that step.
        if let Some(es) = &loc.edges {
            let Some(&((r, _), (k, it, i))) = es.first() else {
                continue;
            };
            let held: HashSet<u64> = es[1..]
                .iter()
                .map(|((_, n), _)| *n)
                .chain([loc.init])
                .collect();
            let v = (0..loc.width)
                .map(|b| r ^ (1 << b))
                .find(|v| !held.contains(v))
                .unwrap();
            let mut w = o.clone();
            w.returned[k][it][i].ret = Some(v);
            out.push((
                format!(
                    "instruction {k} iteration {it} access {i} got {v:#x} from {at}: memory never holds it before that step"
                ),
                w,
            ));
        } else if let Some((t, j, _)) = loc.first_return().filter(|_| loc.grows) {
            // Every value memory holds is at most the final one.
            let v = loc.seen + 1;
            if v <= mask(loc.width) {
                out.push((
                    format!(
                        "a return of {v:#x} from {at}: the adds only grow the value, to {:#x}",
                        loc.seen
                    ),
                    with_return(o, member(parts, &mems, &loc, t), j, v),
                ));
            }
        } else if let Some((t, j, r)) = loc.first_return().filter(|_| loc.small()) {
            let wrong = first_refuted(loc.width, r, |v| {
                let mut threads = loc.threads.clone();
                threads[t][j].1.ret = Some(v);
                order_exists(&threads, loc.init, loc.seen)
            });
            if let Some(v) = wrong {
                out.push((
                    format!("a return of {v:#x} from {at}: no order gives it (brute force)"),
                    with_return(o, member(parts, &mems, &loc, t), j, v),
                ));
            }
        }
    }
    out
}

/// `o` with iteration `it` of access `(k, i)` returning `v`.
fn with_return(o: &Serial, (k, i): (usize, usize), it: usize, v: u64) -> Serial {
    let mut w = o.clone();
    w.returned[k][it][i].ret = Some(v);
    w
}

impl Location {
    /// Whether brute force is sound and affordable here.
    fn small(&self) -> bool {
        !self.looped
            && !self.nan
            && self.threads.iter().map(Vec::len).sum::<usize>() <= BRUTE_FORCE_STEPS
    }

    /// The first observed return: its thread, iteration and value.
    fn first_return(&self) -> Option<(usize, usize, u64)> {
        self.threads.iter().enumerate().find_map(|(t, th)| {
            th.iter()
                .enumerate()
                .find_map(|(j, (_, o))| o.ret.filter(|_| o.kept == u64::MAX).map(|r| (t, j, r)))
        })
    }
}

/// The `(instruction, access)` of thread `t` of a location.
fn member(parts: &[Part<'_>], mems: &[&MemInstr], loc: &Location, t: usize) -> (usize, usize) {
    locations(parts, mems).unwrap()[&(loc.space, loc.addr)][t]
}

#[test]
fn random_interleavings_of_every_concurrent_case_pass_and_corrupted_ones_fail() {
    let loaded = load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut problems = Vec::new();
    let (mut passed, mut failed) = (0, 0);
    let mut uncovered = BTreeMap::new();
    for name in Profile::names() {
        let profile = Profile::named(name).unwrap();
        let seeds = if name == "default" { SEEDS } else { 0..1 };
        let opts = options(&profile);
        for case in loaded.cases.iter().filter(|c| c.is_concurrent()) {
            let through = |o: &Serial| {
                let answer = ConcurrentObservation {
                    states: o.states.clone(),
                    returned: Some(o.returned.clone()),
                    attempts: Some(o.attempts.clone()),
                    executed: None,
                };
                run_case(case, &mut PlantedConcurrent(answer), &opts).status
            };
            let corrupted = with_parts(case, &profile, |parts, lowered, reference| {
                let mut corrupted = 0;
                for seed in seeds.clone() {
                    let Some(o) = random_interleaving(parts, lowered, reference, seed) else {
                        problems.push(format!(
                            "{} under {name}: no interleaving (seed {seed})",
                            case.id
                        ));
                        continue;
                    };
                    // Through the runner for the first seed under the default profile (it
                    // rebuilds the case each time).
                    let first = seed == 0 && name == "default";
                    let (alone, runner) = (
                        judged(parts, lowered, reference, &o, true),
                        first.then(|| through(&o)),
                    );
                    if matches!(alone, Ok(Judgement::Pass))
                        && runner.is_none_or(|s| s == Status::Pass)
                    {
                        passed += 1;
                    } else {
                        problems.push(format!(
                            "{} under {name}, seed {seed}: a right answer judged {alone:?}, the runner says {runner:?}",
                            case.id
                        ));
                    }
                    for (what, wrong) in corruptions(parts, lowered, &o) {
                        corrupted += 1;
                        let alone = judged(parts, lowered, reference, &wrong, true);
                        let runner = first.then(|| through(&wrong));
                        if matches!(alone, Ok(Judgement::Fail(_)))
                            && runner.is_none_or(|s| s == Status::Fail)
                        {
                            failed += 1;
                        } else {
                            problems.push(format!(
                                "{} under {name}, seed {seed}: {what}: judged {alone:?}, the runner says {runner:?}",
                                case.id
                            ));
                        }
                    }
                }
                corrupted
            });
            if corrupted == 0 {
                uncovered.insert(case.id.clone(), name);
            }
        }
    }
    println!("random interleavings: {passed} right answers passed, {failed} corrupted ones failed");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        uncovered.is_empty(),
        "no corrupted answer for {uncovered:?}"
    );
    assert!(passed >= 500 && failed >= 500, "{passed} {failed}");
}

/// A concurrent case written here (in the corpus's format), loaded as the runner loads one.
pub(super) fn written_case(dialect: &str, text: &str) -> atomcts::corpus::case::Case {
    let file = std::path::Path::new("written/concurrent.toml");
    let loaded = atomcts::corpus::case::parse_file(
        std::path::Path::new("written"),
        file,
        format!("dialect = \"{dialect}\"\ncite = \"issue 27\"\n{text}"),
    );
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut cases = loaded.cases;
    assert_eq!(cases.len(), 1);
    cases.remove(0)
}

/// Cases whose accesses overlap without being one location (FORMAT.md, "Concurrent cases"):
/// the case, and what the refusal names.
pub(super) fn overlapping_cases() -> Vec<(atomcts::corpus::case::Case, &'static str)> {
    let sass = |first: &str, second: &str| {
        written_case(
            "sass",
            &format!(
                r#"
[[case]]
name = "overlap"
cite = "x"
tags = ["concurrent"]
given = {{ mem = {{ 0x1000 = "u64:0xffffffff" }} }}
expect = {{ }}
{first}
{second}"#
            ),
        )
    };
    let wide = |iterations: u32, lanes: u32, r2: &str| {
        format!(
            "[[case.concurrent]]\nasm = \"ATOM.E.ADD.U64 R0, [R2], R4\"\nlanes = {lanes}\niterations = {iterations}\ngiven = {{ R2 = {r2}, R3 = 0, R4 = 1, R5 = 0 }}"
        )
    };
    let narrow = |at: &str| {
        format!(
            "[[case.concurrent]]\nasm = \"ATOM.E.ADD R0, [R2], R4\"\ngiven = {{ R2 = {at}, R3 = 0, R4 = 1 }}"
        )
    };
    vec![
        // The issue's: two 64-bit adds on 0x1000 from 0xffffffff carry into the word a 32-bit
        // add at 0x1004 changes.
        (
            sass(&wide(2, 1, "0x1000"), &narrow("0x1004")),
            "instruction 0 (lane 0, u64 at 0x1000) and instruction 1 (lane 0, u32 at 0x1004) access overlapping bytes at different addresses",
        ),
        // One address, two types.
        (
            sass(&wide(1, 1, "0x1000"), &narrow("0x1000")),
            "instruction 0 (lane 0, u64 at 0x1000) and instruction 1 (lane 0, u32 at 0x1000) access one location with different types",
        ),
        // One address, a float type beside an integer one (F16x2 halves are one location).
        (
            sass(
                "[[case.concurrent]]\nasm = \"ATOM.ADD.F16x2.RN R0, [R2], R4\"\ngiven = { R2 = 0x1000, R4 = 0x3c003c00 }",
                &narrow("0x1000"),
            ),
            "instruction 0 (lane 0, f16x2 at 0x1000) and instruction 1 (lane 0, u32 at 0x1000) access one location with different types",
        ),
        // vISA: a 16-bit add inside a 32-bit one.
        (
            written_case(
                "visa",
                r#"
[[case]]
name = "overlap"
cite = "x"
tags = ["concurrent"]
given = { mem = { 0x1000 = "u32:0xffff" } }
expect = { }
[[case.concurrent]]
asm = "DWORD_ATOMIC.add (1) T255 V10 V11 V0 V0"
given = { V10 = { ud = [0x1000] }, V11 = { ud = [1] } }
[[case.concurrent]]
asm = "DWORD_ATOMIC.add.16 (1) T255 V10 V11 V0 V0"
given = { V10 = { ud = [0x1002] }, V11 = { ud = [1] } }"#,
            ),
            "instruction 0 (lane 0, u32 at 0x1000) and instruction 1 (lane 0, u16 at 0x1002) access overlapping bytes",
        ),
    ]
}

/// H1: an overlapping case (built by [`overlapping_cases`]) with the issue's wrong answer (the
/// 32-bit add lost: memory ends at 0xffffffff + 2, every instruction's registers as given) is
/// refused as the case's error by the runner, whatever the adapter answers, and by the judge
/// alone, naming both accesses. `(runner, judge alone)` each `Ok` when refused so.
pub(super) fn refused(
    case: &atomcts::corpus::case::Case,
    names: &str,
) -> (Result<(), String>, Result<(), String>) {
    let profile = Profile::default();
    let opts = options(&profile);
    let (states, programs) = states_and_programs(case);
    let mut lost = states.clone();
    for st in &mut lost {
        st.global.write(0x1000, 4, 0x1);
        st.global.write(0x1004, 4, 0x1);
    }
    let answer = ConcurrentObservation {
        states: lost.clone(),
        returned: None,
        attempts: None,
        executed: None,
    };
    let r = run_case(case, &mut PlantedConcurrent(answer), &opts);
    let note: String = r.findings.iter().map(|f| f.note.clone()).collect();
    let runner = if r.status == Status::Error && note.contains(names) {
        Ok(())
    } else {
        Err(format!("{:?}: {note}", r.status))
    };
    let parts = atomcts::run::concurrent::parts(case, &programs, &states);
    let lowered: Vec<Lowered> = parts
        .iter()
        .map(|p| match p.program.lower(p.state, &profile).unwrap() {
            atomcts_reference::ir::Lowering::Run(l) => l,
            other => panic!("{other:?}"),
        })
        .collect();
    let reference = Serial {
        states: states.clone(),
        returned: parts
            .iter()
            .map(|p| vec![Vec::new(); p.iterations as usize])
            .collect(),
        attempts: parts
            .iter()
            .map(|p| vec![Vec::new(); p.iterations as usize])
            .collect(),
    };
    let alone = match judge(
        &parts,
        &lowered,
        &reference,
        &lost,
        None,
        None,
        DEFAULT_BUDGET,
    ) {
        Err(e) if e.to_string().contains(names) => Ok(()),
        other => Err(format!("{other:?}")),
    };
    (runner, alone)
}
