//! Reproducible generated cases (`atomcts gen`, `atomcts run --generated`): the cases drawn
//! by [`crate::fuzzing::draw`] made into corpus cases, their expectations taken from the
//! reference model, streamed in chunks or written in the corpus format.
//!
//! The draw reads an [`Entropy`] source: ChaCha8 seeded by `--seed` for `gen`, and
//! libFuzzer's bytes for the fuzz targets, so a fuzz finding is a case like any other.

use crate::corpus::case::GeneratedCase;
use crate::fuzzing::draft::{Draft, GenCase};
pub use crate::fuzzing::draw::{Entropy, HOT_ONE_IN, gen_case, gen_draft, hot_float};
use crate::fuzzing::expect::{Prebuilt, expect_table, int};
use crate::fuzzing::learn::Lagged;
use atomcts_reference::Profile;
use atomcts_reference::error::Rejection;
use atomcts_reference::program::{self, Dialect, Program};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::rc::Rc;
use toml::{Table, Value};

/// A case file's text: a header comment, the dialect, and the cases.
pub fn file_text(dialect: Dialect, header: &str, cases: &[Table]) -> Result<String, String> {
    let mut doc = Table::new();
    doc.insert("dialect".into(), Value::String(dialect.name().into()));
    doc.insert(
        "case".into(),
        Value::Array(cases.iter().cloned().map(Value::Table).collect()),
    );
    let body = toml::to_string(&doc).map_err(|e| e.to_string())?;
    let mut s = String::new();
    for l in header.lines() {
        let _ = writeln!(s, "# {l}");
    }
    s.push_str(&body);
    Ok(s)
}

/// A case table for `gc` with its expectation from the reference under `profile`.
pub fn case_table(
    name: &str,
    cite: &str,
    gc: &GenCase,
    profile: &Profile,
) -> Result<Table, String> {
    let mut t = Table::new();
    t.insert("name".into(), Value::String(name.into()));
    if gc.concurrent.is_empty() {
        t.insert("asm".into(), Value::String(gc.asm.clone()));
    }
    t.insert("cite".into(), Value::String(cite.into()));
    if gc.lanes != 1 {
        t.insert("lanes".into(), int(u64::from(gc.lanes)));
    }
    t.insert("given".into(), Value::Table(gc.given.clone()));
    t.insert("expect".into(), Value::Table(expect_table(gc, profile)?));
    if !gc.concurrent.is_empty() {
        let instrs = gc.concurrent.iter().map(|i| {
            let mut x = Table::new();
            x.insert("asm".into(), Value::String(i.asm.clone()));
            x.insert("lanes".into(), int(u64::from(i.lanes)));
            x.insert("iterations".into(), int(u64::from(i.iterations)));
            x.insert("given".into(), Value::Table(i.given.clone()));
            if let Some(l) = i.cas_loop {
                let mut c = Table::new();
                c.insert("update".into(), Value::String(l.update.name().into()));
                c.insert("operand".into(), Value::String(format!("{:#x}", l.operand)));
                x.insert("cas_loop".into(), Value::Table(c));
            }
            Value::Table(x)
        });
        t.insert("concurrent".into(), Value::Array(instrs.collect()));
    }
    Ok(t)
}

/// An error of the generator (a generated case that does not load is a bug here).
#[derive(Debug, thiserror::Error)]
#[error("generated case {name}: {message}")]
pub struct GenError {
    /// The case.
    pub name: String,
    /// What went wrong.
    pub message: String,
}

/// The most generated cases one command makes (`run --generated`, `gen --count`); more is a
/// usage error (exit 2, issue 7 D7). Cases are generated, run, judged and reported as a stream
/// (issue 9): memory does not grow with the count (a run keeps counts and at most
/// [`crate::report::MAX_KEPT`] results), so the bound is about time: a billion cases take
/// hours on the fast path.
pub const MAX_GENERATED: u64 = 1_000_000_000;

/// Cases per file that `atomcts gen` writes.
pub const CHUNK: u64 = 5_000;

