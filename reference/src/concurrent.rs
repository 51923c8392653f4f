//! Atomicity across instructions (issue 12): several instructions of one dialect that run at
//! the same time on shared memory, each with its own lanes, each repeated `iterations` times.
//!
//! Every document says its operation is performed atomically (SASS ATOM, "Atomic Operations";
//! vISA DWORD_ATOMIC, Description and Notes; MSL, "Atomic Functions"), and none says atomic
//! only with respect to the same operation. So an observation passes if, per address, some
//! total order of all read-modify-writes of all instructions and iterations, consistent with
//! each thread's own order (a thread is one access of one instruction: its iterations run in
//! order), produces every observed returned value and the final value.
//!
//! - [`check_threads`] is the race checker of [`crate::race`] extended with program order:
//!   the search state is the memory value plus, per class of identical threads (symmetry
//!   reduction: threads with the same operations and observations are interchangeable), how
//!   many of them have run how many iterations. Three-valued with a budget of expanded states;
//!   running out is undecided, never a pass.
//! - [`commutative_final`]: when no returned value is observed and every operation on the
//!   address commutes with every other (integer add, subtract, wrapping increment and
//!   decrement together; or one of and, or, xor, min, max alone), the final value is the same
//!   in every order and decides alone, in time linear in the number of operations.
//! - [`execute_serial`]: one allowed serialization (iterations round-robin over the
//!   instructions), the reference's answer.
//! - [`judge`]: the judgement of an observation (final states of every instruction, and the
//!   per-iteration returned values where the implementation reports them).

use crate::check::{Judgement, Mismatch};
use crate::error::ModelError;
use crate::exec::{Resolved, resolve};
use crate::float;
use crate::ir::{AtomicOp, Dest, Instr, Lowered, Lowering, MemInstr, RegField};
use crate::knobs::Profile;
use crate::outcome::Outcome;
use crate::program::Program;
use crate::race::{DeadStates, Observed, Step, Verdict};
use crate::semantics::OpStep;
use crate::state::{Loc, State};
use crate::types::{DataType, Space, mask};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Most iterations one concurrent instruction may ask for.
pub const MAX_ITERATIONS: u32 = 1 << 16;

/// Most read-modify-writes of all instructions and iterations in one concurrent case.
pub const MAX_OPERATIONS: u64 = 1 << 22;

/// Most bytes of memory the serialization may copy (iterations times allocated memory).
pub const MAX_COPIED: u64 = 1 << 30;

/// Histories on one address up to this many operations are searched; longer ones are decided
/// by [`commutative_final`] or are undecided (the search recurses once per operation).
pub const MAX_SEARCHED: usize = 16_384;

/// The updates a compare-and-swap loop may apply ([`CasLoop::update`]).
pub const LOOP_UPDATES: &[AtomicOp] = &[
    AtomicOp::Add,
    AtomicOp::Sub,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Min,
    AtomicOp::Max,
];

/// A compare-and-swap loop (FORMAT.md, "Compare-and-swap loops"): each lane of a concurrent
/// compare-and-swap instruction retries until its compare-and-swap succeeds, once per
/// iteration. SASS ATOM `.CAS` returns the old value M and swaps when `M == Rb` (Atomic
/// Operations table); vISA DWORD_ATOMIC CMPXCHG returns the old value and writes when
/// `old == src1` (DWORD_ATOMIC_OP table); MSL `atomic_compare_exchange_weak_explicit` returns
/// whether it swapped and, when it did not, writes the value held into `expected`, and may
/// fail spuriously. So every attempt returns the value it read: the first attempt of a lane
/// compares with its given compare operand, every later attempt with the value the previous
/// attempt returned, and the value stored is always `update(compare, operand)`. An iteration
/// ends with its first successful attempt; the next iteration's first compare is the value
/// that success stored (what the lane last knew memory held).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CasLoop {
    /// `f` in `new = f(compare)`: one of [`LOOP_UPDATES`], on the instruction's type
    /// (`min`/`max` signed for a signed type).
    pub update: AtomicOp,
    /// The update's operand `k`: `new = compare + k`, `compare | k`, `max(compare, k)`, ...
    pub operand: u64,
}

impl CasLoop {
    /// The step a successful attempt amounts to: `update` by `operand` at the value it read.
    pub fn step(&self, ty: DataType, env: crate::ir::Env) -> OpStep {
        OpStep {
            op: self.update,
            ty,
            env: crate::ir::Env { weak: false, ..env },
            src: [self.operand & mask(ty.bits()), 0],
        }
    }

    /// `f(compare)`: the value an attempt with this compare stores when it succeeds.
    pub fn new_value(
        &self,
        ty: DataType,
        env: crate::ir::Env,
        compare: u64,
    ) -> Result<u64, ModelError> {
        self.step(ty, env)
            .step(compare)?
            .first()
            .map(|e| e.new)
            .ok_or_else(|| crate::internal!("a loop update with no effect"))
    }
}

/// Most attempts one lane of the serial execution makes in one iteration: nothing runs
/// between its attempts, so the second one always succeeds.
const SERIAL_ATTEMPTS: u32 = 2;

/// The final value every order of these operations produces, if they all commute and none has
/// an observed returned value; `None` when the operations do not qualify.
pub fn commutative_final(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    if threads
        .iter()
        .flatten()
        .any(|(_, o)| o.ret.is_some() || o.success.is_some())
    {
        return None;
    }
    fold_if_commuting(init, threads)
}

/// The final value every order of these operations produces, whatever they were observed to
/// return, when they provably commute on every value they can meet; else `None`. Three sound
/// rules, each linear in the number of operations:
/// - integer add, subtract and wrapping increment/decrement (addition modulo 2^w);
/// - bounded increment and decrement (SASS `.INC`/`.DEC`) that can never reach a bound: from
///   `init`, no order climbs to an increment's bound or down to zero or above a decrement's
///   bound, so each is plain +1 or -1;
/// - one of and, or, xor, min, max alone; or and, or, xor on pairwise disjoint bit fields
///   (each kind its own bits) together with adds that never carry into those bits.
///
/// Operations that change no value at all ([`is_identity`]) and compare-exchanges observed to
/// fail (reads: a loop's failed attempts) commute with everything.
pub fn fold_if_commuting(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    let ops = integer_changes(threads)?;
    let Some(first) = ops.first() else {
        return Some(init);
    };
    let ty = first.ty;
    let w = mask(ty.bits());
    let fold = |v0: u64| -> Option<u64> {
        let mut v = v0;
        for s in &ops {
            v = s.step(v).ok()?.first()?.new;
        }
        Some(v)
    };
    let kinds: HashSet<AtomicOp> = ops.iter().map(|s| s.op).collect();
    let additive = |op: &AtomicOp| {
        matches!(
            op,
            AtomicOp::Add | AtomicOp::Sub | AtomicOp::Inc | AtomicOp::Dec | AtomicOp::PreDec
        )
    };
    if kinds.iter().all(additive) {
        return fold(init);
    }
    if kinds.len() == 1
        && matches!(
            first.op,
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Min | AtomicOp::Max
        )
    {
        return fold(init);
    }
    let bounded = |op: &AtomicOp| matches!(op, AtomicOp::IncBounded | AtomicOp::DecBounded);
    if kinds.iter().all(bounded) {
        let ups = ops.iter().filter(|s| s.op == AtomicOp::IncBounded).count() as u64;
        let downs = ops.len() as u64 - ups;
        let v = init & w;
        let top = v.checked_add(ups)?;
        let inc_bound = ops
            .iter()
            .filter(|s| s.op == AtomicOp::IncBounded)
            .map(|s| s.src[0] & w)
            .min()
            .unwrap_or(u64::MAX);
        let dec_bound = ops
            .iter()
            .filter(|s| s.op == AtomicOp::DecBounded)
            .map(|s| s.src[0] & w)
            .min()
            .unwrap_or(u64::MAX);
        // Before any increment the value is below `top`; it must stay below its bound. Before
        // any decrement it is between `v - downs + 1` and `top`: not zero, not above its bound.
        let safe =
            (ups == 0 || top <= inc_bound) && (downs == 0 || (v >= downs && top <= dec_bound));
        return safe.then(|| (v + ups - downs) & w);
    }
    // Bit fields: each bitwise kind's bits, pairwise disjoint; adds (non-negative increments
    // only) confined below the lowest of them.
    let (lo, sum) = fields_and_low_sum(init, &ops, ty)?;
    if lo < 64 && sum > mask(lo) {
        return None;
    }
    fold(init)
}

