//! Typed settings from layers (KV-20): defaults, then the environment
//! (`.env` files, then the process's variables), then the updates kept in
//! kv.db field by field, which every handle sees at once.
//!
//! [`RawConfig`] holds every rule on JSON values and a field description
//! ([`Schema`]); [`Config`] maps a serde struct onto it, and each language
//! maps its own idiom onto the same description. `docs/config.md` describes
//! the layers and the rows kept in kv.db.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let store = tinystore::Store::open(dir.path())?;
//! #[derive(serde::Serialize, serde::Deserialize, Clone, Default)]
//! struct Limits { rps: i64 }
//! #[derive(serde::Serialize, serde::Deserialize, Clone)]
//! struct Settings { port: i64, limits: Limits }
//!
//! let settings = tinystore::Config::builder(&store, "app", Settings { port: 8080, limits: Limits { rps: 100 } })
//!     .env("APP", [".env"])
//!     .env_vars([("APP_PORT", "9090")])
//!     .open()?;
//! assert_eq!(settings.get()?.port, 9090);
//! settings.update(|s| s.limits.rps = 200)?; // kept in kv.db; every handle sees it
//! assert_eq!(settings.get()?.limits.rps, 200);
//! # Ok::<(), tinystore::Error>(())
//! ```

mod env;
mod fields;
mod kept;
mod typed;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

pub use fields::{Field, FieldType, MAX_FIELD_PATH, MAX_FIELD_VALUE, MAX_KEPT, Schema};
pub use serde_json::Value;
pub use typed::{Config, ConfigBuilder, Watch, millis};
pub use watch::{ConfigWatch, POLL, WATCH_STEP, WatchStep};

use crate::error::{Error, Result};
use crate::store::Store;
use env::Origin;
use fields::{lookup, put, unknown_paths};
use kept::Change;
use watch::Shared;

/// Checks a whole config before an update is written, or a kept value is
/// used: `Err` says why it is refused.
pub type Validator = Arc<dyn Fn(&Value) -> std::result::Result<(), String> + Send + Sync>;

/// Where a config's layers come from, besides the fields' own defaults.
#[derive(Clone, Debug, Default)]
pub struct Layers {
    /// Partial defaults over the fields' own, in order: nested objects that
    /// set the fields they name, as a JSON or YAML library reads a file.
    pub defaults: Vec<Value>,
    /// Read the environment, with this prefix ("" for none). Without it no
    /// variable is read.
    pub env_prefix: Option<String>,
    /// `.env` files, a later one over an earlier; a missing file is skipped.
    pub env_files: Vec<PathBuf>,
    /// The variables to read instead of the process's own (for a binding
    /// whose language keeps its own copy, and for tests).
    pub env_vars: Option<Vec<(String, String)>>,
    /// Where the environment stands among the layers: over the first this
    /// many `defaults` and under the rest. `None` puts it over them all.
    pub env_after: Option<usize>,
    /// How many environment layers the program gave.
    envs_given: usize,
}

impl Layers {
    /// Reads the layers bindings send, in the order the program gave them:
    /// `{"layers": [{"defaults": {...}}, {"env": {"prefix": "APP",
    /// "files": [".env"], "vars": {"NAME": "value"}}}]}`. An `env` layer
    /// stands where it is given, over the defaults before it; without
    /// `vars` it reads the process's variables.
    pub fn from_json(text: &str) -> Result<Layers> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| Error::invalid(format!("a config's layers are not JSON: {e}")))?;
        let mut layers = Layers::default();
        for layer in v.get("layers").and_then(Value::as_array).into_iter().flatten() {
            if let Some(d) = layer.get("defaults") {
                layers.defaults.push(d.clone());
                continue;
            }
            let env = layer
                .get("env")
                .ok_or_else(|| Error::invalid("a config's layer is {\"defaults\": ...} or {\"env\": ...}"))?;
            let mut files = Vec::new();
            for f in env.get("files").and_then(Value::as_array).into_iter().flatten() {
                let f = f
                    .as_str()
                    .ok_or_else(|| Error::invalid("a config's .env files are paths"))?;
                files.push(PathBuf::from(f));
            }
            let prefix = env.get("prefix").and_then(Value::as_str).unwrap_or_default();
            layers.add_env(prefix, files);
            if let Some(Value::Object(vars)) = env.get("vars") {
                let vars = vars
                    .iter()
                    .filter_map(|(k, val)| Some((k.clone(), val.as_str()?.to_owned())));
                layers.env_vars = Some(vars.collect());
            }
        }
        Ok(layers)
    }

    /// The environment as the next layer. A config reads it once: a second
    /// is counted, and refused when the config opens.
    fn add_env(&mut self, prefix: &str, files: Vec<PathBuf>) {
        self.envs_given += 1;
        if self.envs_given == 1 {
            self.env_prefix = Some(prefix.to_owned());
            self.env_after = Some(self.defaults.len());
            self.env_files = files;
        }
    }
}

