//! Durations as text (`"15m"`, `"1h30m"`) and rates (`"5/m"`, `"100/5h"`).
//!
//! One grammar for every language: the bindings pass the user's text here
//! rather than parse it themselves. A duration is units from largest to
//! smallest, each at most once: `w d h m s ms`. A rate is a count, a slash,
//! and a span with an optional number (`"5/m"` is five a minute).

use std::time::Duration;

use crate::error::{Error, Result};

const UNITS: [(&str, u64); 6] = [
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a duration such as `"15m"`, `"30d"`, `"1h30m"` or `"250ms"`.
///
/// ```
/// # use std::time::Duration;
/// assert_eq!(tinystore::parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
/// assert!(tinystore::parse_duration("90mins").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = |why: &str| {
        Error::invalid(format!(
            "duration {text:?} {why}: write units from largest to smallest, each once, as \"15m\", \"30d\" or \"1h30m\" (units w d h m s ms)"
        ))
    };
    if text.is_empty() {
        return Err(bad("is empty"));
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut next_unit = 0; // index into UNITS: units must come in order
    let mut total: u64 = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if start == i {
            return Err(bad("has no number before a unit"));
        }
        let n: u64 = text[start..i].parse().map_err(|_| bad("is too long"))?;
        let ustart = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        let unit = &text[ustart..i];
        let Some(pos) = UNITS.iter().position(|(u, _)| *u == unit) else {
            return Err(bad(&format!("has an unknown unit {unit:?}")));
        };
        if pos < next_unit {
            return Err(bad("repeats a unit or puts a smaller one first"));
        }
        next_unit = pos + 1;
        total = n
            .checked_mul(UNITS[pos].1)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| bad("is too long"))?;
    }
    Ok(Duration::from_millis(total))
}

/// The most milliseconds a duration given as a number may have: 2^53 - 1, the
/// largest integer a double (a JavaScript number) holds exactly, about 285,000
/// years. Past it a double no longer holds every millisecond, so a number there
/// is a mistake rather than a span.
pub const MAX_DURATION_MILLIS: f64 = 9_007_199_254_740_991.0;

/// A duration given as a number of milliseconds, as a binding of a language
/// without a duration type passes one (Node's `ttl: 60_000`), `what` naming
/// it in the refusal.
///
/// NaN, an infinity, a negative number and a number past
/// [`MAX_DURATION_MILLIS`] are `Invalid`, naming the number: refused, never
/// saturated, so `2 ** 64` ms is an error rather than the end of time. The
/// text is [`duration_from_nanos`]'s.
///
/// ```
/// # use std::time::Duration;
/// assert_eq!(tinystore::duration_from_millis(1500.0, "ttl").unwrap(), Duration::from_millis(1500));
/// assert!(tinystore::duration_from_millis(2f64.powi(64), "ttl").is_err());
/// ```
pub fn duration_from_millis(ms: f64, what: &str) -> Result<Duration> {
    if !(0.0..=MAX_DURATION_MILLIS).contains(&ms) {
        return Err(not_a_span(what, ms, "ms"));
    }
    // Whole milliseconds exactly (a double's seconds would round them), a
    // fraction cut to the nanosecond below (rounding could make it a whole ms).
    let whole = ms.trunc();
    Ok(Duration::from_millis(whole as u64) + Duration::from_nanos(((ms - whole) * 1e6) as u64))
}

/// A duration given as a signed number of nanoseconds (C's `int64_t`, a
/// Python `timedelta` counted in nanoseconds), `what` naming it: from 0 to
/// [`MAX_DURATION_MILLIS`] milliseconds, like [`duration_from_millis`], and
/// refused in the same words past either end.
///
/// ```
/// # use std::time::Duration;
/// assert_eq!(tinystore::duration_from_nanos(1500, "ttl").unwrap(), Duration::from_nanos(1500));
/// assert!(tinystore::duration_from_nanos(-1, "ttl").is_err());
/// ```
pub fn duration_from_nanos(ns: i128, what: &str) -> Result<Duration> {
    const MAX_NANOS: i128 = MAX_DURATION_MILLIS as i128 * 1_000_000;
    match ns {
        0..=MAX_NANOS => Ok(Duration::new((ns / 1_000_000_000) as u64, (ns % 1_000_000_000) as u32)),
        _ => Err(not_a_span(what, ns, "ns")),
    }
}

