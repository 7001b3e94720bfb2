//! Settling Promises from the engine's writer thread, and turning engine
//! errors into the package's error classes.
//!
//! Why this shape: a write
//! must not park a thread, so each write's Promise is a raw `napi_deferred`
//! handed to the core's completion form (`*_then`). The completion runs on
//! the writer thread, which cannot touch JS; it pushes the answer onto this
//! env's [`tinystore::AnswerQueue`], which calls one shared threadsafe
//! function once the writer has answered the whole group. The JS thread
//! then settles everything queued in one go, so a group of 64 writes costs
//! one cross-thread wake-up, not 64.
//!
//! Writes issued in one turn of the event loop (64 `set`s of a
//! `Promise.all`) reach the writer as one group: [`crate::write_handoff`] hands
//! them over (held until the turn's microtask, or streamed into a burst).
//!
//! A bucket's set without options, the hot write, settles no napi Promise:
//! the package makes its Promise and keeps it under a number, and the
//! addon hands each group's numbers back in one call (`settled(n)`, the
//! numbers in a shared `Uint32Array`) and each rejection in another
//! (`failed(id, error)`); see [`crate::fast_writes`].
//!
//! A transaction's turn is the exception: the writer hands JS the transaction
//! and then waits for JS's calls, so that answer wakes the JS thread at
//! once ([`Wake::AtOnce`]) instead of after the group, which would be never.
//!
//! Invariants:
//! - One [`Shared`] per napi env (main thread, each worker), created by
//!   `init` and found through a thread-local: an env lives on one thread.
//! - `inflight` counts Promises not yet settled; it is touched only on the
//!   JS thread. The threadsafe function is ref'd while it is above zero,
//!   so the process waits for pending writes, and unref'd at zero, so an
//!   idle store never keeps the process alive.
//! - Every deferred is settled exactly once: by its completion, by the
//!   caller when the engine refused the write before queueing it, or with
//!   `CLOSED` when a queued completion is dropped without being called.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use napi::Env;
use napi::bindgen_prelude::Unknown;
use napi::sys::{self, napi_env, napi_value};
use tinystore::ErrorKind;

use crate::convert::{Ts, to_napi};
use crate::napi_values as js;
use crate::write_handoff::Work;

/// Builds the settled value on the JS thread; an error rejects instead.
pub(crate) type Answer = Box<dyn FnOnce(napi_env) -> Ts<napi_value> + Send>;

/// One settled write, waiting for the JS thread.
pub(crate) struct Done {
    whom: Whom,
    outcome: std::result::Result<Answer, tinystore::Error>,
    /// The version a bare set wrote, which its Promise answers without an
    /// `Answer` of its own (0 for any other write).
    version: i64,
}

/// Whom an answer settles: a Promise the addon made, or one the package
/// made for a bare set and keeps under a number ([`crate::fast_writes`]),
/// which the addon settles a group at a time with one call into JS.
#[derive(Clone, Copy)]
enum Whom {
    Promise(sys::napi_deferred),
    Js(u32),
}

/// The package's side of the Promises it keeps by number (one per env):
/// `settled(n)` fulfils the first `n` numbers of `ids`, each with the
/// version at the same place of `versions`; `failed(id, error)` rejects one.
struct JsPromises {
    settled: sys::napi_ref,
    failed: sys::napi_ref,
    /// Keep the buffers of `ids` and `versions`, and so them, alive.
    _buffer: sys::napi_ref,
    _versions_buffer: sys::napi_ref,
    ids: *mut u32,
    /// A version is a count of the store's writes, far below 2^53, so a
    /// double holds it exactly.
    versions: *mut f64,
    cap: usize,
    /// How many numbers `ids` holds, not yet settled.
    len: usize,
}

// SAFETY: a napi_deferred is only an opaque handle; it is used on the JS
// thread alone (in `call_js`), after travelling through the queue.
unsafe impl Send for Done {}

/// The completion state of one napi env: its answers, and its side.
pub(crate) type Shared = tinystore::AnswerQueue<Done, JsThread>;

