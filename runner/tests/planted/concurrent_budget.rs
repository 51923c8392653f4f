//! The concurrent checker's budget and search limit, pinned on the corpus, and the reductions
//! that decide hard histories (part of `planted.rs`).

use super::*;

/// The concurrent checker's budget, pinned on the corpus as the race checker's is
/// (`race_budget_is_exact_and_enforced`): for each brute-forced wrong answer of a concurrent
/// case that the search must refute, the smallest deciding budget `b` fails it; one state less
/// is undecided after `b` states (the state it refused), and the runner then says Undecided,
/// never Pass.
#[test]
fn concurrent_budget_is_exact_and_enforced() {
    let loaded = load(&atomcts::default_corpus());
    let profile = Profile::default();
    let mut pinned = 0;
    let mut largest = 0;
    for case in loaded
        .cases
        .iter()
        .filter(|c| c.is_concurrent() && c.where_.is_empty())
    {
        let (states, programs) = states_and_programs(case);
        let parts = atomcts::run::concurrent::parts(case, &programs, &states);
        let (lowered, reference) = lowered_and_serial(&parts, &profile);
        // The brute-forced plants, and the corrupted random interleavings of
        // `concurrent_judge` (returns of every thread: the walks and searches real answers
        // meet).
        let mut wrong: Vec<(String, atomcts_reference::concurrent::Serial)> =
            concurrent_plants(&parts, &lowered, &reference)
                .into_iter()
                .filter(|p| p.kind.is_some())
                .map(|p| (p.what, p.observation))
                .collect();
        for seed in 0..3 {
            let o = atomcts::fuzzing::interleave::random_interleaving(
                &parts, &lowered, &reference, seed,
            )
            .unwrap();
            wrong.extend(concurrent_judge::corruptions(&parts, &lowered, &o));
        }
        for (what, o) in &wrong {
            let judged = |b: u64| {
                judge_all(
                    &parts,
                    &lowered,
                    &reference,
                    &o.states,
                    Some(&o.returned),
                    Some(&o.attempts),
                    b,
                )
                .unwrap()
            };
            let decided = |b: u64| !matches!(judged(b), Judgement::Undecided(_));
            if decided(0) {
                continue;
            }
            let (mut lo, mut hi) = (0u64, 1u64);
            while !decided(hi) {
                lo = hi;
                hi *= 2;
                assert!(
                    hi <= DEFAULT_BUDGET,
                    "{}: {}: no budget decides",
                    case.id,
                    what
                );
            }
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                if decided(mid) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let b = hi;
            assert!(
                matches!(judged(b), Judgement::Fail(_)),
                "{}: {}",
                case.id,
                what
            );
            let Judgement::Undecided(why) = judged(b - 1) else {
                panic!("{}: {}: budget {} decides", case.id, what, b - 1);
            };
            let counts: Vec<u64> = why
                .split("after ")
                .skip(1)
                .map(|t| t.split(' ').next().unwrap().parse().unwrap())
                .collect();
            assert!(
                !counts.is_empty() && counts.iter().all(|&n| n == b),
                "{}: {}: budget {} says {why:?}, want after {b} states",
                case.id,
                what,
                b - 1
            );
            let opts = Options {
                profile: profile.clone(),
                race_budget: b - 1,
                cases_arg: "spec-cases".into(),
                adapter_arg: String::new(),
            };
            let mut adapter = PlantedConcurrent(ConcurrentObservation {
                states: o.states.clone(),
                returned: Some(o.returned.clone()),
                attempts: Some(o.attempts.clone()),
                executed: None,
            });
            let r = run_case(case, &mut adapter, &opts);
            assert_ne!(r.status, Status::Pass, "{}: {}", case.id, what);
            largest = largest.max(b);
            pinned += 1;
        }
    }
    println!(
        "concurrent budget pinned on {pinned} planted wrong answers; largest deciding budget {largest}"
    );
    assert!(pinned >= 30 && largest > 3, "{pinned} {largest}");
}

