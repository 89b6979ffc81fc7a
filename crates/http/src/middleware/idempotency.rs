//! `Idempotency-Key` on every `POST`, `PUT`, `PATCH` and `DELETE` under `/v1` (docs/api.md,
//! "Idempotency keys"): one layer in front of the write routes, none in them.
//!
//! For a request that sends the header, [`idempotency`] checks the key (400 when malformed),
//! authenticates the caller (as the `Authenticated` extractor would, which then reuses it), reads the body
//! to fingerprint the request, and asks `IdempotencyService::reserve` what to do:
//! - run it: the claim rides on the caller's `Principal` to the audited write, which marks the key
//!   applied in the change's own transaction; the answer is then stored for repeats;
//! - replay a stored answer byte for byte, with `Idempotent-Replayed: true`;
//! - refuse: 422 (the key was used for another request), 409 with `Retry-After` (still running),
//!   409 naming the record changed (applied, but the answer is not kept).
//!
//! A request whose caller does not authenticate, or has no organization, passes untouched: its
//! route answers it as usual.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes, BytesMut};
use actix_web::{HttpMessage, HttpResponse, ResponseError};
use compliance_app::{Decision, Principal};
use compliance_domain::idempotency::{IdempotencyClaim, IdempotencyKey};
use compliance_ports::StoredResponse;
use futures_util::StreamExt;
use tracing::Instrument;

use super::{Operations, RequestId};
use crate::auth::{Authenticated, CredentialAccepted};
use crate::body::RouteBodyLimits;
use crate::{ApiError, AppState};

