//! Where a delivery may go: the URL checked, its host resolved once, every address checked.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use compliance_domain::network::{classify, host_name, internal_name, is_allowed, plain_host_name};
use compliance_ports::SendError;
use url::{Host, Url};

/// How long a DNS lookup may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// A checked target: the client connects only to `addresses`.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: Url,
    pub addresses: Vec<IpAddr>,
    pub port: u16,
}

impl Target {
    pub fn socket_addresses(&self) -> Vec<SocketAddr> {
        self.addresses.iter().map(|ip| SocketAddr::new(*ip, self.port)).collect()
    }
}

/// Checks `url` (scheme, host, every address its host resolves to) against `allowed_hosts`.
pub async fn check(url: &str, allowed_hosts: &[String]) -> Result<Target, SendError> {
    let url = Url::parse(url).map_err(|_| SendError::Refused("the URL is not absolute".into()))?;
    let host = url.host().ok_or_else(|| SendError::Refused("the URL has no host".into()))?.to_owned();
    let name = host_name(&host);
    let allowed = is_allowed(&name, allowed_hosts);
    match url.scheme() {
        "https" => {}
        "http" if allowed => {}
        other => return Err(SendError::Refused(format!("{other} URLs are not sent to (https only)"))),
    }
    if let Host::Domain(domain) = &host
        && !plain_host_name(domain)
    {
        return Err(SendError::Refused("the host name has characters no host name has".into()));
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let addresses = match host {
        Host::Ipv4(ip) => vec![IpAddr::V4(ip)],
        Host::Ipv6(ip) => vec![IpAddr::V6(ip)],
        Host::Domain(domain) => {
            if !allowed && let Some(reason) = internal_name(&domain) {
                return Err(SendError::Refused(format!("{name} is {reason}")));
            }
            resolve(&domain, port).await?
        }
    };
    if !allowed {
        for ip in &addresses {
            if let Some(kind) = classify(*ip) {
                return Err(SendError::Refused(match ip.to_string() == name {
                    true => format!("{name} is {kind} address"),
                    false => format!("{name} resolves to {ip}, {kind} address"),
                }));
            }
        }
    }
    Ok(Target { url, addresses, port })
}

async fn resolve(domain: &str, port: u16) -> Result<Vec<IpAddr>, SendError> {
    let failed = |reason: &str| SendError::Failed(format!("{domain}: {reason}"));
    let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((domain, port)))
        .await
        .map_err(|_| failed("the DNS lookup timed out"))?
        .map_err(|_| failed("the name does not resolve"))?;
    let addresses: Vec<IpAddr> = found.map(|socket| socket.ip()).collect();
    match addresses.is_empty() {
        true => Err(failed("the name has no address")),
        false => Ok(addresses),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[tokio::test]
    async fn internal_targets_are_refused_unless_allowed() {
        let refused = check("https://127.0.0.1/hook", &[]).await.unwrap_err();
        assert_eq!(refused, SendError::Refused("127.0.0.1 is a loopback address".into()));
        assert!(matches!(check("https://localhost/hook", &[]).await, Err(SendError::Refused(_))));
        assert!(matches!(check("http://203.0.113.9/hook", &[]).await, Err(SendError::Refused(_))));
        let target = check("http://127.0.0.1:9/hook", &["127.0.0.1".into()]).await.unwrap();
        assert_eq!(target.socket_addresses(), vec!["127.0.0.1:9".parse().unwrap()]);
    }
}
