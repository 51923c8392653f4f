//! Any text through the SASS parser; what parses prints and parses back (see `atomcts::fuzzing::oracles`).
#![no_main]
use atomcts::fuzzing::oracles::{Dialect, parse_roundtrip};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| parse_roundtrip(Dialect::Sass, data));