/// An env's side of its queue: the threadsafe function that wakes its
/// thread, and what settling needs there.
pub(crate) struct JsThread {
    tsfn: sys::napi_threadsafe_function,
    inflight: AtomicUsize,
    make_error: sys::napi_ref,
    /// The env itself, for a set made through the C call ([`crate::write_handoff::set_from_c`]),
    /// which gets none.
    env: napi_env,
}

// SAFETY: `tsfn` is made for calls from any thread; `make_error` and the
// ref/unref of `tsfn` are used only on the JS thread of this env.
unsafe impl Send for JsThread {}
unsafe impl Sync for JsThread {}

impl tinystore::Wake for JsThread {
    /// Wakes the JS thread to settle what the queue holds (any thread).
    fn wake(&self) {
        unsafe {
            sys::napi_call_threadsafe_function(self.tsfn, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking)
        };
    }
}

thread_local! {
    static SHARED: RefCell<Option<Arc<Shared>>> = const { RefCell::new(None) };
    /// The other vector of the completion queue, kept for its room.
    static SPARE_DONE: RefCell<Vec<Done>> = const { RefCell::new(Vec::new()) };
    /// The package's Promises kept by number, for this env.
    static JS_PROMISES: RefCell<Option<JsPromises>> = const { RefCell::new(None) };
}

/// Sets up this env: the threadsafe function and the function that makes
/// error objects (`makeError(code, message, bucket, key)`).
pub(crate) fn init(env: napi_env, make_error: napi_value) -> Ts<()> {
    if SHARED.with(|s| s.borrow().is_some()) {
        return Ok(());
    }
    let make_error = js::keep(env, make_error)?;
    let name = js::string(env, "tinystore completions")?;
    let mut tsfn = ptr::null_mut();
    // No JS function and no context: call_js finds this env's state in the
    // thread-local, since it runs on the env's own thread.
    js::check(
        unsafe {
            sys::napi_create_threadsafe_function(
                env,
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0, // an unbounded queue: the writer never blocks on JS
                1,
                ptr::null_mut(),
                None,
                ptr::null_mut(),
                Some(call_js),
                &mut tsfn,
            )
        },
        "creating the threadsafe function",
    )?;
    js::check(unsafe { sys::napi_unref_threadsafe_function(env, tsfn) }, "unref")?;
    crate::write_handoff::init(env)?;
    let shared = Arc::new(Shared::new(JsThread {
        tsfn,
        inflight: AtomicUsize::new(0),
        make_error,
        env,
    }));
    SHARED.with(|s| *s.borrow_mut() = Some(shared));
    Ok(())
}

/// This env's state, or an error when `init` was not called.
pub(crate) fn shared() -> Ts<Arc<Shared>> {
    SHARED
        .with(|s| s.borrow().clone())
        .ok_or_else(|| invalid("tinystore: the addon was not initialised"))
}

unsafe extern "C" fn call_js(env: napi_env, _cb: napi_value, _context: *mut c_void, _data: *mut c_void) {
    let Some(shared) = SHARED.try_with(|s| s.borrow().clone()).ok().flatten() else {
        return;
    };
    // The queue and a spare trade places, so that both keep their room
    // from group to group: a new vector a group cost a large allocation
    // (and glibc's consolidation of its free lists) on each side.
    let mut batch = SPARE_DONE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    shared.swap(&mut batch);
    if env.is_null() {
        return; // the env is going away: nothing can be settled
    }
    let n = batch.len();
    for done in batch.drain(..) {
        settle(env, &shared, done.whom, done.outcome, done.version);
    }
    flush_settled(env);
    SPARE_DONE.with(|s| *s.borrow_mut() = batch);
    shared.waker().finish_n(env, n);
}

/// Sets up the package's Promises kept by number: `settled` and `failed`
/// as [`JsPromises`] says. Returns `ids`, the `Uint32Array` the addon
/// writes the numbers of fulfilled Promises into, and `versions`, the
/// `Float64Array` of the versions they answer.
pub(crate) fn init_js_promises(env: napi_env, settled: napi_value, failed: napi_value) -> Ts<(napi_value, napi_value)> {
    const CAP: usize = 1024;
    let (data, buffer, ids) = typed_array(env, sys::TypedarrayType::uint32_array, CAP, 4, "the settled numbers")?;
    let (vdata, vbuffer, versions) =
        typed_array(env, sys::TypedarrayType::float64_array, CAP, 8, "the settled versions")?;
    let promises = JsPromises {
        settled: js::keep(env, settled)?,
        failed: js::keep(env, failed)?,
        _buffer: js::keep(env, buffer)?,
        _versions_buffer: js::keep(env, vbuffer)?,
        ids: data.cast(),
        versions: vdata.cast(),
        cap: CAP,
        len: 0,
    };
    JS_PROMISES.with(|p| *p.borrow_mut() = Some(promises));
    Ok((ids, versions))
}

