//! Deterministic simulator: drives the sans-IO instances on a virtual clock.
