//! The race checker. Lanes that hit one address within one instruction are serialized in an
//! order the documents do not fix (vISA DWORD_ATOMIC Notes: "they will be serialized and
//! atomically updated, though the order is non-deterministic"; A19). Given what an
//! implementation returned to each lane and left in memory, decide whether some order produces
//! it.
//!
//! The search is per address (per half for F16x2, A20), over states `(memory value, how many
//! operations of each kind are left)`. Operations that are identical, including the value they
//! were observed to return, are one kind with a count (symmetry reduction), and states that
//! cannot reach the observation are memoized. An operation observed to return `r` can only run
//! while memory holds `r`, which prunes most orders at once. The verdict is three-valued: a
//! budget of expanded states bounds the search, and running out is [`Verdict::Undecided`],
//! never a pass.

use crate::error::ModelError;
use crate::ir::{AtomicOp, Env};
use crate::semantics::{Effects, apply};
use crate::types::DataType;
use std::collections::HashSet;
use std::hash::Hash;

/// An operation the checker can apply.
pub trait Step: Clone + Eq + Hash {
    /// The effects of this operation on memory value `old`.
    fn step(&self, old: u64) -> Result<Effects, ModelError>;
}

/// One access's op as a step of the race checker.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpStep {
    /// The op.
    pub op: AtomicOp,
    /// The datum type (F16 for one half of an F16x2).
    pub ty: DataType,
    /// The environment.
    pub env: Env,
    /// The operands.
    pub src: [u64; 2],
}

impl Step for OpStep {
    fn step(&self, old: u64) -> Result<Effects, ModelError> {
        apply(self.op, self.ty, &self.env, old, self.src)
    }
}

/// What was observed of one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Observed {
    /// The returned value, if the lane kept it.
    pub ret: Option<u64>,
    /// Which bits of `ret` the lane kept: all of them, or only the low word where the destination
    /// drops the rest (SASS ATOM: a 64-bit pair starting at R254 ends in RZ).
    pub kept: u64,
    /// The success flag of a compare-exchange, if kept.
    pub success: Option<bool>,
}

impl Default for Observed {
    /// Nothing observed.
    fn default() -> Observed {
        Observed {
            ret: None,
            kept: u64::MAX,
            success: None,
        }
    }
}

impl Observed {
    /// A returned value `ret`, every bit kept.
    pub fn ret(ret: u64) -> Observed {
        Observed {
            ret: Some(ret),
            ..Observed::default()
        }
    }

    /// Whether the model's returned value fits the observation under `eq`: the bits the lane
    /// did not keep are taken from the model.
    pub fn ret_fits(&self, model: u64, eq: &dyn Fn(u64, u64) -> bool) -> bool {
        self.ret
            .is_none_or(|r| eq(model, (r & self.kept) | (model & !self.kept)))
    }
}

/// A budget of expanded states.
pub const DEFAULT_BUDGET: u64 = 2_000_000;

/// The checker's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Some order produces the observation; `order` lists operation indices in that order.
    Pass {
        /// A witness order.
        order: Vec<usize>,
    },
    /// No order produces it.
    Fail {
        /// States expanded.
        explored: u64,
        /// The longest prefix of operations that could be ordered consistently.
        longest_prefix: Vec<usize>,
    },
    /// The budget ran out first; not a pass.
    Undecided {
        /// States expanded.
        explored: u64,
    },
}

/// One address's history.
pub struct Problem<'a, S> {
    /// Memory value before the instruction.
    pub init: u64,
    /// Operations with what was observed of each, in program order.
    pub ops: &'a [(S, Observed)],
    /// Memory value observed after, if it is checked.
    pub final_value: Option<u64>,
}

struct Search<'a, S> {
    kinds: Vec<(&'a S, Observed)>,
    members: Vec<Vec<usize>>,
    counts: Vec<u32>,
    dead: &'a mut DeadStates,
    explored: u64,
    budget: u64,
    order: Vec<usize>,
    longest: Vec<usize>,
    final_value: Option<u64>,
    eq: &'a (dyn Fn(u64, u64) -> bool + Sync),
}

