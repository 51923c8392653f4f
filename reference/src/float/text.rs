//! Float values as text: human display and parsing of case-file literals.
//! (Placeholder until the soft-float kernel lands.)

use super::Format;

/// The value as an `f64` (exact for every format here except NaN payloads).
pub fn to_f64(f: Format, x: u64) -> f64 {
    let _ = (f, x);
    0.0
}

/// A human rendering: `1.5`, `-0`, `inf`, `-inf`, `qnan(0x...)`, `snan(0x...)`, subnormals in
/// exponent form.
pub fn display(f: Format, x: u64) -> String {
    format!("{:#x}", x & f.mask())
}

/// Parses a value literal: a decimal or exponent float (`1.5`, `-0.0`, `1e-40`), `inf`,
/// `-inf`, `nan` (the default NaN), or `0x...` raw bits. Decimal values round to nearest even.
pub fn parse(f: Format, s: &str) -> Option<u64> {
    let _ = (f, s);
    None
}
