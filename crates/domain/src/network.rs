//! Which network addresses and host names are internal: the rules every outbound request of the
//! service (browser automations, webhooks) follows before it connects anywhere.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Host;

/// Host names that are internal whatever they resolve to (Chromium answers `localhost` and
/// `*.localhost` itself, without DNS).
const INTERNAL_NAMES: [&str; 3] = ["localhost", "metadata.google.internal", "metadata"];

/// Whether a host name is spelled only with ASCII letters, digits, `-`, `_` and `.` (IP literals
/// are parsed apart). Anything else (`,`, `;`, spaces, …) could smuggle syntax into a command line
/// or a resolver rule, and no real host needs it (IDNs arrive as `xn--` punycode).
pub fn plain_host_name(domain: &str) -> bool {
    !domain.is_empty() && domain.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The host as the allow-list spells it: lower case, without the brackets of an IPv6 literal or a
/// trailing dot.
pub fn host_name(host: &Host) -> String {
    match host {
        Host::Domain(domain) => domain.trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    }
}

/// Whether `name` (a host name or IP literal) is one of `allowed_hosts`: names compare
/// case-insensitively, addresses as addresses.
pub fn is_allowed(name: &str, allowed_hosts: &[String]) -> bool {
    allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
        match (allowed.parse::<IpAddr>(), name.parse::<IpAddr>()) {
            (Ok(allowed), Ok(name)) => allowed == name,
            _ => allowed.eq_ignore_ascii_case(name),
        }
    })
}

/// Why a domain name is internal (a loopback or cloud metadata name), or `None`.
pub fn internal_name(domain: &str) -> Option<&'static str> {
    let name = domain.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Some("a loopback name");
    }
    INTERNAL_NAMES.contains(&name.as_str()).then_some("a cloud metadata name")
}

