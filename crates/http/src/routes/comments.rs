//! Comments, their attachments and signed downloads.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::comment::{CommentEdit, CommentEntityType, NewComment};
use compliance_domain::{AttachmentId, CommentId, UserId};
use compliance_ports::{CommentFilter, CommentQuery, CommentSort};
use serde::Serialize;
use utoipa::ToSchema;

use crate::attachments::{AttachmentBytes, Signed, attachment_disposition, stored_file};
use crate::body::{BodyLimit, JsonBody};
use crate::conditional::{self, IfMatchHeader};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_query::{ListParams, QueryShape, SortField, SortParam, TimeParams};
use crate::paging::PageQuery;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, CommentDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

/// Room for the JSON around the base64 of the largest request's attachments.
const JSON_OVERHEAD: usize = 64 * 1024;

pub fn configure(routes: &mut Routes, body_limit: BodyLimit) {
    routes.add(list_comments, __path_list_comments);
    routes.add(create_comment, __path_create_comment).body_limit(body_limit);
    routes.add(export_comments, __path_export_comments);
    routes.add(update_comment, __path_update_comment);
    routes.add(delete_comment, __path_delete_comment);
    routes.add(get_attachment_download_link, __path_get_attachment_download_link);
    routes.add(download_attachment, __path_download_attachment);
}

/// `{message, deletedComment: {id}, authType}`, plus `authenticatedUser` with session auth.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CommentDeleted<'a> {
    #[schema(examples("Comment deleted successfully"))]
    message: &'static str,
    deleted_comment: DeletedComment<'a>,
    #[schema(schema_with = crate::envelope::auth_type_schema)]
    auth_type: &'static str,
    /// Present with session auth only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

#[derive(Serialize, ToSchema)]
struct DeletedComment<'a> {
    id: &'a CommentId,
}

/// A signed, expiring link to an attachment's bytes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DownloadLink<'a> {
    /// `GET` it without credentials before it expires.
    #[schema(format = "uri")]
    download_url: &'a str,
    /// Seconds until the link expires.
    expires_in: u64,
}

/// The body limit of `POST /v1/comments`: base64 takes 4 bytes for every 3.
pub fn comment_body_limit(settings: &Settings) -> BodyLimit {
    BodyLimit(settings.attachments.max_request_bytes.div_ceil(3) * 4 + JSON_OVERHEAD)
}

/// The total number of an entity's comments, on every page: the list is a bare array.
const TOTAL_COUNT: &str = "X-Total-Count";
/// Where the next page of comments starts (pass it as `cursor`); absent on the last page.
const NEXT_CURSOR: &str = "X-Next-Cursor";

/// List comments
///
/// The comments on one task, vendor, risk or policy, newest first. Paginated with `limit` and
/// `cursor`; the list being a bare array, the total and the next page's cursor are headers.
#[utoipa::path(
    get, path = "/v1/comments", operation_id = "listComments", tag = "comments",
    params(
        ("entityId" = String, Query, description = "The id of the record commented on. An id of another kind than `entityType`, or of no record in the caller's organization, is a 404."),
        ("entityType" = CommentEntityType, Query, description = "The kind of record commented on."),
        ("authorId" = Option<Vec<UserId>>, Query, description = "Written by any of these users (repeat the parameter)."),
        TimeParams,
        SortParam<CommentSort>,
        PageQuery,
    ),
    responses(
        (status = 200, description = "A bare array of comments.", body = Vec<CommentDto<'static>>, headers(
            ("X-Total-Count" = u64, description = "The total number of matching comments (across all pages)."),
            ("X-Next-Cursor" = String, description = "Where the next page starts (pass it as `cursor`); absent on the last page."),
        )),
        (status = 404, description = "No such record in the caller's organization.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn list_comments(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (entity_type, entity_id, query, shape) = comment_query(params, state.settings())?;
    let principal = caller.0;
    let page =
        state.run(|app| async move { app.comments.list(&principal, entity_type, &entity_id, &query).await }).await?;
    let mut response = HttpResponse::Ok();
    response.insert_header((TOTAL_COUNT, page.total));
    if let Some(next) = &page.next {
        response.insert_header((NEXT_CURSOR, crate::paging::encode(next, &shape.fingerprint())));
    }
    Ok(response.json(page.items.iter().map(CommentDto::from).collect::<Vec<_>>()))
}

