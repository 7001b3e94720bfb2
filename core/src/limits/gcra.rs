//! The generic cell rate algorithm (KV-12), as a pure function of a key's
//! one stored time.
//!
//! A key holds `due`: when its next request would be on schedule, in
//! nanoseconds. A request of `n` moves it `n` intervals later, starting from
//! now if it lies in the past, and passes if the result is at most `burst`
//! intervals ahead of now. So there is no window whose edge lets twice the
//! rate through, a key costs one integer, and a key whose `due` has passed
//! is exactly a key never seen.

use std::time::Duration;

/// The longest span `burst` intervals may cover (about 100 years), so that
/// times stay far inside i64 nanoseconds.
const MAX_TOLERANCE: i64 = 100 * 365 * 24 * 3600 * 1_000_000_000;

/// A rate and a burst, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gcra {
    /// Nanoseconds between two requests at the rate.
    pub interval: i64,
    /// Requests that may pass at once.
    pub burst: u64,
    /// `burst * interval`: how far ahead of now `due` may run.
    tolerance: i64,
}

/// What one request decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub ok: bool,
    pub left: u64,
    /// The key's new `due` (unchanged on a refusal).
    pub due: i64,
    /// After a refusal, when the same request would pass (ns).
    pub retry_at: Option<i64>,
}

impl Gcra {
    /// `count` requests every `per`, `burst` at once. The interval is
    /// rounded up, so the limit never lets more through than the rate.
    pub fn new(count: u64, per: Duration, burst: u64) -> Result<Gcra, String> {
        if count == 0 {
            return Err("a rate of 0 requests lets nothing through".into());
        }
        if per.is_zero() {
            return Err("a rate needs a span longer than zero".into());
        }
        if burst == 0 {
            return Err("a burst of 0 lets nothing through".into());
        }
        let per_ns = per.as_nanos();
        if per_ns < u128::from(count) {
            return Err(format!(
                "a rate of {count} per {per:?} is faster than one request a nanosecond"
            ));
        }
        let interval = per_ns.div_ceil(u128::from(count));
        let tolerance = interval.checked_mul(u128::from(burst));
        match tolerance {
            Some(t) if t <= MAX_TOLERANCE as u128 => Ok(Gcra {
                interval: interval as i64,
                burst,
                tolerance: t as i64,
            }),
            _ => Err(format!(
                "a burst of {burst} at {count} per {per:?} spans more than 100 years"
            )),
        }
    }

    /// How far ahead of now (ns) a key's `due` may run: `burst` intervals.
    pub fn tolerance(&self) -> i64 {
        self.tolerance
    }

    /// What `peek` answers for a key due at `due`: whether one request would
    /// pass now and how many would, counting nothing.
    pub fn peek(&self, due: i64, now: i64) -> Decision {
        let mut d = self.decide(due, now, 1);
        if d.ok {
            d.left += 1; // the one request a peek does not take
        }
        d
    }

    /// Decides a request of `n` (1 to `burst`) at `now` for a key due at `due`.
    #[inline]
    pub fn decide(&self, due: i64, now: i64, n: u64) -> Decision {
        let start = due.max(now);
        let cost = self.interval.saturating_mul(n as i64);
        let next = start.saturating_add(cost);
        let limit = now.saturating_add(self.tolerance);
        if next <= limit {
            Decision {
                ok: true,
                left: ((limit - next) / self.interval) as u64,
                due: next,
                retry_at: None,
            }
        } else {
            Decision {
                ok: false,
                left: (limit.saturating_sub(start).max(0) / self.interval) as u64,
                due,
                retry_at: Some(now.saturating_add(next - limit)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn kv12_three_per_three_seconds() {
        let g = Gcra::new(3, Duration::from_secs(3), 3).unwrap();
        let mut due = 0;
        let now = 100 * S;
        for left in [2, 1, 0] {
            let d = g.decide(due, now, 1);
            assert!(d.ok);
            assert_eq!(d.left, left);
            due = d.due;
        }
        let d = g.decide(due, now, 1);
        assert!(!d.ok);
        assert_eq!(d.retry_at, Some(now + S));
        assert!(g.decide(due, now + S, 1).ok);
    }

    #[test]
    fn kv12_bad_rates() {
        assert!(Gcra::new(0, Duration::from_secs(1), 1).is_err());
        assert!(Gcra::new(1, Duration::ZERO, 1).is_err());
        assert!(Gcra::new(5, Duration::from_nanos(4), 1).is_err());
        assert!(Gcra::new(1, Duration::from_secs(1), 0).is_err());
        assert!(Gcra::new(1, Duration::from_secs(200 * 365 * 86400), 1).is_err());
        assert!(Gcra::new(1, Duration::from_secs(3600), u64::MAX).is_err());
    }
}