/// The steps of a history that may change memory ([`changes_nothing`] aside), when they all
/// share one integer type and one environment; `None` otherwise. A float type (F16x2 included:
/// each half is binary16) neither folds nor has monotone bits: its adds round, and adds of
/// either sign can lower any bit.
fn integer_changes(threads: &[Vec<(OpStep, Observed)>]) -> Option<Vec<&OpStep>> {
    let ops: Vec<&OpStep> = threads
        .iter()
        .flatten()
        .filter(|(s, o)| !changes_nothing(s, o))
        .map(|(s, _)| s)
        .collect();
    let uniform = ops.first().is_none_or(|first| {
        first.ty.float_format().is_none()
            && ops.iter().all(|s| (s.ty, s.env) == (first.ty, first.env))
    });
    uniform.then_some(ops)
}

/// The low bits of the value that never decrease in any order of these operations, when
/// there are such bits: integer adds of non-negative increments (and increments) that cannot
/// carry out of those bits, beside and/or/xor on pairwise disjoint fields above them (failed
/// compare-exchanges and operations that change nothing aside). Then the low bits count the
/// increments applied so far, and a step observed to return a value whose low bits are below
/// the current ones can never run: [`check_threads`] prunes such states at once.
pub fn monotone_field(init: u64, threads: &[Vec<(OpStep, Observed)>]) -> Option<u64> {
    let ops = integer_changes(threads)?;
    let ty = ops.first()?.ty;
    let (lo, sum) = fields_and_low_sum(init, &ops, ty)?;
    let low = mask(lo);
    (lo > 0 && sum <= low).then_some(low)
}

/// Integer adds of non-negative increments and increments beside and/or/xor on pairwise
/// disjoint bit fields (each bitwise kind's bits, an AND's being the bits it clears): the
/// position of the lowest field's lowest bit (the type's width without fields) and the sum of
/// `init`'s bits below it and every increment. `None` for any other operation, overlapping
/// fields, or a sum past 64 bits.
fn fields_and_low_sum(init: u64, ops: &[&OpStep], ty: DataType) -> Option<(u32, u64)> {
    let w = mask(ty.bits());
    let bitwise = |op: AtomicOp| matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor);
    if !ops
        .iter()
        .all(|s| bitwise(s.op) || matches!(s.op, AtomicOp::Add | AtomicOp::Inc))
    {
        return None;
    }
    let mut fields: BTreeMap<AtomicOp, u64> = BTreeMap::new();
    for s in ops.iter().filter(|s| bitwise(s.op)) {
        let region = match s.op {
            AtomicOp::And => !s.src[0] & w,
            _ => s.src[0] & w,
        };
        *fields.entry(s.op).or_insert(0) |= region;
    }
    let regions: Vec<u64> = fields.values().copied().collect();
    for (i, a) in regions.iter().enumerate() {
        if regions[i + 1..].iter().any(|b| a & b != 0) {
            return None;
        }
    }
    let all_bits = regions.iter().fold(0u64, |m, r| m | r);
    let lo = if all_bits == 0 {
        ty.bits()
    } else {
        all_bits.trailing_zeros()
    };
    let mut sum = init & mask(lo);
    for s in ops.iter().filter(|s| !bitwise(s.op)) {
        sum = sum.checked_add(if s.op == AtomicOp::Inc {
            1
        } else {
            s.src[0] & w
        })?;
    }
    Some((lo, sum))
}

/// Whether a step leaves memory as it is wherever it runs: [`is_identity`], or a
/// compare-exchange observed to fail (a read: a loop's failed attempt).
fn changes_nothing(s: &OpStep, o: &Observed) -> bool {
    is_identity(s) || (s.op == AtomicOp::Cas && o.success == Some(false))
}

/// Whether `op` leaves every memory value unchanged: a bitwise compare-exchange whose new
/// value is its comparand, or an integer add, subtract, or, xor of zero.
pub fn is_identity(op: &OpStep) -> bool {
    // F16x2 has a float format too (its halves').
    let int = op.ty.float_format().is_none();
    match op.op {
        AtomicOp::Cas => {
            op.src[0] == op.src[1] && (int || matches!(op.env.compare, crate::ir::Compare::Bitwise))
        }
        AtomicOp::Add | AtomicOp::Sub | AtomicOp::Or | AtomicOp::Xor => int && op.src[0] == 0,
        _ => false,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Yes,
    No,
    OutOfBudget,
}

struct Search<'a> {
    /// One representative step list per class.
    classes: Vec<&'a [(OpStep, Observed)]>,
    /// Per class, the threads (indices into the history) and how far each has run.
    members: Vec<Vec<(usize, u32)>>,
    /// Per class, how many of its threads are at each progress level (the memo key's part).
    levels: Vec<Vec<u32>>,
    remaining: u64,
    /// Dead states, bounded as [`crate::race::check`]'s are.
    dead: DeadStates,
    explored: u64,
    budget: u64,
    order: Vec<usize>,
    longest: Vec<usize>,
    final_value: Option<u64>,
    eq: &'a (dyn Fn(u64, u64) -> bool + Sync),
    /// [`monotone_field`] of the history, if any.
    monotone: Option<u64>,
}

