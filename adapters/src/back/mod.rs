//! Semantic-level back ends: one folder per target, each the same two steps over the shared
//! [`crate::plan::Plan`]: *emit* (plan -> kernel source for the target) and *run* (buffers in,
//! dispatch one work-group, buffers out). Drivers are loaded at run time, so every back end
//! builds and tests on a machine without its driver.

pub mod opencl;
pub mod ptx;
