//! The fast path (pending).
//!
//! TEMPORARY placeholder on branch `fuzz` only: the signatures of branch `fast`, delegating to
//! the reference, so the fuzz oracles build before `fast` is merged. Replaced by the merge.

use atomcts_reference::ModelError;
use atomcts_reference::ir::{AtomicOp, Env, Lowered};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::race::Effect;
use atomcts_reference::state::State;
use atomcts_reference::types::DataType;

/// The reference's first effect of `op` (placeholder).
pub fn apply(
    op: AtomicOp,
    ty: DataType,
    env: &Env,
    old: u64,
    src: [u64; 2],
) -> Result<Effect, ModelError> {
    atomcts_reference::semantics::apply(op, ty, env, old, src)?
        .first()
        .copied()
        .ok_or_else(|| ModelError::NotImplemented(format!("{} gave no effect", op.name())))
}

/// The reference's execution (placeholder).
pub fn execute(lowered: &Lowered, state: &State) -> Result<Outcome, ModelError> {
    atomcts_reference::exec::execute(lowered, state)
}
