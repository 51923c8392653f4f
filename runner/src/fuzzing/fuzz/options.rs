//! What to fuzz and for how long ([`FuzzOptions`]), and why a campaign ended ([`Stop`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What to fuzz and for how long.
#[derive(Clone, Debug)]
pub struct FuzzOptions {
    /// Seed of the case stream.
    pub seed: u64,
    /// Stop after this many cases.
    pub cases: Option<u64>,
    /// Stop after this long, shrinking included: no adapter call starts after it, so the
    /// campaign overruns it by at most the one call under way (its adapter deadline).
    pub time: Option<Duration>,
    /// Where regression cases are written.
    pub out: PathBuf,
    /// For each adapter (the one under test, then `--against`'s), the `atomcts run` options
    /// after `--cases FILE` that rerun a finding on it (profile, adapter, knob overrides,
    /// adapter deadline, race budget), already shell-quoted, each starting with a space.
    pub repro_sides: Vec<String>,
    /// The `atomcts fuzz` command itself, for the files' headers.
    pub command: String,
    /// A stop request besides SIGINT and SIGTERM ([`crate::run::interrupt`], which always count):
    /// once set, the campaign ends as at its time limit, with its summary.
    pub stop: Option<Arc<AtomicBool>>,
    /// Draw another case instead of sending one an adapter declares it cannot run
    /// ([`crate::run::prepare::screen`], issue 31 point 2); `--no-screen` sends every case.
    pub screen: bool,
    /// Pass over the drafts of a shape the screen only ever turned away
    /// ([`crate::fuzzing::learn`]; with `screen` only); `--no-learn` makes every draft.
    pub learn: bool,
    /// Send the screened cases too and check that each is answered not applicable
    /// (`--audit-screen`): a screened case that an adapter runs is a problem of the campaign.
    pub audit_screen: bool,
}

/// Screened drawn cases in a row after which a campaign stops ([`Stop::Unrunnable`]): the
/// adapters can run none of the generated cases.
pub const SCREEN_GIVE_UP: u64 = 10_000;

/// Distinct reasons `Summary::screened_by` keeps.
pub const SCREEN_REASONS: usize = 64;

/// Why a campaign ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `--cases N` cases were generated (and not screened out).
    Cases,
    /// The time limit came.
    Time,
    /// A stop request ([`FuzzOptions::stop`]).
    Requested,
    /// [`SCREEN_GIVE_UP`] drawn cases in a row were screened out: the adapters can run
    /// none of what the generator makes. The last reason.
    Unrunnable(String),
    /// An adapter became unavailable (its circuit breaker tripped, or it cannot start):
    /// nothing more can be checked. The error message.
    Unavailable(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Cases => f.write_str("the case limit (--cases) was reached"),
            Stop::Time => f.write_str("the time limit (--time) came"),
            Stop::Requested => f.write_str("a stop was requested"),
            Stop::Unrunnable(why) => write!(
                f,
                "{} drawn cases in a row were screened out (last reason: {})",
                SCREEN_GIVE_UP,
                crate::report::safe(why)
            ),
            Stop::Unavailable(why) => write!(
                f,
                "an adapter is unavailable, nothing more can be checked: {}",
                crate::report::safe(why)
            ),
        }
    }
}
