//! The limits table: rate limits and `flush_every` counters in memory that
//! every process on a store shares (KV-12, KV-14).
//!
//! The table is a file beside kv.db, `kv.db-limits`, that every process maps.
//! Each name has a region of it; each key of the name has a slot there, and
//! a change to a key is one compare-and-swap on its slot's 16-byte state, so
//! racing processes and threads count exactly and nobody waits on a lock to
//! count. kv.db stays the record: a flush (every second, one process at a
//! time) writes the slots whose state moved since kv.db last had it.
//!
//! Invariants:
//! - A process maps the table only while it holds the file's shared
//!   `flock`. A process that finds itself alone (it gets the lock exclusive)
//!   lays the table out anew with a new secret: kv.db then holds everything
//!   but what the last second changed, since a store flushes on close and a
//!   process that died holds nothing. A machine's restart is the same case.
//! - A layout this build does not know is refused, never replaced, while
//!   another process uses it.
//! - The file is opened once per process ([`open`] keeps a registry): a
//!   second descriptor closed would drop this process's `fcntl` locks on it.
//! - A key's slot is found without a lock; a new key goes in, and a clear
//!   takes keys out, under the region's key lock, which the kernel lets go
//!   of if its process dies.

mod file_lock;
mod layout;
mod region;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use file_lock::ByteLock;
use layout::{Entry, HEADER_SIZE, Header, LAYOUT_VERSION, MAGIC, MAX_NAMES, REGION_SIZE};
pub(crate) use layout::{MAX_PAYLOAD, MAX_SLOT_PATH, RegionKind, State};
pub(crate) use region::{Found, Place, Put, Region};

use super::lock;
use crate::error::{Error, ErrorKind, Result};

/// The table's file name, beside kv.db.
pub const TABLE_FILE: &str = "kv.db-limits";

/// How often an opener retries a table another process is laying out.
const LAYOUT_RETRIES: usize = 100;

/// A mapping of part of the table file.
struct Map {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is shared memory that every access reaches through
// atomics; the pointer itself is never written after mmap.
unsafe impl Send for Map {}
unsafe impl Sync for Map {}

impl Map {
    fn new(file: &File, offset: u64, len: u64, what: &Path) -> Result<Map> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh shared mapping of a file this process holds open;
        // the kernel picks the address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io_error(what, "mapping", std::io::Error::last_os_error()));
        }
        Ok(Map {
            ptr: ptr.cast(),
            len: len as usize,
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in Map::new; nothing refers to it after
        // its owner drops it.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

fn io_error(path: &Path, doing: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Io, format!("{doing} {}: {e}", path.display()))
}

/// The table of one store's file, shared by every store of this process on it.
pub(crate) struct Table {
    path: PathBuf,
    file: File,
    /// Descriptors of the same file opened through another path: closing one
    /// would drop this process's locks, so they stay open with the table.
    spare: Mutex<Vec<File>>,
    header: Map,
    directory: ByteLock,
    regions: Mutex<HashMap<i64, Weak<Region>>>,
    id: (u64, u64),
}

/// Every table this process maps, by path and by file.
static TABLES: Mutex<Vec<Weak<Table>>> = Mutex::new(Vec::new());

/// The table beside `db` (kv.db), mapped, created with kv.db's permissions
/// if it is new.
pub(crate) fn open(db: &Path) -> Result<Arc<Table>> {
    check_atomics()?;
    let path = db.with_file_name(TABLE_FILE);
    let mut tables = lock(&TABLES);
    tables.retain(|t| t.strong_count() > 0);
    if let Some(t) = tables.iter().filter_map(Weak::upgrade).find(|t| t.path == path) {
        return Ok(t);
    }
    let file = open_file(db, &path)?;
    let meta = file.metadata().map_err(|e| io_error(&path, "reading", e))?;
    let id = (meta.dev(), meta.ino());
    if let Some(t) = tables.iter().filter_map(Weak::upgrade).find(|t| t.id == id) {
        lock(&t.spare).push(file);
        return Ok(t);
    }
    let header = join(&file, &path)?;
    let t = Arc::new(Table {
        path,
        file,
        spare: Mutex::new(Vec::new()),
        header,
        directory: ByteLock::new(file_lock::DIRECTORY),
        regions: Mutex::new(HashMap::new()),
        id,
    });
    tables.push(Arc::downgrade(&t));
    Ok(t)
}

/// Refuses a machine whose 16-byte compare-and-swap is not one instruction:
/// a fallback through a lock would be this process's lock alone.
fn check_atomics() -> Result<()> {
    if portable_atomic::AtomicU128::is_lock_free() {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Io,
        "this processor has no 16-byte compare-and-swap, which rate limits and flush_every counters \
         shared by every process on the file need",
    ))
}

/// Opens (or creates) the table file with the permissions kv.db has.
fn open_file(db: &Path, path: &Path) -> Result<File> {
    let mode = std::fs::metadata(db)
        .map(|m| m.permissions().mode() & 0o666)
        .unwrap_or(0o600);
    match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
    {
        Ok(f) => {
            // The umask may have taken bits kv.db has: a group that shares
            // kv.db must share its table too.
            f.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| io_error(path, "setting the permissions of", e))?;
            Ok(f)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_error(path, "opening", e)),
        Err(e) => Err(io_error(path, "creating", e)),
    }
}

