//! Conditional requests (RFC 9110 §13): every single resource is answered with its `ETag`
//! ([`ETag::of`] its id and `updatedAt`); a read whose `If-None-Match` holds that tag is answered
//! 304 Not Modified; a write's `If-Match` is read here and handed down to the store, which checks
//! it inside the write's transaction (a stale one answers the 412 of `ApiError`).

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, HttpResponseBuilder};
use compliance_domain::etag::{ETag, IfMatch, IfNoneMatch};
use serde::Serialize;
use utoipa::openapi::Required;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};

use crate::ApiError;

/// The request's `If-Match`, for a PATCH, PUT or DELETE of one resource.
pub(crate) struct IfMatchHeader(pub IfMatch);

impl FromRequest for IfMatchHeader {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(Self(IfMatch::parse(values(req, header::IF_MATCH)))))
    }
}

/// The request's `If-None-Match`, for a GET of one resource.
pub(crate) struct IfNoneMatchHeader(pub IfNoneMatch);

impl FromRequest for IfNoneMatchHeader {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(Self(IfNoneMatch::parse(values(req, header::IF_NONE_MATCH)))))
    }
}

/// Every line of the header; a value that is not text holds no tag.
fn values(req: &HttpRequest, name: header::HeaderName) -> impl Iterator<Item = &str> {
    req.headers().get_all(name).map(|value| value.to_str().unwrap_or(""))
}

/// A read's answer: 304 Not Modified with the tag and no body when the client already holds
/// `tag`, else 200 with `body` and its tag.
pub(crate) fn read<T: Serialize>(if_none_match: &IfNoneMatchHeader, tag: &ETag, body: &T) -> HttpResponse {
    if if_none_match.0.matches(tag) {
        return HttpResponse::NotModified().insert_header(etag(tag)).finish();
    }
    HttpResponse::Ok().insert_header(etag(tag)).json(body)
}

/// A create's or change's answer: `status` with `body` and the tag of the state it shows.
pub(crate) fn tagged<T: Serialize>(mut status: HttpResponseBuilder, tag: &ETag, body: &T) -> HttpResponse {
    status.insert_header(etag(tag)).json(body)
}

fn etag(tag: &ETag) -> (header::HeaderName, HeaderValue) {
    // The tag is 16 hex digits in quotes: always a valid header value.
    let value = HeaderValue::from_str(&tag.to_string()).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
    (header::ETAG, value)
}

/// `If-Match` as the OpenAPI document shows it.
impl utoipa::IntoParams for IfMatchHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![header_parameter(
            "If-Match",
            "Change only while the resource's `ETag` is one of these (strong comparison; `*`: any). \
             Otherwise 412 `precondition-failed` naming the current `ETag`, and nothing changes.",
        )]
    }
}

/// `If-None-Match` as the OpenAPI document shows it.
impl utoipa::IntoParams for IfNoneMatchHeader {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        vec![header_parameter(
            "If-None-Match",
            "When the resource's `ETag` is one of these (weak comparison; `*`: any), 304 Not Modified \
             without a body.",
        )]
    }
}

fn header_parameter(name: &str, description: &str) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build()
}
