//! `/v1/frameworks`: catalogs of requirements the organization adopted, made from an OSCAL catalog
//! (`/import`), our own JSON shape, or a shipped template (`/v1/framework-templates`).

use actix_web::{HttpResponse, web};
use compliance_app::FrameworkView;
use compliance_domain::control::ControlStatus;
use compliance_domain::framework::{
    Framework, FrameworkSource, FrameworkWithRequirements, NewFramework, Requirement, Template,
};
use compliance_domain::framework_status::{MappedControl, RequirementState, RequirementStatus, StatusCounts};
use compliance_domain::library::LibraryOrigin;
use compliance_domain::library::adoption::{Adoption, AdoptionOptions};
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};
use compliance_ports::{FrameworkFilter, FrameworkQuery, FrameworkSort};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::as_of::AsOfQuery;
use crate::body::{BodyLimit, JsonBody, OptionalJsonBody};
use crate::conditional::{self, IfMatchHeader};
use crate::list_query::{ListParams, QueryShape, SortField};
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

/// The body limit of an OSCAL import: 15 MiB, where other JSON bodies take 1 MiB (and no more than
/// the bulk routes' 16,000 KiB, the most the idempotency middleware reads). NIST SP 800-53 rev. 5's
/// whole catalog (every control, enhancement, parameter and guidance part) is about 10 MiB of
/// JSON; the import keeps only what it reads into requirements.
pub const IMPORT_BODY_LIMIT: BodyLimit = BodyLimit(15 * 1024 * 1024);

pub fn configure(routes: &mut Routes) {
    routes.add(list_frameworks, __path_list_frameworks);
    routes.add(create_framework, __path_create_framework);
    routes.add(import_framework, __path_import_framework).body_limit(IMPORT_BODY_LIMIT);
    routes.add(get_framework, __path_get_framework);
    routes.add(delete_framework, __path_delete_framework);
    routes.add(get_framework_status, __path_get_framework_status);
    routes.add(get_framework_assessment_results, __path_get_framework_assessment_results);
    routes.add(list_framework_templates, __path_list_framework_templates);
    routes.add(adopt_framework_template, __path_adopt_framework_template);
}

/// A framework as lists show it: without its requirements.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkDto<'a> {
    id: &'a FrameworkId,
    organization_id: &'a OrganizationId,
    name: &'a str,
    version: &'a str,
    /// Where its requirements came from: an OSCAL catalog, our own JSON shape, or a shipped template.
    source: FrameworkSource,
    requirement_count: usize,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> From<&'a Framework> for FrameworkDto<'a> {
    fn from(f: &'a Framework) -> Self {
        Self {
            id: &f.id,
            organization_id: &f.organization_id,
            name: &f.name,
            version: &f.version,
            source: f.source,
            requirement_count: f.requirement_count,
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

/// One requirement; `parent` is the id of the requirement it refines (an OSCAL control
/// enhancement's control), or null.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RequirementDto<'a> {
    id: &'a RequirementId,
    /// `CC6.1`, `A.5.15`, `AC-2(1)`: unique within the framework.
    identifier: &'a str,
    title: &'a str,
    /// Plain text; null when the catalog gives none.
    #[schema(value_type = Option<String>)]
    description: Option<&'a str>,
    #[schema(value_type = Option<RequirementId>)]
    parent: Option<&'a RequirementId>,
    /// The id the OSCAL catalog gives the control it was imported from (`ac-2.1`), which an
    /// assessment-results export names it by; null for our own shape and the templates.
    #[schema(value_type = Option<String>)]
    catalog_id: Option<&'a str>,
}

impl<'a> From<&'a Requirement> for RequirementDto<'a> {
    fn from(r: &'a Requirement) -> Self {
        Self {
            id: &r.id,
            identifier: &r.identifier,
            title: &r.title,
            description: r.description.as_deref(),
            parent: r.parent_id.as_ref(),
            catalog_id: r.catalog_id.as_deref(),
        }
    }
}

/// A framework with its requirements, in catalog order (a parent before its children).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkWithRequirementsDto<'a> {
    #[serde(flatten)]
    framework: FrameworkDto<'a>,
    requirements: Vec<RequirementDto<'a>>,
}

