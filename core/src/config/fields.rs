//! The field description every language maps its idiom onto: a path, a
//! type, a default, and whether the field is secret or required.
//!
//! Values cross between the core and the languages as JSON, in one
//! canonical form per type, so that a binding only converts: a duration is
//! whole milliseconds, a list a JSON array, anything else as JSON writes it.

use serde_json::Value;

use crate::error::{Error, Result};

/// The longest path a field may have, in bytes.
pub const MAX_FIELD_PATH: usize = 256;
/// The largest value one field may keep, as JSON.
pub const MAX_FIELD_VALUE: usize = 16 << 10;
/// The most a config may keep, all fields' JSON together.
pub const MAX_KEPT: usize = 256 << 10;

/// The type of a field: how a variable is read and what an update may set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// Text.
    Str,
    /// A whole number (i64).
    Int,
    /// A number.
    Float,
    /// `true` or `false` (a variable also takes 1/0, yes/no, on/off).
    Bool,
    /// A span, kept as whole milliseconds; a variable reads `1h30m`.
    Duration,
    /// A list of items of one type; a variable reads `a.com,b.com` or a JSON array.
    List(Box<FieldType>),
    /// Any JSON value; a variable reads JSON.
    Json,
}

impl FieldType {
    /// Reads a type as the field descriptions spell it: `str`, `int`,
    /// `float`, `bool`, `duration`, `json`, `list:<item>`.
    pub fn parse(text: &str) -> Result<FieldType> {
        Ok(match text {
            "str" => FieldType::Str,
            "int" => FieldType::Int,
            "float" => FieldType::Float,
            "bool" => FieldType::Bool,
            "duration" => FieldType::Duration,
            "json" => FieldType::Json,
            _ => match text.strip_prefix("list:") {
                Some(item) => FieldType::List(Box::new(FieldType::parse(item)?)),
                None => {
                    return Err(Error::invalid(format!(
                        "{text:?} is not a field type: use str, int, float, bool, duration, json or list:<type>"
                    )));
                }
            },
        })
    }

    /// The type as [`FieldType::parse`] reads it.
    pub fn name(&self) -> String {
        match self {
            FieldType::Str => "str".into(),
            FieldType::Int => "int".into(),
            FieldType::Float => "float".into(),
            FieldType::Bool => "bool".into(),
            FieldType::Duration => "duration".into(),
            FieldType::Json => "json".into(),
            FieldType::List(item) => format!("list:{}", item.name()),
        }
    }

    /// The value a field of this type has when nothing sets it.
    pub fn zero(&self) -> Value {
        match self {
            FieldType::Str => Value::String(String::new()),
            FieldType::Int | FieldType::Duration => Value::from(0),
            FieldType::Float => Value::from(0.0),
            FieldType::Bool => Value::Bool(false),
            FieldType::List(_) => Value::Array(Vec::new()),
            FieldType::Json => Value::Null,
        }
    }

    /// Whether `v` is this type's zero value, or an empty list: what a
    /// required field may not be.
    pub fn is_empty(&self, v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
        }
    }

    /// Checks `v` against the type and gives its canonical form, or says
    /// why it does not fit.
    pub fn fit(&self, v: &Value) -> std::result::Result<Value, String> {
        let want = || format!("{} is not a {}", short(v), self.name());
        match self {
            FieldType::Str => v.as_str().map(Value::from).ok_or_else(want),
            FieldType::Int => match v {
                Value::Number(n) if n.is_i64() => Ok(v.clone()),
                Value::Number(n) => match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Value::from(f as i64)),
                    _ => Err(want()),
                },
                _ => Err(want()),
            },
            FieldType::Float => match v.as_f64() {
                Some(f) => Ok(Value::from(f)),
                None => Err(want()),
            },
            FieldType::Bool => v.as_bool().map(Value::from).ok_or_else(want),
            FieldType::Duration => match v {
                Value::String(s) => crate::parse_duration(s)
                    .map(|d| Value::from(d.as_millis() as u64))
                    .map_err(|e| e.message().to_owned()),
                Value::Number(n) => match n.as_u64() {
                    Some(ms) => Ok(Value::from(ms)),
                    None => match n.as_f64() {
                        Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 9.0e15 => Ok(Value::from(f as u64)),
                        _ => Err(format!(
                            "{} is not a duration: give whole milliseconds or text as \"1h30m\"",
                            short(v)
                        )),
                    },
                },
                _ => Err(want()),
            },
            FieldType::List(item) => match v {
                Value::Array(items) => items
                    .iter()
                    .map(|i| item.fit(i))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map(Value::Array),
                _ => Err(want()),
            },
            FieldType::Json => Ok(v.clone()),
        }
    }
}

