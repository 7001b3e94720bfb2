//! Fails when `include/tinystore.h` and the Rust code drift apart: every
//! exported function with its parameter and return types, every `#[repr(C)]`
//! struct with its fields, every opaque handle and every `TS_` constant must
//! appear on both sides, alike. (Instead of running cbindgen in CI.)

use std::collections::BTreeMap;

const HEADER: &str = include_str!("../include/tinystore.h");
const SOURCES: [&str; 11] = [
    include_str!("lib.rs"),
    include_str!("answers.rs"),
    include_str!("store.rs"),
    include_str!("bucket.rs"),
    include_str!("value.rs"),
    include_str!("limits.rs"),
    include_str!("once.rs"),
    include_str!("session.rs"),
    include_str!("session_kinds.rs"),
    include_str!("config.rs"),
    include_str!("logs.rs"),
];

/// What one side declares, in C spelling, keyed by name.
#[derive(Default, Debug)]
struct Decls {
    functions: BTreeMap<String, String>,
    structs: BTreeMap<String, String>,
    opaque: Vec<String>,
    constants: BTreeMap<String, String>,
    callbacks: BTreeMap<String, String>,
}

/// A Rust type in C spelling.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(rest) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(rest)).replace("* *", "**");
    }
    if let Some(rest) = t.strip_prefix("*const ") {
        let inner = c_type(rest);
        return if inner.ends_with('*') {
            format!("{inner} const *")
        } else {
            format!("const {inner} *")
        };
    }
    if let Some(inner) = t.strip_prefix("Option<").and_then(|r| r.strip_suffix('>')) {
        return c_type(inner);
    }
    match t {
        "i32" => "int32_t",
        "i64" => "int64_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "u8" => "uint8_t",
        "usize" => "size_t",
        "bool" => "bool",
        "" | "()" => "void",
        other => other,
    }
    .to_string()
}

/// Splits at commas outside brackets.
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for ch in s.chars() {
        match ch {
            '(' | '<' | '[' => depth += 1,
            ')' | '>' | ']' if !cur.ends_with('-') => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|p| p.trim().to_string()).collect()
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text between the `(` at `open` and its matching `)`.
fn parens(s: &str, open: usize) -> (&str, usize) {
    let mut depth = 0;
    for (i, ch) in s[open..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (&s[open + 1..open + i], open + i + 1);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses")
}

fn rust_decls() -> Decls {
    let mut d = Decls::default();
    for src in SOURCES {
        let lines: Vec<&str> = src.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("pub const TS_") {
                let (name, value) = rest.split_once(':').expect("a typed const");
                let value = value.split('=').nth(1).expect("a value").trim().trim_end_matches(';');
                d.constants.insert(format!("TS_{name}"), value.to_string());
            }
            if let Some(rest) = line.strip_prefix("pub type Ts") {
                let (name, ty) = rest.split_once('=').expect("a type alias");
                let ty = ty.trim().trim_end_matches(';');
                let open = ty.find('(').expect("a fn type");
                let (params, end) = parens(ty, open);
                let ret = ty[end..].trim().strip_prefix("->").unwrap_or("").trim();
                let ps: Vec<String> = split_top(params)
                    .iter()
                    .map(|p| c_type(p.split_once(':').expect("named").1))
                    .collect();
                d.callbacks.insert(
                    format!("Ts{}", name.trim()),
                    format!("{} ({})", c_type(ret), ps.join(", ")),
                );
            }
            if let Some(rest) = line.strip_prefix("pub struct Ts") {
                let name = format!("Ts{}", rest.split(['(', ' ', '{', ';']).next().unwrap());
                let repr_c = i > 0 && lines[..i].iter().rev().take(3).any(|l| l.trim() == "#[repr(C)]");
                if !repr_c {
                    d.opaque.push(name);
                    continue;
                }
                let mut fields = Vec::new();
                for f in &lines[i + 1..] {
                    let f = f.trim();
                    if f == "}" {
                        break;
                    }
                    if let Some(field) = f.strip_prefix("pub ") {
                        let (n, t) = field.split_once(':').expect("a field");
                        let t = t.trim().trim_end_matches(',');
                        match t.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
                            Some(array) => {
                                let (elem, len) = array.split_once(';').expect("an array type");
                                fields.push(format!("{} {}[{}]", c_type(elem), n.trim(), len.trim()));
                            }
                            None => fields.push(format!("{} {}", c_type(t), n.trim())),
                        }
                    }
                }
                d.structs.insert(name, fields.join("; "));
            }
        }
        // Functions: from the attribute to the body's opening brace.
        for (at, _) in src.match_indices("#[unsafe(no_mangle)]") {
            let sig = &src[at..];
            let fn_at = sig.find("fn ").expect("a function");
            let open = fn_at + sig[fn_at..].find('(').expect("params");
            let name = sig[fn_at + 3..open].trim().to_string();
            let (params, end) = parens(sig, open);
            let body = end + sig[end..].find('{').expect("a body");
            let ret = sig[end..body].trim().strip_prefix("->").unwrap_or("").trim();
            let ps: Vec<String> = split_top(params)
                .iter()
                .map(|p| c_type(p.split_once(':').expect("a named parameter").1))
                .collect();
            let ps = if ps.is_empty() {
                "void".to_string()
            } else {
                ps.join(", ")
            };
            d.functions.insert(name, format!("{} ({})", c_type(ret), ps));
        }
    }
    d
}