impl<'a> From<&'a FrameworkWithRequirements> for FrameworkWithRequirementsDto<'a> {
    fn from(f: &'a FrameworkWithRequirements) -> Self {
        Self {
            framework: FrameworkDto::from(&f.framework),
            requirements: f.requirements.iter().map(RequirementDto::from).collect(),
        }
    }
}

/// A control mapped to a requirement, with its status at the moment asked.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MappedControlDto<'a> {
    id: &'a ControlId,
    name: &'a str,
    status: ControlStatus,
}

impl<'a> From<&'a MappedControl> for MappedControlDto<'a> {
    fn from(c: &'a MappedControl) -> Self {
        Self { id: &c.control_id, name: &c.name, status: c.status }
    }
}

/// How many requirements have each status.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StatusCountsDto {
    passing: usize,
    failing: usize,
    stale: usize,
    not_started: usize,
    /// Requirements no control is mapped to.
    unmapped: usize,
    /// Requirements stated not to apply (Statement of Applicability): counted apart, outside the
    /// share passing.
    not_applicable: usize,
}

impl From<StatusCounts> for StatusCountsDto {
    fn from(c: StatusCounts) -> Self {
        Self {
            passing: c.passing,
            failing: c.failing,
            stale: c.stale,
            not_started: c.not_started,
            unmapped: c.unmapped,
            not_applicable: c.not_applicable,
        }
    }
}

/// A requirement with the controls mapped to it and its status: the worst of theirs (failing,
/// stale, not started, passing), or `unmapped` without a control.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RequirementWithStatusDto<'a> {
    #[serde(flatten)]
    requirement: RequirementDto<'a>,
    status: RequirementStatus,
    controls: Vec<MappedControlDto<'a>>,
}

/// A framework with its requirements in catalog order, each with its mapped controls and status
/// now, and the roll-up (`GET /v1/frameworks/{id}/status` answers the same for a past moment).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkDetailDto<'a> {
    #[serde(flatten)]
    framework: FrameworkDto<'a>,
    /// The moment the statuses are for.
    as_of: Timestamp,
    /// The share of requirements passing, in percent, rounded down to one decimal (100 only when
    /// every requirement passes).
    percent_passing: f64,
    counts: StatusCountsDto,
    requirements: Vec<RequirementWithStatusDto<'a>>,
}

impl<'a> From<&'a FrameworkView> for FrameworkDetailDto<'a> {
    fn from(view: &'a FrameworkView) -> Self {
        Self {
            framework: FrameworkDto::from(&view.framework),
            as_of: view.status.as_of,
            percent_passing: view.status.percent_passing(),
            counts: view.status.counts.into(),
            requirements: view
                .status
                .requirements
                .iter()
                .map(|r| RequirementWithStatusDto {
                    requirement: RequirementDto::from(&r.requirement),
                    status: r.status,
                    controls: r.controls.iter().map(MappedControlDto::from).collect(),
                })
                .collect(),
        }
    }
}

/// One requirement's status at the moment asked.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RequirementStatusDto<'a> {
    id: &'a RequirementId,
    identifier: &'a str,
    status: RequirementStatus,
    controls: Vec<MappedControlDto<'a>>,
}

impl<'a> From<&'a RequirementState> for RequirementStatusDto<'a> {
    fn from(r: &'a RequirementState) -> Self {
        Self {
            id: &r.requirement.id,
            identifier: &r.requirement.identifier,
            status: r.status,
            controls: r.controls.iter().map(MappedControlDto::from).collect(),
        }
    }
}

/// A framework's status at a moment: per requirement, and rolled up.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkStatusDto<'a> {
    framework_id: &'a FrameworkId,
    /// The moment the statuses are for.
    as_of: Timestamp,
    /// The share of requirements passing, in percent, rounded down to one decimal.
    percent_passing: f64,
    counts: StatusCountsDto,
    /// Every requirement in catalog order.
    requirements: Vec<RequirementStatusDto<'a>>,
}

