//! Judging one generated case on every adapter: the campaign's limit ([`Limit`]), how a case
//! counts ([`Tally`]), its failure signature and the differential verdict ([`Verdict`]).

use super::options::Stop;
use crate::corpus::case::{Case, Item};
use crate::fuzzing::draft::GenCase;
use crate::fuzzing::expect::expect_table;
use crate::report::finding_line;
use crate::run::results::{CaseResult, Options, Status};
use crate::run::run_case;
use atomcts_adapters::Adapter;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The campaign's limit: its deadline and the stop request, asked before every adapter call.
#[derive(Clone, Debug, Default)]
pub(crate) struct Limit {
    pub(crate) deadline: Option<Instant>,
    pub(crate) stop: Option<Arc<AtomicBool>>,
}

impl Limit {
    /// Why the campaign must stop now, if it must.
    pub(crate) fn hit(&self) -> Option<Stop> {
        if self
            .stop
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
            || crate::run::interrupt::requested().is_some()
        {
            Some(Stop::Requested)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::Time)
        } else {
            None
        }
    }

    pub(crate) fn reached(&self) -> bool {
        self.hit().is_some()
    }
}

/// How one case is counted: exactly one of these. With two adapters the case takes the
/// greater of its two (an error on either side makes the case an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tally {
    Judged,
    NotApplicable,
    Skipped,
    Undecided,
    Error,
}

impl Tally {
    pub(crate) fn of(s: Status) -> Tally {
        match s {
            Status::Pass | Status::Fail | Status::KnownFailure | Status::BaselinePasses => {
                Tally::Judged
            }
            Status::NotApplicable => Tally::NotApplicable,
            Status::Skip => Tally::Skipped,
            Status::Undecided => Tally::Undecided,
            Status::Error => Tally::Error,
        }
    }
}

/// The kind of a finding's location: `global`, `shared`, `R`, `V`, `P`, `outcome`, `case`...
/// (addresses, lanes and register numbers dropped, so one bug is one signature).
pub(crate) fn location_kind(loc: &str) -> String {
    let k: String = loc
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
        .collect();
    if k.is_empty() { "?".into() } else { k }
}

/// The kinds of adapter error (`AdapterErrorKind`'s messages) a signature tells apart.
pub(crate) const ERROR_KINDS: [(&str, &str); 5] = [
    ("unavailable: ", "unavailable"),
    ("timed out after ", "timed out"),
    ("crashed: ", "crashed"),
    ("protocol error: ", "protocol error"),
    ("model error: ", "model error"),
];

/// The kind of an error result: the adapter error's kind (`timed out`, `crashed`, ...), the
/// earliest after `adapter <name>: `; `case` for any other error (the reference model's).
pub(crate) fn error_kind(r: &CaseResult) -> &'static str {
    let note = r.findings.first().map_or("", |f| f.note.as_str());
    let Some(rest) = note.strip_prefix("adapter ") else {
        return "case";
    };
    ERROR_KINDS
        .iter()
        .filter_map(|(text, kind)| rest.find(&format!(": {text}")).map(|i| (i, *kind)))
        .min()
        .map_or("case", |(_, kind)| kind)
}

/// A failure's signature: dialect, op, status and the kinds of the locations that differ (for
/// an error, its kind). `None` when the result is not a finding (pass, skip, not applicable).
pub fn signature(r: &CaseResult) -> Option<String> {
    let status = match r.status {
        Status::Fail | Status::BaselinePasses | Status::KnownFailure => "fail",
        Status::Error => return Some(format!("{} {} error {}", r.dialect, r.op, error_kind(r))),
        Status::Undecided => "undecided",
        Status::Pass | Status::Skip | Status::NotApplicable => return None,
    };
    let mut kinds: Vec<String> = r
        .findings
        .iter()
        .map(|f| location_kind(&f.location))
        .collect();
    kinds.sort();
    kinds.dedup();
    Some(format!(
        "{} {} {status} {}",
        r.dialect,
        r.op,
        kinds.join(",")
    ))
}

/// A result in a word or a signature: `pass`, `skip`, `not applicable`, else its signature.
pub(crate) fn side_word(r: &CaseResult) -> String {
    signature(r).unwrap_or_else(|| {
        match r.status {
            Status::Skip => "skip",
            Status::NotApplicable => "not applicable",
            _ => "pass",
        }
        .into()
    })
}

