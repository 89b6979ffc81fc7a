//! One declaration per endpoint: a handler's `#[utoipa::path]` names its method and path, and
//! [`Routes::add`] routes the handler there and puts the same attribute's operation in the
//! document, so the router and the document are made from one source (the decision record
//! `docs/decisions/2026-12-06-route-declaration.md` says why this and not `utoipa-actix-web`).
//!
//! Endpoints are registered in scopes ([`scope_of`]). actix tries a request against every
//! resource in turn, and each with a `{parameter}` costs a regular expression: flat, a `PATCH
//! /v1/risks/{id}` ran six of them, 7 % of the server's CPU in a profile. A scope's literal prefix
//! is compared as text, so only the matching scope's resources are tried. Within a scope,
//! resources are tried in the order their paths were first added: a literal path
//! (`/v1/risks/export`) is added before the parameter that would take it (`/v1/risks/{id}`).

use std::collections::HashMap;

use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, Handler, Resource, Responder, ResponseError, Route, web};
use utoipa::__dev::{SchemaReferences, Tags};
use utoipa::openapi::path::{HttpMethod, Paths};
use utoipa::openapi::{Components, OpenApi as Document, RefOr, Schema};

use crate::ApiError;
use crate::body::{BodyLimit, RouteBodyLimits};

/// Every endpoint, as the route modules add them: what actix registers, and what the document
/// describes.
///
/// Each actix worker thread builds its own routes at start, so an endpoint's operation and
/// schemas are only made when the document is ([`Routes::document_into`]): made eagerly, every
/// worker built the whole document's operations and schemas and dropped them, which raised a
/// server's idle memory by tens of MiB (the allocator keeps the pages).
#[derive(Default)]
pub struct Routes {
    /// Each path, in the order it was first added.
    endpoints: Vec<EndpointRoutes>,
    /// Per endpoint, what documents it: its attribute's operation and the schemas it names.
    documented: Vec<Documents>,
    /// Each handler's type beside its attribute's, for the test that each is routed by its own.
    #[cfg(test)]
    pairs: Vec<(&'static str, &'static str)>,
}

/// Adds one handler's operation to the paths and the schemas it names to the list.
type Documents = fn(&mut Paths, &mut Vec<(String, RefOr<Schema>)>);

/// One path and what it answers.
struct EndpointRoutes {
    path: String,
    routes: Vec<(Method, Route)>,
    /// An HTML page answers its errors in HTML.
    page: bool,
    /// The largest body it takes, when not the default.
    body_limit: Option<BodyLimit>,
}

impl Routes {
    /// Routes `handler` at the method and path its `#[utoipa::path]` declares, and documents it
    /// with that attribute's operation. The second argument is the struct the attribute generates,
    /// `__path_<handler>`.
    pub fn add<F, Args, D>(&mut self, handler: F, _declaration: D) -> Endpoint<'_>
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
        D: utoipa::Path + SchemaReferences + for<'t> Tags<'t>,
    {
        #[cfg(test)]
        self.pairs.push((std::any::type_name::<F>(), std::any::type_name::<D>()));
        let path = D::path();
        let methods = D::methods();
        self.documented.push(document::<D>);
        let index = match self.endpoints.iter().position(|endpoint| endpoint.path == path) {
            Some(index) => index,
            None => {
                self.endpoints.push(EndpointRoutes { path, routes: Vec::new(), page: false, body_limit: None });
                self.endpoints.len() - 1
            }
        };
        let endpoint = &mut self.endpoints[index];
        for method in methods.into_iter().map(actix_method) {
            endpoint.routes.push((method.clone(), web::method(method).to(handler.clone())));
        }
        Endpoint(endpoint)
    }

    /// Each method and path, in registration order.
    pub fn table(&self) -> Vec<(Method, String)> {
        let routes = self.endpoints.iter().flat_map(|endpoint| endpoint.routes.iter().map(move |(m, _)| (m, endpoint)));
        routes.map(|(method, endpoint)| (method.clone(), endpoint.path.clone())).collect()
    }

    /// Adds the endpoints' operations and the schemas they name to `document`; a schema the
    /// document has already is kept, as [`Document::merge`] keeps it.
    pub fn document_into(self, document: &mut Document) {
        let (mut paths, mut schemas) = (Paths::new(), Vec::new());
        for documents in self.documented {
            documents(&mut paths, &mut schemas);
        }
        document.paths.merge(paths);
        let components = document.components.get_or_insert_with(Components::new);
        for (name, schema) in schemas {
            components.schemas.entry(name).or_insert(schema);
        }
    }

