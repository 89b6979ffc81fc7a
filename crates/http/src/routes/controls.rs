//! `/v1/controls`: the organization's controls, the sources linked to prove them, their evidence
//! (recorded from the sources, or uploaded as files) and their status, now or `asOf` a past moment.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use compliance_app::{ControlView, EvidenceView, Settings};
use compliance_domain::comment::NewAttachment;
use compliance_domain::control::ControlChanges;
use compliance_domain::control::{
    ControlFrequency, ControlStatus, EvidenceKind, EvidenceOutcome, EvidenceSource, NewControl, NewEvidenceSource,
    SourceKind, StatusReport,
};
use compliance_domain::{ControlId, EvidenceId, MemberId, OrganizationId, Timestamp};
use compliance_ports::{ControlFilter, PageRequest};
use serde::Serialize;
use utoipa::ToSchema;

use crate::as_of::AsOfQuery;
use crate::attachments::{AttachmentBytes, Signed, attachment_disposition, stored_file};
use crate::body::{BodyLimit, JsonBody};
use crate::conditional::{self, IfMatchHeader};
use crate::list_query::{ListParams, QueryShape};
use crate::paging::{PageQuery, encode};
use crate::path_ids::control_id;
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes, upload_limit: BodyLimit) {
    routes.add(list_controls, __path_list_controls);
    routes.add(create_control, __path_create_control);
    routes.add(get_control, __path_get_control);
    routes.add(update_control, __path_update_control);
    routes.add(delete_control, __path_delete_control);
    routes.add(get_control_status, __path_get_control_status);
    routes.add(add_evidence_source, __path_add_evidence_source);
    routes.add(remove_evidence_source, __path_remove_evidence_source);
    routes.add(list_control_evidence, __path_list_control_evidence);
    routes.add(upload_control_evidence, __path_upload_control_evidence).body_limit(upload_limit);
    routes.add(download_evidence, __path_download_evidence);
}

/// A control, with its status now (or at `asOf`) and why.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ControlDto<'a> {
    id: &'a ControlId,
    organization_id: &'a OrganizationId,
    name: &'a str,
    description: &'a str,
    /// The member responsible for it.
    owner_id: Option<&'a MemberId>,
    /// How often it must be proven again; `null`: its evidence never goes stale.
    frequency: Option<ControlFrequency>,
    /// Computed from the evidence: `passing`, `failing`, `stale` or `not_started`.
    status: ControlStatus,
    /// Why: the moment, the deciding source and every source's own status.
    explanation: &'a StatusReport,
    /// The library template it was made from by an adoption (`LIB-AC-01`), or `null` (read-only).
    #[schema(required = true)]
    library_id: Option<&'a str>,
    /// That template's version when it was made (or last updated from it), or `null` (read-only).
    #[schema(required = true)]
    library_version: Option<u32>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> ControlDto<'a> {
    fn new(view: &'a ControlView) -> Self {
        let c = &view.control;
        Self {
            id: &c.id,
            organization_id: &c.organization_id,
            name: &c.name,
            description: &c.description,
            owner_id: c.owner_id.as_ref(),
            frequency: c.frequency,
            status: view.status.status,
            explanation: &view.status,
            library_id: c.library.as_ref().map(|l| l.id.as_str()),
            library_version: c.library.as_ref().map(|l| l.version),
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// `{data, count, nextCursor}` of controls.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ControlList<'a> {
    data: Vec<ControlDto<'a>>,
    /// The total number of matching rows (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// A source linked to a control.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EvidenceSourceDto<'a> {
    control_id: &'a ControlId,
    /// `policy`, `task`, `connection` or `automation`.
    kind: SourceKind,
    /// The linked record's id.
    source_id: &'a str,
    /// When it was linked: before that it proves nothing for the control (`asOf`).
    created_at: Timestamp,
}

impl<'a> From<&'a EvidenceSource> for EvidenceSourceDto<'a> {
    fn from(s: &'a EvidenceSource) -> Self {
        Self { control_id: &s.control_id, kind: s.kind, source_id: &s.source_id, created_at: s.created_at }
    }
}