/// Where a field's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The field's own default (or its type's zero).
    Default,
    /// The n-th partial defaults layer (from 0).
    Defaults(usize),
    /// A variable in a `.env` file.
    EnvFile {
        /// The file.
        file: String,
        /// The variable.
        var: String,
    },
    /// A variable of the process.
    Env {
        /// The variable.
        var: String,
    },
    /// An update kept in kv.db, at this version.
    Kept {
        /// The revision of the file that wrote it.
        version: i64,
    },
}

/// A field's source, and a kept value left out of it, if one was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSource {
    /// The field's path.
    pub path: String,
    /// Where its value came from.
    pub source: Source,
    /// Why a value kept for it was left out, if one was.
    pub left_out: Option<String>,
}

impl FieldSource {
    /// As JSON, for the bindings.
    pub fn to_json(&self) -> Value {
        let mut v = match &self.source {
            Source::Default => json!({ "from": "default" }),
            Source::Defaults(n) => json!({ "from": "defaults", "layer": n }),
            Source::EnvFile { file, var } => json!({ "from": "env_file", "file": file, "var": var }),
            Source::Env { var } => json!({ "from": "env", "var": var }),
            Source::Kept { version } => json!({ "from": "kept", "version": version.to_string() }),
        };
        v["path"] = Value::from(self.path.clone());
        if let Some(why) = &self.left_out {
            v["leftOut"] = Value::from(why.clone());
        }
        v
    }
}

/// The config as built for one generation of kept rows.
struct Built {
    generation: u64,
    value: Arc<Value>,
    sources: Vec<FieldSource>,
}

/// A config on JSON values: every rule of KV-20, for the typed APIs of each
/// language to convert onto. Cheap to share between threads.
pub struct RawConfig {
    shared: Arc<Shared>,
    schema: Schema,
    name: String,
    /// The variables' prefix, for messages.
    prefix: String,
    /// Each field's value from the layers under the kept updates.
    base: BTreeMap<String, (Value, Source)>,
    validator: Option<Validator>,
    built: Mutex<Option<Built>>,
}

impl std::fmt::Debug for RawConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawConfig({:?})", self.name)
    }
}

/// An update every check has passed, to be written: see
/// [`RawConfig::check_update`].
pub struct CheckedUpdate {
    shared: Arc<Shared>,
    changes: Vec<Change>,
}

impl CheckedUpdate {
    /// Keeps the changed fields, in one durable write; every handle sees
    /// them once it returns.
    pub fn write(self) -> Result<()> {
        let rows = self.shared.lock().rows.clone();
        self.shared.kept.write(&rows, self.changes)?;
        self.shared.refresh()?;
        Ok(())
    }
}

impl RawConfig {
    /// Opens config `name` on `store`: reads the layers, checks every
    /// variable and required field (`Invalid` naming the variable), and
    /// reads what kv.db keeps.
    pub fn open(
        store: &Store,
        name: &str,
        schema: Schema,
        layers: Layers,
        validator: Option<Validator>,
    ) -> Result<RawConfig> {
        crate::store::check_name(name)?;
        store.inner.check_open()?;
        if layers.envs_given > 1 {
            return Err(Error::invalid("the environment is one layer: give FromEnv once").in_bucket(name));
        }
        let base = build_base(&schema, &layers).map_err(|e| e.in_bucket(name))?;
        let shared = Shared::of(store, name)?;
        if !store.is_manual() {
            shared.start_watching();
        }
        let cfg = RawConfig {
            shared,
            schema,
            name: name.to_owned(),
            prefix: layers.env_prefix.clone().unwrap_or_default(),
            base,
            validator,
            built: Mutex::new(None),
        };
        if let Some(check) = &cfg.validator {
            let layers_only = cfg.layers_value();
            check(&layers_only).map_err(|why| {
                Error::invalid(format!("the layers are refused by the config's check: {why}")).in_bucket(name)
            })?;
        }
        cfg.built()?;
        Ok(cfg)
    }

