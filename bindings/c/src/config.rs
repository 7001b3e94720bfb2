//! Config (KV-20): the core's `RawConfig` on JSON text. The Go package
//! describes a struct as the core's fields (`[{"path", "type", "default",
//! "secret", "required", "env"}]`) and converts; every rule is the core's.

use tinystore::RawConfig;
use tinystore::config::{Layers, Schema};

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

/// Opens config `name` with the field description `fields` and the layers
/// `layers` (both JSON). The handle goes to `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_open(
    s: *const TsStore,
    name: *const u8,
    name_len: usize,
    fields: *const u8,
    fields_len: usize,
    layers: *const u8,
    layers_len: usize,
    out: *mut *mut TsHandle,
    err: *mut *mut TsError,
) -> i32 {
    guard(err, || {
        let st = unsafe { store(s) }?;
        let name = unsafe { text(name, name_len, "config name") }?;
        let schema = Schema::from_json(unsafe { text(fields, fields_len, "config fields") }?)?;
        let layers = Layers::from_json(unsafe { text(layers, layers_len, "config layers") }?)?;
        put(
            out,
            TsHandle(Kind::Config(RawConfig::open(st, name, schema, layers, None)?)),
        )
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

/// Blocks until the generation passes `after`, or `timeout_ms`; returns the
/// generation then (0 for null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_wait(c: *const TsHandle, after: u64, timeout_ms: u64) -> u64 {
    unsafe { config(c) }.map_or(0, |c| c.wait(after, std::time::Duration::from_millis(timeout_ms)))
}

/// Leaves out every kept value of generation `generation`: the caller's own
/// validator refuses the config built with them, for the reason `why`
/// (UTF-8, shown by `ts_config_json` with `sources`). A later change is checked again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ts_config_refuse_kept(c: *const TsHandle, generation: u64, why: *const u8, why_len: usize) {
    if let Ok(c) = unsafe { config(c) } {
        c.refuse_kept(generation, &String::from_utf8_lossy(unsafe { bytes(why, why_len) }));
    }
}
