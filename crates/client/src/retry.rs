//! Which answers are tried again, and after how long.
//!
//! Only 429 (rate limited) and 503 (unavailable) are retried, and only when repeating the request
//! cannot do something twice:
//! - GET, HEAD, PUT and DELETE are idempotent: they are retried after either;
//! - POST and PATCH are retried after a 429 only. The rate limiter answers before any handler
//!   runs, so nothing was done; a 503 may come from a write whose commit the database made but
//!   could not confirm (docs/operations.md), so repeating a create could create twice.
//!
//! The wait is the answer's `Retry-After` (delay-seconds or an HTTP-date), else a doubling
//! backoff from [`RetryPolicy::backoff`]. A wait longer than [`RetryPolicy::max_wait`] is not
//! waited: the call returns the error, whose [`ApiError::retry_after`](crate::ApiError::retry_after)
//! says how long the server asked for.

use std::time::{Duration, SystemTime};

use reqwest::{Method, StatusCode};

/// How often and how long a call waits for a 429 or 503 to pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Requests sent at most per call, the first included (1: no retry).
    pub max_attempts: u32,
    /// The longest wait before a retry; a longer `Retry-After` ends the call with the error.
    pub max_wait: Duration,
    /// The first wait when the answer has no `Retry-After`; doubled for each further attempt.
    pub backoff: Duration,
}

impl Default for RetryPolicy {
    /// Three attempts, waits of at most 30 s, a backoff from 500 ms.
    fn default() -> Self {
        Self { max_attempts: 3, max_wait: Duration::from_secs(30), backoff: Duration::from_millis(500) }
    }
}

impl RetryPolicy {
    /// Sends every request once.
    pub fn never() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// The wait before attempt `attempt + 1`, or `None` to give up after attempt `attempt`
    /// (counted from 1) answered `status` with `retry_after`.
    pub(crate) fn wait(
        &self,
        method: &Method,
        status: StatusCode,
        retry_after: Option<Duration>,
        attempt: u32,
    ) -> Option<Duration> {
        if attempt >= self.max_attempts || !retryable(method, status) {
            return None;
        }
        let backoff = self.backoff.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        let wait = retry_after.unwrap_or(backoff);
        (wait <= self.max_wait).then_some(wait)
    }
}

fn retryable(method: &Method, status: StatusCode) -> bool {
    let idempotent = [Method::GET, Method::HEAD, Method::PUT, Method::DELETE].contains(method);
    match status {
        StatusCode::TOO_MANY_REQUESTS => true,
        StatusCode::SERVICE_UNAVAILABLE => idempotent,
        _ => false,
    }
}

/// A `Retry-After` value as a wait from `now`: delay-seconds, or an HTTP-date (a date in the past
/// is no wait). `None` for anything else.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(5));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(5)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(5));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn only_safe_repeats_are_retried() {
        let policy = RetryPolicy::default();
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        let limited = StatusCode::TOO_MANY_REQUESTS;
        let second = Some(Duration::from_secs(1));
        assert_eq!(policy.wait(&Method::GET, unavailable, second, 1), second);
        assert_eq!(policy.wait(&Method::DELETE, limited, second, 2), second);
        assert_eq!(policy.wait(&Method::GET, limited, second, 3), None, "three attempts at most");
        assert_eq!(policy.wait(&Method::POST, limited, second, 1), second);
        assert_eq!(policy.wait(&Method::POST, unavailable, second, 1), None, "a create may have committed");
        assert_eq!(policy.wait(&Method::PATCH, unavailable, second, 1), None);
        assert_eq!(policy.wait(&Method::GET, StatusCode::INTERNAL_SERVER_ERROR, None, 1), None);
        assert_eq!(policy.wait(&Method::GET, limited, Some(Duration::from_secs(31)), 1), None, "over max_wait");
        assert_eq!(policy.wait(&Method::GET, limited, None, 1), Some(Duration::from_millis(500)));
        assert_eq!(policy.wait(&Method::GET, limited, None, 2), Some(Duration::from_secs(1)));
        assert_eq!(RetryPolicy::never().wait(&Method::GET, limited, second, 1), None);
    }
}
