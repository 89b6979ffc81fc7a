//! The route table.

mod health;
mod organization;
mod people;
mod records;

use actix_web::web;

use crate::ApiError;

pub fn configure(config: &mut web::ServiceConfig) {
    health::configure(config);
    config.service(
        web::scope("/v1").configure(records::configure).configure(people::configure).configure(organization::configure),
    );
}

/// A resource whose unknown methods are answered 405 with a problem body.
pub(crate) fn resource(path: &str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(|| async { ApiError::method_not_allowed() }))
}
