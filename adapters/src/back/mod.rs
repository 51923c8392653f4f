//! Semantic-level back ends: one folder per target, each the same two steps over the shared
//! [`crate::plan::Plan`] (and [`crate::shuffle::ShufflePlan`] for SIMD-group exchanges): *emit*
//! (plan -> kernel source or binary for the target) and *run* (buffers in, dispatch one
//! work-group, buffers out). Drivers are loaded at run time, so every back end builds and tests
//! on a machine without its driver. Each is behind a Cargo feature, on by default: `opencl`,
//! `vulkan` (with the WGSL route) and `cuda` (the PTX back end).

#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "cuda")]
pub mod ptx;
#[cfg(feature = "vulkan")]
pub mod vulkan;
#[cfg(feature = "vulkan")]
pub mod wgsl;
