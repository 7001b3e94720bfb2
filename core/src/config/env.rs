//! The environment layer: `.env` files, then the process's variables over
//! them, each variable read by its field's type.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::fields::{FieldType, short};
use crate::error::{Error, Result};

/// Where a variable's text came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A `.env` file, by its path.
    File(String),
    /// The process's environment.
    Process,
}

/// The variables of the `.env` files (in order, a later file over an
/// earlier one) and of `process` over them. A file that does not exist is
/// skipped, as `.env` files are optional; one that does not read is `Io`.
pub(crate) fn gather(
    files: &[std::path::PathBuf],
    process: impl IntoIterator<Item = (String, String)>,
) -> Result<BTreeMap<String, (String, Origin)>> {
    let mut vars = BTreeMap::new();
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(Error::new(crate::ErrorKind::Io, format!("{}: {e}", file.display())));
            }
        };
        for (name, value) in parse_dotenv(file, &text)? {
            vars.insert(name, (value, Origin::File(file.display().to_string())));
        }
    }
    for (name, value) in process {
        vars.insert(name, (value, Origin::Process));
    }
    Ok(vars)
}

/// Reads a `.env` file: `NAME=value` lines, `export NAME=value`, `#`
/// comments, values in single quotes (as written) or double quotes (with
/// `\n`, `\"` and `\\`). A line that is none of these is `Invalid`, naming
/// the file and line.
pub(crate) fn parse_dotenv(file: &Path, text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line).trim_start();
        let bad = |why: &str| Error::invalid(format!("{} line {}: {why}", file.display(), i + 1));
        let Some((name, value)) = line.split_once('=') else {
            return Err(bad("is not NAME=value"));
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(bad(&format!("{name:?} is not a variable name")));
        }
        let value = value.trim();
        let value = if let Some(inner) = value.strip_prefix('\'') {
            inner
                .strip_suffix('\'')
                .ok_or_else(|| bad("a quote is not closed"))?
                .to_owned()
        } else if let Some(inner) = value.strip_prefix('"') {
            let inner = inner.strip_suffix('"').ok_or_else(|| bad("a quote is not closed"))?;
            unescape(inner)
        } else {
            // An unquoted value ends at a comment.
            match value.find(" #") {
                Some(at) => value[..at].trim_end().to_owned(),
                None => value.to_owned(),
            }
        };
        out.push((name.to_owned(), value));
    }
    Ok(out)
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Reads a variable's text as a value of `ty`, or says why it does not.
pub(crate) fn read(ty: &FieldType, text: &str) -> std::result::Result<Value, String> {
    let t = text.trim();
    match ty {
        FieldType::Str => Ok(Value::from(text)),
        FieldType::Int => t
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{t:?} is not a whole number")),
        FieldType::Float => match t.parse::<f64>() {
            Ok(f) if f.is_finite() => Ok(Value::from(f)),
            _ => Err(format!("{t:?} is not a number")),
        },
        FieldType::Bool => match t.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(Value::Bool(true)),
            "false" | "0" | "no" | "off" => Ok(Value::Bool(false)),
            _ => Err(format!("{t:?} is not true or false")),
        },
        FieldType::Duration => crate::parse_duration(t)
            .map(|d| Value::from(d.as_millis() as u64))
            .map_err(|e| e.message().to_owned()),
        FieldType::Json => serde_json::from_str(t).map_err(|e| format!("{} is not JSON: {e}", short(&Value::from(t)))),
        FieldType::List(item) => {
            if t.starts_with('[') {
                let v: Value = serde_json::from_str(t).map_err(|e| format!("{t:?} is not a JSON list: {e}"))?;
                return ty.fit(&v);
            }
            if t.is_empty() {
                return Ok(Value::Array(Vec::new()));
            }
            t.split(',')
                .map(|part| read(item, part.trim()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map(Value::Array)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotenv_lines() {
        let text = "# comment\nexport A=1\nB='x y'\nC=\"a\\nb\"\nD=plain # note\n";
        let got = parse_dotenv(Path::new(".env"), text).unwrap();
        let want = [("A", "1"), ("B", "x y"), ("C", "a\nb"), ("D", "plain")];
        assert_eq!(got, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
        let err = parse_dotenv(Path::new(".env"), "OK=1\nnot a line\n").unwrap_err();
        assert!(err.message().contains(".env line 2"), "{err}");
    }

    #[test]
    fn lists_read_items_by_type() {
        let ty = FieldType::List(Box::new(FieldType::Int));
        assert_eq!(read(&ty, "1, 2,3").unwrap(), serde_json::json!([1, 2, 3]));
        assert_eq!(read(&ty, "[4]").unwrap(), serde_json::json!([4]));
        assert!(read(&ty, "1,x").is_err());
    }
}
