//! The OpenAPI 3.1 document. Each handler describes its operation with `#[utoipa::path]`, its
//! bodies being the structs it answers; the routes that registration collects (`crate::router`)
//! make the paths, and this module adds the security schemes and gives every operation the error
//! answers the service's layers can produce.

use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::openapi::{Content, Header, OpenApi as Document, Ref, RefOr, Response, Schema};
use utoipa::{Modify, OpenApi, PartialSchema, ToSchema};

pub(crate) use crate::error::{PreconditionFailed, Problem, SetupRequired};

mod idempotent;

/// Security scheme names, as operations refer to them.
pub const API_KEY: &str = "apiKey";
pub const SESSION: &str = "session";
pub const ORGANIZATION: &str = "organization";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Compliance API",
        description = "A multi-tenant compliance and risk management API: people, policies, risks, vendors, \
                       tasks, comments, context, integrations, devices and browser automations. Errors are \
                       RFC 9457 problem details (`application/problem+json`).",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    // Schemas only query parameters name (utoipa collects those of bodies and responses itself).
    components(schemas(
        Problem,
        PreconditionFailed,
        crate::list_query::AssigneeFilter,
        crate::list_query::TextFilter,
        crate::list_query::RoleFilter,
        crate::list_query::IncludeInactive
    )),
    modifiers(&SecuritySchemes),
    security(("apiKey" = []), ("session" = [], "organization" = [])),
)]
struct Root;

/// The whole document, as `GET /openapi.json` serves it.
pub fn document() -> Document {
    let mut document = Root::openapi();
    crate::declared_routes().document_into(&mut document);
    StandardErrors.modify(&mut document);
    Conditional.modify(&mut document);
    idempotent::modify(&mut document);
    document
}

/// The document as pretty JSON with a final newline, byte for byte what `docs/openapi.json` holds.
pub fn document_json() -> String {
    let mut json = serde_json::to_string_pretty(&document()).unwrap_or_default();
    json.push('\n');
    json
}

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        let header = |name: &str, description: &str| {
            let mut value = ApiKeyValue::new(name);
            value.description = Some(description.to_owned());
            SecurityScheme::ApiKey(ApiKey::Header(value))
        };
        components.add_security_scheme(
            API_KEY,
            header("X-API-Key", "An organization's API key (`cpk_…`); the key names its organization."),
        );
        let mut cookie = ApiKeyValue::new(crate::auth::SESSION_COOKIE);
        cookie.description = Some("A user's session token; send `X-Organization-Id` with it.".to_owned());
        components.add_security_scheme(SESSION, SecurityScheme::ApiKey(ApiKey::Cookie(cookie)));
        components.add_security_scheme(
            ORGANIZATION,
            header("X-Organization-Id", "The organization (`org_…`) a session acts in; the user must be a member."),
        );
    }
}

/// The problem answers every operation can get from the layers below its handler, added where the
/// operation's own annotation does not state them.
struct StandardErrors;

/// (status, component name, description, `Retry-After` header)
const STANDARD: &[(&str, &str, &str, bool)] = &[
    ("400", "BadRequest", "The request is invalid; `errors` names each invalid field.", false),
    ("401", "Unauthenticated", "No valid API key or session.", false),
    ("403", "Forbidden", "The caller may not do this in this organization.", false),
    ("404", "NotFound", "No such resource in the caller's organization.", false),
    ("413", "PayloadTooLarge", "The body is larger than this operation accepts.", false),
    ("414", "UriTooLong", "The path and query are longer than 8,192 bytes.", false),
    ("415", "UnsupportedMediaType", "The body is not `application/json`.", false),
    ("429", "TooManyRequests", "The caller's request rate is over its limit; retry after `Retry-After` seconds.", true),
    (
        "503",
        "Unavailable",
        "A store (the database, or Redis for chat) is unavailable; retry after `Retry-After` seconds.",
        true,
    ),
];

impl Modify for StandardErrors {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        for (_, name, description, retry_after) in STANDARD {
            components.responses.insert((*name).to_owned(), RefOr::T(problem_response(description, *retry_after)));
        }
        for (path, item) in document.paths.paths.iter_mut() {
            let rate_limited = !crate::middleware::EXEMPT.contains(&path.as_str());
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for operation in operations.into_iter().flatten() {
                require_path_parameters(operation);
                let mut statuses = standard_statuses(operation);
                if rate_limited {
                    statuses.push("429");
                }
                for status in statuses {
                    let Some((_, name, ..)) = STANDARD.iter().find(|(code, ..)| *code == status) else { continue };
                    let responses = &mut operation.responses.responses;
                    responses.entry(status.to_owned()).or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
                }
            }
        }
    }
}

/// The answers of conditional requests (`crate::conditional`), added to every operation that
/// declares `If-None-Match` (a read: 304, and the `ETag` of its 200) or `If-Match` (a write: 412,
/// and the `ETag` of its 200 unless it deletes).
struct Conditional;

