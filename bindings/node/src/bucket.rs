//! A bucket of values. Each read and write is one function over its scope
//! (`scope.rs`): reads answer inline, and so do writes inside a
//! transaction; a write on the store goes through the writer's completions.

use std::time::{Duration, SystemTime};

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{napi_env, napi_value};
use napi_derive::napi;
use tinystore::{BucketWrite, Created, Entry, Key, ListOptions, Raw, RawBucket, WriteCall, WriteOptions, Written};

use crate::completions::{self, sync};
use crate::convert::{self, Ts, ValueKind};
use crate::napi_values as js;
use crate::scope::{NativeScope, run, scope_of, written_js};

/// The most keys one page of `list` holds (`tinystore::MAX_PAGE`).
// Read from JS only: a test build of the crate has no napi registration.
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub const MAX_PAGE: u32 = tinystore::MAX_PAGE as u32;

/// A bucket, or one branch of it, with the type of its values.
#[napi]
#[derive(Clone)]
pub struct NativeBucket {
    pub(crate) raw: RawBucket,
    pub(crate) kind: ValueKind,
    /// Whether its sets without options may go to the writer as they are
    /// made, in a burst (the store has no memory budget: see `write_handoff::set`).
    pub(crate) streams: bool,
}

/// `owner/owner/key` for a message, as the engine names a key.
pub(crate) fn show_path(owners: &[Vec<u8>], key: &[u8]) -> String {
    tinystore::show_path(owners, Some(key))
}

impl NativeBucket {
    fn key(&self, env: &Env, v: &Unknown<'_>) -> Ts<Vec<u8>> {
        convert::arg_key(env, v, &self.raw)
    }

    /// Runs `f` with the bytes of a key (see [`convert::with_key`]).
    fn with_key<R>(&self, env: &Env, v: &Unknown<'_>, f: impl FnOnce(&[u8]) -> Ts<R>) -> Ts<R> {
        convert::with_key(env.raw(), js::raw(v), self.raw.name(), f)
    }

    /// `r`, its error naming this bucket.
    fn named<R>(&self, r: Ts<R>) -> Ts<R> {
        r.map_err(|e| e.in_bucket(self.raw.name()))
    }

    /// The JS value of a row of this bucket's type; `Corrupt` names the key.
    fn decoded(&self, env: napi_env, raw: &Raw, key: &[u8]) -> Ts<napi_value> {
        self.kind.decode(env, raw).map_err(|e| self.raw.named(key, e))
    }

    /// The key, value and options of a `set` or a `create` (by `call`): a
    /// `ttl` (duration) or `expiresAt` (ms), and `ifVersion`, in a shape the
    /// core checks before anything is queued.
    #[allow(clippy::too_many_arguments)]
    fn prepare_set(
        &self,
        env: &Env,
        call: WriteCall,
        key: &Unknown<'_>,
        value: &Unknown<'_>,
        ttl: &Unknown<'_>,
        expires_at: Option<f64>,
        if_version: Option<String>,
    ) -> Ts<(Vec<u8>, Raw, WriteOptions)> {
        self.named((|| {
            let k = self.key(env, key)?;
            let v = (self.kind.encode(env.raw(), js::raw(value))).map_err(|e| self.raw.named(&k, e))?;
            let (ttl, at) = expiry_args(env, ttl, expires_at)?;
            let opts = self.raw.options_for(call, &k, ttl, at, convert::version(if_version)?)?;
            Ok((k, v, opts))
        })())
    }
}