/// The request header (the IETF httpapi draft's).
pub const IDEMPOTENCY_KEY_HEADER: &str = "Idempotency-Key";
/// The header a replayed answer carries.
pub const REPLAYED_HEADER: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Routes whose answer shows a secret once (an API key, a webhook's signing secret, an
/// invitation's link, an OAuth authorization URL's live `state`): their bodies are never stored,
/// and a repeat of their key gets a 409 that names the record instead. An answer that sets a
/// cookie is treated alike.
pub(crate) const REVEALS_SECRET: [(Method, &str); 5] = [
    (Method::POST, "/v1/api-keys"),
    (Method::POST, "/v1/webhooks"),
    (Method::POST, "/v1/webhooks/{id}/rotate-secret"),
    (Method::POST, "/v1/invitations"),
    (Method::POST, "/v1/integrations/oauth/start"),
];

/// Routes whose change belongs to no organization the caller acts in: creating an organization
/// writes the new organization's audit log, not that of the `X-Organization-Id` a session may
/// send, so the key cannot be marked in the change's transaction. They run as if no key was sent
/// (documented: a retry-safe create sends its `slug`, which a repeat finds taken, 409).
pub(crate) const OUTSIDE_THE_ORGANIZATION: [(Method, &str); 1] = [(Method::POST, "/v1/organizations")];

/// The middleware. Register it inside [`super::guard`] (wrapped before it), so that rate limits
/// and head limits apply first and the request id is known.
pub async fn idempotency(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let writes = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    if !writes || !req.path().starts_with("/v1/") || !req.headers().contains_key(IDEMPOTENCY_KEY_HEADER) {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    }
    // A task of its own on this thread, as use cases are: a client that goes away after sending
    // drops this future, but its request is still reserved, run, and its answer stored, so that
    // its retry gets the answer rather than a reservation nobody finishes.
    let task = actix_web::rt::spawn(with_key(req, next).instrument(tracing::Span::current()));
    match task.await {
        Ok(outcome) => outcome,
        Err(_) => {
            Err(ApiError::from(compliance_app::AppError::Internal("idempotent request task failed".into())).into())
        }
    }
}

/// Reserves the request's key, then runs the request and keeps its answer, or answers from the
/// reservation.
async fn with_key(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let key = match key_of(&req) {
        Ok(key) => key,
        Err(refusal) => return Ok(req.into_response(refusal.error_response())),
    };
    let (Some(state), Some(operations)) =
        (req.app_data::<web::Data<AppState>>().cloned(), req.app_data::<web::Data<Operations>>().cloned())
    else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    let Some(pattern) = operations.routes.of(req.path()).map(str::to_owned) else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    if OUTSIDE_THE_ORGANIZATION.iter().any(|(method, path)| method == req.method() && pattern == *path) {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    }
    let Some(mut principal) = caller_of(&req, &state).await else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    // No more than the matched route takes: a larger body is refused as the route would.
    let limit =
        req.app_data::<web::Data<RouteBodyLimits>>().map_or(crate::JSON_BODY_LIMIT, |limits| limits.of(&pattern));
    let body = match read_body(&mut req, limit).await {
        Ok(body) => body,
        Err(refusal) => return Ok(req.into_response(refusal.error_response())),
    };
    let target = req.uri().path_and_query().map_or_else(|| req.path().to_owned(), |target| target.as_str().to_owned());
    let fingerprint = compliance_app::fingerprint(req.method().as_str(), &target, &principal, &body);
    req.set_payload(Payload::from(body));
    let reveals_secret = REVEALS_SECRET.iter().any(|(method, path)| method == req.method() && pattern == *path);
    let (reserving, route) = (principal.clone(), format!("{} {pattern}", req.method()));
    let decision =
        state.run(|app| async move { app.idempotency.reserve(&reserving, &key, &route, fingerprint).await }).await;
    let refused = match decision {
        Ok(Decision::Run(claim)) => Ok(claim),
        Ok(Decision::Replay(stored)) => return Ok(req.into_response(replay(stored))),
        Ok(Decision::Reused) => Err(ApiError::idempotency_key_reused()),
        Ok(Decision::InFlight { retry_after }) => Err(ApiError::idempotency_in_flight(retry_after)),
        Ok(Decision::Withheld { resource }) => {
            Err(not_kept(resource, "its answer showed a secret once, so it is not kept"))
        }
        Ok(Decision::AppliedWithoutResponse { resource }) => {
            Err(not_kept(resource, "its answer was lost before it could be kept"))
        }
        Err(error) => Err(error),
    };
    let claim = match refused {
        Ok(claim) => claim,
        Err(refusal) => return Ok(req.into_response(refusal.error_response())),
    };
    principal.idempotency = Some(claim.clone());
    req.extensions_mut().insert(CredentialAccepted);
    req.extensions_mut().insert(Authenticated(principal.clone()));
    let response = match next.call(req).await {
        Ok(response) => response.map_into_boxed_body(),
        Err(error) => {
            release(&state, &principal, claim).await;
            return Err(error);
        }
    };
    Ok(keep(response, &state, &principal, claim, reveals_secret).await)
}

/// The header's key, or the 400 that names the header.
fn key_of(req: &ServiceRequest) -> Result<IdempotencyKey, ApiError> {
    let mut values = req.headers().get_all(IDEMPOTENCY_KEY_HEADER);
    let (Some(value), None) = (values.next(), values.next()) else {
        return Err(ApiError::invalid_field(IDEMPOTENCY_KEY_HEADER, "send the header once"));
    };
    let text = value.to_str().map_err(|_| {
        ApiError::invalid_field(IDEMPOTENCY_KEY_HEADER, "must be visible ASCII characters only (no spaces)")
    })?;
    IdempotencyKey::parse(text).map_err(|why| ApiError::invalid_field(IDEMPOTENCY_KEY_HEADER, why))
}

/// The caller, authenticated as the `Authenticated` extractor does; `None` when that fails (the route
/// then answers the failure itself).
async fn caller_of(req: &ServiceRequest, state: &AppState) -> Option<Principal> {
    let credentials = crate::auth::credentials(req.request())?;
    let mut principal = crate::auth::principal(state, credentials).await.ok()?;
    principal.request_id = req.extensions().get::<RequestId>().map(|id| id.0.clone());
    Some(principal)
}

/// The whole body, to fingerprint it before the route runs (it is put back for the route).
async fn read_body(req: &mut ServiceRequest, limit: usize) -> Result<Bytes, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(ApiError::payload_too_large(limit));
    }
    let mut payload = req.take_payload();
    let mut bytes = BytesMut::with_capacity(declared.unwrap_or(0).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| ApiError::malformed_json("the body could not be read".into()))?;
        if bytes.len() + chunk.len() > limit {
            return Err(ApiError::payload_too_large(limit));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes.freeze())
}