/// FORMAT.md, concurrent cases: the search takes histories of at most 16,384 operations on one
/// address; a longer one is undecided at once unless its operations commute or a candidate
/// schedule produces it. Exchanges of one value beside adds of 1 (which do not commute), with a
/// final value only orders with exactly 5 adds before the exchange give (no candidate schedule
/// does: they run the exchange first or last): at exactly the limit the search finds one; one
/// operation more is undecided without expanding a state. The final value of every add after
/// the exchange (the serial schedule's) is decided at any size.
#[test]
fn concurrent_search_limit_is_exact() {
    use atomcts_reference::concurrent::{Equality, MAX_SEARCHED, check_threads};
    use atomcts_reference::ir::AtomicOp;
    use atomcts_reference::race::{Observed, Verdict};
    use atomcts_reference::types::DataType;
    let step = |op: AtomicOp, v: u64| (op_step(op, DataType::U32, [v, 0]), Observed::default());
    let bits = Equality::Bits;
    // One thread exchanges 0x10000 once; the others add 1 once each: every order ends at
    // 0x10000 plus the adds after the exchange.
    let history = |adds: usize| {
        let mut t = vec![vec![step(AtomicOp::Exch, 0x10000)]];
        t.extend((0..adds).map(|_| vec![step(AtomicOp::Add, 1)]));
        t
    };
    let five_before = |ops: usize| 0x10000 + ops as u64 - 1 - 5;
    for (ops, fin, decided) in [
        (MAX_SEARCHED, five_before(MAX_SEARCHED), true),
        (MAX_SEARCHED + 1, five_before(MAX_SEARCHED + 1), false),
        (MAX_SEARCHED + 1, 0x10000 + MAX_SEARCHED as u64, true),
    ] {
        let v = check_threads(0, &history(ops - 1), Some(fin), bits, DEFAULT_BUDGET).unwrap();
        if decided {
            assert!(
                matches!(v, Verdict::Pass { .. }),
                "{ops} operations, final {fin:#x}"
            );
        } else {
            assert_eq!(v, Verdict::Undecided { explored: 0 }, "{ops} operations");
        }
    }
}