/// Cases the [`Generator`] yields at a time (the memory one chunk of a streamed run holds):
/// small, so that a chunk's cases stay in the cache and the allocator reuses their memory;
/// a pipelined adapter takes chunks of its window instead ([`Generator::next_chunk`]).
pub const RUN_CHUNK: usize = 64;

/// A drawn case ([`Generator::draw_block`]): its index, draft, file and id; what
/// [`Maker::make`] makes a case of, on any thread.
pub struct Drawn {
    k: u64,
    draft: Draft,
    file: std::path::PathBuf,
    at: std::sync::Arc<Path>,
    id: String,
}

/// A stream of generated cases: the same cases, in chunks, as [`generate`] makes at once.
pub struct Generator {
    rng: ChaCha8Rng,
    seed: u64,
    next: u64,
    count: u64,
    profile: std::sync::Arc<Profile>,
    /// The citation of every generated case.
    cite: String,
    /// Per dialect met so far: its file's path (as a path and shared) and the start of its
    /// cases' ids (made once, not per case).
    files: Vec<(Dialect, std::path::PathBuf, std::sync::Arc<Path>, String)>,
    /// `run --generated --learn`: what the stream learnt from its cases' results.
    learn: Option<Lagged>,
}

impl Generator {
    /// `count` cases from `seed`, with expectations from the reference under `profile`.
    pub fn new(seed: u64, count: u64, profile: &Profile) -> Result<Generator, GenError> {
        if count > MAX_GENERATED {
            return Err(GenError {
                name: format!("{count} cases"),
                message: format!("at most {MAX_GENERATED} generated cases per command"),
            });
        }
        Ok(Generator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
            next: 0,
            count,
            profile: std::sync::Arc::new(profile.clone()),
            cite: format!(
                "generated (atomcts gen --seed {seed}); expectation from the reference model, profile {}",
                profile.name
            ),
            files: Vec::new(),
            learn: None,
        })
    }

    /// The stream passes over drafts of shapes its cases were only answered not applicable for
    /// ([`Lagged`]; `run --generated N --learn`): the results of the cases made must be given
    /// back, in order ([`Generator::give`]).
    pub fn learning(mut self) -> Generator {
        self.learn = Some(Lagged::default());
        self
    }

    /// Whether the next draft can be drawn now: the stream is at its end, does not learn, or
    /// has the results it learns from ([`Lagged::ready`]).
    pub fn ready(&self) -> bool {
        self.next >= self.count || self.learn.as_ref().is_none_or(|l| l.ready(self.next))
    }

    /// The results of the next cases made, in the order they were made ([`Lagged::give`]);
    /// nothing when the stream does not learn.
    pub fn give(&mut self, results: impl IntoIterator<Item = Option<bool>>) {
        if let Some(l) = &mut self.learn {
            l.give(results);
        }
    }

    /// Drafts passed over so far, and the shapes now passed over (`None`: not learning).
    pub fn passed_over(&self) -> Option<(u64, usize)> {
        self.learn
            .as_ref()
            .map(|l| (l.passed_over(), l.passed_over_shapes()))
    }

    /// The next chunk as tables per dialect, or `None` at the end.
    fn next_tables(&mut self, n: u64) -> Option<Result<BTreeMap<Dialect, Vec<Table>>, GenError>> {
        if self.next >= self.count {
            return None;
        }
        let end = (self.next + n).min(self.count);
        let mut per: BTreeMap<Dialect, Vec<Table>> = BTreeMap::new();
        let seed = self.seed;
        for k in self.next..end {
            let gc = gen_case(&mut self.rng);
            let name = format!("gen_{seed}_{k}");
            match case_table(&name, &self.cite, &gc, &self.profile) {
                Ok(t) => per.entry(gc.dialect).or_default().push(t),
                Err(message) => return Some(Err(GenError { name, message })),
            }
        }
        self.next = end;
        Some(Ok(per))
    }

    fn header(&self) -> String {
        format!(
            "Generated by `atomcts gen --seed {} --count {} --profile {}`: random instructions over\nedge-biased states; expectations come from the reference model, not from the documents.",
            self.seed, self.count, self.profile.name
        )
    }
}

