//! People: the organization's members.

use actix_web::{HttpResponse, web};
use compliance_domain::MemberId;
use compliance_domain::people::{MemberChanges, NewMember};
use serde::Deserialize;

use super::resource;
use crate::body::JsonBody;
use crate::wire::{ListEnvelope, MemberDto};
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(resource("/people").route(web::get().to(list)).route(web::post().to(create)))
        .service(resource("/people/{id}").route(web::get().to(get)).route(web::patch().to(update)));
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    include_inactive: Option<String>,
}

fn member_id(id: &str) -> Result<MemberId, ApiError> {
    MemberId::parse(id).map_err(|_| ApiError::not_found("person"))
}

async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ApiError> {
    let include_inactive = match query.include_inactive.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::invalid_field("includeInactive", "must be true or false")),
    };
    let principal = caller.0.clone();
    let people = state.run(|app| async move { app.people.list(&principal, include_inactive).await }).await?;
    Ok(HttpResponse::Ok().json(ListEnvelope::standard(&caller, people.iter().map(MemberDto::from).collect())))
}

async fn get(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, member_id(&id)?);
    let person = state.run(|app| async move { app.people.get(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(MemberDto::from(&person)))
}

async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<NewMember>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let person = state.run(|app| async move { app.people.create(&principal, input).await }).await?;
    Ok(HttpResponse::Created().json(MemberDto::from(&person)))
}

async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    JsonBody(changes): JsonBody<MemberChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, member_id(&id)?);
    let person = state.run(|app| async move { app.people.update(&principal, &id, changes).await }).await?;
    Ok(HttpResponse::Ok().json(MemberDto::from(&person)))
}
