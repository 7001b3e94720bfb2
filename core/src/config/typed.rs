//! The Rust idiom of a config: a serde struct. Its fields are found by
//! serializing the defaults; types a JSON value cannot tell (a duration, a
//! list's items when the default list is empty, JSON kept whole) and the
//! secret and required marks are given on the builder.

use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::fields::{Field, FieldType, Schema};
use super::{FieldSource, Layers, RawConfig, Validator};
use crate::error::{Error, Result};
use crate::store::Store;

/// A `#[serde(with = "tinystore::config::millis")]` for a
/// `std::time::Duration` field, kept as whole milliseconds, the form of a
/// `duration` field; mark the field with [`ConfigBuilder::duration`].
pub mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes the duration as whole milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    /// Reads whole milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// Opens a [`Config`]: the defaults, the environment, the marks.
pub struct ConfigBuilder<T> {
    store: Store,
    name: String,
    defaults: T,
    layers: Layers,
    types: Vec<(String, FieldType)>,
    secret: Vec<String>,
    required: Vec<String>,
    vars: Vec<(String, String)>,
    validator: Option<Validator>,
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> ConfigBuilder<T> {
    /// Partial defaults over the struct's, as nested JSON objects (what a
    /// JSON or YAML file of settings reads as).
    pub fn defaults(mut self, layer: Value) -> Self {
        self.layers.defaults.push(layer);
        self
    }

    /// Reads the environment: the `files` (`.env`, a later one over an
    /// earlier, a missing one skipped), then the process's variables, each
    /// named `PREFIX_` and the field's path in upper snake case. The
    /// environment is over the `defaults` given before it and under those
    /// given after. It is one layer: a config given it twice does not open.
    pub fn env<P: Into<PathBuf>>(mut self, prefix: &str, files: impl IntoIterator<Item = P>) -> Self {
        self.layers.add_env(prefix, files.into_iter().map(Into::into).collect());
        self
    }

    /// Reads these variables instead of the process's own.
    pub fn env_vars<K: Into<String>, V: Into<String>>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self {
        self.layers.env_vars = Some(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect());
        self
    }

    /// The field at `path` is a duration (kept as milliseconds; see [`millis`]).
    pub fn duration(self, path: &str) -> Self {
        self.typed(path, FieldType::Duration)
    }

    /// The field at `path` has type `ty`, whatever its default looks like.
    pub fn typed(mut self, path: &str, ty: FieldType) -> Self {
        self.types.push((path.to_owned(), ty));
        self
    }

    /// The field at `path` comes from the layers alone.
    pub fn secret(mut self, path: &str) -> Self {
        self.secret.push(path.to_owned());
        self
    }

    /// The field at `path` may not be left empty.
    pub fn required(mut self, path: &str) -> Self {
        self.required.push(path.to_owned());
        self
    }

    /// The field at `path` is set by variable `name`.
    pub fn var(mut self, path: &str, name: &str) -> Self {
        self.vars.push((path.to_owned(), name.to_owned()));
        self
    }

    /// Checks a whole config before an update is written and before kept
    /// values are used.
    pub fn validate(mut self, check: impl Fn(&T) -> std::result::Result<(), String> + Send + Sync + 'static) -> Self {
        self.validator = Some(Arc::new(move |v: &Value| {
            let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
            check(&t)
        }));
        self
    }

    /// Opens the config.
    pub fn open(self) -> Result<Config<T>> {
        let defaults = serde_json::to_value(&self.defaults)
            .map_err(|e| Error::invalid(format!("config {:?}: the defaults do not serialize: {e}", self.name)))?;
        let mut fields = Vec::new();
        infer(&defaults, "", &self.types, &mut fields);
        let marks = self
            .secret
            .iter()
            .chain(&self.required)
            .chain(self.vars.iter().map(|(p, _)| p));
        for path in marks.chain(self.types.iter().map(|(p, _)| p)) {
            if !fields.iter().any(|f: &Field| &f.path == path) {
                return Err(Error::invalid(format!(
                    "config {:?} has no field {path:?} to mark",
                    self.name
                )));
            }
        }
        for f in &mut fields {
            f.secret = self.secret.contains(&f.path);
            f.required = self.required.contains(&f.path);
            f.env = self.vars.iter().find(|(p, _)| *p == f.path).map(|(_, n)| n.clone());
        }
        let schema = Schema::new(fields)?;
        let raw = RawConfig::open(&self.store, &self.name, schema, self.layers, self.validator)?;
        let cfg = Config { raw, _t: PhantomData };
        cfg.get()?;
        Ok(cfg)
    }
}

/// Finds the fields of a serialized struct: each leaf, or a value whose
/// path is given a type, is a field.
fn infer(v: &Value, at: &str, types: &[(String, FieldType)], out: &mut Vec<Field>) {
    if let Some((_, ty)) = types.iter().find(|(p, _)| p == at) {
        let mut f = Field::new(at, ty.clone());
        f.default = Some(v.clone());
        out.push(f);
        return;
    }
    let ty = match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, inner) in map {
                let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
                infer(inner, &path, types, out);
            }
            return;
        }
        Value::Object(_) | Value::Null => FieldType::Json,
        Value::String(_) => FieldType::Str,
        Value::Bool(_) => FieldType::Bool,
        Value::Number(n) if n.is_f64() => FieldType::Float,
        Value::Number(_) => FieldType::Int,
        Value::Array(items) => FieldType::List(Box::new(match items.first() {
            Some(Value::String(_)) | None => FieldType::Str,
            Some(Value::Bool(_)) => FieldType::Bool,
            Some(Value::Number(n)) if n.is_f64() => FieldType::Float,
            Some(Value::Number(_)) => FieldType::Int,
            Some(_) => FieldType::Json,
        })),
    };
    let mut f = Field::new(at, ty);
    f.default = Some(v.clone());
    out.push(f);
}

