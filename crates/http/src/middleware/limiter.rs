//! The in-process rate limiter, and how a request's caller is named without a database lookup.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::dev::ServiceRequest;
use async_trait::async_trait;
use compliance_ports::{RateDecision, RateLimit, RateLimiter, RepoError};
use sha2::{Digest, Sha256};

use crate::auth::{API_KEY_HEADER, SESSION_COOKIE};

/// Past this many buckets, full ones are dropped (a full bucket is the same as none).
const PRUNE_ABOVE: usize = 10_000;

/// Token buckets in this process's memory: right for one instance. Several instances need the
/// shared Redis limiter, or each grants the whole rate.
#[derive(Debug)]
pub struct MemoryRateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl MemoryRateLimiter {
    pub fn new(limit: RateLimit) -> Self {
        Self { limit, buckets: Mutex::new(HashMap::new()) }
    }

    fn take_at(&self, key: &str, now: Instant) -> RateDecision {
        let rate = f64::from(self.limit.per_second.max(1));
        let burst = f64::from(self.limit.burst.max(1));
        let Ok(mut buckets) = self.buckets.lock() else {
            return RateDecision::Allowed;
        };
        if buckets.len() > PRUNE_ABOVE {
            let refill = Duration::from_secs_f64(burst / rate);
            buckets.retain(|_, bucket| now.duration_since(bucket.at) < refill);
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket { tokens: burst, at: now });
        let tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(burst);
        *bucket = Bucket { tokens, at: now };
        if tokens >= 1.0 {
            bucket.tokens -= 1.0;
            RateDecision::Allowed
        } else {
            RateDecision::Limited { retry_after: Duration::from_secs_f64((1.0 - tokens) / rate) }
        }
    }
}

#[async_trait]
impl RateLimiter for MemoryRateLimiter {
    async fn take(&self, key: &str) -> Result<RateDecision, RepoError> {
        Ok(self.take_at(key, Instant::now()))
    }
}

/// The caller's bucket: the API key, else the session cookie, else the client address, each
/// hashed (a secret must not reach a limiter's keys). Credentials are not checked here: the route
/// refuses a wrong one, after one indexed lookup.
pub(crate) fn caller_key(req: &ServiceRequest, trust_forwarded: bool) -> String {
    if let Some(key) = req.headers().get(API_KEY_HEADER) {
        return format!("key:{}", digest(key.as_bytes()));
    }
    if let Some(cookie) = req.request().cookie(SESSION_COOKIE) {
        return format!("session:{}", digest(cookie.value().as_bytes()));
    }
    let address = if trust_forwarded {
        req.connection_info().realip_remote_addr().map(str::to_owned)
    } else {
        req.peer_addr().map(|address| address.ip().to_string())
    };
    format!("ip:{}", digest(address.unwrap_or_default().as_bytes()))
}

/// 128 bits of SHA-256, in hex: short keys that reveal nothing.
fn digest(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..16])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use actix_web::test::TestRequest;

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
    fn keys_hash_credentials() {
        let req = TestRequest::default().insert_header((API_KEY_HEADER, "cpk_secret")).to_srv_request();
        let key = caller_key(&req, false);
        assert!(key.starts_with("key:") && !key.contains("secret"), "{key}");
        let req =
            TestRequest::default().cookie(actix_web::cookie::Cookie::new(SESSION_COOKIE, "cps_x")).to_srv_request();
        assert!(caller_key(&req, false).starts_with("session:"));
        let req = TestRequest::default().peer_addr("10.0.0.1:4000".parse().unwrap()).to_srv_request();
        let other = TestRequest::default().peer_addr("10.0.0.1:5000".parse().unwrap()).to_srv_request();
        assert_eq!(caller_key(&req, false), caller_key(&other, false), "the port does not matter");
    }
}
