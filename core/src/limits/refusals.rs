//! What a rate limit on PostgreSQL keeps in memory: the keys it last saw
//! full, so that a request the shared row would refuse anyway is refused
//! without a round trip.
//!
//! It may only refuse, never let a request through: a key's `due` in the
//! database only moves later (each `allow` pushes it; a key whose `due`
//! passed is as good as new), so a request that the last `due` seen
//! refuses is refused by the real one too, judged at a time no earlier
//! than the database's clock now. That time is the clock the statement
//! returned plus the time since the statement was sent, which the
//! database's clock cannot have outrun (with a test clock, the store's own
//! time). Only a `reset` moves a `due` back: this process forgets its own
//! key at once, and a reset by another server reaches this cache within
//! [`HOLD`], after which a key is asked of the database again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::gcra::{Decision, Gcra};
use super::lock;

/// How long a refusal is answered from memory before the database is
/// asked again.
pub(crate) const HOLD: Duration = Duration::from_secs(1);
const HOLD_NS: i64 = HOLD.as_nanos() as i64;

/// The most keys held. Past it, keys whose hold ended go first, and a new
/// key that still finds no room goes to the database every time.
const MOST: usize = 10_000;

/// A key seen full.
struct Seen {
    /// Its `due` (ns) after the statement.
    due: i64,
    /// The clock the statement returned (ns).
    now: i64,
    /// When the statement was sent.
    sent: Instant,
}

impl Seen {
    /// The earliest the database's clock can be now, given the store's test
    /// clock (ns) when it has one, and how long ago the key was seen.
    fn now_and_age(&self, given: Option<i64>) -> (i64, i64) {
        match given {
            Some(now) => (now, now.saturating_sub(self.now)),
            None => {
                let age = i64::try_from(self.sent.elapsed().as_nanos()).unwrap_or(i64::MAX);
                (self.now.saturating_add(age), age)
            }
        }
    }
}

/// The keys of one rate limit seen full, by path.
#[derive(Default)]
pub(crate) struct Refusals {
    seen: Mutex<HashMap<Vec<u8>, Seen>>,
}

impl Refusals {
    /// The refusal of `n` requests of the key at `path`, when what was seen
    /// of it refuses them: `given` is the store's test clock (ns), `None`
    /// for the database's.
    pub(crate) fn refuses(&self, path: &[u8], given: Option<i64>, gcra: &Gcra, n: u64) -> Option<Decision> {
        let mut seen = lock(&self.seen);
        let s = seen.get(path)?;
        let (now, age) = s.now_and_age(given);
        if !(0..=HOLD_NS).contains(&age) {
            seen.remove(path);
            return None;
        }
        let d = gcra.decide(s.due, now, n);
        (!d.ok).then_some(d)
    }

    /// Keeps what a statement sent at `sent` left of the key: held when not
    /// one more request would pass, forgotten otherwise.
    pub(crate) fn saw(&self, path: &[u8], gcra: &Gcra, (due, now): (i64, i64), sent: Instant, given: Option<i64>) {
        let mut seen = lock(&self.seen);
        if gcra.decide(due, now, 1).ok {
            seen.remove(path);
            return;
        }
        if seen.len() >= MOST && !seen.contains_key(path) {
            seen.retain(|_, s| (0..=HOLD_NS).contains(&s.now_and_age(given).1));
            if seen.len() >= MOST {
                return;
            }
        }
        seen.insert(path.to_vec(), Seen { due, now, sent });
    }

    /// Forgets the key: this process reset it.
    pub(crate) fn forget(&self, path: &[u8]) {
        lock(&self.seen).remove(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn kv12_a_full_key_is_refused_from_memory_until_its_hold_ends() {
        let g = Gcra::new(1, Duration::from_secs(10), 1).unwrap();
        let r = Refusals::default();
        let now = 100 * S;
        // One request spent the burst: due is 10 s ahead.
        r.saw(b"k", &g, (now + 10 * S, now), Instant::now(), Some(now));
        assert!(r.refuses(b"k", Some(now), &g, 1).is_some());
        assert!(r.refuses(b"other", Some(now), &g, 1).is_none());
        // Past the hold, the database is asked again, whatever was seen.
        assert!(r.refuses(b"k", Some(now + HOLD_NS + 1), &g, 1).is_none());
        assert!(
            r.refuses(b"k", Some(now), &g, 1).is_none(),
            "a key past its hold is forgotten"
        );
    }

    #[test]
    fn kv12_a_key_with_room_is_never_held() {
        let g = Gcra::new(5, Duration::from_secs(5), 5).unwrap();
        let r = Refusals::default();
        let now = 100 * S;
        r.saw(b"k", &g, (now + S, now), Instant::now(), Some(now));
        assert!(r.refuses(b"k", Some(now), &g, 1).is_none());
        r.saw(b"k", &g, (now + 5 * S, now), Instant::now(), Some(now));
        assert!(r.refuses(b"k", Some(now), &g, 1).is_some());
        r.forget(b"k");
        assert!(r.refuses(b"k", Some(now), &g, 1).is_none());
    }
}
