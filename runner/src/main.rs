//! The `atomcts` command line. Exit codes: 0 conformant, 1 nonconformance found, 2 usage,
//! input or infrastructure error.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
