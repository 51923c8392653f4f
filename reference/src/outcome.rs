//! What running an instruction yields: a completed state, a spec-defined fault, an illegal
//! form, or a statement that the documents leave the outcome undefined. Model errors are not
//! outcomes ([`crate::error::ModelError`]).

use crate::error::Rejection;
use crate::float::Format;
use crate::state::{Loc, State};
use std::fmt;

/// Run-time fault classes of the documents (SASS ATOM: "misaligned address error", "address
/// out-of-range error", "invalid address space error").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultClass {
    /// The address is not a multiple of the access size.
    MisalignedAddress,
    /// The address is outside every allocated range.
    AddressOutOfRange,
    /// A generic address outside global memory (SASS shared/local window).
    InvalidAddressSpace,
}

impl FaultClass {
    /// Every class.
    pub const ALL: &'static [FaultClass] = &[
        FaultClass::MisalignedAddress,
        FaultClass::AddressOutOfRange,
        FaultClass::InvalidAddressSpace,
    ];

    /// The stable name used by `fault = "<class>"`.
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::MisalignedAddress => "misaligned_address",
            FaultClass::AddressOutOfRange => "address_out_of_range",
            FaultClass::InvalidAddressSpace => "invalid_address_space",
        }
    }

    /// Inverse of [`FaultClass::name`].
    pub fn from_name(s: &str) -> Option<FaultClass> {
        FaultClass::ALL.iter().copied().find(|c| c.name() == s)
    }
}

impl fmt::Display for FaultClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A run-time fault: the instruction traps. Each faulting lane has one class; the model checks
/// address space, then alignment, then range, and reports the first that fails per lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Faulting lanes with their class, ascending by lane.
    pub lanes: Vec<(u32, FaultClass)>,
}

/// Bits of a location the documents leave open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// Any value.
    Any,
    /// Any NaN of the format (A4 `any`; memory only: the race checker judges those bytes).
    AnyNan(Format),
}

/// A bit field `[lo, lo+bits)` of a location and what it may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Lowest bit.
    pub lo: u32,
    /// Width.
    pub bits: u32,
    /// What is allowed.
    pub allowed: Allowed,
}

impl Field {
    /// The field's bits as a mask of the location.
    pub fn mask(&self) -> u64 {
        crate::types::mask(self.bits) << self.lo
    }
}

/// A completed instruction: the final state under the canonical order (program order for
/// racing lanes), and the locations whose bits the documents leave open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    /// Final state.
    pub state: State,
    /// Open bit fields per location; bits not covered must equal `state`.
    pub open: Vec<(Loc, Field)>,
}

/// The outcome of one instruction on one state under one profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran to completion.
    Completed(Completed),
    /// It faulted at run time.
    Fault(Fault),
    /// It is an illegal form: rejected before running.
    Invalid(Rejection),
    /// The documents leave the outcome undefined; the reason cites where.
    Unspecified(String),
}

impl Outcome {
    /// One word for the kind of outcome: `completed`, `fault`, `invalid`, `unspecified`.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Completed(_) => "completed",
            Outcome::Fault(_) => "fault",
            Outcome::Invalid(_) => "invalid",
            Outcome::Unspecified(_) => "unspecified",
        }
    }
}
