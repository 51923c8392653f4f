//! # atomcts (the runner library)
//!
//! Loads the spec-case corpus (`spec-cases/`, format in `spec-cases/FORMAT.md`), builds each
//! case's state and expectation, runs it on an adapter, checks the observation against the
//! expectation and against the reference model (with the race checker), and reports for
//! people and programs. The `atomcts` binary is a thin command line over this crate.
#![deny(missing_docs)]

// The library is a stack of layers; each imports only from the layers below it (and never
// sideways upward), checked by `runner/tests/layers.rs`. From the top: the command line (in
// the `atomcts` binary, `src/cli/`), `fuzzing`, `report`, `run`, `corpus`. `adversary` (the
// lying shim behind `atomcts-adversary`) and `exit` (the exit codes) are leaves that import
// nothing of the library.
pub mod adversary;
pub mod corpus;
pub mod exit;
pub mod fuzzing;
pub mod report;
pub mod run;

use std::path::PathBuf;

/// The corpus shipped with the source tree, for when no `--cases` is given and `./spec-cases`
/// does not exist.
pub fn default_corpus() -> PathBuf {
    let local = PathBuf::from("spec-cases");
    if local.is_dir() {
        return local;
    }
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../spec-cases"))
}
