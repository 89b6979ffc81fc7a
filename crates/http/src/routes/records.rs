//! Context entries, policies, vendors and risks: the same five routes each, shaped per resource.

use std::sync::Arc;

use actix_web::{HttpResponse, web};
use compliance_app::{App, RecordService};

use compliance_domain::context::ContextEntry;
use compliance_domain::policy::Policy;
use compliance_domain::risk::Risk;
use compliance_domain::task::Task;
use compliance_domain::vendor::Vendor;
use compliance_domain::{Id, IdKind, UserId};
use compliance_ports::TenantRecord;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use utoipa::openapi::{OpenApi, RefOr, Schema};
use utoipa::{IntoParams, ToSchema};

use super::{Endpoint, Router};
use crate::body::JsonBody;
use crate::list_cache::{ListKey, items};
use crate::paging::PageQuery;
use crate::wire::{
    AuthTypeStyle, AuthenticatedUser, ContextEntryDto, ListEnvelope, PolicyDto, RiskDto, TaskDto, VendorDto, WithAuth,
    auth_type,
};
use crate::{ApiError, AppState, Caller};

/// How a record kind appears on the wire.
/// The bounds on the bodies are stated once here, as associated-type bounds, so that every
/// generic handler below inherits them.
pub trait WireRecord:
    TenantRecord<
        Id = Id<Self::Kind>,
        New: DeserializeOwned + ToSchema + 'static,
        Changes: DeserializeOwned + ToSchema + 'static,
    > + Sized
    + 'static
{
    type Kind: IdKind + 'static;
    type Dto<'a>: Serialize + ToSchema
    where
        Self: 'a;
    /// Where its routes live, e.g. `/v1/risks`; the part after `/v1/` is its OpenAPI tag.
    const PATH: &'static str;
    /// The spelling of `authType`; the context style also never names the user.
    const STYLE: AuthTypeStyle;
    /// Whether lists carry `count` (policies do not).
    const LIST_COUNT: bool;
    /// The name in delete messages: "Risk" → "Risk deleted", `deletedRisk`.
    const NAME: &'static str;

    fn service(app: &App) -> &RecordService<Self>;
    /// List items (`detail` false) may leave fields out.
    fn dto(&self, detail: bool) -> Self::Dto<'_>;
    /// What a delete response repeats of the deleted record.
    fn summary(&self) -> Value;
}

impl WireRecord for ContextEntry {
    const PATH: &'static str = "/v1/context";
    type Kind = compliance_domain::id::ContextEntryKind;
    type Dto<'a> = ContextEntryDto<'a>;
    const STYLE: AuthTypeStyle = AuthTypeStyle::Context;
    const LIST_COUNT: bool = true;
    const NAME: &'static str = "Context";
    fn service(app: &App) -> &RecordService<Self> {
        &app.context
    }
    fn dto(&self, _: bool) -> ContextEntryDto<'_> {
        self.into()
    }
    fn summary(&self) -> Value {
        json!({"id": self.id, "question": self.question})
    }
}

impl WireRecord for Policy {
    const PATH: &'static str = "/v1/policies";
    type Kind = compliance_domain::id::PolicyKind;
    type Dto<'a> = PolicyDto<'a>;
    const STYLE: AuthTypeStyle = AuthTypeStyle::Standard;
    const LIST_COUNT: bool = false;
    const NAME: &'static str = "Policy";
    fn service(app: &App) -> &RecordService<Self> {
        &app.policies
    }
    fn dto(&self, _: bool) -> PolicyDto<'_> {
        self.into()
    }
    fn summary(&self) -> Value {
        json!({"id": self.id, "name": self.name})
    }
}

impl WireRecord for Vendor {
    const PATH: &'static str = "/v1/vendors";
    type Kind = compliance_domain::id::VendorKind;
    type Dto<'a> = VendorDto<'a>;
    const STYLE: AuthTypeStyle = AuthTypeStyle::Standard;
    const LIST_COUNT: bool = true;
    const NAME: &'static str = "Vendor";
    fn service(app: &App) -> &RecordService<Self> {
        &app.vendors
    }
    fn dto(&self, detail: bool) -> VendorDto<'_> {
        VendorDto::new(self, detail)
    }
    fn summary(&self) -> Value {
        json!({"id": self.id, "name": self.name})
    }
}

impl WireRecord for Task {
    const PATH: &'static str = "/v1/tasks";
    type Kind = compliance_domain::id::TaskKind;
    type Dto<'a> = TaskDto<'a>;
    const STYLE: AuthTypeStyle = AuthTypeStyle::Standard;
    const LIST_COUNT: bool = true;
    const NAME: &'static str = "Task";
    fn service(app: &App) -> &RecordService<Self> {
        &app.tasks
    }
    fn dto(&self, _: bool) -> TaskDto<'_> {
        self.into()
    }
    fn summary(&self) -> Value {
        json!({"id": self.id, "title": self.title})
    }
}