/// Takes this process's shared hold on the table, laying it out first if
/// no other process holds it, and maps its header.
fn join(file: &File, path: &Path) -> Result<Map> {
    for _ in 0..LAYOUT_RETRIES {
        if file_lock::try_exclusive(file).map_err(|e| io_error(path, "locking", e))? {
            lay_out(file, path)?;
        }
        file_lock::shared(file).map_err(|e| io_error(path, "locking", e))?;
        let mut head = [0u8; 12];
        let len = file.metadata().map_err(|e| io_error(path, "reading", e))?.len();
        if len >= HEADER_SIZE {
            file.read_exact_at(&mut head, 0)
                .map_err(|e| io_error(path, "reading", e))?;
        }
        if len >= HEADER_SIZE && head[..8] == MAGIC {
            let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
            if version != LAYOUT_VERSION {
                let _ = file_lock::unlock(file);
                return Err(Error::invalid(format!(
                    "{} is laid out as version {version} by another process on this store, and this build of \
                     TinyStore knows version {LAYOUT_VERSION}: run one version of TinyStore on a store at a time",
                    path.display()
                )));
            }
            return Map::new(file, 0, HEADER_SIZE, path);
        }
        if len >= HEADER_SIZE && head[..8] != [0; 8] {
            let _ = file_lock::unlock(file);
            return Err(Error::corrupt(format!(
                "{} is not a TinyStore limits table, and another process holds it open",
                path.display()
            )));
        }
        // Another process was laying it out and died: try to be the one.
        file_lock::unlock(file).map_err(|e| io_error(path, "unlocking", e))?;
        std::thread::yield_now();
    }
    Err(Error::new(
        ErrorKind::Io,
        format!("{} stays half laid out while other processes hold it", path.display()),
    ))
}

/// Lays the table out empty, with a new secret. Only a process alone on the
/// file (holding it exclusive) calls this.
fn lay_out(file: &File, path: &Path) -> Result<()> {
    let w = |e| io_error(path, "laying out", e);
    file.set_len(0).map_err(w)?;
    file.set_len(HEADER_SIZE).map_err(w)?;
    let mut head = Vec::with_capacity(48);
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&LAYOUT_VERSION.to_le_bytes());
    head.extend_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
    head.extend_from_slice(&secret());
    head.extend_from_slice(&HEADER_SIZE.to_le_bytes()); // next_offset
    // The magic last, so that a layout cut short reads as none.
    file.write_all_at(&head[8..], 8).map_err(w)?;
    file.write_all_at(&head[..8], 0).map_err(w)
}

/// 16 bytes from the operating system's random source.
fn secret() -> [u8; 16] {
    let mut s = [0u8; 16];
    let mut got = 0;
    while got < s.len() {
        // SAFETY: getrandom writes at most the length it is given into the buffer.
        let n = unsafe { libc::getrandom(s[got..].as_mut_ptr().cast(), s.len() - got, 0) };
        if n > 0 {
            got += n as usize;
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No getrandom (an old kernel): the standard library's seeds
            // come from the same source.
            use std::hash::{BuildHasher, RandomState};
            let a = RandomState::new().hash_one(1u8).to_le_bytes();
            let b = RandomState::new().hash_one(2u8).to_le_bytes();
            s[..8].copy_from_slice(&a);
            s[8..].copy_from_slice(&b);
            break;
        }
    }
    s
}

