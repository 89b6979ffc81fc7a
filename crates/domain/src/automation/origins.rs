//! The origins a run's page may be on: the origin of the automation's `targetUrl` and those its
//! `allowedOrigins` list (an identity provider the login passes through, say). A page a run reads
//! may tell a model to go elsewhere and carry what it saw; the run does not follow.

use url::{Host, Origin, Url};

use crate::network::plain_host_name;
use crate::validation::{Checked, FieldError};

/// The most origins `allowedOrigins` may list.
pub const ALLOWED_ORIGINS_MAX: usize = 20;

/// The origin of an absolute http(s) URL as a browser writes it (`https://example.com`,
/// `http://127.0.0.1:8080`: lower-case host, default port left out); `None` for anything else
/// (`about:blank`, `data:`, text that does not parse).
pub fn origin_of(url: &str) -> Option<String> {
    let parsed = Url::parse(url).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    match parsed.origin() {
        origin @ Origin::Tuple(..) => Some(origin.ascii_serialization()),
        Origin::Opaque(_) => None,
    }
}

/// Whether `url` is on one of `origins` (each as [`origin_of`] writes it).
pub fn is_on(url: &str, origins: &[String]) -> bool {
    origin_of(url).is_some_and(|origin| origins.contains(&origin))
}

/// The entries of `allowedOrigins`, each an http(s) origin alone (no path, query, fragment or user
/// info), written as [`origin_of`] writes it, duplicates dropped; at most [`ALLOWED_ORIGINS_MAX`].
pub(crate) fn allowed_origins(values: Vec<String>) -> Checked<Vec<String>> {
    if values.len() > ALLOWED_ORIGINS_MAX {
        return Err(FieldError::new(FIELD, format!("may list at most {ALLOWED_ORIGINS_MAX} origins")));
    }
    let mut origins: Vec<String> = Vec::with_capacity(values.len());
    for value in values {
        let origin = allowed_origin(&value)?;
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

const FIELD: &str = "allowedOrigins";

fn allowed_origin(value: &str) -> Checked<String> {
    let refuse = || {
        FieldError::new(
            FIELD,
            "each entry must be an origin such as https://login.example.com: an http or https scheme, a host and \
             an optional port, without path, query or user",
        )
    };
    if value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(refuse());
    }
    let parsed = Url::parse(value).map_err(|_| refuse())?;
    let bare = parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.path() == "/"
        && parsed.query().is_none()
        && parsed.fragment().is_none()
        // `https://example.com/` parses with the path `/` too; only the bare form is an origin.
        && !value.ends_with('/');
    let plain = match parsed.host() {
        Some(Host::Domain(domain)) => plain_host_name(domain),
        Some(Host::Ipv4(_) | Host::Ipv6(_)) => true,
        None => false,
    };
    match (bare && plain, origin_of(value)) {
        (true, Some(origin)) => Ok(origin),
        _ => Err(refuse()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn origins_compare_as_browsers_write_them() {
        assert_eq!(origin_of("https://Acme.test:443/login?x=1").as_deref(), Some("https://acme.test"));
        assert_eq!(origin_of("http://127.0.0.1:4000/a").as_deref(), Some("http://127.0.0.1:4000"));
        assert_eq!(origin_of("https://acme.test@evil.test/").as_deref(), Some("https://evil.test"));
        assert_eq!(origin_of("about:blank"), None);
        assert_eq!(origin_of("data:text/html,x"), None);
        let ours = vec!["https://acme.test".to_owned()];
        assert!(is_on("https://acme.test/settings", &ours));
        assert!(!is_on("http://acme.test/settings", &ours));
        assert!(!is_on("https://acme.test:8443/", &ours));
        assert!(!is_on("https://evil.test/?https://acme.test", &ours));
    }

    #[test]
    fn allowed_origins_are_bare_origins_written_once() {
        let listed = allowed_origins(vec![
            "https://Login.Example.com".into(),
            "http://127.0.0.1:8080".into(),
            "https://login.example.com:443".into(),
        ])
        .unwrap();
        assert_eq!(listed, ["https://login.example.com", "http://127.0.0.1:8080"]);
        for bad in [
            "https://login.example.com/",
            "https://login.example.com/path",
            "https://login.example.com?x=1",
            "https://user@login.example.com",
            "ftp://login.example.com",
            "login.example.com",
            "https://a,b.example",
            " https://login.example.com",
            "",
        ] {
            assert_eq!(allowed_origins(vec![bad.into()]).unwrap_err().field, "allowedOrigins", "{bad:?}");
        }
        let many = (0..=ALLOWED_ORIGINS_MAX).map(|i| format!("https://h{i}.example")).collect();
        assert!(allowed_origins(many).unwrap_err().message.contains("at most 20"));
    }
}
