//! Token buckets in this process's memory.
//!
//! Kept on purpose rather than `governor`'s keyed limiter. The learned-credential rule would
//! survive the swap (the delivery layer picks the key), but the memory bound would not: governor
//! adds a state for every new key and cannot tell whether a key already has one, so "past
//! `MAX_BUCKETS`, new callers share one overflow bucket while callers with a bucket keep theirs"
//! would need a second set of keys beside its map. The arithmetic is the Redis script's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use compliance_ports::{RateDecision, RateLimit, RateLimiter, RepoError};

/// Past this many buckets, full ones are dropped (a full bucket is the same as none), at most
/// once per refill time (`burst / per_second`).
const PRUNE_ABOVE: usize = 10_000;
/// The most buckets kept. A new caller past it (after a prune, when one is due) is charged to one
/// shared overflow bucket until buckets empty out.
const MAX_BUCKETS: usize = 100_000;

/// Token buckets in this process's memory: right for one instance. Several instances need the
/// shared Redis limiter, or each grants the whole rate.
#[derive(Debug)]
pub struct MemoryRateLimiter {
    limit: RateLimit,
    state: Mutex<Buckets>,
}

#[derive(Debug)]
struct Buckets {
    by_key: HashMap<String, Bucket>,
    /// Shared by every new caller while `by_key` is full.
    overflow: Bucket,
    last_prune: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Refills the bucket up to `now`, then takes a token if it holds one.
    fn take(&mut self, now: Instant, rate: f64, burst: f64) -> RateDecision {
        let tokens = (self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * rate).min(burst);
        *self = Bucket { tokens, at: now };
        if tokens >= 1.0 {
            self.tokens -= 1.0;
            RateDecision::Allowed
        } else {
            RateDecision::Limited { retry_after: Duration::from_secs_f64((1.0 - tokens) / rate) }
        }
    }

    /// Whether it would be full at `now`, that is the same as no bucket.
    fn full_at(&self, now: Instant, rate: f64, burst: f64) -> bool {
        self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * rate >= burst
    }
}

impl MemoryRateLimiter {
    pub fn new(limit: RateLimit) -> Self {
        let now = Instant::now();
        let burst = f64::from(limit.burst.max(1));
        Self {
            limit,
            state: Mutex::new(Buckets {
                by_key: HashMap::new(),
                overflow: Bucket { tokens: burst, at: now },
                last_prune: now,
            }),
        }
    }

    fn take_at(&self, key: &str, now: Instant) -> RateDecision {
        self.take_bounded(key, now, PRUNE_ABOVE, MAX_BUCKETS)
    }

    fn take_bounded(&self, key: &str, now: Instant, prune_above: usize, max_buckets: usize) -> RateDecision {
        let rate = f64::from(self.limit.per_second.max(1));
        let burst = f64::from(self.limit.burst.max(1));
        let Ok(mut state) = self.state.lock() else {
            return RateDecision::Allowed;
        };
        let state = &mut *state;
        // A prune walks every bucket: at most once per refill time, when a bucket may have filled.
        let refill = Duration::from_secs_f64(burst / rate);
        if state.by_key.len() > prune_above && now.saturating_duration_since(state.last_prune) >= refill {
            state.by_key.retain(|_, bucket| !bucket.full_at(now, rate, burst));
            state.last_prune = now;
        }
        if let Some(bucket) = state.by_key.get_mut(key) {
            return bucket.take(now, rate, burst);
        }
        if state.by_key.len() >= max_buckets {
            return state.overflow.take(now, rate, burst);
        }
        let mut bucket = Bucket { tokens: burst, at: now };
        let decision = bucket.take(now, rate, burst);
        state.by_key.insert(key.to_owned(), bucket);
        decision
    }
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn take(&self, key: &str) -> Result<RateDecision, RepoError> {
        Ok(self.take_at(key, Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refills_at_the_rate() {
        let limiter = MemoryRateLimiter::new(RateLimit { per_second: 2, burst: 3 });
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.take_at("a", start), RateDecision::Allowed);
        }
        let RateDecision::Limited { retry_after } = limiter.take_at("a", start) else { panic!("over the burst") };
        assert_eq!(retry_after, Duration::from_millis(500));
        assert_eq!(limiter.take_at("b", start), RateDecision::Allowed, "another key has its own bucket");
        assert_eq!(limiter.take_at("a", start + Duration::from_millis(500)), RateDecision::Allowed);
        assert!(matches!(limiter.take_at("a", start + Duration::from_millis(600)), RateDecision::Limited { .. }));
        // Never more than the burst, however long the wait.
        let later = start + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(limiter.take_at("a", later), RateDecision::Allowed);
        }
        assert!(matches!(limiter.take_at("a", later), RateDecision::Limited { .. }));
    }

    #[test]
    fn buckets_are_pruned_at_most_once_per_refill_time_and_capped() {
        // Refill time: 2 / 1 = 2 s.
        let limiter = MemoryRateLimiter::new(RateLimit { per_second: 1, burst: 2 });
        let start = Instant::now();
        let take = |key: &str, at: Instant| limiter.take_bounded(key, at, 2, 4);
        let count = || limiter.state.lock().unwrap().by_key.len();
        for key in ["a", "b", "c", "d"] {
            assert_eq!(take(key, start), RateDecision::Allowed);
        }
        assert_eq!(count(), 4);
        // Full: a new caller shares the overflow bucket (burst 2), and no prune is due yet.
        let soon = start + Duration::from_secs(1);
        assert_eq!(take("e", soon), RateDecision::Allowed);
        assert_eq!(take("f", soon), RateDecision::Allowed);
        assert!(matches!(take("g", soon), RateDecision::Limited { .. }), "the overflow bucket is shared");
        assert_eq!(count(), 4, "no prune within the refill time");
        // Known callers keep their own buckets meanwhile.
        assert_eq!(take("a", soon), RateDecision::Allowed);
        // Once the refill time has passed, full buckets are dropped: new callers get their own again.
        let later = start + Duration::from_secs(3);
        assert_eq!(take("h", later), RateDecision::Allowed);
        assert_eq!(count(), 1, "every old bucket was full again");
        assert_eq!(take("h", later), RateDecision::Allowed);
        assert!(matches!(take("h", later), RateDecision::Limited { .. }), "h has a bucket of its own");
    }
}
