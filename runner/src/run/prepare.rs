//! Everything decided about a case before the adapter runs it ([`prepare`]): its state,
//! expectation and the reference's run.

use crate::corpus::build::build_expectation;
use crate::corpus::case::{Case, Item};
use crate::corpus::expectation::Expectation;
use crate::corpus::state::item_state;
use crate::corpus::verify::Finding;
use crate::run::repro::{base_result, error_result, not_applicable};
use crate::run::results::{CaseResult, FindingOut, Options, Status};
use atomcts_adapters::{Adapter, Level, Request};
use atomcts_reference::Reason;
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{self};
use std::borrow::Cow;

/// A case with everything decided before the adapter runs it: its state, expectation and
/// the reference's answer (issue 9: several of these can be in flight through a pipelined
/// adapter, see [`atomcts_adapters::Pipelined::run_batch`]).
pub struct Prepared<'c> {
    pub(crate) item: Item<'c>,
    pub(crate) r: CaseResult,
    pub(crate) state: Cow<'c, atomcts_reference::state::State>,
    /// `None` on the generator's route until it is needed ([`expectation_now`]).
    pub(crate) expectation: Option<Cow<'c, Expectation>>,
    pub(crate) reference: Cow<'c, program::Run>,
    /// A generated case on the generator's own route: its state, expectation and reference
    /// run are the generator's, made under this profile (issue 9).
    pub(crate) prebuilt: bool,
}

impl Prepared<'_> {
    /// The request to send.
    pub fn request<'a>(&'a self, opts: &'a Options) -> Request<'a> {
        let case = self.item.case();
        Request {
            id: &case.id,
            dialect: case.dialect,
            asm: &case.asm,
            state: &self.state,
            profile: &opts.profile,
            lowered: self.reference.lowered.as_ref(),
        }
    }
}

