//! The concurrent checker's inputs and answers (one address's [`History`], the [`Checked`]
//! verdict and its [`Reason`]), its bounds, and the candidate [`Schedule`]s it tries first.

use crate::float::{self, Format};
use crate::race::OpStep;
use crate::race::{Observed, Verdict};
use crate::semantics::Effect;

/// Histories on one address up to this many operations (after the reductions) are searched;
/// longer ones are decided by the candidate schedules or the commuting fold, or are undecided.
/// The memo keys a state by a count per step of each class, so one state costs up to this
/// many counts.
pub const MAX_SEARCHED: usize = 16_384;

/// States a search run expands before it restarts, beside one per step of the history, times
/// the run's Luby number (1, 1, 2, 1, 1, 2, 4, ...).
pub const RESTART_STATES: u64 = 256;

/// Walks of up to this many edges are pruned when their remaining edges fall apart (a check
/// linear in the edges, made at every state).
pub const CONNECTED_EDGES: usize = 1024;

/// One thread's steps on one address with what was observed of each, in program order.
pub type Thread = Vec<(OpStep, Observed)>;

/// How the checker compares a value the model computes with an observed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Equality {
    /// Bit for bit.
    Bits,
    /// Bit for bit, or both NaNs of this format (profiles that allow any NaN).
    NanClass(Format),
}

impl Equality {
    /// Whether the model's `model` fits the observed `seen`.
    pub fn eq(self, model: u64, seen: u64) -> bool {
        model == seen
            || matches!(self, Equality::NanClass(f) if float::is_nan(f, model) && float::is_nan(f, seen))
    }

    /// Whether `v` fits only itself.
    pub(super) fn exact(self, v: u64) -> bool {
        !matches!(self, Equality::NanClass(f) if float::is_nan(f, v))
    }
}

/// One address's history.
#[derive(Clone, Copy, Debug)]
pub struct History<'a> {
    /// Memory value before any step.
    pub init: u64,
    /// Each thread's steps.
    pub threads: &'a [Thread],
    /// The instruction of each thread, for the candidate schedules (empty: each thread is its
    /// own instruction).
    pub instrs: &'a [usize],
    /// The block of each thread, for the block schedules: threads of one instruction and one
    /// SIMD-group, which run each step together (empty: no block schedules).
    pub blocks: &'a [usize],
    /// Memory value observed after every step, where it is checked.
    pub final_value: Option<u64>,
}

/// Why the checker decided as it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A candidate schedule produced the observation.
    Schedule(Schedule),
    /// A block schedule produced the observation (a GPU's order: each SIMD-group's step as one
    /// block).
    Blocks,
    /// The search decided, or ran out of its budget.
    Search,
    /// The observed returns form no walk (the walk check of the search, `walk_defect`).
    Walk(String),
    /// More than [`MAX_SEARCHED`] operations after the reductions: not searched.
    TooMany,
}

/// A verdict with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The verdict; a pass's order lists thread indices of the history, one per step.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
    /// The most refuted states the search's memo held at once (each direction's, added).
    pub remembered: usize,
    /// How many times a memo was emptied to stay within its bound.
    pub forgotten: u32,
}

impl Checked {
    pub(super) fn decided(verdict: Verdict, reason: Reason) -> Checked {
        Checked {
            verdict,
            reason,
            remembered: 0,
            forgotten: 0,
        }
    }
}

/// The candidate schedules, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Iteration `i` of every thread (instructions, then lanes, ascending), then `i + 1`: the
    /// reference's serial order (`execute_serial`).
    Serial,
    /// The same with threads descending.
    SerialDescending,
    /// Each instruction's iterations (its threads round-robin) before the next instruction.
    InstructionMajor,
    /// The same with instructions and threads descending.
    InstructionMajorDescending,
    /// Each thread to its end before the next one.
    ThreadMajor,
    /// The same with threads descending.
    ThreadMajorDescending,
    /// Every step in the order of the value it returned (where every return is observed):
    /// the only order adds that only grow the value can run in.
    ReturnsAscending,
}

