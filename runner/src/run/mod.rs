//! Runs cases against an adapter and classifies each: pass, fail, undecided, error, skip or
//! not applicable; cross-checks every observation with the reference model (race checker
//! included).
//!
//! The run layer: imports only from `corpus` below it (`runner/tests/layers.rs`).

pub mod concurrent;
pub mod interrupt;
pub mod results;

use crate::corpus::build::{build_expectation, build_state};
use crate::corpus::case::Case;
use crate::corpus::expectation::Expectation;
use crate::corpus::verify::{self, Finding};
use crate::run::results::{CaseResult, FindingOut, Options, ProbeResult, Runs, Status, verdict};
use atomcts_adapters::{Adapter, Level, Observation, Request};
use atomcts_reference::Reason;
use atomcts_reference::check::{Judgement, judge};
use atomcts_reference::outcome::Outcome;
use atomcts_reference::program::{self, Dialect};
use std::borrow::Cow;

/// Runs a case `times` times (at least once) and reports the first failing run (else the
/// last) with how many runs failed. Stops early on an error, a skip or a not-applicable
/// answer, which repeating does not change.
pub fn run_case_repeated(
    case: &Case,
    adapter: &mut dyn Adapter,
    opts: &Options,
    times: u32,
) -> CaseResult {
    let mut first_failure: Option<CaseResult> = None;
    let mut last = None;
    let mut failed = 0;
    let mut made = 0;
    for i in 0..times.max(1) {
        if i > 0 && stopped() {
            break;
        }
        let r = run_case(case, adapter, opts);
        made += 1;
        if r.status.is_failure() {
            failed += 1;
            if first_failure.is_none() {
                first_failure = Some(r.clone());
            }
        } else if !matches!(r.status, Status::Pass) {
            last = Some(r);
            break;
        }
        last = Some(r);
    }
    let mut out = match (first_failure, last) {
        (_, Some(l))
            if matches!(
                l.status,
                Status::Error | Status::Skip | Status::NotApplicable
            ) =>
        {
            l
        }
        (Some(f), _) => f,
        (None, Some(l)) => l,
        (None, None) => run_case(case, adapter, opts),
    };
    if times > 1 {
        out.runs = Some(Runs { runs: made, failed });
    }
    out
}

/// A short op label from the instruction text.
pub fn op_label(dialect: Dialect, asm: &str) -> String {
    let asm = asm.trim();
    match dialect {
        Dialect::Sass => {
            let body = asm
                .split_whitespace()
                .find(|t| t.starts_with("ATOM"))
                .unwrap_or("ATOM");
            match body.split('.').filter(|p| *p != "E").nth(1) {
                Some(op) => format!("ATOM.{op}"),
                None => "ATOM".into(),
            }
        }
        Dialect::Visa => {
            let body = asm
                .split_whitespace()
                .find(|t| t.contains("DWORD_ATOMIC") || t.contains("SVM_"))
                .unwrap_or("?");
            match body.split_once('.') {
                Some(("DWORD_ATOMIC", rest)) => {
                    let op = rest.split('.').next().unwrap_or("").to_lowercase();
                    let w16 = if rest.contains(".16") { ".16" } else { "" };
                    format!("DWORD_ATOMIC.{op}{w16}")
                }
                Some((m, _)) => m.to_string(),
                None => body.to_string(),
            }
        }
        Dialect::Msl => {
            let call = asm.split_once('=').map_or(asm, |(_, r)| r).trim();
            call.split('(').next().unwrap_or("?").trim().to_string()
        }
    }
}

/// The op label of a case: `concurrent:` and the labels of its instructions for a concurrent
/// case, else [`op_label`] of its instruction.
pub fn case_label(case: &Case) -> String {
    if case.is_concurrent() {
        let ops: Vec<String> = case
            .concurrent
            .iter()
            .map(|i| op_label(case.dialect, &i.asm))
            .collect();
        format!("concurrent:{}", ops.join("+"))
    } else {
        op_label(case.dialect, &case.asm)
    }
}

