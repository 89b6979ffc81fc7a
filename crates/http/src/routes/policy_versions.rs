//! A policy's life: `/v1/policies/{id}/submit`, `approve`, `reject`, `sign`, its `versions` and
//! `signatures`, and `/v1/people/{id}/policies` (what one member has signed).

use actix_web::{HttpResponse, web};
use compliance_app::{PolicyToSign, Signatures};
use compliance_domain::policy::{PolicyRejection, PolicySubmission, PolicyVersion, PolicyVersionSummary, Signer};
use compliance_domain::{Id, MemberId, PolicyId, Timestamp, UserId};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfNoneMatchHeader};
use crate::envelope::PolicyWithAuth;
use crate::path_ids::{policy_id, version_number};
use crate::router::Routes;
use crate::wire::PolicyDto;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(submit_policy, __path_submit_policy);
    routes.add(approve_policy, __path_approve_policy);
    routes.add(reject_policy, __path_reject_policy);
    routes.add(sign_policy, __path_sign_policy);
    routes.add(get_policy_signatures, __path_get_policy_signatures);
    routes.add(list_policy_versions, __path_list_policy_versions);
    routes.add(get_policy_version, __path_get_policy_version);
    routes.add(list_person_policies, __path_list_person_policies);
}

/// A published version, without its content.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PolicyVersionSummaryDto<'a> {
    /// 1 for the first publish, then one more each time.
    number: i32,
    /// The policy's name when the version was published.
    name: &'a str,
    #[schema(required = true)]
    change_note: Option<&'a str>,
    published_at: Timestamp,
    /// The user who published it (the approver, when approved); `null` for a policy published
    /// before versions existed.
    #[schema(value_type = Option<UserId>, required = true)]
    published_by: Option<&'a UserId>,
    /// The user who approved it; `null` when published directly.
    #[schema(value_type = Option<UserId>, required = true)]
    approved_by: Option<&'a UserId>,
    #[schema(required = true)]
    approved_at: Option<Timestamp>,
    /// How many users signed this version.
    signature_count: i64,
}

impl<'a> From<&'a PolicyVersionSummary> for PolicyVersionSummaryDto<'a> {
    fn from(v: &'a PolicyVersionSummary) -> Self {
        Self {
            number: v.number,
            name: &v.name,
            change_note: v.change_note.as_deref(),
            published_at: v.published_at,
            published_by: v.published_by.as_ref(),
            approved_by: v.approved_by.as_ref(),
            approved_at: v.approved_at,
            signature_count: v.signature_count,
        }
    }
}

/// `{data}`: every version of the policy, oldest first.
#[derive(Serialize, ToSchema)]
struct PolicyVersionList<'a> {
    data: Vec<PolicyVersionSummaryDto<'a>>,
}

/// One version with its content, as it was published.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PolicyVersionDto<'a> {
    #[schema(value_type = PolicyId)]
    policy_id: &'a PolicyId,
    number: i32,
    name: &'a str,
    #[schema(value_type = Vec<compliance_domain::openapi::RichTextNode>)]
    content: &'a RawValue,
    #[schema(required = true)]
    change_note: Option<&'a str>,
    published_at: Timestamp,
    #[schema(value_type = Option<UserId>, required = true)]
    published_by: Option<&'a UserId>,
    #[schema(value_type = Option<UserId>, required = true)]
    approved_by: Option<&'a UserId>,
    #[schema(required = true)]
    approved_at: Option<Timestamp>,
}

impl<'a> From<&'a PolicyVersion> for PolicyVersionDto<'a> {
    fn from(v: &'a PolicyVersion) -> Self {
        Self {
            policy_id: &v.policy_id,
            number: v.number,
            name: &v.name,
            content: v.content.json(),
            change_note: v.change_note.as_deref(),
            published_at: v.published_at,
            published_by: v.published_by.as_ref(),
            approved_by: v.approved_by.as_ref(),
            approved_at: v.approved_at,
        }
    }
}

/// A user who signed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SignedDto<'a> {
    user_id: &'a UserId,
    name: &'a str,
    email: &'a str,
    signed_at: Timestamp,
}

/// An active member who must sign and has not.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PendingSignerDto<'a> {
    user_id: &'a UserId,
    name: &'a str,
    email: &'a str,
}

/// The current version's round of signatures.
#[derive(Serialize, ToSchema)]
struct PolicySignatures<'a> {
    /// The current published version; `null` before the first publish (both lists are empty then).
    #[schema(required = true)]
    version: Option<i32>,
    signed: Vec<SignedDto<'a>>,
    /// Active members who have not signed it; always empty when `isRequiredToSign` is false.
    pending: Vec<PendingSignerDto<'a>>,
}

impl<'a> From<&'a Signatures> for PolicySignatures<'a> {
    fn from(s: &'a Signatures) -> Self {
        let signed = s
            .signed
            .iter()
            .filter_map(|signer: &Signer| {
                let signed_at = signer.signed_at?;
                Some(SignedDto { user_id: &signer.user_id, name: &signer.name, email: &signer.email, signed_at })
            })
            .collect();
        let pending = s
            .pending
            .iter()
            .map(|signer| PendingSignerDto { user_id: &signer.user_id, name: &signer.name, email: &signer.email })
            .collect();
        Self { version: (s.version > 0).then_some(s.version), signed, pending }
    }
}

/// A published policy and whether the member signed its current version.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PersonPolicyDto<'a> {
    policy: PolicyDto<'a>,
    signed: bool,
    /// When they signed the current version; `null` when they have not.
    #[schema(required = true)]
    signed_at: Option<Timestamp>,
}

