//! The fast path against the reference on generated cases (see `atomcts::oracles`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomcts::oracles::diff_fast_reference(data));
