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
//! - [`locations`]: the shared locations, from every access of every instruction; accesses to
//!   overlapping bytes must be one location (one address, one type), or the case is refused.
//! - [`check_history`] (module `search`) is the race checker of [`crate::race`] extended with
//!   program order: candidate schedules, walks, then a bounded search over (memory value, how
//!   many threads of each class stand at each step). Three-valued with a budget of expanded
//!   states; running out is undecided, never a pass.
//! - [`commutative_final`] (module `fold`): when no returned value is observed and every
//!   operation on the address commutes with every other (integer add, subtract, wrapping
//!   increment and decrement together; or one of and, or, xor, min, max alone), the final value
//!   is the same in every order and decides alone, in time linear in the number of operations.
//! - [`execute_serial`]: one allowed serialization (iterations round-robin over the
//!   instructions), the reference's answer.
//! - [`judge`] (module `judge`): the judgement of an observation (final states of every
//!   instruction, and the per-iteration returned values where the implementation reports them).

mod blocks;
mod engine;
mod fold;
mod history;
mod judge;
mod search;
mod walk;

pub use blocks::BLOCK_STATES;
pub use engine::to_f64;
pub use fold::{commutative_final, fold_if_commuting, is_identity, monotone_field};
pub use history::{
    CONNECTED_EDGES, Checked, Equality, History, MAX_SEARCHED, RESTART_STATES, Reason, Schedule,
    Thread,
};
pub use judge::{judge, locations};
pub use search::{check_history, check_history_within, check_threads};

use crate::error::ModelError;
use crate::exec::{Resolved, resolve};
use crate::ir::{AtomicOp, Dest, Instr, Lowered, Lowering, MemInstr, RegField};
use crate::knobs::Profile;
use crate::outcome::Outcome;
use crate::program::Program;
use crate::race::OpStep;
use crate::race::{Observed, Step};
use crate::state::State;
use crate::types::{DataType, mask};

/// Most iterations one concurrent instruction may ask for.
pub const MAX_ITERATIONS: u32 = 1 << 16;

/// Most read-modify-writes of all instructions and iterations in one concurrent case.
pub const MAX_OPERATIONS: u64 = 1 << 22;

/// Most bytes of memory the serialization may copy (iterations times allocated memory).
pub const MAX_COPIED: u64 = 1 << 30;

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
    let mems: Vec<&MemInstr> = out
        .iter()
        .filter_map(|l| match &l.instr {
            Instr::Mem(m) => Some(m),
            _ => None,
        })
        .collect();
    locations(parts, &mems)?;
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

