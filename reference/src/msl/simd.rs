//! MSL simd functions (front end pending).

use std::fmt;

/// A parsed call.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SimdCall {
    text: String,
}

impl fmt::Display for SimdCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