enum Found {
    Yes,
    No,
    OutOfBudget,
}

/// The most bytes the memo of dead states may hold. Past it the memo is emptied (it only
/// prunes: forgetting is sound), so memory stays bounded whatever the budget (issue 7, D10).
pub const MAX_MEMO_BYTES: usize = 256 << 20;

/// The memo of a search's dead states: a memory value with how many operations of each kind
/// (or at each progress level) are still to run, from which the search was refuted. It only
/// prunes, so it is emptied whenever holding one more state would pass its byte bound.
#[derive(Debug)]
pub struct DeadStates {
    states: HashSet<(u64, Vec<u32>)>,
    bytes: usize,
    limit: usize,
    /// The most states held at once.
    pub peak: usize,
    /// How many times it was emptied.
    pub emptied: u32,
}

impl DeadStates {
    /// An empty memo of at most `limit` bytes, as [`DeadStates::entry_bytes`] counts them.
    pub fn new(limit: usize) -> Self {
        DeadStates {
            states: HashSet::new(),
            bytes: 0,
            limit,
            peak: 0,
            emptied: 0,
        }
    }

    /// The bytes one state with `counts` counts is taken to hold: its table slot with the
    /// vector's header (48) and 4 per count.
    pub fn entry_bytes(counts: usize) -> usize {
        48 + 4 * counts
    }

    /// Whether `state` was refuted (and not forgotten since).
    pub fn contains(&self, state: &(u64, Vec<u32>)) -> bool {
        self.states.contains(state)
    }

    /// Remembers a refuted state, first emptying the memo if it would pass its bound.
    pub fn insert(&mut self, state: (u64, Vec<u32>)) {
        let bytes = Self::entry_bytes(state.1.len());
        if self.bytes + bytes > self.limit {
            self.states.clear();
            self.states.shrink_to_fit();
            self.bytes = 0;
            self.emptied += 1;
        }
        self.states.insert(state);
        self.bytes += bytes;
        self.peak = self.peak.max(self.states.len());
    }
}

/// Tries one complete order: each operation takes the first effect consistent with what was
/// observed of it. The witness if it produces the observation; otherwise how many operations
/// of the order fit (all of them when only the final value differs). A failure proves nothing
/// about other orders: the exhaustive search decides.
fn try_order<S: Step>(
    problem: &Problem<'_, S>,
    eq: &(dyn Fn(u64, u64) -> bool + Sync),
    order: impl Iterator<Item = usize>,
) -> Result<Result<Vec<usize>, usize>, ModelError> {
    let mut value = problem.init;
    let mut witness = Vec::with_capacity(problem.ops.len());
    for i in order {
        let (op, obs) = &problem.ops[i];
        let effect = op
            .step(value)?
            .into_iter()
            .find(|e| obs.ret_fits(e.ret, eq) && obs.success.is_none_or(|s| s == e.success));
        let Some(e) = effect else {
            return Ok(Err(witness.len()));
        };
        value = e.new;
        witness.push(i);
    }
    Ok(match problem.final_value {
        Some(f) if !eq(value, f) => Err(witness.len()),
        _ => Ok(witness),
    })
}

/// Decides a fixed order, program order (A28 `program_order`: lanes on one address in the
/// order of their accesses), each operation taking any effect the documents allow that fits
/// what was observed of it. A failure reports the operations that fit before it.
pub fn check_program_order<S: Step>(
    problem: &Problem<'_, S>,
    eq: &(dyn Fn(u64, u64) -> bool + Sync),
) -> Result<Verdict, ModelError> {
    Ok(match try_order(problem, eq, 0..problem.ops.len())? {
        Ok(order) => Verdict::Pass { order },
        Err(fit) => Verdict::Fail {
            explored: 0,
            longest_prefix: (0..fit).collect(),
        },
    })
}

