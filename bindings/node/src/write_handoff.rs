//! Handing a turn's writes to the writer: held until the turn's
//! microtask, or, for a bucket's set without options, streamed into a burst.
//!
//! Writes issued in one turn of the event loop (64 `set`s of a
//! `Promise.all`) must reach the writer as one group. Any write is checked
//! and converted at once, but held: handed to the writer in a microtask
//! at the end of the turn, together, so the writer finds them all queued.
//!
//! A bucket's set without options on a store without a memory budget (whose
//! submit never waits) does better: it goes to the writer as it is made,
//! into a burst ([`tinystore::Burst`]) this thread holds open until the
//! turn's microtask. The writer inserts each set while JS makes the next,
//! and commits the turn's writes as one group when the burst ends: the JS
//! thread's work and the writer's overlap instead of taking turns (the sets
//! at 64 in flight of `bench/node/bench.mjs` measure it). Once anything of a turn is held, the rest of the turn
//! is held too, so writes keep the order they were made in.
//!
//! Invariants: the microtask is queued at most once a turn ([`HAND_OVER_DUE`]);
//! it, or a `close`/`maintain` before it, hands over every held write and
//! then ends the burst, so no burst outlives its turn (the core's
//! [`tinystore::TurnWrites`] and [`tinystore::open_thread_burst`]).

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::Arc;

use napi::sys::{self, napi_env, napi_value};
use tinystore::TurnWrites;

use crate::completions::{Completion, Pending};
use crate::convert::Ts;
use crate::napi_values as js;

thread_local! {
    /// Writes of this turn, waiting for the microtask that hands them over.
    static HELD: RefCell<TurnWrites<Held>> = const { RefCell::new(TurnWrites::new()) };
    /// `queueMicrotask` and the native function that hands them over, for this env.
    static HAND_OVER: RefCell<Option<(sys::napi_ref, sys::napi_ref)>> = const { RefCell::new(None) };
    /// Whether the microtask that ends this turn's writes is queued.
    static HAND_OVER_DUE: Cell<bool> = const { Cell::new(false) };
}

/// Sets up this env's microtask: keeps `queueMicrotask` and the native
/// function that hands them over.
pub(crate) fn init(env: napi_env) -> Ts<()> {
    let (mut global, mut queue) = (ptr::null_mut(), ptr::null_mut());
    js::check(
        unsafe { sys::napi_get_global(env, &mut global) },
        "finding the global object",
    )?;
    let status = unsafe { sys::napi_get_named_property(env, global, c"queueMicrotask".as_ptr(), &mut queue) };
    js::check(status, "finding queueMicrotask")?;
    let hand_over_fn = js::function(env, "handOverWrites", hand_over, ptr::null_mut())?;
    let kept = (js::keep(env, queue)?, js::keep(env, hand_over_fn)?);
    HAND_OVER.with(|u| *u.borrow_mut() = Some(kept));
    Ok(())
}

/// A write checked and converted, waiting to be handed to the engine.
struct Held {
    pending: Pending,
    work: Work,
}

/// What a held write does when handed over.
pub(crate) enum Work {
    /// Any write: gives its completion to one of the core's `*_then` calls.
    Call(Box<dyn FnOnce() -> tinystore::Result<()>>),
    /// A set without options, the hot write, kept as it is rather than in
    /// a boxed closure: no allocation for the call, its key inline.
    Set(SetArgs),
}

/// The parts of a set without options ([`set`]).
pub(crate) struct SetArgs {
    /// The bucket, shared with its handle.
    pub(crate) raw: Arc<tinystore::RawBucket>,
    /// The key.
    pub(crate) key: KeyBytes,
    /// The value, converted.
    pub(crate) value: tinystore::Raw,
    completion: Option<Completion>,
}

/// A key's bytes: inline when short (most keys), else on the heap.
pub(crate) enum KeyBytes {
    /// Up to [`KeyBytes::INLINE`] bytes.
    Inline(u8, [u8; KeyBytes::INLINE]),
    /// A longer key.
    Heap(Vec<u8>),
}

impl KeyBytes {
    /// The longest key kept inline.
    pub(crate) const INLINE: usize = 46;

    /// The key `k`, copied.
    pub(crate) fn new(k: &[u8]) -> KeyBytes {
        if k.len() <= Self::INLINE {
            let mut b = [0u8; Self::INLINE];
            b[..k.len()].copy_from_slice(k);
            KeyBytes::Inline(k.len() as u8, b)
        } else {
            KeyBytes::Heap(k.to_vec())
        }
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            KeyBytes::Inline(n, b) => &b[..usize::from(*n)],
            KeyBytes::Heap(v) => v,
        }
    }
}

