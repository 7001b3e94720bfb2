//! How the command prints rows, names and stats: tables for people, JSON
//! for scripts.

use std::path::Path;
use std::time::SystemTime;

use serde_json::{Value, json};
use tinystore::moving::Copied;
use tinystore::{FileStats, NameInfo, Raw, Row};

/// What a row most likely holds, judged from its bytes alone (the file does
/// not record the writer's type).
fn kind(v: &Raw) -> &'static str {
    match v {
        Raw::Null => "set member",
        Raw::Int(_) => "integer",
        Raw::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) if (s.starts_with('{') || s.starts_with('[')) && serde_json::from_str::<Value>(s).is_ok() => "json",
            Ok(s) if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => "text",
            _ if b.len() == 8 => "8 bytes (float or uint64)",
            _ => "bytes",
        },
    }
}

fn preview(v: &Raw, width: usize) -> String {
    let full = match v {
        Raw::Null => String::new(),
        Raw::Int(i) => i.to_string(),
        Raw::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => s.replace('\n', " "),
            _ => b.iter().take(width / 2).map(|x| format!("{x:02x}")).collect(),
        },
    };
    if full.chars().count() > width {
        let cut: String = full.chars().take(width - 1).collect();
        format!("{cut}…")
    } else {
        full
    }
}

/// `owner/owner/key`, as every language shows a key in its errors.
fn path(row: &Row) -> String {
    let owners: Vec<&[u8]> = row.owners.iter().map(|o| o.as_bytes()).collect();
    tinystore::show_path(&owners, Some(row.key.as_bytes()))
}

/// "in 14m", "in 29d", "2h ago".
fn relative(t: SystemTime) -> String {
    let (secs, future) = match t.duration_since(SystemTime::now()) {
        Ok(d) => (d.as_secs(), true),
        Err(e) => (e.duration().as_secs(), false),
    };
    let text = match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// A time as UTC, to the second: 2026-10-20 09:15:00Z.
fn utc(t: SystemTime) -> String {
    let ms = tinystore::to_millis(t);
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // civil-from-days (proleptic Gregorian), as in Howard Hinnant's date algorithms
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn expiry(t: Option<SystemTime>) -> String {
    match t {
        Some(t) => format!("{} ({})", utc(t), relative(t)),
        None => "never".into(),
    }
}

/// A table of rows.
pub fn rows_table(bucket: &str, rows: &[Row], more: bool) -> String {
    if rows.is_empty() {
        return format!("{bucket}: no live keys");
    }
    let lines: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            [
                path(r),
                kind(&r.value).into(),
                preview(&r.value, 40),
                r.version.to_string(),
                expiry(r.expires_at),
            ]
        })
        .collect();
    let head = ["KEY", "KIND", "VALUE", "VERSION", "EXPIRES"];
    let mut widths = head.map(str::len);
    for l in &lines {
        for (w, c) in widths.iter_mut().zip(l) {
            *w = (*w).max(c.chars().count());
        }
    }
    let fmt = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    let mut out = vec![fmt(&head.map(String::from))];
    out.extend(lines.iter().map(|l| fmt(l)));
    let n = rows.len();
    out.push(format!(
        "{n} key{}{}",
        if n == 1 { "" } else { "s" },
        if more { " (more: raise --limit)" } else { "" }
    ));
    out.join("\n")
}

/// One row as JSON.
pub fn row_json(r: &Row) -> Value {
    let value = match &r.value {
        Raw::Null => Value::Null,
        Raw::Int(i) => json!(i),
        Raw::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => json!(s),
            Err(_) => json!({ "hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>() }),
        },
    };
    json!({
        "owners": r.owners.iter().map(|o| o.to_string()).collect::<Vec<_>>(),
        "key": r.key.to_string(),
        "kind": kind(&r.value),
        "value": value,
        "version": r.version.to_string(),
        "expiresAt": r.expires_at.map(tinystore::to_millis),
    })
}

/// Rows as a JSON document.
pub fn rows_json(rows: &[Row], more: bool) -> String {
    json!({ "keys": rows.iter().map(row_json).collect::<Vec<_>>(), "more": more }).to_string()
}

/// One row, in full, for a person.
pub fn row_detail(r: &Row) -> String {
    format!(
        "key:     {}\nkind:    {}\nversion: {}\nexpires: {}\nvalue:   {}",
        path(r),
        kind(&r.value),
        r.version,
        expiry(r.expires_at),
        preview(&r.value, 4000)
    )
}

/// A table of names.
pub fn names_table(names: &[NameInfo]) -> String {
    if names.is_empty() {
        return "no buckets yet".into();
    }
    let w = names.iter().map(|n| n.name.len()).max().unwrap_or(4).max(4);
    let mut out = vec![format!("{:<w$}  {:<10}  {:>8}", "NAME", "KIND", "KEYS")];
    for n in names {
        out.push(format!("{:<w$}  {:<10}  {:>8}", n.name, n.kind, n.rows));
    }
    out.join("\n")
}

/// Names as JSON.
pub fn names_json(names: &[NameInfo]) -> String {
    Value::Array(
        names
            .iter()
            .map(|n| json!({ "name": n.name, "kind": n.kind, "keys": n.rows }))
            .collect(),
    )
    .to_string()
}

/// Stats for a person.
pub fn stats_text(dir: &Path, s: &FileStats) -> String {
    format!(
        "store:            {}\nfile:             {} bytes (+ {} bytes of WAL)\nnames:            {}\nrows:             {}\nspilled values:   {}\nclears pending:   {}\nexpired, waiting: {}",
        dir.display(),
        s.file_bytes,
        s.wal_bytes,
        s.names,
        s.rows,
        s.spilled,
        s.clear_marks,
        s.expired_waiting
    )
}

/// Stats as JSON.
pub fn stats_json(s: &FileStats) -> String {
    json!({
        "fileBytes": s.file_bytes, "walBytes": s.wal_bytes, "names": s.names, "rows": s.rows,
        "spilled": s.spilled, "clearMarks": s.clear_marks, "expiredWaiting": s.expired_waiting,
    })
    .to_string()
}

/// What a copy wrote, for a person: each name, its kind and keys copied.
pub fn copied_text(c: &Copied) -> String {
    let mut out = vec![format!("copied {} to {}", c.from, c.to)];
    if c.names.is_empty() {
        out.push("no buckets: the source held none".into());
    } else {
        let w = c.names.iter().map(|n| n.name.len()).max().unwrap_or(4).max(4);
        out.push(format!("{:<w$}  {:<11}  {:>8}", "NAME", "KIND", "KEYS"));
        for n in &c.names {
            out.push(format!("{:<w$}  {:<11}  {:>8}", n.name, n.kind, n.keys));
        }
    }
    let keys: usize = c.names.iter().map(|n| n.keys).sum();
    let names = c.names.len();
    out.push(format!(
        "{keys} key{} in {names} bucket{}; versions on the target go on above {}",
        if keys == 1 { "" } else { "s" },
        if names == 1 { "" } else { "s" },
        c.top_version
    ));
    out.join("\n")
}

/// What a copy wrote, as JSON.
pub fn copied_json(c: &Copied) -> String {
    json!({
        "from": c.from,
        "to": c.to,
        "buckets": c.names.iter().map(|n| json!({ "name": n.name, "kind": n.kind, "keys": n.keys })).collect::<Vec<_>>(),
        "topVersion": c.top_version.to_string(),
    })
    .to_string()
}
