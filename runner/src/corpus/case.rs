//! Loading case files: serde structures that reject unknown keys, positions as
//! `file:line:col`, and the validated [`Case`].

use crate::corpus::expectation::Expectation;
use crate::corpus::files::{discover, id_prefix, id_root, read_case_file};
pub use crate::corpus::pos::LoadError;
use crate::corpus::pos::{Pos, Source};
use atomcts_reference::Profile;
use atomcts_reference::program::{self, Dialect};
use atomcts_reference::state::State;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::{Spanned, Value};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    dialect: Spanned<String>,
    #[serde(default)]
    cite: Option<String>,
    #[serde(default)]
    case: Vec<Spanned<RawCase>>,
}

/// A table of location names to values, with spans.
pub type RawTable = BTreeMap<Spanned<String>, Spanned<Value>>;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: Spanned<String>,
    #[serde(default)]
    asm: Option<Spanned<String>>,
    #[serde(default)]
    cite: Option<String>,
    #[serde(default)]
    lanes: Option<Spanned<i64>>,
    #[serde(default)]
    given: RawTable,
    #[serde(default)]
    expect: Option<Spanned<RawTable>>,
    #[serde(default)]
    requires: Vec<String>,
    #[serde(default, rename = "where")]
    where_: BTreeMap<String, String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    probe: Option<Spanned<String>>,
    #[serde(default)]
    expect_if: Option<BTreeMap<Spanned<String>, Spanned<RawTable>>>,
    #[serde(default)]
    encoding: Option<Spanned<RawEncoding>>,
    #[serde(default)]
    concurrent: Vec<Spanned<RawInstr>>,
}

/// **(v1)** `encoding`: the vISA byte fields, or the SASS instruction word, of the case's
/// instruction (FORMAT.md).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEncoding {
    /// SASS: the SPA 5.0 instruction word, `"0x"` and 16 hex digits (a TOML integer holds
    /// only 63 bits).
    #[serde(default)]
    word: Option<String>,
    #[serde(default)]
    op: Option<u8>,
    #[serde(default)]
    exec_size: Option<u8>,
    #[serde(default)]
    surface: Option<u8>,
    #[serde(default)]
    channels: Option<u8>,
}

/// **(v1)** What a case's `encoding` states (FORMAT.md "Encodings").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// vISA byte fields.
    Visa(atomcts_reference::visa::encoding::Stated),
    /// The SASS SPA 5.0 instruction word.
    Sass(u64),
}

/// `"0x"` and exactly 16 hex digits.
fn parse_word(w: &str) -> Option<u64> {
    let hex = w.strip_prefix("0x")?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// One instruction of a concurrent case as written (`[[case.concurrent]]`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstr {
    asm: Spanned<String>,
    #[serde(default)]
    lanes: Option<Spanned<i64>>,
    #[serde(default)]
    iterations: Option<Spanned<i64>>,
    #[serde(default)]
    given: RawTable,
    #[serde(default)]
    expect: Option<Spanned<RawTable>>,
    #[serde(default)]
    cas_loop: Option<Spanned<RawLoop>>,
}

/// `cas_loop = { update = "add", operand = 1 }` of a concurrent instruction.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoop {
    update: Spanned<String>,
    operand: Spanned<Value>,
}

/// One instruction of a concurrent case (FORMAT.md, "Concurrent cases"): its own lanes and
/// registers, run `iterations` times in a loop, at the same time as the others.
#[derive(Clone, Debug)]
pub struct ConcurrentInstr {
    /// The instruction text.
    pub asm: String,
    /// Where `asm` starts.
    pub asm_pos: Pos,
    /// Where the instruction's table starts.
    pub pos: Pos,
    /// Lanes (default 1).
    pub lanes: u32,
    /// Iterations (default 1).
    pub iterations: u32,
    /// Its own registers and operands.
    pub given: Entries,
    /// Expected registers after its last iteration, if any.
    pub expect: Option<(Entries, Pos)>,
    /// **(v1)** Its compare-and-swap loop, if any, and where it is written (FORMAT.md,
    /// "Compare-and-swap loops").
    pub cas_loop: Option<(atomcts_reference::concurrent::CasLoop, Pos)>,
}

/// Entries of a `given` or `expect` table: key, value, position of the key.
pub type Entries = Vec<(String, Value, Pos)>;

