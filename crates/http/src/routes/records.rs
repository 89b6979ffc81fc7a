//! Context entries, policies, vendors and risks: the same five routes each, shaped per resource.

use actix_web::{HttpResponse, web};
use compliance_app::{App, RecordService};

use compliance_domain::context::ContextEntry;
use compliance_domain::policy::Policy;
use compliance_domain::risk::Risk;
use compliance_domain::task::Task;
use compliance_domain::vendor::Vendor;
use compliance_domain::{Id, IdKind};
use compliance_ports::TenantRecord;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::resource;
use crate::body::JsonBody;
use crate::wire::{
    AuthTypeStyle, AuthenticatedUser, ContextEntryDto, ListEnvelope, PolicyDto, RiskDto, TaskDto, VendorDto, WithAuth,
    auth_type,
};
use crate::{ApiError, AppState, Caller};

/// How a record kind appears on the wire.
/// The bounds on the bodies are stated once here, as associated-type bounds, so that every
/// generic handler below inherits them.
pub trait WireRecord:
    TenantRecord<Id = Id<Self::Kind>, New: DeserializeOwned + 'static, Changes: DeserializeOwned + 'static> + Sized
{
    type Kind: IdKind + 'static;
    type Dto<'a>: Serialize
    where
        Self: 'a;
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

pub fn configure(config: &mut web::ServiceConfig) {
    routes::<ContextEntry>(config, "/context");
    routes::<Policy>(config, "/policies");
    routes::<Vendor>(config, "/vendors");
    routes::<Risk>(config, "/risks");
    routes::<Task>(config, "/tasks");
}

fn routes<R: WireRecord>(config: &mut web::ServiceConfig, path: &str) {
    config.service(resource(path).route(web::get().to(list::<R>)).route(web::post().to(create::<R>))).service(
        resource(&format!("{path}/{{id}}"))
            .route(web::get().to(get::<R>))
            .route(web::patch().to(update::<R>))
            .route(web::delete().to(delete::<R>)),
    );
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

async fn list<R: WireRecord>(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let records = state.run(|app| async move { R::service(&app).list(&principal).await }).await?;
    let count = records.len();
    let envelope = ListEnvelope {
        data: records.iter().map(|record| record.dto(false)).collect(),
        count: R::LIST_COUNT.then_some(count),
        auth_type: auth_type(&caller, R::STYLE),
        authenticated_user: (R::STYLE == AuthTypeStyle::Standard).then(|| AuthenticatedUser::of(&caller)),
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