impl Schedule {
    /// Every schedule, in the order they are tried.
    pub const ALL: [Schedule; 7] = [
        Schedule::Serial,
        Schedule::SerialDescending,
        Schedule::InstructionMajor,
        Schedule::InstructionMajorDescending,
        Schedule::ThreadMajor,
        Schedule::ThreadMajorDescending,
        Schedule::ReturnsAscending,
    ];

    /// For people.
    pub fn name(self) -> &'static str {
        match self {
            Schedule::Serial => "the reference's serial order",
            Schedule::SerialDescending => "the serial order with lanes descending",
            Schedule::InstructionMajor => "instruction after instruction",
            Schedule::InstructionMajorDescending => {
                "instruction after instruction, both descending"
            }
            Schedule::ThreadMajor => "thread after thread",
            Schedule::ThreadMajorDescending => "thread after thread, descending",
            Schedule::ReturnsAscending => "the observed returns ascending",
        }
    }

    /// The order (a thread index per step) for the history, if the schedule gives one.
    pub fn order(self, h: &History<'_>) -> Option<Vec<usize>> {
        if self == Schedule::ReturnsAscending {
            let mut steps = Vec::new();
            for (t, thread) in h.threads.iter().enumerate() {
                for (j, (_, o)) in thread.iter().enumerate() {
                    steps.push((o.ret.filter(|_| o.kept == u64::MAX)?, t, j));
                }
            }
            steps.sort_unstable();
            return Some(steps.into_iter().map(|(_, t, _)| t).collect());
        }
        let lens: Vec<usize> = h.threads.iter().map(Vec::len).collect();
        Some(self.threads_in_turn(&lens, h.instrs))
    }

    /// The order of a schedule that takes threads in turn.
    fn threads_in_turn(self, lens: &[usize], instrs: &[usize]) -> Vec<usize> {
        let ascending: Vec<usize> = (0..lens.len()).collect();
        let descending: Vec<usize> = ascending.iter().rev().copied().collect();
        let instr = |t: usize| instrs.get(t).copied().unwrap_or(t);
        let mut out = Vec::with_capacity(lens.iter().sum());
        match self {
            Schedule::Serial => round_robin(&ascending, lens, &mut out),
            Schedule::SerialDescending => round_robin(&descending, lens, &mut out),
            Schedule::ThreadMajor | Schedule::ThreadMajorDescending => {
                let ts = if self == Schedule::ThreadMajor {
                    &ascending
                } else {
                    &descending
                };
                for &t in ts {
                    out.extend(std::iter::repeat_n(t, lens[t]));
                }
            }
            Schedule::InstructionMajor
            | Schedule::InstructionMajorDescending
            | Schedule::ReturnsAscending => {
                let ts = if self == Schedule::InstructionMajor {
                    &ascending
                } else {
                    &descending
                };
                let mut start = 0;
                while start < ts.len() {
                    let k = instr(ts[start]);
                    let end = start + ts[start..].iter().take_while(|&&t| instr(t) == k).count();
                    round_robin(&ts[start..end], lens, &mut out);
                    start = end;
                }
            }
        }
        out
    }
}

/// Iteration `j` of each of `ts` in turn, then `j + 1`.
fn round_robin(ts: &[usize], lens: &[usize], out: &mut Vec<usize>) {
    let longest = ts.iter().map(|&t| lens[t]).max().unwrap_or(0);
    for j in 0..longest {
        out.extend(ts.iter().copied().filter(|&t| j < lens[t]));
    }
}

/// Whether an effect fits what was observed of its step.
pub(super) fn fits(obs: &Observed, e: &Effect, eq: Equality) -> bool {
    obs.ret_fits(e.ret, &|a, b| eq.eq(a, b)) && obs.success.is_none_or(|s| s == e.success)
}