/// Hands a set without options to the engine, as [`crate::completions::write`] with
/// `set_then` does; its answer settles the Promise the package keeps as
/// number `id`.
///
/// When `streams` (the store has no memory budget, so `set_then` never
/// waits) and nothing of this turn is held before it, the set goes to
/// the writer now, into a burst open until the turn's microtask: the
/// writer inserts each set while JS makes the next, and commits the turn's
/// writes as one group when the burst ends, instead of taking them all in
/// turn after JS has made them. Otherwise it is held as any write, so
/// writes keep their order. A set the engine refuses at once (the store
/// closed) is that error, thrown: its Promise is not made yet.
pub(crate) fn set(env: napi_env, mut args: SetArgs, id: u32, streams: bool) -> Ts<()> {
    let (pending, completion) = Pending::kept(env, id)?;
    args.completion = Some(completion);
    if !streams || HELD.with(|c| !c.borrow().is_empty()) {
        return hold(env, pending, Work::Set(args));
    }
    if !HAND_OVER_DUE.get() {
        schedule_hand_over(env)?;
    }
    stream(pending, args)
}

/// Gives a set to the writer now, in this thread's burst (see [`set`]),
/// open from the turn's first streamed set to the microtask that ends it.
fn stream(pending: Pending, args: SetArgs) -> Ts<()> {
    tinystore::open_thread_burst();
    match args.submit() {
        Ok(()) => pending.queued(Ok(())),
        Err(e) if pending.withdraw() => Err(e),
        // The completion took the answer: the Promise settles through it.
        Err(_) => Ok(()),
    }
}

/// [`set`] for a caller without an env (`tinystore_bucket_set` of `fast_writes`, which
/// Bun's FFI makes): does it only when no napi call is needed, that is when
/// this turn's microtask is already queued and other Promises are in flight
/// (so the threadsafe function is already ref'd), and the engine takes the
/// set. Says whether it did; `false` leaves nothing done, for the napi call
/// to do the set or throw its error.
pub(crate) fn set_from_c(mut args: SetArgs, id: u32, streams: bool) -> bool {
    if !HAND_OVER_DUE.get() {
        return false;
    }
    let Some((pending, completion)) = Pending::kept_in_flight(id) else {
        return false;
    };
    args.completion = Some(completion);
    if !streams || HELD.with(|c| !c.borrow().is_empty()) {
        // The microtask is queued: holding needs no napi call.
        HELD.with(|c| {
            c.borrow_mut().hold(Held {
                pending,
                work: Work::Set(args),
            })
        });
        return true;
    }
    stream(pending, args).is_ok()
}

impl SetArgs {
    /// The parts of a set, before its Promise is made.
    pub(crate) fn new(raw: Arc<tinystore::RawBucket>, key: &[u8], value: tinystore::Raw) -> SetArgs {
        SetArgs {
            raw,
            key: KeyBytes::new(key),
            value,
            completion: None,
        }
    }

    /// Gives the set to the engine: what `set_then` says.
    fn submit(self) -> tinystore::Result<()> {
        let SetArgs {
            raw,
            key,
            value,
            completion,
        } = self;
        let Some(completion) = completion else {
            return Ok(()); // never held without one
        };
        raw.set_then(key.as_slice(), value, tinystore::WriteOptions::default(), move |r| {
            completion.send_version(r)
        })
        .map(|_| ())
    }
}

/// Queues a checked write for the end of this turn.
pub(crate) fn hold(env: napi_env, pending: Pending, work: Work) -> Ts<()> {
    HELD.with(|c| c.borrow_mut().hold(Held { pending, work }));
    if !HAND_OVER_DUE.get() {
        schedule_hand_over(env)?;
    }
    Ok(())
}

/// Queues the microtask that hands this turn's writes to the engine.
fn schedule_hand_over(env: napi_env) -> Ts<()> {
    let Some((queue, hand_over_ref)) = HAND_OVER.with(|u| *u.borrow()) else {
        return Err(crate::completions::invalid("tinystore: the addon was not initialised"));
    };
    let mut f = ptr::null_mut();
    js::check(
        unsafe { sys::napi_get_reference_value(env, hand_over_ref, &mut f) },
        "finding handOverWrites",
    )?;
    js::call_kept(env, queue, &[f])?;
    HAND_OVER_DUE.set(true);
    Ok(())
}

/// The microtask: hands every held write to the engine, in order. A
/// write the engine refuses (the store closed meanwhile) rejects at once.
unsafe extern "C" fn hand_over(_env: napi_env, _info: sys::napi_callback_info) -> napi_value {
    hand_over_held();
    ptr::null_mut()
}

/// Hands this turn's writes to the engine now: before a `close` or
/// `maintain`, so that writes issued before it are queued before it.
pub(crate) fn hand_over_held() {
    HAND_OVER_DUE.set(false);
    let mut held = HELD.with(|c| c.borrow_mut().take());
    // The burst of the sets streamed this turn ends last: held writes join its group.
    tinystore::hand_over_turn(&mut held, |c| {
        let queued = match c.work {
            Work::Call(submit) => submit(),
            Work::Set(args) => args.submit(),
        };
        let _ = c.pending.queued(queued);
    });
    HELD.with(|c| c.borrow_mut().give_back(held));
}
