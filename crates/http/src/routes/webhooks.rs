//! `/v1/webhooks`: endpoints that receive the organization's events (Standard Webhooks), their
//! signing secrets (shown once), tests, and the record of deliveries.

use actix_web::{HttpResponse, web};
use compliance_app::IssuedWebhook;
use compliance_domain::webhook::{DeliveryStatus, NewWebhook, Webhook, WebhookChanges, WebhookDelivery};
use compliance_domain::{Timestamp, WebhookDeliveryId, WebhookId};
use secrecy::ExposeSecret;
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::list_query::QueryShape;
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_webhooks, __path_list_webhooks);
    routes.add(create_webhook, __path_create_webhook);
    routes.add(get_webhook, __path_get_webhook);
    routes.add(update_webhook, __path_update_webhook);
    routes.add(delete_webhook, __path_delete_webhook);
    routes.add(rotate_webhook_secret, __path_rotate_webhook_secret);
    routes.add(test_webhook, __path_test_webhook);
    routes.add(list_webhook_deliveries, __path_list_webhook_deliveries);
    routes.add(retry_webhook_delivery, __path_retry_webhook_delivery);
}

/// A webhook as it is shown: never its secret, nor its URL's path and query.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WebhookDto<'a> {
    id: &'a WebhookId,
    /// The URL's origin followed by `/…` (`https://hooks.slack.com/…`): the path and query may
    /// carry a credential, so they are kept sealed and shown only in the create answer.
    url: &'a str,
    #[schema(value_type = Option<String>)]
    description: Option<&'a str>,
    /// Event names and wildcards.
    events: &'a [String],
    is_enabled: bool,
    /// Why deliveries disabled the webhook (after 3 days of failures); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    disabled_reason: Option<&'a str>,
    /// Until when the secret before the last rotation still signs beside the current one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Timestamp, required = false)]
    previous_secret_expires_at: Option<Timestamp>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> From<&'a Webhook> for WebhookDto<'a> {
    fn from(w: &'a Webhook) -> Self {
        Self {
            id: &w.id,
            url: &w.url,
            description: w.description.as_deref(),
            events: &w.events,
            is_enabled: w.is_enabled,
            disabled_reason: w.disabled_reason.as_deref(),
            previous_secret_expires_at: w.previous_secret_expires_at,
            created_at: w.created_at,
            updated_at: w.updated_at,
        }
    }
}

/// A webhook with its (new) signing secret, shown this once; the create answer shows its full
/// `url` this once too.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WebhookWithSecret<'a> {
    #[serde(flatten)]
    webhook: WebhookDto<'a>,
    /// `whsec_` and the base64 of 32 random bytes: the key of the Standard Webhooks libraries.
    /// It is never shown again.
    secret: &'a str,
}

impl<'a> From<&'a IssuedWebhook> for WebhookWithSecret<'a> {
    fn from(issued: &'a IssuedWebhook) -> Self {
        let mut webhook = WebhookDto::from(&issued.webhook);
        if let Some(url) = &issued.url {
            webhook.url = url.expose_secret();
        }
        Self { webhook, secret: issued.secret.expose_secret() }
    }
}

/// `{data, count, nextCursor}` of webhooks.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct WebhookList<'a> {
    data: Vec<WebhookDto<'a>>,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// One event's delivery to the webhook.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DeliveryDto<'a> {
    /// The message id: the `webhook-id` header, the same on every attempt.
    id: &'a WebhookDeliveryId,
    webhook_id: &'a WebhookId,
    /// The event name (`risk.updated`, `webhook.test`).
    event_type: &'a str,
    status: DeliveryStatus,
    attempts: u32,
    /// When the next attempt is due (pending deliveries).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Timestamp, required = false)]
    next_attempt_at: Option<Timestamp>,
    /// The last response's status code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = u16, required = false)]
    response_status: Option<u16>,
    /// The first KiB of the last response's body.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    response_body: Option<&'a str>,
    /// How long the last attempt took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = i64, required = false)]
    latency_ms: Option<i64>,
    /// Why the last attempt failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    last_error: Option<&'a str>,
    created_at: Timestamp,
    updated_at: Timestamp,
}

impl<'a> From<&'a WebhookDelivery> for DeliveryDto<'a> {
    fn from(d: &'a WebhookDelivery) -> Self {
        Self {
            id: &d.id,
            webhook_id: &d.webhook_id,
            event_type: &d.event_type,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: (d.status == DeliveryStatus::Pending).then_some(d.next_attempt_at),
            response_status: d.response_status,
            response_body: d.response_body.as_deref(),
            latency_ms: d.latency_ms,
            last_error: d.last_error.as_deref(),
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// `{data, count, nextCursor}` of deliveries.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DeliveryList<'a> {
    data: Vec<DeliveryDto<'a>>,
    count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

fn webhook_id(id: &str) -> Result<WebhookId, ApiError> {
    WebhookId::parse(id).map_err(|_| ApiError::not_found("webhook"))
}

/// List webhooks
///
/// Newest first, paginated with `limit` and `cursor`.
#[utoipa::path(
    get, path = "/v1/webhooks", operation_id = "listWebhooks", tag = "webhooks",
    params(PageQuery),
    responses((status = 200, description = "The webhooks, without their secrets.", body = WebhookList)),
)]
async fn list_webhooks(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, page) = (caller.0, query.request(state.settings(), "webhooks")?);
    let webhooks = state.run(|app| async move { app.webhooks.list(&principal, &page).await }).await?;
    Ok(HttpResponse::Ok().json(WebhookList {
        data: webhooks.items.iter().map(WebhookDto::from).collect(),
        count: webhooks.total,
        next_cursor: webhooks.next.as_ref().map(|next| encode(next, &QueryShape::unfiltered("webhooks").fingerprint())),
    }))
}

