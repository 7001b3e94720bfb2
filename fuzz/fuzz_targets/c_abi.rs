//! Fuzz target: see `fuzz/src/c_abi/` for what it checks. The C ABI's
//! items are re-exported at this crate's root, where the check finds them.
#![no_main]

pub use tinystore_c_abi::*;

#[path = "../src/c_abi/mod.rs"]
mod c_abi;

libfuzzer_sys::fuzz_target!(|data: &[u8]| c_abi::c_abi(data));
