//! actix-web delivery: routes, the authentication extractor, wire types and problem+json errors.
//!
//! Handlers are thin: extract, call one use case, shape the response.

mod auth;
mod body;
mod error;
mod pages;
mod routes;
mod state;
pub mod wire;

use actix_web::web;
pub use auth::Caller;
pub use error::ApiError;
pub use state::AppState;

/// Largest JSON body accepted, in bytes.
pub const JSON_BODY_LIMIT: usize = 1024 * 1024;

/// Registers every route and the error handlers of the extractors.
pub fn configure(config: &mut web::ServiceConfig, settings: &compliance_app::Settings) {
    config
        .app_data(web::PathConfig::default().error_handler(|_, _| ApiError::not_found("resource").into()))
        .app_data(web::QueryConfig::default().error_handler(|error, _| ApiError::bad_query(&error.to_string()).into()));
    let limits =
        routes::RouteLimits { comments: routes::comment_body_limit(settings), chat: routes::chat_body_limit(settings) };
    routes::configure(config, limits);
}

/// The answer to a path no route matches.
pub async fn not_found() -> ApiError {
    ApiError::not_found("route")
}