impl WireRecord for Risk {
    const PATH: &'static str = "/v1/risks";
    type Kind = compliance_domain::id::RiskKind;
    type Dto<'a> = RiskDto<'a>;
    const STYLE: AuthTypeStyle = AuthTypeStyle::Standard;
    const LIST_COUNT: bool = true;
    const NAME: &'static str = "Risk";
    fn service(app: &App) -> &RecordService<Self> {
        &app.risks
    }
    fn dto(&self, detail: bool) -> RiskDto<'_> {
        RiskDto::new(self, detail)
    }
    fn summary(&self) -> Value {
        json!({"id": self.id, "title": self.title})
    }
}

pub fn configure(router: &mut Router<'_>) {
    routes::<ContextEntry>(router);
    routes::<Policy>(router);
    routes::<Vendor>(router);
    routes::<Risk>(router);
    routes::<Task>(router);
}

fn routes<R: WireRecord>(router: &mut Router<'_>) {
    router
        .add(Endpoint::new(R::PATH).get(list::<R>).post(create::<R>))
        .add(Endpoint::new(&format!("{}/{{id}}", R::PATH)).get(get::<R>).patch(update::<R>).delete(delete::<R>));
}

/// The user named on create, update and delete responses: sessions only, never on context.
fn mutation_user<R: WireRecord>(caller: &Caller) -> Option<AuthenticatedUser<'_>> {
    match R::STYLE {
        AuthTypeStyle::Context => None,
        AuthTypeStyle::Standard => AuthenticatedUser::for_session(caller),
    }
}

fn with_auth<'a, R: WireRecord>(caller: &'a Caller, record: &'a R) -> WithAuth<'a, R::Dto<'a>> {
    WithAuth {
        item: record.dto(true),
        auth_type: auth_type(caller, R::STYLE),
        authenticated_user: mutation_user::<R>(caller),
    }
}

fn parse_id<R: WireRecord>(id: &str) -> Result<R::Id, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found(R::KIND))
}

/// The five operations of every record kind, described from its types and the constants above
/// (utoipa's `#[utoipa::path]` cannot describe a generic handler).
pub(super) fn document() -> OpenApi {
    let mut document = OpenApi::default();
    describe::<ContextEntry>(&mut document);
    describe::<Policy>(&mut document);
    describe::<Vendor>(&mut document);
    describe::<Risk>(&mut document);
    describe::<Task>(&mut document);
    document
}