/// Whether some order of all steps of all threads, each thread's steps in order, produces every
/// observed return and the final value. `order` in a pass lists thread indices, one per step.
pub fn check_threads(
    init: u64,
    threads: &[Vec<(OpStep, Observed)>],
    final_value: Option<u64>,
    eq: &(dyn Fn(u64, u64) -> bool + Sync),
    budget: u64,
) -> Result<Verdict, ModelError> {
    // Symmetry across identical iterations: a thread whose steps are all the same operation
    // with nothing observed constrains no order by its program order (any interleaving of
    // those steps is one of its own), so its steps become single-step threads, which the
    // classes below merge with every other copy. An unobserved step that leaves every memory
    // value as it is (a compare-exchange of a value with itself, adding zero) is dropped.
    let split: Vec<Vec<(OpStep, Observed)>> = threads
        .iter()
        .flat_map(|t| {
            let blind = t
                .iter()
                .all(|s| s.1.ret.is_none() && s.1.success.is_none() && s.0 == t[0].0);
            if blind && !t.is_empty() {
                if is_identity(&t[0].0) {
                    Vec::new()
                } else {
                    t.iter().map(|s| vec![s.clone()]).collect()
                }
            } else {
                vec![t.clone()]
            }
        })
        .collect();
    let threads = &split;
    let monotone = monotone_field(init, threads);
    let total: usize = threads.iter().map(Vec::len).sum();
    if total > MAX_SEARCHED {
        return Ok(Verdict::Undecided { explored: 0 });
    }
    let mut index: HashMap<&[(OpStep, Observed)], usize> = HashMap::new();
    let mut classes: Vec<&[(OpStep, Observed)]> = Vec::new();
    let mut members: Vec<Vec<(usize, u32)>> = Vec::new();
    for (t, steps) in threads.iter().enumerate() {
        if steps.is_empty() {
            continue;
        }
        let k = *index.entry(steps.as_slice()).or_insert_with(|| {
            classes.push(steps.as_slice());
            members.push(Vec::new());
            classes.len() - 1
        });
        members[k].push((t, 0));
    }
    let levels = classes
        .iter()
        .zip(&members)
        .map(|(c, m)| {
            let mut l = vec![0u32; c.len() + 1];
            l[0] = m.len() as u32;
            l
        })
        .collect();
    let mut search = Search {
        classes,
        members,
        levels,
        remaining: total as u64,
        dead: DeadStates::new(crate::race::MAX_MEMO_BYTES),
        explored: 0,
        budget,
        order: Vec::new(),
        longest: Vec::new(),
        final_value,
        eq,
        monotone,
    };
    let found = if total <= 64 {
        search.dfs(init)?
    } else {
        let stack = (1 << 20) + total * 4096;
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

impl Search<'_> {
    /// Moves one thread of class `k` from level `l` to `l + 1` (or back when `undo`).
    fn advance(&mut self, k: usize, l: u32, undo: bool) -> Result<(), ModelError> {
        let (from, to) = if undo { (l + 1, l) } else { (l, l + 1) };
        let Some(m) = self.members[k].iter_mut().rev().find(|(_, p)| *p == from) else {
            return Err(crate::internal!(
                "concurrent checker member list out of step"
            ));
        };
        m.1 = to;
        let t = m.0;
        self.levels[k][from as usize] -= 1;
        self.levels[k][to as usize] += 1;
        if undo {
            self.remaining += 1;
            self.order.pop();
        } else {
            self.remaining -= 1;
            self.order.push(t);
            if self.order.len() > self.longest.len() {
                self.longest = self.order.clone();
            }
        }
        Ok(())
    }

    /// The `(class, level)` pairs with a thread ready to run its step `level`.
    fn ready(&self) -> Vec<(usize, u32)> {
        let mut out = Vec::new();
        for (k, lv) in self.levels.iter().enumerate() {
            for (l, n) in lv.iter().enumerate().take(lv.len() - 1) {
                if *n > 0 {
                    out.push((k, l as u32));
                }
            }
        }
        out
    }

    fn done(&self, value: u64) -> Found {
        match self.final_value {
            Some(f) if !(self.eq)(value, f) => Found::No,
            _ => Found::Yes,
        }
    }

    fn dfs(&mut self, value: u64) -> Result<Found, ModelError> {
        if self.remaining == 0 {
            return Ok(self.done(value));
        }
        // Stutter reduction (as in `race`): a ready step observed to return exactly `value`
        // whose every consistent effect leaves memory at `value` runs now; doing so changes
        // nothing another step sees and only lets its own thread go on sooner.
        let mut stuttered = Vec::new();
        'greedy: loop {
            for (k, l) in self.ready() {
                let (op, obs) = self.classes[k][l as usize].clone();
                // A compare-exchange observed to fail is a read wherever it runs: running it
                // as soon as it can fail is as good as later (a loop's failed attempt).
                let failed = op.op == AtomicOp::Cas && obs.success == Some(false);
                match obs.ret {
                    Some(r) if r == value => {}
                    None if failed => {}
                    _ => continue,
                }
                let effects = op.step(value)?;
                let mut consistent = effects
                    .iter()
                    .filter(|e| {
                        obs.ret_fits(e.ret, &|a, b| a == b)
                            && obs.success.is_none_or(|s| s == e.success)
                    })
                    .peekable();
                if consistent.peek().is_some() && consistent.all(|e| e.new == value) {
                    self.advance(k, l, false)?;
                    stuttered.push((k, l));
                    continue 'greedy;
                }
            }
            break;
        }
        let found = self.branch(value)?;
        if found == Found::No {
            for (k, l) in stuttered.into_iter().rev() {
                self.advance(k, l, true)?;
            }
        }
        Ok(found)
    }

    fn branch(&mut self, value: u64) -> Result<Found, ModelError> {
        if self.remaining == 0 {
            return Ok(self.done(value));
        }
        let key = (value, self.levels.concat());
        if self.dead.contains(&key) {
            return Ok(Found::No);
        }
        self.explored += 1;
        if self.explored > self.budget {
            return Ok(Found::OutOfBudget);
        }
        if let Some(low) = self.monotone {
            // A ready step that must read a value the monotone bits have passed never runs.
            let passed = self.ready().into_iter().any(|(k, l)| {
                self.classes[k][l as usize]
                    .1
                    .ret
                    .is_some_and(|r| r & low < value & low)
            });
            if passed {
                return Ok(Found::No);
            }
        }
        for (k, l) in self.ready() {
            let (op, obs) = self.classes[k][l as usize].clone();
            for effect in op.step(value)? {
                if !obs.ret_fits(effect.ret, self.eq)
                    || obs.success.is_some_and(|s| s != effect.success)
                {
                    continue;
                }
                self.advance(k, l, false)?;
                match self.dfs(effect.new)? {
                    Found::No => {}
                    other => return Ok(other),
                }
                self.advance(k, l, true)?;
            }
        }
        self.dead.insert(key);
        Ok(Found::No)
    }
}

/// One instruction of a concurrent case.
#[derive(Clone, Debug)]
pub struct Part<'a> {
    /// The parsed instruction.
    pub program: &'a Program,
    /// Its initial state: its own registers, the shared memory.
    pub state: &'a State,
    /// How many times it runs, in a loop (at least 1).
    pub iterations: u32,
    /// For a compare-and-swap instruction: each iteration retries until it succeeds.
    pub cas_loop: Option<CasLoop>,
}

