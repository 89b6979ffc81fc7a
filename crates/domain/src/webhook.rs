//! Webhook endpoints of an organization (Standard Webhooks) and the deliveries of events to them.
//!
//! An endpoint names the events it wants (`risk.updated`, `risk.*`, `*`); the event names are the
//! audit trail's actions. Each event becomes one delivery per matching endpoint, sent in order per
//! endpoint and retried with backoff; the worker lives in the use-case layer.

use serde::Deserialize;

use crate::network::{classify, host_name, internal_name, is_allowed, plain_host_name};
use crate::validation::{
    Checked, FieldError, ValidationErrors, http_url, map_nullable, map_present, required, set, text,
};
use crate::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId, nullable, required_non_null};

/// The longest description, in characters.
pub const DESCRIPTION_MAX: usize = 500;
/// Event names and wildcards one endpoint may list.
pub const EVENTS_MAX: usize = 50;
/// The longest event name, in characters.
pub const EVENT_NAME_MAX: usize = 100;
/// The event `POST /v1/webhooks/{id}/test` sends, whatever the endpoint's `events`.
pub const TEST_EVENT: &str = "webhook.test";
/// How long a delivery is retried after it was made, before it is given up as failed.
pub const RETRY_WINDOW: time::Duration = time::Duration::hours(24);
/// How long an endpoint may fail without a single success before the worker disables it.
pub const DISABLE_AFTER: time::Duration = time::Duration::days(3);
/// How long the secret before a rotation keeps signing beside the new one.
pub const ROTATION_OVERLAP: time::Duration = time::Duration::hours(24);
/// How much of a response body a delivery record keeps.
pub const RESPONSE_EXCERPT_BYTES: usize = 1024;

crate::string_enum! {
    /// `pending → sending → succeeded | pending (a retry) | failed (retries exhausted)`.
    DeliveryStatus { Pending = "pending", Sending = "sending", Succeeded = "succeeded", Failed = "failed" }
}

/// A webhook endpoint. Its signing secret is kept sealed beside it, never in this struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// The webhook's id.
    pub id: WebhookId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The endpoint's URL as it is shown: its origin and `/…` ([`masked_url`]). The full URL is
    /// a credential (Slack and Teams put theirs in the path) and is kept sealed beside the record.
    pub url: String,
    /// Up to [`DESCRIPTION_MAX`] characters, if any.
    pub description: Option<String>,
    /// Exact event names and wildcards (`risk.*`, `*`), as given.
    pub events: Vec<String>,
    /// Whether deliveries are sent.
    pub is_enabled: bool,
    /// Why the delivery worker disabled the endpoint; `None` while enabled or disabled by a user.
    pub disabled_reason: Option<String>,
    /// Until when the secret before the last rotation still signs; `None` without one.
    pub previous_secret_expires_at: Option<Timestamp>,
    /// The last audit `seq` of the organization the worker has turned into deliveries.
    pub event_cursor: i64,
    /// When the current run of failed attempts began; `None` after a success.
    pub failing_since: Option<Timestamp>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl Webhook {
    /// The entity tag of this state of the record ([`ETag::of`](crate::etag::ETag::of) its id and `updatedAt`).
    pub fn etag(&self) -> crate::etag::ETag {
        crate::etag::ETag::of(self.id.as_str(), self.updated_at)
    }
}

impl Webhook {
    /// Whether an event named `event` goes to this endpoint.
    pub fn wants(&self, event: &str) -> bool {
        self.events.iter().any(|pattern| event_matches(pattern, event))
    }

    /// Whether event `action` on record `resource_id` at `at` came after this endpoint was made:
    /// its cursor starts at the log's sealed size then, so entries queued before it and sealed
    /// after are read too, and are not its events; nor is its own creation.
    pub fn follows(&self, at: Timestamp, action: &str, resource_id: &str) -> bool {
        at >= self.created_at && !(action == "webhook.created" && resource_id == self.id.as_str())
    }
}

