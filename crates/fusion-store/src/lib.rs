//! Block store (in progress).