fn describe<R: WireRecord>(document: &mut OpenApi) {
    let tag = R::PATH.trim_start_matches("/v1/");
    let (name, plural) = (R::NAME, R::PATH.trim_start_matches("/v1/"));
    let dto = schema_ref(&R::Dto::name());
    let auth_type = match R::STYLE {
        AuthTypeStyle::Standard => json!({"type": "string", "enum": ["api-key", "session"]}),
        AuthTypeStyle::Context => json!({"type": "string", "enum": ["apikey", "session"]}),
    };
    let user = json!({"type": "object", "required": ["id", "email"],
        "properties": {"id": schema_ref(&UserId::name()), "email": {"type": "string"}}});
    // Lists name the user for both kinds of authentication; mutations only for sessions.
    let mut list_required = vec!["data", "authType"];
    if R::LIST_COUNT {
        list_required.push("count");
    }
    if R::STYLE == AuthTypeStyle::Standard {
        list_required.push("authenticatedUser");
    }
    let mut auth = json!({"authType": auth_type});
    if R::STYLE == AuthTypeStyle::Standard {
        auth["authenticatedUser"] = user.clone();
    }
    let list = json!({"type": "object", "required": list_required, "properties": {
        "data": {"type": "array", "items": dto},
        "count": {"type": "integer", "minimum": 0, "description": "The total number of matching rows (across all pages)."},
        "nextCursor": {"type": "string", "description": "Where the next page starts (pass it as `cursor`); absent on the last page."},
        "authType": auth_type,
        "authenticatedUser": user,
    }});
    let with_auth = json!({"allOf": [dto, {"type": "object", "required": ["authType"], "properties": auth}]});
    let mut deleted = json!({"message": {"type": "string"},
        format!("deleted{name}"): {"type": "object", "required": ["id"], "properties": {"id": schema_ref(&R::Id::name())}}});
    deleted
        .as_object_mut()
        .into_iter()
        .for_each(|members| members.extend(auth.as_object().cloned().unwrap_or_default()));
    let deleted =
        json!({"type": "object", "required": ["message", format!("deleted{name}"), "authType"], "properties": deleted});
    let id = json!([{"name": "id", "in": "path", "required": true, "schema": schema_ref(&R::Id::name())}]);
    let body =
        |schema: &str| json!({"required": true, "content": {"application/json": {"schema": schema_ref(schema)}}});
    let ok = |description: String, schema: Value| json!({"description": description, "content": {"application/json": {"schema": schema}}});
    let operation = |id: String, summary: String, extra: Value| {
        let mut operation = json!({"tags": [tag], "operationId": id, "summary": summary});
        operation.as_object_mut().into_iter().for_each(|o| o.extend(extra.as_object().cloned().unwrap_or_default()));
        operation
    };
    let paths = json!({
        R::PATH: {
            "get": operation(format!("list{}", pascal(plural)), format!("List the organization's {plural}"),
                json!({"parameters": page_parameters(), "responses": {"200": ok(format!("The {plural}, newest first."), list)}})),
            "post": operation(format!("create{name}"), format!("Create a {}", name.to_lowercase()),
                json!({"requestBody": body(&R::New::name()), "responses": {"201": ok(format!("The new {}.", name.to_lowercase()), with_auth.clone())}})),
        },
        format!("{}/{{id}}", R::PATH): {
            "get": operation(format!("get{name}"), format!("Get one {}", name.to_lowercase()),
                json!({"parameters": id, "responses": {"200": ok(format!("The {}.", name.to_lowercase()), dto.clone())}})),
            "patch": operation(format!("update{name}"), format!("Change a {}: only the fields sent change", name.to_lowercase()),
                json!({"parameters": id, "requestBody": body(&R::Changes::name()),
                    "responses": {"200": ok(format!("The changed {}.", name.to_lowercase()), with_auth)}})),
            "delete": operation(format!("delete{name}"), format!("Delete a {}", name.to_lowercase()),
                json!({"parameters": id, "responses": {"200": ok("What was deleted.".to_owned(), deleted)}})),
        },
    });
    let mut part: OpenApi =
        match serde_json::from_value(json!({"openapi": "3.1.0", "info": {"title": "", "version": ""}, "paths": paths}))
        {
            Ok(part) => part,
            // The JSON above is fixed; a test builds the document, so this cannot go unnoticed.
            Err(_) => return,
        };
    let mut schemas = Vec::new();
    collect::<R::New>(&mut schemas);
    collect::<R::Changes>(&mut schemas);
    collect::<R::Dto<'static>>(&mut schemas);
    collect::<R::Id>(&mut schemas);
    collect::<UserId>(&mut schemas);
    part.components.get_or_insert_with(Default::default).schemas.extend(schemas);
    document.merge(part);
}

/// `limit` and `cursor` for the generic lists' document, from the same `PageQuery` the other lists
/// declare in their annotations.
fn page_parameters() -> Value {
    json!(PageQuery::into_params(|| Some(utoipa::openapi::path::ParameterIn::Query)))
}

fn collect<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// `context` → `Context`
fn pascal(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

async fn list<R: WireRecord>(
    state: web::Data<AppState>,
    caller: Caller,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, page) = (caller.0.clone(), query.request(state.settings())?);
    let key = ListKey::new(&principal, R::LIST, &page);
    let load = |app: Arc<App>| async move { R::service(&app).list(&principal, &page).await };
    let page = state.list_page(key, load, |page| items(page, |record| record.dto(false))).await?;
    let envelope = ListEnvelope {
        count: R::LIST_COUNT.then_some(page.count()),
        auth_type: auth_type(&caller, R::STYLE),
        authenticated_user: (R::STYLE == AuthTypeStyle::Standard).then(|| AuthenticatedUser::of(&caller)),
        ..page.envelope(&caller)
    };
    Ok(HttpResponse::Ok().json(envelope))
}

async fn get<R: WireRecord>(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, parse_id::<R>(&id)?);
    let record = state.run(|app| async move { R::service(&app).get(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(record.dto(true)))
}

async fn create<R: WireRecord>(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<R::New>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let record = state.run(|app| async move { R::service(&app).create(&principal, input).await }).await?;
    Ok(HttpResponse::Created().json(with_auth(&caller, &record)))
}

async fn update<R: WireRecord>(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    JsonBody(changes): JsonBody<R::Changes>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), parse_id::<R>(&id)?);
    let record = state.run(|app| async move { R::service(&app).update(&principal, &id, changes).await }).await?;
    Ok(HttpResponse::Ok().json(with_auth(&caller, &record)))
}

async fn delete<R: WireRecord>(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), parse_id::<R>(&id)?);
    let record = state.run(|app| async move { R::service(&app).delete(&principal, &id).await }).await?;
    let mut body = Map::new();
    body.insert("message".into(), format!("{} deleted successfully", R::NAME).into());
    body.insert(format!("deleted{}", R::NAME), record.summary());
    body.insert("authType".into(), auth_type(&caller, R::STYLE).into());
    if let Some(user) = mutation_user::<R>(&caller) {
        body.insert("authenticatedUser".into(), json!(user));
    }
    Ok(HttpResponse::Ok().json(body))
}
