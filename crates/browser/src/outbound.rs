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
    /// For a host name: `MAP <host> <ip>` for `--host-resolver-rules`, so that Chromium connects to
    /// an address that was checked rather than resolving the name again.
    pub resolver_rule: Option<String>,
}

/// Checks `url`: scheme, host, and every address the host resolves to.
pub(crate) async fn check(url: &str, allowed_hosts: &[String]) -> Result<Target, CaptureError> {
    let url = Url::parse(url).map_err(|_| CaptureError::Refused("the target is not an absolute URL".into()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(CaptureError::Refused(format!("only http and https URLs can be opened, not {}:", url.scheme())));
    }
    let host = url.host().ok_or_else(|| CaptureError::Refused("the URL has no host".into()))?.to_owned();
    let port = url.port_or_known_default().unwrap_or(80);
    let name = host_name(&host);
    let allowed = is_allowed(&name, allowed_hosts);
    let (addresses, resolver_rule) = match host {
        Host::Ipv4(ip) => (vec![IpAddr::V4(ip)], None),
        Host::Ipv6(ip) => (vec![IpAddr::V6(ip)], None),
        Host::Domain(domain) => {
            if !allowed && let Some(reason) = internal_name(&domain) {
                return Err(CaptureError::Refused(format!("{name} is {reason}")));
            }
            let addresses = resolve(&domain, port).await?;
            let rule = addresses.first().map(|ip| match ip {
                IpAddr::V4(ip) => format!("MAP {domain} {ip}"),
                IpAddr::V6(ip) => format!("MAP {domain} [{ip}]"),
            });
            (addresses, rule)
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
    Ok(Target { url, resolver_rule })
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
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
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
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return classify_v4(Ipv4Addr::new(a, b, c, d));
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
    }

    #[test]
    fn public_ipv4_addresses_pass() {
        for ip in
            ["93.184.216.34", "8.8.8.8", "172.32.0.1", "172.15.255.255", "100.63.255.255", "100.128.0.1", "1.1.1.1"]
        {
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
    }

    #[test]
    fn public_ipv6_addresses_pass() {
        for ip in ["2606:4700:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808"] {
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
        assert_eq!(target.resolver_rule, None);
    }
}
