//! The fast path (pending).
