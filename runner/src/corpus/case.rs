//! Loading case files: serde structures that reject unknown keys, positions as
//! `file:line:col`, and the validated [`Case`].

use crate::corpus::expectation::Expectation;
use crate::corpus::pos::Pos;
use atomcts_reference::Profile;
use atomcts_reference::program::{self, Dialect};
use atomcts_reference::state::State;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use toml::{Spanned, Value};

/// Converts byte offsets to positions: the line starts are indexed once per file, so each
/// position costs a binary search plus one line's characters (linear loading, issue 7 D1).
#[derive(Clone, Debug)]
pub struct Source {
    /// The file.
    pub file: Arc<Path>,
    text: String,
    line_starts: Vec<usize>,
}

impl Source {
    /// Wraps a file's text.
    pub fn new(file: &Path, text: String) -> Source {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            file: Arc::from(file),
            text,
            line_starts,
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The position of byte offset `at`.
    pub fn pos(&self, at: usize) -> Pos {
        let at = self.text.floor_char_boundary(at.min(self.text.len()));
        let line = self.line_starts.partition_point(|s| *s <= at);
        let start = self.line_starts[line - 1];
        let col = self.text[start..at].chars().count() + 1;
        Pos {
            file: self.file.clone(),
            line,
            col,
        }
    }
}

/// A load or validation error with its position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct LoadError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

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

/// The id prefix of a file: its path below the corpus root, without `.toml`, with `/`.
pub fn id_prefix(root: &Path, file: &Path) -> String {
    let (root_n, file_n) = (normalize(root), normalize(file));
    let rel = if root.as_os_str().is_empty() {
        file
    } else {
        file_n.strip_prefix(&root_n).unwrap_or(file)
    };
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.trim_start_matches("./").to_string()
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
    let prefix = id_prefix(root, file);
    let mut names = BTreeMap::new();
    for c in raw.case {
        let pos = src.pos(c.span().start);
        let c = c.into_inner();
        let name = c.name.get_ref().clone();
        let npos = src.pos(c.name.span().start);
        let mut err = |pos: Pos, message: String| out.errors.push(LoadError { pos, message });
        if name.is_empty()
            || !name
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
        {
            err(npos, format!("case name `{name}` must be [a-z0-9_]+"));
            continue;
        }
        if let Some(first) = names.insert(name.clone(), npos.clone()) {
            err(
                npos,
                format!("duplicate case name `{name}` (first at {first})"),
            );
            continue;
        }
        let Some(cite) = c.cite.clone().or_else(|| raw.cite.clone()) else {
            err(
                npos,
                format!("case `{name}` has no cite and the file has none"),
            );
            continue;
        };
        let lanes = match &c.lanes {
            None => 1,
            Some(l) => match u32::try_from(*l.get_ref()) {
                Ok(n) if (1..=atomcts_reference::state::MAX_LANES).contains(&n) => n,
                _ => {
                    err(
                        src.pos(l.span().start),
                        format!(
                            "lanes = {} is outside 1..={}",
                            l.get_ref(),
                            atomcts_reference::state::MAX_LANES
                        ),
                    );
                    continue;
                }
            },
        };
        let expect = c
            .expect
            .as_ref()
            .map(|e| (entries(&src, e.get_ref()), src.pos(e.span().start)));
        let expect_if: Vec<_> = c
            .expect_if
            .iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.get_ref().clone(),
                    entries(&src, v.get_ref()),
                    src.pos(k.span().start),
                )
            })
            .collect();
        match (&c.probe, &expect, expect_if.is_empty()) {
            (None, None, _) => {
                err(pos, format!("case `{name}` has no expect"));
                continue;
            }
            (None, Some(_), false) => {
                err(pos, format!("case `{name}` has expect_if but no probe"));
                continue;
            }
            (Some(p), _, true) => {
                err(
                    src.pos(p.span().start),
                    format!("probe case `{name}` has no expect_if"),
                );
                continue;
            }
            (Some(p), Some(_), false) => {
                err(
                    src.pos(p.span().start),
                    format!("probe case `{name}` has both expect and expect_if"),
                );
                continue;
            }
            _ => {}
        }
        if let Some(p) = &c.probe {
            let Some(k) = atomcts_reference::knobs::knob(p.get_ref()) else {
                err(
                    src.pos(p.span().start),
                    format!("probe names unknown knob `{}`", p.get_ref()),
                );
                continue;
            };
            if let Some((o, _, opos)) = expect_if
                .iter()
                .find(|(o, _, _)| !k.options.iter().any(|x| x.name == o))
            {
                let opts: Vec<_> = k.options.iter().map(|o| o.name).collect();
                err(
                    opos.clone(),
                    format!(
                        "knob `{}` has no option `{o}` (options: {})",
                        k.id,
                        opts.join(", ")
                    ),
                );
                continue;
            }
        }
        if let Some((k, o)) = c.where_.iter().find(|(k, o)| {
            atomcts_reference::knobs::knob(k)
                .is_none_or(|info| !info.options.iter().any(|x| x.name == o.as_str()))
        }) {
            err(
                pos,
                format!("where names unknown knob or option `{k}` = `{o}`"),
            );
            continue;
        }
        let mut encoding = None;
        if let Some(e) = &c.encoding {
            let (r, epos) = (e.get_ref(), src.pos(e.span().start));
            let st = atomcts_reference::visa::encoding::Stated {
                op: r.op,
                exec_size: r.exec_size,
                surface: r.surface,
                channels: r.channels,
            };
            let visa_fields = st != atomcts_reference::visa::encoding::Stated::default();
            let stated = match (dialect, &r.word) {
                (Dialect::Sass, Some(w)) if !visa_fields => {
                    parse_word(w).map(Encoding::Sass).ok_or_else(|| {
                        format!(
                            "case `{name}`: `encoding.word` = `{w}` is not `0x` and 16 hex digits"
                        )
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
            };
            match stated {
                Ok(s) => encoding = Some((s, epos)),
                Err(m) => {
                    err(epos, m);
                    continue;
                }
            }
        }
        // A capability nobody knows is a typo: an input error, never a silent skip (D11).
        if let Some(cap) = c
            .requires
            .iter()
            .find(|r| !atomcts_adapters::CAPABILITIES.contains(&r.as_str()))
        {
            err(
                pos,
                format!(
                    "requires names unknown capability `{cap}` (capabilities: {})",
                    atomcts_adapters::CAPABILITIES.join(", ")
                ),
            );
            continue;
        }
        let mut concurrent = Vec::new();
        let asm = match (&c.asm, c.concurrent.is_empty()) {
            (Some(a), true) => (a.get_ref().clone(), src.pos(a.span().start)),
            (None, true) => {
                err(
                    pos,
                    format!("case `{name}` has no asm (nor [[case.concurrent]])"),
                );
                continue;
            }
            (Some(a), false) => {
                err(
                    src.pos(a.span().start),
                    format!(
                        "concurrent case `{name}` has a case-level asm: each [[case.concurrent]] has its own"
                    ),
                );
                continue;
            }
            (None, false) => {
                if c.lanes.is_some() || c.probe.is_some() {
                    err(
                        pos,
                        format!(
                            "concurrent case `{name}`: lanes and probe belong to single-instruction cases (each [[case.concurrent]] has its own lanes)"
                        ),
                    );
                    continue;
                }
                let mut bad = false;
                for ri in &c.concurrent {
                    let ipos = src.pos(ri.span().start);
                    let ri = ri.get_ref();
                    let lanes = match &ri.lanes {
                        None => Some(1),
                        Some(l) => u32::try_from(*l.get_ref())
                            .ok()
                            .filter(|n| (1..=atomcts_reference::state::MAX_LANES).contains(n))
                            .or_else(|| {
                                err(
                                    src.pos(l.span().start),
                                    format!(
                                        "lanes = {} is outside 1..={}",
                                        l.get_ref(),
                                        atomcts_reference::state::MAX_LANES
                                    ),
                                );
                                None
                            }),
                    };
                    let max_it = atomcts_reference::concurrent::MAX_ITERATIONS;
                    let iterations = match &ri.iterations {
                        None => Some(1),
                        Some(l) => u32::try_from(*l.get_ref())
                            .ok()
                            .filter(|n| (1..=max_it).contains(n))
                            .or_else(|| {
                                err(
                                    src.pos(l.span().start),
                                    format!("iterations = {} is outside 1..={max_it}", l.get_ref()),
                                );
                                None
                            }),
                    };
                    let cas_loop = match &ri.cas_loop {
                        None => Some(None),
                        Some(l) => match parse_loop(l.get_ref()) {
                            Ok(lp) => Some(Some((lp, src.pos(l.span().start)))),
                            Err((at, why)) => {
                                err(src.pos(at), why);
                                None
                            }
                        },
                    };
                    let (Some(lanes), Some(iterations), Some(cas_loop)) =
                        (lanes, iterations, cas_loop)
                    else {
                        bad = true;
                        continue;
                    };
                    concurrent.push(ConcurrentInstr {
                        asm: ri.asm.get_ref().clone(),
                        asm_pos: src.pos(ri.asm.span().start),
                        pos: ipos,
                        lanes,
                        iterations,
                        given: entries(&src, &ri.given),
                        expect: ri
                            .expect
                            .as_ref()
                            .map(|e| (entries(&src, e.get_ref()), src.pos(e.span().start))),
                        cas_loop,
                    });
                }
                if bad {
                    continue;
                }
                let text: Vec<&str> = concurrent.iter().map(|i| i.asm.as_str()).collect();
                (text.join(" || "), concurrent[0].asm_pos.clone())
            }
        };
        out.cases.push(Case {
            id: format!("{prefix}::{name}"),
            file: file.to_path_buf(),
            dialect,
            asm: asm.0,
            asm_pos: asm.1,
            pos,
            cite,
            lanes,
            given: entries(&src, &c.given),
            expect,
            requires: c.requires,
            where_: c.where_,
            tags: c.tags,
            probe: c.probe.map(|p| p.into_inner()),
            expect_if,
            encoding,
            concurrent,
        });
    }
    out
}

/// The largest case file read (bytes), checked before reading: parsing costs about 70 times a
/// file's size in memory, so this bounds loading one file to about 600 MiB (issue 7, D9).
pub const MAX_CASE_FILE: u64 = 8 << 20;

fn io_error(file: &Path, message: String) -> LoadError {
    LoadError {
        pos: Pos {
            file: Arc::from(file),
            line: 0,
            col: 0,
        },
        message,
    }
}

/// Whether a file name claims to be a case file in a spelling the loader does not read
/// (`case.TOML`, `case.tml`): reported, never silently ignored.
fn misspelt_case_file(p: &Path) -> bool {
    p.extension().is_some_and(|x| {
        x != "toml" && (x.eq_ignore_ascii_case("toml") || x.eq_ignore_ascii_case("tml"))
    })
}

/// The `.toml` files below `path` (or `path` itself), sorted, each once, and the problems met
/// on the way, each naming its own path: a directory that cannot be read, a symbolic link that
/// loops back to a directory already walked, a case file that is not a regular file (a FIFO, a
/// device) or is too large, a misspelt extension. Nothing is followed twice, so symlink cycles
/// end (issue 7, D8).
pub fn discover(path: &Path) -> (Vec<PathBuf>, Vec<LoadError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut seen_dirs = std::collections::BTreeSet::new();
    let mut seen_files = std::collections::BTreeSet::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = match std::fs::metadata(&p) {
            Ok(m) => m,
            Err(e) => {
                errors.push(io_error(&p, format!("cannot read: {e}")));
                continue;
            }
        };
        let id = file_id(&p, &meta);
        if meta.is_dir() {
            if !seen_dirs.insert(id) {
                errors.push(io_error(
                    &p,
                    "directory already walked (a symbolic link loops back): skipped".into(),
                ));
                continue;
            }
            let entries = match std::fs::read_dir(&p) {
                Ok(e) => e,
                Err(e) => {
                    errors.push(io_error(&p, format!("cannot read directory: {e}")));
                    continue;
                }
            };
            for e in entries {
                match e {
                    Ok(e) => {
                        let c = e.path();
                        let is_dir = std::fs::metadata(&c).is_ok_and(|m| m.is_dir());
                        if is_dir || c.extension().is_some_and(|x| x == "toml") {
                            stack.push(c);
                        } else if misspelt_case_file(&c) {
                            errors.push(io_error(
                                &c,
                                "case files must end in `.toml` (lowercase): not loaded".into(),
                            ));
                        }
                    }
                    Err(e) => errors.push(io_error(&p, format!("cannot read directory: {e}"))),
                }
            }
            continue;
        }
        if !meta.is_file() {
            errors.push(io_error(
                &p,
                "not a regular file (a FIFO, socket or device): not read".into(),
            ));
            continue;
        }
        if meta.len() > MAX_CASE_FILE {
            errors.push(io_error(
                &p,
                format!(
                    "{} bytes: larger than the {MAX_CASE_FILE}-byte limit for one case file; split it",
                    meta.len()
                ),
            ));
            continue;
        }
        if seen_files.insert(id) {
            files.push(p);
        }
    }
    files.sort();
    (files, errors)
}

