//! Devices, read from the device management system.

use actix_web::{HttpResponse, web};
use compliance_domain::MemberId;
use compliance_ports::DeviceRecord;
use serde::Serialize;
use utoipa::ToSchema;

use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_devices, __path_list_devices);
    routes.add(list_person_devices, __path_list_person_devices);
}

/// A host as the device management system (FleetDM) returns it, passed through unchanged: e.g.
/// `id`, `hostname`, `uuid`, `platform`, `os_version`, `hardware_serial`, `status`,
/// `disk_encryption_enabled`, `seen_time`, `labels`, `mdm` and `policies` (each with `id`,
/// `name`, `query`, `critical`, `response`, …). Which members are present, and which are `null`,
/// is the device management system's choice.
struct Device;

impl utoipa::PartialSchema for Device {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .description(Some(
                "A host as the device management system (FleetDM) returns it, passed through unchanged: e.g. `id`, \
                 `hostname`, `uuid`, `platform`, `os_version`, `hardware_serial`, `status`, `disk_encryption_enabled`, \
                 `seen_time`, `labels`, `mdm` and `policies` (each with `id`, `name`, `query`, `critical`, `response`, \
                 …). Which members are present, and which are `null`, is the device management system's choice.",
            ))
            .into()
    }
}

impl utoipa::ToSchema for Device {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Device")
    }
}

/// `{data, count, authType, authenticatedUser}` of devices.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DeviceList<'a> {
    #[schema(value_type = Vec<Device>)]
    data: Vec<DeviceRecord>,
    count: usize,
    #[schema(schema_with = crate::envelope::auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

impl<'a> DeviceList<'a> {
    fn new(caller: &'a Authenticated, data: Vec<DeviceRecord>) -> Self {
        Self {
            count: data.len(),
            data,
            auth_type: auth_type(caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::of(caller),
        }
    }
}

/// List devices
///
/// The hosts carrying the organization's device label (`deviceManagerLabelId`), read from the
/// device management system; empty when the organization has no label.
#[utoipa::path(
    get, path = "/v1/devices", operation_id = "listDevices", tag = "devices",
    responses(
        (status = 200, description = "The devices.", body = DeviceList),
        (status = 503, description = "No device management system is configured (no retry helps), or the database is unavailable (retry after `Retry-After` seconds).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 502, description = "The device management system answered badly or could not be reached.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The device management system did not answer in time.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn list_devices(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let devices = state.run(|app| async move { app.devices.list(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(DeviceList::new(&caller, devices)))
}

/// List a person's devices
///
/// The hosts carrying the member's device label; empty when the member has none.
#[utoipa::path(
    get, path = "/v1/people/{id}/devices", operation_id = "listPersonDevices", tag = "devices",
    params(("id" = MemberId, Path, description = "The member's id; an id of another shape is a 404.")),
    responses(
        (status = 200, description = "The member's devices.", body = DeviceList),
        (status = 503, description = "No device management system is configured (no retry helps), or the database is unavailable (retry after `Retry-After` seconds).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 502, description = "The device management system answered badly or could not be reached.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 504, description = "The device management system did not answer in time.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn list_person_devices(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let member = MemberId::parse(&id).map_err(|_| ApiError::not_found("person"))?;
    let principal = caller.0.clone();
    let devices = state.run(|app| async move { app.devices.for_member(&principal, &member).await }).await?;
    Ok(HttpResponse::Ok().json(DeviceList::new(&caller, devices)))
}
