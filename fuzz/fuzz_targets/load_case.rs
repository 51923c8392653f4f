//! Any bytes as a case file: loader, state and expectation builders, one reference run (see
//! `atomcts::oracles`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| atomcts::oracles::load_case_file(data));
