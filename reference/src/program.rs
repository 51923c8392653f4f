//! One instruction of any dialect: parse, print, lower, run.

use crate::error::{ModelError, Rejection};
use crate::exec;
use crate::ir::{Lowered, Lowering};
use crate::knobs::Profile;
use crate::outcome::Outcome;
use crate::state::State;
use crate::{msl, sass, visa};
use std::fmt;

/// The three dialects of the seed documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dialect {
    /// NVIDIA SASS.
    Sass,
    /// Intel vISA.
    Visa,
    /// Apple Metal Shading Language.
    Msl,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: &'static [Dialect] = &[Dialect::Sass, Dialect::Visa, Dialect::Msl];

    /// Stable name (`sass`, `visa`, `msl`).
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sass => "sass",
            Dialect::Visa => "visa",
            Dialect::Msl => "msl",
        }
    }

    /// Inverse of [`Dialect::name`].
    pub fn from_name(s: &str) -> Option<Dialect> {
        Dialect::ALL.iter().copied().find(|d| d.name() == s)
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed, syntactically valid instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// SASS ATOM.
    Sass(sass::Instruction),
    /// vISA DWORD_ATOMIC or SVM_SCATTER4_SCALED.
    Visa(visa::Instruction),
    /// An MSL statement.
    Msl(msl::Statement),
}

impl Program {
    /// Parses one instruction in a dialect's text form.
    pub fn parse(dialect: Dialect, text: &str) -> Result<Program, Rejection> {
        Ok(match dialect {
            Dialect::Sass => Program::Sass(sass::parse(text)?),
            Dialect::Visa => Program::Visa(visa::parse(text)?),
            Dialect::Msl => Program::Msl(msl::parse(text)?),
        })
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        match self {
            Program::Sass(_) => Dialect::Sass,
            Program::Visa(_) => Dialect::Visa,
            Program::Msl(_) => Dialect::Msl,
        }
    }

    /// Lowers to the IR against a state (operand types and sizes come from the state).
    pub fn lower(&self, state: &State, profile: &Profile) -> Result<Lowering, ModelError> {
        state.validate()?;
        match self {
            Program::Sass(i) => sass::lower(i, state, profile),
            Program::Visa(i) => visa::lower(i, state, profile),
            Program::Msl(s) => msl::lower(s, state, profile),
        }
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Program::Sass(i) => i.fmt(f),
            Program::Visa(i) => i.fmt(f),
            Program::Msl(s) => s.fmt(f),
        }
    }
}

/// A reference run: the outcome, and the lowered instruction when it ran (needed to judge
/// other implementations' observations with [`crate::check`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The outcome.
    pub outcome: Outcome,
    /// The IR, when the instruction was lowered.
    pub lowered: Option<Lowered>,
}

/// Parses, lowers and executes one instruction: the reference's answer.
pub fn run(
    dialect: Dialect,
    text: &str,
    state: &State,
    profile: &Profile,
) -> Result<Run, ModelError> {
    run_parsed(&Program::parse(dialect, text), state, profile)
}

/// [`run`] of an instruction text already parsed (or rejected by the parser): a caller that
/// runs one text on many states parses it once.
pub fn run_parsed(
    parsed: &Result<Program, Rejection>,
    state: &State,
    profile: &Profile,
) -> Result<Run, ModelError> {
    match parsed {
        Ok(program) => run_program(program, state, profile),
        Err(r) => Ok(Run {
            outcome: Outcome::Invalid(r.clone()),
            lowered: None,
        }),
    }
}

/// Lowers and executes a parsed instruction.
pub fn run_program(program: &Program, state: &State, profile: &Profile) -> Result<Run, ModelError> {
    match program.lower(state, profile)? {
        Lowering::Invalid(r) => Ok(Run {
            outcome: Outcome::Invalid(r),
            lowered: None,
        }),
        Lowering::Unspecified(why) => Ok(Run {
            outcome: Outcome::Unspecified(why),
            lowered: None,
        }),
        Lowering::Run(l) => {
            let outcome = exec::execute(&l, state)?;
            Ok(Run {
                outcome,
                lowered: Some(l),
            })
        }
    }
}
