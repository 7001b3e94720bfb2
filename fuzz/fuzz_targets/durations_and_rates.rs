//! Fuzz target: see `tinystore_fuzz::durations_and_rates` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinystore_fuzz::durations_and_rates(data));
