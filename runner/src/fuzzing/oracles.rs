//! Fuzz oracles: what the cargo-fuzz targets in `fuzz/` check, as library code so that the
//! same checks run as unit tests on seeded bytes and `atomcts regress` can turn an artifact
//! back into a corpus case.
//!
//! - [`diff_fast_reference`]: the fast path (`atomcts-fast`) against the reference model on a
//!   generated case (generator of [`crate::fuzzing::generate`] drawing from the fuzzer's bytes).
//! - [`parse_roundtrip`]: any text through a dialect's parser; what parses prints and parses
//!   back to the same instruction.
//! - [`load_case_file`]: any bytes as a case file through the loader, the state and
//!   expectation builders and one reference run.
//!
//! Each oracle panics (the fuzzer's crash signal) with a message naming what differs; every
//! other input returns quietly.

use crate::corpus::build::build_expectation;
use crate::corpus::case::parse_file;
use crate::corpus::state::build_state;
use crate::fuzzing::draft::Draft;
use crate::fuzzing::draft::GenCase;
use crate::fuzzing::generate::{Entropy, case_table, file_text, gen_draft};
use crate::run::results::Options;
use crate::run::run_case;
use atomcts_adapters::ReferenceAdapter;
use atomcts_reference::check::{Judgement, judge};
use atomcts_reference::exec;
use atomcts_reference::ir::{Lowered, Lowering};
use atomcts_reference::knobs::{KNOBS, PROFILES};
use atomcts_reference::outcome::{Completed, Outcome};
use atomcts_reference::program::Program;
use atomcts_reference::{ModelError, Profile, State};
use std::fmt::Write as _;
use std::path::Path;
use toml::{Table, Value};

pub use atomcts_reference::program::Dialect;

/// Race-checker budget of the oracles: small, so that one input stays fast; running out is
/// never a finding.
pub const FUZZ_RACE_BUDGET: u64 = 20_000;

/// The generator's entropy drawn from fuzzer bytes. Running out of bytes yields zeros, never an
/// error, so every input decodes to a case; [`Entropy::below`] takes only as many bytes as the
/// range needs, so short inputs still reach many cases.
pub struct BytesEntropy<'a> {
    data: &'a [u8],
}

impl<'a> BytesEntropy<'a> {
    /// Entropy over `data`.
    pub fn new(data: &'a [u8]) -> BytesEntropy<'a> {
        BytesEntropy { data }
    }

    /// The next `n` bytes (at most 8) as a little-endian number; zeros past the end.
    fn take(&mut self, n: u32) -> u64 {
        let n = (n as usize).min(8);
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head.iter()
            .enumerate()
            .fold(0, |acc, (i, b)| acc | (u64::from(*b) << (8 * i)))
    }
}

impl Entropy for BytesEntropy<'_> {
    fn next_u64(&mut self) -> u64 {
        self.take(8)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let bits = 64 - (n - 1).leading_zeros();
        self.take(bits.div_ceil(8)) % n
    }
}

/// What one `diff_fast_reference` input decodes to: a profile and a generated case.
#[derive(Clone, Debug)]
pub struct DiffInput {
    /// A named profile, or the default with a few knobs set to other options.
    pub profile: Profile,
    /// The generated case, its state as typed values (built into a state directly, without
    /// the TOML values of the case format: issue 9).
    pub draft: Draft,
}

impl DiffInput {
    /// The case in the case format (for messages and regression files).
    pub fn case(&self) -> GenCase {
        self.draft.gen_case()
    }
}

/// A profile from the entropy: a named one half of the time, else the default with one to
/// three knobs set to random options (the profile's name records them).
pub fn fuzz_profile(e: &mut dyn Entropy) -> Profile {
    let named = named_profiles();
    let k = e.below(2 * PROFILES.len() as u64);
    if let Some(p) = named.get(k as usize) {
        return p.clone();
    }
    let mut p = Profile::default();
    for _ in 0..1 + e.below(3) {
        let Some(knob) = KNOBS.get(e.below(KNOBS.len() as u64) as usize) else {
            continue;
        };
        let Some(option) = knob
            .options
            .get(e.below(knob.options.len() as u64) as usize)
        else {
            continue;
        };
        if p.get(knob.id).ok() != Some(option.name) && p.set(knob.id, option.name).is_ok() {
            p.name = format!("{}+{}={}", p.name, knob.id, option.name);
        }
    }
    p
}

