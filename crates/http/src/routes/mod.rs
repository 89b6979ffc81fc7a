//! The route table.

mod automations;
mod chat;
mod comments;
mod connect_page;
mod devices;
mod health;
mod integrations;
mod organization;
mod people;
mod records;

pub use chat::chat_body_limit;
pub use comments::comment_body_limit;

use actix_web::web;

use crate::ApiError;
use crate::body::BodyLimit;

/// Body limits of the routes that take more than the default.
#[derive(Debug, Clone, Copy)]
pub struct RouteLimits {
    pub comments: BodyLimit,
    pub chat: BodyLimit,
}

pub fn configure(config: &mut web::ServiceConfig, limits: RouteLimits) {
    health::configure(config);
    connect_page::configure(config);
    config.service(
        web::scope("/v1")
            .configure(records::configure)
            .configure(|config| comments::configure(config, limits.comments))
            .configure(|config| chat::configure(config, limits.chat))
            .configure(people::configure)
            .configure(organization::configure)
            .configure(integrations::configure)
            .configure(devices::configure)
            .configure(automations::configure),
    );
}

/// A resource whose unknown methods are answered 405 with a problem body.
pub(crate) fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(|| async { ApiError::method_not_allowed() }))
}
