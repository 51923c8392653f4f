//! vISA scatter4 (front end pending).

use std::fmt;

/// A parsed instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scatter4 {
    text: String,
}

impl fmt::Display for Scatter4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
