//! The longest values the integration inputs take, in characters: checked by the use cases and
//! stated by the OpenAPI schemas.

/// A credential value (PEM keys fit).
pub(crate) const VALUE_MAX: usize = 16 * 1024;
/// An OAuth app's client id.
pub(crate) const CLIENT_ID_MAX: usize = 512;
/// An OAuth app's client secret.
pub(crate) const CLIENT_SECRET_MAX: usize = 4096;
/// One custom setting of an OAuth app.
pub(crate) const SETTING_MAX: usize = 1024;
