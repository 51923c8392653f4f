//! vISA field encodings (pending).
