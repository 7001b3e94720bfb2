//! The node binding of TinyStore KV (being built).