/// What one serialization (or one implementation) did: each instruction's final registers
/// (every state carries the same final memory) and, per instruction, per iteration, per
/// access of its lowered form, the value returned where it was kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Serial {
    /// Final states, one per instruction.
    pub states: Vec<State>,
    /// Returned values `[instruction][iteration][access]`; for a [`CasLoop`], the value its
    /// successful attempt returned.
    pub returned: Vec<Vec<Vec<Observed>>>,
    /// Attempts `[instruction][iteration][access]`: 1 except in a [`CasLoop`].
    pub attempts: Vec<Vec<Vec<u32>>>,
}

/// Lowers every part; an instruction that does not lower to memory accesses (an illegal form,
/// an unspecified outcome, a SIMD-group exchange) cannot take part in a concurrent case.
pub fn lower_all(parts: &[Part<'_>], profile: &Profile) -> Result<Vec<Lowered>, ModelError> {
    if parts.is_empty() {
        return Err(ModelError::BadState(
            "a concurrent case needs at least one instruction".into(),
        ));
    }
    let mut ops = 0u64;
    let mut copied = 0u64;
    let mut out = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        if p.iterations == 0 || p.iterations > MAX_ITERATIONS {
            return Err(ModelError::Limit(format!(
                "instruction {k}: iterations = {} is outside 1..={MAX_ITERATIONS}",
                p.iterations
            )));
        }
        let l = match p.program.lower(p.state, profile)? {
            Lowering::Run(l) => l,
            Lowering::Invalid(r) => {
                return Err(ModelError::BadState(format!(
                    "instruction {k} is an illegal form ({r}): concurrent instructions must run"
                )));
            }
            Lowering::Unspecified(why) => {
                return Err(ModelError::BadState(format!(
                    "instruction {k}: the documents leave its outcome undefined ({why})"
                )));
            }
        };
        let Instr::Mem(m) = &l.instr else {
            return Err(ModelError::BadState(format!(
                "instruction {k} is not a memory operation"
            )));
        };
        if let Some(lp) = p.cas_loop {
            check_loop(k, m, lp)?;
            check_loop_address(k, p, &l, m, profile)?;
        }
        ops += m.accesses.len() as u64 * u64::from(p.iterations);
        // One serialization copies the state's memory once per iteration.
        let bytes = p.state.global.allocated_bytes() + p.state.shared.allocated_bytes() + 4096;
        copied = copied.saturating_add(bytes.saturating_mul(u64::from(p.iterations)));
        if copied > MAX_COPIED {
            return Err(ModelError::Limit(format!(
                "iterations x allocated memory exceeds {MAX_COPIED} bytes in one concurrent case: use fewer iterations or less memory"
            )));
        }
        if ops > MAX_OPERATIONS {
            return Err(ModelError::Limit(format!(
                "more than {MAX_OPERATIONS} operations in one concurrent case"
            )));
        }
        out.push(l);
    }
    Ok(out)
}

