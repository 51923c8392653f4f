//! The subprocess protocol adapter (pending).
