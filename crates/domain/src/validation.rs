//! Field-level validation errors and the small checks every resource shares.

use std::fmt;

use serde::Serialize;

/// One invalid field, named as it is on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The field, by its wire name (`title`, `assigneeId`, …).
    pub field: String,
    /// What is wrong with it, fit to show.
    pub message: String,
}

impl FieldError {
    /// The error of `field` (its wire name), saying why.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into() }
    }
}

/// One or more invalid fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    /// The errors of one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self(vec![FieldError::new(field, message)])
    }

    /// Ok when nothing was found, else every error at once.
    pub fn into_result(errors: Vec<FieldError>) -> Result<(), Self> {
        if errors.is_empty() { Ok(()) } else { Err(Self(errors)) }
    }

    /// The errors found for `field`.
    pub fn for_field(&self, field: &str) -> Vec<&FieldError> {
        self.0.iter().filter(|e| e.field == field).collect()
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for error in &self.0 {
            if !first {
                f.write_str("; ")?;
            }
            first = false;
            write!(f, "{}: {}", error.field, error.message)?;
        }
        Ok(())
    }
}

impl From<FieldError> for ValidationErrors {
    fn from(error: FieldError) -> Self {
        Self(vec![error])
    }
}

/// A checked value, or the one field error that refused it.
pub type Checked<T> = Result<T, FieldError>;

/// A value the caller must provide.
pub fn required<T>(field: &str, value: Option<T>) -> Checked<T> {
    value.ok_or_else(|| FieldError::new(field, "is required"))
}

/// Text of `min..=max` characters; when `min > 0`, blank text is refused.
pub fn text(field: &str, value: String, min: usize, max: usize) -> Checked<String> {
    let length = value.chars().count();
    if value.contains('\0') {
        return Err(FieldError::new(field, "must not contain NUL characters"));
    }
    if min > 0 && value.trim().is_empty() {
        return Err(FieldError::new(field, "must not be blank"));
    }
    if length < min || length > max {
        return Err(FieldError::new(field, format!("must be {min} to {max} characters long")));
    }
    Ok(value)
}

/// The longest URL, in characters.
pub const URL_MAX: usize = 2048;

/// An absolute `http` or `https` URL of at most 2048 characters.
pub fn http_url(field: &str, value: String) -> Checked<String> {
    let value = text(field, value, 1, URL_MAX)?;
    if value.chars().any(char::is_control) {
        return Err(FieldError::new(field, "must not contain control characters"));
    }
    match url::Url::parse(&value) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => Ok(value),
        _ => Err(FieldError::new(field, "must be an absolute http or https URL")),
    }
}

/// A device management system's label id: a positive integer.
pub fn device_label(field: &str, value: i64) -> Checked<i64> {
    if value > 0 { Ok(value) } else { Err(FieldError::new(field, "must be a positive label id")) }
}

/// Applies `check` to the value inside a nullable change (`Some(Some(v))`).
pub fn map_nullable<T, U>(value: Option<Option<T>>, check: impl FnOnce(T) -> Checked<U>) -> Checked<Option<Option<U>>> {
    match value {
        Some(Some(inner)) => check(inner).map(|v| Some(Some(v))),
        Some(None) => Ok(Some(None)),
        None => Ok(None),
    }
}

/// Applies `check` to a present change.
pub fn map_present<T, U>(value: Option<T>, check: impl FnOnce(T) -> Checked<U>) -> Checked<Option<U>> {
    value.map(check).transpose()
}

/// Sets `target` when a change is present.
pub fn set<T: Clone>(target: &mut T, change: &Option<T>) {
    if let Some(value) = change {
        target.clone_from(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_counts_characters_not_bytes_and_refuses_blank() {
        assert!(text("name", "é".repeat(3), 1, 3).is_ok());
        assert!(text("name", "é".repeat(4), 1, 3).is_err());
        assert_eq!(text("name", "  ".into(), 1, 3).unwrap_err().message, "must not be blank");
        assert!(text("name", "a\0b".into(), 0, 3).is_err(), "PostgreSQL text cannot hold NUL");
    }

    #[test]
    fn only_absolute_http_urls_pass() {
        assert!(http_url("website", "https://acme.test/x".into()).is_ok());
        assert!(http_url("website", "ftp://acme.test".into()).is_err());
        assert!(http_url("website", "/relative".into()).is_err());
        assert!(http_url("website", "javascript:alert(1)".into()).is_err());
        assert!(http_url("website", "https://acme.test/\n".into()).is_err());
    }
}
