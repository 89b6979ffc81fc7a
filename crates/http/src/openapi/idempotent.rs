//! The `Idempotency-Key` request header and the answers it can bring (400, 409, 422) (`crate::middleware::
//! idempotency`; docs/api.md, "Idempotency keys"), added to every write under `/v1` that honours
//! it, so that a client reads them in the document rather than only in the prose.

use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::{Content, Header, OpenApi as Document, Ref, RefOr, Required, Response, Schema};
use utoipa::{PartialSchema, ToSchema};

use crate::middleware::idempotency::{IDEMPOTENCY_KEY_HEADER, OUTSIDE_THE_ORGANIZATION};
use crate::openapi::Problem;

/// Adds the header and its 400, 409 and 422 to each write the middleware applies keys to.
pub(super) fn modify(document: &mut Document) {
    let components = document.components.get_or_insert_with(Default::default);
    components.responses.insert("IdempotencyConflict".to_owned(), RefOr::T(conflict()));
    components.responses.insert("IdempotencyKeyReused".to_owned(), RefOr::T(reused()));
    for (path, item) in document.paths.paths.iter_mut() {
        if !path.starts_with("/v1/") {
            continue;
        }
        let writes = [
            (&mut item.post, actix_web::http::Method::POST),
            (&mut item.put, actix_web::http::Method::PUT),
            (&mut item.patch, actix_web::http::Method::PATCH),
            (&mut item.delete, actix_web::http::Method::DELETE),
        ];
        for (operation, method) in writes {
            let Some(operation) = operation else { continue };
            if OUTSIDE_THE_ORGANIZATION.iter().any(|(m, p)| *m == method && p == path) {
                continue;
            }
            add(operation);
        }
    }
}

fn add(operation: &mut Operation) {
    operation.parameters.get_or_insert_with(Vec::new).push(header());
    let responses = &mut operation.responses.responses;
    // A malformed key, or the header sent twice, is refused before the route reads anything.
    responses.entry("400".to_owned()).or_insert_with(|| RefOr::Ref(Ref::from_response_name("BadRequest")));
    responses.entry("409".to_owned()).or_insert_with(|| RefOr::Ref(Ref::from_response_name("IdempotencyConflict")));
    responses.entry("422".to_owned()).or_insert_with(|| RefOr::Ref(Ref::from_response_name("IdempotencyKeyReused")));
}

fn header() -> RefOr<Parameter> {
    let schema = utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .min_length(Some(1))
        .max_length(Some(compliance_domain::idempotency::KEY_MAX))
        .pattern(Some("^[!-~]+$"))
        .build();
    RefOr::T(
        ParameterBuilder::new()
            .name(IDEMPOTENCY_KEY_HEADER)
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "Makes a retry safe: the same key with the same request, from the same caller, within 24 hours \
                 answers the first request's answer again (`Idempotent-Replayed: true`) instead of changing \
                 anything twice. Printable ASCII, 1 to 255 characters, such as a UUID.",
            ))
            .schema(Some(schema))
            .build(),
    )
}

fn conflict() -> Response {
    let mut response = problem(
        "With `Idempotency-Key`: a request with this key is still being answered (retry after `Retry-After` \
         seconds), or its change was made but its answer is not kept (the problem names the record).",
    );
    let mut retry_after = Header::new(u32::schema());
    retry_after.description = Some("Seconds to wait before retrying, while the first request runs.".to_owned());
    response.headers.insert("Retry-After".to_owned(), RefOr::T(retry_after));
    response
}

fn reused() -> Response {
    problem("With `Idempotency-Key`: the key was used for another request (another method, path or body).")
}

fn problem(description: &str) -> Response {
    let mut response = Response::new(description);
    let schema: RefOr<Schema> = RefOr::Ref(Ref::from_schema_name(Problem::name()));
    response.content.insert("application/problem+json".to_owned(), RefOr::T(Content::new(Some(schema))));
    response
}
