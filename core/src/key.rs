//! Keys, owners and the byte path that joins them.
//!
//! A path is each owner as `01 name 00`, then the key as `02 name`, with a
//! NUL inside a name written `00 FF`. Invariants that follow:
//! - different splits of owners and key never give one path;
//! - a branch's own keys are the range `[prefix·02, prefix·03)` and its whole
//!   subtree `[prefix·01, prefix·03)`, so listing and clearing are range scans;
//! - paths sort as the text of their keys does, since `00 FF` sorts below `01`.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};

/// The longest path of owners and key, in encoded bytes.
pub const MAX_PATH: usize = 1024;

const OWNER: u8 = 0x01;
const KEY: u8 = 0x02;
const END: u8 = 0x03;

/// What can name a key or an owner: text, bytes, or an integer, which is its
/// decimal spelling (so `42` and `"42"` are one key).
pub trait AsKey {
    /// The bytes of the key's text.
    fn key_bytes(&self) -> Cow<'_, [u8]>;
}

impl AsKey for str {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.as_bytes())
    }
}
impl AsKey for String {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.as_bytes())
    }
}
impl AsKey for [u8] {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self)
    }
}
impl<const N: usize> AsKey for [u8; N] {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self)
    }
}
impl AsKey for Vec<u8> {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self)
    }
}
impl AsKey for Key {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.0)
    }
}
impl<T: AsKey + ?Sized> AsKey for &T {
    fn key_bytes(&self) -> Cow<'_, [u8]> {
        (**self).key_bytes()
    }
}
macro_rules! int_keys {
    ($($t:ty),*) => {$(
        impl AsKey for $t {
            fn key_bytes(&self) -> Cow<'_, [u8]> {
                Cow::Owned(self.to_string().into_bytes())
            }
        }
    )*};
}
int_keys!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

/// A key as the store keeps it: the bytes of its text.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub Vec<u8>);

impl Key {
    /// The key as text, when it is UTF-8 (keys written as text always are).
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&show_key(&self.0))
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?})", show_key(&self.0))
    }
}

impl PartialEq<str> for Key {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}
impl PartialEq<&str> for Key {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

/// How a key or an owner is shown in a message or a listing, in every
/// language and tool: itself when UTF-8 and printable, else each byte that
/// is not printable ASCII as `\xNN`.
pub fn show_key(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(char::is_control) => s.to_owned(),
        _ => bytes
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    (b as char).to_string()
                } else {
                    format!("\\x{b:02x}")
                }
            })
            .collect(),
    }
}

/// The path of owners and key as a message shows it, `owner/owner/key`,
/// each part as [`show_key`] shows it.
pub fn show_path<O: AsRef<[u8]>>(owners: &[O], key: Option<&[u8]>) -> String {
    let mut parts: Vec<String> = owners.iter().map(|o| show_key(o.as_ref())).collect();
    if let Some(k) = key {
        parts.push(show_key(k));
    }
    parts.join("/")
}

/// Where a path is built: a vector, or a write's inline buffer.
pub(crate) trait PathOut {
    fn push(&mut self, b: u8);
    fn extend_from_slice(&mut self, s: &[u8]);
    fn len(&self) -> usize;
    fn truncate(&mut self, len: usize);
}

impl PathOut for Vec<u8> {
    fn push(&mut self, b: u8) {
        Vec::push(self, b)
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        Vec::extend_from_slice(self, s)
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn truncate(&mut self, len: usize) {
        Vec::truncate(self, len)
    }
}

impl<const N: usize> PathOut for smallvec::SmallVec<[u8; N]> {
    fn push(&mut self, b: u8) {
        smallvec::SmallVec::push(self, b)
    }
    fn extend_from_slice(&mut self, s: &[u8]) {
        smallvec::SmallVec::extend_from_slice(self, s)
    }
    fn len(&self) -> usize {
        smallvec::SmallVec::len(self)
    }
    fn truncate(&mut self, len: usize) {
        smallvec::SmallVec::truncate(self, len)
    }
}

fn escape_into(out: &mut impl PathOut, name: &[u8]) {
    // Copied a run at a time, not a byte at a time: a key rarely holds a
    // zero byte, and a push per byte was 400 instructions of a get.
    let mut rest = name;
    while let Some(i) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..=i]);
        out.push(0xFF);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
}