/// `risk.*` matches `risk.updated` (and `risk.comment.added`), `*` everything, a name itself.
pub fn event_matches(pattern: &str, event: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some("") => true,
        Some(prefix) => event.starts_with(prefix),
        None => pattern == event,
    }
}

/// `POST /v1/webhooks`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewWebhook {
    /// Where events are POSTed: `https://…` (`http://` only for a host in `WEBHOOK_ALLOWED_HOSTS`);
    /// never an internal address.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::url, required = true))]
    pub url: Option<String>,
    /// Event names (`risk.updated`) and wildcards (`risk.*`, `*`); at least one.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::events, required = true))]
    pub events: Option<Vec<String>>,
    /// Up to 500 characters.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    pub description: Option<String>,
}

/// `PATCH /v1/webhooks/{id}`: absent fields stay; `description` may be `null` to clear it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookChanges {
    /// Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::url))]
    pub url: Option<String>,
    /// Replaces the event names. Absent: unchanged; `null` is refused.
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::events))]
    pub events: Option<Vec<String>>,
    /// Absent: unchanged; `null`: cleared.
    #[serde(default, deserialize_with = "nullable")]
    #[cfg_attr(feature = "openapi", schema(schema_with = schemas::description))]
    pub description: Option<Option<String>>,
    /// `true` re-enables an endpoint the worker disabled (and clears its reason).
    #[serde(default, deserialize_with = "required_non_null")]
    #[cfg_attr(feature = "openapi", schema(value_type = bool))]
    pub is_enabled: Option<bool>,
}

/// Validated changes to a webhook.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookPatch {
    url: Option<WebhookUrl>,
    events: Option<Vec<String>>,
    description: Option<Option<String>>,
    is_enabled: Option<bool>,
}

impl WebhookPatch {
    /// `allowed_hosts`: `WEBHOOK_ALLOWED_HOSTS`.
    pub fn new(changes: WebhookChanges, allowed_hosts: &[String]) -> Result<Self, ValidationErrors> {
        Ok(Self {
            url: map_present(changes.url, |u| webhook_url("url", u, allowed_hosts))?,
            events: map_present(changes.events, events)?,
            description: map_nullable(changes.description, |d| text("description", d, 0, DESCRIPTION_MAX))?,
            is_enabled: changes.is_enabled,
        })
    }

    /// The new URL, if the patch gives one: to be sealed in place of the current one.
    pub fn url(&self) -> Option<&WebhookUrl> {
        self.url.as_ref()
    }
}

/// The full URL of a webhook, validated: a credential (a Slack or Teams webhook's path is its key),
/// so it is only ever sealed or sent to, and its `Debug` shows the masked form.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookUrl(String);

impl WebhookUrl {
    /// The URL itself, to seal or to send to.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL as it is shown ([`masked_url`]).
    pub fn masked(&self) -> String {
        masked_url(&self.0)
    }
}

impl std::fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WebhookUrl").field(&self.masked()).finish()
    }
}

/// What follows the origin of a masked URL: it says that the path and query are hidden.
pub const MASK: &str = "/…";

/// A webhook URL as it is shown: its origin (scheme, host and a port other than the scheme's)
/// and [`MASK`], whatever the path and query were; so `https://hooks.slack.com/services/T0/B0/x`
/// shows as `https://hooks.slack.com/…`. Masking a masked URL changes nothing.
pub fn masked_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if parsed.has_host() => format!("{}{MASK}", parsed.origin().ascii_serialization()),
        _ => MASK.trim_start_matches('/').to_owned(),
    }
}