/// A C declaration's type without its name: `const uint8_t *key` -> `const uint8_t *`.
fn drop_name(decl: &str) -> String {
    let decl = squash(decl);
    if decl == "void" {
        return decl;
    }
    let cut = decl.rfind([' ', '*']).expect("a named declaration");
    let ty = decl[..=cut].trim().to_string();
    squash(&ty.replace('*', " * ")).replace("* *", "**")
}

fn header_decls() -> Decls {
    // Drop comments first.
    let mut text = String::new();
    let mut rest = HEADER;
    while let Some(i) = rest.find("/*") {
        text.push_str(&rest[..i]);
        let j = rest[i..].find("*/").expect("a closed comment");
        rest = &rest[i + j + 2..];
    }
    text.push_str(rest);
    let mut d = Decls::default();
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("#define TS_") {
            let mut parts = rest.split_whitespace();
            let name = parts.next().unwrap();
            d.constants
                .insert(format!("TS_{name}"), parts.next().unwrap().to_string());
        }
    }
    // Statements, without preprocessor lines and the C++ guard's braces.
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && l.trim() != "extern \"C\" {" && l.trim() != "}")
        .collect::<Vec<_>>()
        .join("\n");
    for stmt in code.split(';').map(squash) {
        if let Some(rest) = stmt.strip_prefix("typedef struct ") {
            let name = rest.split_whitespace().next().unwrap().to_string();
            if !rest.contains('{') {
                d.opaque.push(name);
            }
            continue;
        }
        if stmt.starts_with("typedef int32_t (*") {
            let name_end = stmt.find(")(").unwrap();
            let name = stmt["typedef int32_t (*".len()..name_end].to_string();
            let (params, _) = parens(&stmt, name_end + 1);
            let ps: Vec<String> = params.split(',').map(drop_name).collect();
            d.callbacks.insert(name, format!("int32_t ({})", ps.join(", ")));
            continue;
        }
        let Some(open) = stmt.find('(') else { continue };
        if stmt.starts_with('#') || stmt.contains('{') || stmt.contains('}') {
            continue;
        }
        let head = &stmt[..open];
        let name_at = head.rfind([' ', '*']).unwrap() + 1;
        let ret = squash(&head[..name_at].replace('*', " * "));
        let (params, _) = parens(&stmt, open);
        let ps: Vec<String> = params.split(',').map(drop_name).collect();
        d.functions
            .insert(head[name_at..].to_string(), format!("{} ({})", ret, ps.join(", ")));
    }
    // Struct bodies.
    let mut rest = text.as_str();
    while let Some(i) = rest.find("typedef struct ") {
        rest = &rest[i + "typedef struct ".len()..];
        let name = rest.split_whitespace().next().unwrap().to_string();
        let Some(open) = rest.find('{').filter(|&o| !rest[..o].contains(';')) else {
            continue;
        };
        let close = rest.find('}').unwrap();
        let fields: Vec<String> = rest[open + 1..close]
            .split(';')
            .map(squash)
            .filter(|f| !f.is_empty())
            .map(|f| {
                let cut = f.rfind([' ', '*']).unwrap() + 1;
                format!("{} {}", drop_name(&f), &f[cut..])
            })
            .collect();
        d.structs.insert(name, fields.join("; "));
    }
    d
}

fn normalize(s: &str) -> String {
    squash(&s.replace('*', " * "))
        .replace("* *", "**")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// Fails naming each item the two sides spell differently.
fn same(rust: &BTreeMap<String, String>, header: &BTreeMap<String, String>, what: &str) {
    let mut diffs = Vec::new();
    for name in rust.keys().chain(header.keys()) {
        let (r, h) = (rust.get(name), header.get(name));
        if r != h && !diffs.iter().any(|d: &String| d.starts_with(&format!("{name}:"))) {
            diffs.push(format!("{name}:\n  rust:   {r:?}\n  header: {h:?}"));
        }
    }
    assert!(
        diffs.is_empty(),
        "{what} differ between src/ and include/tinystore.h:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn header_declares_what_rust_exports() {
    let (r, h) = (rust_decls(), header_decls());
    assert!(
        r.functions.len() > 20,
        "the parser found too few functions: {:?}",
        r.functions.keys()
    );
    let norm = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()
    };
    same(&norm(&r.functions), &norm(&h.functions), "functions");
    same(&norm(&r.structs), &norm(&h.structs), "structs");
    same(&norm(&r.callbacks), &norm(&h.callbacks), "callback types");
    assert_eq!(r.constants, h.constants, "constants differ");
    let (mut ro, mut ho) = (r.opaque.clone(), h.opaque.clone());
    ro.sort();
    ho.sort();
    assert_eq!(ro, ho, "opaque handles differ");
}

#[test]
fn every_error_kind_has_its_own_code() {
    let codes: Vec<i32> = tinystore::ErrorKind::ALL.iter().map(|&k| crate::code_of(k)).collect();
    let mut unique = codes.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), codes.len());
    assert!(!codes.contains(&crate::TS_OK));
    for k in tinystore::ErrorKind::ALL {
        assert_eq!(crate::kind_of(crate::code_of(k)), Some(k));
    }
}

#[test]
fn header_compiles_as_c() {
    let Ok(out) = std::process::Command::new("cc")
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-std=c11", "-x", "c"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/include/tinystore.h"))
        .output()
    else {
        eprintln!("no C compiler: skipped");
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
