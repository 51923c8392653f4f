//! Intel vISA: DWORD_ATOMIC and SVM_SCATTER4_SCALED, and the field encodings of the documents.

pub mod dword_atomic;
pub mod encoding;
pub mod scatter4;

use crate::error::{ModelError, Reason, Rejection};
use crate::ir::Lowering;
use crate::knobs::Profile;
use crate::state::State;
use std::fmt;

/// A parsed vISA instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Instruction {
    /// DWORD_ATOMIC.
    DwordAtomic(dword_atomic::DwordAtomic),
    /// SVM_SCATTER4_SCALED.
    Scatter4(scatter4::Scatter4),
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instruction::DwordAtomic(i) => i.fmt(f),
            Instruction::Scatter4(i) => i.fmt(f),
        }
    }
}

/// Parses one vISA text line.
pub fn parse(text: &str) -> Result<Instruction, Rejection> {
    Err(Rejection::new(
        Reason::Syntax,
        format!("vISA front end not built yet: {text}"),
    ))
}

/// Lowers to the IR.
pub fn lower(i: &Instruction, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    let _ = (state, profile);
    Err(ModelError::NotImplemented(format!("vISA lowering of {i}")))
}