/// The columns of a comments export: every field of a comment as the list shows it (`author`
/// and `attachments` as their JSON text).
const COMMENT_COLUMNS: &[&str] = &["id", "content", "author", "attachments", "createdAt"];

/// Export comments
///
/// The comments on one task, vendor, risk or policy, as the list would show them with the same
/// parameters, streamed as one CSV or JSON Lines file.
#[utoipa::path(
    get, path = "/v1/comments/export", operation_id = "exportComments", tag = "comments",
    params(
        ("entityId" = String, Query, description = "The id of the record commented on. An id of another kind than `entityType`, or of no record in the caller's organization, is a 404."),
        ("entityType" = CommentEntityType, Query, description = "The kind of record commented on."),
        ("authorId" = Option<Vec<UserId>>, Query, description = "Written by any of these users (repeat the parameter)."),
        TimeParams,
        SortParam<CommentSort>,
        FormatQuery,
    ),
    responses(
        (status = 200, description = "The comments, as an attachment.", content(
            (String = "text/csv"),
            (String = "application/x-ndjson"),
        )),
        (status = 404, description = "No such record in the caller's organization.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn export_comments(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (entity_type, entity_id, query, _) = comment_query(params, state.settings())?;
    let principal = caller.0;
    let row = |comment: &_| serde_json::to_value(CommentDto::from(comment));
    let export = Export { format, name: "comments", columns: COMMENT_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, entity_id) = (principal.clone(), entity_id.clone());
        let query = query.batch(BATCH_ROWS, after);
        async move { app.comments.list(&principal, entity_type, &entity_id, &query).await }
    })
    .await
}

impl SortField for CommentSort {
    const FIELDS: &'static [(&'static str, Self)] = &[("createdAt", Self::CreatedAt), ("updatedAt", Self::UpdatedAt)];
}

/// The query of `GET /v1/comments`: the record commented on, the filters, then what every list
/// shares.
fn comment_query(
    mut params: ListParams,
    settings: &Settings,
) -> Result<(CommentEntityType, String, CommentQuery, QueryShape), ApiError> {
    let shape = params.shape("comments");
    let entity_id = params.single("entityId")?.ok_or_else(|| ApiError::invalid_field("entityId", "is required"))?;
    let entity_type =
        params.single("entityType")?.ok_or_else(|| ApiError::invalid_field("entityType", "is required"))?;
    let entity_type: CommentEntityType = entity_type
        .parse()
        .map_err(|error: compliance_domain::UnknownValue| ApiError::invalid_field("entityType", error.to_string()))?;
    let filter = CommentFilter { author: params.ids("authorId")? };
    Ok((entity_type, entity_id, params.finish(filter, true, &shape, settings)?, shape))
}

/// Comment on a record
///
/// With an API key, `userId` is required and must be the user of an active member of the
/// organization (else 400); with a session it is ignored and the session's user is the author.
/// `entityId` must be an id of the kind `entityType` names (else 400) of a record in the caller's
/// organization (else 404). The schema cannot express these. Attachments over the configured size
/// limits (defaults: 10 MiB per file, 25 MiB per comment) are a 413.
#[utoipa::path(
    post, path = "/v1/comments", operation_id = "createComment", tag = "comments",
    request_body = NewComment,
    responses(
        (status = 201, description = "The new comment.", body = CommentDto<'static>,
         headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 404, description = "No such record in the caller's organization.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database or the attachment store is unavailable; retry after `Retry-After` seconds.",
         body = crate::openapi::Problem, content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait before retrying."))),
    ),
)]
async fn create_comment(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewComment>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let view = state.run(|app| async move { app.comments.create(&principal, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &view.comment.etag(), &CommentDto::from(&view)))
}

fn comment_id(id: &str) -> Result<CommentId, ApiError> {
    CommentId::parse(id).map_err(|_| ApiError::not_found("comment"))
}

/// Edit a comment
///
/// Replaces the content. Only the comment's author may (else 403): the session's user, or with an
/// API key the member who created the key.
#[utoipa::path(
    put, path = "/v1/comments/{id}", operation_id = "updateComment", tag = "comments",
    params(("id" = CommentId, Path, description = "The comment's id; an id of another shape is a 404."), IfMatchHeader),
    request_body = CommentEdit,
    responses((status = 200, description = "The edited comment.", body = CommentDto<'static>)),
)]
async fn update_comment(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(edit): JsonBody<CommentEdit>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, comment_id(&id)?);
    let view = state.run(|app| async move { app.comments.edit(&principal, &id, edit, &if_match.0).await }).await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &view.comment.etag(), &CommentDto::from(&view)))
}