fn error_result(case: &Case, opts: &Options, message: String) -> CaseResult {
    let mut r = base_result(case, opts);
    r.status = Status::Error;
    r.findings.push(FindingOut {
        location: "case".into(),
        expected: String::new(),
        observed: String::new(),
        note: message,
    });
    r
}

/// A case's result record without the fields only a kept or written result needs (its
/// instruction, position, citation and reproduce line: see [`complete`]); `id`, `dialect` and
/// `op` are there, which a counted result needs (issue 9).
fn base_result(case: &Case, _opts: &Options) -> CaseResult {
    CaseResult {
        id: case.id.clone(),
        dialect: case.dialect.name().into(),
        op: case_label(case),
        asm: String::new(),
        at: String::new(),
        cite: String::new(),
        status: Status::Pass,
        findings: vec![],
        probe: None,
        knob: case.probe.clone(),
        repro: String::new(),
        program: None,
        runs: None,
        flaky: false,
    }
}

/// Fills in the fields of `case`'s result that [`run_cases_lean`] leaves empty: the
/// instruction, the position, the citation and the reproduce line (a no-op on a complete one).
pub fn complete(r: &mut CaseResult, case: &Case, opts: &Options) {
    if r.repro.is_empty() {
        r.asm = case.asm.clone();
        r.at = case.pos.to_string();
        r.cite = case.cite.clone();
        r.repro = repro_line(case, opts);
    }
}

fn not_applicable(mut r: CaseResult, location: &str, why: String) -> CaseResult {
    r.status = Status::NotApplicable;
    r.findings.push(FindingOut {
        location: location.into(),
        expected: String::new(),
        observed: String::new(),
        note: why,
    });
    r
}

/// Why a case does not apply to a semantic-level implementation, from its expectation alone:
/// an illegal form (it runs valid instructions only) or a fault (its API cannot observe one).
pub fn semantic_not_applicable(expectation: &Expectation) -> Option<String> {
    match expectation {
        Expectation::Invalid { reason, .. } => Some(format!(
            "expects an illegal form ({reason}); a semantic-level implementation runs the lowered IR of valid instructions only"
        )),
        Expectation::Fault { class, .. } => Some(format!(
            "expects a fault ({}); a semantic-level implementation's API cannot observe faults",
            class.name()
        )),
        Expectation::Values(_) | Expectation::Unspecified => None,
    }
}

/// Whether every character of `s` is safe in a shell word unquoted.
fn shell_safe(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./:=+@%,-".contains(c))
}

/// A string as one shell word: as is when it holds only safe characters, else single-quoted.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && shell_safe(s) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The command that reruns exactly this case with the same settings (issue 7, D15): the
/// source (`--cases <path>`, or the generator's seed and count for a generated case), the
/// exact id, the profile, and `opts.adapter_arg` (the adapter, knob overrides, timeout and race
/// budget, already quoted), every word shell-quoted.
pub fn repro_line(case: &Case, opts: &Options) -> String {
    let generated = case
        .id
        .split_once("::gen_")
        .filter(|(file, _)| file.starts_with("generated/seed"))
        .and_then(|(_, rest)| rest.split_once('_'))
        .and_then(|(seed, k)| Some((seed.parse::<u64>().ok()?, k.parse::<u64>().ok()?)));
    // One string written in place (issue 9: this runs for every case).
    use std::fmt::Write as _;
    let mut s = String::with_capacity(160 + opts.adapter_arg.len());
    s.push_str("atomcts run ");
    let _ = match generated {
        Some((seed, k)) => write!(s, "--generated-only --generated {} --seed {seed}", k + 1),
        None => write!(s, "--cases {}", shell_quote(&opts.cases_arg)),
    };
    s.push_str(" --filter ");
    if shell_safe(&case.id) {
        s.push_str("id:");
        s.push_str(&case.id);
    } else {
        s.push_str(&shell_quote(&format!("id:{}", case.id)));
    }
    let profile = opts.profile.name.split('+').next().unwrap_or("default");
    s.push_str(" --profile ");
    s.push_str(&shell_quote(profile));
    s.push_str(&opts.adapter_arg);
    s
}

