//! `atomcts fuzz` (issue 9): differential fuzzing of an implementation nobody here wrote. An
//! endless (or `--cases N` / `--time S`) stream of edge-biased generated cases under one
//! profile, each judged against the reference model (or, with `--against`, compared with a
//! second adapter, both judged against the reference). Every new kind of failure is shrunk to
//! a minimal case (fewer lanes or channels, fewer state entries, simpler operands, smallest
//! values that still fail the same way) and written as a corpus case with the command that
//! reproduces it; the run ends with a summary of the distinct failure signatures.
//!
//! Every generated case ends in exactly one count of the [`Summary`] (issue 27, H5): judged
//! (on every adapter), an error (an adapter error on either side: never "equal" to the other
//! side), undecided, skipped or not applicable; cases still in flight when the time limit comes
//! are dropped and counted apart. A campaign that judged nothing, or in which a case ended in
//! an error, exits 2, as `atomcts run` does ([`Summary::exit_code`]). The time limit bounds the
//! whole campaign, shrinking included: it is checked before every adapter call (H8).

mod finding;
mod shrink;

pub use finding::{reproduce, where_pins};
pub use shrink::{SHRINK_BUDGET, ShrinkCut, shrink_note};

use crate::corpus::case::Case;
use crate::fuzzing::generate::{GenCase, expect_table, gen_case};
use crate::report::finding_line;
use crate::run::{CaseResult, Options, Status, run_case};
use atomcts_adapters::Adapter;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Exit status of a campaign that judged cases and found nothing wrong.
pub const EXIT_CONFORMS: u8 = 0;
/// Exit status of a campaign with a failing or undecided case (a finding).
pub const EXIT_NONCONFORMANCE: u8 = 1;
/// Exit status of a campaign that checked nothing, or in which a case ended in an error (an
/// adapter error on either side, a generated case the reference cannot run, a finding that
/// cannot be written).
pub const EXIT_ERROR: u8 = 2;

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
}

/// Why a campaign ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `--cases N` cases were generated.
    Cases,
    /// The time limit came.
    Time,
    /// A stop request ([`FuzzOptions::stop`]).
    Requested,
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
            Stop::Unavailable(why) => write!(
                f,
                "an adapter is unavailable, nothing more can be checked: {}",
                crate::report::safe(why)
            ),
        }
    }
}

/// One distinct kind of failure.
#[derive(Clone, Debug)]
pub struct Signature {
    /// `dialect op status location-kind` (see [`signature`]); with `--against`, both sides.
    pub key: String,
    /// Cases that failed this way.
    pub count: u64,
    /// The first one: its number in the stream.
    pub first: u64,
    /// The shrunk case's file.
    pub file: Option<PathBuf>,
    /// The command that reruns the shrunk case on every adapter (see [`reproduce`]).
    pub reproduce: Option<String>,
    /// The shrunk case's instruction and what each side gave, for the summary.
    pub example: String,
    /// Candidate cases the shrink ran.
    pub shrink_runs: u32,
    /// Why the shrink stopped early, if it did (the case is then the smallest found so far).
    pub shrink_cut: Option<ShrinkCut>,
}

