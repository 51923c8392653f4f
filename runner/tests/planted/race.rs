//! The race checker on planted racing answers (part of `planted.rs`): its budget is exact and
//! enforced, a set-aside thread is given back, and its memo of refuted states stays within its
//! bound without changing a verdict.

use super::*;

/// The race checker's budget, pinned on the corpus: a budget of `b` states lets the search
/// expand `b` states. For planted racing final values (which the search must refute
/// exhaustively), the smallest budget that decides is found; one state less is undecided,
/// reported as `after b + 1` (the state it refused), and the runner then says Undecided,
/// never Pass.
#[test]
fn race_budget_is_exact_and_enforced() {
    let loaded = load(&atomcts::default_corpus());
    let profile = Profile::default();
    let explored_of = |why: &str| -> u64 {
        why.rsplit("after ")
            .next()
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no state count in {why:?}"))
    };
    let mut pinned = 0;
    let mut largest = 0;
    for case in &loaded.cases {
        if !case.where_.is_empty() || case.probe.is_some() {
            continue;
        }
        let state = build_state(case).unwrap();
        let Some((entries, at)) = &case.expect else {
            continue;
        };
        let exp = build_expectation(case, &state, entries, at).unwrap();
        let reference = run(case.dialect, &case.asm, &state, &profile).unwrap();
        let (Outcome::Completed(c), Some(l)) = (&reference.outcome, &reference.lowered) else {
            continue;
        };
        let bound = fault_lane_bound(&state, case.dialect != Dialect::Visa);
        for p in plants(&exp, &state, &reference.outcome, Some(l), bound) {
            let (PlantKind::RacingFinal, Observation::Completed(seen)) = (p.kind, &p.observation)
            else {
                continue;
            };
            let decided =
                |b: u64| !matches!(judge(l, &state, c, seen, b), Ok(Judgement::Undecided(_)));
            // Decided without expanding a state (every step forced): nothing to pin.
            if decided(0) {
                continue;
            }
            // The smallest deciding budget.
            let (mut lo, mut hi) = (0u64, 1u64);
            while !decided(hi) {
                lo = hi;
                hi *= 2;
                assert!(hi < 1 << 24, "{}: no budget decides", case.id);
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
            assert!(matches!(
                judge(l, &state, c, seen, b),
                Ok(Judgement::Fail(_))
            ));
            match judge(l, &state, c, seen, b - 1) {
                Ok(Judgement::Undecided(why)) => {
                    assert_eq!(explored_of(&why), b, "{}: {why}", case.id)
                }
                other => panic!("{}: budget {} gave {other:?}", case.id, b - 1),
            }
            if b > 1 {
                let opts = Options {
                    profile: profile.clone(),
                    race_budget: b - 1,
                    cases_arg: "spec-cases".into(),
                    adapter_arg: String::new(),
                };
                let r = run_case(case, &mut Planted(p.observation.clone()), &opts);
                // Other findings (from the expectation) may make it a failure; never a pass.
                assert_ne!(r.status, Status::Pass, "{}", case.id);
            }
            largest = largest.max(b);
            pinned += 1;
        }
    }
    println!(
        "race budget pinned on {pinned} planted racing values; largest deciding budget {largest}"
    );
    assert!(pinned > 50 && largest > 3, "{pinned} {largest}");
}

/// MSL atomic_compare_exchange_weak_explicit without its flag (corpus case
/// `cas_3_threads_no_flag_spurious_failure_allowed`): every element of the answer below is one
/// the case allows, but together they fit no order. Thread 1 (e = 9, never matching) saw 5, so
/// memory held 5: only thread 0's store of its d puts 5 there, and once it has, thread 2 can no
/// longer see 0 (nothing stores 0), nor can thread 0 have seen 0 after; memory cannot end at 3
/// either. The race search must reject it: it reaches 5 by thread 0's success, sets thread 1 aside
/// there (its failure leaves memory unchanged), finds no way on, and on backing out must give
/// thread 1 back before trying thread 0's spurious failure (else 0 -> 3 by thread 2 would seem to
/// explain everything).
#[test]
fn a_set_aside_thread_is_given_back() {
    let loaded = load(&atomcts::default_corpus());
    let case = loaded
        .cases
        .iter()
        .find(|c| {
            c.id.ends_with("cas_3_threads_no_flag_spurious_failure_allowed")
        })
        .expect("the corpus case");
    let state = build_state(case).unwrap();
    let profile = Profile::default();
    let reference = run(case.dialect, &case.asm, &state, &profile).unwrap();
    let (Outcome::Completed(c), Some(l)) = (&reference.outcome, &reference.lowered) else {
        panic!("{}: {:?}", case.id, reference.outcome);
    };
    let atomcts_reference::ir::Instr::Mem(m) = &l.instr else {
        panic!("{}: not a memory instruction", case.id);
    };
    let addr = m.accesses[0].addr;
    let mut seen = c.state.clone();
    for (lane, v) in [0u64, 5, 0].into_iter().enumerate() {
        *seen
            .regs
            .get_mut("e")
            .and_then(|r| r.elems.get_mut(lane))
            .unwrap() = v;
    }
    seen.memory_mut(m.space).write(addr, 4, 3);
    let judged = judge(l, &state, c, &seen, DEFAULT_BUDGET);
    assert!(
        matches!(judged, Ok(Judgement::Fail(_))),
        "the judge says {judged:?}"
    );
    let opts = Options {
        profile,
        race_budget: DEFAULT_BUDGET,
        cases_arg: "spec-cases".into(),
        adapter_arg: String::new(),
    };
    let r = run_case(case, &mut Planted(Observation::Completed(seen)), &opts);
    assert_eq!(r.status, Status::Fail, "{}", case.id);
}

/// The race search's memo of refuted states holds as many states as its byte bound allows,
/// each counted as 48 bytes plus 4 per count (`race::DeadStates`), and is emptied (never
/// grown past the bound) when one more would not fit: memory stays bounded whatever the
/// budget, and nothing is forgotten before it must be.
#[test]
fn the_race_memo_holds_what_its_bound_allows() {
    use atomcts_reference::race::DeadStates;
    for counts in [1usize, 8, 64] {
        let entry = 48 + 4 * counts;
        for (limit, fits) in [(entry * 10, 10), (entry * 10 - 1, 9), (entry, 1)] {
            let mut memo = DeadStates::new(limit);
            let state = |v: u64| (v, vec![7u32; counts]);
            for v in 0..25 {
                memo.insert(state(v));
            }
            assert_eq!(memo.peak, fits, "{counts} counts, bound {limit}");
            assert_eq!(
                memo.emptied as usize,
                24 / fits,
                "{counts} counts, bound {limit}"
            );
            assert!(memo.contains(&state(24)), "{counts} counts, bound {limit}");
            assert!(!memo.contains(&state(25 - fits as u64 - 1)));
        }
    }
}

/// A search with a small memo decides as one with the full memo: forgetting refuted states
/// costs states expanded, never a verdict. Six racing exchanges whose returns were not kept,
/// and a final value none of them stores: every order is refuted.
/// One step of a history: `op` on `ty` with `src`, in the default environment.
pub(super) fn op_step(
    op: atomcts_reference::ir::AtomicOp,
    ty: atomcts_reference::types::DataType,
    src: [u64; 2],
) -> atomcts_reference::race::OpStep {
    atomcts_reference::race::OpStep {
        op,
        ty,
        env: atomcts_reference::ir::Env::default(),
        src,
    }
}

#[test]
fn a_small_race_memo_changes_no_verdict() {
    use atomcts_reference::ir::AtomicOp;
    use atomcts_reference::race::OpStep;
    use atomcts_reference::race::{DeadStates, Observed, Problem, Verdict, check_within};
    use atomcts_reference::types::DataType;
    let ops: Vec<(OpStep, Observed)> = (1..=6)
        .map(|v| {
            (
                op_step(AtomicOp::Exch, DataType::U32, [v, 0]),
                Observed::default(),
            )
        })
        .collect();
    let eq = |a: u64, b: u64| a == b;
    for final_value in [0x100, 3] {
        let problem = Problem {
            init: 0,
            ops: &ops,
            final_value: Some(final_value),
        };
        let mut full = DeadStates::new(atomcts_reference::race::MAX_MEMO_BYTES);
        let big = check_within(&problem, &eq, DEFAULT_BUDGET, &mut full).unwrap();
        let mut small = DeadStates::new(4 * (48 + 4 * ops.len()));
        let little = check_within(&problem, &eq, DEFAULT_BUDGET, &mut small).unwrap();
        match (&big, &little) {
            (Verdict::Fail { explored: a, .. }, Verdict::Fail { explored: b, .. }) => {
                assert_eq!(final_value, 0x100);
                assert!(full.peak > 4 && full.emptied == 0, "{full:?}");
                assert!(small.peak == 4 && small.emptied > 0, "{small:?}");
                assert!(b > a, "{b} states with a small memo, {a} with the full one");
            }
            (Verdict::Pass { .. }, Verdict::Pass { .. }) => assert_eq!(final_value, 3),
            other => panic!("final {final_value:#x}: {other:?}"),
        }
    }
}