/// The one refusal of a duration given as a number.
fn not_a_span(what: &str, n: impl std::fmt::Display, unit: &str) -> Error {
    Error::invalid(format!(
        "{what} is {n} {unit}: a span of time is from 0 to 2^53 - 1 ms, never negative"
    ))
}

/// Parses a rate such as `"5/m"`, `"100/5h"` or `"300/7d"` into a count and a span.
///
/// ```
/// # use std::time::Duration;
/// assert_eq!(tinystore::parse_rate("100/5h").unwrap(), (100, Duration::from_secs(5 * 3600)));
/// ```
pub fn parse_rate(text: &str) -> Result<(u64, Duration)> {
    let bad = |why: &str| {
        Error::invalid(format!(
            "rate {text:?} {why}: write a count and a span, as \"5/m\", \"100/5h\" or \"300/7d\""
        ))
    };
    let Some((count, span)) = text.split_once('/') else {
        return Err(bad("has no '/'"));
    };
    if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("does not start with a count"));
    }
    let count: u64 = count.parse().map_err(|_| bad("has too large a count"))?;
    let span_text = if span.starts_with(|c: char| c.is_ascii_digit()) {
        span.to_owned()
    } else {
        format!("1{span}")
    };
    let span = parse_duration(&span_text).map_err(|_| bad("has no span after '/'"))?;
    if count == 0 {
        return Err(bad("lets nothing through"));
    }
    if span.is_zero() {
        return Err(bad("has an empty span"));
    }
    Ok((count, span))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv18_durations_parse_and_refuse() {
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(
            parse_duration("2w3d4h5m6s7ms").unwrap(),
            Duration::from_millis(((14 + 3) * 24 * 3600 + 4 * 3600 + 5 * 60 + 6) * 1000 + 7)
        );
        for bad in ["", "1hr", "30m1h", "90mins", "m", "1h1h", "-5m", "1.5h", " 1h"] {
            let e = parse_duration(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Invalid, "{bad}");
            assert!(e.message().contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn kv18_durations_in_milliseconds_refuse_what_is_not_a_span() {
        assert_eq!(duration_from_millis(0.0, "ttl").unwrap(), Duration::ZERO);
        assert_eq!(duration_from_millis(1.5, "ttl").unwrap(), Duration::from_micros(1500));
        assert_eq!(
            duration_from_millis(MAX_DURATION_MILLIS, "ttl").unwrap(),
            Duration::from_millis((1 << 53) - 1)
        );
        for (bad, shown) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (-1.0, "-1"),
            (2f64.powi(53), "9007199254740992"),
            (2f64.powi(64), "18446744073709552000"),
            (f64::MAX, "1797693134862315"),
        ] {
            let e = duration_from_millis(bad, "ttl").unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Invalid, "{bad}");
            assert!(e.message().contains(shown), "{bad}: {e}");
        }
        assert_eq!(
            duration_from_millis(-1.0, "ttl").unwrap_err().message(),
            "ttl is -1 ms: a span of time is from 0 to 2^53 - 1 ms, never negative"
        );
    }

    #[test]
    fn kv18_durations_in_nanoseconds_say_what_milliseconds_say() {
        let max = MAX_DURATION_MILLIS as i128 * 1_000_000;
        assert_eq!(duration_from_nanos(0, "ttl").unwrap(), Duration::ZERO);
        assert_eq!(
            duration_from_nanos(max, "ttl").unwrap(),
            Duration::from_millis((1 << 53) - 1)
        );
        for bad in [-5, max + 1] {
            assert_eq!(
                duration_from_nanos(bad, "keep").unwrap_err().message(),
                format!("keep is {bad} ns: a span of time is from 0 to 2^53 - 1 ms, never negative")
            );
        }
    }

    #[test]
    fn kv18_rates_parse_and_refuse() {
        assert_eq!(parse_rate("5/m").unwrap(), (5, Duration::from_secs(60)));
        assert_eq!(parse_rate("300/7d").unwrap(), (300, Duration::from_secs(7 * 86400)));
        for bad in ["", "5", "/m", "0/m", "5/0s", "5/x", "a/m", "5/1h1h"] {
            assert_eq!(parse_rate(bad).unwrap_err().kind(), crate::ErrorKind::Invalid, "{bad}");
        }
    }
}