/// A fuzzing run's totals. Every case counted in `cases` is in exactly one of `judged`,
/// `errors`, `undecided`, `skipped` and `not_applicable`.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Adapters compared (1, or 2 with `--against`).
    pub sides: usize,
    /// Cases run to a verdict.
    pub cases: u64,
    /// Cases judged: passed or failed on every adapter.
    pub judged: u64,
    /// Judged cases that fail (against the reference, or judged differently by the two
    /// adapters with `--against`).
    pub failing: u64,
    /// Cases that ended in an error: an adapter error on any side, or a generated case the
    /// reference cannot run.
    pub errors: u64,
    /// Of `errors`, those of each adapter (A, then B).
    pub errors_by_side: [u64; 2],
    /// Cases the race checker could not decide on some side (never a pass).
    pub undecided: u64,
    /// Cases some adapter lacks a capability for or answered `unsupported` to.
    pub skipped: u64,
    /// Cases that do not apply to some adapter.
    pub not_applicable: u64,
    /// Cases generated and sent but still in flight (or not yet run on the second adapter)
    /// when the time limit came: not run to a verdict, not in `cases`.
    pub dropped: u64,
    /// Distinct signatures (failures, errors, undecided cases), in the order found.
    pub signatures: Vec<Signature>,
    /// Problems of the fuzzer itself (a generated case the reference cannot run, a file that
    /// cannot be written).
    pub problems: Vec<String>,
    /// Why it ended.
    pub stop: Option<Stop>,
    /// Time spent.
    pub elapsed: Duration,
}

impl Summary {
    /// Whether the campaign judged no case (a gate never passes on nothing).
    pub fn checked_nothing(&self) -> bool {
        self.judged == 0
    }

    /// [`EXIT_ERROR`] when a case ended in an error, the fuzzer had a problem, or nothing was
    /// judged; else [`EXIT_NONCONFORMANCE`] when a case failed or was undecided; else
    /// [`EXIT_CONFORMS`] (the rule of `atomcts run`, README "Guarantees").
    pub fn exit_code(&self) -> u8 {
        if self.errors > 0 || !self.problems.is_empty() || self.checked_nothing() {
            EXIT_ERROR
        } else if self.failing > 0 || self.undecided > 0 {
            EXIT_NONCONFORMANCE
        } else {
            EXIT_CONFORMS
        }
    }
}

/// The campaign's limit: its deadline and the stop request, asked before every adapter call.
#[derive(Clone, Debug, Default)]
struct Limit {
    deadline: Option<Instant>,
    stop: Option<Arc<AtomicBool>>,
}

impl Limit {
    /// Why the campaign must stop now, if it must.
    fn hit(&self) -> Option<Stop> {
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

    fn reached(&self) -> bool {
        self.hit().is_some()
    }
}

/// How one case is counted: exactly one of these. With two adapters the case takes the
/// greater of its two (an error on either side makes the case an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tally {
    Judged,
    NotApplicable,
    Skipped,
    Undecided,
    Error,
}