impl Table {
    fn header(&self) -> &Header {
        // SAFETY: the header mapping is HEADER_SIZE bytes, larger than Header
        // (layout.rs asserts it), page-aligned, and every field that changes
        // is an atomic.
        unsafe { &*(self.header.ptr as *const Header) }
    }

    /// The region of name `bucket`, laying it out if no process has:
    /// `read_until` says until when kv.db may hold live rows of the name
    /// (asked only for a new region), `period_ms` the counters' flush period.
    pub(crate) fn region(
        self: &Arc<Self>,
        bucket: i64,
        kind: RegionKind,
        period_ms: u64,
        read_until: impl FnOnce() -> Result<i64>,
    ) -> Result<Arc<Region>> {
        let mut regions = lock(&self.regions);
        if let Some(r) = regions.get(&bucket).and_then(Weak::upgrade) {
            return Ok(r);
        }
        let (index, entry) = match self.find(bucket) {
            Some(found) => found,
            None => self.add(bucket, kind, period_ms, read_until)?,
        };
        let offset = entry.offset.load(std::sync::atomic::Ordering::Acquire);
        let map = Map::new(&self.file, offset, REGION_SIZE, &self.path)?;
        let r = Arc::new(Region::new(self.clone(), index, map, entry));
        regions.insert(bucket, Arc::downgrade(&r));
        Ok(r)
    }

    /// The `flush_every` (ms) of counters `bucket`, if a process keeps them
    /// in the table.
    pub(crate) fn period_of(&self, bucket: i64) -> Option<u64> {
        use std::sync::atomic::Ordering::Acquire;
        let (_, e) = self.find(bucket)?;
        (e.kind.load(Acquire) == RegionKind::Counters as u32).then(|| e.period_ms.load(Acquire))
    }

    fn find(&self, bucket: i64) -> Option<(usize, &Entry)> {
        use std::sync::atomic::Ordering::Acquire;
        let h = self.header();
        let n = (h.names.load(Acquire) as usize).min(MAX_NAMES);
        h.directory[..n]
            .iter()
            .enumerate()
            .find(|(_, e)| e.ready.load(Acquire) == 1 && e.bucket.load(Acquire) == bucket)
    }

    fn add(
        &self,
        bucket: i64,
        kind: RegionKind,
        period_ms: u64,
        read_until: impl FnOnce() -> Result<i64>,
    ) -> Result<(usize, &Entry)> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let read_until = read_until()?;
        let _held = self
            .directory
            .hold(&self.file)
            .map_err(|e| io_error(&self.path, "locking", e))?;
        if let Some(found) = self.find(bucket) {
            return Ok(found); // another process added it meanwhile
        }
        let h = self.header();
        let index = h.names.load(Acquire) as usize;
        if index >= MAX_NAMES {
            return Err(Error::limit(format!(
                "{} holds {MAX_NAMES} names of rate limits and flush_every counters, its most",
                self.path.display()
            )));
        }
        let offset = h.next_offset.load(Acquire).max(HEADER_SIZE);
        self.file
            .set_len(offset + REGION_SIZE)
            .map_err(|e| io_error(&self.path, "growing", e))?;
        let map = Map::new(&self.file, offset, REGION_SIZE, &self.path)?;
        region::lay_out(&map, bucket, kind, read_until);
        drop(map);
        let e = &h.directory[index];
        e.kind.store(kind as u32, Release);
        e.bucket.store(bucket, Release);
        e.offset.store(offset, Release);
        e.period_ms.store(period_ms, Release);
        e.ready.store(1, Release);
        h.next_offset.store(offset + REGION_SIZE, Release);
        h.names.store(index as u32 + 1, Release);
        Ok((index, e))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // The maps go before the file, and with the file its flock.
        lock(&self.spare).clear();
    }
}
