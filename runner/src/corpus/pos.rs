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