/// Every profile of [`PROFILES`], built once (in order; one that does not build is left out,
/// which `Profile::named`'s own tests rule out): the oracle clones one instead of matching
/// every knob's name and option again for each input.
fn named_profiles() -> &'static [Profile] {
    static NAMED: std::sync::OnceLock<Vec<Profile>> = std::sync::OnceLock::new();
    NAMED.get_or_init(|| {
        PROFILES
            .iter()
            .filter_map(|(name, _, _)| Profile::named(name).ok())
            .collect()
    })
}

/// Decodes fuzzer bytes into a profile and a generated case (deterministic: the same bytes
/// always give the same input).
pub fn decode_diff_input(data: &[u8]) -> DiffInput {
    let mut e = BytesEntropy::new(data);
    let profile = fuzz_profile(&mut e);
    let draft = gen_draft(&mut e);
    DiffInput { profile, draft }
}

/// The case as people read it: profile, dialect, lanes, instruction and initial state.
fn describe(input: &DiffInput) -> String {
    let given = toml::to_string(&input.case().given).unwrap_or_default();
    format!(
        "profile {}, dialect {}, lanes {}\nasm: {}\ngiven:\n{}",
        input.profile.name, input.draft.dialect, input.draft.lanes, input.draft.asm, given
    )
}

/// The `diff_fast_reference` oracle: panics when the fast path and the reference disagree on
/// the case the bytes decode to (outcome kind, final state, open fields, fault lanes and
/// classes, rejection reason, model errors). See [`check_diff`].
pub fn diff_fast_reference(data: &[u8]) {
    let input = decode_diff_input(data);
    if let Err(why) = check_diff(&input) {
        panic!(
            "diff_fast_reference: fast path and reference disagree\n{why}\n{}",
            describe(&input)
        );
    }
}

/// The instruction of a generated case, lowered by the reference's front end under the
/// input's profile, with its initial state; `Ok(None)` when the text does not parse or the
/// instruction is not run (rejected or unspecified before it runs: nothing to compare).
fn lower_input(input: &DiffInput) -> Result<Option<(Lowered, State)>, String> {
    let gc = &input.draft;
    let state = gc
        .state()
        .map_err(|m| format!("the generated case does not load: {m}"))?;
    let Ok(program) = Program::parse(gc.dialect, &gc.asm) else {
        return Ok(None);
    };
    Ok(match program.lower(&state, &input.profile) {
        Ok(Lowering::Run(l)) => Some((l, state)),
        Ok(Lowering::Invalid(_) | Lowering::Unspecified(_)) | Err(_) => None,
    })
}

/// The check behind [`diff_fast_reference`]: `Err` says what differs.
///
/// Both executors run the reference front end's lowered instruction on the same state, and
/// their outcomes must be equal: exact comparison, cheapest first (see
/// [`outcome_differences`]). Only when completed states differ does the reference's judge
/// (`check::judge`, race-aware) also look at the fast path's state, to say in the message
/// whether the difference is at least an outcome some order of the lanes allows; the check
/// fails either way. (The judge on states that are equal is the reference judging its own
/// result: [`check_reference_judge`], run by the unit tests; `atomcts run` on the reference
/// adapter judges the reference's own completed outcomes too.)
pub fn check_diff(input: &DiffInput) -> Result<(), String> {
    let Some((lowered, state)) = lower_input(input)? else {
        return Ok(());
    };
    let reference = exec::execute(&lowered, &state);
    let fast = atomcts_fast::execute(&lowered, &state);
    match (reference, fast) {
        (Err(r), Err(f)) => {
            if std::mem::discriminant(&r) == std::mem::discriminant(&f) {
                Ok(())
            } else {
                Err(format!("model errors differ: reference {r}; fast {f}"))
            }
        }
        (Err(r), Ok(f)) => Err(format!(
            "reference model error ({r}), fast outcome {}",
            f.kind()
        )),
        (Ok(r), Err(f)) => Err(format!(
            "reference outcome {}, fast model error ({f})",
            r.kind()
        )),
        (Ok(r), Ok(f)) => {
            let diffs = outcome_differences(&r, &f);
            if diffs.is_empty() {
                return Ok(());
            }
            let mut why = diffs.join("\n");
            if let (Outcome::Completed(rc), Outcome::Completed(fc)) = (&r, &f) {
                let verdict = match judge_state(&lowered, &state, rc, &fc.state, "the fast path's")
                {
                    Ok(()) => "the reference judge allows the fast path's final state".into(),
                    Err(e) => e,
                };
                let _ = write!(why, "\n{verdict}");
            }
            Err(why)
        }
    }
}

