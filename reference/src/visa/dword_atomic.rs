//! vISA dword_atomic (front end pending).

use std::fmt;

/// A parsed instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DwordAtomic {
    text: String,
}

impl fmt::Display for DwordAtomic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
