//! What a run says about each case ([`CaseResult`], [`Status`]) and the options it runs under
//! ([`Options`]); [`verdict`] turns findings into a status. Shared by single-instruction
//! and concurrent cases ([`crate::run::concurrent`]).

use crate::corpus::verify::{self, Finding};
use atomcts_adapters::Adapter;
use atomcts_reference::Profile;
use serde::{Deserialize, Serialize};

/// How one case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The observation matches.
    Pass,
    /// It does not.
    Fail,
    /// The race checker could not decide within its budget: not a pass.
    Undecided,
    /// In the baseline of known failures and still failing.
    KnownFailure,
    /// In the baseline but passing now: the baseline is stale.
    BaselinePasses,
    /// The case or the adapter could not be run (bad input, model or infrastructure error).
    Error,
    /// The adapter lacks a required capability.
    Skip,
    /// The case's `where` (or probe options) do not cover this profile.
    NotApplicable,
}

impl Status {
    /// Whether the status makes the run nonconformant (exit 1).
    pub fn is_failure(self) -> bool {
        match self {
            Status::Fail | Status::Undecided | Status::BaselinePasses => true,
            Status::Pass
            | Status::KnownFailure
            | Status::Error
            | Status::Skip
            | Status::NotApplicable => false,
        }
    }
}

/// The result of one case.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseResult {
    /// Case id.
    pub id: String,
    /// Dialect name.
    pub dialect: String,
    /// Op label for summaries (`ATOM.INC`, `DWORD_ATOMIC.cmpxchg`, `atomic_fetch_add_explicit`...).
    pub op: String,
    /// The instruction.
    pub asm: String,
    /// `file:line:col` of the case.
    pub at: String,
    /// Citation.
    pub cite: String,
    /// Status.
    pub status: Status,
    /// Findings (failures) or the error message.
    pub findings: Vec<FindingOut>,
    /// For probes: the knob and the options whose expectation the observation matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<ProbeResult>,
    /// For probes, the knob it probes, also when it did not run (not applicable, skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knob: Option<String>,
    /// The command that reproduces this case.
    pub repro: String,
    /// For a failing case on a semantic-level implementation: the program that ran, in the
    /// target's language (the OpenCL C kernel, with its build options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// For a case run more than once (`--repeat`, concurrent cases): how many runs, how many
    /// failed (issue 12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<Runs>,
    /// Listed as `flaky` in the baseline (both outcomes allowed); the conformance report counts
    /// such a case the same way whatever this run's outcome (`conformance.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
}

/// How often a repeated case failed.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Runs {
    /// Runs made.
    pub runs: u32,
    /// Runs that failed (fail or undecided).
    pub failed: u32,
}

impl Runs {
    /// The failure rate, 0 to 1.
    pub fn rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            f64::from(self.failed) / f64::from(self.runs)
        }
    }
}

/// A finding as stored in reports.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FindingOut {
    /// Location.
    pub location: String,
    /// Expected.
    pub expected: String,
    /// Observed.
    pub observed: String,
    /// Note.
    pub note: String,
}

impl From<Finding> for FindingOut {
    fn from(f: Finding) -> FindingOut {
        FindingOut {
            location: f.location,
            expected: f.expected,
            observed: f.observed,
            note: f.note,
        }
    }
}

/// A probe's answer: which options the implementation matched.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProbeResult {
    /// Knob id.
    pub knob: String,
    /// Options whose expectation matched the observation.
    pub matched: Vec<String>,
    /// The option the profile picks.
    pub picked: String,
}

/// Options of a run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The profile.
    pub profile: Profile,
    /// Race-checker budget in states.
    pub race_budget: u64,
    /// How the repro command names the case source (`--cases <path>`).
    pub cases_arg: String,
    /// The rest of the repro command after the profile (` --adapter ... --set ...`), each word
    /// already shell-quoted.
    pub adapter_arg: String,
}

/// The case's status from its findings (capped) and an undecided race, with the program that
/// ran kept for a failing or undecided case.
pub fn verdict(
    mut r: CaseResult,
    findings: Vec<Finding>,
    undecided: Option<String>,
    adapter: &dyn Adapter,
) -> CaseResult {
    r.findings = verify::cap_findings(findings)
        .into_iter()
        .map(Into::into)
        .collect();
    if !r.findings.is_empty() || undecided.is_some() {
        r.program = adapter.last_program();
    }
    r.status = if !r.findings.is_empty() {
        Status::Fail
    } else if let Some(why) = undecided {
        r.findings.push(FindingOut {
            location: "race".into(),
            expected: String::new(),
            observed: String::new(),
            note: why,
        });
        Status::Undecided
    } else {
        Status::Pass
    };
    r
}