impl Modify for Conditional {
    fn modify(&self, document: &mut Document) {
        let components = document.components.get_or_insert_with(Default::default);
        let mut failed = Response::new(
            "The `If-Match` no longer holds: the resource changed since it was read, and nothing changed now; \
             `currentEtag` (also the `ETag` header) is its tag now.",
        );
        let schema: RefOr<Schema> = RefOr::Ref(Ref::from_schema_name(PreconditionFailed::name()));
        failed.content.insert("application/problem+json".to_owned(), RefOr::T(Content::new(Some(schema))));
        failed.headers.insert("ETag".to_owned(), RefOr::T(etag_header()));
        components.responses.insert("PreconditionFailed".to_owned(), RefOr::T(failed));
        for item in document.paths.paths.values_mut() {
            // A `POST` that changes a record's state (a task's submit, approve, reject) takes
            // `If-Match` as a `PATCH` does.
            let operations = [
                (&mut item.get, false),
                (&mut item.put, false),
                (&mut item.post, false),
                (&mut item.patch, false),
                (&mut item.delete, true),
            ];
            for (operation, deletes) in operations {
                let Some(operation) = operation else { continue };
                let headers: Vec<String> = operation
                    .parameters
                    .iter()
                    .flatten()
                    .filter_map(|p| match p {
                        RefOr::T(p) if p.parameter_in == ParameterIn::Header => Some(p.name.clone()),
                        _ => None,
                    })
                    .collect();
                let reads = headers.iter().any(|name| name == "If-None-Match");
                let writes = headers.iter().any(|name| name == "If-Match");
                let responses = &mut operation.responses.responses;
                if reads {
                    let mut not_modified =
                        Response::new("The client's copy is current (`If-None-Match` holds its `ETag`); no body.");
                    not_modified.headers.insert("ETag".to_owned(), RefOr::T(etag_header()));
                    responses.entry("304".to_owned()).or_insert(RefOr::T(not_modified));
                }
                if writes {
                    responses
                        .entry("412".to_owned())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name("PreconditionFailed")));
                }
                if (reads || writes) && !deletes {
                    for (status, response) in responses.iter_mut() {
                        if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
                            response.headers.insert("ETag".to_owned(), RefOr::T(etag_header()));
                        }
                    }
                }
            }
        }
    }
}

/// The `ETag` response header.
fn etag_header() -> Header {
    let mut header = Header::new(String::schema());
    header.description = Some("The resource's strong entity tag, changed by every change of it.".to_owned());
    header
}

/// The statuses an operation can get without its handler saying so (besides the rate limiter's 429).
fn standard_statuses(operation: &Operation) -> Vec<&'static str> {
    let mut statuses = Vec::new();
    let public = operation.security.as_ref().is_some_and(|requirements| requirements.iter().all(is_empty));
    if !public {
        statuses.extend(["401", "403", "503"]);
    }
    let parameters = operation.parameters.iter().flatten().filter_map(|p| match p {
        RefOr::T(parameter) => Some(parameter),
        RefOr::Ref(_) => None,
    });
    for parameter in parameters {
        match parameter.parameter_in {
            ParameterIn::Path => statuses.push("404"),
            ParameterIn::Query => statuses.extend(["400", "414"]),
            _ => {}
        }
    }
    if let Some(body) = &operation.request_body {
        statuses.extend(["400", "413"]);
        // Only JSON bodies are refused by media type; the HTML forms read any body as a form.
        if matches!(body, RefOr::T(body) if body.content.contains_key("application/json")) {
            statuses.push("415");
        }
    }
    statuses.sort_unstable();
    statuses.dedup();
    statuses
}

/// OpenAPI requires `required: true` on every path parameter; utoipa leaves it out for parameters
/// described with `schema_with`.
fn require_path_parameters(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if let RefOr::T(parameter) = parameter
            && parameter.parameter_in == ParameterIn::Path
        {
            parameter.required = utoipa::openapi::Required::True;
        }
    }
}

fn is_empty(requirement: &utoipa::openapi::security::SecurityRequirement) -> bool {
    requirement == &Default::default()
}

fn problem_response(description: &str, retry_after: bool) -> Response {
    let mut response = Response::new(description);
    let schema: RefOr<Schema> = RefOr::Ref(Ref::from_schema_name(Problem::name()));
    response.content.insert("application/problem+json".to_owned(), RefOr::T(Content::new(Some(schema))));
    if retry_after {
        let mut header = Header::new(u32::schema());
        header.description = Some("Seconds to wait before retrying.".to_owned());
        response.headers.insert("Retry-After".to_owned(), RefOr::T(header));
    }
    response
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn operation_ids_are_unique() {
        let document = serde_json::to_value(document()).unwrap();
        let mut ids = BTreeSet::new();
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                let id = operation["operationId"].as_str().unwrap().to_owned();
                assert!(ids.insert(id.clone()), "operationId {id} is used twice");
            }
        }
    }
}