/// A file's identity: device and inode where there are such, else its path.
fn file_id(p: &Path, meta: &std::fs::Metadata) -> (u64, u64, PathBuf) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = p;
        (meta.dev(), meta.ino(), PathBuf::new())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        (
            0,
            0,
            std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()),
        )
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

/// Reads one case file: at most [`MAX_CASE_FILE`] bytes (even if it grew since it was
/// listed), and UTF-8, else an error at the line and column of the first invalid byte.
pub fn read_case_file(f: &Path) -> Result<String, LoadError> {
    use std::io::Read;
    let file = std::fs::File::open(f).map_err(|e| io_error(f, format!("cannot read: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_CASE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(f, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_CASE_FILE {
        return Err(io_error(
            f,
            format!("larger than the {MAX_CASE_FILE}-byte limit for one case file; split it"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let ok = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let prefix = String::from_utf8_lossy(&bytes[..ok]).into_owned();
        let mut pos = Source::new(f, prefix).pos(ok);
        pos.line = pos.line.max(1);
        LoadError {
            pos,
            message: format!(
                "invalid UTF-8 (byte {:#04x}): case files are UTF-8",
                bytes[ok]
            ),
        }
    })
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

/// `p` made absolute (against the current directory) with `.` and `..` resolved by text, so
/// that every spelling of one path agrees; symbolic links are left as they are.
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The folder a case file's id is relative to (issue 7, D22: ids do not depend on how
/// `--cases` is spelt or which subfolder is run): the nearest ancestor named `spec-cases`;
/// else the parent of the nearest ancestor named after a dialect (`sass`, `visa`, `msl`); else
/// the folder given to `--cases` (or the file's own folder).
pub fn id_root(file: &Path, given: &Path) -> PathBuf {
    let f = normalize(file);
    let mut dialect_dir = None;
    for a in f.ancestors().skip(1) {
        match a.file_name().and_then(|n| n.to_str()) {
            Some("spec-cases") => return a.to_path_buf(),
            Some(n) if dialect_dir.is_none() && Dialect::from_name(n).is_some() => {
                dialect_dir = a.parent().map(Path::to_path_buf)
            }
            _ => {}
        }
    }
    if let Some(d) = dialect_dir {
        return d;
    }
    let g = normalize(given);
    if g == f {
        g.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        g
    }
}

/// The corpus root of a path: the nearest ancestor named `spec-cases`, else the path itself.
/// Ids are relative to it, so a case keeps its id whichever subfolder is run.
pub fn corpus_root(p: &Path) -> PathBuf {
    let mut cur = Some(p);
    while let Some(c) = cur {
        if c.file_name().is_some_and(|n| n == "spec-cases") {
            return c.to_path_buf();
        }
        cur = c.parent();
    }
    p.to_path_buf()
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