/// Whether `m` can run the loop `lp`: a compare-and-swap on an integer type with a bitwise
/// compare, an update from [`LOOP_UPDATES`] and an operand that fits the type.
pub fn check_loop(k: usize, m: &MemInstr, lp: CasLoop) -> Result<(), ModelError> {
    let bad = |why: String| Err(ModelError::BadState(format!("instruction {k}: {why}")));
    if m.op != AtomicOp::Cas {
        return bad(format!(
            "cas_loop needs a compare-and-swap instruction, not {}",
            m.op.name()
        ));
    }
    // F16x2 has a float format too (its halves').
    if m.ty.float_format().is_some() || m.env.compare != crate::ir::Compare::Bitwise {
        return bad(format!(
            "cas_loop runs on integer compare-and-swap only, not {} (a float update's rounding is not a loop's to choose)",
            m.ty.name()
        ));
    }
    if !LOOP_UPDATES.contains(&lp.update) {
        return bad(format!(
            "cas_loop update `{}` is not one of {}",
            lp.update.name(),
            LOOP_UPDATES
                .iter()
                .map(|u| u.name())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if lp.operand & !mask(m.ty.bits()) != 0 {
        return bad(format!(
            "cas_loop operand {:#x} is wider than the {}-bit type",
            lp.operand,
            m.ty.bits()
        ));
    }
    Ok(())
}

/// A compare-and-swap loop writes what it read into its destinations after each failed attempt
/// and retries at the same address (FORMAT.md, compare-and-swap loops): an instruction whose
/// address is computed from its own destinations (SASS `ATOM.CAS R2, [R2], ...`; MSL
/// `&buf[e]` beside `&e`) would move between attempts, so it cannot run as a loop. Found by
/// lowering the instruction again with every destination field complemented.
fn check_loop_address(
    k: usize,
    p: &Part<'_>,
    l: &Lowered,
    m: &MemInstr,
    profile: &Profile,
) -> Result<(), ModelError> {
    let mut moved = p.state.clone();
    // A destination the state does not declare yet cannot be read by the addressing.
    for f in m.accesses.iter().flat_map(|a| dest_regs(&a.dst)) {
        if let Some(v) = moved.elem(&f.name, f.idx) {
            moved.set_field(&f.name, f.idx, f.lo, f.bits, !(v >> f.lo))?;
        }
    }
    match p.program.lower(&moved, profile) {
        Ok(Lowering::Run(again)) if same_addresses(&again, l) => Ok(()),
        _ => Err(ModelError::BadState(format!(
            "instruction {k}: a cas_loop's address must not depend on what the loop writes (its destination), or it would move between attempts"
        ))),
    }
}

/// Runs the parts in one allowed serialization (iteration `i` of every instruction, in
/// order, then iteration `i + 1`), with `exec` running one instruction on one state (the
/// reference's [`crate::exec::execute`] or the fast path). Every iteration must lower to the
/// same accesses as the first: an instruction that overwrites its own address or operands is
/// not repeatable and is an error.
pub fn execute_serial(
    parts: &[Part<'_>],
    profile: &Profile,
    exec: &dyn Fn(&Lowered, &State) -> Result<Outcome, ModelError>,
) -> Result<Result<Serial, Outcome>, ModelError> {
    let lowered = lower_all(parts, profile)?;
    let mut states: Vec<State> = parts.iter().map(|p| p.state.clone()).collect();
    let mut returned: Vec<Vec<Vec<Observed>>> = vec![Vec::new(); parts.len()];
    let mut attempts: Vec<Vec<Vec<u32>>> = vec![Vec::new(); parts.len()];
    // Each loop lane's next compare: its given compare operand, then what it last stored.
    let mut compares: Vec<Vec<u64>> = lowered
        .iter()
        .map(|l| match &l.instr {
            Instr::Mem(m) => m.accesses.iter().map(|a| a.src[0]).collect(),
            _ => Vec::new(),
        })
        .collect();
    let rounds = parts.iter().map(|p| p.iterations).max().unwrap_or(0);
    let mut memory = (states[0].global.clone(), states[0].shared.clone());
    for it in 0..rounds {
        for (k, p) in parts.iter().enumerate() {
            if it >= p.iterations {
                continue;
            }
            let st = &mut states[k];
            st.global = memory.0.clone();
            st.shared = memory.1.clone();
            let now = if it == 0 {
                lowered[k].clone()
            } else {
                match p.program.lower(st, profile)? {
                    // A loop computes its operands itself: only the addresses must stay.
                    Lowering::Run(l) if p.cas_loop.is_some() && same_addresses(&l, &lowered[k]) => {
                        lowered[k].clone()
                    }
                    Lowering::Run(l) if same_accesses(&l, &lowered[k]) => l,
                    _ => {
                        return Err(ModelError::BadState(format!(
                            "instruction {k} writes its own address or operands, so iteration {} differs from the first: repeat only instructions whose destination is not a source",
                            it + 1
                        )));
                    }
                }
            };
            if let Some(lp) = p.cas_loop {
                let Instr::Mem(m) = &now.instr else {
                    return Err(crate::internal!("lowered to no memory instruction"));
                };
                let mut row = Vec::new();
                let mut counts = Vec::new();
                for (j, a) in m.accesses.iter().enumerate() {
                    let mut c = compares[k][j];
                    let mut n = 0;
                    loop {
                        n += 1;
                        if n > SERIAL_ATTEMPTS {
                            return Err(crate::internal!(
                                "a serial compare-and-swap loop did not succeed at its second attempt"
                            ));
                        }
                        let old = st
                            .memory(m.space)
                            .read(a.addr, m.ty.bytes())
                            .ok_or_else(|| crate::internal!("loop address {:#x}", a.addr))?;
                        let mut one = m.clone();
                        one.accesses = vec![crate::ir::Access {
                            src: [c, lp.new_value(m.ty, m.env, c)?],
                            ..a.clone()
                        }];
                        let attempt = Lowered {
                            instr: Instr::Mem(one),
                            ..now.clone()
                        };
                        match exec(&attempt, st)? {
                            Outcome::Completed(done) => *st = done.state,
                            other => return Ok(Err(other)),
                        }
                        if old == c {
                            break;
                        }
                        c = old;
                    }
                    finish_loop_lane(st, &a.dst, c)?;
                    row.push(Observed {
                        ret: (!matches!(a.dst, Dest::None)).then_some(c),
                        kept: u64::MAX,
                        success: Some(true),
                    });
                    counts.push(n);
                    compares[k][j] = lp.new_value(m.ty, m.env, c)?;
                }
                returned[k].push(row);
                attempts[k].push(counts);
                memory = (st.global.clone(), st.shared.clone());
                continue;
            }
            match exec(&now, st)? {
                Outcome::Completed(c) => {
                    let Instr::Mem(m) = &now.instr else {
                        return Err(crate::internal!("lowered to no memory instruction"));
                    };
                    returned[k].push(
                        m.accesses
                            .iter()
                            .map(|a| {
                                crate::check::observe(a, m.ty, st, &c.state).unwrap_or_default()
                            })
                            .collect(),
                    );
                    attempts[k].push(vec![1; m.accesses.len()]);
                    *st = c.state;
                    memory = (st.global.clone(), st.shared.clone());
                }
                other => return Ok(Err(other)),
            }
        }
    }
    for st in &mut states {
        st.global = memory.0.clone();
        st.shared = memory.1.clone();
    }
    Ok(Ok(Serial {
        states,
        returned,
        attempts,
    }))
}

/// A loop lane's registers after its successful attempt with compare `c`: the destination
/// holds `c` (SASS `Rd`, vISA `Dst`: the old value, which equalled the compare); an MSL
/// compare-exchange's `expected` holds the compare it succeeded with (the value its last
/// failure wrote there, or the given one) and its result is `true`.
pub fn finish_loop_lane(st: &mut State, dst: &Dest, c: u64) -> Result<(), ModelError> {
    if let Dest::CasWeak { ok, expected } = dst {
        st.set_field(&expected.name, expected.idx, expected.lo, expected.bits, c)?;
        if let Some(f) = ok {
            st.set_field(&f.name, f.idx, f.lo, f.bits, 1)?;
        }
    }
    Ok(())
}

fn same_addresses(a: &Lowered, b: &Lowered) -> bool {
    match (&a.instr, &b.instr) {
        (Instr::Mem(x), Instr::Mem(y)) => {
            x.accesses.len() == y.accesses.len()
                && x.accesses
                    .iter()
                    .zip(&y.accesses)
                    .all(|(p, q)| p.addr == q.addr && p.lane == q.lane)
        }
        _ => false,
    }
}

fn same_accesses(a: &Lowered, b: &Lowered) -> bool {
    match (&a.instr, &b.instr) {
        (Instr::Mem(x), Instr::Mem(y)) => {
            x.op == y.op
                && x.accesses.len() == y.accesses.len()
                && x.accesses
                    .iter()
                    .zip(&y.accesses)
                    .all(|(p, q)| p.addr == q.addr && p.src == q.src && p.lane == q.lane)
        }
        _ => false,
    }
}

/// One thread's operations on one address: `(instruction, access index)`.
type ThreadId = (usize, usize);

/// Judges an observation of a concurrent case: `observed` holds each instruction's final state
/// (registers; the memory of `observed[0]` is the final shared memory) and `returned`, where
/// the implementation reports it, every iteration's returned values. Registers the
/// instructions do not write must equal the reference serialization's (`reference`); memory
/// no access touches must be unchanged; each accessed address goes to [`check_threads`] (or
/// [`commutative_final`]).
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
        return Ok(Judgement::Fail(vec![Mismatch {
            loc: Loc::Reg {
                name: "instructions".into(),
                idx: 0,
            },
            expected: Some(parts.len() as u64),
            observed: Some(observed.len() as u64),
            why: "one final state per instruction".into(),
        }]));
    }
    if lowered.len() != parts.len() || reference.states.len() != parts.len() {
        return Err(crate::internal!(
            "{} lowered instructions and {} reference states for {} parts",
            lowered.len(),
            reference.states.len(),
            parts.len()
        ));
    }
    let mut mismatches = Vec::new();
    // Threads per (space, address).
    let mut groups: BTreeMap<(Space, u64), Vec<ThreadId>> = BTreeMap::new();
    let mut mems: Vec<&MemInstr> = Vec::new();
    let mut racy_mem: HashSet<(Space, u64)> = HashSet::new();
    for (k, l) in lowered.iter().enumerate() {
        let Instr::Mem(m) = &l.instr else {
            return Err(crate::internal!(
                "concurrent part is not a memory instruction"
            ));
        };
        let resolved = resolve(m, parts[k].state)
            .map_err(|_| ModelError::BadState(format!("instruction {k} faults")))?;
        for (i, r) in resolved.iter().enumerate() {
            if let Resolved::Mem(addr) = r {
                groups.entry((m.space, *addr)).or_default().push((k, i));
                for b in 0..m.ty.bytes() {
                    racy_mem.insert((m.space, addr + b));
                }
            }
        }
        mems.push(m);
        // Registers: everything but the destinations must be as the reference left it.
        let dests: HashSet<(String, u32)> = m
            .accesses
            .iter()
            .flat_map(|a| dest_fields(&a.dst))
            .collect();
        let (want, seen) = (&reference.states[k], &observed[k]);
        for (name, reg) in &want.regs {
            for (idx, v) in reg.elems.iter().enumerate() {
                if dests.contains(&(name.clone(), idx as u32)) {
                    continue;
                }
                let o = seen.elem(name, idx as u32);
                if o != Some(*v) {
                    mismatches.push(Mismatch {
                        loc: Loc::Reg {
                            name: name.clone(),
                            idx: idx as u32,
                        },
                        expected: Some(*v),
                        observed: o,
                        why: format!("instruction {k}: a register it does not write changed"),
                    });
                }
            }
        }
    }
    let fin = &observed[0];
    for space in [Space::Global, Space::Shared] {
        for span in reference.states[0].memory(space).diff(fin.memory(space)) {
            for (addr, ev, ov) in span.bytes() {
                if racy_mem.contains(&(space, addr)) {
                    continue;
                }
                mismatches.push(Mismatch {
                    loc: Loc::Mem {
                        space,
                        addr,
                        bytes: 1,
                    },
                    expected: ev.map(u64::from),
                    observed: ov.map(u64::from),
                    why: "memory no instruction accesses changed".into(),
                });
            }
        }
    }
    mismatches.truncate(crate::check::MAX_MISMATCHES);
    if !mismatches.is_empty() {
        return Ok(Judgement::Fail(mismatches));
    }
    // What each access returned in each iteration.
    let mut obs: Vec<Vec<Vec<Observed>>> = Vec::new();
    for (k, m) in mems.iter().enumerate() {
        let n = parts[k].iterations as usize;
        let mut per = vec![vec![Observed::default(); m.accesses.len()]; n];
        match returned {
            Some(r) => {
                let Some(rk) = r.get(k).filter(|rk| rk.len() == n) else {
                    return Ok(Judgement::Fail(vec![Mismatch {
                        loc: Loc::Reg {
                            name: format!("returned[{k}]"),
                            idx: 0,
                        },
                        expected: Some(n as u64),
                        observed: r.get(k).map(|x| x.len() as u64),
                        why: "one list of returned values per iteration".into(),
                    }]));
                };
                for (it, row) in rk.iter().enumerate() {
                    for (i, a) in m.accesses.iter().enumerate() {
                        if !matches!(a.dst, Dest::None) {
                            per[it][i] = row.get(i).copied().unwrap_or_default();
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
    if !mismatches.is_empty() {
        return Ok(Judgement::Fail(mismatches));
    }
    // Each loop lane's steps: per iteration, its first attempt where it failed and its
    // compare is known (a read that must see another value), then its success (the update
    // applied at the value it read).
    let mut loop_steps: BTreeMap<ThreadId, Vec<(OpStep, Observed)>> = BTreeMap::new();
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
                return Ok(Judgement::Fail(vec![Mismatch {
                    loc: Loc::Reg {
                        name: format!("attempts[{k}]"),
                        idx: 0,
                    },
                    expected: Some(n as u64),
                    observed: at.get(k).map(|x| x.len() as u64),
                    why: "a compare-and-swap loop reports its attempts per iteration, per lane"
                        .into(),
                }]));
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
                    Ok(Judgement::Fail(vec![Mismatch {
                        loc: Loc::Reg {
                            name: format!("attempts[{k}][{it}]"),
                            idx: i as u32,
                        },
                        expected: None,
                        observed: count.map(u64::from),
                        why: format!("lane {}: {w}", a.lane),
                    }]))
                };
                let known = match (count, first) {
                    (Some(0), _) => return why(
                        "an iteration ends with one successful attempt, so it makes at least one"
                            .into(),
                    ),
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
            loop_steps.insert((k, i), steps);
        }
    }
    let mut undecided = Vec::new();
    for ((space, addr), members) in &groups {
        let m0 = mems[members[0].0];
        let bytes = m0.ty.bytes();
        let loc = Loc::Mem {
            space: *space,
            addr: *addr,
            bytes: bytes as u8,
        };
        if members.iter().any(|(k, _)| mems[*k].ty != m0.ty) {
            // Different types (and so any different widths) on one address: compared per byte
            // it is no single variable; the documents give no order semantics for it.
            return Err(ModelError::NotImplemented(format!(
                "concurrent accesses of different types to {addr:#x}"
            )));
        }
        let init = parts[0]
            .state
            .memory(*space)
            .read(*addr, bytes)
            .ok_or_else(|| crate::internal!("initial {addr:#x}"))?;
        let Some(seen) = fin.memory(*space).read(*addr, bytes) else {
            return Ok(Judgement::Fail(vec![Mismatch {
                loc,
                expected: None,
                observed: None,
                why: "the observed state has no memory here".into(),
            }]));
        };
        let (parts_n, width, part_ty) = if m0.ty == DataType::F16x2 {
            (2, 16, DataType::F16)
        } else {
            (1, m0.ty.bits(), m0.ty)
        };
        let fmt = part_ty.float_format();
        let nan_lenient = !m0.env.nan_exact && fmt.is_some();
        let eq = move |model: u64, seen: u64| {
            model == seen
                || (nan_lenient
                    && fmt.is_some_and(|f| float::is_nan(f, model) && float::is_nan(f, seen)))
        };
        for p in 0..parts_n {
            let lo = p * width;
            let pm = mask(width);
            let threads: Vec<Vec<(OpStep, Observed)>> = members
                .iter()
                .map(|&(k, i)| {
                    if let Some(steps) = loop_steps.get(&(k, i)) {
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
            // When the operations commute, the final value is known whatever they returned:
            // a different one fails at once; with nothing observed, the same one passes.
            let verdict = match fold_if_commuting(init_p, &threads) {
                Some(f) if !eq(f, seen_p) => Verdict::Fail {
                    explored: 0,
                    longest_prefix: vec![],
                },
                Some(_) if commutative_final(init_p, &threads).is_some() => {
                    Verdict::Pass { order: vec![] }
                }
                _ => check_threads(init_p, &threads, Some(seen_p), &eq, budget)?,
            };
            let ops: usize = threads.iter().map(Vec::len).sum();
            match verdict {
                Verdict::Pass { .. } => {}
                Verdict::Fail { longest_prefix, .. } => {
                    let expected = fold_if_commuting(init_p, &threads);
                    return Ok(Judgement::Fail(vec![Mismatch {
                        loc,
                        expected,
                        observed: Some(seen),
                        why: format!(
                            "no order of the {ops} operations of {} instructions on {addr:#x}{}, each thread in its own order, produces the observed returns and final value{}{}",
                            parts.len(),
                            if parts_n == 2 { format!(" (half {p})") } else { String::new() },
                            // A search's longest consistent prefix (none when the fold decided).
                            if longest_prefix.is_empty() { String::new() } else { format!(" (longest consistent prefix: {} of {ops})", longest_prefix.len()) },
                            if expected.is_some() { "; these operations commute, so every order ends at the expected value" } else { "" },
                        ),
                    }]));
                }
                Verdict::Undecided { explored } => undecided.push(format!(
                    "concurrent checker: {} on {addr:#x} ({ops} operations) after {explored} states",
                    if ops > MAX_SEARCHED {
                        "too many operations to search and they do not all commute".to_string()
                    } else {
                        format!("budget of {budget} states ran out")
                    }
                )),
            }
        }
    }
    Ok(if undecided.is_empty() {
        Judgement::Pass
    } else {
        Judgement::Undecided(undecided.join("; "))
    })
}

/// The register fields an access writes.
fn dest_regs(d: &Dest) -> Vec<&RegField> {
    match d {
        Dest::None => vec![],
        Dest::Fields(f) => f.iter().collect(),
        Dest::CasWeak { ok, expected } => ok.iter().chain(std::iter::once(expected)).collect(),
    }
}

fn dest_fields(d: &Dest) -> Vec<(String, u32)> {
    dest_regs(d)
        .into_iter()
        .map(|f| (f.name.clone(), f.idx))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Env;

    fn op(op: AtomicOp, s0: u64) -> OpStep {
        OpStep {
            op,
            ty: DataType::U32,
            env: Env::default(),
            src: [s0, 0],
        }
    }

    fn ret(r: u64) -> Observed {
        Observed::ret(r)
    }

    fn bits(a: u64, b: u64) -> bool {
        a == b
    }

    #[test]
    fn program_order_is_respected() {
        // Thread 0: add 1 then add 1, returning 0 then 1; thread 1: exch 10 returning 2.
        let t0 = vec![
            (op(AtomicOp::Add, 1), ret(0)),
            (op(AtomicOp::Add, 1), ret(1)),
        ];
        let t1 = vec![(op(AtomicOp::Exch, 10), ret(2))];
        let v = check_threads(0, &[t0.clone(), t1.clone()], Some(10), &bits, 1000).unwrap();
        assert_eq!(
            v,
            Verdict::Pass {
                order: vec![0, 0, 1]
            }
        );
        // The same returns in the other program order of thread 0 are impossible.
        let swapped = vec![t0[1].clone(), t0[0].clone()];
        let v = check_threads(0, &[swapped, t1], Some(10), &bits, 1000).unwrap();
        assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
    }

    #[test]
    fn a_lost_update_between_add_and_sub_fails() {
        // 4 threads x 3 iterations of add 1 and of sub 1, unobserved: every order ends at 100.
        let add: Vec<_> = (0..3)
            .map(|_| (op(AtomicOp::Add, 1), Observed::default()))
            .collect();
        let sub: Vec<_> = (0..3)
            .map(|_| (op(AtomicOp::Sub, 1), Observed::default()))
            .collect();
        let threads: Vec<_> = (0..8)
            .map(|t| if t < 4 { add.clone() } else { sub.clone() })
            .collect();
        assert_eq!(commutative_final(100, &threads), Some(100));
        // The search agrees, with the symmetry reduction keeping it small.
        let v = check_threads(100, &threads, Some(101), &bits, 100_000).unwrap();
        assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
        assert!(matches!(
            check_threads(100, &threads, Some(100), &bits, 100_000).unwrap(),
            Verdict::Pass { .. }
        ));
        // Mixed kinds that do not commute are not decided by the fold.
        let exch = vec![(op(AtomicOp::Exch, 5), Observed::default())];
        assert_eq!(commutative_final(0, &[exch.clone(), add.clone()]), None);
        assert!(matches!(
            check_threads(0, &[exch.clone(), add.clone()], Some(6), &bits, 1000).unwrap(),
            Verdict::Pass { .. }
        ));
        assert!(matches!(
            check_threads(0, &[exch, add], Some(4), &bits, 1000).unwrap(),
            Verdict::Fail { .. }
        ));
    }

    #[test]
    fn the_fold_is_linear_and_decides_large_histories() {
        let add: Vec<_> = (0..1000)
            .map(|_| (op(AtomicOp::Add, 3), Observed::default()))
            .collect();
        let sub: Vec<_> = (0..1000)
            .map(|_| (op(AtomicOp::Sub, 2), Observed::default()))
            .collect();
        let threads: Vec<_> = (0..200)
            .map(|t| if t % 2 == 0 { add.clone() } else { sub.clone() })
            .collect();
        assert_eq!(commutative_final(0, &threads), Some(100 * 1000));
        // Observed returns disable the fold: it would ignore them.
        let mut observed = threads.clone();
        observed[0][999].1 = ret(7);
        assert_eq!(commutative_final(0, &observed), None);
    }

    #[test]
    fn bounded_inc_dec_and_bit_fields_fold_when_safe() {
        let step = |o: AtomicOp, s0: u64| OpStep {
            op: o,
            ty: DataType::U32,
            env: Env::default(),
            src: [s0, 0],
        };
        let blind = |o, s0, n| vec![(step(o, s0), Observed::default()); n];
        // 256 increments and 256 decrements around 500 with bound 1000: never near a bound.
        let t = [
            blind(AtomicOp::IncBounded, 1000, 256),
            blind(AtomicOp::DecBounded, 1000, 256),
        ];
        assert_eq!(commutative_final(500, &t), Some(500));
        // Starting at 100, the decrements can reach zero first: not foldable.
        assert_eq!(commutative_final(100, &t), None);
        // add 1 x 1024 below bit 16, or bit 16, xor bit 20 (even), and clearing bit 30.
        let t = [
            blind(AtomicOp::Add, 1, 1024),
            blind(AtomicOp::Or, 1 << 16, 8),
            blind(AtomicOp::Xor, 1 << 20, 8),
            blind(AtomicOp::And, !(1u64 << 30) & 0xffff_ffff, 8),
        ];
        assert_eq!(commutative_final(0x4000_0000, &t), Some(0x0001_0400));
        // Adds that could carry into bit 16 are not confined: not foldable.
        assert_eq!(commutative_final(0xffff, &t), None);
        // Or and xor on the same bit do not commute.
        let t = [blind(AtomicOp::Or, 1, 1), blind(AtomicOp::Xor, 1, 1)];
        assert_eq!(commutative_final(0, &t), None);
    }

    #[test]
    fn budget_exhaustion_is_undecided() {
        let threads: Vec<Vec<_>> = (0..20u64)
            .map(|l| vec![(op(AtomicOp::Exch, l), Observed::default()); 2])
            .chain(std::iter::once(vec![(
                op(AtomicOp::Add, 1),
                Observed::default(),
            )]))
            .collect();
        let v = check_threads(0, &threads, Some(1000), &bits, 50).unwrap();
        assert_eq!(v, Verdict::Undecided { explored: 51 });
    }

    fn sass_state(lanes: u32, regs: &[(&str, u64)], mem: u64) -> State {
        let mut s = State::new(lanes);
        for (r, v) in regs {
            s.regs.insert(
                (*r).into(),
                crate::state::Reg {
                    ty: crate::types::ElemType::B32,
                    elems: vec![*v; lanes as usize],
                },
            );
        }
        s.global.alloc(0x1000, 4).unwrap();
        s.global.write(0x1000, 4, mem);
        s
    }

    #[test]
    fn cas_loops_run_serially_and_are_judged_as_updates_at_the_value_read() {
        use crate::program::Dialect;
        let profile = Profile::default();
        let cas = Program::parse(Dialect::Sass, "ATOM.CAS.32 R0, [R2], R4, R5").unwrap();
        let add = Program::parse(Dialect::Sass, "ATOM.ADD R0, [R2], R4").unwrap();
        // The first compare (R4 = 5) is stale: every lane's first attempt fails once.
        let s_cas = sass_state(2, &[("R2", 0x1000), ("R4", 5), ("R5", 0)], 0);
        let s_add = sass_state(2, &[("R2", 0x1000), ("R4", 1)], 0);
        let parts = [
            Part {
                program: &cas,
                state: &s_cas,
                iterations: 3,
                cas_loop: Some(CasLoop {
                    update: AtomicOp::Add,
                    operand: 3,
                }),
            },
            Part {
                program: &add,
                state: &s_add,
                iterations: 3,
                cas_loop: None,
            },
        ];
        let lowered = lower_all(&parts, &profile).unwrap();
        let serial = execute_serial(&parts, &profile, &crate::exec::execute)
            .unwrap()
            .unwrap();
        // 6 successes adding 3 and 6 adds of 1.
        assert_eq!(serial.states[0].global.read(0x1000, 4), Some(24));
        assert_eq!(serial.attempts[0][0], vec![2, 2]);
        assert_eq!(serial.attempts[1][2], vec![1, 1]);
        // Iteration 0: lane 0 reads 0 (fails on 5), swaps 0 -> 3; lane 1 reads 3, swaps to 6.
        assert_eq!(serial.returned[0][0][0].ret, Some(0));
        assert_eq!(serial.returned[0][0][1].ret, Some(3));
        // Rd holds the last success's value, R4/R5 stay as given.
        assert_eq!(serial.states[0].elem("R4", 0), Some(5));
        let judge_with = |fin: u64, ret: &[Vec<Vec<Observed>>], att: &[Vec<Vec<u32>>]| {
            let mut observed = serial.states.clone();
            for st in &mut observed {
                st.global.write(0x1000, 4, fin);
            }
            judge(
                &parts,
                &lowered,
                &serial,
                &observed,
                Some(ret),
                Some(att),
                1_000_000,
            )
            .unwrap()
        };
        let (ret, att) = (serial.returned.clone(), serial.attempts.clone());
        assert_eq!(judge_with(24, &ret, &att), Judgement::Pass);
        // A lost update: the fold of add 3 x 6 and add 1 x 6 says 24 in every order.
        assert!(matches!(judge_with(21, &ret, &att), Judgement::Fail(_)));
        // A success whose returned value no order gives (two lanes swapping at one value).
        let mut twice = ret.clone();
        twice[0][0][1].ret = Some(0);
        assert!(matches!(judge_with(24, &twice, &att), Judgement::Fail(_)));
        // One attempt, but its value is not the compare it was given (5).
        let mut once = att.clone();
        once[0][0][0] = 1;
        match judge_with(24, &ret, &once) {
            Judgement::Fail(m) => assert!(m[0].why.contains("only attempt"), "{m:?}"),
            other => panic!("{other:?}"),
        }
        // A failed first attempt must see another value than its compare: with compare 0 and
        // returned 0 after two attempts, the strong compare-and-swap cannot have failed.
        let s0 = sass_state(1, &[("R2", 0x1000), ("R4", 0), ("R5", 0)], 0);
        let solo = [Part {
            program: &cas,
            state: &s0,
            iterations: 1,
            cas_loop: Some(CasLoop {
                update: AtomicOp::Add,
                operand: 3,
            }),
        }];
        let lowered = lower_all(&solo, &profile).unwrap();
        let serial = execute_serial(&solo, &profile, &crate::exec::execute)
            .unwrap()
            .unwrap();
        assert_eq!(serial.attempts[0][0], vec![1]);
        let mut observed = serial.states.clone();
        observed[0].global.write(0x1000, 4, 3);
        let ret = vec![vec![vec![Observed {
            success: Some(true),
            ..Observed::ret(0)
        }]]];
        let v = judge(
            &solo,
            &lowered,
            &serial,
            &observed,
            Some(&ret),
            Some(&[vec![vec![2]]]),
            1000,
        )
        .unwrap();
        assert!(matches!(v, Judgement::Fail(_)), "{v:?}");
        let v = judge(
            &solo,
            &lowered,
            &serial,
            &observed,
            Some(&ret),
            Some(&[vec![vec![1]]]),
            1000,
        )
        .unwrap();
        assert_eq!(v, Judgement::Pass);
        // Zero attempts is never an iteration.
        let v = judge(
            &solo,
            &lowered,
            &serial,
            &observed,
            Some(&ret),
            Some(&[vec![vec![0]]]),
            1000,
        )
        .unwrap();
        assert!(matches!(v, Judgement::Fail(_)), "{v:?}");
    }

    #[test]
    fn loops_need_an_integer_compare_and_swap() {
        use crate::program::Dialect;
        let profile = Profile::default();
        let add = Program::parse(Dialect::Sass, "ATOM.ADD R0, [R2], R4").unwrap();
        let s = sass_state(1, &[("R2", 0x1000), ("R4", 1)], 0);
        let lp = CasLoop {
            update: AtomicOp::Or,
            operand: 1,
        };
        let parts = [Part {
            program: &add,
            state: &s,
            iterations: 1,
            cas_loop: Some(lp),
        }];
        let e = lower_all(&parts, &profile).unwrap_err().to_string();
        assert!(e.contains("cas_loop needs a compare-and-swap"), "{e}");
        let cas = Program::parse(Dialect::Sass, "ATOM.CAS.32 R0, [R2], R4, R5").unwrap();
        let s = sass_state(1, &[("R2", 0x1000), ("R4", 0), ("R5", 0)], 0);
        for (lp, why) in [
            (
                CasLoop {
                    update: AtomicOp::Exch,
                    operand: 1,
                },
                "is not one of",
            ),
            (
                CasLoop {
                    update: AtomicOp::Add,
                    operand: 1 << 32,
                },
                "wider than the 32-bit type",
            ),
        ] {
            let parts = [Part {
                program: &cas,
                state: &s,
                iterations: 1,
                cas_loop: Some(lp),
            }];
            let e = lower_all(&parts, &profile).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn monotone_bits_prune_reads_of_passed_values() {
        // Adds of 1 with a bit-20 xor: the low 20 bits only grow.
        let t = [
            vec![(op(AtomicOp::Add, 1), Observed::default()); 4],
            vec![(op(AtomicOp::Xor, 1 << 20), ret(2))],
        ];
        assert_eq!(monotone_field(0, &t), Some(mask(20)));
        // Subtracting, or adds that can carry into the xor's bit, are not monotone.
        let sub = [vec![(op(AtomicOp::Sub, 1), Observed::default())]];
        assert_eq!(monotone_field(0, &sub), None);
        assert_eq!(monotone_field(mask(20), &t), None);
        // The xor must read 2: after 3 adds it never can; after 2 it can.
        assert!(matches!(
            check_threads(0, &t, Some(4 | 1 << 20), &bits, 1000).unwrap(),
            Verdict::Pass { .. }
        ));
        let late = [
            vec![(op(AtomicOp::Add, 1), Observed::default()); 4],
            vec![(op(AtomicOp::Xor, 1 << 20), ret(9))],
        ];
        assert!(matches!(
            check_threads(0, &late, Some(4 | 1 << 20), &bits, 1000).unwrap(),
            Verdict::Fail { .. }
        ));
    }
}
