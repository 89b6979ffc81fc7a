//! `/v1/context`: list, create, read, change and delete the organization's context entries
//! (questions and answers about the company). These routes spell `authType` `apikey` and never
//! name the user, as the specification has them.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::context::{ContextEntryChanges, NewContextEntry};
use compliance_domain::{ContextEntryId, Id};
use compliance_ports::{ContextFilter, ContextQuery, ContextSort, ListName};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_cache::{ListKey, items};
use crate::list_query::{ListParams, QueryShape, SortField, SortParam, TextFilter, TimeParams};
use crate::paging::PageQuery;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, ContextEntryDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_context_entries, __path_list_context_entries);
    routes.add(create_context_entry, __path_create_context_entry);
    routes.add(export_context, __path_export_context);
    routes.add(get_context_entry, __path_get_context_entry);
    routes.add(update_context_entry, __path_update_context_entry);
    routes.add(delete_context_entry, __path_delete_context_entry);
}

/// `{data, count, nextCursor, authType}` of context entries.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ContextEntryList<'a> {
    #[schema(value_type = Vec<ContextEntryDto>)]
    data: &'a RawValue,
    /// The total number of matching rows (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<&'a str>,
    #[schema(schema_with = context_auth_type_schema)]
    auth_type: &'static str,
}

/// A context entry with how the request authenticated.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ContextEntryWithAuth<'a> {
    #[serde(flatten)]
    entry: ContextEntryDto<'a>,
    #[schema(schema_with = context_auth_type_schema)]
    auth_type: &'static str,
}

/// What a delete answers: the message and what the context entry was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ContextEntryDeleted<'a> {
    /// `Context deleted successfully`
    message: &'static str,
    deleted_context: DeletedContextEntry<'a>,
    #[schema(schema_with = context_auth_type_schema)]
    auth_type: &'static str,
}

#[derive(Serialize, ToSchema)]
struct DeletedContextEntry<'a> {
    id: &'a ContextEntryId,
    question: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/context",
    tag = "context",
    operation_id = "listContext",
    summary = "List the organization's context entries",
    params(
        ("tag" = Option<Vec<TextFilter>>, Query, description = "Entries with any of these tags (repeat the parameter)."),
        TimeParams,
        SortParam<ContextSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching context entries, in the order asked (newest first by default).", body = ContextEntryList)),
)]
async fn list_context_entries(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = context_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::Context, &shape, &query.page);
    let load = |app: std::sync::Arc<compliance_app::App>| async move {
        app.context.list_context_entries(&principal, &query).await
    };
    let page = state.list_page(&caller, key, load, |page| items(page, ContextEntryDto::from)).await?;
    Ok(HttpResponse::Ok().json(ContextEntryList {
        data: page.data(),
        count: page.count(),
        next_cursor: page.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Context),
    }))
}

/// The columns of a context entries export: every field of a record as the list shows it.
const CONTEXT_COLUMNS: &[&str] = &["id", "organizationId", "question", "answer", "tags", "createdAt", "updatedAt"];

#[utoipa::path(
    get,
    path = "/v1/context/export",
    tag = "context",
    operation_id = "exportContext",
    summary = "Export the organization's context entries as CSV or JSON Lines",
    description = "Every record the list would show with the same parameters, streamed as one file.",
    params(
        ("tag" = Option<Vec<TextFilter>>, Query, description = "Entries with any of these tags (repeat the parameter)."),
        TimeParams,
        SortParam<ContextSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The context entries, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_context(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = context_query(params, state.settings())?;
    let principal = caller.0;
    let row = |entry: &_| serde_json::to_value(ContextEntryDto::from(entry));
    let export = Export { format, name: "context", columns: CONTEXT_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.context.list_context_entries(&principal, &query).await }
    })
    .await
}

impl SortField for ContextSort {
    const FIELDS: &'static [(&'static str, Self)] =
        &[("createdAt", Self::CreatedAt), ("updatedAt", Self::UpdatedAt), ("question", Self::Question)];
}

/// The query of `GET /v1/context` (and of its export): its filters, then what every list shares.
pub(crate) fn context_query(
    mut params: ListParams,
    settings: &Settings,
) -> Result<(ContextQuery, QueryShape), ApiError> {
    let shape = params.shape("context");
    let filter = ContextFilter { tag: params.texts("tag")? };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

#[utoipa::path(
    post,
    path = "/v1/context",
    tag = "context",
    operation_id = "createContext",
    summary = "Create a context entry",
    request_body = NewContextEntry,
    responses((status = 201, description = "The new context entry.", body = ContextEntryWithAuth, headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_context_entry(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewContextEntry>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let entry = state.run(|app| async move { app.context.create_context_entry(&principal, input).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &entry.etag(),
        &ContextEntryWithAuth {
            entry: ContextEntryDto::from(&entry),
            auth_type: auth_type(&caller, AuthTypeStyle::Context),
        },
    ))
}

#[utoipa::path(
    get,
    path = "/v1/context/{id}",
    tag = "context",
    operation_id = "getContext",
    summary = "Get one context entry",
    params(("id" = ContextEntryId, Path), IfNoneMatchHeader),
    responses((status = 200, description = "The context entry.", body = ContextEntryDto)),
)]
async fn get_context_entry(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, context_entry_id(&id)?);
    let entry = state.run(|app| async move { app.context.get_context_entry(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &entry.etag(), &ContextEntryDto::from(&entry)))
}

#[utoipa::path(
    patch,
    path = "/v1/context/{id}",
    tag = "context",
    operation_id = "updateContext",
    summary = "Change a context entry: only the fields sent change",
    params(("id" = ContextEntryId, Path), IfMatchHeader),
    request_body = ContextEntryChanges,
    responses((status = 200, description = "The changed context entry.", body = ContextEntryWithAuth)),
)]
async fn update_context_entry(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<ContextEntryChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), context_entry_id(&id)?);
    let entry = state
        .run(|app| async move { app.context.update_context_entry(&principal, &id, changes, &if_match.0).await })
        .await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &entry.etag(),
        &ContextEntryWithAuth {
            entry: ContextEntryDto::from(&entry),
            auth_type: auth_type(&caller, AuthTypeStyle::Context),
        },
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/context/{id}",
    tag = "context",
    operation_id = "deleteContext",
    summary = "Delete a context entry",
    params(("id" = ContextEntryId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = ContextEntryDeleted)),
)]
async fn delete_context_entry(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), context_entry_id(&id)?);
    let entry =
        state.run(|app| async move { app.context.delete_context_entry(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(ContextEntryDeleted {
        message: "Context deleted successfully",
        deleted_context: DeletedContextEntry { id: &entry.id, question: &entry.question },
        auth_type: auth_type(&caller, AuthTypeStyle::Context),
    }))
}

/// A malformed id names no context entry: 404, as a missing one.
fn context_entry_id(id: &str) -> Result<ContextEntryId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("context entry"))
}

/// `authType` on the context endpoints: `apikey` or `session`.
fn context_auth_type_schema() -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(["apikey", "session"]))
        .description(Some("`apikey` or `session`: how the request authenticated."))
        .build()
}