    /// The config's name (its bucket in kv.db).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field description.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The whole config as nested JSON objects, from memory: built once a
    /// change.
    pub fn get(&self) -> Result<Arc<Value>> {
        self.shared.kept.store().inner.check_open()?;
        Ok(self.built()?.0)
    }

    /// [`RawConfig::get`] as JSON text, for the bindings.
    pub fn get_json(&self) -> Result<String> {
        Ok(self.get()?.to_string())
    }

    /// [`RawConfig::sources`] as a JSON list, for the bindings: each
    /// `{"path", "from", ...detail, "leftOut"?}`.
    pub fn sources_json(&self) -> Result<String> {
        let s = self.sources()?;
        Ok(Value::Array(s.iter().map(FieldSource::to_json).collect()).to_string())
    }

    /// [`RawConfig::update`] of a patch given as JSON text, for the bindings.
    pub fn update_json(&self, patch: &str) -> Result<()> {
        self.check_update_json(patch)?.map_or(Ok(()), CheckedUpdate::write)
    }

    /// [`RawConfig::check_update`] of a patch given as JSON text.
    pub fn check_update_json(&self, patch: &str) -> Result<Option<CheckedUpdate>> {
        let v: Value = serde_json::from_str(patch)
            .map_err(|e| Error::invalid(format!("a config update is not JSON: {e}")).in_bucket(&self.name))?;
        self.check_update(&v)
    }

    /// Where each field's value came from, secret fields left out, with any
    /// kept value that was left out and why.
    pub fn sources(&self) -> Result<Vec<FieldSource>> {
        self.shared.kept.store().inner.check_open()?;
        Ok(self.built()?.1)
    }

    /// The generation of the config: it grows with every change seen.
    pub fn generation(&self) -> u64 {
        self.shared.generation()
    }

    /// Waits until a change passes generation `after` (by any handle or
    /// process), at most `timeout`; returns the generation then. Starts the
    /// watcher thread of a store with a test clock too.
    pub fn wait(&self, after: u64, timeout: Duration) -> u64 {
        self.shared.wait(after, timeout)
    }

    /// Watches the config's changes from now on (see [`ConfigWatch`]); it
    /// ends after `timeout` without a change, when one is given.
    pub fn watch(&self, timeout: Option<Duration>) -> ConfigWatch {
        ConfigWatch::new(self.shared.clone(), timeout)
    }

    /// Reads the file for changes now, as the watcher thread does every
    /// [`POLL`]; returns whether there were any.
    pub fn refresh(&self) -> Result<bool> {
        self.shared.refresh()
    }

    /// Applies `patch`, nested objects naming the fields to change (a whole
    /// config may be given: fields equal to their current value are not
    /// kept). Every value is checked by its field's type, secret fields and
    /// emptied required fields are refused, the validator sees the whole
    /// result, and only then is anything written, in one write.
    pub fn update(&self, patch: &Value) -> Result<()> {
        self.check_update(patch)?.map_or(Ok(()), CheckedUpdate::write)
    }

    /// The checks of [`RawConfig::update`], the validator's among them, on
    /// the caller's thread; `None` when nothing changes. A binding whose
    /// validator must run on its own thread (JS) checks there and writes
    /// elsewhere.
    pub fn check_update(&self, patch: &Value) -> Result<Option<CheckedUpdate>> {
        let name = &self.name;
        if !patch.is_object() {
            return Err(Error::invalid("a config update is an object of the fields to change").in_bucket(name));
        }
        let mut unknown = Vec::new();
        unknown_paths(&self.schema, patch, "", &mut unknown);
        if !unknown.is_empty() {
            return Err(Error::invalid(format!("the config has no field {}", unknown.join(", "))).in_bucket(name));
        }
        let (current, _) = self.built()?;
        let mut candidate = (*current).clone();
        let mut changes = Vec::new();
        for f in &self.schema.fields {
            let Some(v) = lookup(patch, &f.path) else { continue };
            let bad = |why: String| Error::invalid(format!("config field {:?}: {why}", f.path)).at(name, &f.path);
            let fitted = f.ty.fit(v).map_err(bad)?;
            if lookup(&current, &f.path) == Some(&fitted) {
                continue;
            }
            if f.secret {
                return Err(bad("is secret: it comes from the defaults and environment only".into()));
            }
            if f.required && f.ty.is_empty(&fitted) {
                return Err(bad(format!(
                    "is required and may not be emptied (set by {})",
                    self.variable(f)
                )));
            }
            put(&mut candidate, &f.path, fitted.clone());
            changes.push(Change::Set(f.path.clone(), fitted));
        }
        if changes.is_empty() {
            return Ok(None);
        }
        if let Some(check) = &self.validator {
            check(&candidate)
                .map_err(|why| Error::invalid(format!("the config refused the update: {why}")).in_bucket(name))?;
        }
        Ok(Some(CheckedUpdate {
            shared: self.shared.clone(),
            changes,
        }))
    }

