//! The JSON body extractor: media type, size limit, and errors that name the field.

use std::collections::HashMap;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;

use crate::{ApiError, JSON_BODY_LIMIT};

/// The largest body a route accepts, in bytes; routes without one accept [`JSON_BODY_LIMIT`].
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// Every route's body limit by its pattern (`/v1/comments`), for a layer that reads a body before
/// the route is matched (the `Idempotency-Key` middleware): it reads no more than the route would.
#[derive(Debug, Default)]
pub struct RouteBodyLimits(HashMap<String, usize>);

impl RouteBodyLimits {
    pub(crate) fn new(limits: HashMap<String, usize>) -> Self {
        Self(limits)
    }

    /// The limit of the route `pattern`: its own, else [`JSON_BODY_LIMIT`].
    pub fn of(&self, pattern: &str) -> usize {
        self.0.get(pattern).copied().unwrap_or(JSON_BODY_LIMIT)
    }
}

/// A JSON request body deserialised into `T`.
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = read_json(req, payload);
        Box::pin(async move { parse(&bytes.await?).map(JsonBody) })
    }
}

/// A JSON request body that may be left out: a request without one (no `Content-Length`, or
/// zero, and no chunked transfer) or whose body is JSON `null` is `T::default()`; any other body
/// is read as [`JsonBody`].
#[derive(Debug)]
pub struct OptionalJsonBody<T>(pub T);

impl<T: DeserializeOwned + Default + 'static> FromRequest for OptionalJsonBody<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let length = req.headers().get(header::CONTENT_LENGTH).and_then(|value| value.to_str().ok());
        let chunked = req.headers().contains_key(header::TRANSFER_ENCODING);
        if !chunked && length.is_none_or(|length| length.trim() == "0") {
            return Box::pin(async { Ok(OptionalJsonBody(T::default())) });
        }
        let bytes = read_json(req, payload);
        Box::pin(async move {
            let bytes = bytes.await?;
            match bytes.trim_ascii() {
                b"null" => Ok(OptionalJsonBody(T::default())),
                _ => parse(&bytes).map(OptionalJsonBody),
            }
        })
    }
}

/// A JSON request body as its bytes, unparsed: for a file read by its own parser (Prowler's
/// findings), with the same media type and size checks as [`JsonBody`].
#[derive(Debug)]
pub struct JsonBytes(pub web::Bytes);

impl FromRequest for JsonBytes {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = read_json(req, payload);
        Box::pin(async move { bytes.await.map(JsonBytes) })
    }
}

/// The body of a JSON request, refused unless it is JSON and within the route's [`BodyLimit`].
fn read_json(req: &HttpRequest, payload: &mut Payload) -> LocalBoxFuture<'static, Result<web::Bytes, ApiError>> {
    let is_json =
        req.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).is_some_and(is_json_media_type);
    let limit = req.app_data::<BodyLimit>().map_or(JSON_BODY_LIMIT, |limit| limit.0);
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    let mut payload = payload.take();
    Box::pin(async move {
        if !is_json {
            return Err(ApiError::unsupported_media_type());
        }
        if declared.is_some_and(|length| length > limit) {
            return Err(ApiError::payload_too_large(limit));
        }
        let mut bytes = web::BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|_| ApiError::malformed_json("the body could not be read".into()))?;
            if bytes.len() + chunk.len() > limit {
                return Err(ApiError::payload_too_large(limit));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes.freeze())
    })
}

/// Deserialises a body, naming the offending field on a type or value error.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // serde would also fill a struct from an array, field by position: only objects are bodies.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(error) => malformed(&error),
            Ok(_) => ApiError::invalid_field("body", "must be a JSON object"),
        });
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let error = match serde_path_to_error::deserialize(&mut deserializer) {
        Ok(value) => {
            deserializer.end().map_err(|error| malformed(&error))?;
            return Ok(value);
        }
        Err(error) => error,
    };
    let field = error.path().to_string();
    let inner = error.into_inner();
    if inner.is_syntax() || inner.is_eof() {
        return Err(malformed(&inner));
    }
    let message = without_position(&inner.to_string());
    let field = match field.as_str() {
        "." => quoted_field(&message).unwrap_or_else(|| "body".to_owned()),
        _ => field,
    };
    Err(ApiError::invalid_field(&field, message))
}

fn malformed(error: &serde_json::Error) -> ApiError {
    ApiError::malformed_json(format!("the body is not valid JSON: {error}"))
}

/// serde_json appends " at line L column C"; the field name says more to an API caller.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// The field named in "unknown field `x`" or "missing field `x`".
fn quoted_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_owned())
}

/// `application/json` or `application/*+json`, with any parameters.
fn is_json_media_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use compliance_domain::risk::RiskChanges;

    fn field_of(body: &str) -> String {
        let error = parse::<RiskChanges>(body.as_bytes()).unwrap_err();
        let response = actix_web::ResponseError::error_response(&error);
        assert_eq!(response.status(), 400);
        format!("{error:?}")
    }

    #[test]
    fn errors_name_the_field() {
        assert!(field_of(r#"{"likelihood":"often"}"#).contains("field: \"likelihood\""));
        assert!(field_of(r#"{"title":null}"#).contains("field: \"title\""));
        assert!(field_of(r#"{"title":5}"#).contains("field: \"title\""));
        assert!(field_of(r#"{"colour":"red"}"#).contains("field: \"colour\""));
        assert!(field_of(r#"[1]"#).contains("field: \"body\""));
        assert!(field_of(r#"["t", "d", "people"]"#).contains("must be a JSON object"), "no positional fields");
    }

    #[test]
    fn syntax_errors_are_malformed_json() {
        let error = parse::<RiskChanges>(b"{\"title\":").unwrap_err();
        assert!(format!("{error:?}").contains("Malformed JSON"));
        let trailing = parse::<RiskChanges>(b"{} {}").unwrap_err();
        assert!(format!("{trailing:?}").contains("Malformed JSON"));
    }
}