impl Webhook {
    /// A new webhook of the organization, validated, and its full URL (to be sealed); the URL is
    /// checked against `allowed_hosts`.
    pub fn create(
        id: WebhookId,
        organization_id: OrganizationId,
        input: NewWebhook,
        allowed_hosts: &[String],
        event_cursor: i64,
        now: Timestamp,
    ) -> Result<(Self, WebhookUrl), ValidationErrors> {
        let url = required("url", input.url).and_then(|u| webhook_url("url", u, allowed_hosts));
        let events = required("events", input.events).and_then(events);
        let description = input.description.map(|d| text("description", d, 0, DESCRIPTION_MAX)).transpose();
        let mut errors = Vec::new();
        let (url, events, description) = match (url, events, description) {
            (Ok(url), Ok(events), Ok(description)) => (url, events, description),
            (url, events, description) => {
                errors.extend(url.err());
                errors.extend(events.err());
                errors.extend(description.err());
                return Err(ValidationErrors(errors));
            }
        };
        let webhook = Self {
            id,
            organization_id,
            url: url.masked(),
            description,
            events,
            is_enabled: true,
            disabled_reason: None,
            previous_secret_expires_at: None,
            event_cursor,
            failing_since: None,
            created_at: now,
            updated_at: now,
        };
        Ok((webhook, url))
    }

    /// Applies a validated patch. Enabling clears the worker's reason and the failure streak.
    pub fn apply(&mut self, patch: &WebhookPatch, now: Timestamp) {
        if patch == &WebhookPatch::default() {
            return;
        }
        if let Some(url) = &patch.url {
            self.url = url.masked();
        }
        set(&mut self.events, &patch.events);
        set(&mut self.description, &patch.description);
        if let Some(enabled) = patch.is_enabled {
            if enabled && !self.is_enabled {
                self.disabled_reason = None;
                self.failing_since = None;
            }
            self.is_enabled = enabled;
        }
        self.updated_at = now;
    }
}

/// A URL events may be sent to: absolute, `https` (or `http` for an allowed host), a plain host
/// name or a public IP literal, not an internal name. Where a name resolves is checked again at
/// every delivery (it can change), by the sender.
pub fn webhook_url(field: &str, value: String, allowed_hosts: &[String]) -> Checked<WebhookUrl> {
    checked_url(field, value, allowed_hosts).map(WebhookUrl)
}