/// Runs one case.
pub fn run_case(case: &Case, adapter: &mut dyn Adapter, opts: &Options) -> CaseResult {
    let mut r = run_case_lean(case, adapter, opts);
    complete(&mut r, case, opts);
    r
}

/// [`run_case`] without [`complete`].
fn run_case_lean(case: &Case, adapter: &mut dyn Adapter, opts: &Options) -> CaseResult {
    match prepare(case, &*adapter, opts) {
        Step::Done(r) => *r,
        Step::Concurrent(case, r) => crate::run::concurrent::run_case(case, adapter, opts, *r),
        Step::Ready(p) => {
            let observation = adapter.run(&p.request(opts));
            finish(p, observation, &*adapter, opts)
        }
    }
}

/// A case with everything decided before the adapter runs it: its state, expectation and
/// the reference's answer (issue 9: several of these can be in flight through a pipelined
/// adapter, see [`Adapter::run_batch`]).
pub struct Prepared<'c> {
    case: &'c Case,
    r: CaseResult,
    state: Cow<'c, atomcts_reference::state::State>,
    /// `None` on the generator's route until it is needed ([`expectation_now`]).
    expectation: Option<Cow<'c, Expectation>>,
    reference: Cow<'c, program::Run>,
    /// A generated case on the generator's own route: its state, expectation and reference
    /// run are the generator's, made under this profile (issue 9).
    prebuilt: bool,
}

