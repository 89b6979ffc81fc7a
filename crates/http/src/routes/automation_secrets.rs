//! The secrets an automation logs in with: write-only values, listed by name only.

use actix_web::{HttpResponse, web};
use compliance_domain::AutomationId;
use compliance_domain::automation_secret::SecretInput;
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader};
use crate::path_ids::automation_id;
use crate::router::Routes;
use crate::wire::SecretDto;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_automation_secrets, __path_list_automation_secrets);
    routes.add(put_automation_secret, __path_put_automation_secret);
    routes.add(delete_automation_secret, __path_delete_automation_secret);
}

/// Set a secret of an automation.
///
/// Stores (or replaces) the value `type secret "NAME"` and the agent's `type_secret` type. The
/// value is sealed in the vault for this organization and this automation, and is never answered
/// back by any route. `name` is a letter followed by up to 63 letters, digits or `_` (case
/// matters); an automation keeps at most 50 secrets.
#[utoipa::path(
    put, path = "/v1/browser/automations/{automationId}/secrets/{name}", operation_id = "putAutomationSecret",
    tag = "browser-automations",
    params(
        ("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."),
        ("name" = String, Path, pattern = "^[A-Za-z][A-Za-z0-9_]{0,63}$", description = "The secret's name: a letter, then up to 63 letters, digits or `_` (a 400 naming `name` otherwise)."),
        IfMatchHeader,
    ),
    request_body = SecretInput,
    responses(
        (status = 201, description = "The secret was stored (its name, never its value).", body = SecretDto),
        (status = 200, description = "The secret's value was replaced.", body = SecretDto),
    ),
)]
async fn put_automation_secret(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
    if_match: IfMatchHeader,
    JsonBody(input): JsonBody<SecretInput>,
) -> Result<HttpResponse, ApiError> {
    let (id, name) = path.into_inner();
    let (principal, id, if_match) = (caller.0, automation_id(&id)?, if_match.0);
    let written = state
        .run(|app| async move { app.automation_secrets.put(&principal, &id, &name, input, &if_match).await })
        .await?;
    let status = if written.created { HttpResponse::Created() } else { HttpResponse::Ok() };
    Ok(conditional::tagged(status, &written.secret.etag, &SecretDto::from(&written.secret)))
}

/// List an automation's secrets: their names and when each was set, never a value.
#[utoipa::path(
    get, path = "/v1/browser/automations/{automationId}/secrets", operation_id = "listAutomationSecrets",
    tag = "browser-automations",
    params(("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404.")),
    responses((status = 200, description = "The secrets by name (a bare array).", body = Vec<SecretDto>)),
)]
async fn list_automation_secrets(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let secrets = state.run(|app| async move { app.automation_secrets.list(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(secrets.iter().map(SecretDto::from).collect::<Vec<_>>()))
}

/// The answer of a delete.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SecretDeleted {
    /// `Secret deleted`.
    #[schema(examples("Secret deleted"))]
    message: &'static str,
    name: String,
}

/// Delete a secret of an automation.
#[utoipa::path(
    delete, path = "/v1/browser/automations/{automationId}/secrets/{name}", operation_id = "deleteAutomationSecret",
    tag = "browser-automations",
    params(
        ("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."),
        ("name" = String, Path, description = "The secret's name; a name the automation has no secret of is a 404."),
        IfMatchHeader,
    ),
    responses((status = 200, description = "The secret was deleted.", body = SecretDeleted)),
)]
async fn delete_automation_secret(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (id, name) = path.into_inner();
    let (principal, id, if_match) = (caller.0, automation_id(&id)?, if_match.0);
    let name =
        state.run(|app| async move { app.automation_secrets.delete(&principal, &id, &name, &if_match).await }).await?;
    Ok(HttpResponse::Ok().json(SecretDeleted { message: "Secret deleted", name: name.to_string() }))
}
