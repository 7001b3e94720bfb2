//! The python binding of TinyStore KV (being built).
