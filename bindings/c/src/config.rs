//! Config (KV-20): the core's `RawConfig` on JSON text. The Go package
//! describes a struct as the core's fields (`[{"path", "type", "default",
//! "secret", "required", "env"}]`) and converts; every rule is the core's,
//! and the program's own check of a whole config (Go's `Validate`) is
//! called back where the core checks one.

use std::sync::Arc;

use tinystore::RawConfig;
use tinystore::config::{Layers, Schema, Validator, WatchStep};

use crate::call::{Kind, TsHandle};
use crate::store::{TsStore, store};
use crate::{TsError, bytes, give_bytes, guard, handle, invalid, put, text};

unsafe fn config<'a>(c: *const TsHandle) -> tinystore::Result<&'a RawConfig> {
    match &unsafe { handle(c, "config") }?.0 {
        Kind::Config(c) => Ok(c),
        _ => Err(invalid("the handle is not a config")),
    }
}

unsafe fn give_text(s: String, out: *mut *mut u8, out_len: *mut usize) -> tinystore::Result<()> {
    if out.is_null() || out_len.is_null() {
        return Err(invalid("a null out pointer"));
    }
    let (p, n) = give_bytes(s.into_bytes());
    unsafe {
        *out = p;
        *out_len = n;
    }
    Ok(())
}

/// The program's own check of a whole config, which the core runs where it
/// checks one: at open over the layers, at each update over the result,
/// and over the kept values (a refusal leaves them out).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TsValidate {
    /// Accepts the config `json` (its JSON text, read only during the
    /// call) with true; refuses it with false, the reason given to
    /// `ts_why_set(why, ...)`. Called on any thread.
    pub check: Option<unsafe extern "C" fn(ctx: usize, json: *const u8, json_len: usize, why: *mut TsWhy) -> bool>,
    /// Called once, when the core is done with `ctx` (the config is freed,
    /// or its open failed).
    pub release: Option<unsafe extern "C" fn(ctx: usize)>,
    /// The caller's own, passed back to `check` and `release`.
    pub ctx: usize,
}

/// Where a check's reason for a refusal goes.
pub struct TsWhy(Option<String>);

/// Gives the refusal of a `TsValidate` check its reason (UTF-8; a bad
/// byte is replaced).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_why_set(why: *mut TsWhy, text: *const u8, len: usize) {
    if let Some(w) = unsafe { why.as_mut() } {
        w.0 = Some(String::from_utf8_lossy(unsafe { bytes(text, len) }).into_owned());
    }
}

/// A `TsValidate` the core holds: released when its last holder drops it.
struct Held(TsValidate);

// SAFETY: `TsValidate` says its functions may be called on any thread.
unsafe impl Send for Held {}
unsafe impl Sync for Held {}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(release) = self.0.release {
            unsafe { release(self.0.ctx) };
        }
    }
}

/// The core's validator of `v` (null: none). Taken even without a check,
/// so that `release` runs exactly once.
unsafe fn validator(v: *const TsValidate) -> Option<Validator> {
    let held = Arc::new(Held(*unsafe { v.as_ref() }?));
    held.0.check?;
    Some(Arc::new(move |value| {
        let (json, mut why) = (value.to_string(), TsWhy(None));
        let check = held.0.check.expect("checked above");
        match unsafe { check(held.0.ctx, json.as_ptr(), json.len(), &mut why) } {
            true => Ok(()),
            false => Err(why.0.unwrap_or_default()),
        }
    }))
}

/// Opens config `name` with the field description `fields` and the layers
/// `layers` (both JSON), checked by `validate` (null for none). The handle
/// goes to `out`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ts_config_open(
    s: *const TsStore,
    name: *const u8,
    name_len: usize,
    fields: *const u8,
    fields_len: usize,
    layers: *const u8,
    layers_len: usize,
    validate: *const TsValidate,
    out: *mut *mut TsHandle,
    err: *mut *mut TsError,
) -> i32 {
    let validator = unsafe { validator(validate) };
    guard(err, || {
        let st = unsafe { store(s) }?;
        let name = unsafe { text(name, name_len, "config name") }?;
        let schema = Schema::from_json(unsafe { text(fields, fields_len, "config fields") }?)?;
        let layers = Layers::from_json(unsafe { text(layers, layers_len, "config layers") }?)?;
        let raw = RawConfig::open(st, name, schema, layers, validator)?;
        put(out, TsHandle(Kind::Config(raw)))
    })
}

/// The whole config as JSON, from memory, or (`sources`) each field's
/// source as a JSON list; the bytes are the caller's (`ts_bytes_free`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_json(
    c: *const TsHandle,
    sources: bool,
    out: *mut *mut u8,
    out_len: *mut usize,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || unsafe {
        let c = config(c)?;
        give_text(if sources { c.sources_json() } else { c.get_json() }?, out, out_len)
    })
}

/// Checks and keeps the fields of the JSON patch `text` that change,
/// blocking until durable; or (`reset`) gives the field, or struct of
/// fields, at the path `text` back to the layers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_change(
    c: *const TsHandle,
    reset: bool,
    text_ptr: *const u8,
    text_len: usize,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let (c, what) = (
            unsafe { config(c) }?,
            if reset { "config path" } else { "config update" },
        );
        let t = unsafe { text(text_ptr, text_len, what) }?;
        if reset { c.reset(t) } else { c.update_json(t) }
    })
}

/// The config's generation: it grows with every change seen (0 for null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_generation(c: *const TsHandle) -> u64 {
    unsafe { config(c) }.map_or(0, RawConfig::generation)
}

/// A watch of the config's changes from now on, as a handle to `out`
/// (`ts_handle_free` frees it); each step is the core's.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_watch(c: *const TsHandle, out: *mut *mut TsHandle, err: *mut *mut TsError) -> i32 {
    guard(err, || {
        let w = unsafe { config(c) }?.watch(None);
        put(out, TsHandle(Kind::ConfigWatch(w)))
    })
}

/// Waits one step of the watch `w`, blocking: 1 for a change, 0 for none
/// yet, -1 when the watch is over (and for a handle that is not a watch).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_watch_next(w: *const TsHandle) -> i32 {
    match unsafe { handle(w, "config watch") }.map(|h| &h.0) {
        Ok(Kind::ConfigWatch(w)) => match w.next() {
            WatchStep::Changed => 1,
            WatchStep::Quiet => 0,
            WatchStep::Ended => -1,
        },
        _ => -1,
    }
}
