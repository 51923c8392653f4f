//! The fast path against the reference on generated cases (see `atomcts::fuzzing::oracles`).
#![no_main]
use libfuzzer_sys::fuzz_target;

// The runner's allocator: each input allocates and frees many small objects (issue 9).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fuzz_target!(|data: &[u8]| atomcts::fuzzing::oracles::diff_fast_reference(data));
