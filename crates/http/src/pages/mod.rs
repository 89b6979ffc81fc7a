//! Server-rendered HTML pages: the connect page and the API reference.

mod connect;
mod docs;
mod markdown;

pub(crate) use connect::{ConnectBody, ConnectPage, Outcome, render_connect_page, render_message_page};
pub(crate) use docs::render_docs_page;

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};

/// An HTML answer with the headers every page gets.
pub(crate) fn html_page(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body)
}

/// A page's answer to a method it does not take (the router adds `Allow`).
pub(crate) fn method_not_allowed() -> HttpResponse {
    let detail = "This page takes GET, and POST from its forms.";
    html_page(StatusCode::METHOD_NOT_ALLOWED, render_message_page("Method not allowed", detail))
}