/// A typed array of `cap` elements of `size` bytes over a buffer of its
/// own: (its memory, the buffer, the array).
fn typed_array(
    env: napi_env,
    ty: sys::napi_typedarray_type,
    cap: usize,
    size: usize,
    what: &str,
) -> Ts<(*mut std::ffi::c_void, napi_value, napi_value)> {
    let (mut data, mut buffer, mut array) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    js::check(
        unsafe { sys::napi_create_arraybuffer(env, cap * size, &mut data, &mut buffer) },
        &format!("making the buffer of {what}"),
    )?;
    js::check(
        unsafe { sys::napi_create_typedarray(env, ty, cap, buffer, 0, &mut array) },
        &format!("making {what}"),
    )?;
    Ok((data, buffer, array))
}

/// Calls the package's `settled(n)` for the numbers `ids` holds.
fn flush_settled(env: napi_env) {
    let call = JS_PROMISES.with(|p| {
        let mut p = p.borrow_mut();
        let p = p.as_mut()?;
        let n = std::mem::take(&mut p.len);
        (n > 0).then_some((p.settled, n))
    });
    if let Some((f, n)) = call {
        let mut arg = ptr::null_mut();
        unsafe { sys::napi_create_uint32(env, n as u32, &mut arg) };
        call_ref(env, f, &[arg]);
    }
}

/// Calls a function this env keeps, from a settling pass: what it throws
/// stays JS's, as an error of a `then` callback would.
fn call_ref(env: napi_env, f: sys::napi_ref, args: &[napi_value]) {
    let _ = js::call_kept(env, f, args);
}

/// Fulfils (with `version`, a set's answer) or rejects a Promise the
/// package keeps by number.
fn answer_js(env: napi_env, id: u32, rejection: Option<napi_value>, version: i64) {
    if let Some(err) = rejection {
        let failed = JS_PROMISES.with(|p| p.borrow().as_ref().map(|p| p.failed));
        if let Some(f) = failed {
            let mut arg = ptr::null_mut();
            unsafe { sys::napi_create_uint32(env, id, &mut arg) };
            call_ref(env, f, &[arg, err]);
        }
        return;
    }
    let full = JS_PROMISES.with(|p| {
        let mut p = p.borrow_mut();
        let Some(p) = p.as_mut() else { return false };
        // SAFETY: `ids` and `versions` are their buffers' memory, kept
        // alive by their references, and `len < cap` after every push.
        unsafe {
            *p.ids.add(p.len) = id;
            *p.versions.add(p.len) = version as f64;
        }
        p.len += 1;
        p.len == p.cap
    });
    if full {
        flush_settled(env);
    }
}

/// Rejects `whom` with the JS error `err`.
fn reject(env: napi_env, whom: Whom, err: napi_value) {
    match whom {
        Whom::Promise(d) => unsafe {
            sys::napi_reject_deferred(env, d, err);
        },
        Whom::Js(id) => answer_js(env, id, Some(err), 0),
    }
}

/// Resolves or rejects one Promise on the JS thread.
fn settle(
    env: napi_env,
    shared: &Shared,
    whom: Whom,
    outcome: std::result::Result<Answer, tinystore::Error>,
    version: i64,
) {
    let made = match (whom, outcome) {
        // A bare set's answer is its version, which the package makes.
        (Whom::Js(id), Ok(_)) => return answer_js(env, id, None, version),
        (_, outcome) => outcome.and_then(|answer| answer(env)),
    };
    let err = match made.map_err(|e| shared.waker().error_value(env, &e)) {
        Ok(v) => match whom {
            Whom::Promise(d) => {
                unsafe { sys::napi_resolve_deferred(env, d, v) };
                return;
            }
            Whom::Js(id) => return answer_js(env, id, None, version),
        },
        Err(Ok(err)) => err,
        // Making the error failed in napi itself: reject with what JS
        // threw, or with a plain Error saying so.
        Err(Err(e)) => unsafe {
            let (mut err, mut pending) = (ptr::null_mut(), false);
            sys::napi_is_exception_pending(env, &mut pending);
            if pending {
                sys::napi_get_and_clear_last_exception(env, &mut err);
            } else {
                let msg = js::string(env, e.message()).unwrap_or(ptr::null_mut());
                sys::napi_create_error(env, ptr::null_mut(), msg, &mut err);
            }
            err
        },
    };
    reject(env, whom, err);
}

