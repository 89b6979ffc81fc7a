//! The route table.

mod api_keys;
mod audit;
mod automation_secrets;
mod automations;
mod bulk;
mod chat;
mod comments;
mod connect_page;
mod context;
mod control_requirements;
mod controls;
mod devices;
mod docs;
mod explorer;
mod frameworks;
mod health;
mod integrations;
mod invitations;
mod organization;
mod people;
mod policies;
mod policy_diff;
mod policy_document;
mod policy_versions;
mod risks;
mod sessions;
mod sign_in;
mod tasks;
mod vendors;
mod webhooks;

pub use chat::chat_body_limit;
pub use comments::comment_body_limit;

use std::collections::HashMap;

use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, Handler, Resource, Responder, ResponseError, web};

use crate::ApiError;
use crate::body::{BodyLimit, RouteBodyLimits};

/// Body limits of the routes that take more than the default.
#[derive(Debug, Clone, Copy)]
pub struct RouteLimits {
    pub comments: BodyLimit,
    pub chat: BodyLimit,
}

pub fn configure(router: &mut Router<'_>, limits: RouteLimits) {
    health::configure(router);
    docs::configure(router);
    explorer::configure(router);
    connect_page::configure(router);
    context::configure(router);
    policies::configure(router);
    policy_versions::configure(router);
    policy_diff::configure(router);
    policy_document::configure(router);
    vendors::configure(router);
    risks::configure(router);
    audit::configure(router);
    tasks::configure(router);
    comments::configure(router, limits.comments);
    chat::configure(router, limits.chat);
    people::configure(router);
    organization::configure(router);
    integrations::configure(router);
    devices::configure(router);
    automations::configure(router);
    sign_in::configure(router);
    sessions::configure(router);
    invitations::configure(router);
    api_keys::configure(router);
    automation_secrets::configure(router);
    webhooks::configure(router);
    frameworks::configure(router);
    controls::configure(router, limits.comments);
    control_requirements::configure(router);
}

/// The parts of the OpenAPI document, one per module.
pub fn documents() -> Vec<utoipa::openapi::OpenApi> {
    use utoipa::OpenApi;
    vec![
        health::Api::openapi(),
        docs::Api::openapi(),
        explorer::Api::openapi(),
        context::Api::openapi(),
        policies::Api::openapi(),
        policy_versions::Api::openapi(),
        policy_diff::Api::openapi(),
        policy_document::Api::openapi(),
        vendors::Api::openapi(),
        risks::Api::openapi(),
        audit::Api::openapi(),
        tasks::Api::openapi(),
        comments::Api::openapi(),
        chat::Api::openapi(),
        people::Api::openapi(),
        organization::Api::openapi(),
        integrations::Api::openapi(),
        connect_page::Api::openapi(),
        devices::Api::openapi(),
        automations::Api::openapi(),
        sign_in::Api::openapi(),
        sessions::Api::openapi(),
        invitations::Api::openapi(),
        api_keys::Api::openapi(),
        automation_secrets::Api::openapi(),
        webhooks::Api::openapi(),
        frameworks::Api::openapi(),
        controls::Api::openapi(),
        control_requirements::Api::openapi(),
    ]
}

/// Registers endpoints with actix and writes down each method and path, so that a test can hold
/// the router against the OpenAPI document.
///
/// Endpoints are registered in scopes ([`scope_of`]). actix tries a request against every
/// resource in turn, and each with a `{parameter}` costs a regular expression: flat, a `PATCH
/// /v1/risks/{id}` ran six of them, 7 % of the server's CPU in a profile. A scope's literal prefix
/// is compared as text, so only the matching scope's resources are tried.
pub struct Router<'c> {
    config: &'c mut web::ServiceConfig,
    table: Vec<(Method, String)>,
    /// The paths that take another body limit than the default, and that limit.
    body_limits: HashMap<String, usize>,
    /// Each scope's prefix and resources, in registration order.
    scopes: Vec<(String, Vec<Resource>)>,
}

impl<'c> Router<'c> {
    pub fn new(config: &'c mut web::ServiceConfig) -> Self {
        Self { config, table: Vec::new(), body_limits: HashMap::new(), scopes: Vec::new() }
    }