/// An OSCAL 1.1 assessment-results document (`{"assessment-results": {…}}`), as OSCAL's JSON
/// format writes it: one result whose findings are the framework's requirements and whose
/// observations are the evidence items deciding the mapped controls' statuses.
#[derive(ToSchema)]
#[allow(dead_code, reason = "documents the document the export writes")]
struct OscalAssessmentResultsDocument {
    /// OSCAL's `assessment-results` assembly.
    #[schema(value_type = Object)]
    #[serde(rename = "assessment-results")]
    assessment_results: (),
}

/// `{data, count, nextCursor}` of frameworks.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkList<'a> {
    data: Vec<FrameworkDto<'a>>,
    /// The total number of matching rows (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// A framework manifest the service ships.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FrameworkTemplateDto<'a> {
    /// What `POST /v1/framework-templates/{key}/adopt` takes (`soc2-2017`).
    key: &'a str,
    name: &'a str,
    version: &'a str,
    requirement_count: usize,
}

impl<'a> From<&'a Template> for FrameworkTemplateDto<'a> {
    fn from(t: &'a Template) -> Self {
        Self { key: t.key, name: &t.name, version: &t.version, requirement_count: t.draft.requirements.len() }
    }
}

/// `{data}`: every shipped template.
#[derive(Serialize, ToSchema)]
struct FrameworkTemplateList<'a> {
    data: Vec<FrameworkTemplateDto<'a>>,
}

/// An OSCAL 1.x catalog document, as OSCAL's JSON format writes it. The import reads
/// `catalog.uuid`, `catalog.metadata` (`title`, `version`, `oscal-version`, `last-modified`),
/// `groups`, `controls` (and controls nested in controls: enhancements), their `props` named
/// `label` and their `parts` named `statement`; every other member OSCAL allows is accepted and
/// not kept. A bad value is a 400 naming its JSON path (`catalog.groups[0].controls[3].id`).
#[derive(ToSchema)]
#[allow(dead_code, reason = "documents the body the import reads as text")]
struct OscalCatalogDocument {
    /// The catalog (OSCAL's `catalog` assembly).
    #[schema(value_type = Object)]
    catalog: (),
}

/// The list's sort: none to choose (newest first); an organization holds a handful of frameworks.
impl SortField for FrameworkSort {
    const FIELDS: &'static [(&'static str, Self)] = &[];
}

fn framework_id(id: &str) -> Result<FrameworkId, ApiError> {
    FrameworkId::parse(id).map_err(|_| ApiError::not_found("framework"))
}

/// The query of `GET /v1/frameworks`: `source`, `createdAfter`, `createdBefore`, `limit`, `cursor`.
fn framework_query(
    mut params: ListParams,
    settings: &compliance_app::Settings,
) -> Result<(FrameworkQuery, QueryShape), ApiError> {
    let shape = params.shape("frameworks");
    let filter = FrameworkFilter { source: params.enums("source")? };
    for name in ["q", "sort"] {
        if !params.take(name).is_empty() {
            return Err(ApiError::invalid_field(name, "is not a parameter of this list (it is newest first)"));
        }
    }
    Ok((params.finish(filter, false, &shape, settings)?, shape))
}

/// List frameworks
///
/// The organization's frameworks, newest first, without their requirements (`requirementCount`
/// says how many); paginated with `limit` and `cursor`.
#[utoipa::path(
    get, path = "/v1/frameworks", operation_id = "listFrameworks", tag = "frameworks",
    params(
        ("source" = Option<Vec<FrameworkSource>>, Query, description = "Any of these sources (repeat the parameter)."),
        ("createdAfter" = Option<Timestamp>, Query, description = "Created at or after this time (RFC 3339)."),
        ("createdBefore" = Option<Timestamp>, Query, description = "Created before this time (RFC 3339)."),
        PageQuery,
    ),
    responses((status = 200, description = "The matching frameworks, newest first.", body = FrameworkList)),
)]
async fn list_frameworks(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = framework_query(params, state.settings())?;
    let principal = caller.0;
    let page = state.run(|app| async move { app.frameworks.list_frameworks(&principal, &query).await }).await?;
    Ok(HttpResponse::Ok().json(FrameworkList {
        data: page.items.iter().map(FrameworkDto::from).collect(),
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| encode(next, &shape.fingerprint())),
    }))
}

