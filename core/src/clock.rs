//! The store's clock, in milliseconds since the Unix epoch.
//!
//! Expiry is judged on this clock, never on SQLite's. Invariant: the clock
//! never goes backwards. A system clock that steps back is held at the last
//! time it showed, so an expired key is never revived; a manual clock refuses
//! to be set back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// The clock of one store: the system's, or a manual one that tests move.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    manual: AtomicBool,
    /// The manual time, or the highest system time seen so far.
    millis: AtomicI64,
}

/// Milliseconds since the Unix epoch of `t`, saturating at the bounds of i64.
pub fn to_millis(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

/// The time `ms` milliseconds after the Unix epoch.
pub fn from_millis(ms: i64) -> SystemTime {
    if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms as u64)
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    }
}

/// A duration in whole milliseconds, rounded up so that a span is never shorter
/// than asked, and saturating at i64::MAX.
pub fn duration_millis(d: Duration) -> i64 {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl Clock {
    /// The system clock, held so that it never goes backwards.
    pub fn system() -> Clock {
        Clock {
            inner: Arc::new(Inner {
                manual: AtomicBool::new(false),
                millis: AtomicI64::new(to_millis(SystemTime::now())),
            }),
        }
    }

    /// Holds a system clock at `ms` or later: the highest time the file's
    /// commits saw, so that a system clock set back while no process had
    /// the store open cannot revive an expired key. A manual clock keeps
    /// the time its test gave it.
    pub(crate) fn hold_at_least(&self, ms: i64) {
        if !self.is_manual() {
            self.inner.millis.fetch_max(ms, Ordering::AcqRel);
        }
    }

    /// The time to record as the file's high-water mark: the system clock's
    /// now, or 0 (which raises nothing) for a manual clock, whose times
    /// belong to its test and must not hold a later real clock.
    pub(crate) fn mark_millis(&self) -> i64 {
        if self.is_manual() { 0 } else { self.now_millis() }
    }

    /// A manual clock that shows `start` until a test moves it.
    pub fn manual(start: SystemTime) -> Clock {
        Clock {
            inner: Arc::new(Inner {
                manual: AtomicBool::new(true),
                millis: AtomicI64::new(to_millis(start)),
            }),
        }
    }

    /// Whether this is a manual (test) clock.
    pub fn is_manual(&self) -> bool {
        self.inner.manual.load(Ordering::Relaxed)
    }

    /// The time now, in milliseconds since the Unix epoch.
    pub fn now_millis(&self) -> i64 {
        if self.is_manual() {
            return self.inner.millis.load(Ordering::Acquire);
        }
        let sys = to_millis(SystemTime::now());
        // fetch_max keeps the highest time ever shown: a step back of the
        // system clock shows the last time instead.
        let prev = self.inner.millis.fetch_max(sys, Ordering::AcqRel);
        prev.max(sys)
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        from_millis(self.now_millis())
    }

    /// Moves a manual clock forward by `d`. Refused on the system clock.
    pub fn advance(&self, d: Duration) -> Result<SystemTime> {
        self.require_manual()?;
        let ms = duration_millis(d);
        // Saturating: a wrapping add would move the clock to before 1970.
        let add = |now: i64| Some(now.saturating_add(ms));
        let prev = self.inner.millis.fetch_update(Ordering::AcqRel, Ordering::Acquire, add);
        Ok(from_millis(prev.unwrap_or_else(|p| p).saturating_add(ms)))
    }

    /// Sets a manual clock to `t`, which must not be before its time now.
    pub fn set(&self, t: SystemTime) -> Result<()> {
        self.require_manual()?;
        let want = to_millis(t);
        let now = self.inner.millis.load(Ordering::Acquire);
        if want < now {
            return Err(Error::invalid(format!(
                "the clock never moves back: {} ms is before its time now, {} ms",
                want, now
            )));
        }
        self.inner.millis.fetch_max(want, Ordering::AcqRel);
        Ok(())
    }

    /// Moves a manual clock to `t`, or leaves it where it is when `t` is
    /// earlier, since the clock never moves back: for a test's own clock,
    /// read before every call, which may lag behind a racing call's.
    pub fn follow(&self, t: SystemTime) -> Result<()> {
        self.require_manual()?;
        self.inner.millis.fetch_max(to_millis(t), Ordering::AcqRel);
        Ok(())
    }

    fn require_manual(&self) -> Result<()> {
        if self.is_manual() {
            Ok(())
        } else {
            Err(Error::invalid(
                "only a store opened with a test clock can move its clock",
            ))
        }
    }
}
