//! Devices, read from the device management system.

use actix_web::{HttpResponse, web};
use compliance_domain::MemberId;

use super::resource;
use crate::wire::ListEnvelope;
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(resource("/devices").route(web::get().to(list)))
        .service(resource("/people/{id}/devices").route(web::get().to(for_member)));
}

async fn list(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let devices = state.run(|app| async move { app.devices.list(&principal).await }).await?;
    Ok(envelope(&caller, devices))
}

async fn for_member(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let member = MemberId::parse(&id).map_err(|_| ApiError::not_found("person"))?;
    let principal = caller.0.clone();
    let devices = state.run(|app| async move { app.devices.for_member(&principal, &member).await }).await?;
    Ok(envelope(&caller, devices))
}

fn envelope(caller: &Caller, devices: Vec<compliance_ports::DeviceRecord>) -> HttpResponse {
    HttpResponse::Ok().json(ListEnvelope::standard(caller, devices))
}
