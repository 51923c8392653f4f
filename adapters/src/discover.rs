//! Which implementations under test this machine has: the list `atomcts list adapters` prints
//! and `atomcts report` runs by default, each with the profile it claims and its CI baseline.
//!
//! The list itself is the registry's ([`crate::registry`]), each kind's known drivers and shims.
//! Third-party implementations only: the built-in `fast` and `reference` adapters are the model
//! itself. Paths are relative to the source tree's root (where `tools/install-implementations.sh`
//! puts `target/venv`), so that reports name the same command on every machine.

/// One implementation atomcts knows how to reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Implementation {
    /// The `--adapter` argument that runs it.
    pub adapter: String,
    /// What it is, in a few words.
    pub what: String,
    /// `Ok` when it can run here, else why not (one line).
    pub available: Result<(), String>,
    /// The baseline CI gates it against (a path from the source tree's root).
    pub baseline: Option<String>,
}

pub use crate::registry::{
    NUMBA_CUDASIM, TAICHI_CPU, TAICHI_VULKAN, TRITON_INTERP, WARP_CPU, claimed_profile,
    implementations, slug,
};

/// The implementations that can run here: `atomcts report`'s default.
pub fn available() -> Vec<Implementation> {
    implementations()
        .into_iter()
        .filter(|i| i.available.is_ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_implementation_is_listed_once() {
        let all = implementations();
        let mut names: Vec<_> = all.iter().map(|i| i.adapter.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        #[cfg(feature = "opencl")]
        assert!(names.iter().any(|n| n == "opencl:pocl"));
        for shim in [
            NUMBA_CUDASIM,
            WARP_CPU,
            TAICHI_CPU,
            TAICHI_VULKAN,
            TRITON_INTERP,
        ] {
            assert!(names.iter().any(|n| n == shim), "{shim} not listed");
        }
    }
}
