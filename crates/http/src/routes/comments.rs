//! Comments, their attachments and signed downloads.

use actix_web::http::header::{self, Charset, ContentDisposition, DispositionParam, DispositionType, ExtendedValue};
use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::comment::{CommentEdit, CommentEntityType, NewComment};
use compliance_domain::{AttachmentId, CommentId};
use serde::Deserialize;
use serde_json::json;

use super::resource;
use crate::body::{BodyLimit, JsonBody};
use crate::wire::{AuthTypeStyle, AuthenticatedUser, CommentDto, auth_type};
use crate::{ApiError, AppState, Caller};

/// Room for the JSON around the base64 of the largest request's attachments.
const JSON_OVERHEAD: usize = 64 * 1024;

pub fn configure(config: &mut web::ServiceConfig, body_limit: BodyLimit) {
    config
        .service(resource("/comments").app_data(body_limit).route(web::get().to(list)).route(web::post().to(create)))
        .service(resource("/comments/{id}").route(web::put().to(edit)).route(web::delete().to(delete)))
        .service(resource("/attachments/{id}/download").route(web::get().to(download_link)))
        .service(resource("/attachments/{id}/content").route(web::get().to(download)));
}

/// The body limit of `POST /v1/comments`: base64 takes 4 bytes for every 3.
pub fn comment_body_limit(settings: &Settings) -> BodyLimit {
    BodyLimit(settings.attachments.max_request_bytes.div_ceil(3) * 4 + JSON_OVERHEAD)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntityQuery {
    entity_id: Option<String>,
    entity_type: Option<String>,
}

async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: web::Query<EntityQuery>,
) -> Result<HttpResponse, ApiError> {
    let query = query.into_inner();
    let entity_id = query.entity_id.ok_or_else(|| ApiError::invalid_field("entityId", "is required"))?;
    let entity_type: CommentEntityType =
        query.entity_type.ok_or_else(|| ApiError::invalid_field("entityType", "is required"))?.parse().map_err(
            |error: compliance_domain::UnknownValue| ApiError::invalid_field("entityType", error.to_string()),
        )?;
    let principal = caller.0;
    let views = state.run(|app| async move { app.comments.list(&principal, entity_type, &entity_id).await }).await?;
    Ok(HttpResponse::Ok().json(views.iter().map(CommentDto::from).collect::<Vec<_>>()))
}

async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<NewComment>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let view = state.run(|app| async move { app.comments.create(&principal, input).await }).await?;
    Ok(HttpResponse::Created().json(CommentDto::from(&view)))
}

fn comment_id(id: &str) -> Result<CommentId, ApiError> {
    CommentId::parse(id).map_err(|_| ApiError::not_found("comment"))
}

async fn edit(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    JsonBody(edit): JsonBody<CommentEdit>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, comment_id(&id)?);
    let view = state.run(|app| async move { app.comments.edit(&principal, &id, edit).await }).await?;
    Ok(HttpResponse::Ok().json(CommentDto::from(&view)))
}

async fn delete(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), comment_id(&id)?);
    let view = state.run(|app| async move { app.comments.delete(&principal, &id).await }).await?;
    let mut body = json!({
        "message": "Comment deleted successfully",
        "deletedComment": {"id": view.comment.id},
        "authType": auth_type(&caller, AuthTypeStyle::Standard),
    });
    if let Some(user) = AuthenticatedUser::for_session(&caller) {
        body["authenticatedUser"] = json!(user);
    }
    Ok(HttpResponse::Ok().json(body))
}

async fn download_link(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = AttachmentId::parse(&id).map_err(|_| ApiError::not_found("attachment"))?;
    let principal = caller.0;
    let link = state.run(|app| async move { app.comments.download_link(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(json!({"downloadUrl": link.url, "expiresIn": link.expires_in})))
}

/// The parts of a signed link; a link missing any of them is as invalid as a tampered one.
#[derive(Deserialize)]
struct Signed {
    org: Option<String>,
    expires: Option<i64>,
    signature: Option<String>,
}

/// Serves the bytes behind a link this service signed; the signature is the credential.
async fn download(
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
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, attachment.media_type.as_str()))
        .insert_header(disposition)
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(bytes))
}

/// `attachment; filename="…"`, with an RFC 6266 `filename*` when the name is not plain ASCII.
fn attachment_disposition(name: &str) -> ContentDisposition {
    let ascii: String = name.chars().map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '_' }).collect();
    let mut parameters = vec![DispositionParam::Filename(ascii)];
    if !name.is_ascii() {
        parameters.push(DispositionParam::FilenameExt(ExtendedValue {
            charset: Charset::Ext("UTF-8".into()),
            language_tag: None,
            value: name.as_bytes().to_vec(),
        }));
    }
    ContentDisposition { disposition: DispositionType::Attachment, parameters }
}