/// Create a framework
///
/// A framework of the organization's own, in our JSON shape: `name`, `version` and its
/// `requirements` in order, each with an `identifier` unique within the framework, a `title`, an
/// optional `description` and an optional `parent` (the identifier of an earlier requirement).
#[utoipa::path(
    post, path = "/v1/frameworks", operation_id = "createFramework", tag = "frameworks",
    request_body = NewFramework,
    responses(
        (status = 201, description = "The framework with its requirements.", body = FrameworkWithRequirementsDto,
         headers(("ETag" = String, description = "The entity tag of the new framework."))),
        (status = 409, description = "The organization has a framework of this name and version.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_framework(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewFramework>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let created = state.run(|app| async move { app.frameworks.create_framework(&principal, input).await }).await?;
    Ok(made(&created))
}

/// Import an OSCAL catalog
///
/// Makes a framework of an OSCAL 1.x catalog (JSON, up to 15 MiB): each control and control
/// enhancement becomes a requirement, in document order, an enhancement with its control as
/// `parent`; groups give structure and are not requirements. `identifier` is the control's
/// `label` prop (else its `id`), `description` the plain text of its `statement` part.
#[utoipa::path(
    post, path = "/v1/frameworks/import", operation_id = "importFramework", tag = "frameworks",
    request_body = OscalCatalogDocument,
    responses(
        (status = 201, description = "The framework with its requirements.", body = FrameworkWithRequirementsDto,
         headers(("ETag" = String, description = "The entity tag of the new framework."))),
        (status = 409, description = "The organization has a framework of this name and version.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn import_framework(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(document): JsonBody<Box<RawValue>>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    // Read as text: the permission is checked before the catalog is read, and only what the
    // import keeps is ever built from it.
    let imported =
        state.run(|app| async move { app.frameworks.import_framework(&principal, document.get()).await }).await?;
    Ok(made(&imported))
}

/// The answer of a framework's create, import or adoption: 201 with the framework and its tag.
fn made(framework: &FrameworkWithRequirements) -> HttpResponse {
    conditional::tagged(
        HttpResponse::Created(),
        &framework.framework.etag(),
        &FrameworkWithRequirementsDto::from(framework),
    )
}

/// Get a framework
///
/// With its requirements in catalog order, flat (a requirement that refines another names it in
/// `parent`), each with the controls mapped to it and its status now, and the share passing.
#[utoipa::path(
    get, path = "/v1/frameworks/{id}", operation_id = "getFramework", tag = "frameworks",
    params(("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404.")),
    responses((status = 200, description = "The framework with its requirements and their status now; its `ETag` is the record's, for `If-Match` on `DELETE` (the statuses it shows change without it, so `If-None-Match` is not honoured).", body = FrameworkDetailDto,
               headers(("ETag" = String, description = "The entity tag of the framework's record.")))),
)]
async fn get_framework(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, framework_id(&id)?);
    let view = state.run(|app| async move { app.frameworks.get_framework(&principal, &id).await }).await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &view.framework.etag(), &FrameworkDetailDto::from(&view)))
}