impl Generator {
    /// The next generated case with its expectation: a case (no text) with what the generator
    /// made for it, or `None` at the end. Its state is built and the reference run once, here:
    /// they come with the case ([`Prebuilt`]) so that a run under the same profile reuses them.
    pub fn next_case(&mut self) -> Option<Result<GeneratedCase, GenError>> {
        let drawn = self.draw()?;
        Some(self.make(drawn))
    }

    /// The random part of the next case: its draft and id, or `None` at the end. Only this
    /// step reads the random stream, so the cases' order and content never depend on how
    /// many threads make them ([`Generator::make`]).
    /// With learning, also `None` when the next draft is not [`Generator::ready`], and drafts
    /// passed over are drawn and dropped here.
    fn draw(&mut self) -> Option<Drawn> {
        let (k, draft) = loop {
            if !self.ready() || self.next >= self.count {
                return None;
            }
            let k = self.next;
            self.next += 1;
            let draft = gen_draft(&mut self.rng);
            if let Some(l) = &mut self.learn
                && l.pass_over(k, &draft)
            {
                continue;
            }
            break (k, draft);
        };
        let seed = self.seed;
        // `generated/seed<seed>/<dialect>.toml`, made once per dialect, and the id in it.
        let d = draft.dialect;
        let slot = match self.files.iter().position(|(x, ..)| *x == d) {
            Some(i) => i,
            None => {
                let file = format!("generated/seed{seed}/{}.toml", d.name());
                let prefix = format!("generated/seed{seed}/{}::gen_{seed}_", d.name());
                let path = std::path::PathBuf::from(file);
                let at: std::sync::Arc<Path> = path.as_path().into();
                self.files.push((d, path, at, prefix));
                self.files.len() - 1
            }
        };
        let (_, file, at, prefix) = &self.files[slot];
        let mut id = String::with_capacity(prefix.len() + 20);
        id.push_str(prefix);
        let _ = write!(id, "{k}");
        Some(Drawn {
            k,
            draft,
            file: file.clone(),
            at: at.clone(),
            id,
        })
    }

    /// The rest of a drawn case, with no randomness: its state built and the reference run.
    fn make(&self, drawn: Drawn) -> Result<GeneratedCase, GenError> {
        make(self.seed, &self.profile, &self.cite, drawn)
    }

    /// The random parts of the next `n` cases ([`Generator::draw`]); empty at the end.
    pub fn draw_block(&mut self, n: usize) -> Vec<Drawn> {
        std::iter::from_fn(|| self.draw()).take(n).collect()
    }

    /// Cases not generated yet.
    pub fn remaining(&self) -> u64 {
        self.count - self.next
    }

    /// What makes drawn cases ([`Maker::make`]), for other threads.
    pub fn maker(&self) -> Maker {
        Maker {
            seed: self.seed,
            profile: self.profile.clone(),
            cite: self.cite.clone(),
        }
    }
}

/// The part of a [`Generator`] that makes drawn cases: the seed, profile and citation.
#[derive(Clone, Debug)]
pub struct Maker {
    seed: u64,
    profile: std::sync::Arc<Profile>,
    cite: String,
}

impl Maker {
    /// A drawn case made: its state built from the draft and the reference run on it.
    pub fn make(&self, drawn: Drawn) -> Result<GeneratedCase, GenError> {
        make(self.seed, &self.profile, &self.cite, drawn)
    }
}

/// Instruction texts a thread has parsed, by dialect: generated cases repeat few texts (their
/// values are in the state), so a maker parses each once. At most [`MAX_PARSED`] a dialect.
#[derive(Default)]
struct Parsed([HashMap<String, Rc<Result<Program, Rejection>>>; Dialect::ALL.len()]);

/// The most texts [`Parsed`] keeps per dialect; when full, it is emptied.
const MAX_PARSED: usize = 4096;

