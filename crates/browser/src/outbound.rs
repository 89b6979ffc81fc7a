//! Which URLs the browser may open: absolute http(s) URLs whose host resolves only to public
//! addresses, or whose host the allow-list names.

use std::net::IpAddr;
#[cfg(test)]
use std::net::Ipv4Addr;
use std::time::Duration;

use compliance_domain::network::{host_name, internal_name, is_allowed, plain_host_name};
use compliance_ports::CaptureError;
use url::{Host, Url};

use compliance_domain::network::classify;

/// How long a DNS lookup may take before the host counts as unreachable.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

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
