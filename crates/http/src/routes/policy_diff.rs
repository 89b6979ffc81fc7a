//! `GET /v1/policies/{id}/versions/{from}/diff/{to}`: what changed between two versions of a
//! policy, or between a version and the current draft.

use actix_web::{HttpResponse, web};
use compliance_app::DiffTarget;
use compliance_domain::PolicyId;

use crate::path_ids::policy_id;
use crate::router::Routes;
use crate::wire::PolicyDiffDto;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(diff_policy_versions, __path_diff_policy_versions);
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/versions/{from}/diff/{to}",
    tag = "policies",
    operation_id = "diffPolicyVersions",
    summary = "What changed between two versions, block by block",
    description = "Each version's content is read as the blocks a reader sees (paragraphs, headings, each list item, \
                   each table row, code blocks, images…) and compared: blocks only `to` has are `added`, blocks only \
                   `from` has are `removed`, and within a run of differing blocks those of the same kind pair up as \
                   `changed`, with their text word by word. `to` may be `draft`: the policy's current content, what \
                   its next publish would make a version (what an approver reviews). A version compared with itself \
                   has no changes. Reading it takes what reading the versions takes.",
    params(
        ("id" = PolicyId, Path),
        ("from" = String, Path, pattern = "^[1-9][0-9]{0,8}$",
         description = "The earlier version's number, from 1 (a 400 naming `from` otherwise)."),
        ("to" = String, Path, pattern = "^([1-9][0-9]{0,8}|draft)$",
         description = "The later version's number, or `draft` (a 400 naming `to` otherwise)."),
    ),
    responses(
        (status = 200, description = "The changes, in reading order.", body = PolicyDiffDto),
        (status = 400, description = "`from` or `to` is not a version number (or `draft`, for `to`).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such policy in the caller's organization, or no such version of it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn diff_policy_versions(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, from, to) = path.into_inner();
    let (id, from, to): (PolicyId, i32, DiffTarget) = (policy_id(&id)?, from_number(&from)?, target(&to)?);
    let principal = caller.0;
    let diff =
        state.run(|app| async move { app.policies.diff_policy_versions(&principal, &id, from, to).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyDiffDto::from(&diff)))
}

fn from_number(text: &str) -> Result<i32, ApiError> {
    number(text).ok_or_else(|| ApiError::invalid_field("from", "must be a version number: a whole number from 1"))
}

fn target(text: &str) -> Result<DiffTarget, ApiError> {
    if text == "draft" {
        return Ok(DiffTarget::Draft);
    }
    number(text)
        .map(DiffTarget::Version)
        .ok_or_else(|| ApiError::invalid_field("to", "must be a version number (a whole number from 1) or `draft`"))
}

/// A positive number of at most nine digits, as the documented pattern says: every number it
/// allows fits the store's 32-bit integers, so a valid-looking number is never refused.
fn number(text: &str) -> Option<i32> {
    let well_formed =
        (1..=9).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) && !text.starts_with('0');
    well_formed.then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_what_the_documented_pattern_allows() {
        assert_eq!(number("1"), Some(1));
        assert_eq!(number("999999999"), Some(999_999_999));
        for bad in ["0", "01", "-1", "+1", "1.0", "", "1000000000", "x", " 1"] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
        assert_eq!(target("draft").ok(), Some(DiffTarget::Draft));
        assert_eq!(target("Draft").map_err(|e| e.field_errors()[0].field.clone()).err().as_deref(), Some("to"));
        assert_eq!(from_number("draft").map_err(|e| e.field_errors()[0].field.clone()).err().as_deref(), Some("from"));
    }
}
