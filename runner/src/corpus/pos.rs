//! A position in a case file (`file:line:col`): what every message about a case points at.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// A position in a case file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    /// File path as given (shared: every position of a file points at one copy).
    pub file: Arc<Path>,
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

/// A load or validation error with its position.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{pos}: {message}")]
pub struct LoadError {
    /// Where.
    pub pos: Pos,
    /// What.
    pub message: String,
}

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
