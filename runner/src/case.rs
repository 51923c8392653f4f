//! Loading case files: serde structures that reject unknown keys, positions as
//! `file:line:col`, and the validated [`Case`].

use atomcts_reference::program::Dialect;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

/// A position in a case file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// File path as given.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.col)
    }
}

/// Converts byte offsets to positions.
#[derive(Clone, Debug)]
pub struct Source {
    /// The file.
    pub file: PathBuf,
    text: String,
}

impl Source {
    /// Wraps a file's text.
    pub fn new(file: &Path, text: String) -> Source {
        Source {
            file: file.to_path_buf(),
            text,
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The position of byte offset `at`.
    pub fn pos(&self, at: usize) -> Pos {
        let at = at.min(self.text.len());
        let before = &self.text[..self.text.floor_char_boundary(at)];
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
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
    asm: Spanned<String>,
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
}

/// **(v1)** `encoding`: the vISA byte fields of the case's instruction (FORMAT.md).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEncoding {
    #[serde(default)]
    op: Option<u8>,
    #[serde(default)]
    exec_size: Option<u8>,
    #[serde(default)]
    surface: Option<u8>,
    #[serde(default)]
    channels: Option<u8>,
}

/// Entries of a `given` or `expect` table: key, value, position of the key.
pub type Entries = Vec<(String, Value, Pos)>;

/// A case as written, with positions, before its state and expectations are interpreted
/// (that happens per profile in [`crate::build`]).
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
    /// Initial state as written.
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
    /// **(v1)** The vISA byte fields the case states beside its text, and where.
    pub encoding: Option<(atomcts_reference::visa::encoding::Stated, Pos)>,
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
    let rel = file.strip_prefix(root).unwrap_or(file);
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
            let pos = src.pos(e.span().map_or(0, |s| s.start));
            out.errors.push(LoadError {
                pos,
                message: e.message().trim().to_string(),
            });
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
        let encoding = c.encoding.as_ref().map(|e| {
            let r = e.get_ref();
            (
                atomcts_reference::visa::encoding::Stated {
                    op: r.op,
                    exec_size: r.exec_size,
                    surface: r.surface,
                    channels: r.channels,
                },
                src.pos(e.span().start),
            )
        });
        if let Some((st, epos)) = &encoding {
            if dialect != Dialect::Visa {
                err(
                    epos.clone(),
                    format!(
                        "case `{name}`: `encoding` states vISA byte fields; this file is not visa"
                    ),
                );
                continue;
            }
            if *st == atomcts_reference::visa::encoding::Stated::default() {
                err(
                    epos.clone(),
                    format!(
                        "case `{name}`: `encoding` names no field (op, exec_size, surface, channels)"
                    ),
                );
                continue;
            }
        }
        // A capability no adapter knows is not an input error: like any capability an
        // implementation lacks, it makes the case skip, with the reason in the report.
        out.cases.push(Case {
            id: format!("{prefix}::{name}"),
            file: file.to_path_buf(),
            dialect,
            asm: c.asm.get_ref().clone(),
            asm_pos: src.pos(c.asm.span().start),
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
        });
    }
    out
}

/// Every `.toml` file below `path` (or `path` itself), sorted.
pub fn find_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(out);
    }
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Loads every case file below `root` (a directory or one file).
pub fn load(root: &Path) -> Loaded {
    let mut all = Loaded::default();
    let base = if root.is_file() {
        root.parent().unwrap_or(Path::new(""))
    } else {
        root
    };
    let base = corpus_root(base);
    let files = match find_files(root) {
        Ok(f) => f,
        Err(e) => {
            all.errors.push(LoadError {
                pos: Pos {
                    file: root.to_path_buf(),
                    line: 0,
                    col: 0,
                },
                message: format!("cannot read: {e}"),
            });
            return all;
        }
    };
    for f in files {
        match std::fs::read_to_string(&f) {
            Ok(text) => {
                let mut l = parse_file(&base, &f, text);
                all.cases.append(&mut l.cases);
                all.errors.append(&mut l.errors);
            }
            Err(e) => all.errors.push(LoadError {
                pos: Pos {
                    file: f.clone(),
                    line: 0,
                    col: 0,
                },
                message: format!("cannot read: {e}"),
            }),
        }
    }
    all
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