impl JsThread {
    /// Counts a new pending Promise (JS thread only).
    fn begin(&self, env: napi_env) {
        if self.inflight.fetch_add(1, Ordering::Relaxed) == 0 {
            unsafe { sys::napi_ref_threadsafe_function(env, self.tsfn) };
        }
    }

    /// Counts `n` settled Promises (JS thread only).
    fn finish_n(&self, env: napi_env, n: usize) {
        if n == 0 {
            return;
        }
        if self.inflight.fetch_sub(n, Ordering::Relaxed) == n {
            unsafe { sys::napi_unref_threadsafe_function(env, self.tsfn) };
        }
    }

    /// The JS error object of an engine error: an instance of the
    /// package's class for its kind, made by `makeError`.
    pub(crate) fn error_value(&self, env: napi_env, e: &tinystore::Error) -> Ts<napi_value> {
        let text = |t: Option<&str>| t.map_or_else(|| js::undefined(env), |t| js::string(env, t));
        let args = [
            js::string(env, e.kind().code())?,
            js::string(env, e.message())?,
            text(e.bucket())?,
            text(e.path())?,
        ];
        js::call_kept(env, self.make_error, &args)
    }
}

/// Throws an engine error as the package's error class. Return the result
/// from a `#[napi]` function: napi-rs leaves the pending exception alone.
pub(crate) fn throw<T>(env: napi_env, e: tinystore::Error) -> napi::Result<T> {
    let v = shared().and_then(|s| s.waker().error_value(env, &e)).map_err(to_napi)?;
    unsafe { sys::napi_throw(env, v) };
    Err(napi::Error::new(napi::Status::PendingException, e.to_string()))
}

/// What a bare napi callback returns: its value, or, for an error, null
/// with the error thrown (what a callback returns with an exception pending
/// is ignored).
pub(crate) fn value_or_throw(env: napi_env, r: Ts<napi_value>) -> napi_value {
    r.unwrap_or_else(|e| {
        let _ = throw::<()>(env, e);
        ptr::null_mut()
    })
}

/// An `Invalid` engine error with a message, for bad input the glue finds.
pub(crate) fn invalid(message: impl Into<String>) -> tinystore::Error {
    tinystore::Error::new(ErrorKind::Invalid, message)
}

/// Where a completion puts its answer: whom it settles, until taken once.
struct Slot {
    /// The deferred, or for a Promise the package keeps, any non-null
    /// pointer; null once taken.
    deferred: AtomicPtr<sys::napi_deferred__>,
    /// The number of a Promise the package keeps, or `u32::MAX`.
    js: u32,
    armed: AtomicBool,
    shared: Arc<Shared>,
}

impl Slot {
    fn take(&self) -> Option<Whom> {
        let d = self.deferred.swap(ptr::null_mut(), Ordering::AcqRel);
        if d.is_null() {
            None
        } else if self.js != u32::MAX {
            Some(Whom::Js(self.js))
        } else {
            Some(Whom::Promise(d))
        }
    }
}

/// A Promise whose settling was handed to the engine.
pub(crate) struct Pending {
    slot: Arc<Slot>,
    env: napi_env,
}

/// The completion given to the engine: settles the Promise from any thread.
/// Dropped without being called after the write was queued, it rejects the
/// Promise with `CLOSED` rather than leaving it pending forever.
pub(crate) struct Completion {
    slot: Arc<Slot>,
}

