//! SASS ATOM, "Atomic Operations": parse, validate, print and lower. (Front end pending.)

use crate::error::{ModelError, Reason, Rejection};
use crate::ir::Lowering;
use crate::knobs::Profile;
use crate::state::State;
use std::fmt;

/// A parsed SASS ATOM instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    text: String,
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Parses one ATOM line.
pub fn parse(text: &str) -> Result<Instruction, Rejection> {
    Err(Rejection::new(
        Reason::Syntax,
        format!("SASS front end not built yet: {text}"),
    ))
}

/// Lowers to the IR.
pub fn lower(i: &Instruction, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    let _ = (state, profile);
    Err(ModelError::NotImplemented(format!("SASS lowering of {i}")))
}
