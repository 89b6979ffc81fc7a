//! Which URLs the browser may open: absolute http(s) URLs whose host resolves only to public
//! addresses, or whose host the allow-list names.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use compliance_ports::CaptureError;
use url::{Host, Url};

/// How long a DNS lookup may take before the host counts as unreachable.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Host names that are internal whatever they resolve to (Chromium answers `localhost` and
/// `*.localhost` itself, without DNS).
const INTERNAL_NAMES: [&str; 3] = ["localhost", "metadata.google.internal", "metadata"];

/// A checked target.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub url: Url,
    /// The addresses the host resolved to, all checked (or the host is allow-listed): the proxy
    /// connects to one of these, never resolves the name again.
    pub addresses: Vec<IpAddr>,
    /// The port to connect to (the URL's, or its scheme's default).
    pub port: u16,
}

/// Whether a host name is spelled only with ASCII letters, digits, `-`, `_` and `.` (IP literals
/// are parsed apart). Anything else (`,`, `;`, spaces, …) could smuggle syntax into a command line
/// or a resolver rule, and no real host needs it (IDNs arrive as `xn--` punycode).
fn plain_host_name(domain: &str) -> bool {
    !domain.is_empty() && domain.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Checks `url`: scheme, host, and every address the host resolves to.
pub(crate) async fn check(url: &str, allowed_hosts: &[String]) -> Result<Target, CaptureError> {
    let url = Url::parse(url).map_err(|_| CaptureError::Refused("the target is not an absolute URL".into()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(CaptureError::Refused(format!("only http and https URLs can be opened, not {}:", url.scheme())));
    }
    let host = url.host().ok_or_else(|| CaptureError::Refused("the URL has no host".into()))?.to_owned();
    if let Host::Domain(domain) = &host
        && !plain_host_name(domain)
    {
        return Err(CaptureError::Refused(
            "the host name may only contain ASCII letters, digits, '-', '_' and '.'".into(),
        ));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let name = host_name(&host);
    let allowed = is_allowed(&name, allowed_hosts);
    let addresses = match host {
        Host::Ipv4(ip) => vec![IpAddr::V4(ip)],
        Host::Ipv6(ip) => vec![IpAddr::V6(ip)],
        Host::Domain(domain) => {
            if !allowed && let Some(reason) = internal_name(&domain) {
                return Err(CaptureError::Refused(format!("{name} is {reason}")));
            }
            resolve(&domain, port).await?
        }
    };
    if !allowed {
        for ip in &addresses {
            if let Some(kind) = classify(*ip) {
                return Err(CaptureError::Refused(match ip.to_string() == name {
                    true => format!("{name} is {kind} address"),
                    false => format!("{name} resolves to {ip}, {kind} address"),
                }));
            }
        }
    }
    Ok(Target { url, addresses, port })
}

/// The host as the allow-list spells it: lower case, without the brackets of an IPv6 literal or a
/// trailing dot.
fn host_name(host: &Host) -> String {
    match host {
        Host::Domain(domain) => domain.trim_end_matches('.').to_ascii_lowercase(),
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
    }
}

fn is_allowed(name: &str, allowed_hosts: &[String]) -> bool {
    allowed_hosts.iter().any(|allowed| {
        let allowed = allowed.trim().trim_start_matches('[').trim_end_matches(']').trim_end_matches('.');
        match (allowed.parse::<IpAddr>(), name.parse::<IpAddr>()) {
            (Ok(allowed), Ok(name)) => allowed == name,
            _ => allowed.eq_ignore_ascii_case(name),
        }
    })
}

fn internal_name(domain: &str) -> Option<&'static str> {
    let name = domain.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return Some("a loopback name");
    }
    INTERNAL_NAMES.contains(&name.as_str()).then_some("a cloud metadata name")
}

async fn resolve(domain: &str, port: u16) -> Result<Vec<IpAddr>, CaptureError> {
    let unreachable = |reason: &str| CaptureError::Unreachable(format!("{domain}: {reason}"));
    let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((domain, port)))
        .await
        .map_err(|_| unreachable("the DNS lookup timed out"))?
        .map_err(|_| unreachable("the name does not resolve"))?;
    let addresses: Vec<IpAddr> = found.map(|socket| socket.ip()).collect();
    match addresses.is_empty() {
        true => Err(unreachable("the name has no address")),
        false => Ok(addresses),
    }
}

/// What kind of internal address `ip` is (phrased to follow "a"/"an"), or `None` for a public one.
pub(crate) fn classify(ip: IpAddr) -> Option<&'static str> {
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

    #[tokio::test]
    async fn ip_literals_are_checked_without_dns() {
        let refused = check("http://0x7f.1/", &[]).await.unwrap_err();
        assert_eq!(refused, CaptureError::Refused("127.0.0.1 is a loopback address".into()));
        let target = check("http://127.0.0.1:8080/x", &["127.0.0.1".into()]).await.unwrap();
        assert_eq!((target.addresses, target.port), (vec![IpAddr::V4(Ipv4Addr::LOCALHOST)], 8080));
    }

    #[tokio::test]
    async fn host_names_with_other_characters_are_refused_first() {
        let reason = "the host name may only contain ASCII letters, digits, '-', '_' and '.'";
        for url in ["http://a,b.example/", "http://127.0.0.1,evil/", "http://a;b/", "http://a$b.example/"] {
            assert_eq!(check(url, &[]).await.unwrap_err(), CaptureError::Refused(reason.into()), "{url}");
        }
        // Even an allow-listed spelling.
        assert_eq!(check("http://a,b/", &["a,b".into()]).await.unwrap_err(), CaptureError::Refused(reason.into()));
        assert!(plain_host_name("xn--bcher-kva.example"));
        assert!(plain_host_name("under_score.example"));
        check("http://[::1]:8080/", &["::1".into()]).await.unwrap();
    }
}