    /// Registers the endpoint; any method it does not take is answered 405 with `Allow`.
    pub fn add(&mut self, endpoint: Endpoint) -> &mut Self {
        let allow = endpoint.methods.iter().map(Method::as_str).collect::<Vec<_>>().join(", ");
        let allow = HeaderValue::from_str(&allow).unwrap_or_else(|_| HeaderValue::from_static(""));
        let page = endpoint.page;
        let resource = endpoint.resource.default_service(web::to(move || {
            let allow = allow.clone();
            async move {
                let mut response = match page {
                    true => connect_page::method_not_allowed(),
                    false => ApiError::method_not_allowed().error_response(),
                };
                response.headers_mut().insert(header::ALLOW, allow);
                response
            }
        }));
        if let Some(limit) = endpoint.body_limit {
            self.body_limits.insert(endpoint.path.clone(), limit.0);
        }
        self.table.extend(endpoint.methods.into_iter().map(|method| (method, endpoint.path.clone())));
        match self.scopes.iter_mut().find(|(prefix, _)| *prefix == endpoint.scope) {
            Some((_, resources)) => resources.push(resource),
            None => self.scopes.push((endpoint.scope, vec![resource])),
        }
        self
    }

    /// Registers the scopes and the routes' body limits ([`RouteBodyLimits`]); returns every
    /// method and path, in registration order.
    pub fn finish(self) -> Vec<(Method, String)> {
        self.config.app_data(web::Data::new(RouteBodyLimits::new(self.body_limits)));
        for (prefix, resources) in self.scopes {
            self.config.service(resources.into_iter().fold(web::scope(&prefix), actix_web::Scope::service));
        }
        self.table
    }
}

/// The scope of a path, and the path within it: its first two segments when both are literal
/// (`/v1/risks` of `/v1/risks/{id}`), else its first (`/integrations` of
/// `/integrations/{slug}/connect`). No scope may be a prefix of another, or the first would answer
/// (404) for paths of the second: a test checks the route table.
fn scope_of(path: &str) -> (&str, &str) {
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let taken = match segments.as_slice() {
        [first, second, ..] if !first.starts_with('{') && !second.starts_with('{') => 2,
        _ => 1,
    };
    let end: usize = segments.iter().take(taken).map(|segment| segment.len() + 1).sum();
    path.split_at(end)
}

/// `Endpoint::get(handler)` and its siblings: one method each, all through [`Endpoint::route`].
macro_rules! method_routes {
    ($($name:ident => $method:ident),* $(,)?) => {$(
        pub fn $name<F, Args>(self, handler: F) -> Self
        where
            F: Handler<Args>,
            Args: FromRequest + 'static,
            F::Output: Responder + 'static,
        {
            self.route(Method::$method, handler)
        }
    )*};
}

/// One path and the methods it answers.
pub struct Endpoint {
    path: String,
    /// The scope's prefix; [`Self::resource`] has the rest of the path.
    scope: String,
    resource: Resource,
    methods: Vec<Method>,
    /// An HTML page answers its errors in HTML.
    page: bool,
    /// The largest body it takes, when not the default.
    body_limit: Option<BodyLimit>,
}

impl Endpoint {
    pub fn new(path: &str) -> Self {
        let (scope, rest) = scope_of(path);
        let (scope, resource) = (scope.to_owned(), web::resource(rest));
        Self { path: path.to_owned(), scope, resource, methods: Vec::new(), page: false, body_limit: None }
    }

    pub fn page(path: &str) -> Self {
        Self { page: true, ..Self::new(path) }
    }

    /// The largest body the endpoint takes (the JSON extractor's and the idempotency layer's).
    pub fn body_limit(mut self, limit: BodyLimit) -> Self {
        self.resource = self.resource.app_data(limit);
        self.body_limit = Some(limit);
        self
    }

    method_routes! {
        get => GET,
        post => POST,
        put => PUT,
        patch => PATCH,
        delete => DELETE,
    }

    fn route<F, Args>(mut self, method: Method, handler: F) -> Self
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        self.resource = self.resource.route(web::method(method.clone()).to(handler));
        self.methods.push(method);
        self
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::scope_of;

    #[test]
    fn a_path_splits_into_its_scope_and_the_rest() {
        assert_eq!(scope_of("/v1/risks/{id}"), ("/v1/risks", "/{id}"));
        assert_eq!(scope_of("/v1/risks"), ("/v1/risks", ""));
        assert_eq!(scope_of("/v1/browser/automations/task/{taskId}"), ("/v1/browser", "/automations/task/{taskId}"));
        assert_eq!(scope_of("/health"), ("/health", ""));
        assert_eq!(scope_of("/integrations/{slug}/connect"), ("/integrations", "/{slug}/connect"));
    }

    /// A scope that is a prefix of another would answer 404 for the other's paths.
    #[test]
    fn no_scope_is_a_prefix_of_another() {
        let routes = crate::route_table();
        let scopes: BTreeSet<&str> = routes.iter().map(|(_, path)| scope_of(path).0).collect();
        assert!(scopes.len() > 10, "{scopes:?}");
        for outer in &scopes {
            for inner in &scopes {
                assert!(!inner.starts_with(&format!("{outer}/")), "{outer} would answer for {inner}");
            }
        }
    }
}