/// The concurrent search's reductions (`concurrent::check_threads`: stutter, dropped and split
/// blind threads, monotone pruning) are what let the default budget decide histories of the
/// shapes below, which implementations produce (a compare-and-swap loop's failed attempts, many
/// lanes adding to one counter, lanes whose operation changes nothing). Each family has a right
/// answer (the returns of one order played step by step) that must pass and a wrong one that
/// must fail, in at most 8 expanded states per operation. Without its reduction each family has
/// millions of reachable states (counted in its comment), past the default budget: the verdict
/// would be undecided.
#[test]
fn reductions_decide_hard_histories() {
    use atomcts_reference::concurrent::{Equality, check_threads};
    use atomcts_reference::ir::AtomicOp;
    use atomcts_reference::race::OpStep;
    use atomcts_reference::race::{Observed, Step, Verdict};
    use atomcts_reference::types::DataType;
    type Thread = Vec<(OpStep, Observed)>;
    let u32op = |op: AtomicOp, s0: u64| op_step(op, DataType::U32, [s0, 0]);
    // Plays `order` (thread indices, each thread's steps in turn) from `init`: each step's
    // single effect; the returns of the steps whose `keep` is set are recorded. Returns the
    // threads with those observations and the final value.
    let play = |init: u64, ops: &[Vec<(OpStep, bool)>], order: &[usize]| {
        let mut next = vec![0usize; ops.len()];
        let mut obs: Vec<Thread> = ops.iter().map(|_| Vec::new()).collect();
        let mut value = init;
        for &t in order {
            let (s, keep) = &ops[t][next[t]];
            next[t] += 1;
            let e = s.step(value).unwrap();
            assert_eq!(e.len(), 1, "{s:?} at {value:#x}");
            let o = if *keep {
                Observed::ret(e[0].ret)
            } else {
                Observed::default()
            };
            obs[t].push((s.clone(), o));
            value = e[0].new;
        }
        assert!(next.iter().zip(ops).all(|(n, t)| *n == t.len()));
        (obs, value)
    };
    let bits = Equality::Bits;
    let decide = |name: &str, init: u64, threads: &[Thread], fin: u64, pass: bool| {
        let total: usize = threads.iter().map(Vec::len).sum();
        let v = check_threads(init, threads, Some(fin), bits, DEFAULT_BUDGET).unwrap();
        match (&v, pass) {
            (Verdict::Pass { .. }, true) => {}
            (Verdict::Fail { explored, .. }, false) => assert!(
                *explored <= 8 * total as u64,
                "{name}: rejected after {explored} states, more than 8 per operation ({total})"
            ),
            _ => panic!(
                "{name}: {} answer judged {v:?}",
                if pass { "right" } else { "wrong" }
            ),
        }
    };

    // Stutter on observed reads: one thread adds 1 twice, 20 threads each run three
    // compare-exchanges that fail (their comparands are never the value) and return the value
    // before, after one and after both adds. Each reader is its own class, so without stutter
    // every reader may or may not have read each value: 3 x 2^20 states.
    let mut ops = vec![vec![(u32op(AtomicOp::Add, 1), true); 2]];
    for i in 0..20u64 {
        ops.push(vec![
            (
                op_step(AtomicOp::Cas, DataType::U32, [0x1000 + i, 0]),
                true
            );
            3
        ]);
    }
    let readers: Vec<usize> = (1..=20).collect();
    let order: Vec<usize> = [readers.clone(), vec![0], readers.clone(), vec![0], readers].concat();
    let (right, fin) = play(0, &ops, &order);
    decide("stutter on reads", 0, &right, fin, true);
    decide("stutter on reads, final + 1", 0, &right, fin + 1, false);

    // Stutter on failed attempts (a loop's, no return kept): 12 threads of three failing
    // compare-exchanges beside two adds: 3 x 4^12 states without stutter.
    let mut threads: Vec<Thread> = vec![vec![(u32op(AtomicOp::Add, 1), Observed::default()); 2]];
    for i in 0..12u64 {
        let failed = Observed {
            success: Some(false),
            ..Observed::default()
        };
        threads.push(vec![
            (
                op_step(AtomicOp::Cas, DataType::U32, [0x1000 + i, 0]),
                failed
            );
            3
        ]);
    }
    decide("stutter on failed attempts", 0, &threads, 2, true);
    decide("stutter on failed attempts, final 3", 0, &threads, 3, false);

    // Monotone pruning: adds of 1 only. Thread 0's second add returns a value thread 1's
    // unobserved adds pass first; nine more threads add 1 six times and keep only the last
    // return. The wrong answer has thread 0 return 0 twice: without pruning every state in
    // which the others have run part of their adds is reached, more than 6^9.
    let mut ops = vec![vec![(u32op(AtomicOp::Add, 1), true); 2]];
    for _ in 0..10 {
        let mut t = vec![(u32op(AtomicOp::Add, 1), false); 5];
        t.push((u32op(AtomicOp::Add, 1), true));
        ops.push(t);
    }
    let mut order = [vec![0], vec![1; 6], vec![0]].concat();
    order.extend((2..=10).flat_map(|t| [t; 6]));
    let (right, fin) = play(0, &ops, &order);
    decide("monotone adds", 0, &right, fin, true);
    let mut wrong = right.clone();
    wrong[0][1].1 = Observed::ret(0);
    decide("monotone adds, a return repeated", 0, &wrong, fin, false);

    // Dropped identities: 22 threads each run one unobserved bitwise compare-exchange of an F32
    // value with itself (a different value each), beside one exchange: 2 x 2^22 states if
    // they were kept.
    let f32op =
        |op: AtomicOp, src: [u64; 2]| (op_step(op, DataType::F32, src), Observed::default());
    let mut threads: Vec<Thread> = vec![vec![f32op(AtomicOp::Exch, [0x3f80_0000, 0])]];
    for i in 0..22u64 {
        threads.push(vec![f32op(
            AtomicOp::Cas,
            [0x4000_0000 + i, 0x4000_0000 + i],
        )]);
    }
    decide("identity exchanges", 0, &threads, 0x3f80_0000, true);
    decide(
        "identity exchanges, final 2.0",
        0,
        &threads,
        0x4000_0000,
        false,
    );

    // Dropped identities: 40 unobserved adds, subtracts, ors and xors of zero each, beside one
    // add of 1: 2 x 41^4 states if they were kept.
    let blind = |op: AtomicOp, s0: u64, n: usize| vec![(u32op(op, s0), Observed::default()); n];
    let threads: Vec<Thread> = vec![
        blind(AtomicOp::Add, 1, 1),
        blind(AtomicOp::Add, 0, 40),
        blind(AtomicOp::Sub, 0, 40),
        blind(AtomicOp::Or, 0, 40),
        blind(AtomicOp::Xor, 0, 40),
    ];
    decide("adds of zero", 0, &threads, 1, true);
    decide("adds of zero, final 2", 0, &threads, 2, false);

    // Split blind threads: 12 threads of 12 unobserved adds of 1 are 144 interchangeable
    // steps; kept as threads, the states are the ways 12 threads can stand at levels 0..12,
    // C(24, 12) = 2,704,156.
    let threads: Vec<Thread> = (0..12).map(|_| blind(AtomicOp::Add, 1, 12)).collect();
    decide("blind adds", 0, &threads, 144, true);
    decide("blind adds, final 145", 0, &threads, 145, false);

    // Stutter runs only consistent steps: a failed attempt of a compare-exchange of 5 with 5
    // can never be observed where the value is always 5 (the exchange would succeed, and
    // would leave 5 as it is).
    let cas55 = op_step(AtomicOp::Cas, DataType::U32, [5, 5]);
    for ret in [None, Some(5)] {
        let failed = Observed {
            ret,
            success: Some(false),
            ..Observed::default()
        };
        decide(
            "failed identity",
            5,
            &[vec![(cas55.clone(), failed)]],
            5,
            false,
        );
    }
    let success = Observed {
        success: Some(true),
        ..Observed::default()
    };
    decide("successful identity", 5, &[vec![(cas55, success)]], 5, true);
}
