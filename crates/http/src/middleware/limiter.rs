//! How a request's caller is named for the rate limiter, without a database lookup: the bucket it
//! is charged to, and the credentials learned to work. The buckets themselves are behind the
//! `RateLimiter` port (in memory or in Redis, `compliance-ratelimit`).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;
use sha2::{Digest, Sha256};

use crate::auth::{API_KEY_HEADER, SESSION_COOKIE};

/// The most credentials remembered as valid; past it, an arbitrary one is forgotten.
const MAX_KNOWN_CREDENTIALS: usize = 10_000;

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

/// The keys of the token buckets a request is charged to: its credential's digest (when it sends
/// one) and its client address. Not who the caller is: nothing here is checked.
#[derive(Debug)]
pub(crate) struct RateKeys {
    /// `key:…` or `session:…`: the API key, else the session cookie, hashed.
    pub(crate) credential: Option<String>,
    /// `ip:…`: the client address, hashed.
    pub(crate) address: String,
}

impl RateKeys {
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
        let network = address.as_deref().map(network_of).unwrap_or_default();
        Self { credential, address: format!("ip:{}", digest(network.as_bytes())) }
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

/// The network an address's bucket is named by: an IPv4 address itself, an IPv6 address's /64
/// (one subscriber's, or one host's, allocation: a client can pick any of its 2^64 addresses, so
/// keyed by address it would get a fresh bucket per request). An IPv4-mapped IPv6 address is its
/// IPv4 address; anything that is no address (`unknown`) is kept as it is.
fn network_of(address: &str) -> String {
    match address.parse::<IpAddr>().map(|ip| ip.to_canonical()) {
        Ok(IpAddr::V6(ip)) => {
            let prefix = u128::from(ip) & !(u128::MAX >> 64);
            format!("{}/64", std::net::Ipv6Addr::from(prefix))
        }
        Ok(IpAddr::V4(ip)) => ip.to_string(),
        Err(_) => address.to_owned(),
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
        let caller = RateKeys::of(&req, false);
        let credential = caller.credential.clone().unwrap();
        assert!(credential.starts_with("key:") && !credential.contains("secret"), "{credential}");
        assert_eq!(caller.bucket(&known), caller.address, "not known yet: the address");
        known.learn(&credential);
        assert_eq!(caller.bucket(&known), credential, "known: its own bucket");
    }

    #[test]
    fn keys_hash_credentials() {
        let req = TestRequest::default().insert_header((API_KEY_HEADER, "cpk_secret")).to_srv_request();
        let key = RateKeys::of(&req, false).credential.unwrap();
        assert!(key.starts_with("key:") && !key.contains("secret"), "{key}");
        let req =
            TestRequest::default().cookie(actix_web::cookie::Cookie::new(SESSION_COOKIE, "cps_x")).to_srv_request();
        assert!(RateKeys::of(&req, false).credential.unwrap().starts_with("session:"));
        let req = TestRequest::default().peer_addr("10.0.0.1:4000".parse().unwrap()).to_srv_request();
        let other = TestRequest::default().peer_addr("10.0.0.1:5000".parse().unwrap()).to_srv_request();
        assert_eq!(RateKeys::of(&req, false).address, RateKeys::of(&other, false).address, "the port does not matter");
        assert!(RateKeys::of(&req, false).credential.is_none());
    }

    #[test]
    fn an_ipv6_caller_is_charged_per_64() {
        assert_eq!(network_of("2001:db8:1:2::1"), "2001:db8:1:2::/64");
        assert_eq!(network_of("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
        assert_eq!(network_of("2001:db8:1:3::1"), "2001:db8:1:3::/64");
        assert_eq!(network_of("::ffff:203.0.113.7"), "203.0.113.7", "IPv4-mapped");
        assert_eq!(network_of("203.0.113.7"), "203.0.113.7");
        assert_eq!(network_of("unknown"), "unknown");

        let from =
            |peer: &str| RateKeys::of(&TestRequest::default().peer_addr(peer.parse().unwrap()).to_srv_request(), false);
        let first = from("[2001:db8:1:2::1]:4000");
        assert_eq!(first.address, from("[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:4001").address, "the same /64");
        assert_ne!(first.address, from("[2001:db8:1:3::1]:4000").address, "another /64");
        assert_ne!(from("203.0.113.7:1").address, from("203.0.113.8:1").address, "IPv4 by address");
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
        assert_eq!(RateKeys::of(&req, true).address, RateKeys::of(&same, true).address);
        assert_ne!(RateKeys::of(&req, false).address, RateKeys::of(&same, false).address, "untrusted: the peer");
    }
}