impl Parsed {
    /// `text` parsed as `dialect` ([`Program::parse`]), parsed the first time.
    fn parse(&mut self, dialect: Dialect, text: &str) -> Rc<Result<Program, Rejection>> {
        let map = &mut self.0[dialect as usize];
        if let Some(p) = map.get(text) {
            return p.clone();
        }
        if map.len() >= MAX_PARSED {
            map.clear();
        }
        let p = Rc::new(Program::parse(dialect, text));
        map.insert(text.to_string(), p.clone());
        p
    }
}

thread_local! {
    static PARSED: std::cell::RefCell<Parsed> = std::cell::RefCell::default();
}

/// [`Maker::make`].
fn make(
    seed: u64,
    profile: &std::sync::Arc<Profile>,
    cite: &str,
    drawn: Drawn,
) -> Result<GeneratedCase, GenError> {
    let Drawn {
        k,
        draft,
        file,
        at,
        id,
    } = drawn;
    let name = || format!("gen_{seed}_{k}");
    // The state straight from the generator's values (the loader's state of the same
    // entries: see `crate::fuzzing::draft`).
    let state = draft.state().map_err(|message| GenError {
        name: name(),
        message,
    })?;
    let shell = GenCase {
        dialect: draft.dialect,
        asm: draft.asm.clone(),
        lanes: draft.lanes,
        given: Table::new(),
        concurrent: Vec::new(),
        edge: draft.edge,
    };
    let case = shell.into_case_at(id, file, at, cite.to_string(), None);
    let reference = PARSED
        .with(|p| {
            let parsed = p.borrow_mut().parse(case.dialect, &case.asm);
            program::run_parsed(&parsed, &state, profile)
        })
        .map_err(|e| GenError {
            name: name(),
            message: e.to_string(),
        })?;
    // The expectation is built straight from the outcome when first needed; the table is
    // written only when asked for (`Item::expect_entries`: a run under another profile, a
    // test).
    let made = std::sync::Arc::new(Prebuilt {
        draft,
        profile: profile.clone(),
        state,
        reference,
        expectation: std::sync::OnceLock::new(),
    });
    Ok(GeneratedCase { case, made })
}

impl Iterator for Generator {
    type Item = Result<Vec<GeneratedCase>, GenError>;

    /// The next chunk of at most [`RUN_CHUNK`] cases, in the order they are generated.
    fn next(&mut self) -> Option<Self::Item> {
        self.next_chunk(RUN_CHUNK)
    }
}

impl Generator {
    /// The next chunk of at most `n` cases, in the order they are generated.
    /// Learning, it stops early at a draft that waits for results not given yet
    /// ([`Generator::ready`]), and a chunk that would be empty for it is an error.
    pub fn next_chunk(&mut self, n: usize) -> Option<Result<Vec<GeneratedCase>, GenError>> {
        let mut out = Vec::new();
        while out.len() < n.max(1) {
            match self.next_case() {
                None => break,
                Some(Ok(c)) => out.push(c),
                Some(Err(e)) => return Some(Err(e)),
            }
        }
        if out.is_empty() && !self.ready() {
            return Some(Err(GenError {
                name: format!("gen_{}_{}", self.seed, self.next),
                message: "the learning stream waits for the results of earlier cases, which were not given".into(),
            }));
        }
        (!out.is_empty()).then_some(Ok(out))
    }
}

/// Generates `count` cases from `seed` as [`GeneratedCase`]s, with expectations from the
/// reference under `profile`.
pub fn generate(seed: u64, count: u64, profile: &Profile) -> Result<Vec<GeneratedCase>, GenError> {
    let mut out = Vec::new();
    for chunk in Generator::new(seed, count, profile)? {
        out.extend(chunk?);
    }
    Ok(out)
}

/// The generated files' texts, one per dialect.
pub fn generate_files(
    seed: u64,
    count: u64,
    profile: &Profile,
) -> Result<Vec<(Dialect, String)>, GenError> {
    let mut g = Generator::new(seed, count, profile)?;
    let per = g.next_tables(count).transpose()?.unwrap_or_default();
    let header = g.header();
    per.into_iter()
        .map(|(d, cases)| {
            file_text(d, &header, &cases)
                .map(|t| (d, t))
                .map_err(|message| GenError {
                    name: d.name().into(),
                    message,
                })
        })
        .collect()
}

