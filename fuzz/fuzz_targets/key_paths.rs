//! Fuzz target: see `tinystore_fuzz::key_paths` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinystore_fuzz::key_paths(data));