impl Prepared<'_> {
    /// The request to send.
    pub fn request<'a>(&'a self, opts: &'a Options) -> Request<'a> {
        Request {
            id: &self.case.id,
            dialect: self.case.dialect,
            asm: &self.case.asm,
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

/// Everything of [`run_case`] before the adapter runs.
pub fn prepare<'c>(case: &'c Case, adapter: &dyn Adapter, opts: &Options) -> Step<'c> {
    let done = |r: CaseResult| Step::Done(Box::new(r));
    let mut r = base_result(case, opts);
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
    let (state, mut expectation, reference) = match case
        .generated
        .as_deref()
        .filter(|g| g.profile() == profile && case.probe.is_none())
    {
        Some(g) => (
            Cow::Borrowed(g.state()),
            None,
            Some(Cow::Borrowed(g.reference())),
        ),
        None => {
            let state = match build_state(case) {
                Ok(s) => s,
                Err(e) => return done(error_result(case, opts, e.to_string())),
            };
            // The expectation for this profile.
            let expect = case.expect_entries();
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
                (None, None) => return done(error_result(case, opts, "no expectation".into())),
            };
            let expectation = match build_expectation(case, &state, entries, at) {
                Ok(e) => e,
                Err(e) => return done(error_result(case, opts, e.to_string())),
            };
            (Cow::Owned(state), Some(Cow::Owned(expectation)), None)
        }
    };
    let prebuilt = reference.is_some();
    if adapter.level() == Level::Semantic {
        let e = match expectation_now(&mut expectation, case, &state, opts) {
            Ok(e) => e,
            Err(r) => return Step::Done(r),
        };
        if let Some(why) = semantic_not_applicable(e) {
            return done(not_applicable(r, "level", why));
        }
    }
    // The reference's answer (for input errors and the race-aware cross-check).
    let reference = match reference {
        Some(run) => run,
        None => match program::run(case.dialect, &case.asm, &state, profile) {
            Ok(run) => Cow::Owned(run),
            Err(e) => return done(error_result(case, opts, format!("reference model: {e}"))),
        },
    };
    if let Outcome::Invalid(rej) = &reference.outcome {
        let unparsable = matches!(rej.reason, Reason::Syntax | Reason::UnknownOperation);
        let expects_invalid = unparsable
            && match expectation_now(&mut expectation, case, &state, opts) {
                Ok(e) => matches!(e, Expectation::Invalid { .. }),
                Err(r) => return Step::Done(r),
            };
        if unparsable && !expects_invalid {
            let col = case.asm_pos.col + 1 + rej.column.unwrap_or(0);
            return done(error_result(
                case,
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
        let e = match expectation_now(&mut expectation, case, &state, opts) {
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
            Err(e) => return done(error_result(case, opts, format!("{pos}: {e}"))),
        }
    }
    Step::Ready(Box::new(Prepared {
        case,
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
fn expectation_now<'e, 'c: 'e>(
    expectation: &'e mut Option<Cow<'c, Expectation>>,
    case: &'c Case,
    state: &atomcts_reference::state::State,
    opts: &Options,
) -> Result<&'e Expectation, Box<CaseResult>> {
    if expectation.is_none() {
        let Some(e) = case.generated_expectation() else {
            let why = match case.expect_entries() {
                Some(t) => match build_expectation(case, state, &t.0, &t.1) {
                    Err(e) => e.to_string(),
                    Ok(_) => "the generated case's expectation could not be built".into(),
                },
                None => "no expectation".into(),
            };
            return Err(Box::new(error_result(case, opts, why)));
        };
        *expectation = Some(Cow::Borrowed(e));
    }
    match expectation {
        Some(e) => Ok(e),
        None => Err(Box::new(error_result(case, opts, "no expectation".into()))),
    }
}

/// Everything of [`run_case`] after the adapter ran: judges its answer.
pub fn finish(
    p: Box<Prepared<'_>>,
    observation: Result<Observation, atomcts_adapters::AdapterError>,
    adapter: &dyn Adapter,
    opts: &Options,
) -> CaseResult {
    let Prepared {
        case,
        mut r,
        state,
        mut expectation,
        reference,
        prebuilt,
    } = *p;
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
            let mut r = error_result(case, opts, e.to_string());
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
        match expectation_now(&mut expectation, case, &state, opts) {
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
                Err(e) => return error_result(case, opts, format!("reference model: {e}")),
            }
        }
        // The expectation's own `fault_lanes` finding, if any, says it already.
        (Outcome::Fault(f), Observation::Fault(seen), _)
            if !findings.iter().any(|x| x.location == "fault_lanes") =>
        {
            findings.extend(verify::fault_against_reference(&f.lanes, seen));
        }
        (Outcome::Unspecified(_), _, _) => {}
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
    verdict(r, findings, undecided, adapter)
}

/// The findings of a case's stated vISA byte fields (`encoding`): `Ok(None)` when they agree
/// with the text both ways and the text is to be run; `Ok(Some(findings))` when the case is
/// decided here (the decoder rejects the bytes, or they disagree with the text); `Err` when the
/// text itself is rejected.
fn encoding_findings(
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

/// Whether a stop was requested (SIGINT or SIGTERM, [`crate::run::interrupt`]): a run takes no
/// further case, and a result that comes after the request is not given (the stop may have
/// cut it short), so those cases count as not run.
pub fn stopped() -> bool {
    atomcts_adapters::interrupt::requested().is_some()
}

/// Runs `cases` in order, giving each result to `out` as soon as it and every earlier one
/// are known; through a pipelined adapter ([`Adapter::window`] > 1), up to a window of them
/// are in flight at once. Stops, giving no further result, when [`stopped`].
pub fn run_cases(
    cases: &[&Case],
    adapter: &mut dyn Adapter,
    opts: &Options,
    out: &mut dyn FnMut(CaseResult),
) {
    run_cases_lean(cases, adapter, opts, &mut |c, mut r| {
        complete(&mut r, c, opts);
        out(r)
    });
}

/// [`run_cases`], giving each result with its case and without the fields [`complete`] fills
/// in (issue 9: a run that only counts a result does not make them).
pub fn run_cases_lean(
    cases: &[&Case],
    adapter: &mut dyn Adapter,
    opts: &Options,
    out: &mut dyn FnMut(&Case, CaseResult),
) {
    run_cases_until(cases, adapter, opts, &|| false, out);
}

/// [`run_cases_lean`] that stops once `stop()` holds (a time limit, an interruption): it is
/// asked before every call that can wait on the adapter (each send, each answer), so a stop
/// costs at most the one call under way (its adapter deadline). The cases after the last
/// result given to `out` are left unrun (those still in flight are abandoned: the adapter is
/// not to be used again for them); the caller accounts for them.
pub fn run_cases_until(
    cases: &[&Case],
    adapter: &mut dyn Adapter,
    opts: &Options,
    stop: &dyn Fn() -> bool,
    out: &mut dyn FnMut(&Case, CaseResult),
) {
    let window = adapter.window().max(1);
    if window == 1 {
        for c in cases {
            if stop() || stopped() {
                return;
            }
            let r = run_case_lean(c, adapter, opts);
            if stopped() {
                return;
            }
            out(c, r);
        }
        return;
    }
    // Streamed (issue 9): requests are sent as cases are prepared and answers taken in order,
    // the window topped up after every answer, so it stays full across all of `cases`. A
    // concurrent case runs alone: nothing after it is sent until it has run.
    let mut queue = std::collections::VecDeque::new();
    let (mut rest, mut in_flight, mut held) = (cases.iter(), 0, false);
    loop {
        if stopped() {
            // What is in flight is dropped with the adapter's process, which the caller stops.
            return;
        }
        while !held && in_flight < adapter.window().max(1) && !stop() {
            let Some(c) = rest.next() else { break };
            let step = prepare(c, &*adapter, opts);
            let early = match &step {
                Step::Ready(p) => adapter.send(&p.request(opts)).err().map(Err),
                Step::Concurrent(..) => {
                    held = true;
                    None
                }
                Step::Done(_) => None,
            };
            in_flight += usize::from(matches!(step, Step::Ready(_)) && early.is_none());
            queue.push_back((*c, step, early));
        }
        if stop() {
            return;
        }
        let Some((c, step, early)) = queue.pop_front() else {
            break;
        };
        let r = match step {
            Step::Done(r) => *r,
            Step::Concurrent(case, r) => {
                held = false;
                crate::run::concurrent::run_case(case, adapter, opts, *r)
            }
            Step::Ready(p) => {
                let answer = early.unwrap_or_else(|| {
                    in_flight -= 1;
                    adapter.receive(&p.request(opts))
                });
                finish(p, answer, &*adapter, opts)
            }
        };
        if stopped() {
            return;
        }
        out(c, r);
    }
}

/// FNV-1a, 64 bits: a stable hash for `--partition hash:K/N` (stable across releases and
/// platforms, unlike `std::hash`).
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether case `id` belongs to shard `k` (1-based) of `n`.
pub fn in_partition(id: &str, k: u64, n: u64) -> bool {
    stable_hash(id) % n == k - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_labels() {
        assert_eq!(
            op_label(Dialect::Sass, "@!P1 ATOM.E.CAS.64 R0, [R2+0x8], R4, R6"),
            "ATOM.CAS"
        );
        assert_eq!(
            op_label(
                Dialect::Visa,
                "(!P1) DWORD_ATOMIC.cmpxchg (M1, 8) T255 V10 V11 V12 V13"
            ),
            "DWORD_ATOMIC.cmpxchg"
        );
        assert_eq!(
            op_label(Dialect::Visa, "DWORD_ATOMIC.INC.16 (16) T0 V10 V0 V0 V13"),
            "DWORD_ATOMIC.inc.16"
        );
        assert_eq!(
            op_label(Dialect::Msl, "r = simd_shuffle_up(x, 2)"),
            "simd_shuffle_up"
        );
    }

    #[test]
    fn partitions_cover_every_id_exactly_once() {
        for i in 0..200 {
            let id = format!("sass/atom/x::case_{i}");
            let shards: Vec<u64> = (1..=4).filter(|k| in_partition(&id, *k, 4)).collect();
            assert_eq!(shards.len(), 1, "{id}");
        }
        assert_eq!(stable_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
