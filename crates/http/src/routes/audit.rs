//! `/v1/audit-log`: the organization's change record, newest first; `/verify` recomputes its
//! Merkle tree; `/v1/<resource>/{id}/history` is the record of one resource. The proofs are in
//! `audit_proofs`.

use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::Verification;
use compliance_domain::audit::{AuditEntry, JsonText};
use compliance_domain::{AuditEntryId, Timestamp};
use compliance_ports::{AuditFilter, Page};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::list_query::{ListParams, QueryShape};
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_audit_log, __path_list_audit_log);
    routes.add(verify_audit_log, __path_verify_audit_log);
    routes.add(risk_history, __path_risk_history);
    routes.add(vendor_history, __path_vendor_history);
    routes.add(task_history, __path_task_history);
    routes.add(policy_history, __path_policy_history);
}

/// Who made a change.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ActorDto {
    /// `user`, `apiKey` or `system`.
    #[serde(rename = "type")]
    actor_type: &'static str,
    /// The user (for an API key, the user who made it), or the part of the service.
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_key_id: Option<String>,
}

/// One entry of the change record.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AuditEntryDto {
    #[schema(value_type = String)]
    id: AuditEntryId,
    organization_id: String,
    /// 1, 2, 3… per organization, without gaps, in the order the entries were sealed; null for
    /// the moment between the change's commit and its sealing (the log's reads wait for it).
    seq: Option<i64>,
    actor: ActorDto,
    /// `risk.created`, `risk.updated`, `member.deactivated`…
    action: String,
    resource_type: String,
    resource_id: String,
    /// `{field: {from, to}}`; secrets `"[redacted]"`, rich text `{"length": n}`.
    #[schema(value_type = Object)]
    changes: JsonText,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
    created_at: Timestamp,
    /// The entry's Merkle leaf hash, hex: SHA-256 of a 0 byte and its canonical JSON; null
    /// until sealed.
    hash: Option<String>,
}

impl From<AuditEntry> for AuditEntryDto {
    fn from(entry: AuditEntry) -> Self {
        let (d, seal) = (entry.draft, entry.seal);
        let (seq, hash) = seal.map(|seal| (seal.seq, seal.hash)).unzip();
        Self {
            id: d.id,
            organization_id: d.organization_id.to_string(),
            seq,
            actor: ActorDto {
                actor_type: d.actor.actor_type.as_str(),
                id: d.actor.id,
                email: d.actor.email,
                api_key_id: d.actor.api_key_id.map(|id| id.to_string()),
            },
            action: d.action,
            resource_type: d.resource_type,
            resource_id: d.resource_id,
            changes: d.changes,
            request_id: d.request_id,
            created_at: d.created_at,
            hash,
        }
    }
}

/// `{data, count, nextCursor}` of audit entries, newest first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AuditList {
    data: Vec<AuditEntryDto>,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// The query parameters of `GET /v1/audit-log`.
const AUDIT_PARAMETERS: [&str; 8] =
    ["resourceType", "resourceId", "actorId", "action", "createdAfter", "createdBefore", "limit", "cursor"];

/// The list name audit cursors are bound to: the log and each record's history read entries alike.
const AUDIT_LIST: &str = "auditLog";

impl From<Page<AuditEntry>> for AuditList {
    fn from(page: Page<AuditEntry>) -> Self {
        Self {
            data: page.items.into_iter().map(AuditEntryDto::from).collect(),
            count: page.total,
            next_cursor: page.next.as_ref().map(|next| encode(next, &QueryShape::unfiltered(AUDIT_LIST).fingerprint())),
        }
    }
}

/// The filters of the audit log; each narrows it.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
struct AuditQuery {
    /// `risk`, `vendor`, `task`, `policy`, `member`, `apiKey`, `session`…
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    resource_type: Option<String>,
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    resource_id: Option<String>,
    /// The acting user's id (`usr_…`), or a system part's name.
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    actor_id: Option<String>,
    /// A prefix of the action: `risk.` finds every risk action, `risk.updated` those only.
    #[param(min_length = 1, max_length = 200, pattern = "^[^\\u0000]*$")]
    action: Option<String>,
    /// Only entries created at or after this instant (RFC 3339).
    #[param(value_type = Option<Timestamp>)]
    created_after: Option<String>,
    /// Only entries created before this instant (RFC 3339).
    #[param(value_type = Option<Timestamp>)]
    created_before: Option<String>,
}

impl AuditQuery {
    fn filter(&self) -> Result<AuditFilter, ApiError> {
        let text = |name: &str, value: &Option<String>| match value.as_deref() {
            None => Ok(None),
            Some(v) if v.is_empty() || v.chars().count() > 200 || v.contains('\0') => {
                Err(ApiError::invalid_field(name, "must be 1 to 200 characters, without NUL"))
            }
            Some(v) => Ok(Some(v.to_owned())),
        };
        let instant = |name: &str, value: &Option<String>| match value.as_deref() {
            None => Ok(None),
            Some(v) => Timestamp::parse(v)
                .map(Some)
                .map_err(|_| ApiError::invalid_field(name, "must be an RFC 3339 date-time, e.g. 2026-11-25T10:00:00Z")),
        };
        Ok(AuditFilter {
            resource_type: text("resourceType", &self.resource_type)?,
            resource_id: text("resourceId", &self.resource_id)?,
            actor_id: text("actorId", &self.actor_id)?,
            action_prefix: text("action", &self.action)?,
            created_after: instant("createdAfter", &self.created_after)?,
            created_before: instant("createdBefore", &self.created_before)?,
        })
    }
}