    /// Registers the scopes, each path answering 405 with `Allow` to a method it does not take,
    /// and the paths' body limits ([`RouteBodyLimits`]).
    pub fn register(self, config: &mut web::ServiceConfig) {
        let mut body_limits = HashMap::new();
        // Each scope's prefix and resources, in registration order.
        let mut scopes: Vec<(String, Vec<Resource>)> = Vec::new();
        for endpoint in self.endpoints {
            let (scope, rest) = scope_of(&endpoint.path);
            let mut resource = web::resource(rest);
            if let Some(limit) = endpoint.body_limit {
                resource = resource.app_data(limit);
                body_limits.insert(endpoint.path.clone(), limit.0);
            }
            let allow = endpoint.routes.iter().map(|(method, _)| method.as_str()).collect::<Vec<_>>().join(", ");
            for (_, route) in endpoint.routes {
                resource = resource.route(route);
            }
            let resource = resource.default_service(method_not_allowed(allow, endpoint.page));
            match scopes.iter_mut().find(|(prefix, _)| prefix.as_str() == scope) {
                Some((_, resources)) => resources.push(resource),
                None => scopes.push((scope.to_owned(), vec![resource])),
            }
        }
        config.app_data(web::Data::new(RouteBodyLimits::new(body_limits)));
        for (prefix, resources) in scopes {
            config.service(resources.into_iter().fold(web::scope(&prefix), actix_web::Scope::service));
        }
    }

    #[cfg(test)]
    pub(crate) fn pairs(&self) -> &[(&'static str, &'static str)] {
        &self.pairs
    }
}

/// The operation of `D`'s attribute, as `#[derive(OpenApi)]` builds it (with its tags), and the
/// schemas it names.
fn document<D>(paths: &mut Paths, schemas: &mut Vec<(String, RefOr<Schema>)>)
where
    D: utoipa::Path + SchemaReferences + for<'t> Tags<'t>,
{
    let mut operation = D::operation();
    operation.tags.get_or_insert_with(Vec::new).extend(<D as Tags<'static>>::tags().into_iter().map(str::to_owned));
    paths.add_path_operation(D::path(), D::methods(), operation);
    D::schemas(schemas);
}

/// The path a handler was just routed at.
pub struct Endpoint<'r>(&'r mut EndpointRoutes);

impl Endpoint<'_> {
    /// The largest body the path takes (the JSON extractor's and the idempotency layer's, which
    /// reads limits by path), when not the default.
    pub fn body_limit(self, limit: BodyLimit) {
        self.0.body_limit = Some(limit);
    }

    /// The path is an HTML page: it answers a method it does not take in HTML.
    pub fn page(self) {
        self.0.page = true;
    }
}

/// The answer to a method the path does not take: 405, `Allow` naming those it does.
fn method_not_allowed(allow: String, page: bool) -> Route {
    let allow = HeaderValue::from_str(&allow).unwrap_or_else(|_| HeaderValue::from_static(""));
    web::to(move || {
        let allow = allow.clone();
        async move {
            let mut response = match page {
                true => crate::pages::method_not_allowed(),
                false => ApiError::method_not_allowed().error_response(),
            };
            response.headers_mut().insert(header::ALLOW, allow);
            response
        }
    })
}

fn actix_method(method: HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Options => Method::OPTIONS,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Trace => Method::TRACE,
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

    /// `routes.add(get_risk, __path_update_risk)` would route one handler with another's
    /// declaration: each handler must come with the `__path_` struct of its own attribute.
    #[test]
    fn every_handler_is_routed_by_its_own_attribute() {
        let routes = crate::declared_routes();
        assert!(routes.pairs().len() > 40);
        for (handler, declaration) in routes.pairs() {
            let (module, name) = handler.rsplit_once("::").unwrap();
            assert_eq!(*declaration, format!("{module}::__path_{name}"), "{handler}");
        }
    }

    /// A method added twice to one path would be routed to the first handler only.
    #[test]
    fn no_method_and_path_is_added_twice() {
        let table = crate::route_table();
        let unique: BTreeSet<_> = table.iter().map(|(method, path)| (method.as_str(), path)).collect();
        assert_eq!(unique.len(), table.len());
    }
}
