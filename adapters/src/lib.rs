//! Adapters (pending).