impl Tally {
    fn of(s: Status) -> Tally {
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
fn location_kind(loc: &str) -> String {
    let k: String = loc
        .chars()
        .take_while(|c| c.is_ascii_alphabetic() || *c == '_')
        .collect();
    if k.is_empty() { "?".into() } else { k }
}

/// The kinds of adapter error (`AdapterErrorKind`'s messages) a signature tells apart.
const ERROR_KINDS: [(&str, &str); 5] = [
    ("unavailable: ", "unavailable"),
    ("timed out after ", "timed out"),
    ("crashed: ", "crashed"),
    ("protocol error: ", "protocol error"),
    ("model error: ", "model error"),
];

/// The kind of an error result: the adapter error's kind (`timed out`, `crashed`, ...), the
/// earliest after `adapter <name>: `; `case` for any other error (the reference model's).
fn error_kind(r: &CaseResult) -> &'static str {
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
fn side_word(r: &CaseResult) -> String {
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
fn side_example(r: &CaseResult) -> String {
    r.findings
        .first()
        .map_or_else(|| side_word(r), |f| finding_line(f, " "))
}

/// The verdict on one case: how it counts, its signature when it is a finding (a failure, an
/// error or an undecided case; with two adapters, whenever they are judged differently or
/// either errs), and the results (A's, then B's).
struct Verdict {
    tally: Tally,
    signature: Option<String>,
    results: Vec<CaseResult>,
    /// The side whose adapter is unavailable (its circuit breaker tripped, or it cannot
    /// start): nothing more can run there, and the error says nothing about the case.
    unavailable: Option<usize>,
}

/// What the differential compares of a judged result: its status and the observed value at
/// each location that differs from the reference.
fn judged_key(r: &CaseResult) -> (Status, Vec<(&str, &str)>) {
    let mut v: Vec<(&str, &str)> = r
        .findings
        .iter()
        .map(|f| (f.location.as_str(), f.observed.as_str()))
        .collect();
    v.sort();
    (r.status, v)
}

/// The verdict on the results of one case on every adapter.
fn verdict(results: Vec<CaseResult>) -> Verdict {
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
fn case_of(gc: &GenCase, id: &str, opts: &Options) -> Result<Case, String> {
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
fn judge_case(
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
fn run_side(cases: &[Case], a: &mut dyn Adapter, opts: &Options, limit: &Limit) -> Vec<CaseResult> {
    let refs: Vec<&Case> = cases.iter().collect();
    let mut out = Vec::with_capacity(cases.len());
    crate::run::run_cases_until(&refs, a, opts, &|| limit.reached(), &mut |_, r| out.push(r));
    out
}

/// Fuzzes `a` (against `b` if given) under `run_opts`; `progress` is called after every case
/// with the totals so far.
pub fn fuzz(
    a: &mut dyn Adapter,
    b: Option<&mut dyn Adapter>,
    run_opts: &Options,
    opts: &FuzzOptions,
    progress: &mut dyn FnMut(&Summary),
) -> Summary {
    let t0 = Instant::now();
    let limit = Limit {
        deadline: opts.time.and_then(|t| t0.checked_add(t)),
        stop: opts.stop.clone(),
    };
    let mut adapters: Vec<&mut dyn Adapter> = vec![&mut *a];
    if let Some(b) = b {
        adapters.push(&mut *b);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut s = Summary {
        sides: adapters.len(),
        ..Summary::default()
    };
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut generated = 0u64;
    // Cases go to the adapters 4 windows at a time (pipelined shims keep their window full
    // through a batch); findings are shrunk one case at a time.
    let window = adapters
        .iter()
        .map(|x| x.window().max(1))
        .max()
        .unwrap_or(1);
    let batch = 4 * window as u64;
    while s.stop.is_none() {
        if let Some(why) = limit.hit() {
            s.stop = Some(why);
            break;
        }
        if opts.cases.is_some_and(|n| generated >= n) {
            s.stop = Some(Stop::Cases);
            break;
        }
        let n = opts.cases.map_or(batch, |c| batch.min(c - generated));
        let mut meta = Vec::new();
        let mut cases = Vec::new();
        for _ in 0..n {
            let k = generated;
            generated += 1;
            let gc = gen_case(&mut rng);
            let id = format!("fuzz/seed{}::case_{k}", opts.seed);
            match case_of(&gc, &id, run_opts) {
                Ok(c) => {
                    cases.push(c);
                    meta.push((k, gc, id));
                }
                Err(e) => {
                    s.cases += 1;
                    s.errors += 1;
                    s.problems.push(format!("case {k} ({}): {e}", gc.asm));
                }
            }
        }
        // Each adapter runs the cases the one before it finished before the limit.
        let mut results = Vec::with_capacity(adapters.len());
        let mut done = cases.len();
        for x in adapters.iter_mut() {
            let r = run_side(&cases[..done], &mut **x, run_opts, &limit);
            done = r.len();
            results.push(r.into_iter());
        }
        s.dropped += (cases.len() - done) as u64;
        for (k, gc, id) in meta.into_iter().take(done) {
            let rs: Vec<CaseResult> = results.iter_mut().filter_map(Iterator::next).collect();
            let v = verdict(rs);
            let case = Found {
                k,
                gc: &gc,
                id: &id,
            };
            record(
                &mut s,
                &mut by_key,
                v,
                case,
                &mut adapters,
                run_opts,
                opts,
                &limit,
            );
            s.elapsed = t0.elapsed();
            progress(&s);
        }
    }
    s.elapsed = t0.elapsed();
    s
}

/// A case of the stream: its number, generated form and id.
struct Found<'a> {
    k: u64,
    gc: &'a GenCase,
    id: &'a str,
}

/// Counts one verdict; the first case of a new signature is shrunk and written.
#[allow(clippy::too_many_arguments)]
fn record(
    s: &mut Summary,
    by_key: &mut BTreeMap<String, usize>,
    v: Verdict,
    case: Found<'_>,
    adapters: &mut [&mut dyn Adapter],
    run_opts: &Options,
    opts: &FuzzOptions,
    limit: &Limit,
) {
    s.cases += 1;
    match v.tally {
        Tally::Judged => {
            s.judged += 1;
            s.failing += u64::from(v.signature.is_some());
        }
        Tally::Error => {
            s.errors += 1;
            for (side, r) in v.results.iter().enumerate().take(2) {
                s.errors_by_side[side] += u64::from(r.status == Status::Error);
            }
        }
        Tally::Undecided => s.undecided += 1,
        Tally::Skipped => s.skipped += 1,
        Tally::NotApplicable => s.not_applicable += 1,
    }
    if let Some(side) = v.unavailable {
        let why = v.results[side]
            .findings
            .first()
            .map_or_else(String::new, |f| f.note.clone());
        s.stop.get_or_insert(Stop::Unavailable(why));
    }
    let Some(key) = v.signature.clone() else {
        return;
    };
    if let Some(&i) = by_key.get(&key) {
        s.signatures[i].count += 1;
        return;
    }
    let small = shrink::shrink(case.gc, v, &key, case.id, adapters, run_opts, limit);
    let mut example = small.case.asm.clone();
    let results = &small.verdict.results;
    let _ = match results.as_slice() {
        [r] => write!(example, "  [{}]", side_example(r)),
        rs => write!(
            example,
            "  [{}]",
            rs.iter()
                .zip(["A", "B"])
                .map(|(r, side)| format!("{side}: {}", side_example(r)))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    };
    let (file, reproduce) = match finding::write_finding(&small, &key, case.k, opts, run_opts) {
        Ok(p) => {
            let line = reproduce(&p, opts);
            (Some(p), Some(line))
        }
        Err(e) => {
            s.problems.push(e);
            (None, None)
        }
    };
    by_key.insert(key.clone(), s.signatures.len());
    s.signatures.push(Signature {
        key,
        count: 1,
        first: case.k,
        file,
        reproduce,
        example,
        shrink_runs: small.runs,
        shrink_cut: small.cut,
    });
}

/// The summary for people.
pub fn summary_text(s: &Summary) -> String {
    let mut out = String::new();
    let rate = s.cases as f64 / s.elapsed.as_secs_f64().max(1e-9);
    let by_side = if s.sides > 1 {
        format!(" (A {}, B {})", s.errors_by_side[0], s.errors_by_side[1])
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "\n{} cases in {:.1} s ({rate:.0}/s): {} judged, {} error(s){by_side}, {} undecided, {} skipped, {} not applicable, {} failing, {} distinct signature(s)",
        s.cases,
        s.elapsed.as_secs_f64(),
        s.judged,
        s.errors,
        s.undecided,
        s.skipped,
        s.not_applicable,
        s.failing,
        s.signatures.len()
    );
    if let Some(stop) = &s.stop {
        let _ = writeln!(out, "stopped: {stop}");
    }
    if s.dropped > 0 {
        let _ = writeln!(
            out,
            "{} generated case(s) not run to a verdict before the limit: not counted",
            s.dropped
        );
    }
    for sig in &s.signatures {
        let _ = writeln!(
            out,
            "  {} x{} (first: case {}, {})",
            crate::report::safe(&sig.key),
            sig.count,
            sig.first,
            shrink_note(sig.shrink_runs, sig.shrink_cut)
        );
        let _ = writeln!(out, "    {}", crate::report::safe(&sig.example));
        if let Some(f) = &sig.file {
            let _ = writeln!(out, "    written to {}", f.display());
        }
        if let Some(r) = &sig.reproduce {
            let _ = writeln!(out, "    reproduce: {}", crate::report::safe(r));
        }
    }
    for e in &s.problems {
        let _ = writeln!(out, "error: {}", crate::report::safe(e));
    }
    if s.errors > 0 {
        let _ = writeln!(
            out,
            "error: {} case(s) ended in an error (an adapter error is an error of its case, never a pass and never equal to the other side's)",
            s.errors
        );
    }
    if s.checked_nothing() {
        let _ = writeln!(
            out,
            "error: no case was judged ({} cases: errors, undecided, skipped or not applicable): a campaign that checks nothing never passes",
            s.cases
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::FindingOut;

    #[test]
    fn signatures_drop_addresses_and_lanes() {
        assert_eq!(location_kind("global[0x1000]"), "global");
        assert_eq!(location_kind("R0[3]"), "R");
        assert_eq!(location_kind("outcome"), "outcome");
    }

    fn result(status: Status, location: &str, note: &str) -> CaseResult {
        CaseResult {
            id: "fuzz/seed1::case_0".into(),
            dialect: "sass".into(),
            op: "ATOM.ADD".into(),
            asm: String::new(),
            at: String::new(),
            cite: String::new(),
            status,
            findings: vec![FindingOut {
                location: location.into(),
                expected: String::new(),
                observed: String::new(),
                note: note.into(),
            }],
            probe: None,
            knob: None,
            repro: String::new(),
            program: None,
            runs: None,
            flaky: false,
        }
    }

    #[test]
    fn errors_on_both_sides_are_errors_never_equal() {
        let crash = || result(Status::Error, "case", "adapter cmd:x: crashed: exit 1");
        let v = verdict(vec![crash(), crash()]);
        assert_eq!(v.tally, Tally::Error);
        assert_eq!(
            v.signature.as_deref(),
            Some("sass ATOM.ADD: A sass ATOM.ADD error crashed / B sass ATOM.ADD error crashed")
        );
        // An error beside a skip is still an error.
        let v = verdict(vec![result(Status::Skip, "adapter", "no"), crash()]);
        assert_eq!(v.tally, Tally::Error);
        assert!(v.signature.is_some());
    }

    #[test]
    fn error_kinds_come_after_the_adapter_name() {
        let kind = |note: &str| error_kind(&result(Status::Error, "case", note));
        assert_eq!(kind("adapter cmd:a b: timed out after 10 ms"), "timed out");
        assert_eq!(
            kind("adapter cmd:c: crashed: in flight when the shim failed (timed out after 5 ms)"),
            "crashed"
        );
        assert_eq!(
            kind("adapter cmd:c: unavailable: not restarted (circuit breaker)"),
            "unavailable"
        );
        assert_eq!(kind("reference model: bad"), "case");
    }

    #[test]
    fn an_unavailable_adapter_is_no_finding() {
        let v = verdict(vec![result(
            Status::Error,
            "case",
            "adapter cmd:c: unavailable: not restarted after 5 consecutive failures",
        )]);
        assert_eq!((v.tally, v.unavailable), (Tally::Error, Some(0)));
        assert!(v.signature.is_none());
    }

    #[test]
    fn nothing_judged_exits_2_and_errors_outrank_failures() {
        let mut s = Summary::default();
        assert_eq!(s.exit_code(), EXIT_ERROR);
        s.judged = 3;
        assert_eq!(s.exit_code(), EXIT_CONFORMS);
        s.undecided = 1;
        assert_eq!(s.exit_code(), EXIT_NONCONFORMANCE);
        s.errors = 1;
        assert_eq!(s.exit_code(), EXIT_ERROR);
    }
}