/// The reference's judge on its own completed outcome for the input's case: it must pass (or
/// be undecided within [`FUZZ_RACE_BUDGET`]). A property of the reference alone, which
/// `diff_fast_reference` checked on every input before it judged only disagreements; the
/// unit tests check it on seeded inputs.
pub fn check_reference_judge(input: &DiffInput) -> Result<(), String> {
    let Some((lowered, state)) = lower_input(input)? else {
        return Ok(());
    };
    match exec::execute(&lowered, &state) {
        Ok(Outcome::Completed(rc)) => judge_state(&lowered, &state, &rc, &rc.state, "its own"),
        _ => Ok(()),
    }
}

/// The reference's judge on a completed state `observed` (`whose` it is, for the message):
/// `Err` lists its mismatches.
fn judge_state(
    lowered: &Lowered,
    state: &State,
    rc: &Completed,
    observed: &State,
    whose: &str,
) -> Result<(), String> {
    match judge(lowered, state, rc, observed, FUZZ_RACE_BUDGET) {
        Ok(Judgement::Pass | Judgement::Undecided(_)) => Ok(()),
        // A budget the checker cannot keep is not a finding.
        Err(ModelError::Limit(_)) => Ok(()),
        Ok(Judgement::Fail(ms)) => {
            let mut s = format!("the reference judge fails {whose} final state:");
            for m in ms {
                let hex = |v: Option<u64>| v.map_or("-".to_string(), |v| format!("{v:#x}"));
                let _ = write!(
                    s,
                    "\n  {}: expected {}, observed {} ({})",
                    m.loc,
                    hex(m.expected),
                    hex(m.observed),
                    m.why
                );
            }
            Err(s)
        }
        Err(e) => Err(format!("the reference judge failed: {e}")),
    }
}

/// Every way two outcomes differ, one line each (empty when they agree). Unspecified outcomes
/// agree whatever their explanations say.
pub fn outcome_differences(reference: &Outcome, fast: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    match (reference, fast) {
        (Outcome::Completed(r), Outcome::Completed(f)) => {
            if r.state != f.state {
                let lines = crate::corpus::verify::diff(&r.state, &f.state);
                if lines.is_empty() {
                    out.push("final states differ outside registers and memory".into());
                }
                for l in lines {
                    out.push(format!("final state (reference -> fast): {l}"));
                }
            }
            // Equal lists first (the usual case); else the same fields in another order agree.
            let same_fields = r.open == f.open
                || (r.open.len() == f.open.len()
                    && r.open.iter().all(|x| f.open.contains(x))
                    && f.open.iter().all(|x| r.open.contains(x)));
            if !same_fields {
                out.push(format!(
                    "open fields: reference {:?}; fast {:?}",
                    r.open, f.open
                ));
            }
        }
        (Outcome::Fault(r), Outcome::Fault(f)) => {
            if r.lanes != f.lanes {
                out.push(format!(
                    "fault lanes and classes: reference {:?}; fast {:?}",
                    r.lanes, f.lanes
                ));
            }
        }
        (Outcome::Invalid(r), Outcome::Invalid(f)) => {
            if r.reason != f.reason {
                out.push(format!(
                    "rejection reason: reference {}; fast {}",
                    r.reason.code(),
                    f.reason.code()
                ));
            }
        }
        (Outcome::Unspecified(_), Outcome::Unspecified(_)) => {}
        (r, f) => out.push(format!(
            "outcome kind: reference {}; fast {}",
            r.kind(),
            f.kind()
        )),
    }
    out
}

