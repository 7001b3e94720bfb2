//! The scope of a native call: a bucket's reads take an optional last
//! argument, the transaction (`NativeTx`) or snapshot (`NativeSnapshot`)
//! they run in, or nothing for the store itself, and run the core's one
//! operation for it ([`tinystore::Scope`]). Every call in a scope runs on
//! the JS thread and completes before it returns: a transaction's calls
//! cross no thread (the writer lends the transaction its connection), so
//! they answer at once, as a snapshot's reads do.

use napi::Either;
use tinystore::Scope;

use crate::snapshot::NativeSnapshot;
use crate::tx::NativeTx;

/// A call's `scope` argument.
pub(crate) type NativeScope = Either<&'static NativeTx, &'static NativeSnapshot>;

/// The core's scope for a call's `scope` argument.
pub(crate) fn scope_of<'a>(scope: &'a Option<NativeScope>) -> Scope<'a> {
    match scope {
        None => Scope::Direct,
        Some(Either::A(tx)) => Scope::Tx(&tx.session),
        Some(Either::B(view)) => Scope::View(&view.snapshot),
    }
}
