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
use atomcts::fuzzing::interleave::{Grain, interleaving, random_interleaving};
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

type Thread = Vec<(OpStep, Observed)>;

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
fn options(profile: &Profile) -> Options {
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
fn judged(
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
fn with_parts<R>(
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

/// H18: a compare-and-swap loop whose address is outside memory does what the documents say
/// every access there does, not an error of the model. SASS ATOM faults (address out of range):
/// the case is an error naming the fault, before any adapter runs it. vISA DWORD_ATOMIC reads
/// zero and drops the write (A14, the default `visa.out_of_bounds`): the loop's every attempt
/// reads 0, so each iteration fails once (its compare is never 0) and then swaps at 0, and the
/// built-in adapters pass.
#[test]
fn compare_and_swap_loops_outside_memory_do_what_the_documents_say() {
    let opts = options(&Profile::default());
    let sass = written_case(
        "sass",
        r#"
[[case]]
name = "loop_outside"
cite = "x"
tags = ["concurrent"]
given = { mem = { 0x1000 = "u16:0" } }
expect = { }
[[case.concurrent]]
asm = "ATOM.CAS.32 R0, [R2], R4, R5"
lanes = 2
iterations = 2
given = { R2 = 0x1000, R4 = 0, R5 = 0 }
cas_loop = { update = "add", operand = 3 }"#,
    );
    let r = run_case(&sass, &mut atomcts_adapters::FastAdapter, &opts);
    let note: String = r.findings.iter().map(|f| f.note.clone()).collect();
    assert_eq!(r.status, Status::Error, "{note}");
    assert!(
        note.contains("instruction 0 does not complete (a fault, lane 0: address_out_of_range")
            && !note.contains("internal"),
        "{note}"
    );
    let visa = written_case(
        "visa",
        r#"
[[case]]
name = "loop_outside"
cite = "x"
tags = ["concurrent"]
given = { mem = { 0x1000 = "u32:9" } }
expect = { mem = { 0x1000 = "u32:9" } }
[[case.concurrent]]
asm = "DWORD_ATOMIC.cmpxchg (2) T255 V10 V11 V12 V13"
iterations = 3
given = { V10 = { ud = [0x2000, 0x2004] }, V11 = { ud = [0, 0] }, V12 = { ud = [7, 7] }, V13 = { ud = [0xdd, 0xdd] } }
cas_loop = { update = "add", operand = 5 }"#,
    );
    let (states, programs) = states_and_programs(&visa);
    let parts = atomcts::run::concurrent::parts(&visa, &programs, &states);
    let (_, serial) = lowered_and_serial(&parts, &opts.profile);
    for it in 0..3 {
        assert_eq!(serial.attempts[0][it], vec![2, 2], "iteration {it}");
        assert!(serial.returned[0][it].iter().all(|o| o.ret == Some(0)));
    }
    for mut adapter in [
        Box::new(atomcts_adapters::FastAdapter) as Box<dyn atomcts_adapters::Adapter>,
        Box::new(atomcts_adapters::ReferenceAdapter),
    ] {
        let r = run_case(&visa, adapter.as_mut(), &opts);
        assert_eq!(r.status, Status::Pass, "{:?}", r.findings);
    }
}

/// H6: 2 instructions x 16 lanes x 2 iterations of SASS `ATOM.ADD.F32.FTZ.RN RZ` with a
/// distinct operand per lane (their returns discarded: only the final value is observed).
/// Float adds do not commute, so the final value depends on the order; the built-in adapters
/// run the reference's serial order, which the checker tries first: both pass at once. Random
/// interleavings are decided too (the search, bounded by where float adds can still end), and
/// the final value of one add lost (the last operand never added) fails at once.
#[test]
fn float_adds_observed_only_by_their_final_value_are_decided() {
    let operands = [
        "956.0342718892493 947.8274870593494 56.551367726808685 84.87199515892164 835.4988781294495 735.9699890685233 669.7304014402209 308.1364575891442 605.9441656784625 606.8017336408379 581.204017112003 158.38287025480557 430.66964029126865 393.5318202053714 723.0120812374658 994.8195629497427",
        "949.3954730932436 544.1770474293209 444.8541887258536 268.2407416493281 35.924329392857615 27.444857090819006 464.8938620973121 318.4651278536774 380.0149219007116 891.7894578282875 525.7527691460283 560.5103610264989 236.12340711506207 23.858079140782195 325.14292876116 136.69739298646667",
    ];
    let instr = |xs: &str| {
        let v: Vec<String> = xs.split(' ').map(|x| format!("\"f32:{x}\"")).collect();
        format!(
            "[[case.concurrent]]\nasm = \"ATOM.ADD.F32.FTZ.RN RZ, [R2], R4\"\nlanes = 16\niterations = 2\ngiven = {{ R2 = 0x1000, R4 = [{}] }}\n",
            v.join(", ")
        )
    };
    let case = written_case(
        "sass",
        &format!(
            "[[case]]\nname = \"f32_final_only\"\ncite = \"x\"\ntags = [\"concurrent\"]\ngiven = {{ mem = {{ 0x1000 = \"f32:1.0\" }} }}\nexpect = {{ }}\n{}{}",
            instr(operands[0]),
            instr(operands[1])
        ),
    );
    let profile = Profile::default();
    let opts = options(&profile);
    for mut adapter in [
        Box::new(atomcts_adapters::FastAdapter) as Box<dyn atomcts_adapters::Adapter>,
        Box::new(atomcts_adapters::ReferenceAdapter),
    ] {
        let r = run_case(&case, adapter.as_mut(), &opts);
        assert_eq!(r.status, Status::Pass, "{:?}", r.findings);
    }
    with_parts(&case, &profile, |parts, lowered, reference| {
        for seed in 0..4 {
            let o = random_interleaving(parts, lowered, reference, seed).unwrap();
            assert_eq!(
                judged(parts, lowered, reference, &o, true).unwrap(),
                Judgement::Pass,
                "seed {seed}"
            );
            // The last lane's operand never added: far below every order's end.
            let last = f32::from_bits(parts[1].state.elem("R4", 15).unwrap() as u32);
            let mut lost = o.clone();
            for st in &mut lost.states {
                let v = f32::from_bits(st.global.read(0x1000, 4).unwrap() as u32);
                st.global.write(0x1000, 4, u64::from((v - last).to_bits()));
            }
            match judged(parts, lowered, reference, &lost, true).unwrap() {
                Judgement::Fail(ms) => assert!(
                    ms[0].why.contains("longest consistent prefix: 0 of 64"),
                    "{ms:?}"
                ),
                other => panic!("seed {seed}: a lost update judged {other:?}"),
            }
        }
    });
}

/// H18: an undecided verdict names its real reason. Past the search's limit (16,384 operations
/// on one address), increments against decrements with every return kept commute (the final
/// value is theirs) but their returns cannot be ordered: the verdict says so, not that the
/// operations do not commute. An exchange against the same adds does not commute: the verdict
/// says that. Adds alone, every return kept, only grow the value: their returns ascending are
/// the one order, which the checker tries, so they are decided at any size.
#[test]
fn undecided_verdicts_name_their_reason() {
    let profile = Profile::default();
    let visa = |second: &str| {
        let lanes = |v: &str| vec![v; 16].join(", ");
        written_case(
            "visa",
            &format!(
                r#"
[[case]]
name = "beyond_the_search"
cite = "x"
tags = ["concurrent"]
given = {{ mem = {{ 0x1000 = "u32:100000" }} }}
expect = {{ }}
[[case.concurrent]]
asm = "DWORD_ATOMIC.inc (16) T255 V10 V0 V0 V13"
iterations = 520
given = {{ V10 = {{ ud = [{}] }}, V13 = {{ ud = [{}] }} }}
{second}"#,
                lanes("0x1000"),
                lanes("0")
            ),
        )
    };
    let cases = [
        (
            visa(&format!(
                "[[case.concurrent]]\nasm = \"DWORD_ATOMIC.dec (16) T255 V10 V0 V0 V13\"\niterations = 520\ngiven = {{ V10 = {{ ud = [{}] }}, V13 = {{ ud = [{}] }} }}",
                vec!["0x1000"; 16].join(", "),
                vec!["0"; 16].join(", ")
            )),
            Some(
                "the operations commute and the final value is theirs, but their observed returns are more than 16384 operations to order",
            ),
        ),
        (
            visa(&format!(
                "[[case.concurrent]]\nasm = \"DWORD_ATOMIC.dec (16) T255 V10 V0 V0 V13\"\niterations = 520\ngiven = {{ V10 = {{ ud = [{}] }}, V13 = {{ ud = [{}] }} }}\n[[case.concurrent]]\nasm = \"DWORD_ATOMIC.xchg (1) T255 V10 V11 V0 V13\"\ngiven = {{ V10 = {{ ud = [0x1000] }}, V11 = {{ ud = [5] }}, V13 = {{ ud = [0] }} }}",
                vec!["0x1000"; 16].join(", "),
                vec!["0"; 16].join(", ")
            )),
            Some("more than 16384 operations that do not all commute"),
        ),
        (
            visa(&format!(
                "[[case.concurrent]]\nasm = \"DWORD_ATOMIC.inc (16) T255 V10 V0 V0 V13\"\niterations = 520\ngiven = {{ V10 = {{ ud = [{}] }}, V13 = {{ ud = [{}] }} }}",
                vec!["0x1000"; 16].join(", "),
                vec!["0"; 16].join(", ")
            )),
            None,
        ),
    ];
    for (case, why) in cases {
        let verdict = with_parts(&case, &profile, |parts, lowered, reference| {
            let o = random_interleaving(parts, lowered, reference, 1).unwrap();
            judged(parts, lowered, reference, &o, true).unwrap()
        });
        match (verdict, why) {
            (Judgement::Undecided(text), Some(why)) => {
                assert!(text.contains(why), "{text}");
                assert!(
                    text.contains("no candidate schedule produces")
                        && text.contains("on 0x1000 (1664"),
                    "{text}"
                );
            }
            (Judgement::Pass, None) => {}
            (other, why) => panic!("{why:?}: {other:?}"),
        }
    }
}

/// Set in the child process of [`a_large_concurrent_case_is_judged_in_bounded_memory`].
const MEMORY_CHILD: &str = "ATOMCTS_CONCURRENT_MEMORY_CHILD";

/// The peak resident memory of a process that judges the largest searched history (README
/// "Guarantees": the memo's bound, never reached here, and about a kilobyte per operation).
const PEAK_RSS_KIB: u64 = 128 << 10;

/// H11: a legal concurrent case of 16,384 operations on one address (16 MSL instructions x
/// 1,024 lanes of an exchange, every return kept: the largest history the search takes) is
/// judged within the stated memory bound: through the runner on the built-in adapter (the
/// reference's serial answer), and before the judge alone on a random interleaving (which
/// the search orders). Measured as the peak resident memory (`VmHWM`) of a child process that
/// runs this test alone, under an address-space limit so that a regression fails instead of
/// exhausting the machine.
#[test]
fn a_large_concurrent_case_is_judged_in_bounded_memory() {
    if std::env::var_os(MEMORY_CHILD).is_some() {
        let instrs: String = (0..16)
            .map(|k| {
                let v: Vec<String> = (0..1024).map(|l| (k * 1024 + l + 1).to_string()).collect();
                format!(
                    "[[case.concurrent]]\nasm = \"r = atomic_exchange_explicit(&buf[0], v, memory_order_relaxed)\"\nlanes = 1024\ngiven = {{ v = [{}] }}\n",
                    v.join(", ")
                )
            })
            .collect();
        let case = written_case(
            "msl",
            &format!(
                "[[case]]\nname = \"exchanges\"\ncite = \"x\"\ntags = [\"concurrent\"]\ngiven = {{ buf = {{ space = \"device\", type = \"atomic_uint\", init = [0, 77] }} }}\nexpect = {{ buf = [\"any\", 77] }}\n{instrs}"
            ),
        );
        let profile = Profile::default();
        let opts = options(&profile);
        let r = run_case(&case, &mut atomcts_adapters::FastAdapter, &opts);
        assert_eq!(r.status, Status::Pass, "{:?}", r.findings);
        let verdict = with_parts(&case, &profile, |parts, lowered, reference| {
            let o = random_interleaving(parts, lowered, reference, 7).unwrap();
            judged(parts, lowered, reference, &o, true).unwrap()
        });
        assert_eq!(verdict, Judgement::Pass);
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let peak = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        println!("peak {peak}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 4194304; exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([
            "concurrent_judge::a_large_concurrent_case_is_judged_in_bounded_memory",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(MEMORY_CHILD, "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {text}");
    let kib: u64 = text
        .split("peak VmHWM:")
        .nth(1)
        .and_then(|v| v.split("kB").next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak in {text}"));
    println!(
        "a 16,384-operation concurrent case judged in {} MiB at peak",
        kib >> 10
    );
    assert!(kib <= PEAK_RSS_KIB, "{kib} KiB at peak");
}

/// The concurrent search's memo of refuted states holds as many as its byte bound allows and is
/// emptied (never grown past the bound) when one more would not fit; forgetting costs states
/// expanded, never a verdict. Seven exchanges of different values whose returns were not kept:
/// a final value none of them stores is refuted only after every order, and one the third
/// stores is found.
#[test]
fn a_small_concurrent_memo_changes_no_verdict() {
    use atomcts_reference::concurrent::{Equality, History, check_history_within};
    use atomcts_reference::race::{MAX_MEMO_BYTES, Verdict};
    let threads: Vec<Thread> = (1..=7)
        .map(|v| {
            vec![(
                OpStep {
                    op: AtomicOp::Exch,
                    ty: atomcts_reference::types::DataType::U32,
                    env: atomcts_reference::ir::Env::default(),
                    src: [v, 0],
                },
                Observed::default(),
            )]
        })
        .collect();
    // A state: its value (2 counts), and 2 levels of each of the 7 classes.
    let entry = 48 + 4 * (2 + 7 * 2) + 8;
    for (fin, pass) in [(0x100, false), (3, true)] {
        let h = History {
            init: 0,
            threads: &threads,
            instrs: &[],
            blocks: &[],
            final_value: Some(fin),
        };
        let full =
            check_history_within(&h, Equality::Bits, DEFAULT_BUDGET, MAX_MEMO_BYTES).unwrap();
        let small = check_history_within(&h, Equality::Bits, DEFAULT_BUDGET, 4 * entry).unwrap();
        let smaller =
            check_history_within(&h, Equality::Bits, DEFAULT_BUDGET, 4 * entry - 1).unwrap();
        match (&full.verdict, &small.verdict, pass) {
            (Verdict::Pass { .. }, Verdict::Pass { .. }, true) => {}
            (Verdict::Fail { explored: a, .. }, Verdict::Fail { explored: b, .. }, false) => {
                assert!(full.remembered > 4 && full.forgotten == 0, "{full:?}");
                assert!(small.remembered == 4 && small.forgotten > 0, "{small:?}");
                assert_eq!(smaller.remembered, 3, "{smaller:?}");
                assert!(b > a, "{b} states with a small memo, {a} with the full one");
            }
            other => panic!("final {fin:#x}: {other:?}"),
        }
    }
}

/// The campaign behind H6's "all decided" (run by hand, release build; not in CI for its
/// time): `ATOMCTS_INTERLEAVINGS=<n>` seeds (default 200) of every concurrent case under the
/// default profile, each a right answer the judge alone must pass at the default budget, with
/// every return reported and as an adapter that reports only the final registers;
/// `ATOMCTS_INTERLEAVINGS_GRAIN=instruction` for GPU-like block interleavings,
/// `ATOMCTS_INTERLEAVINGS_CASE=<part of an id>` for some cases only.
/// `cargo test --release -p atomcts --test planted -- --ignored --nocapture many_random`
#[test]
#[ignore]
fn many_random_interleavings_of_every_concurrent_case_pass() {
    let n: u64 = std::env::var("ATOMCTS_INTERLEAVINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let loaded = load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let profile = Profile::named("default").unwrap();
    let (mut passed, mut problems) = (0u64, Vec::new());
    let only = std::env::var("ATOMCTS_INTERLEAVINGS_CASE").unwrap_or_default();
    let grain = match std::env::var("ATOMCTS_INTERLEAVINGS_GRAIN").as_deref() {
        Ok("instruction") => Grain::Instruction,
        _ => Grain::Thread,
    };
    for case in loaded
        .cases
        .iter()
        .filter(|c| c.is_concurrent() && c.id.contains(&only))
    {
        let start = std::time::Instant::now();
        with_parts(case, &profile, |parts, lowered, reference| {
            for seed in 0..n {
                let Some(o) = interleaving(parts, lowered, reference, seed, grain) else {
                    problems.push(format!("{}: no interleaving (seed {seed})", case.id));
                    continue;
                };
                match judged(parts, lowered, reference, &o, true) {
                    Ok(Judgement::Pass) => passed += 1,
                    other => problems.push(format!("{}, seed {seed}: {other:?}", case.id)),
                }
                // The same answer as an adapter that reports only the registers after each
                // thread's last iteration (no returned rows, no attempts).
                let registers_only = judged(parts, lowered, reference, &o, false);
                match registers_only {
                    Ok(Judgement::Pass) => passed += 1,
                    other => problems.push(format!(
                        "{}, seed {seed}, registers only: {other:?}",
                        case.id
                    )),
                }
            }
        });
        println!("{:>8.2?} {}", start.elapsed(), case.id);
    }
    println!(
        "{passed} random interleavings passed, {} not",
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// GPU-like interleavings (each SIMD-group's step of one instruction as one block, lanes
/// ascending or descending, the blocks in a random order) of every concurrent case without a
/// compare-and-swap loop, answered as an adapter that reports only the registers after each
/// thread's last iteration (no returned rows), pass: the block schedules decide them where the
/// thread-level search ran out of its budget (`exchange_against_add`, seeds 0 and 4, before).
#[test]
fn block_interleavings_reported_as_registers_only_pass() {
    let loaded = load(&atomcts::default_corpus());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let profile = Profile::named("default").unwrap();
    let (mut passed, mut problems) = (0, Vec::new());
    for case in loaded.cases.iter().filter(|c| c.is_concurrent()) {
        with_parts(case, &profile, |parts, lowered, reference| {
            if parts.iter().any(|p| p.cas_loop.is_some()) {
                return;
            }
            for seed in 0..5 {
                let Some(o) = interleaving(parts, lowered, reference, seed, Grain::Instruction)
                else {
                    problems.push(format!("{}: no interleaving (seed {seed})", case.id));
                    continue;
                };
                match judged(parts, lowered, reference, &o, false) {
                    Ok(Judgement::Pass) => passed += 1,
                    other => problems.push(format!("{}, seed {seed}: {other:?}", case.id)),
                }
            }
        });
    }
    println!("block interleavings, registers only: {passed} passed");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(passed >= 100, "{passed}");
}
