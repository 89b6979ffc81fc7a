//! The route table.

mod automations;
mod chat;
mod comments;
mod connect_page;
mod devices;
mod docs;
mod health;
mod integrations;
mod organization;
mod people;
mod records;

pub use chat::chat_body_limit;
pub use comments::comment_body_limit;

use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, Handler, Resource, Responder, ResponseError, web};

use crate::ApiError;
use crate::body::BodyLimit;

/// Body limits of the routes that take more than the default.
#[derive(Debug, Clone, Copy)]
pub struct RouteLimits {
    pub comments: BodyLimit,
    pub chat: BodyLimit,
}

pub fn configure(router: &mut Router<'_>, limits: RouteLimits) {
    health::configure(router);
    docs::configure(router);
    connect_page::configure(router);
    records::configure(router);
    comments::configure(router, limits.comments);
    chat::configure(router, limits.chat);
    people::configure(router);
    organization::configure(router);
    integrations::configure(router);
    devices::configure(router);
    automations::configure(router);
}

/// The parts of the OpenAPI document, one per module.
pub fn documents() -> Vec<utoipa::openapi::OpenApi> {
    use utoipa::OpenApi;
    vec![
        health::Api::openapi(),
        docs::Api::openapi(),
        records::document(),
        comments::Api::openapi(),
        chat::Api::openapi(),
        people::Api::openapi(),
        organization::Api::openapi(),
        integrations::Api::openapi(),
        connect_page::Api::openapi(),
        devices::Api::openapi(),
        automations::Api::openapi(),
    ]
}

/// Registers endpoints with actix and writes down each method and path, so that a test can hold
/// the router against the OpenAPI document.
pub struct Router<'c> {
    config: &'c mut web::ServiceConfig,
    table: Vec<(Method, String)>,
}

impl<'c> Router<'c> {
    pub fn new(config: &'c mut web::ServiceConfig) -> Self {
        Self { config, table: Vec::new() }
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
        self.table.extend(endpoint.methods.into_iter().map(|method| (method, endpoint.path.clone())));
        self.config.service(resource);
        self
    }

    /// Every method and path registered, in registration order.
    pub fn into_table(self) -> Vec<(Method, String)> {
        self.table
    }
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
    resource: Resource,
    methods: Vec<Method>,
    /// An HTML page answers its errors in HTML.
    page: bool,
}

impl Endpoint {
    pub fn new(path: &str) -> Self {
        Self { path: path.to_owned(), resource: web::resource(path), methods: Vec::new(), page: false }
    }

    pub fn page(path: &str) -> Self {
        Self { page: true, ..Self::new(path) }
    }

    pub fn app_data<U: 'static>(mut self, data: U) -> Self {
        self.resource = self.resource.app_data(data);
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
