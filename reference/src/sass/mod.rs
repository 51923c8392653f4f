//! NVIDIA SASS: the ATOM instruction ("ATOM: Atomic Operation on generic Memory", SPA 5.0).

pub mod atom;
pub mod encoding;

pub use atom::{Instruction, lower, parse};