/// A framework's status
///
/// Each requirement's status, now or `asOf` a past moment, from the controls mapped to it then
/// (the worst of theirs; `unmapped` without one), and the share of requirements passing. A past
/// moment is answered from the evidence recorded up to then.
#[utoipa::path(
    get, path = "/v1/frameworks/{id}/status", operation_id = "getFrameworkStatus", tag = "frameworks",
    params(("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404."), AsOfQuery),
    responses((status = 200, description = "The status per requirement and rolled up.", body = FrameworkStatusDto)),
)]
async fn get_framework_status(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    as_of: web::Query<AsOfQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, moment) = (caller.0, framework_id(&id)?, as_of.moment()?);
    let view = state.run(|app| async move { app.frameworks.framework_status(&principal, &id, moment).await }).await?;
    Ok(HttpResponse::Ok().json(FrameworkStatusDto {
        framework_id: &view.framework.id,
        as_of: view.status.as_of,
        percent_passing: view.status.percent_passing(),
        counts: view.status.counts.into(),
        requirements: view.status.requirements.iter().map(RequirementStatusDto::from).collect(),
    }))
}

/// Export a framework's status as OSCAL assessment results
///
/// The status now or `asOf` a past moment as an OSCAL 1.1 assessment-results document: a finding
/// per requirement (`satisfied` when passing), an observation per evidence item that decides a
/// mapped control's status, linked from the findings of the requirements that control serves.
#[utoipa::path(
    get, path = "/v1/frameworks/{id}/assessment-results", operation_id = "getFrameworkAssessmentResults", tag = "frameworks",
    params(("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404."), AsOfQuery),
    responses((status = 200, description = "The OSCAL assessment-results document.", body = OscalAssessmentResultsDocument)),
)]
async fn get_framework_assessment_results(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    as_of: web::Query<AsOfQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, moment) = (caller.0, framework_id(&id)?, as_of.moment()?);
    let document =
        state.run(|app| async move { app.frameworks.assessment_results(&principal, &id, moment).await }).await?;
    Ok(HttpResponse::Ok().json(document))
}

/// Delete a framework
///
/// With its requirements; refused (409) while a control is mapped to one of them.
#[utoipa::path(
    delete, path = "/v1/frameworks/{id}", operation_id = "deleteFramework", tag = "frameworks",
    params(("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404."), IfMatchHeader),
    responses(
        (status = 204, description = "Deleted."),
        (status = 409, description = "A control is mapped to one of its requirements: unmap it first.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn delete_framework(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, if_match) = (caller.0, framework_id(&id)?, if_match.0);
    state.run(|app| async move { app.frameworks.delete_framework(&principal, &id, &if_match).await }).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// List the shipped framework templates
///
/// The framework manifests this service ships (SOC 2 with the 2017 Trust Services Criteria's
/// identifiers, ISO/IEC 27001:2022 Annex A): identifiers with short titles of our own words, to
/// start from; a fuller catalog comes in through `POST /v1/frameworks/import`.
#[utoipa::path(
    get, path = "/v1/framework-templates", operation_id = "listFrameworkTemplates", tag = "frameworks",
    responses((status = 200, description = "Every shipped template.", body = FrameworkTemplateList)),
)]
async fn list_framework_templates(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let templates = state.run(|app| async move { app.frameworks.list_framework_templates(&principal) }).await?;
    Ok(HttpResponse::Ok()
        .json(FrameworkTemplateList { data: templates.iter().map(FrameworkTemplateDto::from).collect() }))
}

