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

/// Reads a `.env` file as dotenvy reads it: `NAME=value` lines, `export`,
/// `#` comments, single quotes as written, double quotes with escapes and
/// over several lines (a PEM key), `$NAME` from earlier lines and the
/// process. A line that does not read, or a name that starts with a digit,
/// is `Invalid`, naming the file and line.
pub(crate) fn parse_dotenv(file: &Path, text: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for item in dotenvy::from_read_iter(text.as_bytes()) {
        match item {
            Ok(pair) => out.push(pair),
            Err(dotenvy::Error::LineParse(line, at)) => {
                let n = line_number(text, &line);
                let name = line.trim_start().trim_start_matches("export ").trim_start();
                let why = if name.starts_with(|c: char| c.is_ascii_digit()) {
                    let name = name.split('=').next().unwrap_or(name).trim();
                    format!("{name:?} is not a variable name: a name must not start with a digit")
                } else {
                    format!("does not read as NAME=value (at character {})", at + 1)
                };
                return Err(Error::invalid(format!("{} line {n}: {why}", file.display())));
            }
            Err(e) => return Err(Error::invalid(format!("{}: {e}", file.display()))),
        }
    }
    Ok(out)
}

/// The line of `text` where `line` (as dotenvy quotes it) starts, from 1.
fn line_number(text: &str, line: &str) -> usize {
    let first = line.lines().next().unwrap_or("").trim();
    text.lines().position(|l| l.trim() == first).map_or(0, |i| i + 1)
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
        let text = "# comment\nexport A=1\nB='x y'\nC=\"a\\nb\"\nD=plain # note\nE=${A}2\n";
        let got = parse_dotenv(Path::new(".env"), text).unwrap();
        let want = [("A", "1"), ("B", "x y"), ("C", "a\nb"), ("D", "plain"), ("E", "12")];
        assert_eq!(got, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
        let err = parse_dotenv(Path::new(".env"), "OK=1\nnot a line\n").unwrap_err();
        assert!(err.message().contains(".env line 2"), "{err}");
    }

    #[test]
    fn a_double_quoted_value_runs_over_lines() {
        let text = "KEY=\"-----BEGIN KEY-----\nMIIB\n-----END KEY-----\"\nNEXT=1\n";
        let got = parse_dotenv(Path::new(".env"), text).unwrap();
        assert_eq!(got[0].1, "-----BEGIN KEY-----\nMIIB\n-----END KEY-----");
        assert_eq!(got[1], ("NEXT".to_owned(), "1".to_owned()));
    }

    #[test]
    fn a_name_must_not_start_with_a_digit() {
        let err = parse_dotenv(Path::new("app.env"), "A=1\n1X=2\n").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Invalid);
        assert!(
            err.message().contains("app.env line 2") && err.message().contains("must not start with a digit"),
            "{err}"
        );
    }

    #[test]
    fn lists_read_items_by_type() {
        let ty = FieldType::List(Box::new(FieldType::Int));
        assert_eq!(read(&ty, "1, 2,3").unwrap(), serde_json::json!([1, 2, 3]));
        assert_eq!(read(&ty, "[4]").unwrap(), serde_json::json!([4]));
        assert!(read(&ty, "1,x").is_err());
    }
}
