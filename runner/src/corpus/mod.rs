//! The corpus layer (bottom of the library): the case format and everything that interprets a
//! case without running it: loading ([`case`], [`files`]), values and patterns ([`value`],
//! [`float_display`]), states ([`state`]) and expectations ([`build`]), checking an observation against
//! an expectation ([`verify`]) and one-instruction cases from the command line ([`given`]).
//! Imports nothing from the layers above (`run`, `report`, `fuzzing`, the command line):
//! `runner/tests/layers.rs` checks it.

pub mod baseline;
pub mod build;
pub mod case;
pub mod expectation;
pub mod export;
pub mod files;
pub mod float_display;
pub mod given;
pub mod pos;
pub mod state;
pub mod value;
pub mod verify;
