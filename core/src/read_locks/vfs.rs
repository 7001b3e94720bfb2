//! The VFS the readers open kv.db through: SQLite's own `unix` VFS, with
//! one change in `xShmLock`, which [`KeptLock`] decides. Every other call
//! goes straight to the `unix` file underneath.
//!
//! The file SQLite allocates for us is a [`KeepFile`] followed by the
//! `unix` file it wraps, so one allocation holds both, as SQLite's own
//! shims (`vfstrace`, the multiplexor) lay theirs out.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;
use std::sync::{Arc, OnceLock};

use rusqlite::ffi;

use super::KeptLock;

/// The name readers pass to `sqlite3_open_v2`.
pub(crate) const NAME: &CStr = c"tinystore-readers";

/// What SQLite allocates per open file of this VFS, ahead of the `unix` file.
#[repr(C)]
struct KeepFile {
    base: ffi::sqlite3_file,
    /// The main database's lock state (`Arc::into_raw`); null for the
    /// other files (the WAL, journals), whose calls only pass through.
    kept: *const KeptLock,
    /// The `unix` file, in the same allocation, just after this struct.
    real: *mut ffi::sqlite3_file,
}

/// Where the `unix` file starts in the allocation: past a [`KeepFile`],
/// rounded up to 8 bytes.
const REAL_AT: usize = std::mem::size_of::<KeepFile>().next_multiple_of(8);

struct Registered {
    /// The `unix` VFS this one wraps.
    real: *mut ffi::sqlite3_vfs,
}
// SAFETY: both VFS structs live for the process and SQLite itself calls
// them from any thread.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

static REGISTERED: OnceLock<Result<Registered, c_int>> = OnceLock::new();

/// Registers the VFS once for the process (not as the default). Returns
/// SQLite's error code if it could not.
pub(crate) fn register() -> Result<(), c_int> {
    let r = REGISTERED.get_or_init(|| {
        // SAFETY: sqlite3_vfs_find and _register are thread-safe; the copy
        // is leaked, as SQLite requires a registered VFS to outlive its use.
        unsafe {
            let rc = ffi::sqlite3_initialize();
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            let real = ffi::sqlite3_vfs_find(c"unix".as_ptr());
            if real.is_null() {
                return Err(ffi::SQLITE_ERROR);
            }
            // A copy of `unix`: its other methods ignore the VFS pointer
            // they are given or read only fields the copy shares with it.
            let mut ours: ffi::sqlite3_vfs = ptr::read(real);
            ours.szOsFile = (REAL_AT + (*real).szOsFile as usize) as c_int;
            ours.pNext = ptr::null_mut();
            ours.zName = NAME.as_ptr();
            ours.xOpen = Some(x_open);
            let ours = Box::into_raw(Box::new(ours));
            let rc = ffi::sqlite3_vfs_register(ours, 0);
            if rc != ffi::SQLITE_OK {
                drop(Box::from_raw(ours));
                return Err(rc);
            }
            Ok(Registered { real })
        }
    });
    r.as_ref().map(|_| ()).map_err(|rc| *rc)
}

fn real_vfs() -> *mut ffi::sqlite3_vfs {
    match REGISTERED.get() {
        Some(Ok(r)) => r.real,
        _ => unreachable!("x_open runs only once the VFS is registered"),
    }
}

/// The lock state of the main database file of `db`, if `db` was opened
/// through this VFS.
pub(crate) fn kept_lock_of(db: *mut ffi::sqlite3) -> Option<Arc<KeptLock>> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: FILE_POINTER writes the main database's sqlite3_file pointer.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            db,
            ptr::null(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&mut file as *mut *mut ffi::sqlite3_file).cast(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: a file whose methods are ours is a KeepFile; its `kept` is an
    // Arc::into_raw that lives until xClose, after this connection's use.
    unsafe {
        if (*file).pMethods != &METHODS {
            return None;
        }
        let kept = (*file.cast::<KeepFile>()).kept;
        if kept.is_null() {
            return None;
        }
        Arc::increment_strong_count(kept);
        Some(Arc::from_raw(kept))
    }
}

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite allocated szOsFile bytes at `file`, so the unix file
    // fits at REAL_AT; the real VFS fills it.
    unsafe {
        let f = file.cast::<KeepFile>();
        let real = file.cast::<u8>().add(REAL_AT).cast::<ffi::sqlite3_file>();
        (*f).base.pMethods = ptr::null();
        (*f).kept = ptr::null();
        (*f).real = real;
        (*real).pMethods = ptr::null();
        let vfs = real_vfs();
        let rc = ((*vfs).xOpen.expect("unix has xOpen"))(vfs, name, real, flags, out_flags);
        if (*real).pMethods.is_null() {
            return rc; // nothing to close
        }
        if (*(*real).pMethods).iVersion < 3 {
            // The unix VFS's files are all of version 3; a file without the
            // shared-memory methods cannot be a reader's database.
            ((*(*real).pMethods).xClose.expect("xClose"))(real);
            return ffi::SQLITE_CANTOPEN;
        }
        if rc == ffi::SQLITE_OK && flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            (*f).kept = Arc::into_raw(Arc::new(KeptLock::new(real)));
        }
        (*f).base.pMethods = &METHODS;
        rc
    }
}

