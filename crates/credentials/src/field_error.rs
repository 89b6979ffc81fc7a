//! Validation errors that name the offending field and never carry a submitted value.

use std::fmt;

/// One problem with one field. `field` is a JSON-style path such as `config.credentialFields[1].options`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Every problem found, so a form or an admin can fix them all at once (maps onto RFC 9457 `errors`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {}", list(.0))]
pub struct ValidationErrors(pub Vec<FieldError>);

fn list(errors: &[FieldError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

impl ValidationErrors {
    /// The errors found for `field`, for assertions and for callers that highlight one input.
    pub fn for_field(&self, field: &str) -> Vec<&FieldError> {
        self.0.iter().filter(|e| e.field == field).collect()
    }

    pub(crate) fn into_result(errors: Vec<FieldError>) -> Result<(), Self> {
        if errors.is_empty() { Ok(()) } else { Err(Self(errors)) }
    }
}

/// True for an absolute `http` or `https` URL with a host.
pub(crate) fn is_http_url(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}