/// Stores the route's answer for repeats of the key (or releases the key, see
/// `IdempotencyService::finish`) and sends it on. A failure to store is logged: the reservation
/// then runs out, and a retry runs again unless the change was applied.
async fn keep(
    response: ServiceResponse<BoxBody>,
    state: &AppState,
    principal: &Principal,
    claim: IdempotencyClaim,
    reveals_secret: bool,
) -> ServiceResponse<BoxBody> {
    let (request, response) = response.into_parts();
    // The body as the client gets it: `guard` adds the request id to a problem, and adds the
    // same again on the way out.
    let response = match request.extensions().get::<RequestId>() {
        Some(id) => super::problem_with_request_id(response, &id.0),
        None => response,
    };
    let (head, body) = response.into_parts();
    let body = match actix_web::body::to_bytes(body).await {
        Ok(bytes) => bytes,
        Err(_) => {
            release(state, principal, claim).await;
            let failed =
                ApiError::from(compliance_app::AppError::Internal("an answer's body could not be read".into()));
            return ServiceResponse::new(request, failed.error_response());
        }
    };
    let header = |name: HeaderName| head.headers().get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let stored = StoredResponse {
        status: head.status().as_u16(),
        content_type: header(header::CONTENT_TYPE),
        location: header(header::LOCATION),
        etag: header(header::ETAG),
        body: body.to_vec(),
    };
    let reveals_secret = reveals_secret || head.headers().contains_key(header::SET_COOKIE);
    let org = principal.organization_id.clone();
    let stored_ok =
        state.run(|app| async move { app.idempotency.finish(&org, &claim, stored, reveals_secret).await }).await;
    if let Err(error) = stored_ok {
        tracing::warn!(%error, "could not store the answer of a request with an Idempotency-Key");
    }
    ServiceResponse::new(request, head.set_body(body).map_into_boxed_body())
}

async fn release(state: &AppState, principal: &Principal, claim: IdempotencyClaim) {
    let org = principal.organization_id.clone();
    if let Err(error) = state.run(|app| async move { app.idempotency.release(&org, &claim).await }).await {
        tracing::warn!(%error, "could not release an Idempotency-Key");
    }
}

/// A stored answer, as it was sent, marked as a replay.
fn replay(stored: StoredResponse) -> HttpResponse {
    let mut response = HttpResponse::build(StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK));
    let headers =
        [(header::CONTENT_TYPE, stored.content_type), (header::LOCATION, stored.location), (header::ETAG, stored.etag)];
    for (name, value) in headers {
        if let Some(value) = value.and_then(|value| HeaderValue::from_str(&value).ok()) {
            response.insert_header((name, value));
        }
    }
    response.insert_header((REPLAYED_HEADER, HeaderValue::from_static("true")));
    response.body(stored.body)
}

/// The 409 of a key whose request was applied but whose answer is not kept (`why`): it names
/// the record the change's audit entry names, which the client reads instead of retrying.
fn not_kept(resource: Option<(String, String)>, why: &str) -> ApiError {
    let changed = match resource {
        Some((kind, id)) if !id.is_empty() => format!("it changed {kind} {id}"),
        _ => "it changed a record".to_owned(),
    };
    ApiError::idempotency_response_not_kept(format!(
        "the request with this Idempotency-Key was applied ({changed}), but {why}; read the record instead of \
         retrying"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn every_route_that_reveals_a_secret_is_served() {
        let table = crate::route_table();
        for (method, path) in REVEALS_SECRET {
            assert!(table.iter().any(|(m, p)| *m == method && p == path), "{method} {path} is not a route");
        }
    }
}