/// The owners of a branch: their names, for messages, and their encoded prefix.
///
/// Shared, not owned: every write clones its handle's branch to carry it to
/// the writer, and a branch of one owner held three vectors to copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Branch {
    owners: Arc<[Vec<u8>]>,
    prefix: Arc<[u8]>,
}

impl Branch {
    /// The root of a handle: no owners.
    pub fn root() -> Branch {
        Branch::default()
    }

    /// The branch of `owner` under this one. An empty owner is refused at
    /// the first call on the branch, where the bucket can be named.
    pub fn child(&self, owner: &[u8]) -> Branch {
        let mut owners = self.owners.to_vec();
        owners.push(owner.to_vec());
        let mut prefix = self.prefix.to_vec();
        prefix.push(OWNER);
        escape_into(&mut prefix, owner);
        prefix.push(0);
        Branch {
            owners: owners.into(),
            prefix: prefix.into(),
        }
    }

    /// The encoded prefix of this branch.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The owners' names.
    pub fn owners(&self) -> &[Vec<u8>] {
        &self.owners
    }

    /// Checks the owners, naming the handle on failure.
    pub fn check(&self, handle: &str) -> Result<()> {
        if self.owners.iter().any(|o| o.is_empty()) {
            return Err(Error::invalid("an owner is empty").at(handle, self.show_with(None)));
        }
        if self.prefix.len() + 2 > MAX_PATH {
            return Err(
                Error::invalid(format!("the path of owners is over {MAX_PATH} bytes")).at(handle, self.show_with(None))
            );
        }
        Ok(())
    }

    /// The path of `key` in this branch, checked: not empty, at most 1 KiB.
    pub fn path(&self, handle: &str, key: &[u8]) -> Result<Vec<u8>> {
        let mut p = Vec::with_capacity(self.prefix.len() + key.len() + 1);
        self.path_into(handle, key, &mut p)?;
        Ok(p)
    }

    /// [`Branch::path`] appended to `out`, which is left as it was on an
    /// error.
    pub(crate) fn path_into(&self, handle: &str, key: &[u8], out: &mut impl PathOut) -> Result<()> {
        self.check(handle)?;
        if key.is_empty() {
            return Err(Error::invalid("a key is empty").at(handle, self.show_with(Some(key))));
        }
        let start = out.len();
        out.extend_from_slice(&self.prefix);
        out.push(KEY);
        escape_into(out, key);
        let len = out.len() - start;
        if len > MAX_PATH {
            out.truncate(start);
            return Err(
                Error::invalid(format!("the path of owners and key is {len} bytes, over {MAX_PATH}"))
                    .at(handle, self.show_with(Some(key))),
            );
        }
        Ok(())
    }

    /// `owner/owner/key`, for errors and listings.
    pub fn show_with(&self, key: Option<&[u8]>) -> String {
        show_path(&self.owners, key)
    }

    /// The range of this branch's own keys.
    pub fn own_keys(&self) -> (Vec<u8>, Vec<u8>) {
        let mut lo = self.prefix.to_vec();
        lo.push(KEY);
        let mut hi = self.prefix.to_vec();
        hi.push(END);
        (lo, hi)
    }

    /// The range of this branch and every branch under it.
    pub fn subtree(&self) -> (Vec<u8>, Vec<u8>) {
        let mut lo = self.prefix.to_vec();
        lo.push(OWNER);
        let mut hi = self.prefix.to_vec();
        hi.push(END);
        (lo, hi)
    }

