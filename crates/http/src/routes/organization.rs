//! The caller's organization.

use actix_web::{HttpResponse, web};
use compliance_domain::organization::OrganizationChanges;

use super::resource;
use crate::body::JsonBody;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, OrganizationDto, WithAuth, auth_type};
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config.service(resource("/organization").route(web::get().to(get)).route(web::patch().to(update)));
}

async fn get(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let organization = state.run(|app| async move { app.organization.get(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(OrganizationDto::from(&organization)))
}

async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(changes): JsonBody<OrganizationChanges>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let organization = state.run(|app| async move { app.organization.update(&principal, changes).await }).await?;
    Ok(HttpResponse::Ok().json(WithAuth {
        item: OrganizationDto::from(&organization),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}