#[napi]
impl NativeBucket {
    /// The bucket's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.raw.name().to_owned()
    }

    /// The type of its values (`'json'`, `'int'`, ...).
    #[napi(getter)]
    pub fn value_type(&self) -> &'static str {
        self.kind.value_type()
    }

    /// The branch of `owner` under this one.
    #[napi]
    pub fn under<'e>(&self, env: &'e Env, owner: Unknown<'e>) -> napi::Result<NativeBucket> {
        let raw = convert::branch(env, &self.raw, &owner)?;
        Ok(NativeBucket { raw, ..*self })
    }

    /// A handle of this bucket for the bare `get(handle, key)` of
    /// `fastReads()`, the read without napi-rs' per-call bookkeeping.
    #[napi]
    pub fn read_handle<'e>(&self, env: &'e Env) -> napi::Result<Unknown<'e>> {
        completions::value(env, crate::fast_reads::handle(env.raw(), self))
    }

    /// The value of a live key, or `undefined` (JSON as its text), in
    /// `scope` (see `scope.rs`). On the store it renews an idle key.
    #[napi]
    pub fn get<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let found = |k: &[u8]| self.answer_value(env.raw(), scope_of(&scope).entry(&self.raw, k)?, k);
        let r = self.with_key(env, &key, found);
        completions::value(env, r)
    }

    /// `{ key, value, version, expiresAt }` of a live key, or `undefined`, in `scope`.
    #[napi(
        ts_return_type = "{ key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined } | undefined"
    )]
    pub fn entry<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let r = self.with_key(env, &key, |k| match scope_of(&scope).entry(&self.raw, k)? {
            Some(e) => convert::entry(env.raw(), self.kind, &e).map_err(|err| self.raw.named(k, err)),
            None => js::undefined(env.raw()),
        });
        completions::value(env, r)
    }

    /// Whether a live key is there, in `scope`.
    #[napi]
    pub fn has<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<bool> {
        sync(env, self.with_key(env, &key, |k| scope_of(&scope).has(&self.raw, k)))
    }

    /// A page of this branch's own keys in `scope`: `{ entries, next }`.
    #[napi(
        ts_return_type = "{ entries: Array<{ key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined }>, next: string | Uint8Array | undefined }"
    )]
    pub fn list<'e>(
        &self,
        env: &'e Env,
        after: Unknown<'e>,
        limit: Option<f64>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let r = (|| {
            let after = match js::type_name(env.raw(), js::raw(&after)) {
                "undefined" | "null" => None,
                _ => Some(Key(self.key(env, &after)?)),
            };
            let limit = self.named(limit.map(tinystore::page_size).transpose())?;
            let page = scope_of(&scope).list(&self.raw, &ListOptions { after, limit })?;
            let items = page
                .entries
                .iter()
                .map(|e| convert::entry(env.raw(), self.kind, e).map_err(|err| self.raw.named(e.key.as_bytes(), err)));
            let next = match &page.next {
                Some(k) => convert::key_value(env.raw(), k)?,
                None => js::undefined(env.raw())?,
            };
            let entries = js::array(env.raw(), items.collect::<Ts<_>>()?)?;
            js::object_of(env.raw(), &[("entries\0", entries), ("next\0", next)])
        })();
        completions::value(env, r)
    }

    /// Writes a value in `scope`: on the store durably, inside a transaction
    /// at once; answers the version written.
    #[allow(clippy::too_many_arguments)]
    #[napi(ts_return_type = "Promise<string> | string")]
    pub fn set<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        value: Unknown<'e>,
        ttl: Unknown<'e>,
        expires_at: Option<f64>,
        if_version: Option<String>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let args = self.prepare_set(env, WriteCall::Set, &key, &value, &ttl, expires_at, if_version);
        let set = args.map(|(k, v, opts)| BucketWrite::Set(k, v, opts));
        run(env, &scope, &self.raw, set, written_js)
    }

    /// Writes a value if the key is absent, in `scope`; answers whether it
    /// did, or with `entry` `{ written, entry }`, the key's entry either way:
    /// the one written (its `value` left `undefined`, the caller's own) or
    /// the live one found.
    #[allow(clippy::too_many_arguments)]
    #[napi(
        ts_return_type = "Promise<boolean | { written: boolean, entry: { key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined } }> | boolean | { written: boolean, entry: { key: string | Uint8Array, value: unknown, version: string, expiresAt: Date | undefined } }"
    )]
    pub fn create<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        value: Unknown<'e>,
        ttl: Unknown<'e>,
        expires_at: Option<f64>,
        entry: bool,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let args = self.prepare_set(env, WriteCall::Create, &key, &value, &ttl, expires_at, None);
        // Only an answer with the entry needs the bucket and key again.
        let found = match (&args, entry) {
            (Ok((k, _, _)), true) => Some((self.clone(), k.clone())),
            _ => None,
        };
        let create = args.map(|(k, v, opts)| BucketWrite::Create(k, v, opts.expiry));
        run(env, &scope, &self.raw, create, move |env, written| {
            match (found, written) {
                (Some((bucket, key)), Written::Created(created)) => bucket.answer_created(env, created, &key),
                (_, written) => written_js(env, written),
            }
        })
    }

    /// Reads and deletes a key in one write, in `scope`; answers the value
    /// or `undefined`. A value that does not read as the bucket's type, or
    /// that `check` (the package's codec, given the value read) answers
    /// `false` for, is `Corrupt` and stays: the core's checked take runs
    /// `check` here, on the JS thread, before the key is taken, and on the
    /// store takes it only if it is still the row checked.
    #[napi(ts_return_type = "Promise<unknown> | unknown")]
    pub fn take<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        if_version: Option<String>,
        #[napi(ts_arg_type = "((value: unknown) => boolean) | undefined | null")] check: Option<Unknown<'e>>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let (k, if_version) = sync(
            env,
            self.named((|| Ok((self.key(env, &key)?, convert::version(if_version)?)))()),
        )?;
        let checked = |e: &Entry<Raw>| {
            self.kind.check(&e.value).map_err(|err| self.raw.named(&k, err))?;
            match &check {
                Some(f) => js_check(env, js::raw(f), self.decoded(env.raw(), &e.value, &k)?),
                None => Ok(()),
            }
        };
        if scope.is_some() {
            let r = scope_of(&scope).take_checked(&self.raw, &k, if_version, checked);
            return completions::value(env, r.and_then(|e| self.answer_value(env.raw(), e, &k)));
        }
        let kind = self.kind;
        // Without a check of the package's, the bucket's type is checked in
        // the write itself; with one, the core's checked take reads and
        // checks here first.
        let write_check: WriteCheck = if check.is_none() {
            Box::new(move |e| kind.check(&e.value))
        } else {
            match sync(env, self.raw.check_before_take(&k, if_version, checked))? {
                Some(checked) => Box::new(checked.still_read()),
                None => return completions::value(env, js::undefined(env.raw())),
            }
        };
        let (raw, bucket, key) = (self.raw.clone(), self.clone(), k.clone());
        completions::write(
            env,
            move |done| raw.take_then(&k, if_version, write_check, done),
            move |env, taken| bucket.answer_value(env, taken, &key),
        )
    }

    /// Deletes a key in `scope`; answers whether a live key was there.
    #[napi(ts_return_type = "Promise<boolean> | boolean")]
    pub fn delete<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        if_version: Option<String>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let delete = self.named((|| {
            Ok(BucketWrite::Delete(self.key(env, &key)?, convert::version(if_version)?))
        })());
        run(env, &scope, &self.raw, delete, written_js)
    }

    /// Gives a live key a new expiry in `scope`: `ttl` (a duration) or
    /// `at_ms` (a time). Answers whether a live key was there.
    #[napi(ts_return_type = "Promise<boolean> | boolean")]
    pub fn expire<'e>(
        &self,
        env: &'e Env,
        key: Unknown<'e>,
        ttl: Unknown<'e>,
        at_ms: Option<f64>,
        if_version: Option<String>,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        let args = self.named((|| {
            let k = self.key(env, &key)?;
            let (ttl, at) = expiry_args(env, &ttl, at_ms)?;
            let (expiry, if_version) = self.raw.expire_options(&k, ttl, at, convert::version(if_version)?)?;
            Ok(BucketWrite::Expire(k, expiry, if_version))
        })());
        run(env, &scope, &self.raw, args, written_js)
    }

    /// Removes this branch and every branch under it, in `scope` (inside a
    /// transaction a branch over 10,000 keys is `Limit`; in a snapshot, as
    /// every write there, `Invalid`).
    #[napi(ts_return_type = "Promise<void> | void")]
    pub fn clear<'e>(
        &self,
        env: &'e Env,
        #[napi(ts_arg_type = "NativeTx | NativeSnapshot")] scope: Option<NativeScope>,
    ) -> napi::Result<Unknown<'e>> {
        run(env, &scope, &self.raw, Ok(BucketWrite::Clear), written_js)
    }
}