/// Delete a comment
///
/// Deletes the comment and its attachments. Only the comment's author may (else 403).
#[utoipa::path(
    delete, path = "/v1/comments/{id}", operation_id = "deleteComment", tag = "comments",
    params(("id" = CommentId, Path, description = "The comment's id; an id of another shape is a 404."), IfMatchHeader),
    responses((status = 200, description = "The comment is deleted.", body = CommentDeleted)),
)]
async fn delete_comment(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), comment_id(&id)?);
    let view = state.run(|app| async move { app.comments.delete(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(CommentDeleted {
        message: "Comment deleted successfully",
        deleted_comment: DeletedComment { id: &view.comment.id },
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}

/// Get an attachment's download link
///
/// A signed link to the attachment's bytes that works without credentials until it expires
/// (default 900 s).
#[utoipa::path(
    get, path = "/v1/attachments/{id}/download", operation_id = "getAttachmentDownloadLink", tag = "comments",
    params(("id" = AttachmentId, Path, description = "The attachment's id; an id of another shape is a 404.")),
    responses((status = 200, description = "The link.", body = DownloadLink)),
)]
async fn get_attachment_download_link(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = AttachmentId::parse(&id).map_err(|_| ApiError::not_found("attachment"))?;
    let principal = caller.0;
    let link = state.run(|app| async move { app.comments.download_link(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(DownloadLink { download_url: &link.url, expires_in: link.expires_in }))
}

/// Download an attachment
///
/// Serves the bytes behind a link `getAttachmentDownloadLink` signed; the signature is the
/// credential. A tampered or expired signature, or a link missing one of its parameters, is a 403.
#[utoipa::path(
    get, path = "/v1/attachments/{id}/content", operation_id = "downloadAttachment", tag = "comments", security(()),
    params(
        ("id" = String, Path, description = "The attachment's id, as signed."),
        ("org" = String, Query, description = "The attachment's organization, as signed."),
        ("expires" = i64, Query, description = "When the link expires, in Unix seconds."),
        ("signature" = String, Query, description = "The link's signature (hex HMAC-SHA256)."),
    ),
    responses(
        (status = 200, description = "The attachment's bytes, with its media type, `Content-Disposition: attachment` and `Content-Security-Policy: sandbox`.",
         content_type = "*/*", body = AttachmentBytes,
         headers(("Content-Disposition" = String, description = "`attachment; filename=\"…\"`, with an RFC 6266 `filename*` for names that are not plain ASCII."))),
        (status = 403, description = "The link is invalid or has expired.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 503, description = "The database or the attachment store is unavailable; retry after `Retry-After` seconds.",
         body = crate::openapi::Problem, content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait before retrying."))),
    ),
)]
async fn download_attachment(
    state: web::Data<AppState>,
    id: web::Path<String>,
    signed: web::Query<Signed>,
) -> Result<HttpResponse, ApiError> {
    let (id, signed) = (id.into_inner(), signed.into_inner());
    let (Some(org), Some(expires), Some(signature)) = (signed.org, signed.expires, signed.signature) else {
        return Err(ApiError::forbidden("the download link is invalid or has expired"));
    };
    let (attachment, bytes) =
        state.run(|app| async move { app.comments.download(&org, &id, expires, &signature).await }).await?;
    let disposition = attachment_disposition(&attachment.name);
    Ok(stored_file(attachment.media_type.as_str()).insert_header(disposition).body(bytes))
}