    /// Gives a field, or every field of the struct at `path`, back to the
    /// layers under the kept updates.
    pub fn reset(&self, path: &str) -> Result<()> {
        let fields = self.schema.under(path);
        if fields.is_empty() {
            return Err(Error::invalid(format!("the config has no field {path:?}")).in_bucket(&self.name));
        }
        let rows = self.shared.lock().rows.clone();
        let changes: Vec<Change> = fields
            .iter()
            .filter(|f| rows.rows.contains_key(&f.path))
            .map(|f| Change::Reset(f.path.clone()))
            .collect();
        if changes.is_empty() {
            return Ok(());
        }
        self.shared.kept.write(&rows, changes)?;
        self.shared.refresh()?;
        Ok(())
    }

    /// The config the layers give, without what kv.db keeps.
    fn layers_value(&self) -> Value {
        let mut value = Value::Object(Default::default());
        for f in &self.schema.fields {
            put(&mut value, &f.path, self.base[&f.path].0.clone());
        }
        value
    }

    fn variable(&self, f: &Field) -> String {
        f.variable(Some(&self.prefix))
    }

    /// The value and sources for the current generation, built if need be.
    fn built(&self) -> Result<(Arc<Value>, Vec<FieldSource>)> {
        let (generation, rows) = {
            let st = self.shared.lock();
            (st.generation, st.rows.clone())
        };
        let mut b = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = b.as_ref().filter(|b| b.generation == generation) {
            return Ok((b.value.clone(), b.sources.clone()));
        }
        let (value, sources) = self.build(&rows.rows);
        let value = Arc::new(value);
        *b = Some(Built {
            generation,
            value: value.clone(),
            sources: sources.clone(),
        });
        Ok((value, sources))
    }

    /// Lays the kept rows over the layers. A kept value that no longer fits
    /// its field, or is kept for a secret or unknown field, is left out and
    /// logged; kept values the validator refuses together are all left out.
    fn build(&self, rows: &BTreeMap<String, kept::KeptRow>) -> (Value, Vec<FieldSource>) {
        let mut value = Value::Object(Default::default());
        let mut sources = Vec::with_capacity(self.schema.fields.len());
        for f in &self.schema.fields {
            let (v, src) = &self.base[&f.path];
            put(&mut value, &f.path, v.clone());
            sources.push(FieldSource {
                path: f.path.clone(),
                source: src.clone(),
                left_out: None,
            });
        }
        let layers_only = value.clone();
        let sources_before = sources.clone();
        let mut any_kept = false;
        for (f, s) in self.schema.fields.iter().zip(sources.iter_mut()) {
            let Some(row) = rows.get(&f.path) else { continue };
            let fitted = if f.secret {
                Err("the field is secret: it comes from the defaults and environment only".to_owned())
            } else {
                row.value.clone().and_then(|v| {
                    f.ty.fit(&v)
                        .map_err(|why| format!("the kept value no longer fits: {why}"))
                })
            };
            match fitted {
                Ok(v) => {
                    put(&mut value, &f.path, v);
                    s.source = Source::Kept { version: row.version };
                    any_kept = true;
                }
                Err(why) => {
                    log::warn!(store = self.shared.log_id; "tinystore: config {:?} field {:?}: left out: {why}", self.name, f.path);
                    s.left_out = Some(why);
                }
            }
        }
        let refusal = match (any_kept, &self.validator) {
            (true, Some(check)) => check(&value).err(),
            _ => None,
        };
        if let Some(why) = refusal {
            let why = format!("the config refuses the kept values together: {why}");
            log::warn!(store = self.shared.log_id; "tinystore: config {:?}: kept values left out: {why}", self.name);
            value = layers_only;
            sources = sources_before;
            for (f, s) in self.schema.fields.iter().zip(sources.iter_mut()) {
                if rows.contains_key(&f.path) && s.left_out.is_none() {
                    s.left_out = Some(why.clone());
                }
            }
        }
        for (path, _) in rows.iter().filter(|(p, _)| self.schema.field(p).is_none()) {
            log::warn!(
                store = self.shared.log_id;
                "tinystore: config {:?}: kept field {path:?} is no longer in the program; left out",
                self.name
            );
        }
        let visible = self
            .schema
            .fields
            .iter()
            .zip(sources)
            .filter(|(f, _)| !f.secret)
            .map(|(_, s)| s)
            .collect();
        (value, visible)
    }
}

