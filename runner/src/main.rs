//! The `atomcts` command line. Exit codes: 0 conformant, 1 nonconformance found, 2 usage,
//! input or infrastructure error.

mod cli;

/// mimalloc: generated cases allocate and free many small objects each; glibc's allocator
/// was a third of a run's time (BENCHMARKS.md, "Millions of cases").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
