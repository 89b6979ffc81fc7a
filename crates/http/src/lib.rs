//! actix-web delivery: routes, the authentication extractor, wire types and problem+json errors.
//!
//! Handlers are thin: extract, call one use case, shape the response.

mod as_of;
mod attachments;
mod auth;
mod body;
mod bulk;
mod conditional;
mod envelope;
mod error;
mod export;
mod list_cache;
pub mod list_query;
pub mod middleware;
pub mod openapi;
mod pages;
mod paging;
mod path_ids;
mod router;
mod routes;
mod state;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::from_fn;
use actix_web::web;
pub use auth::{Authenticated, SignedInCaller};
pub use compliance_wire as wire;
pub use compliance_wire::WireRenderer;
pub use error::ApiError;
pub use list_cache::ListCache;
pub use state::AppState;

/// Largest JSON body accepted, in bytes.
pub const JSON_BODY_LIMIT: usize = 1024 * 1024;

/// The application a server thread serves (and the in-process tests drive): every route, the
/// answer to a path none matches, and the middleware around them all.
pub fn application(
    state: web::Data<AppState>,
    operations: web::Data<middleware::Operations>,
) -> actix_web::App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let settings = state.settings().clone();
    actix_web::App::new()
        .app_data(state)
        .configure(|config| configure(config, &settings))
        .default_service(web::to(not_found))
        .app_data(operations)
        // Inside `guard`: limits apply first, and the request id is known.
        .wrap(from_fn(middleware::idempotency))
        .wrap(from_fn(middleware::guard))
}

/// Registers every route and the error handlers of the extractors.
fn configure(config: &mut web::ServiceConfig, settings: &compliance_app::Settings) {
    let limits =
        routes::RouteLimits { comments: routes::comment_body_limit(settings), chat: routes::chat_body_limit(settings) };
    config
        .app_data(web::PathConfig::default().error_handler(|_, _| ApiError::not_found("resource").into()))
        .app_data(web::QueryConfig::default().error_handler(|error, _| ApiError::bad_query(&error.to_string()).into()));
    routes::all(limits).register(config);
}

/// Each method and path the router answers, in registration order.
pub fn route_table() -> Vec<(Method, String)> {
    declared_routes().table()
}

/// Every endpoint, for what does not depend on the body limits (the route table, the document).
fn declared_routes() -> router::Routes {
    routes::all(routes::RouteLimits { comments: body::BodyLimit(0), chat: body::BodyLimit(0) })
}

/// The answer to a path no route matches.
async fn not_found() -> ApiError {
    ApiError::not_found("route")
}
