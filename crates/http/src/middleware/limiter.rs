//! The in-process rate limiter, and how a request's caller is named without a database lookup.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;
use async_trait::async_trait;
use compliance_ports::{RateDecision, RateLimit, RateLimiter, RepoError};
use sha2::{Digest, Sha256};

use crate::auth::{API_KEY_HEADER, SESSION_COOKIE};

/// Past this many buckets, full ones are dropped (a full bucket is the same as none), at most
/// once per refill time (`burst / per_second`).
const PRUNE_ABOVE: usize = 10_000;
/// The most buckets kept. A new caller past it (after a prune, when one is due) is charged to one
/// shared overflow bucket until buckets empty out.
const MAX_BUCKETS: usize = 100_000;
/// The most credentials remembered as valid; past it, an arbitrary one is forgotten.
const MAX_KNOWN_CREDENTIALS: usize = 10_000;

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

/// Digests of credentials that have been seen to work (a request with them was answered other than
/// 401), so that their requests are charged to their own bucket; bounded.
#[derive(Debug, Default)]
pub(crate) struct KnownCredentials {
    digests: Mutex<HashSet<String>>,
}

impl KnownCredentials {
    pub(crate) fn contains(&self, credential: &str) -> bool {
        self.digests.lock().is_ok_and(|digests| digests.contains(credential))
    }

    pub(crate) fn learn(&self, credential: &str) {
        self.learn_bounded(credential, MAX_KNOWN_CREDENTIALS);
    }

    fn learn_bounded(&self, credential: &str, max: usize) {
        let Ok(mut digests) = self.digests.lock() else { return };
        if digests.contains(credential) {
            return;
        }
        if digests.len() >= max {
            // Simple eviction: an arbitrary one. A forgotten valid credential is charged to its
            // client address again until its next answered request.
            if let Some(victim) = digests.iter().next().cloned() {
                digests.remove(&victim);
            }
        }
        digests.insert(credential.to_owned());
    }

    pub(crate) fn forget(&self, credential: &str) {
        if let Ok(mut digests) = self.digests.lock() {
            digests.remove(credential);
        }
    }
}

/// Who a request is charged to: its credential's digest (when it sends one) and its client address.
#[derive(Debug)]
pub(crate) struct Caller {
    /// `key:…` or `session:…`: the API key, else the session cookie, hashed.
    pub(crate) credential: Option<String>,
    /// `ip:…`: the client address, hashed.
    pub(crate) address: String,
}

impl Caller {
    /// Names the caller without a database lookup: credentials are not checked here, and are
    /// hashed (a secret must not reach a limiter's keys).
    pub(crate) fn of(req: &ServiceRequest, trust_forwarded: bool) -> Self {
        let credential = if let Some(key) = req.headers().get(API_KEY_HEADER) {
            Some(format!("key:{}", digest(key.as_bytes())))
        } else {
            req.request().cookie(SESSION_COOKIE).map(|cookie| format!("session:{}", digest(cookie.value().as_bytes())))
        };
        let peer = req.peer_addr().map(|address| address.ip().to_string());
        let address = if trust_forwarded { forwarded_client(req.headers()).or(peer) } else { peer };
        Self { credential, address: format!("ip:{}", digest(address.unwrap_or_default().as_bytes())) }
    }

    /// The bucket to charge: the credential's once it is known to be valid, else the address's,
    /// so that invented credentials share their client's bucket.
    pub(crate) fn bucket(&self, known: &KnownCredentials) -> &str {
        match &self.credential {
            Some(credential) if known.contains(credential) => credential,
            _ => &self.address,
        }
    }
}

/// The client address that the trusted proxy itself saw: the rightmost `X-Forwarded-For` entry
/// (proxies append to it, so entries further left are the client's to forge), else the last `for=`
/// of `Forwarded`; without a port.
fn forwarded_client(headers: &HeaderMap) -> Option<String> {
    let last_value = |name: &str| headers.get_all(name).filter_map(|value| value.to_str().ok()).last();
    if let Some(list) = last_value("x-forwarded-for") {
        return list.rsplit(',').map(str::trim).find(|entry| !entry.is_empty()).map(without_port);
    }
    let forwarded = last_value("forwarded")?;
    forwarded
        .rsplit(',')
        .find_map(|element| {
            element.split(';').find_map(|pair| {
                let (name, value) = pair.split_once('=')?;
                name.trim().eq_ignore_ascii_case("for").then(|| value.trim().trim_matches('"'))
            })
        })
        .filter(|value| !value.is_empty())
        .map(without_port)
}