/// One evidence item.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EvidenceDto<'a> {
    id: &'a EvidenceId,
    control_id: &'a ControlId,
    /// Where it came from: a linked source's kind, or `file` for an upload.
    kind: EvidenceKind,
    /// The source record's id; `null` for a file.
    source_id: Option<&'a str>,
    /// `pass` or `fail`.
    outcome: EvidenceOutcome,
    /// When it was collected: when the change that produced it committed.
    collected_at: Timestamp,
    /// What the source reported: `reason` always; a check's `ok` and `connectionStatus`, a run's
    /// `runStatus` and `verdict`, a policy's `version`, a file's `fileName`, `fileType`, `size`.
    #[schema(value_type = Object)]
    detail: &'a serde_json::Value,
    /// The automation run that produced it.
    run_id: Option<&'a str>,
    /// Where to see it: a file's signed download URL, a run's signed screenshot URL, or the API
    /// address of the task, policy or connection; `null` when there is nothing to show.
    link: Option<&'a str>,
}

impl<'a> From<&'a EvidenceView> for EvidenceDto<'a> {
    fn from(view: &'a EvidenceView) -> Self {
        let e = &view.evidence;
        Self {
            id: &e.id,
            control_id: &e.control_id,
            kind: e.kind,
            source_id: e.source_id.as_deref(),
            outcome: e.outcome,
            collected_at: e.collected_at,
            detail: &e.detail,
            run_id: e.run_id.as_deref(),
            link: view.link.as_deref(),
        }
    }
}

/// `{data, count, nextCursor}` of evidence items.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EvidenceList<'a> {
    data: Vec<EvidenceDto<'a>>,
    /// The total number of items (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// What a delete answers.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ControlDeleted<'a> {
    /// `Control deleted successfully`
    message: &'static str,
    deleted_control: DeletedControl<'a>,
}

#[derive(Serialize, ToSchema)]
struct DeletedControl<'a> {
    id: &'a ControlId,
    name: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/controls",
    tag = "controls",
    operation_id = "listControls",
    summary = "List the organization's controls with their status now",
    params(
        ("ownerId" = Option<MemberId>, Query, description = "Only the controls this member owns."),
        ("frequency" = Option<ControlFrequency>, Query, description = "Only the controls of this frequency."),
        PageQuery,
    ),
    responses((status = 200, description = "The matching controls, newest first.", body = ControlList)),
)]
async fn list_controls(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (filter, page, shape) = control_query(params, state.settings())?;
    let principal = caller.0;
    let page = state.run(|app| async move { app.controls.list_controls(&principal, &filter, &page).await }).await?;
    Ok(HttpResponse::Ok().json(ControlList {
        data: page.items.iter().map(ControlDto::new).collect(),
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| encode(next, &shape.fingerprint())),
    }))
}

/// `ownerId` and `frequency`, then `limit` and `cursor`; any other parameter is a 400 naming it.
fn control_query(
    mut params: ListParams,
    settings: &Settings,
) -> Result<(ControlFilter, PageRequest, QueryShape), ApiError> {
    let shape = params.shape("controls");
    let owner = params
        .single("ownerId")?
        .map(|id| {
            MemberId::parse_owned(id).map_err(|_| ApiError::invalid_field("ownerId", "must be a member id (`mem_…`)"))
        })
        .transpose()?;
    let frequency = params
        .single("frequency")?
        .map(|f| f.parse::<ControlFrequency>().map_err(|e| ApiError::invalid_field("frequency", e.to_string())))
        .transpose()?;
    let query: compliance_ports::ListQuery<(), crate::paging::NoSort> = params.finish((), false, &shape, settings)?;
    if query.search.is_some() {
        return Err(ApiError::invalid_field("q", "is not a parameter of this list"));
    }
    if query.times != Default::default() {
        return Err(ApiError::invalid_field("createdAfter", "time ranges are not parameters of this list"));
    }
    Ok((ControlFilter { owner, frequency }, query.page, shape))
}

