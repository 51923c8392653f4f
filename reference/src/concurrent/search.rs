//! The checker of one address's history across instructions ([`check_history`]; FORMAT.md,
//! "Concurrent cases"): whether some order of all steps of all threads, each thread's steps in
//! its own order, produces every observed return and the final value. In turn:
//!
//! 1. Candidate schedules, each tried in linear time ([`Schedule`]): the orders real schedules
//!    and the built-in adapters produce (the reference's serial order, instruction after
//!    instruction, thread after thread, lanes ascending and descending).
//! 2. Reductions: a thread whose steps are all one unobserved operation is a pool of single
//!    steps; steps that change no value are dropped; identical threads are one class
//!    (symmetry).
//! 3. Walks: where every step's return is observed and fixes its effect (an edge from the value
//!    it read to the value it left), the steps must form a walk from the initial value to the
//!    final one: every value held as often as it is left, every edge reachable ([`walk_defect`]);
//!    otherwise no order exists, decided at once.
//! 4. Block schedules ([`block_order`](super::blocks)): the orders a GPU produces, each
//!    SIMD-group's step of one instruction as one block (lanes ascending or descending), the
//!    blocks in any order; a bounded search that can only pass.
//! 5. The search: depth first over states (memory value, how many threads of each class stand
//!    at each step), on an explicit stack of one small frame per step, with a memo of refuted
//!    states bounded as [`crate::race::DeadStates`] is. Pruned where a step must read a value
//!    monotone bits have passed, where the remaining edges of a walk fall apart, or where float
//!    adds can no longer reach the final value (their rounding errors bounded). It restarts on a
//!    Luby schedule with its candidates in another seeded rotation, keeping the memo, and over
//!    walks it alternates with the same search run backwards from the final value. Every run
//!    is deterministic; the budget counts the states expanded by all runs together, and
//!    running out is undecided, never a pass.

use super::blocks::block_order;
use super::engine::search;
use super::fold::is_identity;
use super::history::{Checked, Equality, History, MAX_SEARCHED, Reason, Schedule, Thread, fits};
use super::walk::{walk, walk_defect};
use crate::error::ModelError;
use crate::race::{MAX_MEMO_BYTES, Step, Verdict};

/// Whether `order` (a thread index per step) produces every observation, each step taking the
/// first effect that fits what was observed of it.
fn plays(h: &History<'_>, order: &[usize], eq: Equality) -> Result<bool, ModelError> {
    let mut next = vec![0usize; h.threads.len()];
    let mut value = h.init;
    for &t in order {
        let (op, obs) = &h.threads[t][next[t]];
        next[t] += 1;
        let Some(e) = op.step(value)?.into_iter().find(|e| fits(obs, e, eq)) else {
            return Ok(false);
        };
        value = e.new;
    }
    Ok(h.final_value.is_none_or(|f| eq.eq(value, f)))
}

/// [`check_history`] with each thread its own instruction.
pub fn check_threads(
    init: u64,
    threads: &[Thread],
    final_value: Option<u64>,
    eq: Equality,
    budget: u64,
) -> Result<Verdict, ModelError> {
    let h = History {
        init,
        threads,
        instrs: &[],
        blocks: &[],
        final_value,
    };
    Ok(check_history(&h, eq, budget)?.verdict)
}

/// Whether some order of all steps of all threads, each thread's steps in order, produces
/// every observed return and the final value (the module's stages, in turn), with a memo of at
/// most [`MAX_MEMO_BYTES`].
pub fn check_history(h: &History<'_>, eq: Equality, budget: u64) -> Result<Checked, ModelError> {
    check_history_within(h, eq, budget, MAX_MEMO_BYTES)
}

/// [`check_history`] with a memo of at most `memo` bytes (half for each direction over walks),
/// counted as [`DeadStates::entry_bytes`](crate::race::DeadStates::entry_bytes) counts a state and 8 bytes for its hash.
pub fn check_history_within(
    h: &History<'_>,
    eq: Equality,
    budget: u64,
    memo: usize,
) -> Result<Checked, ModelError> {
    for s in Schedule::ALL {
        let Some(order) = s.order(h) else {
            continue;
        };
        if plays(h, &order, eq)? {
            return Ok(Checked::decided(
                Verdict::Pass { order },
                Reason::Schedule(s),
            ));
        }
    }
    let (split, origin) = reduce(h.threads);
    let total: usize = split.iter().map(Vec::len).sum();
    if total > MAX_SEARCHED {
        return Ok(Checked::decided(
            Verdict::Undecided { explored: 0 },
            Reason::TooMany,
        ));
    }
    let edges = walk(&split, eq).filter(|_| h.final_value.is_some_and(|f| eq.exact(f)));
    if let (Some(w), Some(f)) = (&edges, h.final_value)
        && let Some(why) = walk_defect(h.init, f, w)
    {
        return Ok(Checked::decided(
            Verdict::Fail {
                explored: 0,
                longest_prefix: Vec::new(),
            },
            Reason::Walk(why),
        ));
    }
    // The order the block search gives is played again, thread by thread: a pass names an
    // order that produces the observation.
    if let Some(order) = block_order(h, eq)?
        && plays(h, &order, eq)?
    {
        return Ok(Checked::decided(Verdict::Pass { order }, Reason::Blocks));
    }
    search(h, &split, &origin, edges, eq, budget, memo)
}

/// The reductions: a thread whose steps are all the same operation with nothing observed
/// constrains no order by its program order (any interleaving of those steps is one of its
/// own), so its steps become single-step threads, which the classes merge with every other
/// copy; such a step that leaves every memory value as it is (a compare-exchange of a value
/// with itself, adding zero) is dropped. With each new thread, the index of the thread it came
/// from.
fn reduce(threads: &[Thread]) -> (Vec<Thread>, Vec<usize>) {
    let mut split = Vec::new();
    let mut origin = Vec::new();
    for (i, t) in threads.iter().enumerate() {
        let blind = t
            .iter()
            .all(|s| s.1.ret.is_none() && s.1.success.is_none() && s.0 == t[0].0);
        if blind && !t.is_empty() {
            if !is_identity(&t[0].0) {
                for s in t {
                    split.push(vec![s.clone()]);
                    origin.push(i);
                }
            }
        } else {
            split.push(t.clone());
            origin.push(i);
        }
    }
    (split, origin)
}