/// `1.2.3.4:80` → `1.2.3.4`, `[2001:db8::1]:80` → `2001:db8::1`; a bare IPv6 address, or an
/// obfuscated identifier (`unknown`, `_hidden`), is kept as it is.
fn without_port(address: &str) -> String {
    if let Ok(ip) = address.parse::<IpAddr>() {
        return ip.to_string();
    }
    if let Ok(socket) = address.parse::<SocketAddr>() {
        return socket.ip().to_string();
    }
    if let Some(rest) = address.strip_prefix('[')
        && let Some((host, _)) = rest.split_once(']')
    {
        return host.parse::<IpAddr>().map_or_else(|_| host.to_owned(), |ip| ip.to_string());
    }
    match address.split_once(':') {
        Some((host, port)) if !port.contains(':') => host.to_owned(),
        _ => address.to_owned(),
    }
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

    #[test]
    fn known_credentials_are_bounded() {
        let known = KnownCredentials::default();
        for i in 0..5 {
            known.learn_bounded(&format!("key:{i}"), 3);
        }
        assert_eq!(known.digests.lock().unwrap().len(), 3);
        assert!(known.contains("key:4"), "the newest is kept");
        known.forget("key:4");
        assert!(!known.contains("key:4"));
    }

    #[test]
    fn invented_credentials_are_charged_to_the_address() {
        let known = KnownCredentials::default();
        let req = TestRequest::default()
            .insert_header((API_KEY_HEADER, "cpk_secret"))
            .peer_addr("10.0.0.1:4000".parse().unwrap())
            .to_srv_request();
        let caller = Caller::of(&req, false);
        let credential = caller.credential.clone().unwrap();
        assert!(credential.starts_with("key:") && !credential.contains("secret"), "{credential}");
        assert_eq!(caller.bucket(&known), caller.address, "not known yet: the address");
        known.learn(&credential);
        assert_eq!(caller.bucket(&known), credential, "known: its own bucket");
    }

    #[test]
    fn keys_hash_credentials() {
        let req = TestRequest::default().insert_header((API_KEY_HEADER, "cpk_secret")).to_srv_request();
        let key = Caller::of(&req, false).credential.unwrap();
        assert!(key.starts_with("key:") && !key.contains("secret"), "{key}");
        let req =
            TestRequest::default().cookie(actix_web::cookie::Cookie::new(SESSION_COOKIE, "cps_x")).to_srv_request();
        assert!(Caller::of(&req, false).credential.unwrap().starts_with("session:"));
        let req = TestRequest::default().peer_addr("10.0.0.1:4000".parse().unwrap()).to_srv_request();
        let other = TestRequest::default().peer_addr("10.0.0.1:5000".parse().unwrap()).to_srv_request();
        assert_eq!(Caller::of(&req, false).address, Caller::of(&other, false).address, "the port does not matter");
        assert!(Caller::of(&req, false).credential.is_none());
    }

    fn forwarded(headers: &[(&str, &str)]) -> Option<String> {
        let mut req = TestRequest::default();
        for &(name, value) in headers {
            req = req.append_header((name, value));
        }
        forwarded_client(req.to_srv_request().headers())
    }

    #[test]
    fn the_forwarded_client_is_the_rightmost_entry_without_its_port() {
        // A client's forged entries come first; the trusted proxy appends what it saw.
        assert_eq!(forwarded(&[("X-Forwarded-For", "6.6.6.6, 203.0.113.7")]).as_deref(), Some("203.0.113.7"));
        assert_eq!(
            forwarded(&[("X-Forwarded-For", "6.6.6.6"), ("X-Forwarded-For", "203.0.113.7:5123")]).as_deref(),
            Some("203.0.113.7")
        );
        assert_eq!(forwarded(&[("X-Forwarded-For", "1.1.1.1,2001:db8::1")]).as_deref(), Some("2001:db8::1"));
        assert_eq!(forwarded(&[("X-Forwarded-For", "[2001:db8::1]:443")]).as_deref(), Some("2001:db8::1"));
        assert_eq!(forwarded(&[("X-Forwarded-For", "203.0.113.7, ")]).as_deref(), Some("203.0.113.7"));
        assert_eq!(
            forwarded(&[("Forwarded", r#"for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https"#)]).as_deref(),
            Some("2001:db8:cafe::17")
        );
        assert_eq!(
            forwarded(&[("Forwarded", "for=6.6.6.6"), ("Forwarded", "For=192.0.2.60:80;by=x")]).as_deref(),
            Some("192.0.2.60")
        );
        assert_eq!(forwarded(&[("Forwarded", "for=unknown")]).as_deref(), Some("unknown"));
        // X-Forwarded-For wins when both are sent.
        assert_eq!(
            forwarded(&[("Forwarded", "for=6.6.6.6"), ("X-Forwarded-For", "203.0.113.7")]).as_deref(),
            Some("203.0.113.7")
        );
        assert_eq!(forwarded(&[]), None);

        // And the caller's address is the rightmost one, or the peer's without those headers.
        let req = TestRequest::default()
            .insert_header(("X-Forwarded-For", "6.6.6.6, 203.0.113.7"))
            .peer_addr("10.0.0.1:4000".parse().unwrap())
            .to_srv_request();
        let same = TestRequest::default()
            .insert_header(("X-Forwarded-For", "9.9.9.9, 203.0.113.7:9"))
            .peer_addr("10.0.0.2:4000".parse().unwrap())
            .to_srv_request();
        assert_eq!(Caller::of(&req, true).address, Caller::of(&same, true).address);
        assert_ne!(Caller::of(&req, false).address, Caller::of(&same, false).address, "untrusted: the peer");
    }
}