/// Each field's value from the fields' defaults and the layers in their
/// order. Every variable that does not read and every required field left
/// empty is named in one `Invalid` error, so that one start shows them all.
fn build_base(schema: &Schema, layers: &Layers) -> Result<BTreeMap<String, (Value, Source)>> {
    let mut base: BTreeMap<String, (Value, Source)> = schema
        .fields
        .iter()
        .map(|f| {
            let v = f.default.clone().unwrap_or_else(|| f.ty.zero());
            (f.path.clone(), (v, Source::Default))
        })
        .collect();
    let env_after = layers
        .env_after
        .unwrap_or(layers.defaults.len())
        .min(layers.defaults.len());
    let mut problems = Vec::new();
    for (n, layer) in layers.defaults.iter().enumerate() {
        if n == env_after {
            env_layer(schema, layers, &mut base, &mut problems)?;
        }
        defaults_layer(schema, n, layer, &mut base)?;
    }
    if env_after == layers.defaults.len() {
        env_layer(schema, layers, &mut base, &mut problems)?;
    }
    let prefix = layers.env_prefix.as_deref().unwrap_or("");
    for f in schema.fields.iter().filter(|f| f.required) {
        if f.ty.is_empty(&base[&f.path].0) {
            let var = f.variable(Some(prefix));
            problems.push(format!(
                "config field {:?} is required and nothing sets it: set the variable {var}",
                f.path
            ));
        }
    }
    match problems.len() {
        0 => Ok(base),
        1 => Err(Error::invalid(problems.remove(0))),
        n => Err(Error::invalid(format!("{n} problems: {}", problems.join("; ")))),
    }
}

/// Lays a partial defaults layer over `base`.
fn defaults_layer(
    schema: &Schema,
    n: usize,
    layer: &Value,
    base: &mut BTreeMap<String, (Value, Source)>,
) -> Result<()> {
    if !layer.is_object() {
        return Err(Error::invalid(format!(
            "config defaults layer {n} is not an object of fields"
        )));
    }
    let mut unknown = Vec::new();
    unknown_paths(schema, layer, "", &mut unknown);
    if !unknown.is_empty() {
        return Err(Error::invalid(format!(
            "config defaults layer {n} names no field of the config: {}",
            unknown.join(", ")
        )));
    }
    for f in &schema.fields {
        if let Some(v) = lookup(layer, &f.path) {
            let v =
                f.ty.fit(v)
                    .map_err(|why| Error::invalid(format!("config defaults layer {n}, field {:?}: {why}", f.path)))?;
            base.insert(f.path.clone(), (v, Source::Defaults(n)));
        }
    }
    Ok(())
}

/// Lays the environment over `base`, if the layers read it; a variable that
/// does not read is added to `problems`.
fn env_layer(
    schema: &Schema,
    layers: &Layers,
    base: &mut BTreeMap<String, (Value, Source)>,
    problems: &mut Vec<String>,
) -> Result<()> {
    let Some(prefix) = layers.env_prefix.as_deref() else {
        return Ok(());
    };
    let process: Vec<(String, String)> = match &layers.env_vars {
        Some(vars) => vars.clone(),
        None => std::env::vars().collect(),
    };
    let vars = env::gather(&layers.env_files, process)?;
    for f in &schema.fields {
        let var = f.variable(Some(prefix));
        let Some((text, origin)) = vars.get(&var) else { continue };
        let where_ = match origin {
            Origin::File(file) => format!(" (in {file})"),
            Origin::Process => String::new(),
        };
        match env::read(&f.ty, text) {
            Ok(v) => {
                let src = match origin {
                    Origin::File(file) => Source::EnvFile {
                        file: file.clone(),
                        var: var.clone(),
                    },
                    Origin::Process => Source::Env { var: var.clone() },
                };
                base.insert(f.path.clone(), (v, src));
            }
            Err(why) => problems.push(format!(
                "variable {var}{where_} for config field {:?} does not read as {}: {why}",
                f.path,
                f.ty.name()
            )),
        }
    }
    Ok(())
}
