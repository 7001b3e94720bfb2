//! Read snapshots (KV-16): `store.view(fn)` reads every key it asks for
//! from one point in time, on a reader connection of its own. The calls
//! are reads, so they run inline on the JS thread as a bucket's reads do.

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi_derive::napi;
use tinystore::Snapshot;

use crate::bucket::NativeBucket;
use crate::settle::sync;

/// An open snapshot (the package's `View` wraps it). Every call takes the
/// bucket it is about, sees the file as it was at the snapshot's first
/// read, and renews nothing. Collected without `close`, it closes.
#[napi]
pub struct NativeSnapshot {
    pub(crate) snapshot: Snapshot,
}

#[napi]
impl NativeSnapshot {
    /// The value of a live key in the snapshot, or `undefined`.
    #[napi]
    pub fn get<'e>(&self, env: &'e Env, bucket: &NativeBucket, key: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        bucket.get_by(env, &key, |k| self.snapshot.entry(&bucket.raw, k))
    }

    /// `{ key, value, version, expiresAt }` in the snapshot, or `undefined`.
    #[napi(
        ts_return_type = "{ key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined } | undefined"
    )]
    pub fn entry<'e>(&self, env: &'e Env, bucket: &NativeBucket, key: Unknown<'e>) -> napi::Result<Unknown<'e>> {
        bucket.entry_by(env, &key, |k| self.snapshot.entry(&bucket.raw, k))
    }

    /// Whether a live key is there in the snapshot.
    #[napi]
    pub fn has<'e>(&self, env: &'e Env, bucket: &NativeBucket, key: Unknown<'e>) -> napi::Result<bool> {
        let r = bucket.key(env, &key).and_then(|k| self.snapshot.entry(&bucket.raw, &k));
        Ok(sync(env, r)?.is_some())
    }

    /// A page of the branch in the snapshot: `{ entries, next }`.
    #[napi(
        ts_return_type = "{ entries: Array<{ key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined }>, next: string | Uint8Array | undefined }"
    )]
    pub fn list<'e>(
        &self,
        env: &'e Env,
        bucket: &NativeBucket,
        after: Unknown<'e>,
        limit: Option<f64>,
    ) -> napi::Result<Unknown<'e>> {
        bucket.list_by(env, &after, limit, |opts| self.snapshot.list(&bucket.raw, opts))
    }

    /// Ends the snapshot, so the file need not keep what it read; a read
    /// after this is `Closed`.
    #[napi]
    pub fn close(&self) {
        self.snapshot.close();
    }
}
