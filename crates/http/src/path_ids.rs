//! The path parameters more than one route module reads. A malformed id names nothing: it is a
//! 404, as a missing record is.

use compliance_domain::{AutomationId, ControlId, Id, PolicyId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::ApiError;

/// A malformed id names no policy: 404, as a missing one.
pub(crate) fn policy_id(id: &str) -> Result<PolicyId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("policy"))
}

/// A version number is a positive integer; anything else names no version (404).
pub(crate) fn version_number(text: &str) -> Result<i32, ApiError> {
    text.parse::<i32>().ok().filter(|n| *n > 0).ok_or_else(|| ApiError::not_found("policy version"))
}

/// A malformed id names no control: 404, as a missing one.
pub(crate) fn control_id(id: &str) -> Result<ControlId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("control"))
}

/// A malformed id names no automation: 404, as a missing one.
pub(crate) fn automation_id(id: &str) -> Result<AutomationId, ApiError> {
    AutomationId::parse(id).map_err(|_| ApiError::not_found("automation"))
}

/// The `{slug}` of a provider's paths.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct SlugPath {
    /// (utoipa keeps neither a doc comment nor `required` beside `schema_with`: the schema carries
    /// the description, and `openapi.rs` marks every path parameter required.)
    #[param(schema_with = compliance_app::integrations::openapi::slug_input)]
    pub(crate) slug: String,
}