/// The register fields an access writes.
fn dest_regs(d: &Dest) -> Vec<&RegField> {
    match d {
        Dest::None => vec![],
        Dest::Fields(f) => f.iter().collect(),
        Dest::CasWeak { ok, expected } => ok.iter().chain(std::iter::once(expected)).collect(),
    }
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
                // Where each lane's attempts land, as the model checks every access (a fault,
                // or an address outside memory that reads zero, comes from there).
                let at = match resolve(m, st) {
                    Ok(at) => at,
                    Err(o) => return Ok(Err(*o)),
                };
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
                        let old = match at[j] {
                            Resolved::Mem(addr) => st
                                .memory(m.space)
                                .read(addr, m.ty.bytes())
                                .ok_or_else(|| crate::internal!("loop address {addr:#x}"))?,
                            Resolved::Dropped => 0,
                        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Judgement;
    use crate::ir::Env;
    use crate::race::Verdict;

    /// An operation is recognised as changing no value exactly when no value it can meet
    /// changes (the samples hold each type's least and greatest values, signed and unsigned).
    #[test]
    fn identities_are_exactly_the_operations_that_change_no_value() {
        use DataType::*;
        for ty in [U16, S16, U32, S32, U64, S64] {
            let m = ty.mask();
            let sign = 1u64 << (ty.bits() - 1);
            let samples = [
                0,
                1,
                sign - 1,
                sign,
                sign + 1,
                m - 1,
                m,
                0x1234_5678_9abc & m,
            ];
            for o in [
                AtomicOp::Add,
                AtomicOp::Sub,
                AtomicOp::And,
                AtomicOp::Or,
                AtomicOp::Xor,
                AtomicOp::Max,
                AtomicOp::Min,
            ] {
                for src in samples {
                    let s = OpStep {
                        op: o,
                        ty,
                        env: Env::default(),
                        src: [src, 0],
                    };
                    let changes = samples
                        .iter()
                        .any(|&v| s.step(v).expect("an integer step")[0].new != v);
                    assert_eq!(is_identity(&s), !changes, "{ty:?} {o:?} {src:#x}");
                }
            }
        }
        assert!(is_identity(&op(AtomicOp::Max, 0)) && is_identity(&op(AtomicOp::Min, 0xffff_ffff)));
        assert!(!is_identity(&OpStep {
            ty: DataType::F32,
            ..op(AtomicOp::Max, 0xff80_0000)
        }));
    }

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

    #[test]
    fn program_order_is_respected() {
        // Thread 0: add 1 then add 1, returning 0 then 1; thread 1: exch 10 returning 2.
        let t0 = vec![
            (op(AtomicOp::Add, 1), ret(0)),
            (op(AtomicOp::Add, 1), ret(1)),
        ];
        let t1 = vec![(op(AtomicOp::Exch, 10), ret(2))];
        let v =
            check_threads(0, &[t0.clone(), t1.clone()], Some(10), Equality::Bits, 1000).unwrap();
        assert_eq!(
            v,
            Verdict::Pass {
                order: vec![0, 0, 1]
            }
        );
        // The same returns in the other program order of thread 0 are impossible.
        let swapped = vec![t0[1].clone(), t0[0].clone()];
        let v = check_threads(0, &[swapped, t1], Some(10), Equality::Bits, 1000).unwrap();
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
        let v = check_threads(100, &threads, Some(101), Equality::Bits, 100_000).unwrap();
        assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
        assert!(matches!(
            check_threads(100, &threads, Some(100), Equality::Bits, 100_000).unwrap(),
            Verdict::Pass { .. }
        ));
        // Mixed kinds that do not commute are not decided by the fold.
        let exch = vec![(op(AtomicOp::Exch, 5), Observed::default())];
        assert_eq!(commutative_final(0, &[exch.clone(), add.clone()]), None);
        assert!(matches!(
            check_threads(
                0,
                &[exch.clone(), add.clone()],
                Some(6),
                Equality::Bits,
                1000
            )
            .unwrap(),
            Verdict::Pass { .. }
        ));
        assert!(matches!(
            check_threads(0, &[exch, add], Some(4), Equality::Bits, 1000).unwrap(),
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

    /// A pre-decrement returns the value it left (vISA DWORD_ATOMIC PREDEC, A11): its return
    /// tells the value it read (one more), so a history of pre-decrements against adds with
    /// every return kept is a walk, which decides it (a lie by the walk's balance alone).
    #[test]
    fn pre_decrement_returns_make_a_walk() {
        let (dec, inc) = (op(AtomicOp::PreDec, 0), op(AtomicOp::Add, 1));
        // 8 threads of 8 pre-decrements and 8 of 8 adds of 1, from 100, in an order drawn by
        // a small generator; each operation's return as that order gives it.
        let mut threads: Vec<Thread> = (0..16).map(|_| Vec::new()).collect();
        let (mut left, mut value, mut x) = ([8u32; 16], 100u64, 12345u64);
        while left.iter().any(|n| *n > 0) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = (x >> 33) as usize % 16;
            if left[t] == 0 {
                continue;
            }
            left[t] -= 1;
            let s = if t < 8 { dec.clone() } else { inc.clone() };
            let e = s.step(value).expect("an integer step")[0];
            threads[t].push((s, ret(e.ret)));
            value = e.new;
        }
        assert_eq!(value, 100);
        // (Before the walk took a pre-decrement's return, the search could not decide this
        // history within 2,000,000 states; over the walk it takes under 30,000.)
        let v = check_threads(100, &threads, Some(100), Equality::Bits, 100_000).unwrap();
        assert!(matches!(v, Verdict::Pass { .. }), "{v:?}");
        // A pre-decrement that claims to have left a value one too high is in no order.
        let mut lie = threads.clone();
        let r = lie[0][3].1.ret.expect("kept");
        lie[0][3].1 = ret(r + 1);
        let v = check_threads(100, &lie, Some(100), Equality::Bits, 1000).unwrap();
        assert!(matches!(v, Verdict::Fail { .. }), "{v:?}");
        // The wrap: a pre-decrement of 0 leaves (and returns) 0xffffffff, which it read as 0.
        let wrap = [vec![(dec.clone(), ret(0xffff_ffff))]];
        let v = check_threads(0, &wrap, Some(0xffff_ffff), Equality::Bits, 10).unwrap();
        assert!(matches!(v, Verdict::Pass { .. }), "{v:?}");
    }

    /// A walk whose degrees balance but whose edges are not all reachable from the initial
    /// value (here a cycle 5 -> 6 -> 5 beside nothing from 0) is no walk: the walk stage says
    /// so without the search; balanced and connected edges are a walk.
    #[test]
    fn a_balanced_walk_not_reached_from_the_initial_value_is_refuted() {
        use super::walk::{WalkStep, walk_defect};
        let edge = |from, to| vec![(WalkStep::Edge { from, to }, Observed::ret(from))];
        let cycle = [edge(5, 6), edge(6, 5)];
        let why = walk_defect(0, 0, &cycle).expect("a defect");
        assert!(why.contains("never reached"), "{why}");
        assert_eq!(walk_defect(5, 5, &cycle), None);
        let path = [edge(0, 5), edge(5, 6), edge(6, 0)];
        assert_eq!(walk_defect(0, 0, &path), None);
        // Unbalanced: the degrees say so first.
        let why = walk_defect(0, 1, &cycle).expect("a defect");
        assert!(why.starts_with("memory holds"), "{why}");
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
        let v = check_threads(0, &threads, Some(1000), Equality::Bits, 50).unwrap();
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
            check_threads(0, &t, Some(4 | 1 << 20), Equality::Bits, 1000).unwrap(),
            Verdict::Pass { .. }
        ));
        let late = [
            vec![(op(AtomicOp::Add, 1), Observed::default()); 4],
            vec![(op(AtomicOp::Xor, 1 << 20), ret(9))],
        ];
        assert!(matches!(
            check_threads(0, &late, Some(4 | 1 << 20), Equality::Bits, 1000).unwrap(),
            Verdict::Fail { .. }
        ));
    }
}
