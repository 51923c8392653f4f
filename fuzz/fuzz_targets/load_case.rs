//! Any bytes as a case file: loader, state and expectation builders, one reference run (see
//! `atomcts::fuzzing::oracles`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomcts::fuzzing::oracles::load_case_file(data));