/// What kind of internal address `ip` is (phrased to follow "a"/"an"), or `None` for a public one.
pub fn classify(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => classify_v4(ip),
        IpAddr::V6(ip) => classify_v6(ip),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254)
        || ip == Ipv4Addr::new(100, 100, 100, 200)
        || ip == Ipv4Addr::new(168, 63, 129, 16)
    {
        Some("a cloud metadata")
    } else if ip.is_unspecified() || a == 0 {
        Some("an unspecified")
    } else if ip.is_loopback() {
        Some("a loopback")
    } else if ip.is_private() {
        Some("a private")
    } else if ip.is_link_local() {
        Some("a link-local")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("an IETF protocol assignment")
    } else if a == 198 && (18..20).contains(&b) {
        Some("a benchmarking")
    } else if ip.is_broadcast() {
        Some("a broadcast")
    } else if ip.is_multicast() || a >= 240 {
        Some("a multicast or reserved")
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<&'static str> {
    // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses reach the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let segments = ip.segments();
    let [.., a, b, c, d] = ip.octets();
    let last_v4 = Ipv4Addr::new(a, b, c, d);
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(last_v4);
    }
    // Local-use NAT64 (RFC 8215) translates into whatever network the operator chose.
    if segments[..3] == [0x64, 0xff9b, 1] {
        return Some("a local-use NAT64");
    }
    // 6to4 (2002:a.b.c.d::/48) reaches the embedded IPv4 address.
    if segments[0] == 0x2002 {
        let [_, _, a, b, c, d, ..] = ip.octets();
        return classify_v4(Ipv4Addr::new(a, b, c, d));
    }
    // IPv4-compatible (::a.b.c.d, deprecated): judged by the IPv4 address, and refused anyway.
    if segments[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback() {
        return classify_v4(last_v4).or(Some("a deprecated IPv4-compatible"));
    }
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        Some("a cloud metadata")
    } else if ip.is_unspecified() {
        Some("an unspecified")
    } else if ip.is_loopback() {
        Some("a loopback")
    } else if segments[0] & 0xfe00 == 0xfc00 {
        Some("a private (unique local)")
    } else if segments[0] & 0xffc0 == 0xfe80 {
        Some("a link-local")
    } else if segments[0] & 0xffc0 == 0xfec0 {
        Some("a site-local")
    } else if ip.is_multicast() {
        Some("a multicast or reserved")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        classify(ip.parse().unwrap())
    }

    #[test]
    fn internal_ipv4_addresses_are_classified() {
        assert_eq!(kind("127.0.0.1"), Some("a loopback"));
        assert_eq!(kind("127.255.0.9"), Some("a loopback"));
        assert_eq!(kind("10.0.0.1"), Some("a private"));
        assert_eq!(kind("172.16.0.1"), Some("a private"));
        assert_eq!(kind("172.31.255.255"), Some("a private"));
        assert_eq!(kind("192.168.1.1"), Some("a private"));
        assert_eq!(kind("169.254.0.5"), Some("a link-local"));
        assert_eq!(kind("169.254.169.254"), Some("a cloud metadata"));
        assert_eq!(kind("0.0.0.0"), Some("an unspecified"));
        assert_eq!(kind("0.1.2.3"), Some("an unspecified"));
        assert_eq!(kind("255.255.255.255"), Some("a broadcast"));
        assert_eq!(kind("100.64.0.1"), Some("a carrier-grade NAT"));
        assert_eq!(kind("100.127.255.255"), Some("a carrier-grade NAT"));
        assert_eq!(kind("224.0.0.1"), Some("a multicast or reserved"));
        assert_eq!(kind("192.0.0.1"), Some("an IETF protocol assignment"));
        assert_eq!(kind("192.0.0.255"), Some("an IETF protocol assignment"));
        assert_eq!(kind("198.18.0.1"), Some("a benchmarking"));
        assert_eq!(kind("198.19.255.255"), Some("a benchmarking"));
        assert_eq!(kind("168.63.129.16"), Some("a cloud metadata"));
    }

    #[test]
    fn public_ipv4_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "172.15.255.255",
            "100.63.255.255",
            "100.128.0.1",
            "1.1.1.1",
            "192.0.1.1",
            "198.17.255.255",
            "198.20.0.1",
            "168.63.129.17",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn internal_ipv6_addresses_are_classified() {
        assert_eq!(kind("::1"), Some("a loopback"));
        assert_eq!(kind("::"), Some("an unspecified"));
        assert_eq!(kind("fc00::1"), Some("a private (unique local)"));
        assert_eq!(kind("fd12:3456::1"), Some("a private (unique local)"));
        assert_eq!(kind("fd00:ec2::254"), Some("a cloud metadata"));
        assert_eq!(kind("fe80::1"), Some("a link-local"));
        assert_eq!(kind("ff02::1"), Some("a multicast or reserved"));
        assert_eq!(kind("::ffff:127.0.0.1"), Some("a loopback"));
        assert_eq!(kind("::ffff:10.1.2.3"), Some("a private"));
        assert_eq!(kind("::ffff:169.254.169.254"), Some("a cloud metadata"));
        assert_eq!(kind("64:ff9b::a00:1"), Some("a private"));
        assert_eq!(kind("64:ff9b:1::808:808"), Some("a local-use NAT64"));
        assert_eq!(kind("64:ff9b:1:ffff::1"), Some("a local-use NAT64"));
        assert_eq!(kind("2002:7f00:1::"), Some("a loopback"));
        assert_eq!(kind("2002:a9fe:a9fe::1"), Some("a cloud metadata"));
        assert_eq!(kind("2002:c0a8:101::1"), Some("a private"));
        assert_eq!(kind("::127.0.0.1"), Some("a loopback"));
        assert_eq!(kind("::10.0.0.1"), Some("a private"));
        assert_eq!(kind("::8.8.8.8"), Some("a deprecated IPv4-compatible"));
        assert_eq!(kind("::ffff:198.18.0.1"), Some("a benchmarking"));
    }

    #[test]
    fn public_ipv6_addresses_pass() {
        for ip in
            ["2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"]
        {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn allow_list_matches_exactly_and_ignores_case() {
        let allowed = vec!["Intranet.Example".to_owned(), "127.0.0.1".to_owned(), "[::1]".to_owned()];
        assert!(is_allowed("intranet.example", &allowed));
        assert!(is_allowed("127.0.0.1", &allowed));
        assert!(is_allowed("::1", &allowed));
        assert!(!is_allowed("a.intranet.example", &allowed));
        assert!(!is_allowed("127.0.0.2", &allowed));
    }

    #[test]
    fn internal_names_are_refused_by_name() {
        assert_eq!(internal_name("localhost"), Some("a loopback name"));
        assert_eq!(internal_name("LOCALHOST."), Some("a loopback name"));
        assert_eq!(internal_name("app.localhost"), Some("a loopback name"));
        assert_eq!(internal_name("metadata.google.internal"), Some("a cloud metadata name"));
        assert_eq!(internal_name("example.com"), None);
    }
}