/// A value shortened for a message.
pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        let mut end = 57;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

/// One field of a config.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The JSON names of the field and the structs above it, joined by dots:
    /// `limits.rps`.
    pub path: String,
    /// The field's type.
    pub ty: FieldType,
    /// The value the program gives it (the type's zero when not given).
    pub default: Option<Value>,
    /// Comes from the layers alone: never kept, refused by update, hidden by sources.
    pub secret: bool,
    /// May not be left empty by the layers, nor emptied by an update.
    pub required: bool,
    /// The variable that sets it, when not the prefix and the path.
    pub env: Option<String>,
}

impl Field {
    /// A field of `ty` at `path`, with no default, neither secret nor required.
    pub fn new(path: impl Into<String>, ty: FieldType) -> Field {
        Field {
            path: path.into(),
            ty,
            default: None,
            secret: false,
            required: false,
            env: None,
        }
    }

    /// The variable that sets this field: its own name, or the prefix and
    /// the path in upper snake case. A word starts at a capital after a
    /// small letter or digit, and at the last capital of a run that a small
    /// letter follows, so `APP` and `limits.maxConns` give
    /// `APP_LIMITS_MAX_CONNS`, and `HTTPServer` gives `APP_HTTP_SERVER`.
    pub fn variable(&self, prefix: Option<&str>) -> String {
        if let Some(name) = &self.env {
            return name.clone();
        }
        let mut out = String::new();
        if let Some(p) = prefix.filter(|p| !p.is_empty()) {
            out.push_str(&p.to_ascii_uppercase());
            out.push('_');
        }
        let chars: Vec<char> = self.path.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if c == '.' || c == '-' || c == '_' {
                if !out.is_empty() && !out.ends_with('_') {
                    out.push('_');
                }
                continue;
            }
            if c.is_ascii_uppercase() && i > 0 {
                let prev = chars[i - 1];
                let next_small = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
                let starts_word =
                    prev.is_ascii_lowercase() || prev.is_ascii_digit() || (prev.is_ascii_uppercase() && next_small);
                if starts_word && !out.ends_with('_') {
                    out.push('_');
                }
            }
            out.push(c.to_ascii_uppercase());
        }
        out
    }
}

/// Every field of a config, checked: paths unique, no path the prefix of
/// another's struct, defaults of their type.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    pub(crate) fields: Vec<Field>,
}

impl Schema {
    /// Checks `fields` and makes the schema.
    pub fn new(fields: Vec<Field>) -> Result<Schema> {
        let mut fields = fields;
        for f in &mut fields {
            check_path(&f.path)?;
            if let Some(d) = &f.default {
                let fitted = f.ty.fit(d).map_err(|why| {
                    Error::invalid(format!("the default of config field {:?} does not fit: {why}", f.path))
                })?;
                f.default = Some(fitted);
            }
        }
        for (i, a) in fields.iter().enumerate() {
            for b in &fields[i + 1..] {
                if a.path == b.path {
                    return Err(Error::invalid(format!("config field {:?} is described twice", a.path)));
                }
                let (short, long) = if a.path.len() < b.path.len() { (a, b) } else { (b, a) };
                if long.path.starts_with(&format!("{}.", short.path)) {
                    return Err(Error::invalid(format!(
                        "config field {:?} sits inside field {:?}, which is not a struct",
                        long.path, short.path
                    )));
                }
            }
        }
        if fields.is_empty() {
            return Err(Error::invalid("a config needs at least one field"));
        }
        Ok(Schema { fields })
    }