#[utoipa::path(
    post,
    path = "/v1/controls",
    tag = "controls",
    operation_id = "createControl",
    summary = "Create a control",
    request_body = NewControl,
    responses((status = 201, description = "The new control (`not_started`).", body = ControlDto, headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_control(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewControl>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let view = state.run(|app| async move { app.controls.create_control(&principal, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &view.control.etag(), &ControlDto::new(&view)))
}

#[utoipa::path(
    get,
    path = "/v1/controls/{id}",
    tag = "controls",
    operation_id = "getControl",
    summary = "Get one control with its status now or at `asOf`",
    params(("id" = ControlId, Path), AsOfQuery),
    responses((status = 200, description = "The control; its `ETag` is the record's, for `If-Match` (the status it shows changes without it, so `If-None-Match` is not honoured).", body = ControlDto,
               headers(("ETag" = String, description = "The entity tag of the control's record.")))),
)]
async fn get_control(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    as_of: web::Query<AsOfQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, moment) = (caller.0, control_id(&id)?, as_of.moment()?);
    let view = state.run(|app| async move { app.controls.get_control(&principal, &id, moment).await }).await?;
    // The tag is the record's; the status changes without it, so a conditional GET is not offered.
    Ok(HttpResponse::Ok().insert_header((header::ETAG, view.control.etag().to_string())).json(ControlDto::new(&view)))
}

#[utoipa::path(
    patch,
    path = "/v1/controls/{id}",
    tag = "controls",
    operation_id = "updateControl",
    summary = "Change a control: only the fields sent change",
    params(("id" = ControlId, Path), IfMatchHeader),
    request_body = ControlChanges,
    responses((status = 200, description = "The changed control.", body = ControlDto)),
)]
async fn update_control(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<ControlChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let view = state
        .run(|app| async move { app.controls.update_control(&principal, &id, changes, &if_match.0).await })
        .await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &view.control.etag(), &ControlDto::new(&view)))
}

#[utoipa::path(
    delete,
    path = "/v1/controls/{id}",
    tag = "controls",
    operation_id = "deleteControl",
    summary = "Delete a control with its links and evidence",
    params(("id" = ControlId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = ControlDeleted)),
)]
async fn delete_control(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let control =
        state.run(|app| async move { app.controls.delete_control(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(ControlDeleted {
        message: "Control deleted successfully",
        deleted_control: DeletedControl { id: &control.id, name: &control.name },
    }))
}

#[utoipa::path(
    get,
    path = "/v1/controls/{id}/status",
    tag = "controls",
    operation_id = "getControlStatus",
    summary = "A control's status now or at `asOf`, and which source decides it",
    params(("id" = ControlId, Path), AsOfQuery),
    responses((status = 200, description = "The status, explained.", body = StatusReport)),
)]
async fn get_control_status(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    as_of: web::Query<AsOfQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, moment) = (caller.0, control_id(&id)?, as_of.moment()?);
    let report = state.run(|app| async move { app.controls.control_status(&principal, &id, moment).await }).await?;
    Ok(HttpResponse::Ok().json(report))
}