/// `{data}`: the organization's published, unarchived policies, oldest first.
#[derive(Serialize, ToSchema)]
struct PersonPolicyList<'a> {
    data: Vec<PersonPolicyDto<'a>>,
}

#[utoipa::path(
    post,
    path = "/v1/policies/{id}/submit",
    tag = "policies",
    operation_id = "submitPolicy",
    summary = "Submit a draft or a policy under review for its approver",
    description = "By an owner or admin, or by the policy's assignee. The policy needs an approver, who may not be \
                   the one submitting; it becomes `pending_approval`.",
    params(("id" = PolicyId, Path)),
    request_body = PolicySubmission,
    responses(
        (status = 200, description = "The policy, pending approval.", body = PolicyWithAuth),
        (status = 409, description = "The policy has no approver, the caller is its approver, or its state (named) does not allow a submission.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn submit_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<PolicySubmission>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.submit_policy(&principal, &id, input).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyWithAuth::of(&policy, &caller)))
}

#[utoipa::path(
    post,
    path = "/v1/policies/{id}/approve",
    tag = "policies",
    operation_id = "approvePolicy",
    summary = "Approve the pending submission, publishing the next version",
    description = "Only the policy's approver (`approverId`), who may not be the user who submitted it.",
    params(("id" = PolicyId, Path)),
    responses(
        (status = 200, description = "The policy, published.", body = PolicyWithAuth),
        (status = 409, description = "The policy is not `pending_approval` (its state is named), or the approver is the user who submitted it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn approve_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.approve_policy(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyWithAuth::of(&policy, &caller)))
}

#[utoipa::path(
    post,
    path = "/v1/policies/{id}/reject",
    tag = "policies",
    operation_id = "rejectPolicy",
    summary = "Return the pending submission to draft, with the reason",
    description = "Only the policy's approver (`approverId`).",
    params(("id" = PolicyId, Path)),
    request_body = PolicyRejection,
    responses(
        (status = 200, description = "The policy, a draft again, with `rejectionReason`.", body = PolicyWithAuth),
        (status = 409, description = "The policy is not `pending_approval` (its state is named).", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn reject_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<PolicyRejection>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.reject_policy(&principal, &id, input).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyWithAuth::of(&policy, &caller)))
}

#[utoipa::path(
    post,
    path = "/v1/policies/{id}/sign",
    tag = "policies",
    operation_id = "signPolicy",
    summary = "Sign (acknowledge) the current published version",
    description = "As the session's user, or the API key's creator. Signing again changes nothing; a policy never \
                   published is 409.",
    params(("id" = PolicyId, Path)),
    responses(
        (status = 200, description = "The policy, the caller in `signedBy`.", body = PolicyWithAuth),
        (status = 409, description = "The policy was never published (there is no version to sign), or it kept changing while the signature was written: retry.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn sign_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.sign_policy(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyWithAuth::of(&policy, &caller)))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/signatures",
    tag = "policies",
    operation_id = "getPolicySignatures",
    summary = "Who signed the current version, and who still must",
    params(("id" = PolicyId, Path)),
    responses((status = 200, description = "The round of the current version.", body = PolicySignatures)),
)]
async fn get_policy_signatures(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, policy_id(&id)?);
    let round = state.run(|app| async move { app.policies.policy_signatures(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(PolicySignatures::from(&round)))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/versions",
    tag = "policies",
    operation_id = "listPolicyVersions",
    summary = "The policy's published versions, oldest first",
    params(("id" = PolicyId, Path)),
    responses((status = 200, description = "Every version, without content.", body = PolicyVersionList)),
)]
async fn list_policy_versions(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, policy_id(&id)?);
    let versions = state.run(|app| async move { app.policies.list_policy_versions(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok()
        .json(PolicyVersionList { data: versions.iter().map(PolicyVersionSummaryDto::from).collect() }))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/versions/{version}",
    tag = "policies",
    operation_id = "getPolicyVersion",
    summary = "One published version with its content, as it was published",
    params(("id" = PolicyId, Path), ("version" = i32, Path, description = "The version's number, from 1."), IfNoneMatchHeader),
    responses((status = 200, description = "The version; its `ETag` never changes, since a published version does not.", body = PolicyVersionDto)),
)]
async fn get_policy_version(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (id, number) = path.into_inner();
    let (principal, id, number) = (caller.0, policy_id(&id)?, version_number(&number)?);
    let version =
        state.run(|app| async move { app.policies.get_policy_version(&principal, &id, number).await }).await?;
    Ok(conditional::read(&if_none_match, &version.etag(), &PolicyVersionDto::from(&version)))
}

#[utoipa::path(
    get,
    path = "/v1/people/{id}/policies",
    tag = "policies",
    operation_id = "listPersonPolicies",
    summary = "Each published policy, with whether this member signed its current version",
    description = "A member may read their own; another member's needs reading people.",
    params(("id" = MemberId, Path)),
    responses((status = 200, description = "The published, unarchived policies, oldest first.", body = PersonPolicyList)),
)]
async fn list_person_policies(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let member: MemberId = Id::parse(&id).map_err(|_| ApiError::not_found("person"))?;
    let principal = caller.0;
    let policies = state.run(|app| async move { app.policies.policies_of_person(&principal, &member).await }).await?;
    let data = policies
        .iter()
        .map(|PolicyToSign { policy, signed_at }| PersonPolicyDto {
            policy: PolicyDto::from(policy),
            signed: signed_at.is_some(),
            signed_at: *signed_at,
        })
        .collect();
    Ok(HttpResponse::Ok().json(PersonPolicyList { data }))
}
