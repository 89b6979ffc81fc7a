//! Validation errors that name the offending field and never carry a submitted value: the
//! domain's own types, so that every layer reports fields the same way.

pub use compliance_domain::{FieldError, ValidationErrors};

/// True for an absolute `http` or `https` URL with a host.
pub(crate) fn is_http_url(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}
