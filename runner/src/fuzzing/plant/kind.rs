//! The kinds of planted wrong answer and the bounds on how many are planted.

use atomcts_adapters::Observation;

/// Histories up to this many accesses to one address are brute-forced (6! orders).
pub const BRUTE_FORCE_LANES: usize = 6;

/// At most this many plants of one kind per case and profile.
pub const PER_KIND: usize = 6;

/// Instructions with more accesses than this get one plant of each kind.
pub(super) const MANY_ACCESSES: usize = 64;

/// At most this many register elements per register are planted in (written ones first).
pub(super) const ELEMS_PER_REG: usize = 6;

/// The kinds of planted wrong answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PlantKind {
    /// A bit flipped in a register element that is neither racing nor open.
    RegisterBit,
    /// A register of the final state left out of the answer.
    RegisterMissing,
    /// A bit flipped in a memory byte outside the racing addresses.
    MemoryBit,
    /// An allocated memory range of the final state left out of the answer, or a byte the case
    /// never allocated added to it.
    MemoryRange,
    /// A racing address left with a value no order produces.
    RacingFinal,
    /// A racing lane given back a value no order gives it.
    RacingReturn,
    /// A racing lane given back a value some order gives it, but no order together with what
    /// every other lane got and the final value.
    RacingMixed,
    /// A bit flipped above a racing lane's returned value, where the documents fix those bits
    /// (vISA `.16` writeback zero-extended, sign-extended or preserved, A12; a register's bits
    /// above a narrower value preserved).
    RacingUpperBit,
    /// A fault of another class.
    FaultClass,
    /// A fault on other lanes.
    FaultLanes,
    /// A rejection for another reason.
    RejectionReason,
    /// A rejection for the right reason at another column of the text (where the case states
    /// one).
    RejectionColumn,
    /// Another kind of outcome.
    OutcomeKind,
    /// A concurrent case's shared address left with a value no order of all its instructions'
    /// operations (each thread's in program order) produces.
    ConcurrentFinal,
    /// One iteration of one thread of a concurrent case given back a value no such order gives
    /// it.
    ConcurrentReturn,
}

impl PlantKind {
    /// Every kind.
    pub const ALL: &'static [PlantKind] = &[
        PlantKind::RegisterBit,
        PlantKind::RegisterMissing,
        PlantKind::MemoryBit,
        PlantKind::MemoryRange,
        PlantKind::RacingFinal,
        PlantKind::RacingReturn,
        PlantKind::RacingMixed,
        PlantKind::RacingUpperBit,
        PlantKind::FaultClass,
        PlantKind::FaultLanes,
        PlantKind::RejectionReason,
        PlantKind::RejectionColumn,
        PlantKind::OutcomeKind,
        PlantKind::ConcurrentFinal,
        PlantKind::ConcurrentReturn,
    ];

    /// A stable name.
    pub fn name(self) -> &'static str {
        match self {
            PlantKind::RegisterBit => "register bit",
            PlantKind::RegisterMissing => "register missing",
            PlantKind::MemoryBit => "memory bit",
            PlantKind::MemoryRange => "memory range",
            PlantKind::RacingFinal => "racing final value",
            PlantKind::RacingReturn => "racing lane's return",
            PlantKind::RacingMixed => "racing returns of no one order",
            PlantKind::RacingUpperBit => "racing upper bit",
            PlantKind::FaultClass => "fault class",
            PlantKind::FaultLanes => "fault lanes",
            PlantKind::RejectionReason => "rejection reason",
            PlantKind::RejectionColumn => "rejection column",
            PlantKind::OutcomeKind => "outcome kind",
            PlantKind::ConcurrentFinal => "concurrent final value",
            PlantKind::ConcurrentReturn => "concurrent return",
        }
    }
}

/// One planted wrong answer.
#[derive(Clone, Debug)]
pub struct Plant {
    /// Its kind.
    pub kind: PlantKind,
    /// What was changed, for people.
    pub what: String,
    /// The observation to present.
    pub observation: Observation,
}