fn checked_url(field: &str, value: String, allowed_hosts: &[String]) -> Checked<String> {
    let value = http_url(field, value)?;
    let parsed = url::Url::parse(&value).map_err(|_| FieldError::new(field, "must be an absolute https URL"))?;
    let Some(host) = parsed.host() else { return Err(FieldError::new(field, "must have a host")) };
    let name = host_name(&host.to_owned());
    let allowed = is_allowed(&name, allowed_hosts);
    if parsed.scheme() != "https" && !allowed {
        return Err(FieldError::new(field, "must be an https URL (http only for a host in WEBHOOK_ALLOWED_HOSTS)"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(FieldError::new(field, "must not carry a user name or password"));
    }
    if allowed {
        return Ok(value);
    }
    match host {
        url::Host::Domain(domain) if !plain_host_name(domain) => {
            Err(FieldError::new(field, "the host name may only contain ASCII letters, digits, '-', '_' and '.'"))
        }
        url::Host::Domain(domain) => match internal_name(domain) {
            Some(reason) => Err(FieldError::new(field, format!("{name} is {reason}"))),
            None => Ok(value),
        },
        url::Host::Ipv4(ip) => public_ip(field, &name, ip.into()).map(|()| value),
        url::Host::Ipv6(ip) => public_ip(field, &name, ip.into()).map(|()| value),
    }
}

fn public_ip(field: &str, name: &str, ip: std::net::IpAddr) -> Checked<()> {
    match classify(ip) {
        Some(kind) => Err(FieldError::new(field, format!("{name} is {kind} address"))),
        None => Ok(()),
    }
}

/// At least one, at most [`EVENTS_MAX`], each `*`, a name (`risk.updated`) or a prefix wildcard
/// (`risk.*`); duplicates are dropped.
fn events(values: Vec<String>) -> Checked<Vec<String>> {
    if values.is_empty() {
        return Err(FieldError::new("events", "must name at least one event or wildcard"));
    }
    if values.len() > EVENTS_MAX {
        return Err(FieldError::new("events", format!("must name at most {EVENTS_MAX} events")));
    }
    let mut kept: Vec<String> = Vec::with_capacity(values.len());
    for value in values {
        if !is_event_pattern(&value) {
            return Err(FieldError::new(
                "events",
                format!(
                    "`{}` is neither `*`, an event name such as `risk.updated` nor a wildcard such as `risk.*`",
                    value.chars().take(EVENT_NAME_MAX).collect::<String>()
                ),
            ));
        }
        if !kept.contains(&value) {
            kept.push(value);
        }
    }
    Ok(kept)
}

fn is_event_pattern(value: &str) -> bool {
    if value == "*" {
        return true;
    }
    let name = value.strip_suffix(".*").unwrap_or(value);
    value.len() <= EVENT_NAME_MAX
        && !name.is_empty()
        && name.split('.').all(|part| {
            part.starts_with(|c: char| c.is_ascii_lowercase())
                && part.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// One event's delivery to one endpoint. The payload is fixed when it is made; every attempt
/// sends it again under the same id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// The delivery's id: the `webhook-id` the receiver sees, the same on every attempt.
    pub id: WebhookDeliveryId,
    /// The organization it belongs to; every read and write is scoped by it.
    pub organization_id: OrganizationId,
    /// The webhook.
    pub webhook_id: WebhookId,
    /// The place in the endpoint's queue: deliveries are sent in this order.
    pub ordinal: i64,
    /// The event name (`risk.updated`).
    pub event_type: String,
    /// The audit entry's `seq`; `None` for [`TEST_EVENT`].
    pub event_seq: Option<i64>,
    /// The JSON body `{type, timestamp, data}`.
    pub payload: String,
    /// `pending`, `sending`, `succeeded`, or `failed` for good.
    pub status: DeliveryStatus,
    /// How many times it was sent.
    pub attempts: u32,
    /// When it is sent next, while pending.
    pub next_attempt_at: Timestamp,
    /// While sending: until when the claiming worker owns the delivery.
    pub claimed_until: Option<Timestamp>,
    /// The last attempt's HTTP status, if one came.
    pub response_status: Option<u16>,
    /// The first [`RESPONSE_EXCERPT_BYTES`] of the last response's body.
    pub response_body: Option<String>,
    /// The last attempt's time to the response, in milliseconds.
    pub latency_ms: Option<i64>,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When the event was queued for this webhook.
    pub created_at: Timestamp,
    /// When it was last attempted or changed.
    pub updated_at: Timestamp,
}

impl WebhookDelivery {
    /// A delivery due now, its ordinal given by the store when it is queued.
    pub fn new(webhook: &Webhook, event_type: String, event_seq: Option<i64>, payload: String, now: Timestamp) -> Self {
        Self {
            id: WebhookDeliveryId::generate(),
            organization_id: webhook.organization_id.clone(),
            webhook_id: webhook.id.clone(),
            ordinal: 0,
            event_type,
            event_seq,
            payload,
            status: DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: now,
            claimed_until: None,
            response_status: None,
            response_body: None,
            latency_ms: None,
            last_error: None,
            created_at: now,
            updated_at: now,
        }
    }
}

/// What one attempt found, for the delivery record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptOutcome {
    /// `Succeeded`, `Pending` (retried at `next_attempt_at`) or `Failed`.
    pub status: DeliveryStatus,
    /// When to try again, if it is to be retried.
    pub next_attempt_at: Timestamp,
    /// The HTTP status, if a response came.
    pub response_status: Option<u16>,
    /// The start of the response body, if any.
    pub response_body: Option<String>,
    /// Time to the response, in milliseconds.
    pub latency_ms: Option<i64>,
    /// Why it failed, if it did.
    pub last_error: Option<String>,
    /// When the attempt was made.
    pub at: Timestamp,
}

#[cfg(feature = "openapi")]
mod schemas {
    use utoipa::openapi::Object;
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};

    use crate::openapi::text;

    /// Public host names (letters in the last label), an optional port: a subset of what the
    /// server accepts, so that a fuzzer's valid URL is ours.
    const URL_PATTERN: &str =
        "^https://(?:[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*\\.)+[A-Za-z]{2,63}(?::[1-9][0-9]{0,3})?(?:[/?#][!-~]*)?$";
    const EVENT_PATTERN: &str = "^(?:\\*|[a-z][a-z0-9_]*(?:\\.[a-z][a-z0-9_]*)*(?:\\.\\*)?)$";

    pub(super) fn url() -> Object {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(crate::validation::URL_MAX))
            .pattern(Some(URL_PATTERN))
            .description(Some(
                "An https URL (http only for a host in WEBHOOK_ALLOWED_HOSTS); internal addresses and names are refused.",
            ))
            .build()
    }

    pub(super) fn events() -> utoipa::openapi::schema::Array {
        let item = ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(super::EVENT_NAME_MAX))
            .pattern(Some(EVENT_PATTERN));
        ArrayBuilder::new().items(item).min_items(Some(1)).max_items(Some(super::EVENTS_MAX)).build()
    }

    pub(super) fn description() -> Object {
        text(0, super::DESCRIPTION_MAX).schema_type(SchemaType::from_iter([Type::String, Type::Null])).build()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use super::*;

    #[test]
    fn wildcards_match_prefixes_and_everything() {
        assert!(event_matches("*", "risk.updated"));
        assert!(event_matches("risk.*", "risk.updated"));
        assert!(!event_matches("risk.*", "riskier.updated"));
        assert!(event_matches("risk.updated", "risk.updated"));
        assert!(!event_matches("risk.updated", "risk.created"));
    }

    #[test]
    fn event_patterns_are_checked() {
        for good in ["*", "risk.*", "risk.updated", "member.role_changed"] {
            assert!(is_event_pattern(good), "{good}");
        }
        for bad in ["", "risk.", "*.updated", "Risk.updated", "risk..x", "risk.**", ".*"] {
            assert!(!is_event_pattern(bad), "{bad}");
        }
        assert_eq!(events(vec!["*".into(), "*".into()]).unwrap(), vec!["*".to_owned()]);
        assert!(events(Vec::new()).is_err());
    }

    #[test]
    fn urls_must_be_https_and_public_unless_allowed() {
        let none: &[String] = &[];
        assert!(webhook_url("url", "https://hooks.example.com/x".into(), none).is_ok());
        assert!(webhook_url("url", "http://hooks.example.com/x".into(), none).is_err());
        assert!(webhook_url("url", "https://127.0.0.1/x".into(), none).is_err());
        assert!(webhook_url("url", "https://10.0.0.8/x".into(), none).is_err());
        assert!(webhook_url("url", "https://localhost/x".into(), none).is_err());
        assert!(webhook_url("url", "https://[::1]/x".into(), none).is_err());
        assert!(webhook_url("url", "https://user:pw@hooks.example.com/".into(), none).is_err());
        let allowed = vec!["127.0.0.1".to_owned()];
        assert!(webhook_url("url", "http://127.0.0.1:8080/x".into(), &allowed).is_ok());
    }

    #[test]
    fn a_masked_url_keeps_the_origin_and_hides_path_and_query() {
        let slack = "https://hooks.slack.com/services/T000/B000/XXXXSECRET?token=abc";
        assert_eq!(masked_url(slack), "https://hooks.slack.com/…");
        assert_eq!(masked_url("http://127.0.0.1:8080/hook"), "http://127.0.0.1:8080/…");
        assert_eq!(masked_url("https://example.com:443/"), "https://example.com/…");
        assert_eq!(masked_url(&masked_url(slack)), masked_url(slack), "masking is idempotent");
        let url = webhook_url("url", slack.into(), &[]).unwrap();
        assert_eq!(url.expose(), slack);
        assert!(!format!("{url:?}").contains("SECRET"), "{url:?}");
    }
}