impl Completion {
    /// Settles the Promise with `answer`, built later on the JS thread.
    pub(crate) fn send(self, outcome: std::result::Result<Answer, tinystore::Error>) {
        if let Some(whom) = self.slot.take() {
            self.slot.shared.push(Done {
                whom,
                outcome,
                version: 0,
            });
        }
    }

    /// Settles a bare set's Promise, which the package keeps by number,
    /// with the version written.
    pub(crate) fn send_version(self, written: tinystore::Result<tinystore::Version>) {
        if let Some(whom) = self.slot.take() {
            let version = written.as_ref().map_or(0, |v| v.get());
            // The answer captures nothing, so its box allocates nothing.
            let outcome = written.map(|_| Box::new(js::undefined) as Answer);
            self.slot.shared.push(Done { whom, outcome, version });
        }
    }

    /// Settles the Promise and wakes the JS thread at once ([`Wake::AtOnce`]).
    fn send_now(self, outcome: std::result::Result<Answer, tinystore::Error>) {
        if let Some(whom) = self.slot.take() {
            self.slot.shared.push_now(Done {
                whom,
                outcome,
                version: 0,
            });
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if self.slot.armed.load(Ordering::Acquire)
            && let Some(whom) = self.slot.take()
        {
            let e = tinystore::Error::unanswered();
            self.slot.shared.push(Done {
                whom,
                outcome: Err(e),
                version: 0,
            });
        }
    }
}

impl Pending {
    /// A new Promise, pending until its completion is sent.
    pub(crate) fn new(env: napi_env) -> Ts<(Pending, Completion, napi_value)> {
        let shared = shared()?;
        let mut deferred = ptr::null_mut();
        let mut promise = ptr::null_mut();
        js::check(
            unsafe { sys::napi_create_promise(env, &mut deferred, &mut promise) },
            "creating a promise",
        )?;
        let (pending, completion) = Pending::with(env, shared, deferred, u32::MAX);
        Ok((pending, completion, promise))
    }

    /// [`Pending::kept`] for a caller without an env (the C call of a set):
    /// `None` unless other Promises are in flight, so that the threadsafe
    /// function is ref'd already and no napi call is needed.
    pub(crate) fn kept_in_flight(id: u32) -> Option<(Pending, Completion)> {
        let shared = SHARED.with(|s| s.borrow().clone())?;
        if shared.waker().inflight.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let env = shared.waker().env;
        Some(Pending::with(env, shared, ptr::NonNull::dangling().as_ptr(), id))
    }

    /// A Promise the package made and keeps as number `id`, pending until
    /// its completion is sent.
    pub(crate) fn kept(env: napi_env, id: u32) -> Ts<(Pending, Completion)> {
        let shared = shared()?;
        Ok(Pending::with(env, shared, ptr::NonNull::dangling().as_ptr(), id))
    }

    fn with(env: napi_env, shared: Arc<Shared>, deferred: sys::napi_deferred, js: u32) -> (Pending, Completion) {
        shared.waker().begin(env);
        let slot = Arc::new(Slot {
            deferred: AtomicPtr::new(deferred),
            js,
            armed: AtomicBool::new(false),
            shared,
        });
        (
            Pending {
                slot: slot.clone(),
                env,
            },
            Completion { slot },
        )
    }

    /// Finishes the hand-off: `queued` is what the engine said when given
    /// the completion. A refusal rejects the Promise now.
    pub(crate) fn queued<T>(self, queued: tinystore::Result<T>) -> Ts<()> {
        match queued {
            Ok(_) => {
                self.slot.armed.store(true, Ordering::Release);
                Ok(())
            }
            Err(e) => self.reject_now(e),
        }
    }

    /// Takes back a Promise the engine refused before queueing it, for the
    /// caller to throw the error instead: says whether it was still
    /// unsettled (else its completion answered it, and will settle it).
    pub(crate) fn withdraw(self) -> bool {
        let taken = self.slot.take().is_some();
        if taken {
            self.slot.shared.waker().finish_n(self.env, 1);
        }
        taken
    }