/// Writes the generated cases to `out/<dialect>.toml`, or, beyond [`CHUNK`] cases, to
/// `out/<dialect>-<part>.toml` files of at most [`CHUNK`] cases each (so every file stays far
/// below the loader's size limit and memory stays bounded); returns the number of cases.
pub fn write(seed: u64, count: u64, profile: &Profile, out: &Path) -> Result<u64, GenError> {
    let io = |e: std::io::Error| GenError {
        name: out.display().to_string(),
        message: e.to_string(),
    };
    let mut g = Generator::new(seed, count, profile)?;
    std::fs::create_dir_all(out).map_err(io)?;
    let header = g.header();
    let split = count > CHUNK;
    let mut part = 0;
    while let Some(per) = g.next_tables(CHUNK) {
        part += 1;
        for (d, cases) in per? {
            let text = file_text(d, &header, &cases).map_err(|message| GenError {
                name: d.name().into(),
                message,
            })?;
            let name = if split {
                format!("{}-{part:04}.toml", d.name())
            } else {
                format!("{}.toml", d.name())
            };
            // A regular file, opened without blocking (issue 27, H9).
            crate::report::output::write("gen --out", &out.join(name), text).map_err(|e| {
                GenError {
                    name: out.display().to_string(),
                    message: e.to_string(),
                }
            })?;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::case::Entries;

    #[test]
    fn a_makers_parsed_texts_are_what_parsing_gives_parsed_once() {
        let mut p = Parsed::default();
        for (d, text) in [
            (Dialect::Sass, "ATOM.E.ADD R0, [R2], R4"),
            (Dialect::Visa, "DWORD_ATOMIC.add (8) T255 V10 V11 V0 V13"),
            (
                Dialect::Msl,
                "r = atomic_fetch_add_explicit(&buf[i], v, memory_order_relaxed)",
            ),
            (Dialect::Sass, "ATOM.E.NOSUCHOP R0, [R2], R4"),
        ] {
            let first = p.parse(d, text);
            assert_eq!(*first, Program::parse(d, text), "{text}");
            assert!(Rc::ptr_eq(&first, &p.parse(d, text)), "{text} parsed twice");
        }
        // A text is parsed as its dialect: the same text in another is another entry.
        let sass = p.parse(Dialect::Sass, "ATOM.E.ADD R0, [R2], R4");
        let visa = p.parse(Dialect::Visa, "ATOM.E.ADD R0, [R2], R4");
        assert!(sass.is_ok() && visa.is_err());
        // Full, it starts again rather than grow.
        for k in 0..=MAX_PARSED {
            p.parse(
                Dialect::Msl,
                &format!("r = atomic_fetch_add_explicit(&buf[{k}], v, memory_order_relaxed)"),
            );
        }
        assert!(p.0.iter().all(|m| m.len() <= MAX_PARSED));
    }
    use crate::corpus::case::entries_of;
    use crate::fuzzing::expect::direct_expectation;
    use atomcts_reference::outcome::Outcome;
    use std::collections::BTreeSet;

    /// What the generator made for `c`.
    fn pre(c: &GeneratedCase) -> &Prebuilt {
        c.made.as_any().downcast_ref().expect("the generator's")
    }

    #[test]
    fn generation_is_reproducible_and_covers_every_dialect() {
        let p = Profile::default();
        let a = generate_files(7, 60, &p).unwrap();
        let b = generate_files(7, 60, &p).unwrap();
        assert_eq!(a, b);
        let c = generate_files(8, 60, &p).unwrap();
        assert_ne!(a, c);
        let dialects: BTreeSet<_> = a.iter().map(|(d, _)| *d).collect();
        assert_eq!(dialects.len(), 3);
    }

    /// The cases built without text are the cases the loader makes from `atomcts gen`'s
    /// files: same ids, instruction, lanes, citation, and given and expected entries.
    #[test]
    fn direct_cases_equal_the_loaded_text() {
        let p = Profile::named("intel-xe").unwrap();
        let direct = generate(11, 400, &p).unwrap();
        let mut loaded = BTreeMap::new();
        for (d, text) in generate_files(11, 400, &p).unwrap() {
            let path = format!("generated/seed11/{}.toml", d.name());
            let l = crate::corpus::case::parse_file(Path::new(""), Path::new(&path), text);
            assert!(l.errors.is_empty(), "{:?}", l.errors);
            for c in l.cases {
                loaded.insert(c.id.clone(), c);
            }
        }
        assert_eq!(loaded.len(), 400);
        let strip = |e: &Entries| -> Vec<(String, Value)> {
            e.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect()
        };
        for g in &direct {
            let c = &g.case;
            let t = &loaded[&c.id];
            assert_eq!(
                (c.dialect, &c.asm, c.lanes, &c.cite),
                (t.dialect, &t.asm, t.lanes, &t.cite)
            );
            // A generated case's state is its draft: its TOML form is the file's `given`.
            assert!(c.given.is_empty());
            let draft = pre(g).draft.gen_case();
            let given = entries_of(draft.given, &c.pos);
            assert_eq!(strip(&given), strip(&t.given), "{}", c.id);
            let (ce, te) = (
                g.item().expect_entries().unwrap(),
                t.expect.as_ref().unwrap(),
            );
            assert_eq!(strip(&ce.0), strip(&te.0), "{}", c.id);
            assert_eq!(
                crate::corpus::state::item_state(g.item()).unwrap(),
                crate::corpus::state::build_state(t).unwrap()
            );
        }
    }

    /// Issue 9: the expectation built straight from the reference's outcome is the one the
    /// table route builds (the table written as `atomcts gen` writes it, then read by
    /// `build_expectation`), error or not, on seeded generated cases under every profile.
    #[test]
    fn direct_expectation_is_the_tables() {
        let mut kinds = BTreeMap::new();
        for (seed, profile) in [
            (1, "default"),
            (2, "intel-xe"),
            (3, "nvidia-ptx"),
            (4, "metal"),
            (5, "spirv"),
        ] {
            let p = Profile::named(profile).unwrap();
            for c in Generator::new(seed, 6000, &p).unwrap() {
                for g in c.unwrap() {
                    let (pre, case) = (pre(&g), &g.case);
                    let (entries, at) = g.item().expect_entries().unwrap().into_owned();
                    let table =
                        crate::corpus::build::build_expectation(case, &pre.state, &entries, &at);
                    let direct = direct_expectation(
                        case,
                        &pre.state,
                        &pre.reference.outcome,
                        pre.reference.lowered.as_ref(),
                    );
                    assert_eq!(
                        format!("{:?}", direct),
                        format!("{:?}", table.as_ref().ok()),
                        "{}: {entries:?}",
                        case.id
                    );
                    assert_eq!(
                        format!("{:?}", g.item().generated_expectation()),
                        format!("{:?}", table.as_ref().ok())
                    );
                    let kind = table.as_ref().map_or("error", |e| e.kind());
                    *kinds.entry(kind).or_insert(0) += 1;
                }
            }
        }
        // Every kind of expectation occurs, completed ones most.
        assert!(
            ["completed", "fault", "invalid"]
                .iter()
                .all(|k| kinds.contains_key(k)),
            "{kinds:?}"
        );
        assert!(kinds["completed"] > 10_000, "{kinds:?}");
    }

    /// What `run::prepare` and the op label rely on to decide a generated case without building
    /// its expectation (issue 31): under every named profile, the expectation builds, and what
    /// it says of the case (not applicable on a semantic-level implementation and why; a
    /// rejection's label) is what the reference's outcome says.
    #[test]
    fn generated_outcomes_say_what_their_expectations_say() {
        use crate::run::prepare::{outcome_not_applicable, semantic_not_applicable};
        let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
        for (seed, (name, _, _)) in atomcts_reference::knobs::PROFILES.iter().enumerate() {
            let p = Profile::named(name).unwrap();
            for c in Generator::new(seed as u64 + 101, 3000, &p).unwrap() {
                for g in c.unwrap() {
                    let (pre, case) = (pre(&g), &g.case);
                    let e = direct_expectation(
                        case,
                        &pre.state,
                        &pre.reference.outcome,
                        pre.reference.lowered.as_ref(),
                    )
                    .unwrap_or_else(|| panic!("{name} {}: no expectation", case.id));
                    *kinds.entry(e.kind()).or_default() += 1;
                    assert_eq!(
                        outcome_not_applicable(&pre.reference.outcome),
                        semantic_not_applicable(&e),
                        "{name} {}",
                        case.id
                    );
                    let label = match &e {
                        crate::corpus::expectation::Expectation::Invalid { reason, .. } => {
                            Some(format!("illegal form: {reason}"))
                        }
                        _ => None,
                    };
                    assert_eq!(
                        crate::run::repro::rejection_label(g.item()),
                        label,
                        "{name} {}",
                        case.id
                    );
                }
            }
        }
        for k in ["completed", "fault", "invalid", "unspecified"] {
            assert!(kinds.get(k).is_some_and(|n| *n > 100), "{kinds:?}");
        }
    }

    /// What `run::finish` relies on when it passes a generated case whose observed state is bit
    /// for bit the reference's own without checking it again (issue 9): under every named
    /// profile, the expectation made from a completed outcome accepts that outcome's state, and
    /// the reference's judge passes it (never undecided, never failed).
    #[test]
    fn generated_expectations_pass_the_references_own_state() {
        use atomcts_adapters::Observation;
        use atomcts_reference::check::{Judgement, judge};
        let mut completed = 0;
        for (seed, (name, _, _)) in atomcts_reference::knobs::PROFILES.iter().enumerate() {
            let p = Profile::named(name).unwrap();
            for c in Generator::new(seed as u64 + 11, 3000, &p).unwrap() {
                for g in c.unwrap() {
                    let (pre, case) = (pre(&g), &g.case);
                    let Outcome::Completed(rc) = &pre.reference.outcome else {
                        continue;
                    };
                    completed += 1;
                    let e = g.item().generated_expectation().expect("an expectation");
                    let seen = Observation::Completed(rc.state.clone());
                    let visa = case.dialect == Dialect::Visa;
                    let findings = crate::corpus::verify::check(e, &pre.state, &seen, !visa);
                    assert!(findings.is_empty(), "{name} {}: {findings:?}", case.id);
                    let lowered = pre.reference.lowered.as_ref().unwrap();
                    let j = judge(
                        lowered,
                        &pre.state,
                        rc,
                        &rc.state,
                        atomcts_reference::race::DEFAULT_BUDGET,
                    )
                    .unwrap();
                    assert!(matches!(j, Judgement::Pass), "{name} {}: {j:?}", case.id);
                }
            }
        }
        assert!(completed > 10_000, "{completed}");
    }

    #[test]
    fn generated_cases_pass_on_the_reference() {
        use crate::run::results::{Options, Status};
        use crate::run::run_case;
        let p = Profile::default();
        let cases = generate(3, 150, &p).unwrap();
        assert_eq!(cases.len(), 150);
        let opts = Options {
            profile: p,
            race_budget: 100_000,
            cases_arg: String::new(),
            adapter_arg: String::new(),
        };
        let mut kinds = BTreeSet::new();
        for c in &cases {
            let r = run_case(c, &mut atomcts_adapters::ReferenceAdapter, &opts);
            assert_eq!(r.status, Status::Pass, "{} {:?}", c.case.id, r.findings);
            kinds.insert(c.item().expect_entries().map(|e| {
                e.0.iter()
                    .map(|x| x.0.clone())
                    .collect::<Vec<_>>()
                    .join(",")
            }));
        }
        // Faults, rejections and completed outcomes all occur.
        assert!(kinds.len() > 5);
    }
}