/// A case as written, with positions, before its state and expectations are interpreted
/// (that happens per profile in [`crate::corpus::build`]).
#[derive(Clone, Debug)]
pub struct Case {
    /// `<path below spec-cases without .toml>::<name>`.
    pub id: String,
    /// The file's path as given.
    pub file: PathBuf,
    /// The dialect.
    pub dialect: Dialect,
    /// The instruction text.
    pub asm: String,
    /// Where `asm` starts.
    pub asm_pos: Pos,
    /// Where the case starts.
    pub pos: Pos,
    /// The citation.
    pub cite: String,
    /// Lanes (default 1).
    pub lanes: u32,
    /// Initial state as written (empty for a generated case: see [`GeneratedCase`]).
    pub given: Entries,
    /// Expectation as written, if not a probe.
    pub expect: Option<(Entries, Pos)>,
    /// Capabilities needed.
    pub requires: Vec<String>,
    /// Knob options the case applies under.
    pub where_: BTreeMap<String, String>,
    /// Tags.
    pub tags: Vec<String>,
    /// The knob a probe case probes.
    pub probe: Option<String>,
    /// Per-option expectations of a probe.
    pub expect_if: Vec<(String, Entries, Pos)>,
    /// **(v1)** The encoding the case states beside its text, and where.
    pub encoding: Option<(Encoding, Pos)>,
    /// For a concurrent case: its instructions (then `asm` joins their texts with ` || `,
    /// `given` holds the shared memory and `expect` the final shared memory).
    pub concurrent: Vec<ConcurrentInstr>,
}

/// What the generator already made for a generated case (issue 9), as the corpus and the runner
/// see it: the generator (`crate::fuzzing::expect::Prebuilt`) implements it, so that nothing
/// below the fuzzing layer knows the generator. A [`GeneratedCase`] holds it beside its case,
/// whose `given` stays empty: its state comes from here.
pub trait Generated: fmt::Debug + Send + Sync {
    /// The initial state built from the generator's values (a run under any profile).
    fn build_state(&self) -> Result<State, String>;
    /// The profile the reference ran under.
    fn profile(&self) -> &Profile;
    /// The initial state (as [`Generated::build_state`] builds it).
    fn state(&self) -> &State;
    /// The reference's run under [`Generated::profile`].
    fn reference(&self) -> &program::Run;
    /// The expectation under [`Generated::profile`], built from the reference's outcome on
    /// first use; `None` where the `expect` table would give an error.
    fn expectation(&self, case: &Case) -> Option<&Expectation>;
    /// The `expect` table of the reference's outcome, as `atomcts gen` writes it.
    fn expect_table(&self, dialect: Dialect) -> toml::Table;
    /// The generator's own type, for its tests.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Entries of a table as the loader makes them, every one at `pos`.
pub fn entries_of(t: toml::Table, pos: &Pos) -> Entries {
    t.into_iter().map(|(k, v)| (k, v, pos.clone())).collect()
}

/// A generated case (issue 9): the case (its `given` empty) and what the generator made for it
/// (its state, expectation and reference run, made once from the same entries, so a run
/// neither rebuilds nor reruns them).
#[derive(Clone, Debug)]
pub struct GeneratedCase {
    /// The case.
    pub case: Case,
    /// What the generator made for it.
    pub made: Arc<dyn Generated>,
}

impl GeneratedCase {
    /// The case as the runner takes it.
    pub fn item(&self) -> Item<'_> {
        Item::Generated(&self.case, &*self.made)
    }
}

/// A case as the runner takes it: a loaded case, or a generated case with what the generator
/// made for it (the small interface through which a generated case reaches the runner).
#[derive(Clone, Copy, Debug)]
pub enum Item<'c> {
    /// A case loaded from a file (or built from one's entries).
    Loaded(&'c Case),
    /// A generated case and what the generator made for it.
    Generated(&'c Case, &'c dyn Generated),
}

impl<'c> From<&'c Case> for Item<'c> {
    fn from(case: &'c Case) -> Item<'c> {
        Item::Loaded(case)
    }
}

impl<'c> From<&'c GeneratedCase> for Item<'c> {
    fn from(g: &'c GeneratedCase) -> Item<'c> {
        g.item()
    }
}

