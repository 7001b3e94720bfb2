//! A rate limit and a quota opened from rates written as text (`"5/m"`,
//! `"100/5h"`), as every binding takes them: a bad rate is refused here,
//! naming its window, so that it reads the same in every language.

use crate::durations::parse_rate;
use crate::error::{Error, Result};
use crate::store::Store;

use super::{Quota, RateLimit};

impl Store {
    /// Opens the rate limit `name` at `rate` (as `"5/m"`), letting `burst`
    /// requests through at once (the rate's count when not given). A rate
    /// limit given no rate is refused in the builder's one text.
    pub fn rate_limit_at(&self, name: &str, rate: Option<&str>, burst: Option<u64>) -> Result<RateLimit> {
        let builder = match rate {
            Some(rate) => {
                let (count, per) = parse_rate(rate).map_err(|e| e.in_bucket(name))?;
                self.rate_limit(name).rate(count, per)
            }
            None => self.rate_limit(name),
        };
        match burst {
            Some(burst) => builder.burst(burst),
            None => builder,
        }
        .open()
    }

    /// Opens the quota `name` with a window a `(window, rate)` pair, each
    /// rate as `"100/5h"`: a bad rate's error names its window.
    pub fn quota_at<'a>(&self, name: &str, windows: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Quota> {
        let mut builder = self.quota(name);
        for (window, rate) in windows {
            let (limit, span) = parse_rate(rate).map_err(|e| window_rate_error(e, name, window))?;
            builder = builder.window(window, limit, span);
        }
        builder.open()
    }
}

/// The refusal `e` of the rate of the quota `name`'s `window`, naming the
/// window: one text for every binding, whatever form its rates take.
pub fn window_rate_error(e: Error, name: &str, window: &str) -> Error {
    Error::new(e.kind(), format!("window {window:?}: {}", e.message())).in_bucket(name)
}
