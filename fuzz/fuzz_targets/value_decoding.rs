//! Fuzz target: see `tinystore_fuzz::value_decoding` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinystore_fuzz::value_decoding(data));
