//! MSL atomic functions (front end pending).

use std::fmt;

/// A parsed call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AtomicCall {
    text: String,
}

impl fmt::Display for AtomicCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