/// The parse-target oracle: any bytes (lossy UTF-8) through `dialect`'s parser; whatever
/// parses must print, parse back to the same instruction, and print the same text again.
/// Panics on a failed round trip; returns quietly otherwise.
pub fn parse_roundtrip(dialect: Dialect, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Err(why) = check_roundtrip(dialect, &text) {
        panic!("parse_roundtrip ({dialect}): {why}\ninput: {text:?}");
    }
}

/// The check behind [`parse_roundtrip`]: `Err` says how the round trip failed.
pub fn check_roundtrip(dialect: Dialect, text: &str) -> Result<(), String> {
    let Ok(first) = Program::parse(dialect, text) else {
        return Ok(());
    };
    let printed = first.to_string();
    let second = Program::parse(dialect, &printed)
        .map_err(|r| format!("the printed form {printed:?} does not parse: {r}"))?;
    if second != first {
        return Err(format!(
            "the printed form {printed:?} parses to another instruction:\n  first:  {first:?}\n  second: {second:?}"
        ));
    }
    let reprinted = second.to_string();
    if reprinted != printed {
        return Err(format!(
            "printing is not stable: {printed:?} then {reprinted:?}"
        ));
    }
    Ok(())
}

/// The `load_case` oracle: bytes (lossy UTF-8) as a case file through the loader, then the
/// state and every expectation of every case that loads, and one reference run of the first
/// case whose state builds. Errors are values; only a panic (or an absurd allocation, caught
/// by the fuzzer's memory limit) is a finding.
pub fn load_case_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data).into_owned();
    let loaded = parse_file(Path::new(""), Path::new("fuzz/case.toml"), text);
    let opts = Options {
        profile: Profile::default(),
        race_budget: FUZZ_RACE_BUDGET,
        cases_arg: "fuzz/case.toml".into(),
        adapter_arg: String::new(),
    };
    let mut ran = false;
    for case in &loaded.cases {
        let Ok(state) = build_state(case) else {
            continue;
        };
        if let Some((entries, at)) = &case.expect {
            let _ = build_expectation(case, &state, entries, at);
        }
        for (_, entries, at) in &case.expect_if {
            let _ = build_expectation(case, &state, entries, at);
        }
        if !ran {
            let _ = run_case(case, &mut ReferenceAdapter, &opts);
            ran = true;
        }
    }
}

/// The fuzz targets of `fuzz/fuzz_targets/`.
pub const TARGETS: &[&str] = &[
    "diff_fast_reference",
    "parse_sass",
    "parse_visa",
    "parse_msl",
    "load_case",
];

/// Runs the named target's oracle on `data` (panics as the target would).
pub fn run_target(target: &str, data: &[u8]) -> Result<(), String> {
    match target {
        "diff_fast_reference" => diff_fast_reference(data),
        "load_case" => load_case_file(data),
        other => match parse_dialect(other) {
            Some(d) => parse_roundtrip(d, data),
            None => return Err(unknown_target(other)),
        },
    }
    Ok(())
}

fn parse_dialect(target: &str) -> Option<Dialect> {
    target.strip_prefix("parse_").and_then(Dialect::from_name)
}

fn unknown_target(t: &str) -> String {
    format!(
        "unknown fuzz target `{t}` (targets: {})",
        TARGETS.join(", ")
    )
}

/// FNV-1a over bytes: the artifact's stable short hash.
pub fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A regression case made from a fuzz artifact: its file name and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regression {
    /// `<target>-<short hash>.toml`.
    pub file_name: String,
    /// The case file, in the corpus format.
    pub text: String,
}

