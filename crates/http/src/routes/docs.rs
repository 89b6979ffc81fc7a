//! The OpenAPI document and its HTML rendering, without credentials.

use std::sync::OnceLock;

use actix_web::HttpResponse;
use actix_web::http::header;

use crate::pages::render_docs_page;
use crate::router::Routes;

pub fn configure(routes: &mut Routes) {
    routes.add(openapi_json, __path_openapi_json);
    routes.add(docs, __path_docs).page();
}

/// The document and the page never change while the process runs: built once.
fn rendered() -> &'static (String, String) {
    static RENDERED: OnceLock<(String, String)> = OnceLock::new();
    RENDERED.get_or_init(|| {
        let json = crate::openapi::document_json();
        let page = serde_json::from_str(&json).map(|document| render_docs_page(&document)).unwrap_or_default();
        (json, page)
    })
}

/// This document.
#[utoipa::path(
    get, path = "/openapi.json", operation_id = "openapi", tag = "documentation", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", content_type = "application/json", body = Object)),
)]
async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(rendered().0.as_str())
}

/// This document as an HTML page.
#[utoipa::path(
    get, path = "/docs", operation_id = "docs", tag = "documentation", security(()),
    responses((status = 200, description = "The API reference, rendered from the document.", content_type = "text/html", body = String)),
)]
async fn docs() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(rendered().1.as_str())
}