    /// Reads the description bindings send: `[{"path": "limits.rps", "type":
    /// "int", "default": 100, "secret": false, "required": false, "env": null}]`.
    pub fn from_json(text: &str) -> Result<Schema> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid(format!("a config's field description is not JSON: {e}")))?;
        let Value::Array(items) = v else {
            return Err(Error::invalid("a config's field description is a JSON array of fields"));
        };
        let mut fields = Vec::with_capacity(items.len());
        for item in items {
            let path = item.get("path").and_then(Value::as_str).unwrap_or_default().to_owned();
            let ty = item
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::invalid(format!("config field {path:?} has no type")))?;
            let flag = |name: &str| item.get(name).and_then(Value::as_bool).unwrap_or(false);
            fields.push(Field {
                ty: FieldType::parse(ty)?,
                default: item.get("default").filter(|d| !d.is_null()).cloned(),
                secret: flag("secret"),
                required: flag("required"),
                env: item.get("env").and_then(Value::as_str).map(str::to_owned),
                path,
            });
        }
        Schema::new(fields)
    }

    /// The fields, in the order given.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field at `path`.
    pub fn field(&self, path: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.path == path)
    }

    /// The fields at `path` or inside the struct at `path`.
    pub fn under(&self, path: &str) -> Vec<&Field> {
        let inside = format!("{path}.");
        self.fields
            .iter()
            .filter(|f| f.path == path || f.path.starts_with(&inside))
            .collect()
    }
}

/// A path is dot-separated names of letters, digits, `_` and `-`, at most 256 bytes.
fn check_path(path: &str) -> Result<()> {
    let ok = !path.is_empty()
        && path.len() <= MAX_FIELD_PATH
        && path
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{path:?} is not a config field path: names of a-z, A-Z, 0-9, '_' and '-' joined by '.', at most {MAX_FIELD_PATH} bytes"
        )))
    }
}

/// The value at a dotted `path` inside nested objects.
pub(crate) fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = v;
    for part in path.split('.') {
        at = at.as_object()?.get(part)?;
    }
    Some(at)
}

/// Sets the value at a dotted `path`, making the objects above it.
pub(crate) fn put(v: &mut Value, path: &str, value: Value) {
    let mut at = v;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !at.is_object() {
            *at = Value::Object(Default::default());
        }
        let Value::Object(map) = at else { unreachable!() };
        if parts.peek().is_none() {
            map.insert(part.to_owned(), value);
            return;
        }
        at = map
            .entry(part.to_owned())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// Every leaf path of nested objects that no field describes, for the
/// message of a layer or update that names an unknown field.
pub(crate) fn unknown_paths(schema: &Schema, v: &Value, at: &str, out: &mut Vec<String>) {
    let Value::Object(map) = v else {
        if !at.is_empty() && schema.field(at).is_none() {
            out.push(at.to_owned());
        }
        return;
    };
    for (k, inner) in map {
        let path = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
        if schema.field(&path).is_some() {
            continue;
        }
        if schema.under(&path).is_empty() {
            out.push(path);
        } else {
            unknown_paths(schema, inner, &path, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names_follow_the_path() {
        let f = Field::new("limits.maxConns", FieldType::Int);
        assert_eq!(f.variable(Some("app")), "APP_LIMITS_MAX_CONNS");
        assert_eq!(Field::new("db_url", FieldType::Str).variable(None), "DB_URL");
        let var = |path: &str| Field::new(path, FieldType::Str).variable(Some("APP"));
        assert_eq!(var("HTTPServer"), "APP_HTTP_SERVER");
        assert_eq!(var("httpServer.TLSCert"), "APP_HTTP_SERVER_TLS_CERT");
        assert_eq!(var("userID"), "APP_USER_ID");
        assert_eq!(var("s3Bucket"), "APP_S3_BUCKET");
        assert_eq!(var("Port"), "APP_PORT");
    }

    #[test]
    fn a_duration_fits_from_text_or_millis() {
        assert_eq!(
            FieldType::Duration.fit(&Value::from("1h30m")).unwrap(),
            Value::from(5_400_000)
        );
        assert_eq!(FieldType::Duration.fit(&Value::from(250)).unwrap(), Value::from(250));
        assert!(FieldType::Duration.fit(&Value::from(-1)).is_err());
    }
}