/// What one side gave, for the summary: its first finding (or error), else its status word.
pub(crate) fn side_example(r: &CaseResult) -> String {
    r.findings
        .first()
        .map_or_else(|| side_word(r), |f| finding_line(f, " "))
}

/// The verdict on one case: how it counts, its signature when it is a finding (a failure, an
/// error or an undecided case; with two adapters, whenever they are judged differently or
/// either errs), and the results (A's, then B's).
pub(crate) struct Verdict {
    pub(crate) tally: Tally,
    pub(crate) signature: Option<String>,
    pub(crate) results: Vec<CaseResult>,
    /// The side whose adapter is unavailable (its circuit breaker tripped, or it cannot
    /// start): nothing more can run there, and the error says nothing about the case.
    pub(crate) unavailable: Option<usize>,
}

/// What the differential compares of a judged result: its status and the observed value at
/// each location that differs from the reference.
pub(crate) fn judged_key(r: &CaseResult) -> (Status, Vec<(&str, &str)>) {
    let mut v: Vec<(&str, &str)> = r
        .findings
        .iter()
        .map(|f| (f.location.as_str(), f.observed.as_str()))
        .collect();
    v.sort();
    (r.status, v)
}

/// The verdict on the results of one case on every adapter.
pub(crate) fn verdict(results: Vec<CaseResult>) -> Verdict {
    let tally = results
        .iter()
        .map(|r| Tally::of(r.status))
        .max()
        .unwrap_or(Tally::Error);
    let unavailable = results
        .iter()
        .position(|r| r.status == Status::Error && error_kind(r) == "unavailable");
    let signature = match results.as_slice() {
        _ if unavailable.is_some() => None,
        [r] => signature(r),
        [ra, rb] => {
            // The differential: the two implementations are judged the same way by the
            // reference, or this is a finding about one of them. An error or an undecided
            // verdict on either side is never "the same".
            let differ = match tally {
                Tally::Judged => judged_key(ra) != judged_key(rb),
                Tally::Error | Tally::Undecided => true,
                Tally::Skipped | Tally::NotApplicable => false,
            };
            differ.then(|| {
                format!(
                    "{} {}: A {} / B {}",
                    ra.dialect,
                    ra.op,
                    side_word(ra),
                    side_word(rb)
                )
            })
        }
        _ => None,
    };
    Verdict {
        tally,
        signature,
        results,
        unavailable,
    }
}

/// Builds the case of `gc` with the reference's expectation.
pub(crate) fn case_of(gc: &GenCase, id: &str, opts: &Options) -> Result<Case, String> {
    let expect = expect_table(gc, &opts.profile)?;
    Ok(gc.to_case(
        id.to_string(),
        Path::new("fuzz"),
        format!(
            "atomcts fuzz; expectation from the reference model, profile {}",
            opts.profile.name
        ),
        Some(expect),
    ))
}

/// Runs `gc` on every adapter, one after the other; `None` when the limit comes before an
/// adapter call (nothing is judged then).
pub(crate) fn judge_case(
    gc: &GenCase,
    id: &str,
    adapters: &mut [&mut dyn Adapter],
    opts: &Options,
    limit: &Limit,
) -> Option<Result<Verdict, String>> {
    let case = match case_of(gc, id, opts) {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let mut results = Vec::with_capacity(adapters.len());
    for a in adapters.iter_mut() {
        if limit.reached() {
            return None;
        }
        results.push(run_case(&case, &mut **a, opts));
    }
    Some(Ok(verdict(results)))
}

/// Runs `cases` on `a`, pipelined when it has a window, until the limit: one result per case
/// for a prefix of `cases`, in order (the rest were not run to a verdict).
pub(crate) fn run_side(
    cases: &[Case],
    a: &mut dyn Adapter,
    opts: &Options,
    limit: &Limit,
) -> Vec<CaseResult> {
    let refs: Vec<Item<'_>> = cases.iter().map(Item::from).collect();
    let mut out = Vec::with_capacity(cases.len());
    crate::run::run_cases_until(&refs, a, opts, &|| limit.reached(), &mut |_, r| out.push(r));
    out
}
