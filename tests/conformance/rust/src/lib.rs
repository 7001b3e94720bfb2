//! The Rust runner of the language-neutral conformance cases: see `tests/run.rs` and `../README.md`.