/// Create a webhook
///
/// The endpoint receives the events named by `events` that commit from now on. The answer holds
/// its signing `secret` and its full `url`, shown this once: every other answer, audit entry and
/// event shows the URL masked (its origin and `/…`).
#[utoipa::path(
    post, path = "/v1/webhooks", operation_id = "createWebhook", tag = "webhooks",
    request_body = NewWebhook,
    responses((status = 201, description = "The webhook with its secret.", body = WebhookWithSecret,
        headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_webhook(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewWebhook>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let issued = state.run(|app| async move { app.webhooks.create(&principal, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &issued.webhook.etag(), &WebhookWithSecret::from(&issued)))
}

/// Get a webhook
#[utoipa::path(
    get, path = "/v1/webhooks/{id}", operation_id = "getWebhook", tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404."), IfNoneMatchHeader),
    responses((status = 200, description = "The webhook.", body = WebhookDto)),
)]
async fn get_webhook(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, webhook_id(&id)?);
    let webhook = state.run(|app| async move { app.webhooks.get(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &webhook.etag(), &WebhookDto::from(&webhook)))
}

/// Update a webhook
///
/// `isEnabled: true` re-enables a webhook deliveries disabled, and clears its reason.
#[utoipa::path(
    patch, path = "/v1/webhooks/{id}", operation_id = "updateWebhook", tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404."), IfMatchHeader),
    request_body = WebhookChanges,
    responses((status = 200, description = "The webhook.", body = WebhookDto)),
)]
async fn update_webhook(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<WebhookChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, webhook_id(&id)?);
    let webhook =
        state.run(|app| async move { app.webhooks.update(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &webhook.etag(), &WebhookDto::from(&webhook)))
}

/// Delete a webhook
///
/// With its delivery records; queued deliveries are not sent.
#[utoipa::path(
    delete, path = "/v1/webhooks/{id}", operation_id = "deleteWebhook", tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404."), IfMatchHeader),
    responses((status = 204, description = "Deleted.")),
)]
async fn delete_webhook(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, webhook_id(&id)?);
    state.run(|app| async move { app.webhooks.delete(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Rotate a webhook's secret
///
/// A new secret signs from now on; the previous one keeps signing beside it for 24 hours (two
/// signatures in `webhook-signature`). The new secret is in the answer, shown this once.
#[utoipa::path(
    post, path = "/v1/webhooks/{id}/rotate-secret", operation_id = "rotateWebhookSecret", tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404.")),
    responses((status = 200, description = "The webhook with its new secret.", body = WebhookWithSecret)),
)]
async fn rotate_webhook_secret(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, webhook_id(&id)?);
    let issued = state.run(|app| async move { app.webhooks.rotate_secret(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(WebhookWithSecret::from(&issued)))
}

/// Send a test event
///
/// Queues a `webhook.test` event for the webhook, whatever its `events`, after what is already
/// queued; the answer is its delivery (202: it is sent in the background).
#[utoipa::path(
    post, path = "/v1/webhooks/{id}/test", operation_id = "testWebhook", tag = "webhooks",
    params(("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404.")),
    responses((status = 202, description = "The queued delivery.", body = DeliveryDto)),
)]
async fn test_webhook(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, webhook_id(&id)?);
    let delivery = state.run(|app| async move { app.webhooks.test(&principal, &id).await }).await?;
    Ok(HttpResponse::Accepted().json(DeliveryDto::from(&delivery)))
}

/// List a webhook's deliveries
///
/// Newest first, paginated with `limit` and `cursor`: status, attempts, the last response's code,
/// latency and first KiB of body. Never the payload's signature or the secret.
#[utoipa::path(
    get, path = "/v1/webhooks/{id}/deliveries", operation_id = "listWebhookDeliveries", tag = "webhooks",
    params(
        ("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404."),
        PageQuery,
    ),
    responses((status = 200, description = "The deliveries.", body = DeliveryList)),
)]
async fn list_webhook_deliveries(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, page) = (caller.0, webhook_id(&id)?, query.request(state.settings(), "webhookDeliveries")?);
    let deliveries = state.run(|app| async move { app.webhooks.deliveries(&principal, &id, &page).await }).await?;
    Ok(HttpResponse::Ok().json(DeliveryList {
        data: deliveries.items.iter().map(DeliveryDto::from).collect(),
        count: deliveries.total,
        next_cursor: deliveries
            .next
            .as_ref()
            .map(|next| encode(next, &QueryShape::unfiltered("webhookDeliveries").fingerprint())),
    }))
}

/// Retry a delivery
///
/// Sends a succeeded or failed delivery again, at once (same message id). 409 while it is still
/// pending or being sent.
#[utoipa::path(
    post, path = "/v1/webhooks/{id}/deliveries/{deliveryId}/retry", operation_id = "retryWebhookDelivery", tag = "webhooks",
    params(
        ("id" = WebhookId, Path, description = "The webhook; an id of another organization or of none is a 404."),
        ("deliveryId" = WebhookDeliveryId, Path, description = "The delivery; one of another webhook is a 404."),
    ),
    responses(
        (status = 202, description = "The delivery, pending again.", body = DeliveryDto),
        (status = 409, description = "The delivery is still pending or being sent.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn retry_webhook_delivery(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (id, delivery) = path.into_inner();
    let id = webhook_id(&id)?;
    let delivery = WebhookDeliveryId::parse(&delivery).map_err(|_| ApiError::not_found("delivery"))?;
    let principal = caller.0;
    let retried = state.run(|app| async move { app.webhooks.retry(&principal, &id, &delivery).await }).await?;
    Ok(HttpResponse::Accepted().json(DeliveryDto::from(&retried)))
}
