//! The c binding of TinyStore KV (being built).