/// Adopt a framework template
///
/// Makes a framework of the organization from the shipped template `key` (`source: template`)
/// and, unless the body says otherwise, a working program from the control library, all in one
/// transaction: every library control answering one of its requirements (made once per
/// organization: a control an earlier adoption made is reused and mapped to this framework's
/// requirements too), the policies those controls rely on as drafts, their recurring evidence
/// tasks, and links from each control made to its policies, its tasks and the checks of the
/// organization's connections that it suggests (a connection made later links them then). Each
/// record has its audit entry and webhook event. The body may be left out (everything); a key
/// needs `frameworks:write`, plus `controls:write`, `policies:write` and `tasks:write` for what
/// it asks to be made.
#[utoipa::path(
    post, path = "/v1/framework-templates/{key}/adopt", operation_id = "adoptFrameworkTemplate", tag = "frameworks",
    params(("key" = String, Path, description = "The template's key (`soc2-2017`, `iso27001-2022`); an unknown key is a 404.")),
    request_body(content = Option<AdoptionOptions>, description = "What to make besides the framework; every member defaults to true."),
    responses(
        (status = 201, description = "The framework with its requirements, and what the adoption made and reused.", body = AdoptedFrameworkDto,
         headers(("ETag" = String, description = "The entity tag of the new framework."))),
        (status = 409, description = "The organization has already adopted it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn adopt_framework_template(
    state: web::Data<AppState>,
    caller: Authenticated,
    key: web::Path<String>,
    options: OptionalJsonBody<AdoptionOptions>,
) -> Result<HttpResponse, ApiError> {
    let (principal, key, options) = (caller.0, key.into_inner(), options.0);
    let adoption = state
        .run(|app| async move { app.frameworks.adopt_framework_template(&principal, &key, options).await })
        .await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &adoption.framework.framework.etag(),
        &AdoptedFrameworkDto::from(&adoption),
    ))
}

/// A framework adopted from a template, with what the adoption made of the library and what it
/// found the organization already had.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AdoptedFrameworkDto<'a> {
    #[serde(flatten)]
    framework: FrameworkWithRequirementsDto<'a>,
    library: AdoptionDto<'a>,
}

/// What an adoption made and reused.
#[derive(Serialize, ToSchema)]
struct AdoptionDto<'a> {
    created: MadeRecordsDto<'a>,
    reused: ReusedRecordsDto<'a>,
}

/// The records an adoption made, each with the library template it came from, and how many
/// mappings and evidence links it made.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MadeRecordsDto<'a> {
    controls: Vec<MadeRecordDto<'a>>,
    policies: Vec<MadeRecordDto<'a>>,
    tasks: Vec<MadeRecordDto<'a>>,
    /// Requirements of the framework mapped to a control.
    mappings: usize,
    /// Evidence sources linked to a control (its policies, its tasks, its checks).
    evidence_sources: usize,
}

/// A record made from a library template.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MadeRecordDto<'a> {
    id: &'a str,
    /// The template's id (`LIB-AC-01`).
    library_id: &'a str,
    /// Its name (a task's title).
    name: &'a str,
}

/// The organization's records an adoption used rather than making them again (an earlier
/// adoption made them).
#[derive(Serialize, ToSchema)]
struct ReusedRecordsDto<'a> {
    controls: Vec<&'a str>,
    policies: Vec<&'a str>,
    tasks: Vec<&'a str>,
}

impl<'a> From<&'a Adoption> for AdoptedFrameworkDto<'a> {
    fn from(a: &'a Adoption) -> Self {
        let library_id = |origin: &'a Option<LibraryOrigin>| origin.as_ref().map_or("", |o| o.id.as_str());
        let created = MadeRecordsDto {
            controls: a
                .controls
                .iter()
                .map(|m| made_record(m.record.id.as_str(), library_id(&m.record.library), &m.record.name))
                .collect(),
            policies: a
                .policies
                .iter()
                .map(|m| made_record(m.record.id.as_str(), library_id(&m.record.library), &m.record.name))
                .collect(),
            tasks: a
                .tasks
                .iter()
                .map(|m| made_record(m.record.id.as_str(), library_id(&m.record.library), &m.record.title))
                .collect(),
            mappings: a.mappings.len(),
            evidence_sources: a.sources.len(),
        };
        let reused = ReusedRecordsDto {
            controls: a.reused_controls.iter().map(|id| id.as_str()).collect(),
            policies: a.reused_policies.iter().map(|id| id.as_str()).collect(),
            tasks: a.reused_tasks.iter().map(|id| id.as_str()).collect(),
        };
        Self { framework: FrameworkWithRequirementsDto::from(&a.framework), library: AdoptionDto { created, reused } }
    }
}

fn made_record<'a>(id: &'a str, library_id: &'a str, name: &'a str) -> MadeRecordDto<'a> {
    MadeRecordDto { id, library_id, name }
}
