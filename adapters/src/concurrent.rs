//! Concurrent cases (issue 12): several instructions of one dialect that run at the same time on
//! shared memory, each with its own lanes, each repeated `iterations` times. The request an
//! adapter gets and the observation it gives back; the built-in adapters run them in one
//! allowed serialization ([`serial`]).

use crate::{AdapterError, AdapterErrorKind};
use atomcts_reference::concurrent::{self, CasLoop, Part};
use atomcts_reference::error::ModelError;
use atomcts_reference::ir::{Instr, Lowered};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{Dialect, Program};
use atomcts_reference::race::Observed;
use atomcts_reference::{Profile, State};

/// One of the instructions that run at the same time.
#[derive(Clone, Copy, Debug)]
pub struct ConcurrentInstr<'a> {
    /// The instruction in the dialect's text form.
    pub asm: &'a str,
    /// Its initial state: its own registers and lanes, the shared memory (the same in every
    /// instruction's state).
    pub state: &'a State,
    /// How many times each of its lanes runs it, in a loop (at least 1).
    pub iterations: u32,
    /// For a compare-and-swap: each iteration retries until it succeeds, the compare being
    /// the value the previous attempt returned and the new value `update(compare, operand)`
    /// (FORMAT.md, "Compare-and-swap loops"). An adapter that runs it reports the successful
    /// attempt's returned value per iteration and the attempts in
    /// [`ConcurrentObservation::attempts`].
    pub cas_loop: Option<CasLoop>,
}

/// A concurrent case to run.
#[derive(Clone, Copy, Debug)]
pub struct ConcurrentRequest<'a> {
    /// The case id (for messages).
    pub id: &'a str,
    /// The dialect of every instruction.
    pub dialect: Dialect,
    /// The instructions, each its own group of lanes (warp, work-group, threadgroup, thread).
    pub instrs: &'a [ConcurrentInstr<'a>],
    /// The profile the implementation is judged under.
    pub profile: &'a Profile,
}

/// What an implementation did with a concurrent case.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcurrentObservation {
    /// Each instruction's final state (its registers after its last iteration); every state
    /// holds the final shared memory.
    pub states: Vec<State>,
    /// Where the implementation reports them: per instruction, per iteration, per access of
    /// the lowered instruction, the value returned (and a compare-exchange's success). For a
    /// compare-and-swap loop: the value its successful attempt returned.
    pub returned: Option<Vec<Vec<Vec<Observed>>>>,
    /// Where the implementation reports them: per instruction, per iteration, per access, how
    /// many attempts a compare-and-swap loop made (1 for any other instruction).
    pub attempts: Option<Vec<Vec<Vec<u32>>>>,
    /// Where the implementation reports them (issue 30): per instruction, per access (each its
    /// own thread), how many iterations the thread executed to the end (a compare-and-swap
    /// loop's iteration counts once its attempt succeeded). Fewer than the instruction's
    /// `iterations` is a loop cut short (llvmpipe-1 in docs/findings.md), which the runner tells
    /// apart from a lost update and never passes.
    pub executed: Option<Vec<Vec<u32>>>,
}