    /// Rejects the Promise at once (on the JS thread), if not yet settled.
    pub(crate) fn reject_now(self, e: tinystore::Error) -> Ts<()> {
        if let Some(whom) = self.slot.take() {
            let shared = &self.slot.shared;
            let v = shared.waker().error_value(self.env, &e)?;
            reject(self.env, whom, v);
            shared.waker().finish_n(self.env, 1);
        }
        Ok(())
    }
}

/// The completion form of a core call: it answers through `done`.
pub(crate) type Then<T> = Box<dyn FnOnce(tinystore::Result<T>) + Send>;

/// Hands a write to the engine and returns its Promise. `submit` gives the
/// completion to one of the core's `*_then` calls; `answer` turns the
/// result into a JS value on the JS thread. Its answer wakes the JS thread
/// once the writer has answered the whole group.
pub(crate) fn write<'e, T: Send + 'static, R>(
    env: &'e Env,
    submit: impl FnOnce(Then<T>) -> tinystore::Result<R> + 'static,
    answer: impl FnOnce(napi_env, T) -> Ts<napi_value> + Send + 'static,
) -> napi::Result<Unknown<'e>> {
    write_waking(env, Wake::AfterGroup, submit, answer)
}

/// When a write's answer wakes the JS thread.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Wake {
    /// Once the writer has answered the whole group: one wake-up a group.
    AfterGroup,
    /// At once, for a call whose answer the writer waits on after giving
    /// it: the start of a transaction, whose turn the writer holds until JS
    /// sends the calls (after the group would be after the transaction).
    AtOnce,
}

/// [`write`], waking the JS thread as `wake` says.
pub(crate) fn write_waking<'e, T: Send + 'static, R>(
    env: &'e Env,
    wake: Wake,
    submit: impl FnOnce(Then<T>) -> tinystore::Result<R> + 'static,
    answer: impl FnOnce(napi_env, T) -> Ts<napi_value> + Send + 'static,
) -> napi::Result<Unknown<'e>> {
    let (pending, completion, promise) = sync(env, Pending::new(env.raw()))?;
    let done = move |r: tinystore::Result<T>| {
        let outcome = r.map(|v| Box::new(move |env| answer(env, v)) as Answer);
        if wake == Wake::AtOnce {
            completion.send_now(outcome);
        } else {
            completion.send(outcome);
        }
    };
    let cancel = crate::cancel::take_armed();
    let submit: Box<dyn FnOnce() -> tinystore::Result<()>> = Box::new(move || match cancel {
        Some(c) => tinystore::cancellable(&c, || submit(Box::new(done)).map(|_| ())),
        None => submit(Box::new(done)).map(|_| ()),
    });
    sync(env, crate::write_handoff::hold(env.raw(), pending, Work::Call(submit)))?;
    Ok(js::unknown(env.raw(), promise))
}

/// Runs blocking engine work (close, maintain, config) on a thread of its
/// own and returns its Promise: these are rare, and must not stall the
/// event loop.
pub(crate) fn off_thread<'e, T: Send + 'static>(
    env: &'e Env,
    work: impl FnOnce() -> tinystore::Result<T> + Send + 'static,
    answer: impl FnOnce(napi_env, T) -> Ts<napi_value> + Send + 'static,
) -> napi::Result<Unknown<'e>> {
    let (pending, completion, promise) = sync(env, Pending::new(env.raw()))?;
    let spawned = std::thread::Builder::new()
        .name("tinystore-call".into())
        .spawn(move || {
            let r = work();
            completion.send(r.map(|v| Box::new(move |env| answer(env, v)) as Answer));
        });
    sync(env, pending.queued(spawned.map_err(tinystore::Error::from)))?;
    Ok(js::unknown(env.raw(), promise))
}

/// Maps an engine result for a `#[napi]` body: an error is thrown as the
/// package's class.
pub(crate) fn sync<T>(env: &Env, r: tinystore::Result<T>) -> napi::Result<T> {
    r.or_else(|e| throw(env.raw(), e))
}

/// A JS value made by the engine's rules as a `#[napi]` body's answer, or
/// the engine's error thrown.
pub(crate) fn value<'e>(env: &'e Env, r: Ts<napi_value>) -> napi::Result<Unknown<'e>> {
    Ok(js::unknown(env.raw(), sync(env, r)?))
}

/// The answer of a write that answers nothing: `undefined`.
pub(crate) fn nothing<T>(env: napi_env, _: T) -> Ts<napi_value> {
    js::undefined(env)
}
