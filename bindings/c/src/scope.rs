//! A bucket's reads in a scope: the store itself (`ts_bucket_get`,
//! `ts_bucket_list`), a transaction (`ts_tx_*`) or a snapshot
//! (`ts_snapshot_*`) run the core's one operation of `tinystore::Scope`
//! through the one function of each read here. A transaction's calls run
//! on the caller's thread inside it. Writes on the store wait with a
//! cancel of their own (`wait_outside`), so they keep their own functions.

use tinystore::{Key, ListOptions, Result, Scope};

use crate::bucket::{TsEntry, TsPage, fill, invalid, named, set_flag, under};
use crate::value::{value_out, value_view};
use crate::{TsBucket, bytes};

/// Reads a live key of `b`'s branch of `owners` in `scope` as the kind
/// `want` into `out`; `found` says whether it was there.
///
/// # Safety
/// The pointers are as the exported read that calls this takes them.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn get_in(
    scope: Scope<'_>,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    key: *const u8,
    key_len: usize,
    want: i32,
    out: *mut TsEntry,
    found: *mut bool,
) -> Result<()> {
    let rb = unsafe { under(b, owners, owners_len) }?;
    let key = unsafe { bytes(key, key_len) };
    set_flag(found, false);
    let Some(e) = scope.entry(&rb, key).map_err(|x| named(&rb, key, x))? else {
        return Ok(());
    };
    let v = value_out(&e.value, want).map_err(|x| named(&rb, key, x))?;
    fill(out, &e, v);
    set_flag(found, true);
    Ok(())
}

/// Lists a page of `b`'s branch of `owners` in `scope`, after the key
/// `after` when `has_after`, at most `limit` keys (0 for the default),
/// every value read as `want`, into `out`.
///
/// # Safety
/// The pointers are as the exported read that calls this takes them.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn list_in(
    scope: Scope<'_>,
    b: *const TsBucket,
    owners: *const u8,
    owners_len: usize,
    after: *const u8,
    after_len: usize,
    has_after: bool,
    limit: u32,
    want: i32,
    out: *mut *mut TsPage,
) -> Result<()> {
    let rb = unsafe { under(b, owners, owners_len) }?;
    let opts = ListOptions {
        after: has_after.then(|| Key(unsafe { bytes(after, after_len) }.to_vec())),
        limit: (limit > 0).then_some(limit as usize),
    };
    let page = scope.list(&rb, &opts)?;
    for e in &page.entries {
        value_view(&e.value, want).map_err(|x| named(&rb, &e.key.0, x))?;
    }
    if out.is_null() {
        return Err(invalid("a null out pointer"));
    }
    unsafe { *out = Box::into_raw(Box::new(TsPage { page, want })) };
    Ok(())
}