impl<'c> Item<'c> {
    /// The case.
    pub fn case(self) -> &'c Case {
        match self {
            Item::Loaded(c) | Item::Generated(c, _) => c,
        }
    }

    /// What the generator made, for a generated case.
    pub fn generated(self) -> Option<&'c dyn Generated> {
        match self {
            Item::Loaded(_) => None,
            Item::Generated(_, g) => Some(g),
        }
    }

    /// A generated case's expectation under the generator's profile, built from the reference's
    /// outcome on first use (issue 9); `None` for a case the generator did not make, or where
    /// the `expect` table would give an error.
    pub fn generated_expectation(self) -> Option<&'c Expectation> {
        self.generated()?.expectation(self.case())
    }

    /// The case's `expect` entries: as written, or for a generated case (whose table is not
    /// written while it is generated, issue 9) the table of the reference's outcome under the
    /// generator's profile, as `atomcts gen` writes it.
    pub fn expect_entries(self) -> Option<Cow<'c, (Entries, Pos)>> {
        let case = self.case();
        if let Some(e) = &case.expect {
            return Some(Cow::Borrowed(e));
        }
        let t = self.generated()?.expect_table(case.dialect);
        Some(Cow::Owned((entries_of(t, &case.pos), case.pos.clone())))
    }
}

impl Case {
    /// Whether this is a concurrent case.
    pub fn is_concurrent(&self) -> bool {
        !self.concurrent.is_empty()
    }
}

/// The result of loading one file: its cases, or errors (a file that does not parse yields no
/// cases; one bad case does not stop the others).
#[derive(Debug, Default)]
pub struct Loaded {
    /// Valid cases.
    pub cases: Vec<Case>,
    /// Errors with positions.
    pub errors: Vec<LoadError>,
}

fn entries(src: &Source, t: &RawTable) -> Vec<(String, Value, Pos)> {
    t.iter()
        .map(|(k, v)| {
            (
                k.get_ref().clone(),
                v.get_ref().clone(),
                src.pos(k.span().start),
            )
        })
        .collect()
}

/// Parses one file's text.
pub fn parse_file(root: &Path, file: &Path, text: String) -> Loaded {
    let src = Source::new(file, text);
    let mut out = Loaded::default();
    let raw: RawFile = match toml::from_str(src.text()) {
        Ok(r) => r,
        Err(e) => {
            out.errors.push(toml_error(&src, &e));
            return out;
        }
    };
    let Some(dialect) = Dialect::from_name(raw.dialect.get_ref()) else {
        out.errors.push(LoadError {
            pos: src.pos(raw.dialect.span().start),
            message: format!(
                "unknown dialect `{}` (sass, visa, msl)",
                raw.dialect.get_ref()
            ),
        });
        return out;
    };
    let cx = FileCx {
        src: &src,
        dialect,
        prefix: id_prefix(root, file),
        file,
        cite: raw.cite,
    };
    let mut names = BTreeMap::new();
    for c in raw.case {
        match cx.case(c, &mut names, &mut out.errors) {
            Ok(case) => out.cases.push(case),
            Err(Some(e)) => out.errors.push(e),
            Err(None) => {}
        }
    }
    out
}

/// What every case of one file shares while it is read.
struct FileCx<'a> {
    src: &'a Source,
    dialect: Dialect,
    prefix: String,
    file: &'a Path,
    cite: Option<String>,
}

/// A case that is not loaded: its error, or `None` when its errors are already reported.
type Rejected = Option<LoadError>;

fn reject<T>(pos: Pos, message: String) -> Result<T, Rejected> {
    Err(Some(LoadError { pos, message }))
}