#[utoipa::path(
    post,
    path = "/v1/controls/{id}/evidence-sources",
    tag = "controls",
    operation_id = "addControlEvidenceSource",
    summary = "Link a policy, task, integration connection or browser automation to a control",
    params(("id" = ControlId, Path)),
    request_body = NewEvidenceSource,
    responses(
        (status = 201, description = "The link.", body = EvidenceSourceDto),
        (status = 409, description = "The control is already linked to this source.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn add_evidence_source(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<NewEvidenceSource>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let link = state.run(|app| async move { app.controls.add_evidence_source(&principal, &id, input).await }).await?;
    Ok(HttpResponse::Created().json(EvidenceSourceDto::from(&link)))
}

#[utoipa::path(
    delete,
    path = "/v1/controls/{id}/evidence-sources/{sourceId}",
    tag = "controls",
    operation_id = "removeControlEvidenceSource",
    summary = "Unlink a source from a control (its evidence so far stays listed)",
    params(("id" = ControlId, Path), ("sourceId" = String, Path, description = "The linked record's id.")),
    responses((status = 200, description = "The removed link.", body = EvidenceSourceDto)),
)]
async fn remove_evidence_source(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, source_id) = path.into_inner();
    let (principal, id) = (caller.0, control_id(&id)?);
    let link =
        state.run(|app| async move { app.controls.remove_evidence_source(&principal, &id, &source_id).await }).await?;
    Ok(HttpResponse::Ok().json(EvidenceSourceDto::from(&link)))
}

#[utoipa::path(
    get,
    path = "/v1/controls/{id}/evidence",
    tag = "controls",
    operation_id = "listControlEvidence",
    summary = "A control's evidence, newest first",
    params(("id" = ControlId, Path), PageQuery),
    responses((status = 200, description = "Every evidence item recorded for the control, with its link.", body = EvidenceList)),
)]
async fn list_control_evidence(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let page = query.request(state.settings(), "controlEvidence")?;
    let page = state.run(|app| async move { app.controls.list_evidence(&principal, &id, &page).await }).await?;
    let fingerprint = QueryShape::unfiltered("controlEvidence").fingerprint();
    Ok(HttpResponse::Ok().json(EvidenceList {
        data: page.items.iter().map(EvidenceDto::from).collect(),
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| encode(next, &fingerprint)),
    }))
}

#[utoipa::path(
    post,
    path = "/v1/controls/{id}/evidence",
    tag = "controls",
    operation_id = "uploadControlEvidence",
    summary = "Upload a file as passing evidence of a control",
    description = "The file takes the shape and limits of a comment's attachment (base64 `fileData`, 413 when too large).",
    params(("id" = ControlId, Path)),
    request_body = NewAttachment,
    responses((status = 201, description = "The evidence item, with its signed download link.", body = EvidenceDto)),
)]
async fn upload_control_evidence(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<NewAttachment>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let view = state.run(|app| async move { app.controls.upload_evidence(&principal, &id, input).await }).await?;
    Ok(HttpResponse::Created().json(EvidenceDto::from(&view)))
}

/// Download an evidence file
///
/// Serves the bytes behind a link `listControlEvidence` signed; the signature is the credential.
/// A tampered or expired signature, or a link missing one of its parameters, is a 403.
#[utoipa::path(
    get, path = "/v1/evidence/{id}/content", operation_id = "downloadEvidence", tag = "controls", security(()),
    params(
        ("id" = String, Path, description = "The evidence item's id, as signed."),
        ("org" = String, Query, description = "The item's organization, as signed."),
        ("expires" = i64, Query, description = "When the link expires, in Unix seconds."),
        ("signature" = String, Query, description = "The link's signature (hex HMAC-SHA256)."),
    ),
    responses(
        (status = 200, description = "The file's bytes, with its media type, `Content-Disposition: attachment` and `Content-Security-Policy: sandbox`.",
         content_type = "*/*", body = AttachmentBytes),
        (status = 403, description = "The link is invalid or has expired.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn download_evidence(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed: web::Query<Signed>,
) -> Result<HttpResponse, ApiError> {
    let (id, signed) = (id.into_inner(), signed.into_inner());
    let (Some(org), Some(expires), Some(signature)) = (signed.org, signed.expires, signed.signature) else {
        return Err(ApiError::forbidden("the download link is invalid or has expired"));
    };
    let (item, bytes) =
        state.run(|app| async move { app.controls.download_evidence(&org, &id, expires, &signature).await }).await?;
    let text = |name: &str| item.detail.get(name).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
    let (name, media_type) = (text("fileName"), text("fileType"));
    Ok(stored_file(media_type.as_str()).insert_header(attachment_disposition(&name)).body(bytes))
}