impl ConcurrentRequest<'_> {
    /// The instructions parsed, or the first one's rejection as text.
    pub fn programs(&self) -> Result<Vec<Program>, String> {
        self.instrs
            .iter()
            .enumerate()
            .map(|(k, i)| {
                Program::parse(self.dialect, i.asm)
                    .map_err(|r| format!("instruction {k} `{}`: {r}", i.asm))
            })
            .collect()
    }

    /// The instructions lowered by the reference's front end (as a semantic-level
    /// implementation runs them), with their parsed programs.
    pub fn lowered(&self) -> Result<(Vec<Program>, Vec<Lowered>), String> {
        let programs = self.programs()?;
        let parts = self.parts(&programs);
        let lowered =
            concurrent::lower_all(&parts, self.profile).map_err(|e: ModelError| e.to_string())?;
        Ok((programs, lowered))
    }

    /// The reference's view of the request.
    pub fn parts<'p>(&'p self, programs: &'p [Program]) -> Vec<Part<'p>> {
        programs
            .iter()
            .zip(self.instrs)
            .map(|(program, i)| Part {
                program,
                state: i.state,
                iterations: i.iterations,
                cas_loop: i.cas_loop,
            })
            .collect()
    }

    /// Each instruction's initial state, in order.
    pub fn states(&self) -> Vec<State> {
        self.instrs.iter().map(|i| i.state.clone()).collect()
    }

    /// The instructions lowered ([`ConcurrentRequest::lowered`]) with their initial states:
    /// what a semantic-level back end plans; a front end's rejection is not applicable there.
    pub fn lowered_states(&self) -> Result<(Vec<Lowered>, Vec<State>), AdapterErrorKind> {
        let (_, lowered) = self.lowered().map_err(AdapterErrorKind::NotApplicable)?;
        Ok((lowered, self.states()))
    }

    /// Each instruction's iterations, in order.
    pub fn iterations(&self) -> Vec<u32> {
        self.instrs.iter().map(|i| i.iterations).collect()
    }

    /// Whether any instruction is a compare-and-swap loop.
    pub fn has_loops(&self) -> bool {
        self.instrs.iter().any(|i| i.cas_loop.is_some())
    }
}

/// Runs a concurrent case in one allowed serialization with `exec` running one instruction:
/// the built-in adapters (any serialization is a correct implementation).
pub fn serial(
    adapter: &str,
    r: &ConcurrentRequest<'_>,
    exec: &dyn Fn(&Lowered, &State) -> Result<Outcome, ModelError>,
) -> Result<ConcurrentObservation, AdapterError> {
    let err = |kind| AdapterError {
        adapter: adapter.to_string(),
        kind,
    };
    let programs = r.programs().map_err(|e| err(AdapterErrorKind::Model(e)))?;
    let parts = r.parts(&programs);
    match concurrent::execute_serial(&parts, r.profile, exec) {
        Ok(Ok(s)) => Ok(ConcurrentObservation {
            // Every thread ran every iteration (one serialization runs them all).
            executed: Some(
                parts
                    .iter()
                    .zip(&s.returned)
                    .map(|(p, its)| vec![p.iterations; its.first().map_or(0, Vec::len)])
                    .collect(),
            ),
            states: s.states,
            returned: Some(s.returned),
            attempts: Some(s.attempts),
        }),
        Ok(Err(other)) => Err(err(AdapterErrorKind::Model(format!(
            "a concurrent instruction did not complete ({})",
            other.kind()
        )))),
        Err(e) => Err(err(AdapterErrorKind::Model(e.to_string()))),
    }
}

/// Per iteration, per access: the [`Observed`] form of an API's returned values (`old` per
/// access, `ok` per access for a compare-exchange), for accesses with a destination.
pub fn observed_of(lowered: &Lowered, old: &[u64], ok: &[bool]) -> Vec<Observed> {
    let Instr::Mem(m) = &lowered.instr else {
        return Vec::new();
    };
    m.accesses
        .iter()
        .enumerate()
        .map(|(i, _)| Observed {
            ret: old.get(i).copied(),
            kept: u64::MAX,
            success: ok
                .get(i)
                .copied()
                .filter(|_| m.op == atomcts_reference::ir::AtomicOp::Cas),
        })
        .collect()
}

/// The registers a compare-and-swap loop leaves after its last iteration, given the values its
/// last successful attempts returned (`old`, per access): an MSL compare-exchange's `expected`
/// holds the compare it succeeded with and its result is `true`
/// ([`concurrent::finish_loop_lane`]); a SASS or vISA destination already holds the value.
pub fn finish_loops(lowered: &Lowered, state: &mut State, old: &[u64]) -> Result<(), String> {
    let Instr::Mem(m) = &lowered.instr else {
        return Ok(());
    };
    for (a, c) in m.accesses.iter().zip(old) {
        concurrent::finish_loop_lane(state, &a.dst, *c).map_err(|e| e.to_string())?;
    }
    Ok(())
}