impl FileCx<'_> {
    fn pos<T>(&self, s: &Spanned<T>) -> Pos {
        self.src.pos(s.span().start)
    }

    /// One `[[case]]`, checked in the order FORMAT.md describes its keys.
    fn case(
        &self,
        c: Spanned<RawCase>,
        names: &mut BTreeMap<String, Pos>,
        errors: &mut Vec<LoadError>,
    ) -> Result<Case, Rejected> {
        let pos = self.pos(&c);
        let c = c.into_inner();
        let name = c.name.get_ref().clone();
        let npos = self.pos(&c.name);
        if name.is_empty()
            || !name
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
        {
            return reject(npos, format!("case name `{name}` must be [a-z0-9_]+"));
        }
        if let Some(first) = names.insert(name.clone(), npos.clone()) {
            return reject(
                npos,
                format!("duplicate case name `{name}` (first at {first})"),
            );
        }
        let Some(cite) = c.cite.clone().or_else(|| self.cite.clone()) else {
            return reject(
                npos,
                format!("case `{name}` has no cite and the file has none"),
            );
        };
        let lanes = self.lanes(&c.lanes)?;
        let expect = c
            .expect
            .as_ref()
            .map(|e| (entries(self.src, e.get_ref()), self.pos(e)));
        let expect_if: Vec<_> = c
            .expect_if
            .iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.get_ref().clone(),
                    entries(self.src, v.get_ref()),
                    self.pos(k),
                )
            })
            .collect();
        self.check_expects(&c, &name, &pos, expect.is_some(), &expect_if)?;
        self.check_knobs(&c, &pos, &expect_if)?;
        let encoding = match &c.encoding {
            Some(e) => Some((
                self.encoding(e.get_ref(), &name)
                    .or_else(|m| reject(self.pos(e), m))?,
                self.pos(e),
            )),
            None => None,
        };
        // A capability nobody knows is a typo: an input error, never a silent skip (D11).
        if let Some(cap) = c
            .requires
            .iter()
            .find(|r| !atomcts_adapters::CAPABILITIES.contains(&r.as_str()))
        {
            return reject(
                pos,
                format!(
                    "requires names unknown capability `{cap}` (capabilities: {})",
                    atomcts_adapters::CAPABILITIES.join(", ")
                ),
            );
        }
        let (asm, asm_pos, concurrent) = match (&c.asm, c.concurrent.is_empty()) {
            (Some(a), true) => (a.get_ref().clone(), self.pos(a), Vec::new()),
            (None, true) => {
                return reject(
                    pos,
                    format!("case `{name}` has no asm (nor [[case.concurrent]])"),
                );
            }
            (Some(a), false) => {
                return reject(
                    self.pos(a),
                    format!(
                        "concurrent case `{name}` has a case-level asm: each [[case.concurrent]] has its own"
                    ),
                );
            }
            (None, false) => {
                if c.lanes.is_some() || c.probe.is_some() {
                    return reject(
                        pos,
                        format!(
                            "concurrent case `{name}`: lanes and probe belong to single-instruction cases (each [[case.concurrent]] has its own lanes)"
                        ),
                    );
                }
                let concurrent = self.concurrent(&c.concurrent, errors)?;
                let text: Vec<&str> = concurrent.iter().map(|i| i.asm.as_str()).collect();
                (text.join(" || "), concurrent[0].asm_pos.clone(), concurrent)
            }
        };
        Ok(Case {
            id: format!("{}::{name}", self.prefix),
            file: self.file.to_path_buf(),
            dialect: self.dialect,
            asm,
            asm_pos,
            pos,
            cite,
            lanes,
            given: entries(self.src, &c.given),
            expect,
            requires: c.requires,
            where_: c.where_,
            tags: c.tags,
            probe: c.probe.map(|p| p.into_inner()),
            expect_if,
            encoding,
            concurrent,
        })
    }

    /// `lanes`: 1 when absent, else within 1..=MAX_LANES.
    fn lanes(&self, l: &Option<Spanned<i64>>) -> Result<u32, Rejected> {
        self.count(l, "lanes", atomcts_reference::state::MAX_LANES)
    }

    /// `iterations`: 1 when absent, else within 1..=MAX_ITERATIONS.
    fn iterations(&self, l: &Option<Spanned<i64>>) -> Result<u32, Rejected> {
        self.count(
            l,
            "iterations",
            atomcts_reference::concurrent::MAX_ITERATIONS,
        )
    }

    /// A count `what`: 1 when absent, else within 1..=max.
    fn count(&self, l: &Option<Spanned<i64>>, what: &str, max: u32) -> Result<u32, Rejected> {
        match l {
            None => Ok(1),
            Some(l) => match u32::try_from(*l.get_ref()) {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => reject(
                    self.pos(l),
                    format!("{what} = {} is outside 1..={max}", l.get_ref()),
                ),
            },
        }
    }

    /// A case has `expect`, or a `probe` with `expect_if`: never both, never neither.
    fn check_expects(
        &self,
        c: &RawCase,
        name: &str,
        pos: &Pos,
        has_expect: bool,
        expect_if: &[(String, Entries, Pos)],
    ) -> Result<(), Rejected> {
        match (&c.probe, has_expect, expect_if.is_empty()) {
            (None, false, _) => reject(pos.clone(), format!("case `{name}` has no expect")),
            (None, true, false) => reject(
                pos.clone(),
                format!("case `{name}` has expect_if but no probe"),
            ),
            (Some(p), _, true) => {
                reject(self.pos(p), format!("probe case `{name}` has no expect_if"))
            }
            (Some(p), true, false) => reject(
                self.pos(p),
                format!("probe case `{name}` has both expect and expect_if"),
            ),
            _ => Ok(()),
        }
    }

    /// A `probe` names a knob and `expect_if` its options; `where` names knobs and options.
    fn check_knobs(
        &self,
        c: &RawCase,
        pos: &Pos,
        expect_if: &[(String, Entries, Pos)],
    ) -> Result<(), Rejected> {
        if let Some(p) = &c.probe {
            let Some(k) = atomcts_reference::knobs::knob(p.get_ref()) else {
                return reject(
                    self.pos(p),
                    format!("probe names unknown knob `{}`", p.get_ref()),
                );
            };
            if let Some((o, _, opos)) = expect_if
                .iter()
                .find(|(o, _, _)| !k.options.iter().any(|x| x.name == o))
            {
                let opts: Vec<_> = k.options.iter().map(|o| o.name).collect();
                return reject(
                    opos.clone(),
                    format!(
                        "knob `{}` has no option `{o}` (options: {})",
                        k.id,
                        opts.join(", ")
                    ),
                );
            }
        }
        if let Some((k, o)) = c.where_.iter().find(|(k, o)| {
            atomcts_reference::knobs::knob(k)
                .is_none_or(|info| !info.options.iter().any(|x| x.name == o.as_str()))
        }) {
            return reject(
                pos.clone(),
                format!("where names unknown knob or option `{k}` = `{o}`"),
            );
        }
        Ok(())
    }

    /// `encoding`: the SASS word, or the vISA byte fields, by the file's dialect.
    fn encoding(&self, r: &RawEncoding, name: &str) -> Result<Encoding, String> {
        let st = atomcts_reference::visa::encoding::Stated {
            op: r.op,
            exec_size: r.exec_size,
            surface: r.surface,
            channels: r.channels,
        };
        let visa_fields = st != atomcts_reference::visa::encoding::Stated::default();
        match (self.dialect, &r.word) {
            (Dialect::Sass, Some(w)) if !visa_fields => {
                parse_word(w).map(Encoding::Sass).ok_or_else(|| {
                    format!("case `{name}`: `encoding.word` = `{w}` is not `0x` and 16 hex digits")
                })
            }
            (Dialect::Sass, _) => Err(format!(
                "case `{name}`: a SASS `encoding` states `word` (the SPA 5.0 instruction word) and nothing else"
            )),
            (Dialect::Visa, None) if visa_fields => Ok(Encoding::Visa(st)),
            (Dialect::Visa, Some(_)) => Err(format!(
                "case `{name}`: `encoding.word` is a SASS field; vISA states op, exec_size, surface, channels"
            )),
            (Dialect::Visa, None) => Err(format!(
                "case `{name}`: `encoding` names no field (op, exec_size, surface, channels)"
            )),
            _ => Err(format!(
                "case `{name}`: `encoding` is for sass and visa cases; this file is not"
            )),
        }
    }

    /// The `[[case.concurrent]]` instructions; every one's errors are reported.
    fn concurrent(
        &self,
        raw: &[Spanned<RawInstr>],
        errors: &mut Vec<LoadError>,
    ) -> Result<Vec<ConcurrentInstr>, Rejected> {
        let mut out = Vec::new();
        let mut bad = false;
        fn note<T>(
            r: Result<T, Rejected>,
            errors: &mut Vec<LoadError>,
            bad: &mut bool,
        ) -> Option<T> {
            r.map_err(|e| {
                errors.extend(e);
                *bad = true;
            })
            .ok()
        }
        for ri in raw {
            let ipos = self.pos(ri);
            let ri = ri.get_ref();
            let lanes = note(self.lanes(&ri.lanes), errors, &mut bad);
            let iterations = note(self.iterations(&ri.iterations), errors, &mut bad);
            let cas_loop = note(
                match &ri.cas_loop {
                    None => Ok(None),
                    Some(l) => match parse_loop(l.get_ref()) {
                        Ok(lp) => Ok(Some((lp, self.pos(l)))),
                        Err((at, why)) => reject(self.src.pos(at), why),
                    },
                },
                errors,
                &mut bad,
            );
            let (Some(lanes), Some(iterations), Some(cas_loop)) = (lanes, iterations, cas_loop)
            else {
                continue;
            };
            out.push(ConcurrentInstr {
                asm: ri.asm.get_ref().clone(),
                asm_pos: self.pos(&ri.asm),
                pos: ipos,
                lanes,
                iterations,
                given: entries(self.src, &ri.given),
                expect: ri
                    .expect
                    .as_ref()
                    .map(|e| (entries(self.src, e.get_ref()), self.pos(e))),
                cas_loop,
            });
        }
        if bad { Err(None) } else { Ok(out) }
    }
}

