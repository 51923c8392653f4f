//! What a case expects ([`Expectation`]): the checked locations and their patterns, a fault,
//! an illegal form or an unspecified outcome. Built by [`crate::corpus::build`], checked by
//! [`crate::corpus::verify`].

use crate::corpus::pos::Pos;
use crate::corpus::value::Pat;
use atomcts_reference::outcome::FaultClass;
use atomcts_reference::types::Space;

/// A checked location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Bits of a register element.
    Reg {
        /// Name.
        name: String,
        /// Element.
        idx: u32,
    },
    /// The multiset of a register's elements over lanes `0..lanes`.
    Multiset {
        /// Name (first register of a pair for 64-bit SASS values).
        name: String,
        /// Lanes.
        lanes: u32,
        /// Width: 64 reads SASS pairs.
        width: u32,
    },
    /// Memory.
    Mem {
        /// Memory.
        space: Space,
        /// Address.
        addr: u64,
        /// Bytes.
        bytes: u32,
    },
}

/// One expected location.
#[derive(Clone, Debug)]
pub struct Check {
    /// Where it was written.
    pub pos: Pos,
    /// The location name as written (`R0`, `mem`, `buf`...).
    pub key: String,
    /// The location.
    pub target: Target,
    /// What it must hold (for multisets: `multiset`).
    pub pat: Pat,
    /// The multiset's values.
    pub multiset: Vec<Pat>,
}

/// What a case expects.
#[derive(Clone, Debug)]
pub enum Expectation {
    /// These values; every other location unchanged.
    Values(Vec<Check>),
    /// A fault of this class (and exactly these lanes, if given).
    Fault {
        /// Class.
        class: FaultClass,
        /// Lanes.
        lanes: Option<Vec<u32>>,
    },
    /// An illegal form with this reason code and, if the case says, the 1-based byte column
    /// in `asm` the rejection points at (FORMAT.md `column`).
    Invalid {
        /// The reason code.
        reason: String,
        /// The column, if stated.
        column: Option<usize>,
    },
    /// The documents leave the outcome undefined.
    Unspecified,
}

impl Expectation {
    /// One word for the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            Expectation::Values(_) => "completed",
            Expectation::Fault { .. } => "fault",
            Expectation::Invalid { .. } => "invalid",
            Expectation::Unspecified => "unspecified",
        }
    }
}