    /// The key of a path in this branch's own range.
    pub fn key_of(&self, path: &[u8]) -> Result<Key> {
        let rest = path
            .strip_prefix(&self.prefix[..])
            .and_then(|r| r.strip_prefix(&[KEY]))
            .ok_or_else(|| Error::corrupt("a path does not belong to its branch"))?;
        let mut key = Vec::with_capacity(rest.len());
        let mut i = 0;
        while i < rest.len() {
            key.push(rest[i]);
            if rest[i] == 0 {
                if rest.get(i + 1) != Some(&0xFF) {
                    return Err(Error::corrupt("a path holds an unescaped NUL"));
                }
                i += 1;
            }
            i += 1;
        }
        Ok(Key(key))
    }

    /// The path after which a listing resumes, from a cursor key.
    pub fn after(&self, key: &[u8]) -> Vec<u8> {
        let mut p = self.prefix.to_vec();
        p.push(KEY);
        escape_into(&mut p, key);
        p
    }
}

/// Splits a full path into owners and key (for tools that list a whole bucket).
pub fn split_path(path: &[u8]) -> Result<(Vec<Vec<u8>>, Key)> {
    let bad = || Error::corrupt(format!("a path does not decode: {}", show_key(path)));
    let mut owners = Vec::new();
    let mut i = 0;
    loop {
        let tag = *path.get(i).ok_or_else(bad)?;
        i += 1;
        let mut name = Vec::new();
        loop {
            match path.get(i) {
                None if tag == KEY => return Ok((owners, Key(name))),
                None => return Err(bad()),
                Some(0) if path.get(i + 1) == Some(&0xFF) => {
                    name.push(0);
                    i += 2;
                }
                Some(0) if tag == OWNER => {
                    i += 1;
                    break;
                }
                Some(0) => return Err(bad()),
                Some(&b) => {
                    name.push(b);
                    i += 1;
                }
            }
        }
        if tag != OWNER {
            return Err(bad());
        }
        owners.push(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv01_splits_never_collide() {
        let a = Branch::root().child(b"a").child(b"b").path("t", b"c").unwrap();
        let b = Branch::root().child(b"a/b").path("t", b"c").unwrap();
        let c = Branch::root().child(b"a\0b").path("t", b"c").unwrap();
        let d = Branch::root().child(b"a").path("t", b"b\0c").unwrap();
        let all = [&a, &b, &c, &d];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(split_path(&c).unwrap().0, vec![b"a\0b".to_vec()]);
        assert_eq!(Branch::root().child(b"a").key_of(&d).unwrap().0, b"b\0c");
    }

    #[test]
    fn kv01_every_nul_is_escaped_and_read_back() {
        for key in [&b"\0"[..], b"\0\0", b"x\0", b"\0x", b"a\0\0b\0", b"plain"] {
            let mut out = Vec::new();
            escape_into(&mut out, key);
            let want: Vec<u8> = key
                .iter()
                .flat_map(|&b| if b == 0 { vec![0, 0xFF] } else { vec![b] })
                .collect();
            assert_eq!(out, want, "{key:?}");
            let path = Branch::root().path("t", key).unwrap();
            assert_eq!(Branch::root().key_of(&path).unwrap().0, key);
        }
    }

    #[test]
    fn kv09_paths_sort_as_keys() {
        let r = Branch::root();
        let mut keys: Vec<&[u8]> = vec![b"a", b"a\0b", b"a\x01", b"1", b"10", b"9", b"b"];
        let mut paths: Vec<Vec<u8>> = keys.iter().map(|k| r.path("t", k).unwrap()).collect();
        keys.sort();
        paths.sort();
        let back: Vec<Vec<u8>> = paths.iter().map(|p| r.key_of(p).unwrap().0).collect();
        assert_eq!(back, keys.iter().map(|k| k.to_vec()).collect::<Vec<_>>());
    }

    #[test]
    fn kv01_integer_is_decimal_text() {
        assert_eq!(42i64.key_bytes().as_ref(), b"42");
        assert_eq!((-7i32).key_bytes().as_ref(), b"-7");
    }
}