/// toml's nesting limit: the most parts of a dotted key it reads.
const TOML_MAX_KEY_PARTS: usize = 80;

/// A TOML syntax error at its position. toml reports a dotted key deeper than its nesting limit
/// (`[a.a.a....]`, `a.a.a.... = 1`) without a position (issue 27, H18): that error is placed
/// at the start of the file's longest dotted key and says how many parts it has.
pub fn toml_error(src: &Source, e: &toml::de::Error) -> LoadError {
    let message = e.message().trim().to_string();
    if let Some(span) = e.span() {
        return LoadError {
            pos: src.pos(span.start),
            message,
        };
    }
    match longest_dotted_key(src.text()) {
        Some((at, parts)) if parts > TOML_MAX_KEY_PARTS => LoadError {
            pos: src.pos(at),
            message: format!(
                "a dotted key of {parts} parts: at most {TOML_MAX_KEY_PARTS} nest ({message})"
            ),
        },
        _ => LoadError {
            pos: src.pos(0),
            message,
        },
    }
}

/// The byte offset and the number of parts of the longest dotted key in `text` (keys and
/// table headers alike; a float such as `1.5` reads as two parts, which is never the longest
/// of a file that toml refuses for its nesting).
fn longest_dotted_key(text: &str) -> Option<(usize, usize)> {
    use toml_parser::lexer::TokenKind;
    let mut best: Option<(usize, usize)> = None;
    // The run being read: its start, its parts, and whether a dot is waiting for a part.
    let mut run: Option<(usize, usize)> = None;
    let mut after_dot = false;
    for tok in toml_parser::Source::new(text).lex() {
        match tok.kind() {
            TokenKind::Whitespace => continue,
            TokenKind::Atom | TokenKind::BasicString | TokenKind::LiteralString => {
                run = match run {
                    Some((at, n)) if after_dot => Some((at, n + 1)),
                    _ => Some((tok.span().start(), 1)),
                };
                after_dot = false;
            }
            TokenKind::Dot if run.is_some() && !after_dot => after_dot = true,
            _ => {
                run = None;
                after_dot = false;
            }
        }
        if let Some((at, n)) = run
            && best.is_none_or(|(_, b)| n > b)
        {
            best = Some((at, n));
        }
    }
    best
}

