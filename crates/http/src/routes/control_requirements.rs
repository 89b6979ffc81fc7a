//! `/v1/controls/{id}/requirements`: the framework requirements a control is mapped to (a control
//! often serves requirements of several frameworks); `GET /v1/frameworks/{id}/status` rolls them up.

use actix_web::{HttpResponse, web};
use compliance_domain::framework_status::{NewRequirementMapping, RequirementMapping};
use compliance_domain::{ControlId, FrameworkId, RequirementId, Timestamp};
use compliance_ports::MappedRequirement;
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::path_ids::control_id;
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_control_requirements, __path_list_control_requirements);
    routes.add(map_control_requirement, __path_map_control_requirement);
    routes.add(unmap_control_requirement, __path_unmap_control_requirement);
}

/// A control's mapping to a requirement.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RequirementMappingDto<'a> {
    control_id: &'a ControlId,
    requirement_id: &'a RequirementId,
    /// The requirement's framework.
    framework_id: &'a FrameworkId,
    /// When it was mapped: a status `asOf` an earlier moment leaves it out.
    created_at: Timestamp,
}

impl<'a> From<&'a RequirementMapping> for RequirementMappingDto<'a> {
    fn from(m: &'a RequirementMapping) -> Self {
        Self {
            control_id: &m.control_id,
            requirement_id: &m.requirement_id,
            framework_id: &m.framework_id,
            created_at: m.created_at,
        }
    }
}

/// A mapping with what the requirement is called.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MappedRequirementDto<'a> {
    #[serde(flatten)]
    mapping: RequirementMappingDto<'a>,
    /// The requirement's identifier (`CC6.1`).
    identifier: &'a str,
    /// The requirement's title.
    title: &'a str,
}

/// `{data}`: every requirement the control is mapped to, oldest mapping first.
#[derive(Serialize, ToSchema)]
struct MappedRequirementList<'a> {
    data: Vec<MappedRequirementDto<'a>>,
}

fn requirement_id(id: &str) -> Result<RequirementId, ApiError> {
    RequirementId::parse(id).map_err(|_| ApiError::not_found("requirement mapping"))
}

#[utoipa::path(
    get,
    path = "/v1/controls/{id}/requirements",
    tag = "controls",
    operation_id = "listControlRequirements",
    summary = "The framework requirements a control is mapped to",
    params(("id" = ControlId, Path)),
    responses((status = 200, description = "Every mapping of the control, oldest first.", body = MappedRequirementList)),
)]
async fn list_control_requirements(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let mapped = state
        .run(|app| async move { app.control_requirements.list_control_requirements(&principal, &id).await })
        .await?;
    Ok(HttpResponse::Ok().json(MappedRequirementList { data: mapped.iter().map(MappedRequirementDto::from).collect() }))
}

impl<'a> From<&'a MappedRequirement> for MappedRequirementDto<'a> {
    fn from(m: &'a MappedRequirement) -> Self {
        Self { mapping: RequirementMappingDto::from(&m.mapping), identifier: &m.identifier, title: &m.title }
    }
}

#[utoipa::path(
    post,
    path = "/v1/controls/{id}/requirements",
    tag = "controls",
    operation_id = "mapControlRequirement",
    summary = "Map a control to a requirement of one of the organization's frameworks",
    params(("id" = ControlId, Path)),
    request_body = NewRequirementMapping,
    responses(
        (status = 201, description = "The mapping.", body = RequirementMappingDto),
        (status = 409, description = "The control is already mapped to this requirement.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn map_control_requirement(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<NewRequirementMapping>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, control_id(&id)?);
    let mapping =
        state.run(|app| async move { app.control_requirements.map_requirement(&principal, &id, input).await }).await?;
    Ok(HttpResponse::Created().json(RequirementMappingDto::from(&mapping)))
}

#[utoipa::path(
    delete,
    path = "/v1/controls/{id}/requirements/{requirementId}",
    tag = "controls",
    operation_id = "unmapControlRequirement",
    summary = "Remove a control's mapping to a requirement",
    params(("id" = ControlId, Path), ("requirementId" = RequirementId, Path, description = "The mapped requirement.")),
    responses((status = 200, description = "The removed mapping.", body = RequirementMappingDto)),
)]
async fn unmap_control_requirement(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, requirement) = path.into_inner();
    let (principal, id, requirement) = (caller.0, control_id(&id)?, requirement_id(&requirement)?);
    let removed = state
        .run(|app| async move { app.control_requirements.unmap_requirement(&principal, &id, &requirement).await })
        .await?;
    Ok(HttpResponse::Ok().json(RequirementMappingDto::from(&removed)))
}