/// What [`prepare`] decided.
pub enum Step<'c> {
    /// The case ended without the adapter (not applicable, skipped, an input error).
    Done(Box<CaseResult>),
    /// The case is ready to send.
    Ready(Box<Prepared<'c>>),
    /// A concurrent case (issue 12): run on its own path, with this result so far.
    Concurrent(&'c Case, Box<CaseResult>),
}

/// Everything of [`crate::run::run_case`] before the adapter runs.
pub fn prepare<'c>(item: Item<'c>, adapter: &dyn Adapter, opts: &Options) -> Step<'c> {
    let case = item.case();
    let done = |r: CaseResult| Step::Done(Box::new(r));
    let mut r = base_result(item, opts);
    let profile = &opts.profile;
    for (k, o) in &case.where_ {
        let picked = profile.get(k).ok();
        if picked != Some(o.as_str()) {
            let why = format!(
                "the case is for {k} = {o}; profile {} picks {}",
                profile.name,
                picked.unwrap_or("?")
            );
            return done(not_applicable(r, "where", why));
        }
    }
    // A semantic-level implementation decides from the lowered IR and what its device reports
    // (an op it cannot run is not applicable, with the reason), not from the case's tags.
    let tagged = adapter.level() == Level::Text;
    if let Some(cap) = case
        .requires
        .iter()
        .find(|c| tagged && !adapter.supports(c))
    {
        r.status = Status::Skip;
        r.findings.push(FindingOut {
            location: "requires".into(),
            expected: cap.clone(),
            observed: String::new(),
            note: format!("adapter {} lacks {cap}", adapter.name()),
        });
        return done(r);
    }
    if case.is_concurrent() {
        // Concurrent cases run on their own path (issue 12), never in a pipelined window.
        return Step::Concurrent(case, Box::new(r));
    }
    // A generated case carries its state and reference run, made by the generator under the
    // same profile (issue 9): built once; its expectation is built from the reference's outcome
    // when first needed ([`expectation_now`]).
    let (state, mut expectation, reference) = match item
        .generated()
        .filter(|g| g.profile() == profile && case.probe.is_none())
    {
        Some(g) => (
            Cow::Borrowed(g.state()),
            None,
            Some(Cow::Borrowed(g.reference())),
        ),
        None => {
            let state = match item_state(item) {
                Ok(s) => s,
                Err(e) => return done(error_result(item, opts, e.to_string())),
            };
            // The expectation for this profile.
            let expect = item.expect_entries();
            let (entries, at) = match (&case.probe, expect.as_deref()) {
                (Some(knob), _) => {
                    let picked = profile.get(knob).unwrap_or("?");
                    match case.expect_if.iter().find(|(o, _, _)| o == picked) {
                        Some((_, e, p)) => (e, p),
                        None => {
                            let why = format!("the probe has no expectation for {knob} = {picked}");
                            return done(not_applicable(r, "probe", why));
                        }
                    }
                }
                (None, Some((e, p))) => (e, p),
                (None, None) => return done(error_result(item, opts, "no expectation".into())),
            };
            let expectation = match build_expectation(case, &state, entries, at) {
                Ok(e) => e,
                Err(e) => return done(error_result(item, opts, e.to_string())),
            };
            (Cow::Owned(state), Some(Cow::Owned(expectation)), None)
        }
    };
    let prebuilt = reference.is_some();
    if adapter.level() == Level::Semantic {
        // A generated case's expectation is made from the reference's outcome: its kind is the
        // outcome's (`generated_outcomes_say_what_their_expectations_say`), so it is built only
        // if the judge needs it (issue 31).
        let why = match &reference {
            Some(run) => outcome_not_applicable(&run.outcome),
            None => match expectation_now(&mut expectation, item, &state, opts) {
                Ok(e) => semantic_not_applicable(e),
                Err(r) => return Step::Done(r),
            },
        };
        if let Some(why) = why {
            return done(not_applicable(r, "level", why));
        }
    }
    // The reference's answer (for input errors and the race-aware cross-check).
    let reference = match reference {
        Some(run) => run,
        None => match program::run(case.dialect, &case.asm, &state, profile) {
            Ok(run) => Cow::Owned(run),
            Err(e) => return done(error_result(item, opts, format!("reference model: {e}"))),
        },
    };
    if let Outcome::Invalid(rej) = &reference.outcome {
        let unparsable = matches!(rej.reason, Reason::Syntax | Reason::UnknownOperation);
        // A generated case expects its reference's rejection.
        let expects_invalid = unparsable
            && (prebuilt
                || match expectation_now(&mut expectation, item, &state, opts) {
                    Ok(e) => matches!(e, Expectation::Invalid { .. }),
                    Err(r) => return Step::Done(r),
                });
        if unparsable && !expects_invalid {
            let col = case.asm_pos.col + 1 + rej.column.unwrap_or(0);
            return done(error_result(
                item,
                opts,
                format!(
                    "{}:{}:{}: asm does not parse: {rej}",
                    case.asm_pos.file.display(),
                    case.asm_pos.line,
                    col
                ),
            ));
        }
    }
    // What the case needs, derived from its lowered IR (case authors need not tag it): a
    // semantic-level implementation that does not report it cannot run the case.
    if adapter.level() == Level::Semantic
        && let Some(lowered) = &reference.lowered
    {
        let needs = atomcts_adapters::plan::Needs::of(lowered, &state);
        if let Some(cap) = needs
            .capabilities()
            .into_iter()
            .find(|c| !adapter.supports(c))
        {
            let why = format!(
                "needs {cap} (from the lowered IR: {needs}); {} does not report it",
                adapter.name()
            );
            return done(not_applicable(r, "capability", why));
        }
    }
    // Stated byte fields or words: checked both ways against the vISA or SASS encoder and
    // decoder. Bytes the decoder rejects state no instruction to run: the expectation must be
    // that rejection.
    if let Some((stated, pos)) = &case.encoding {
        let e = match expectation_now(&mut expectation, item, &state, opts) {
            Ok(e) => e,
            Err(r) => return Step::Done(r),
        };
        match encoding_findings(&case.asm, stated, e) {
            Ok(None) => {}
            // Decided on the bytes alone, by the model's own decoder: never the verdict of an
            // adapter that was not asked (issue 27, H3).
            Ok(Some(_)) if !adapter.is_builtin_model() => {
                let why = format!(
                    "decided on its stated bytes alone, which are the built-in model's decoder's input: adapter {} was not asked (nothing is run)",
                    adapter.name()
                );
                return done(not_applicable(r, "encoding", why));
            }
            Ok(Some(found)) => {
                r.findings = found.into_iter().map(Into::into).collect();
                r.status = if r.findings.is_empty() {
                    Status::Pass
                } else {
                    Status::Fail
                };
                return done(r);
            }
            Err(e) => return done(error_result(item, opts, format!("{pos}: {e}"))),
        }
    }
    Step::Ready(Box::new(Prepared {
        item,
        r,
        state,
        expectation,
        reference,
        prebuilt,
    }))
}

/// The expectation of a prepared case: the one already built, or, for a generated case on the
/// generator's route, the one built now from the reference's outcome (issue 9: a generated case
/// whose observed state is the reference's own never needs it). `Err`: the case's error result
/// when it cannot be built, with the message the case's `expect` table gives.
pub(crate) fn expectation_now<'e, 'c: 'e>(
    expectation: &'e mut Option<Cow<'c, Expectation>>,
    item: Item<'c>,
    state: &atomcts_reference::state::State,
    opts: &Options,
) -> Result<&'e Expectation, Box<CaseResult>> {
    if expectation.is_none() {
        let Some(e) = item.generated_expectation() else {
            let why = match item.expect_entries() {
                Some(t) => match build_expectation(item.case(), state, &t.0, &t.1) {
                    Err(e) => e.to_string(),
                    Ok(_) => "the generated case's expectation could not be built".into(),
                },
                None => "no expectation".into(),
            };
            return Err(Box::new(error_result(item, opts, why)));
        };
        *expectation = Some(Cow::Borrowed(e));
    }
    match expectation {
        Some(e) => Ok(e),
        None => Err(Box::new(error_result(item, opts, "no expectation".into()))),
    }
}