/// Loads every case file below `root` (a directory or one file).
pub fn load(root: &Path) -> Loaded {
    let mut all = Loaded::default();
    let (files, errors) = discover(root);
    all.errors = errors;
    for f in files {
        match read_case_file(&f) {
            Ok(text) => {
                let base = id_root(&f, root);
                let mut l = parse_file(&base, &f, text);
                all.cases.append(&mut l.cases);
                all.errors.append(&mut l.errors);
            }
            Err(e) => all.errors.push(e),
        }
    }
    all
}

/// A `cas_loop` table: `update` one of the loop updates, `operand` a non-negative integer or a
/// `"0x..."` string; on error the byte offset to report and why.
fn parse_loop(l: &RawLoop) -> Result<atomcts_reference::concurrent::CasLoop, (usize, String)> {
    use atomcts_reference::concurrent::{CasLoop, LOOP_UPDATES};
    let names = || {
        LOOP_UPDATES
            .iter()
            .map(|u| u.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let update = atomcts_reference::ir::AtomicOp::from_name(l.update.get_ref())
        .filter(|u| LOOP_UPDATES.contains(u))
        .ok_or_else(|| {
            (
                l.update.span().start,
                format!(
                    "cas_loop update `{}` is not one of {}",
                    l.update.get_ref(),
                    names()
                ),
            )
        })?;
    let bad = || {
        (
            l.operand.span().start,
            "cas_loop operand: expected a non-negative integer or a \"0x...\" string".to_string(),
        )
    };
    let operand = match l.operand.get_ref() {
        Value::Integer(i) => u64::try_from(*i).map_err(|_| bad())?,
        Value::String(s) => s
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(&h.replace('_', ""), 16).ok())
            .ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    Ok(CasLoop { update, operand })
}
