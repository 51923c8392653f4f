//! Evidence about knobs from outside the runs (issue 29, point 4): what a vendor's own tool
//! does with an implementation-defined behaviour where no probe can run, such as the lowering
//! Intel's vISA finalizer prints. One TOML file per source (`docs/evidence/*.toml`, FORMAT in
//! `docs/report-format.md`), read by `atomcts report --evidence` into the ambiguity report's
//! rows. Every knob and option it names must exist; every error names the file, line and
//! column.

use crate::corpus::pos::Source;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toml::Spanned;

/// The largest evidence file read (bytes).
pub const MAX_EVIDENCE_FILE: u64 = 1 << 20;

/// One source's statement about one knob, as the report carries it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KnobEvidence {
    /// Who says it (a tool and its version, how it was run).
    pub source: String,
    /// Where the full evidence is (a committed file).
    pub details: String,
    /// The knob's options the evidence supports (empty: it decides none).
    pub supports: Vec<String>,
    /// Whether the source's own behaviour contradicts its document here.
    pub contradicts_document: bool,
    /// What was seen, in a sentence.
    pub note: String,
}

/// An evidence file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvidenceError(pub String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    source: String,
    details: String,
    #[serde(default)]
    knob: Vec<Spanned<RawKnob>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKnob {
    id: Spanned<String>,
    #[serde(default)]
    supports: Vec<Spanned<String>>,
    #[serde(default)]
    contradicts_document: bool,
    note: Spanned<String>,
}

/// Reads one evidence file: `(knob id, evidence)` in file order.
pub fn read(path: &Path) -> Result<Vec<(String, KnobEvidence)>, EvidenceError> {
    let fail = |m: String| EvidenceError(format!("{}: {m}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > MAX_EVIDENCE_FILE {
        return Err(fail(format!(
            "{} bytes: an evidence file is at most {MAX_EVIDENCE_FILE}",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8: {e}")))?;
    parse(path, text)
}

/// Parses one evidence file's text (`path` names it in messages).
pub fn parse(path: &Path, text: String) -> Result<Vec<(String, KnobEvidence)>, EvidenceError> {
    let src = Source::new(path, text);
    let at = |offset: usize, m: String| EvidenceError(format!("{}: {m}", src.pos(offset)));
    let raw: RawFile = toml::from_str(src.text()).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        at(offset, e.message().trim().to_string())
    })?;
    for (what, v) in [("source", &raw.source), ("details", &raw.details)] {
        if v.trim().is_empty() {
            return Err(at(0, format!("`{what}` is empty")));
        }
    }
    let mut out: Vec<(String, KnobEvidence)> = Vec::new();
    for k in raw.knob {
        let kpos = k.span().start;
        let k = k.into_inner();
        let id = k.id.get_ref();
        let Some(info) = atomcts_reference::knobs::knob(id) else {
            return Err(at(k.id.span().start, format!("unknown knob `{id}`")));
        };
        if out.iter().any(|(o, _)| o == id) {
            return Err(at(
                k.id.span().start,
                format!("knob `{id}` is stated twice in one file"),
            ));
        }
        let mut supports = Vec::new();
        for o in &k.supports {
            if !info.options.iter().any(|x| x.name == o.get_ref()) {
                let all: Vec<_> = info.options.iter().map(|x| x.name).collect();
                return Err(at(
                    o.span().start,
                    format!(
                        "knob `{id}` has no option `{}` (options: {})",
                        o.get_ref(),
                        all.join(", ")
                    ),
                ));
            }
            supports.push(o.get_ref().clone());
        }
        if k.note.get_ref().trim().is_empty() {
            return Err(at(kpos, format!("knob `{id}`: `note` is empty")));
        }
        out.push((
            id.clone(),
            KnobEvidence {
                source: raw.source.clone(),
                details: raw.details.clone(),
                supports,
                contradicts_document: k.contradicts_document,
                note: k.note.into_inner(),
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Vec<(String, KnobEvidence)>, String> {
        parse(Path::new("ev.toml"), text.to_string()).map_err(|e| e.0)
    }

    const HEAD: &str = "source = \"a tool 1.0\"\ndetails = \"docs/x.md\"\n";

    #[test]
    fn a_well_formed_file_reads_in_order() {
        let ev = p(&format!(
            "{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\nsupports = [\"accept\"]\ncontradicts_document = true\nnote = \"accepted\"\n[[knob]]\nid = \"visa.misaligned\"\nnote = \"no evidence\"\n"
        ))
        .unwrap();
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].0, "visa.fadd_fsub");
        assert_eq!(ev[0].1.supports, vec!["accept".to_string()]);
        assert!(ev[0].1.contradicts_document);
        assert_eq!(ev[1].0, "visa.misaligned");
        assert!(ev[1].1.supports.is_empty() && !ev[1].1.contradicts_document);
    }

    /// Lies told to the report's evidence input: each is refused with file, line and column.
    #[test]
    fn malformed_evidence_is_refused_with_its_position() {
        let cases = [
            (
                format!("{HEAD}[[knob]]\nid = \"visa.nope\"\nnote = \"x\"\n"),
                "ev.toml:4:6: unknown knob `visa.nope`",
            ),
            (
                format!(
                    "{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\nsupports = [\"maybe\"]\nnote = \"x\"\n"
                ),
                "ev.toml:5:13: knob `visa.fadd_fsub` has no option `maybe`",
            ),
            (
                format!("{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\n"),
                "ev.toml:3:1: missing field `note`",
            ),
            (
                format!("{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\nnote = \" \"\n"),
                "`note` is empty",
            ),
            (
                format!(
                    "{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\nnote = \"a\"\n[[knob]]\nid = \"visa.fadd_fsub\"\nnote = \"b\"\n"
                ),
                "ev.toml:7:6: knob `visa.fadd_fsub` is stated twice",
            ),
            (
                format!(
                    "{HEAD}[[knob]]\nid = \"visa.fadd_fsub\"\nnote = \"a\"\nverdict = \"pass\"\n"
                ),
                "ev.toml:6:1: unknown field `verdict`",
            ),
            (
                "source = \"\"\ndetails = \"d\"\n".to_string(),
                "`source` is empty",
            ),
            ("source = \"s\"\n[[knob\n".to_string(), "ev.toml:2:"),
        ];
        for (text, want) in cases {
            let e = p(&text).expect_err(&text);
            assert!(e.contains(want), "{text:?}\n gave {e:?}\n want {want:?}");
        }
    }

    #[test]
    fn absurd_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("atomcts-ev-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read(&dir).unwrap_err().0;
        assert!(e.contains("not a regular file"), "{e}");
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_EVIDENCE_FILE as usize + 1]).unwrap();
        assert!(read(&big).unwrap_err().0.contains("at most"));
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, [0xff, 0xfe]).unwrap();
        assert!(read(&bad).unwrap_err().0.contains("not UTF-8"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
