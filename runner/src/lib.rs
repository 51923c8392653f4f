//! # atomcts (the runner library)
//!
//! Loads the spec-case corpus (`spec-cases/`, format in `spec-cases/FORMAT.md`), builds each
//! case's state and expectation, runs it on an adapter, checks the observation against the
//! expectation and against the reference model (with the race checker), and reports for
//! people and programs. The `atomcts` binary is a thin command line over this crate.
#![deny(missing_docs)]

pub mod adversary;
pub mod build;
pub mod case;
pub mod concurrent;
pub mod conformance;
pub mod draft;
pub mod float_display;
pub mod fuzz;
pub mod generate;
pub mod given;
pub mod interleave;
pub mod interrupt;
pub mod markup;
pub mod merge;
pub mod oracles;
pub mod output;
pub mod plant;
pub mod report;
pub mod run;
pub mod sweep;
pub mod value;
pub mod verify;

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