#[utoipa::path(
    get,
    path = "/v1/audit-log",
    tag = "audit",
    operation_id = "listAuditLog",
    summary = "List the organization's audit entries, newest first",
    params(AuditQuery, PageQuery),
    responses((status = 200, description = "The entries, newest first.", body = AuditList)),
)]
async fn list_audit_log(
    state: web::Data<AppState>,
    caller: Authenticated,
    request: HttpRequest,
    query: web::Query<AuditQuery>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    // The two extractors each ignore the other's names: a misspelt filter must not widen the log.
    let mut params = ListParams::parse(request.query_string());
    for name in AUDIT_PARAMETERS {
        params.take(name);
    }
    params.refuse_the_rest()?;
    let (principal, filter, page) = (caller.0, query.filter()?, page.request(state.settings(), AUDIT_LIST)?);
    let entries = state.run(|app| async move { app.audit.list(&principal, &filter, &page).await }).await?;
    Ok(HttpResponse::Ok().json(AuditList::from(entries)))
}

/// What verification found.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct VerificationDto {
    /// Whether every sealed entry gives its leaf hash, none is missing, and together (after the
    /// signed checkpoint, if pruned) they make the signed tree head's root.
    valid: bool,
    /// How many entries were checked.
    checked: u64,
    /// The first entry whose content does not give its hash, or that follows a missing one; null
    /// when valid, or when what is wrong is not an entry (a head or checkpoint whose signature
    /// fails, entries missing at the end).
    #[schema(value_type = Option<String>)]
    first_invalid_id: Option<AuditEntryId>,
}

#[utoipa::path(
    get,
    path = "/v1/audit-log/verify",
    tag = "audit",
    operation_id = "verifyAuditLog",
    summary = "Verify the organization's audit log against its signed tree head",
    responses((status = 200, description = "Whether the log is intact.", body = VerificationDto)),
)]
async fn verify_audit_log(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let Verification { valid, checked, first_invalid_id } =
        state.run(|app| async move { app.audit.verify(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(VerificationDto { valid, checked, first_invalid_id }))
}

/// The history of one record: its entries, newest first. The record may have been deleted.
async fn history(
    state: web::Data<AppState>,
    caller: Authenticated,
    page: web::Query<PageQuery>,
    (resource_type, id, prefix): (&'static str, String, &str),
) -> Result<HttpResponse, ApiError> {
    // A malformed id names no record: 404, as for the record's own routes.
    let plausible = id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !plausible || !id.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('_')) {
        return Err(ApiError::not_found(resource_type));
    }
    let (principal, page) = (caller.0, page.request(state.settings(), AUDIT_LIST)?);
    let entries =
        state.run(|app| async move { app.audit.history(&principal, resource_type, &id, &page).await }).await?;
    Ok(HttpResponse::Ok().json(AuditList::from(entries)))
}

#[utoipa::path(
    get,
    path = "/v1/risks/{id}/history",
    tag = "audit",
    operation_id = "getRiskHistory",
    summary = "The audit entries of one risk, newest first",
    params(("id" = String, Path), PageQuery),
    responses((status = 200, description = "The risk's entries.", body = AuditList)),
)]
async fn risk_history(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    history(state, caller, page, ("risk", id.into_inner(), "rsk")).await
}

#[utoipa::path(
    get,
    path = "/v1/vendors/{id}/history",
    tag = "audit",
    operation_id = "getVendorHistory",
    summary = "The audit entries of one vendor, newest first",
    params(("id" = String, Path), PageQuery),
    responses((status = 200, description = "The vendor's entries.", body = AuditList)),
)]
async fn vendor_history(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    history(state, caller, page, ("vendor", id.into_inner(), "vnd")).await
}

#[utoipa::path(
    get,
    path = "/v1/tasks/{id}/history",
    tag = "audit",
    operation_id = "getTaskHistory",
    summary = "The audit entries of one task, newest first",
    params(("id" = String, Path), PageQuery),
    responses((status = 200, description = "The task's entries.", body = AuditList)),
)]
async fn task_history(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    history(state, caller, page, ("task", id.into_inner(), "tsk")).await
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}/history",
    tag = "audit",
    operation_id = "getPolicyHistory",
    summary = "The audit entries of one policy, newest first",
    params(("id" = String, Path), PageQuery),
    responses((status = 200, description = "The policy's entries.", body = AuditList)),
)]
async fn policy_history(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    page: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    history(state, caller, page, ("policy", id.into_inner(), "pol")).await
}
