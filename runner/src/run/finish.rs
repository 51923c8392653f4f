//! Everything about a case after the adapter ran it ([`finish`]): the observation judged
//! against the expectation and the reference model.

use crate::corpus::build::build_expectation;
use crate::corpus::verify::{self, Finding};
use crate::run::prepare::{Prepared, expectation_now};
use crate::run::repro::{error_result, not_applicable};
use crate::run::results::{CaseResult, FindingOut, Options, ProbeResult, Status, verdict};
use atomcts_adapters::{Adapter, Observation};
use atomcts_reference::check::{Judgement, judge};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::Dialect;

/// Everything of [`crate::run::run_case`] after the adapter ran: judges its answer.
pub fn finish(
    p: Box<Prepared<'_>>,
    observation: Result<Observation, atomcts_adapters::AdapterError>,
    adapter: &dyn Adapter,
    opts: &Options,
) -> CaseResult {
    let Prepared {
        item,
        mut r,
        state,
        mut expectation,
        reference,
        prebuilt,
    } = *p;
    let case = item.case();
    let profile = &opts.profile;
    let observation = match observation {
        Ok(o) => o,
        Err(e) if matches!(e.kind, atomcts_adapters::AdapterErrorKind::Unsupported(_)) => {
            r.status = Status::Skip;
            r.findings.push(FindingOut {
                location: "adapter".into(),
                expected: String::new(),
                observed: String::new(),
                note: e.to_string(),
            });
            return r;
        }
        Err(e) => {
            if let atomcts_adapters::AdapterErrorKind::NotApplicable(why) = e.kind {
                return not_applicable(r, "adapter", why);
            }
            let mut r = error_result(item, opts, e.to_string());
            r.program = adapter.last_program();
            return r;
        }
    };
    let lanes_are_lanes = case.dialect != Dialect::Visa;
    // A generated case on the generator's route (issue 9) whose observed final state is bit for
    // bit the reference's own passes: its expectation was made from that very outcome, and the
    // judge allows the reference's own serialization. Both are pinned on generated cases under
    // every named profile by `generated_expectations_pass_the_references_own_state`; corpus
    // cases are always checked and judged in full.
    let exact = prebuilt
        && matches!((&reference.outcome, &observation),
            (Outcome::Completed(c), Observation::Completed(seen)) if *seen == c.state);
    let mut findings = if exact {
        Vec::new()
    } else {
        match expectation_now(&mut expectation, item, &state, opts) {
            Ok(e) => {
                let mut f = verify::check(e, &state, &observation, lanes_are_lanes);
                if adapter.locates_rejections() {
                    f.extend(verify::unlocated_rejection(e, &observation));
                }
                f
            }
            Err(r) => return *r,
        }
    };
    let mut undecided = None;
    // Cross-check with the reference: the observation must be reachable by some allowed order.
    match (&reference.outcome, &observation, &reference.lowered) {
        _ if exact => {}
        (Outcome::Completed(c), Observation::Completed(seen), Some(lowered)) => {
            findings.extend(verify::state_shape(&c.state, seen));
            match judge(lowered, &state, c, seen, opts.race_budget) {
                Ok(Judgement::Pass) => {}
                Ok(Judgement::Fail(ms)) => findings.extend(ms.into_iter().map(|m| {
                    Finding {
                        location: m.loc.to_string(),
                        expected: m
                            .expected
                            .map_or("(see note)".into(), |v| format!("{v:#x}")),
                        observed: m.observed.map_or("-".into(), |v| format!("{v:#x}")),
                        note: format!("reference model: {}", m.why),
                    }
                })),
                Ok(Judgement::Undecided(why)) => undecided = Some(why),
                Err(e) => return error_result(item, opts, format!("reference model: {e}")),
            }
        }
        // The expectation's own `fault_lanes` finding, if any, says it already.
        (Outcome::Fault(f), Observation::Fault(seen), _)
            if !findings.iter().any(|x| x.location == "fault_lanes") =>
        {
            findings.extend(verify::fault_against_reference(&f.lanes, seen));
        }
        (Outcome::Unspecified(_), _, _) => {}
        // An assembler's acceptance of an instruction the model runs (to completion or to a
        // fault): the same verdict on the form, nothing executed to compare.
        (Outcome::Completed(_) | Outcome::Fault(_), Observation::Accepted { .. }, _) => {}
        (o, seen, _) if o.kind() != seen.kind() => findings.push(Finding {
            location: "outcome".into(),
            expected: format!("reference: {}", o.kind()),
            observed: seen.kind().into(),
            note: "the reference model disagrees about the kind of outcome".into(),
        }),
        _ => {}
    }
    if let Some(knob) = &case.probe {
        let mut matched = Vec::new();
        for (option, entries, at) in &case.expect_if {
            if let Ok(e) = build_expectation(case, &state, entries, at)
                && verify::check(&e, &state, &observation, lanes_are_lanes).is_empty()
            {
                matched.push(option.clone());
            }
        }
        r.probe = Some(ProbeResult {
            knob: knob.clone(),
            matched,
            picked: profile.get(knob).unwrap_or("?").into(),
        });
    }
    let mut r = verdict(r, findings, undecided, adapter);
    if let (Observation::Accepted { lowered, .. }, crate::run::results::Status::Pass) =
        (&observation, r.status)
    {
        r.findings.push(FindingOut {
            location: "values".into(),
            expected: String::new(),
            observed: String::new(),
            note: format!("{ASSEMBLER_ONLY}; accepted: {lowered}"),
        });
    }
    r
}

/// Why the values (or the fault) of a case an assembler accepted are not judged: it executes
/// nothing ([`Observation::Accepted`]); its acceptance is what passed.
pub const ASSEMBLER_ONLY: &str = "not applicable: assembler only: no execution";
