//! The fuzzing layer: generated cases ([`generate`], [`draft`], concurrent ones in [`contend`], their expectations in
//! [`expect`]), the fuzz oracles ([`oracles`]), exhaustive sweeps ([`sweep`]), planted wrong
//! answers ([`plant`], [`interleave`]) and differential fuzzing ([`fuzz`], which learns what an adapter's screen turns away: [`learn`]). Imports from the
//! layers below (`report`, `run`, `corpus`), never from the command line.

pub mod contend;
pub mod draft;
pub mod draw;
pub mod expect;
pub mod fuzz;
pub mod generate;
pub mod interleave;
pub mod learn;
pub mod oracles;
pub mod parallel;
pub mod plant;
pub mod sweep;
