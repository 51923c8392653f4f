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
mod judge;
mod options;
mod shrink;

use judge::{Limit, Tally, Verdict, case_of, run_side, side_example, verdict};

pub use finding::{reproduce, where_pins};
pub use judge::signature;
pub use options::{FuzzOptions, SCREEN_GIVE_UP, SCREEN_REASONS, Stop};
pub use shrink::{SHRINK_BUDGET, ShrinkCut, shrink_note};

use crate::corpus::case::Case;
use crate::exit::{EXIT_ERROR, EXIT_NONCONFORMANCE, EXIT_OK};
use crate::fuzzing::contend::gen_fuzz_case;
use crate::fuzzing::draft::GenCase;
use crate::fuzzing::learn::{LEARN_AFTER, Learned, shape_keys};
use crate::run::results::{CaseResult, Options, Status};
use atomcts_adapters::Adapter;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One distinct kind of failure.
#[derive(Clone, Debug)]
pub struct Signature {
    /// `dialect op status location-kind` (see [`signature`]); with `--against`, both sides.
    pub key: String,
    /// Cases that failed this way.
    pub count: u64,
    /// The first one: its number in the stream.
    pub first: u64,
    /// When the first one was judged, from the start of the campaign (before its shrink).
    pub found_after: Duration,
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
    /// Drawn cases screened out before they were sent: an adapter declared it cannot run
    /// them ([`crate::run::prepare::screen`]); not in `cases`. Each draw is either screened
    /// or one of `cases`, `dropped`.
    pub screened: u64,
    /// Drafts passed over, not made: their shape was screened out [`LEARN_AFTER`] times and
    /// never sent ([`crate::fuzzing::learn`]); neither screened nor in `cases`.
    pub passed_over: u64,
    /// Shapes passed over at the end of the campaign.
    pub passed_over_shapes: usize,
    /// Of `screened`, those sent anyway with `--audit-screen` (each answered not applicable,
    /// else a problem).
    pub audited: u64,
    /// Of `screened`, how many per reason (at most [`SCREEN_REASONS`] reasons, the rest under
    /// one `other reasons` key).
    pub screened_by: BTreeMap<String, u64>,
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
    /// What each adapter that counts them built for its driver and reused
    /// ([`atomcts_adapters::Adapter::builds`]), at the end of the campaign.
    pub builds: Vec<(String, atomcts_adapters::Builds)>,
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
    /// [`EXIT_OK`] (the rule of `atomcts run`, README "Guarantees").
    pub fn exit_code(&self) -> u8 {
        if self.errors > 0 || !self.problems.is_empty() || self.checked_nothing() {
            EXIT_ERROR
        } else if self.failing > 0 || self.undecided > 0 {
            EXIT_NONCONFORMANCE
        } else {
            EXIT_OK
        }
    }
}

impl Summary {
    /// Counts one screened draw under its reason.
    fn screened_out(&mut self, why: String) {
        self.screened += 1;
        // Numbers (counts, addresses, widths) vary from case to case: one key per wording.
        let mut key = String::with_capacity(why.len());
        for c in why.chars() {
            if !c.is_ascii_digit() {
                key.push(c);
            } else if !key.ends_with('#') {
                key.push('#');
            }
        }
        let why = key;
        let key = if self.screened_by.len() < SCREEN_REASONS || self.screened_by.contains_key(&why)
        {
            why
        } else {
            "other reasons".to_string()
        };
        *self.screened_by.entry(key).or_default() += 1;
    }
}

/// Why some adapter would not run `case` ([`crate::run::prepare::screen`] on each).
fn screen_out(case: &Case, adapters: &mut [&mut dyn Adapter], opts: &Options) -> Option<String> {
    adapters
        .iter_mut()
        .find_map(|a| crate::run::prepare::screen(case.into(), &mut **a, opts))
}