impl NativeBucket {
    /// The answer of `create` with its entry: `{ written, entry }`.
    fn answer_created(&self, env: napi_env, created: Created<Raw>, key: &[u8]) -> Ts<napi_value> {
        let written = created.written();
        let entry = match created {
            Created::Written { version, expires_at } => {
                convert::entry_of(env, &Key(key.to_vec()), js::undefined(env)?, version, expires_at)?
            }
            Created::Found(e) => convert::entry(env, self.kind, &e).map_err(|err| self.raw.named(key, err))?,
        };
        js::object_of(env, &[("written\0", js::boolean(env, written)?), ("entry\0", entry)])
    }

    /// The answer of a read or a take: the value found, or `undefined`.
    fn answer_value(&self, env: napi_env, taken: Option<Entry<Raw>>, key: &[u8]) -> Ts<napi_value> {
        match taken {
            Some(e) => self.decoded(env, &e.value, key),
            None => js::undefined(env),
        }
    }
}

/// The expiry a write is given: a `ttl` (a duration) or a time (ms).
fn expiry_args(env: &Env, ttl: &Unknown<'_>, at_ms: Option<f64>) -> Ts<(Option<Duration>, Option<SystemTime>)> {
    let ttl = convert::duration(env, ttl, "ttl")?;
    Ok((ttl, at_ms.map(|ms| convert::time(ms, "expiresAt")).transpose()?))
}

/// What a take on the store checks inside its write.
type WriteCheck = Box<dyn FnOnce(&Entry<Raw>) -> Ts<()> + Send>;

/// Calls the package's check of a value to be taken (its codec's decode):
/// `true` lets the take go on; `false` or a throw is `Corrupt`, and the
/// value stays. The package keeps the decode's own error to throw.
fn js_check(env: &Env, f: napi_value, value: napi_value) -> Ts<()> {
    let (env, mut out) = (env.raw(), std::ptr::null_mut());
    let called = js::undefined(env).is_ok_and(|this| {
        let status = unsafe { napi::sys::napi_call_function(env, this, f, 1, &value, &mut out) };
        status == napi::sys::Status::napi_ok
    });
    if called && js::read_bool(env, out).unwrap_or(false) {
        return Ok(());
    }
    // A throw leaves its exception pending; the check's `false` says it.
    let mut thrown = std::ptr::null_mut();
    unsafe { napi::sys::napi_get_and_clear_last_exception(env, &mut thrown) };
    Err(tinystore::undecodable_take())
}