/// Decides whether some order of `problem.ops` produces the observation. `eq(model, observed)`
/// compares a value the model computes with an observed one (bitwise, or NaN-class for
/// profiles where any NaN is allowed).
///
/// The orders hardware most plausibly uses, ascending and descending lane (program) order, are
/// tried first in linear time; only if neither produces the observation does the exhaustive
/// search run, bounded by `budget` expanded states and [`MAX_MEMO_BYTES`] of memo ([`DeadStates`]).
pub fn check<S: Step + Sync>(
    problem: &Problem<'_, S>,
    eq: &(dyn Fn(u64, u64) -> bool + Sync),
    budget: u64,
) -> Result<Verdict, ModelError> {
    check_within(problem, eq, budget, &mut DeadStates::new(MAX_MEMO_BYTES))
}

/// [`check`] with the memo of dead states given (its bound, and what it held after).
pub fn check_within<S: Step + Sync>(
    problem: &Problem<'_, S>,
    eq: &(dyn Fn(u64, u64) -> bool + Sync),
    budget: u64,
    dead: &mut DeadStates,
) -> Result<Verdict, ModelError> {
    let n = problem.ops.len();
    if let Ok(order) = try_order(problem, eq, 0..n)? {
        return Ok(Verdict::Pass { order });
    }
    if let Ok(order) = try_order(problem, eq, (0..n).rev())? {
        return Ok(Verdict::Pass { order });
    }
    let mut kinds: Vec<(&S, Observed)> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, (s, o)) in problem.ops.iter().enumerate() {
        match kinds.iter().position(|(ks, ko)| *ks == s && ko == o) {
            Some(k) => members[k].push(i),
            None => {
                kinds.push((s, *o));
                members.push(vec![i]);
            }
        }
    }
    // Members are popped from the back; keep program order for the witness.
    for m in &mut members {
        m.reverse();
    }
    let counts = members.iter().map(|m| m.len() as u32).collect();
    let mut search = Search {
        kinds,
        members,
        counts,
        dead,
        explored: 0,
        budget,
        order: Vec::new(),
        longest: Vec::new(),
        final_value: problem.final_value,
        eq,
    };
    // The search recurses once per operation (at most `MAX_LANES` x channels deep): small
    // histories run on the caller's stack, large ones on a thread with room for the depth.
    let found = if problem.ops.len() <= SMALL_HISTORY {
        search.dfs(problem.init)?
    } else {
        let init = problem.init;
        let stack = 64 * 1024 + problem.ops.len() * 16 * 1024;
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn_scoped(scope, || search.dfs(init))
                .map_err(|e| {
                    ModelError::Limit(format!("cannot start the race checker's thread: {e}"))
                })?
                .join()
                .map_err(|_| crate::internal!("race checker thread panicked"))?
        })?
    };
    Ok(match found {
        Found::Yes => Verdict::Pass {
            order: search.order,
        },
        Found::No => Verdict::Fail {
            explored: search.explored,
            longest_prefix: search.longest,
        },
        Found::OutOfBudget => Verdict::Undecided {
            explored: search.explored,
        },
    })
}

/// Histories up to this many operations are searched on the caller's stack.
const SMALL_HISTORY: usize = 64;

