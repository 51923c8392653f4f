//! Apple Metal Shading Language: atomic functions (§6.15.4.5) and SIMD-group functions
//! (Table 34, §6.9.2).

pub mod atomic;
pub mod simd;

use crate::error::{ModelError, Reason, Rejection};
use crate::ir::Lowering;
use crate::knobs::Profile;
use crate::state::State;
use std::fmt;

/// A parsed MSL statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Statement {
    /// An atomic function call.
    Atomic(atomic::AtomicCall),
    /// A SIMD-group function call.
    Simd(simd::SimdCall),
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Atomic(s) => s.fmt(f),
            Statement::Simd(s) => s.fmt(f),
        }
    }
}

/// Parses one statement.
pub fn parse(text: &str) -> Result<Statement, Rejection> {
    Err(Rejection::new(
        Reason::Syntax,
        format!("MSL front end not built yet: {text}"),
    ))
}

/// Lowers to the IR.
pub fn lower(s: &Statement, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
    let _ = (state, profile);
    Err(ModelError::NotImplemented(format!("MSL lowering of {s}")))
}