/// Turns a fuzz artifact into a corpus case: for `diff_fast_reference`, the generated case the
/// bytes decode to (under the profile they decode to); for the parse targets, a case whose asm
/// is the artifact's text (lossy UTF-8) on an empty state under the default profile. The
/// expectation is the reference's outcome, and `where` pins every knob of the dialect (and the
/// float knobs) to the profile's options, so the case applies exactly where its expectation
/// holds. `load_case` artifacts are loader inputs, not cases: an error says what to do.
pub fn regression_case(target: &str, artifact: &str, data: &[u8]) -> Result<Regression, String> {
    let hash = format!("{:08x}", fnv1a(data) >> 32);
    let (profile, gc) = match target {
        "diff_fast_reference" => {
            let input = decode_diff_input(data);
            let gc = input.case();
            (input.profile, gc)
        }
        "load_case" => {
            return Err(
                "load_case artifacts are case-file texts that crash the loader, not cases: \
                 add the file to a loader unit test (runner/src/corpus/case.rs or build.rs) and to \
                 fuzz/corpus/load_case"
                    .into(),
            );
        }
        other => {
            let dialect = parse_dialect(other).ok_or_else(|| unknown_target(other))?;
            let gc = GenCase {
                dialect,
                asm: String::from_utf8_lossy(data).into_owned(),
                lanes: 1,
                given: Table::new(),
                concurrent: Vec::new(),
                edge: false,
            };
            (Profile::default(), gc)
        }
    };
    let name = format!("fuzz_{hash}");
    let cite = format!(
        "fuzz target {target}, artifact {artifact}; expectation from the reference model, profile {}",
        profile.name
    );
    let mut t = case_table(&name, &cite, &gc, &profile)?;
    let mut pins = Table::new();
    for k in KNOBS {
        let applies = k.id.starts_with("float.") || k.id.starts_with(&format!("{}.", gc.dialect));
        if let (true, Ok(o)) = (applies, profile.get(k.id)) {
            pins.insert(k.id.into(), Value::String(o.into()));
        }
    }
    t.insert("where".into(), Value::Table(pins));
    t.insert(
        "tags".into(),
        Value::Array(vec![Value::String("fuzz_regression".into())]),
    );
    let header = format!(
        "Regression case from fuzz target `{target}`, artifact `{artifact}` (FNV-1a {hash}).\n\
         Reproduce the finding: cd fuzz && cargo fuzz run {target} --sanitizer none <artifact>\n\
         The expectation is the reference model's outcome (profile {}), not the documents'.",
        profile.name
    );
    let text = file_text(gc.dialect, &header, &[t])?;
    Ok(Regression {
        file_name: format!("{target}-{hash}.toml"),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    /// `n` pseudo-random inputs of 0..max_len bytes from `seed`.
    fn inputs(seed: u64, n: usize, max_len: usize) -> Vec<Vec<u8>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let len = (rng.next_u64() % (max_len as u64 + 1)) as usize;
                (0..len).map(|_| rng.next_u64() as u8).collect()
            })
            .collect()
    }

    #[test]
    fn entropy_reads_little_endian_takes_only_needed_bytes_and_pads_with_zeros() {
        let mut e = BytesEntropy::new(&[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09]);
        assert_eq!(e.next_u64(), 0x0807_0605_0403_0201);
        // One byte is enough for a range of 10: 0x09 % 10 = 9.
        assert_eq!(e.below(10), 9);
        // Out of bytes: zeros, never an error.
        assert_eq!(e.next_u64(), 0);
        assert_eq!(e.below(7), 0);
        // A range of 300 needs two bytes: 0x0201 = 513, 513 % 300 = 213.
        let mut e = BytesEntropy::new(&[0x01, 0x02, 0xff]);
        assert_eq!(e.below(300), 213);
        assert_eq!(e.below(256), 0xff);
        // A range of one takes nothing.
        let mut e = BytesEntropy::new(&[0x05]);
        assert_eq!(e.below(1), 0);
        assert_eq!(e.below(256), 5);
    }

    #[test]
    fn decoding_is_deterministic_and_reaches_every_dialect_and_mixed_profiles() {
        let mut dialects = std::collections::BTreeSet::new();
        let mut mixed = 0;
        for data in inputs(11, 500, 256) {
            let a = decode_diff_input(&data);
            let b = decode_diff_input(&data);
            assert_eq!(a.draft, b.draft);
            assert_eq!(a.profile, b.profile);
            dialects.insert(a.draft.dialect);
            if a.profile.name.contains('+') {
                mixed += 1;
            }
        }
        assert_eq!(dialects.len(), 3);
        assert!(mixed > 50, "only {mixed} mixed profiles");
        // The empty input is a case too: zeros pick the first profile, every first choice,
        // and make every `chance` true (guard @P0, destination RZ, the sparse form).
        let empty = decode_diff_input(&[]);
        assert_eq!(empty.profile.name, PROFILES[0].0);
        assert_eq!(empty.draft.dialect, Dialect::Sass);
        assert_eq!(empty.draft.asm, "@P0 ATOM.ADD.U32 P1, RZ, [R2], R4");
    }

    #[test]
    fn diff_oracle_holds_on_seeded_inputs() {
        for data in inputs(1, 3000, 200) {
            diff_fast_reference(&data);
        }
        // What the target checked on every input before it judged only disagreements: the
        // reference's judge passes the reference's own final state.
        let mut judged = 0;
        for data in inputs(6, 3000, 200) {
            let input = decode_diff_input(&data);
            check_reference_judge(&input).unwrap_or_else(|e| panic!("{e}\n{}", describe(&input)));
            judged += usize::from(matches!(lower_input(&input), Ok(Some(_))));
        }
        assert!(judged > 1000, "only {judged} of 3000 inputs ran");
        for data in [
            &[][..],
            &[0xff; 64][..],
            &[0x80; 300][..],
            b"ATOM.ADD.F16x2.RN",
        ] {
            diff_fast_reference(data);
        }
    }

    #[test]
    fn outcome_differences_name_what_differs() {
        use atomcts_reference::outcome::{Fault, FaultClass};
        use atomcts_reference::{Reason, Rejection};
        let fa = Outcome::Fault(Fault {
            lanes: vec![(0, FaultClass::MisalignedAddress)],
        });
        let fb = Outcome::Fault(Fault {
            lanes: vec![(1, FaultClass::MisalignedAddress)],
        });
        assert!(outcome_differences(&fa, &fa).is_empty());
        let d = outcome_differences(&fa, &fb);
        assert_eq!(d.len(), 1);
        assert!(d[0].starts_with("fault lanes"), "{d:?}");
        let inv = Outcome::Invalid(Rejection::new(Reason::Syntax, "x"));
        let d = outcome_differences(&fa, &inv);
        assert_eq!(
            d,
            vec!["outcome kind: reference fault; fast invalid".to_string()]
        );
        let u1 = Outcome::Unspecified("a".into());
        let u2 = Outcome::Unspecified("b".into());
        assert!(outcome_differences(&u1, &u2).is_empty());
    }

    #[test]
    fn diff_oracle_sees_a_one_bit_change_in_a_completed_state() {
        // A run of the reference against itself with one memory bit flipped must differ.
        let input = (0..2000u64)
            .map(|s| decode_diff_input(&s.to_le_bytes().repeat(40)))
            .find(|i| {
                let Ok(state) = i.draft.state() else {
                    return false;
                };
                matches!(
                    atomcts_reference::program::run(i.draft.dialect, &i.draft.asm, &state, &i.profile)
                        .map(|r| r.outcome),
                    Ok(Outcome::Completed(ref c)) if c.state.global.ranges().next().is_some()
                )
            })
            .expect("some seed completes with global memory");
        let state = input.draft.state().unwrap();
        let run = atomcts_reference::program::run(
            input.draft.dialect,
            &input.draft.asm,
            &state,
            &input.profile,
        )
        .unwrap();
        let Outcome::Completed(c) = &run.outcome else {
            unreachable!()
        };
        let mut flipped = c.clone();
        let (base, _) = flipped.state.global.ranges().next().unwrap();
        let old = flipped.state.global.read(base, 1).unwrap();
        assert!(flipped.state.global.write(base, 1, old ^ 1));
        let d = outcome_differences(&run.outcome, &Outcome::Completed(flipped));
        assert!(d.iter().any(|l| l.starts_with("final state")), "{d:?}");
    }

    #[test]
    fn parse_roundtrip_holds_on_seeded_bytes_and_on_known_forms() {
        let known: &[(Dialect, &str)] = &[
            (Dialect::Sass, "ATOM.ADD.U32 R0, [R2], R4"),
            (Dialect::Sass, "@!P0 ATOM.E.CAS.64 R0, [R2+0x10], R4, R6"),
            (Dialect::Sass, "ATOM.ADD.F16x2.RN P1, R0, [R2], R4"),
            (Dialect::Visa, "DWORD_ATOMIC.add (16) T255 V10 V11 V0 V13"),
            (
                Dialect::Visa,
                "(!P1) DWORD_ATOMIC.cmpxchg.16 (M1_NM, 8) T0 V10 V11 V12 V13",
            ),
            (Dialect::Visa, "SVM_SCATTER4_SCALED.RGA (8) V20 V21 V22"),
            (
                Dialect::Msl,
                "r = atomic_fetch_add_explicit(&buf[i], v, memory_order_relaxed)",
            ),
            (Dialect::Msl, "r = simd_shuffle_and_fill_down(x, y, 2, 8)"),
        ];
        let mut parsed = 0;
        for (d, text) in known {
            check_roundtrip(*d, text).unwrap();
            if Program::parse(*d, text).is_ok() {
                parsed += 1;
            }
        }
        // Most of these are legal forms; the round trip was exercised, not skipped.
        assert!(parsed >= 6, "only {parsed} parsed");
        // Random bytes, and random mutations of the known forms.
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for data in inputs(2, 2000, 80) {
            for d in Dialect::ALL {
                parse_roundtrip(*d, &data);
            }
        }
        for _ in 0..3000 {
            let (d, text) = known[(rng.next_u64() % known.len() as u64) as usize];
            let mut b = text.as_bytes().to_vec();
            for _ in 0..1 + rng.next_u64() % 3 {
                let i = (rng.next_u64() % b.len() as u64) as usize;
                match rng.next_u64() % 3 {
                    0 => {
                        b[i] = b" .,[]+-()&0123456789xRVPMTabcdefz_"[(rng.next_u64() % 34) as usize]
                    }
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, b[i]),
                }
            }
            parse_roundtrip(d, &b);
        }
    }

    #[test]
    fn check_roundtrip_reports_a_failure_as_a_value() {
        // Unparsable text is no finding.
        assert_eq!(check_roundtrip(Dialect::Sass, "not an instruction"), Ok(()));
        assert_eq!(check_roundtrip(Dialect::Msl, "\u{0}\u{fffd}"), Ok(()));
    }

    #[test]
    fn load_case_survives_seeded_bytes_mutated_corpus_files_and_hostile_sizes() {
        for data in inputs(3, 1500, 300) {
            load_case_file(&data);
        }
        let hostile = [
            "dialect = \"sass\"\n[[case]]\nname = \"a\"\ncite = \"c\"\nlanes = 4294967296\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\nexpect = { unspecified = true }\n",
            "dialect = \"visa\"\n[[case]]\nname = \"a\"\ncite = \"c\"\nasm = \"DWORD_ATOMIC.add (1) T0 V10 V11 V0 V13\"\ngiven = { slm = { size = 0xffffffffffff } }\nexpect = { unspecified = true }\n",
            "dialect = \"visa\"\n[[case]]\nname = \"a\"\ncite = \"c\"\nasm = \"SVM_SCATTER4_SCALED.R (8) V20 V21 V22\"\ngiven = { alloc = [\"0xffffffffffffff00+0x1000\", \"0x0+0x7fffffffffffffff\"] }\nexpect = { unspecified = true }\n",
            "dialect = \"msl\"\n[[case]]\nname = \"a\"\ncite = \"c\"\nlanes = 1024\nasm = \"r = simd_shuffle_up(x, 1)\"\ngiven = { simd_width = 0xffffffff, x = 1 }\nexpect = { r = [1] }\n",
            "dialect = \"sass\"\n[[case]]\nname = \"a\"\ncite = \"c\"\nasm = \"ATOM.ADD.U32 R0, [R2], R4\"\ngiven = { R2 = 0x1000, mem = { 0x1000 = \"u32:5\" } }\nexpect = { mem = { 0x1000 = \"u32:5\" }, fault = \"nope\", fault_lanes = [99999999999] }\n",
        ];
        for h in hostile {
            load_case_file(h.as_bytes());
        }
        // Generated case files of every dialect, whole, cut short, and with bytes changed.
        let files = crate::fuzzing::generate::generate_files(9, 30, &Profile::default()).unwrap();
        assert_eq!(files.len(), 3);
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for (_, text) in files {
            let text = text.into_bytes();
            load_case_file(&text);
            for cut in [text.len() / 3, text.len() / 2, text.len() * 9 / 10] {
                load_case_file(&text[..cut]);
            }
            for _ in 0..200 {
                let mut b = text.clone();
                for _ in 0..1 + rng.next_u64() % 4 {
                    let i = (rng.next_u64() % b.len() as u64) as usize;
                    let chars = b"0123456789xf-=[]{},\"\n";
                    b[i] = chars[(rng.next_u64() % chars.len() as u64) as usize];
                }
                load_case_file(&b);
            }
        }
    }

    #[test]
    fn regress_turns_a_diff_artifact_into_a_case_that_passes_on_the_reference() {
        let artifact: Vec<u8> = (0u8..=255).cycle().skip(7).take(400).collect();
        let r = regression_case("diff_fast_reference", "crash-synthetic", &artifact).unwrap();
        let hash = format!("{:08x}", fnv1a(&artifact) >> 32);
        assert_eq!(r.file_name, format!("diff_fast_reference-{hash}.toml"));
        assert!(r.text.starts_with(
            "# Regression case from fuzz target `diff_fast_reference`, artifact `crash-synthetic`"
        ));
        let input = decode_diff_input(&artifact);
        let loaded = parse_file(Path::new(""), Path::new("r.toml"), r.text.clone());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let case = &loaded.cases[0];
        assert_eq!(case.asm, input.draft.asm);
        assert_eq!(case.dialect, input.draft.dialect);
        assert_eq!(case.tags, vec!["fuzz_regression".to_string()]);
        let opts = Options {
            profile: input.profile.clone(),
            race_budget: 100_000,
            cases_arg: String::new(),
            adapter_arg: String::new(),
        };
        let res = run_case(case, &mut ReferenceAdapter, &opts);
        assert_eq!(
            res.status,
            crate::run::results::Status::Pass,
            "{:?}",
            res.findings
        );
        // Another artifact, another file.
        let r2 = regression_case("diff_fast_reference", "x", &artifact[1..]).unwrap();
        assert_ne!(r2.file_name, r.file_name);
    }

    #[test]
    fn regress_turns_a_parse_artifact_into_a_case_with_the_reference_outcome() {
        let r = regression_case("parse_sass", "crash-1", b"ATOM.ADD.U33 R0, [R2], R4").unwrap();
        assert!(r.file_name.starts_with("parse_sass-"));
        let loaded = parse_file(Path::new(""), Path::new("r.toml"), r.text.clone());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let case = &loaded.cases[0];
        assert_eq!(case.asm, "ATOM.ADD.U33 R0, [R2], R4");
        let (expect, _) = case.expect.as_ref().unwrap();
        assert_eq!(expect[0].0, "invalid");
        assert_eq!(
            case.where_.get("sass.misaligned").map(String::as_str),
            Some("fault")
        );
        assert!(!case.where_.contains_key("visa.misaligned"));
        let opts = Options {
            profile: Profile::default(),
            race_budget: 1000,
            cases_arg: String::new(),
            adapter_arg: String::new(),
        };
        let res = run_case(case, &mut ReferenceAdapter, &opts);
        assert_eq!(
            res.status,
            crate::run::results::Status::Pass,
            "{:?}",
            res.findings
        );
        assert!(regression_case("load_case", "a", b"x").is_err());
        assert!(regression_case("parse_ptx", "a", b"x").is_err());
    }

    #[test]
    fn run_target_dispatches_by_name() {
        for t in TARGETS {
            run_target(t, b"").unwrap();
        }
        assert!(run_target("nope", b"").is_err());
    }
}