/// Typed settings in a serde struct `T` (KV-20): the struct's defaults, the
/// environment, and updates kept in kv.db field by field.
pub struct Config<T> {
    raw: RawConfig,
    _t: PhantomData<fn() -> T>,
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> Config<T> {
    /// Starts opening config `name` on `store`, with `defaults` as its first
    /// layer; every field of the struct is a field of the config.
    pub fn builder(store: &Store, name: &str, defaults: T) -> ConfigBuilder<T> {
        ConfigBuilder {
            store: store.clone(),
            name: name.to_owned(),
            defaults,
            layers: Layers::default(),
            types: Vec::new(),
            secret: Vec::new(),
            required: Vec::new(),
            vars: Vec::new(),
            validator: None,
        }
    }

    /// The settings now, from memory.
    pub fn get(&self) -> Result<T> {
        let v = self.raw.get()?;
        T::deserialize(&*v).map_err(|e| {
            Error::invalid(format!("config {:?} does not read as its struct: {e}", self.raw.name()))
                .in_bucket(self.raw.name())
        })
    }

    /// Changes the settings with `change`, checks the result by type and
    /// validator, and keeps the fields it changed in kv.db; every handle
    /// sees it at once.
    pub fn update(&self, change: impl FnOnce(&mut T)) -> Result<()> {
        let mut t = self.get()?;
        change(&mut t);
        let patch = serde_json::to_value(&t).map_err(|e| Error::invalid(e.to_string()).in_bucket(self.raw.name()))?;
        self.raw.update(&patch)
    }

    /// Gives the field at `path`, or every field of the struct there, back
    /// to the layers.
    pub fn reset(&self, path: &str) -> Result<()> {
        self.raw.reset(path)
    }

    /// Where each (not secret) field's value came from.
    pub fn sources(&self) -> Result<Vec<FieldSource>> {
        self.raw.sources()
    }

    /// Every change from now on, by any handle or process: an iterator that
    /// blocks for the next change and, when behind, skips to the latest.
    pub fn watch(&self) -> Watch<'_, T> {
        Watch {
            config: self,
            seen: self.raw.generation(),
        }
    }

    /// The untyped config under this one.
    pub fn raw(&self) -> &RawConfig {
        &self.raw
    }
}

/// The changes of a [`Config`], from [`Config::watch`].
pub struct Watch<'a, T> {
    config: &'a Config<T>,
    seen: u64,
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> Watch<'_, T> {
    /// The settings after the next change, or `None` when none came within
    /// `timeout` or the store closed.
    pub fn next_within(&mut self, timeout: Duration) -> Option<Result<T>> {
        let g = self.config.raw.wait(self.seen, timeout);
        if g <= self.seen {
            return None;
        }
        self.seen = g;
        Some(self.config.get())
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> Iterator for Watch<'_, T> {
    type Item = Result<T>;

    /// Blocks until the next change; ends when the store closes.
    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if self.config.raw.shared.kept.store().is_closed() {
                return None;
            }
            if let Some(r) = self.next_within(Duration::from_secs(3600)) {
                return Some(r);
            }
        }
    }
}
