//! The exit codes of every `atomcts` command (README "Guarantees"), named once: the command
//! line, the reports and the fuzzer use these, never bare numbers. A leaf: imports nothing.

/// Everything checked conforms (or the command did what was asked).
pub const EXIT_OK: u8 = 0;
/// A nonconformance was found: a failing or undecided case (`run`, `merge`, `fuzz`), a case
/// that fails on the reference (`regress`), a mismatch (`sweep`), a stale report (`report
/// --check`).
pub const EXIT_NONCONFORMANCE: u8 = 1;
/// A usage, input or infrastructure error, a run that checked nothing, or incomplete reports.
pub const EXIT_ERROR: u8 = 2;
/// A run stopped by SIGINT (128 + 2, as a shell reports it).
pub const EXIT_SIGINT: u8 = 130;
/// A run stopped by SIGTERM (128 + 15).
pub const EXIT_SIGTERM: u8 = 143;