impl<S: Step + Sync> Search<'_, S> {
    fn dfs(&mut self, value: u64) -> Result<Found, ModelError> {
        if self.counts.iter().all(|c| *c == 0) {
            return Ok(match self.final_value {
                Some(f) if !(self.eq)(value, f) => Found::No,
                _ => Found::Yes,
            });
        }
        // Stutter reduction: an operation observed to return exactly `value` whose effect leaves
        // memory at `value` can only ever run while memory holds `value`, and running it does not
        // change what any other operation sees; so run it now instead of branching over when.
        let mut stuttered = Vec::new();
        'greedy: loop {
            for k in 0..self.kinds.len() {
                if self.counts[k] == 0 {
                    continue;
                }
                let (op, obs) = self.kinds[k];
                let Some(r) = obs.ret else { continue };
                if r != value {
                    continue;
                }
                let effects = op.step(value)?;
                // Every effect consistent with the observation must leave memory unchanged (a
                // weak compare-exchange that may also succeed is not a stutter).
                let mut consistent = effects
                    .iter()
                    .filter(|e| e.ret == r && obs.success.is_none_or(|s| s == e.success))
                    .peekable();
                let fits = consistent.peek().is_some() && consistent.all(|e| e.new == value);
                if fits {
                    let Some(idx) = self.members[k].pop() else {
                        return Err(crate::internal!("race checker member list out of step"));
                    };
                    self.counts[k] -= 1;
                    self.order.push(idx);
                    stuttered.push(k);
                    continue 'greedy;
                }
            }
            break;
        }
        if self.order.len() > self.longest.len() {
            self.longest = self.order.clone();
        }
        let found = self.branch(value)?;
        if matches!(found, Found::No) {
            for k in stuttered.into_iter().rev() {
                let Some(idx) = self.order.pop() else {
                    return Err(crate::internal!("race checker order out of step"));
                };
                self.members[k].push(idx);
                self.counts[k] += 1;
            }
        }
        Ok(found)
    }

    fn branch(&mut self, value: u64) -> Result<Found, ModelError> {
        if self.counts.iter().all(|c| *c == 0) {
            return Ok(match self.final_value {
                Some(f) if !(self.eq)(value, f) => Found::No,
                _ => Found::Yes,
            });
        }
        let key = (value, self.counts.clone());
        if self.dead.contains(&key) {
            return Ok(Found::No);
        }
        self.explored += 1;
        if self.explored > self.budget {
            return Ok(Found::OutOfBudget);
        }
        for k in 0..self.kinds.len() {
            if self.counts[k] == 0 {
                continue;
            }
            let (op, obs) = self.kinds[k];
            for effect in op.step(value)? {
                if !obs.ret_fits(effect.ret, self.eq) {
                    continue;
                }
                if obs.success.is_some_and(|s| s != effect.success) {
                    continue;
                }
                self.counts[k] -= 1;
                let Some(idx) = self.members[k].pop() else {
                    return Err(crate::internal!("race checker member list out of step"));
                };
                self.order.push(idx);
                if self.order.len() > self.longest.len() {
                    self.longest = self.order.clone();
                }
                match self.dfs(effect.new)? {
                    Found::No => {}
                    other => return Ok(other),
                }
                self.order.pop();
                self.members[k].push(idx);
                self.counts[k] += 1;
            }
        }
        self.dead.insert(key);
        Ok(Found::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{AtomicOp, Env};
    use crate::types::DataType;

    fn op(op: AtomicOp, s0: u64, s1: u64) -> OpStep {
        OpStep {
            op,
            ty: DataType::U32,
            env: Env::default(),
            src: [s0, s1],
        }
    }

    fn obs(ret: u64) -> Observed {
        Observed::ret(ret)
    }

    fn bits(a: u64, b: u64) -> bool {
        a == b
    }

    fn run(init: u64, ops: &[(OpStep, Observed)], fin: Option<u64>) -> Verdict {
        check(
            &Problem {
                init,
                ops,
                final_value: fin,
            },
            &bits,
            DEFAULT_BUDGET,
        )
        .unwrap()
    }

    #[test]
    fn two_adds_in_either_order() {
        let ops = [
            (op(AtomicOp::Add, 1, 0), obs(12)),
            (op(AtomicOp::Add, 2, 0), obs(10)),
        ];
        assert_eq!(run(10, &ops, Some(13)), Verdict::Pass { order: vec![1, 0] });
        // Returns that no order gives.
        let bad = [
            (op(AtomicOp::Add, 1, 0), obs(10)),
            (op(AtomicOp::Add, 2, 0), obs(10)),
        ];
        assert!(matches!(run(10, &bad, Some(13)), Verdict::Fail { .. }));
        // Right returns, wrong final memory.
        assert!(matches!(run(10, &ops, Some(14)), Verdict::Fail { .. }));
    }

    #[test]
    fn exchange_chain_must_be_a_permutation() {
        // init 0; lanes exchange 1, 2, 3. Observed: lane0 got 3, lane1 got 0, lane2 got 2.
        let ops = [
            (op(AtomicOp::Exch, 1, 0), obs(3)),
            (op(AtomicOp::Exch, 2, 0), obs(0)),
            (op(AtomicOp::Exch, 3, 0), obs(2)),
        ];
        assert_eq!(
            run(0, &ops, Some(1)),
            Verdict::Pass {
                order: vec![1, 2, 0]
            }
        );
        // Two lanes cannot both see the initial value.
        let bad = [
            (op(AtomicOp::Exch, 1, 0), obs(0)),
            (op(AtomicOp::Exch, 2, 0), obs(0)),
        ];
        assert!(matches!(run(0, &bad, None), Verdict::Fail { .. }));
    }

    #[test]
    fn unobserved_returns_only_constrain_memory() {
        let ops = [
            (op(AtomicOp::Exch, 1, 0), Observed::default()),
            (op(AtomicOp::Exch, 2, 0), Observed::default()),
        ];
        assert!(matches!(run(0, &ops, Some(1)), Verdict::Pass { .. }));
        assert!(matches!(run(0, &ops, Some(2)), Verdict::Pass { .. }));
        assert!(matches!(run(0, &ops, Some(0)), Verdict::Fail { .. }));
    }

    /// 32 lanes of CAS with many equal operands: one winner, the rest fail.
    #[test]
    fn thirty_two_cas_lanes_with_equal_operands_decide_fast() {
        let mut ops = Vec::new();
        for lane in 0..32u64 {
            let ret = if lane == 7 { 0 } else { 1 + (lane % 4) };
            ops.push((op(AtomicOp::Cas, 0, 1 + (lane % 4)), obs(ret)));
        }
        // Lane 7 (new = 4) won first; everybody else then saw 4... not 1 + lane % 4: fails.
        let v = run(0, &ops, Some(4));
        assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
        // Consistent: the winner stores 4 and every other lane sees 4.
        let ops: Vec<_> = (0..32u64)
            .map(|lane| (op(AtomicOp::Cas, 0, 4), obs(if lane == 7 { 0 } else { 4 })))
            .collect();
        assert!(matches!(run(0, &ops, Some(4)), Verdict::Pass { .. }));
        // Ambiguous returns with equal operands: 16 lanes CAS(0 -> 1), 16 lanes CAS(1 -> 0).
        let mut ops = Vec::new();
        for lane in 0..32u64 {
            let (cmp, new) = if lane < 16 { (0, 1) } else { (1, 0) };
            ops.push((op(AtomicOp::Cas, cmp, new), obs(lane % 2)));
        }
        let v = run(0, &ops, None);
        assert!(!matches!(v, Verdict::Undecided { .. }), "{v:?}");
    }

    /// 1024 lanes of add with observed returns.
    #[test]
    fn one_thousand_twenty_four_adds() {
        let n = 1024u64;
        // Serialize in a scrambled order to build a consistent observation.
        let mut value = 5u64;
        let mut rets = vec![0u64; n as usize];
        for k in 0..n {
            let lane = (k * 389) % n;
            rets[lane as usize] = value;
            value = (value + lane + 1) & 0xFFFF_FFFF;
        }
        let ops: Vec<_> = (0..n)
            .map(|l| (op(AtomicOp::Add, l + 1, 0), obs(rets[l as usize])))
            .collect();
        assert!(matches!(run(5, &ops, Some(value)), Verdict::Pass { .. }));
        assert!(matches!(
            run(5, &ops, Some(value + 1)),
            Verdict::Fail { .. }
        ));
        // All returns unobserved: only the final value matters.
        let blind: Vec<_> = (0..n)
            .map(|_| (op(AtomicOp::Add, 1, 0), Observed::default()))
            .collect();
        assert!(matches!(run(0, &blind, Some(n)), Verdict::Pass { .. }));
        assert!(matches!(run(0, &blind, Some(n - 1)), Verdict::Fail { .. }));
    }

    /// A plausible hardware order, descending lanes, is found at once: 1024 binary32 adds with
    /// distinct operands whose returns are not kept (only the final value is checked), so the
    /// exhaustive search could only ever give up.
    #[test]
    fn descending_lane_order_is_not_the_worst_case() {
        let n = 1024u64;
        let mut ops = Vec::new();
        let mut value = 0x3f80_0000u64; // 1.0
        let mut order = Vec::new();
        for l in 0..n {
            let x = f32::from_bits(0x3f80_0000 + (l as u32) * 0x1357);
            ops.push((
                OpStep {
                    op: AtomicOp::Add,
                    ty: DataType::F32,
                    env: Env::default(),
                    src: [u64::from(x.to_bits()), 0],
                },
                Observed::default(),
            ));
        }
        for l in (0..n).rev() {
            value = ops[l as usize].0.step(value).unwrap()[0].new;
            order.push(l as usize);
        }
        let v = check(
            &Problem {
                init: 0x3f80_0000,
                ops: &ops,
                final_value: Some(value),
            },
            &bits,
            1000,
        )
        .unwrap();
        assert_eq!(v, Verdict::Pass { order });
    }

    #[test]
    fn budget_exhaustion_is_undecided_not_pass() {
        // Distinct unobserved adds with an impossible final value explore 2^n subsets.
        let ops: Vec<_> = (0..40u64)
            .map(|l| (op(AtomicOp::Add, 1 << l, 0), Observed::default()))
            .collect();
        let v = check(
            &Problem {
                init: 0,
                ops: &ops,
                final_value: Some(1),
            },
            &bits,
            1000,
        )
        .unwrap();
        assert_eq!(v, Verdict::Undecided { explored: 1001 });
    }

    /// 64 lanes of unsigned max whose returns come from the reverse of a scrambled order: many
    /// lanes see the same intermediate maximum without changing it. Without the stutter
    /// reduction this explores every subset of them.
    #[test]
    fn max_lanes_that_change_nothing_do_not_explode() {
        let n = 64u64;
        let vals: Vec<u64> = (0..n).map(|l| (l * 31153) % 65536).collect();
        let mut v = 0u64;
        let mut rets = vec![0; n as usize];
        for l in (0..n).rev() {
            rets[l as usize] = v;
            v = v.max(vals[l as usize]);
        }
        let ops: Vec<_> = (0..n)
            .map(|l| {
                (
                    op(AtomicOp::Max, vals[l as usize], 0),
                    obs(rets[l as usize]),
                )
            })
            .collect();
        let verdict = check(
            &Problem {
                init: 0,
                ops: &ops,
                final_value: Some(v),
            },
            &bits,
            10_000,
        )
        .unwrap();
        assert!(matches!(verdict, Verdict::Pass { .. }), "{verdict:?}");
        let verdict = check(
            &Problem {
                init: 0,
                ops: &ops,
                final_value: Some(v + 1),
            },
            &bits,
            10_000,
        )
        .unwrap();
        assert!(matches!(verdict, Verdict::Fail { .. }), "{verdict:?}");
    }

    /// A weak compare-exchange whose returned value matches memory may succeed or fail
    /// spuriously: the stutter reduction must not assume the failure.
    #[test]
    fn weak_cas_with_unknown_success_may_have_swapped() {
        let weak = OpStep {
            op: AtomicOp::Cas,
            ty: DataType::U32,
            env: Env {
                weak: true,
                ..Env::default()
            },
            src: [77, 5],
        };
        let ops = [(weak, Observed::ret(77))];
        assert!(matches!(run(77, &ops, Some(5)), Verdict::Pass { .. }));
        assert!(matches!(run(77, &ops, Some(77)), Verdict::Pass { .. }));
        assert!(matches!(run(77, &ops, Some(6)), Verdict::Fail { .. }));
    }
}
