//! The control library the service ships (library/README.md).

use actix_web::{HttpResponse, web};
use utoipa::ToSchema;

use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(get_library_component_definition, __path_get_library_component_definition);
}

/// An OSCAL 1.1 component-definition document (`{"component-definition": {…}}`), as OSCAL's JSON
/// format writes it: a component per library control with the requirements it implements.
#[derive(ToSchema)]
#[allow(dead_code, reason = "documents the document the export writes")]
struct OscalComponentDefinitionDocument {
    /// OSCAL's `component-definition` assembly.
    #[schema(value_type = Object)]
    #[serde(rename = "component-definition")]
    component_definition: (),
}

/// Export the control library as an OSCAL component-definition
///
/// Every control of the library the service ships, as a component of type `process-procedure`
/// with, per framework template (`soc2-2017`, `iso27001-2022`), the requirements it implements.
/// Readable by the roles that read frameworks; it holds no organization's data.
#[utoipa::path(
    get, path = "/v1/library/component-definition", operation_id = "getLibraryComponentDefinition", tag = "frameworks",
    responses((status = 200, description = "The OSCAL component-definition document.", body = OscalComponentDefinitionDocument)),
)]
async fn get_library_component_definition(
    state: web::Data<AppState>,
    caller: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let document = state.run(|app| async move { app.library.component_definition(&principal) }).await?;
    Ok(HttpResponse::Ok().json(document))
}