/// `--audit-screen`: sends the screened cases of a batch to every adapter; one that is not
/// answered not applicable is a problem (the screen hid a case the adapter runs).
fn audit_screened(
    s: &mut Summary,
    audit: &[(u64, Case, String)],
    adapters: &mut [&mut dyn Adapter],
    opts: &Options,
    limit: &Limit,
) {
    if audit.is_empty() {
        return;
    }
    let cases: Vec<Case> = audit.iter().map(|(_, c, _)| c.clone()).collect();
    for a in adapters.iter_mut() {
        let results = run_side(&cases, &mut **a, opts, limit);
        s.audited += results.len() as u64;
        for ((k, c, why), r) in audit.iter().zip(&results) {
            if r.status != Status::NotApplicable {
                s.problems.push(format!(
                    "case {k} ({}): screened out ({why}), but adapter {} answered {:?}",
                    c.asm,
                    a.name(),
                    r.status
                ));
            }
        }
    }
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
    // Cases drawn (the stream's numbering), and of them those not screened out.
    let mut drawn = 0u64;
    let mut generated = 0u64;
    let mut screened_in_a_row = 0u64;
    let mut learned = Learned::default();
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
        let mut audit = Vec::new();
        let mut taken = 0;
        while taken < n {
            // A case's number is its place in the draw, screened or not, so that the same
            // seed names the same case with or without screening.
            let k = drawn;
            drawn += 1;
            let gc = gen_fuzz_case(&mut rng);
            let shape = (opts.screen && opts.learn).then(|| shape_keys(&gc));
            if let Some(keys) = &shape
                && learned.pass_over(keys)
            {
                s.passed_over += 1;
                continue;
            }
            let id = format!("fuzz/seed{}::case_{k}", opts.seed);
            match case_of(&gc, &id, run_opts) {
                Ok(c) => {
                    let turned_away = if opts.screen {
                        screen_out(&c, &mut adapters, run_opts)
                    } else {
                        None
                    };
                    if let Some(keys) = shape {
                        learned.record(keys, turned_away.is_some());
                    }
                    if let Some(why) = turned_away {
                        screened_in_a_row += 1;
                        if screened_in_a_row >= SCREEN_GIVE_UP {
                            s.stop = Some(Stop::Unrunnable(why.clone()));
                        }
                        if opts.audit_screen {
                            audit.push((k, c, why.clone()));
                        }
                        s.screened_out(why);
                        if s.stop.is_some() {
                            break;
                        }
                        continue;
                    }
                    cases.push(c);
                    meta.push((k, gc, id));
                }
                Err(e) => {
                    s.cases += 1;
                    s.errors += 1;
                    s.problems.push(format!("case {k} ({}): {e}", gc.asm));
                }
            }
            screened_in_a_row = 0;
            taken += 1;
            generated += 1;
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
        audit_screened(&mut s, &audit, &mut adapters, run_opts, &limit);
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
                t0,
            );
            s.elapsed = t0.elapsed();
            progress(&s);
        }
    }
    s.elapsed = t0.elapsed();
    s.passed_over_shapes = learned.passed_over_shapes();
    s.builds = adapters
        .iter()
        .filter_map(|x| Some((x.name().to_string(), x.builds()?)))
        .collect();
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
    t0: Instant,
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
    let found_after = t0.elapsed();
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
        found_after,
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
    if s.screened > 0 || s.passed_over > 0 {
        let made = s.cases + s.dropped + s.screened;
        let _ = writeln!(
            out,
            "{} of {made} case(s) made screened out before they were sent (an adapter declared it cannot run them; --no-screen sends them): {:.1} % of the cases run and {:.1} % of those made were judged",
            s.screened,
            100.0 * s.judged as f64 / (s.cases.max(1)) as f64,
            100.0 * s.judged as f64 / made.max(1) as f64,
        );
        if s.passed_over > 0 {
            let _ = writeln!(
                out,
                "{} more draft(s) passed over, not made: {} shape(s) (kinds, instructions or texts) screened out {LEARN_AFTER} times and never sent (one draft in {} of such a shape is still made; --no-learn makes every draft)",
                s.passed_over,
                s.passed_over_shapes,
                crate::fuzzing::learn::EXPLORE_EVERY,
            );
        }
        let mut by: Vec<(&String, &u64)> = s.screened_by.iter().collect();
        by.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in by.into_iter().take(5) {
            let _ = writeln!(out, "  screened x{n}: {}", crate::report::safe(why));
        }
        if s.audited > 0 {
            let _ = writeln!(
                out,
                "audit: {} screened case run(s) sent anyway; any not answered not applicable is an error below",
                s.audited
            );
        }
    }
    for (name, b) in &s.builds {
        let _ = writeln!(
            out,
            "{}: {} {} built by the driver, {} run(s) reused a built one",
            crate::report::safe(name),
            b.built,
            b.what,
            b.reused
        );
    }
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
            "  {} x{} (first: case {} after {:.1} s, {})",
            crate::report::safe(&sig.key),
            sig.count,
            sig.first,
            sig.found_after.as_secs_f64(),
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
    use super::judge::{error_kind, location_kind};
    use super::*;
    use crate::run::results::FindingOut;

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
        assert_eq!(s.exit_code(), EXIT_OK);
        s.undecided = 1;
        assert_eq!(s.exit_code(), EXIT_NONCONFORMANCE);
        s.errors = 1;
        assert_eq!(s.exit_code(), EXIT_ERROR);
    }
}