/// Why a case does not apply to a semantic-level implementation, from its expectation alone:
/// an illegal form (it runs valid instructions only) or a fault (its API cannot observe one).
pub fn semantic_not_applicable(expectation: &Expectation) -> Option<String> {
    match expectation {
        Expectation::Invalid { reason, .. } => Some(expects_illegal_form(reason)),
        Expectation::Fault { class, .. } => Some(expects_fault(*class)),
        Expectation::Values(_) | Expectation::Unspecified => None,
    }
}

/// [`semantic_not_applicable`] of a generated case's expectation, from the reference outcome
/// it is made of (`crate::fuzzing::expect::expectation`: a rejection's reason code; a fault's
/// first lane's class, else an address out of range).
pub fn outcome_not_applicable(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Invalid(rej) => Some(expects_illegal_form(rej.reason.code())),
        Outcome::Fault(f) => Some(expects_fault(
            f.lanes
                .first()
                .map_or(atomcts_reference::FaultClass::AddressOutOfRange, |l| l.1),
        )),
        Outcome::Completed(_) | Outcome::Unspecified(_) => None,
    }
}

fn expects_illegal_form(reason: &str) -> String {
    format!(
        "expects an illegal form ({reason}); a semantic-level implementation runs the lowered IR of valid instructions only"
    )
}

fn expects_fault(class: atomcts_reference::FaultClass) -> String {
    format!(
        "expects a fault ({}); a semantic-level implementation's API cannot observe faults",
        class.name()
    )
}

/// The findings of a case's stated vISA byte fields (`encoding`): `Ok(None)` when they agree
/// with the text both ways and the text is to be run; `Ok(Some(findings))` when the case is
/// decided here (the decoder rejects the bytes, or they disagree with the text); `Err` when the
/// text itself is rejected.
pub(crate) fn encoding_findings(
    asm: &str,
    stated: &crate::corpus::case::Encoding,
    expectation: &Expectation,
) -> Result<Option<Vec<Finding>>, String> {
    use atomcts_reference::{sass, visa};
    let finding = |expected: String, observed: String, note: &str| Finding {
        location: "encoding".into(),
        expected,
        observed,
        note: note.into(),
    };
    let text_rejected = |r| format!("the text form of an encoding case is rejected: {r}");
    // Both agreements have the same three outcomes.
    let (agreement, which) = match stated {
        crate::corpus::case::Encoding::Visa(st) => (
            match visa::encoding::agree(asm, st).map_err(text_rejected)? {
                visa::encoding::Agreement::Agrees => Ok(()),
                visa::encoding::Agreement::Differs(l) => Err(Ok(l)),
                visa::encoding::Agreement::Rejected(r) => Err(Err(r)),
            },
            "vISA",
        ),
        crate::corpus::case::Encoding::Sass(w) => (
            match sass::encoding::agree(asm, *w).map_err(text_rejected)? {
                sass::encoding::Agreement::Agrees => Ok(()),
                sass::encoding::Agreement::Differs(l) => Err(Ok(l)),
                sass::encoding::Agreement::Rejected(r) => Err(Err(r)),
            },
            "SASS",
        ),
    };
    match agreement {
        Ok(()) => Ok(None),
        Err(Ok(lines)) => Ok(Some(
            lines
                .into_iter()
                .map(|l| {
                    finding(
                        "the text's encoding".into(),
                        l,
                        &format!("{which} encoder/decoder"),
                    )
                })
                .collect(),
        )),
        Err(Err(rej)) => Ok(Some(match expectation {
            Expectation::Invalid { reason, .. } if reason == rej.reason.code() => vec![],
            other => vec![finding(
                match other {
                    Expectation::Invalid { reason, .. } => format!("invalid ({reason})"),
                    e => e.kind().to_string(),
                },
                format!("invalid ({}): {rej}", rej.reason.code()),
                &format!("the {which} decoder rejects the stated bytes"),
            )],
        })),
    }
}

/// Why `adapter` would not run `item`, decided without running it (issue 31 point 2): the
/// runner's own checks ([`prepare`]: `where`, a probe's options), a concurrent case's
/// ([`crate::run::concurrent::screen`]), and what the adapter's [`Adapter::screen`] says of
/// the request. `None` when the case would be sent. A case that
/// ends without the adapter for another reason (skipped, an error) is not screened: it is
/// counted where it ends.
pub fn screen(item: Item<'_>, adapter: &mut dyn Adapter, opts: &Options) -> Option<String> {
    match prepare(item, &*adapter, opts) {
        Step::Done(r) => (r.status == Status::NotApplicable).then(|| {
            r.findings
                .first()
                .map_or_else(String::new, |f| f.note.clone())
        }),
        Step::Concurrent(case, _) => crate::run::concurrent::screen(case, adapter, opts),
        Step::Ready(p) => adapter.screen(&p.request(opts)),
    }
}