/// The real file behind `f`.
///
/// # Safety
/// `f` is a file this VFS opened.
unsafe fn real(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    unsafe { (*f.cast::<KeepFile>()).real }
}

/// The real file's method table.
///
/// # Safety
/// As [`real`].
unsafe fn methods(f: *mut ffi::sqlite3_file) -> &'static ffi::sqlite3_io_methods {
    unsafe { &*(*real(f)).pMethods }
}

/// The lock state of `f`, if it is a main database.
///
/// # Safety
/// As [`real`].
unsafe fn kept<'a>(f: *mut ffi::sqlite3_file) -> Option<&'a KeptLock> {
    unsafe { (*f.cast::<KeepFile>()).kept.as_ref() }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file once, after its last other call.
    unsafe {
        let k = (*f.cast::<KeepFile>()).kept;
        if !k.is_null() {
            (*k).close();
            drop(Arc::from_raw(k));
            (*f.cast::<KeepFile>()).kept = ptr::null();
        }
        (methods(f).xClose.expect("xClose"))(real(f))
    }
}

unsafe extern "C" fn x_shm_lock(f: *mut ffi::sqlite3_file, ofst: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: `f` is ours; KeptLock calls the real xShmLock under its mutex.
    unsafe {
        match kept(f) {
            Some(k) => k.shm_lock(ofst, n, flags),
            None => (methods(f).xShmLock.expect("xShmLock"))(real(f), ofst, n, flags),
        }
    }
}

unsafe extern "C" fn x_shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: as above.
    unsafe {
        match kept(f) {
            Some(k) => k.shm_unmap(delete),
            None => (methods(f).xShmUnmap.expect("xShmUnmap"))(real(f), delete),
        }
    }
}

// The rest only pass through.

unsafe extern "C" fn x_read(f: *mut ffi::sqlite3_file, buf: *mut c_void, amt: c_int, ofst: i64) -> c_int {
    unsafe { (methods(f).xRead.expect("xRead"))(real(f), buf, amt, ofst) }
}
unsafe extern "C" fn x_write(f: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, ofst: i64) -> c_int {
    unsafe { (methods(f).xWrite.expect("xWrite"))(real(f), buf, amt, ofst) }
}
unsafe extern "C" fn x_truncate(f: *mut ffi::sqlite3_file, size: i64) -> c_int {
    unsafe { (methods(f).xTruncate.expect("xTruncate"))(real(f), size) }
}
unsafe extern "C" fn x_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    unsafe { (methods(f).xSync.expect("xSync"))(real(f), flags) }
}
unsafe extern "C" fn x_file_size(f: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    unsafe { (methods(f).xFileSize.expect("xFileSize"))(real(f), size) }
}
unsafe extern "C" fn x_lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { (methods(f).xLock.expect("xLock"))(real(f), level) }
}
unsafe extern "C" fn x_unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    unsafe { (methods(f).xUnlock.expect("xUnlock"))(real(f), level) }
}
unsafe extern "C" fn x_check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    unsafe { (methods(f).xCheckReservedLock.expect("xCheckReservedLock"))(real(f), out) }
}
unsafe extern "C" fn x_file_control(f: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    unsafe { (methods(f).xFileControl.expect("xFileControl"))(real(f), op, arg) }
}
unsafe extern "C" fn x_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    unsafe { (methods(f).xSectorSize.expect("xSectorSize"))(real(f)) }
}
unsafe extern "C" fn x_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    unsafe { (methods(f).xDeviceCharacteristics.expect("xDeviceCharacteristics"))(real(f)) }
}
unsafe extern "C" fn x_shm_map(
    f: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    unsafe { (methods(f).xShmMap.expect("xShmMap"))(real(f), region, size, extend, out) }
}
unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    unsafe { (methods(f).xShmBarrier.expect("xShmBarrier"))(real(f)) }
}
unsafe extern "C" fn x_fetch(f: *mut ffi::sqlite3_file, ofst: i64, amt: c_int, out: *mut *mut c_void) -> c_int {
    unsafe { (methods(f).xFetch.expect("xFetch"))(real(f), ofst, amt, out) }
}
unsafe extern "C" fn x_unfetch(f: *mut ffi::sqlite3_file, ofst: i64, p: *mut c_void) -> c_int {
    unsafe { (methods(f).xUnfetch.expect("xUnfetch"))(real(f), ofst, p) }
}
