//! `atomcts exec`: one instruction on a state given on the command line (`--given`, a TOML
//! inline table). The table is parsed as one TOML value and written into a one-case corpus
//! file by the serializer, never pasted (issue 7, D18); every error about it names its column
//! in the `--given` text (issue 27, H18), also when the case loader or the state builder finds
//! it in the written file.

use crate::corpus::case::{self, Case};
use crate::corpus::pos::Pos;
use atomcts_reference::program::Dialect;
use atomcts_reference::state::State;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;
use toml::de::DeValue;

/// The `--given` text, or the case made from it, is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GivenError(pub String);

/// The case `exec` runs and its initial state: `asm` in `dialect` on `lanes` lanes, from the
/// state `given`.
pub fn case(
    dialect: Dialect,
    asm: &str,
    lanes: u32,
    given: &str,
) -> Result<(Case, State), GivenError> {
    let value = match given.parse::<toml::Value>() {
        Ok(v @ toml::Value::Table(_)) => v,
        Ok(other) => {
            return Err(GivenError(format!(
                "--given: expected an inline table such as '{{ R2 = 0x1000 }}', got a {}",
                other.type_str()
            )));
        }
        Err(e) => {
            let at = e.span().map_or(0, |s| s.start);
            return Err(GivenError(format!(
                "--given `{given}`, {}: {}",
                column(given, at),
                e.message().trim()
            )));
        }
    };
    let head = format!(
        "dialect = {:?}\n[[case]]\nname = \"exec\"\ncite = \"command line\"\nlanes = {lanes}\nasm = {}\n",
        dialect.name(),
        toml::Value::String(asm.to_string()),
    );
    let written = value.to_string();
    let text = format!("{head}given = {written}\nexpect = {{ unspecified = true }}\n");
    // Where the written table starts: its line and the column of its first character.
    let given_line = head.lines().count() + 1;
    let given_col = "given = ".len() + 1;
    let locate = |pos: &Pos, message: &str| -> GivenError {
        let mapped = (pos.line == given_line)
            .then(|| byte_of_col(&written, pos.col.saturating_sub(given_col)))
            .and_then(|at| translate(&written, at, given));
        GivenError(match mapped {
            Some(at) => format!("--given `{given}`, {}: {message}", column(given, at)),
            None => message.to_string(),
        })
    };
    let loaded = case::parse_file(Path::new(""), Path::new("<command line>"), text);
    if let Some(e) = loaded.errors.first() {
        return Err(locate(&e.pos, &e.message));
    }
    let case = loaded
        .cases
        .into_iter()
        .next()
        .ok_or_else(|| GivenError("no case".into()))?;
    let state = crate::corpus::state::build_state(&case).map_err(|e| locate(&e.pos, &e.message))?;
    Ok((case, state))
}

/// `column N` (1-based, in characters) of byte `at` of `text`, or `line L, column N` when the
/// text has several lines.
fn column(text: &str, at: usize) -> String {
    let at = text.floor_char_boundary(at.min(text.len()));
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    if text.contains('\n') {
        format!("line {}, column {col}", before.matches('\n').count() + 1)
    } else {
        format!("column {col}")
    }
}

/// The byte offset of the `col`-th character (0-based) of `s`.
fn byte_of_col(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(i, _)| i)
}

/// One step into a TOML value.
#[derive(PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The byte offset in `to` of what byte `at` of `from` belongs to, `from` and `to` being two
/// spellings of one TOML value: the innermost key or value around `at`, found by its path.
fn translate(from: &str, at: usize, to: &str) -> Option<usize> {
    let from_value = DeValue::parse(from).ok()?;
    let to_value = DeValue::parse(to).ok()?;
    let mut path = Vec::new();
    let mut on_key = false;
    path_at(&from_value, at, &mut path, &mut on_key);
    Some(span_of(&to_value, &path, on_key)?.start)
}

/// The path to the innermost entry of `v` whose key or value spans `at`; `on_key` when `at` is
/// on the key.
fn path_at(v: &Spanned<DeValue<'_>>, at: usize, path: &mut Vec<Step>, on_key: &mut bool) {
    match v.get_ref() {
        DeValue::Table(t) => {
            for (k, x) in t.iter() {
                let in_key = k.span().contains(&at);
                if in_key || x.span().contains(&at) {
                    path.push(Step::Key(k.get_ref().to_string()));
                    *on_key = in_key;
                    if !in_key {
                        path_at(x, at, path, on_key);
                    }
                    return;
                }
            }
        }
        DeValue::Array(items) => {
            for (i, x) in items.into_iter().enumerate() {
                if x.span().contains(&at) {
                    path.push(Step::Index(i));
                    *on_key = false;
                    path_at(x, at, path, on_key);
                    return;
                }
            }
        }
        _ => {}
    }
}

/// The span of the entry at `path` in `v`: of its key when `on_key` (and it is a table's
/// entry), else of its value.
fn span_of(v: &Spanned<DeValue<'_>>, path: &[Step], on_key: bool) -> Option<Range<usize>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(v.span());
    };
    match (v.get_ref(), first) {
        (DeValue::Table(t), Step::Key(name)) => {
            let (k, x) = t.iter().find(|(k, _)| k.get_ref() == name)?;
            if rest.is_empty() && on_key {
                Some(k.span())
            } else {
                span_of(x, rest, on_key)
            }
        }
        (DeValue::Array(items), Step::Index(i)) => {
            span_of(items.into_iter().nth(*i)?, rest, on_key)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(given: &str) -> String {
        match case(Dialect::Sass, "ATOM.ADD.U32 R0, [R2], R4", 1, given) {
            Ok(_) => "ok".into(),
            Err(e) => e.0,
        }
    }

    #[test]
    fn errors_name_their_column_in_the_given_text() {
        assert_eq!(message("{ R2 = 0x1000, R4 = 7 }"), "ok");
        let m = message("{ R2 = 0x1000, R4 = , }");
        assert!(
            m.starts_with("--given `{ R2 = 0x1000, R4 = , }`, column 21:"),
            "{m}"
        );
        // Found by the loader in the written case: the column of the entry in --given.
        let m = message("{ R2 = 0x1000,   R9 = \"zz\" }");
        assert!(m.contains(", column 18: R9:"), "{m}");
        let m = message("{ R2 = 0x1000, mem = { 0x1000 = \"u99:1\" } }");
        assert!(m.contains(", column "), "{m}");
        assert!(message("[1]").contains("expected an inline table"));
    }
}
