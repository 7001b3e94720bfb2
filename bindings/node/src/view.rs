//! Read snapshots (KV-16): `store.view(fn)` reads every key it asks for
//! from one point in time, on a reader connection of its own. Its reads
//! are a bucket's reads given the snapshot as their scope (`scope.rs`), so
//! they run inline on the JS thread as a bucket's reads do; the core
//! refuses a write given it.

use napi_derive::napi;
use tinystore::Snapshot;

/// An open snapshot (the package's `View` wraps it). Every read given it
/// sees the file as it was at the snapshot's first read, and renews
/// nothing. Collected without `close`, it closes.
#[napi]
pub struct NativeSnapshot {
    pub(crate) snapshot: Snapshot,
}

#[napi]
impl NativeSnapshot {
    /// Ends the snapshot, so the file need not keep what it read; a read
    /// after this is `Closed`.
    #[napi]
    pub fn close(&self) {
        self.snapshot.close();
    }
}
