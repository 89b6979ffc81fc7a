//! `/v1/api-keys`: the organization's API keys, made and revoked over HTTP. The key's text is in
//! the answer of its creation only.

use actix_web::{HttpResponse, web};
use compliance_domain::access::Scope;
use compliance_domain::people::{ApiKey, NewApiKey};
use compliance_domain::{ApiKeyId, Timestamp, UserId};
use secrecy::ExposeSecret;
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::list_query::QueryShape;
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_api_keys, __path_list_api_keys);
    routes.add(create_api_key, __path_create_api_key);
    routes.add(revoke_api_key, __path_revoke_api_key);
}

/// An API key as it is shown: never its text.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApiKeyDto<'a> {
    id: &'a ApiKeyId,
    name: &'a str,
    /// The user the key acts as; its creator.
    created_by: &'a UserId,
    /// What the key may be used for, within its creator's current role.
    #[schema(schema_with = scopes_schema)]
    scopes: Vec<String>,
    created_at: Timestamp,
    #[schema(value_type = Option<Timestamp>)]
    expires_at: Option<Timestamp>,
    #[schema(value_type = Option<Timestamp>)]
    revoked_at: Option<Timestamp>,
    #[schema(value_type = Option<Timestamp>)]
    last_used_at: Option<Timestamp>,
    /// The key that made this one (with `POST /v1/api-keys` under `X-API-Key`), if one did: this
    /// key expires no later than that one and is revoked with it. `null` for a key made with a
    /// session or by the operator.
    #[schema(value_type = Option<ApiKeyId>)]
    parent_id: Option<&'a ApiKeyId>,
}

impl<'a> From<&'a ApiKey> for ApiKeyDto<'a> {
    fn from(key: &'a ApiKey) -> Self {
        Self {
            id: &key.id,
            name: &key.name,
            created_by: &key.created_by,
            scopes: key.scopes.iter().map(|scope| scope.to_string()).collect(),
            created_at: key.created_at,
            expires_at: key.expires_at,
            revoked_at: key.revoked_at,
            last_used_at: key.last_used_at,
            parent_id: key.parent_id.as_ref(),
        }
    }
}

fn scopes_schema() -> utoipa::openapi::schema::Array {
    let names: Vec<String> = Scope::every().map(|scope| scope.to_string()).collect();
    let item = utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(names));
    utoipa::openapi::schema::ArrayBuilder::new().items(item).build()
}

/// `{data, count, nextCursor}` of API keys.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApiKeyList<'a> {
    data: Vec<ApiKeyDto<'a>>,
    /// The total number of keys listed (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// A new key: its text, shown this once.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedApiKey<'a> {
    #[serde(flatten)]
    api_key: ApiKeyDto<'a>,
    /// The key's text (`cpk_…`), for the `X-API-Key` header. It is never shown again.
    key: &'a str,
}

/// List API keys
///
/// Newest first, revoked ones included. Owners, admins and auditors see every key of the
/// organization; others only the keys they made. Paginated with `limit` and `cursor`.
#[utoipa::path(
    get, path = "/v1/api-keys", operation_id = "listApiKeys", tag = "api-keys",
    params(PageQuery),
    responses((status = 200, description = "The keys, without their text.", body = ApiKeyList)),
)]
async fn list_api_keys(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, page) = (caller.0, query.request(state.settings(), "apiKeys")?);
    let keys = state.run(|app| async move { app.api_keys.list(&principal, &page).await }).await?;
    Ok(HttpResponse::Ok().json(ApiKeyList {
        data: keys.items.iter().map(ApiKeyDto::from).collect(),
        count: keys.total,
        next_cursor: keys.next.as_ref().map(|next| encode(next, &QueryShape::unfiltered("apiKeys").fingerprint())),
    }))
}

/// Create an API key
///
/// A key acting as the caller, limited to `scopes`. A scope beyond what the caller's role allows
/// (or, for a caller using a key, beyond that key's scopes) is a 403; an unknown scope a 400.
/// Made with an API key, the new key records it as `parentId`, expires no later than it (a later
/// or missing `expiresAt` becomes the parent's), and is revoked with it.
#[utoipa::path(
    post, path = "/v1/api-keys", operation_id = "createApiKey", tag = "api-keys",
    request_body = NewApiKey,
    responses((status = 201, description = "The new key with its text, shown this once.", body = CreatedApiKey)),
)]
async fn create_api_key(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewApiKey>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let issued = state.run(|app| async move { app.api_keys.create(&principal, input).await }).await?;
    Ok(HttpResponse::Created()
        .json(CreatedApiKey { api_key: ApiKeyDto::from(&issued.key), key: issued.secret.expose_secret() }))
}

/// Revoke an API key
///
/// The key stops working at once, on every instance, and so does every key made from it (by it,
/// or by a key it made, …). Owners and admins may revoke any key of the organization; others only
/// their own. Revoking a revoked key answers it unchanged.
#[utoipa::path(
    delete, path = "/v1/api-keys/{id}", operation_id = "revokeApiKey", tag = "api-keys",
    params(("id" = ApiKeyId, Path, description = "The key's id; an id of another shape is a 404.")),
    responses((status = 200, description = "The revoked key.", body = ApiKeyDto)),
)]
async fn revoke_api_key(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let id = ApiKeyId::parse(&id).map_err(|_| ApiError::not_found("API key"))?;
    let key = state.run(|app| async move { app.api_keys.revoke(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(ApiKeyDto::from(&key)))
}
