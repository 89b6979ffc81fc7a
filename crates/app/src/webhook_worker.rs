//! The background worker that delivers webhook events. Every server instance runs one.
//!
//! Each tick has two steps. **Queue**: for each enabled webhook, read its organization's audit
//! entries after the webhook's cursor and queue a delivery for each matching one; the cursor moves
//! by compare-and-swap, so of several instances exactly one queues a given entry (per-organization
//! `seq`s are gap-free, given by the audit sequencer in the order it seals entries, which wakes
//! this worker after each pass).
//! **Send**: claim the head of a webhook's queue (the store never hands out a delivery while an
//! earlier one of its webhook is unfinished), sign it, POST it, record the outcome.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use compliance_domain::allowed_host::AllowedHostUse;
use compliance_domain::webhook::{
    AttemptOutcome, DISABLE_AFTER, DeliveryStatus, RESPONSE_EXCERPT_BYTES, RETRY_WINDOW, Webhook, WebhookDelivery,
};
use compliance_domain::{Timestamp, WebhookId};
use compliance_ports::{
    AllowedHostRepository, Clock, EventFeed, OutboundRequest, OutboundResponse, RepoError, SealedUrl, SecretCipher,
    SecretOwner, SendError, WEBHOOK_SECRET_OWNER_KIND, WEBHOOK_URL_OWNER_KIND, WebhookRepository, WebhookSender,
};
use rand::Rng;
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{Notify, watch};

use crate::Ports;
use crate::audit::{AuditTrail, Provenance, WEBHOOK};
use crate::webhook_signing::sign;
use crate::webhooks::payload;

/// Audit entries read per webhook and statement.
const FEED_BATCH: usize = 200;
/// Webhooks looked at per statement of the queueing step.
const WEBHOOK_BATCH: usize = 500;
/// The pauses between tries to record an outcome while the store is unavailable.
const RECORD_RETRY_FIRST_PAUSE: Duration = Duration::from_millis(50);
const RECORD_RETRY_LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// The attempts this process made, by what they came to: `/metrics` shows them as
/// `webhook_delivery_attempts_total`, so an operator (and the bench) sees each instance's share.
pub static DELIVERY_ATTEMPTS: AttemptCounts =
    AttemptCounts { succeeded: AtomicU64::new(0), retrying: AtomicU64::new(0), failed: AtomicU64::new(0) };

/// Counts of attempts: taken by the receiver (2xx), to be retried, and given up.
pub struct AttemptCounts {
    /// The receiver answered 2xx.
    pub succeeded: AtomicU64,
    /// The attempt failed; the delivery is sent again later.
    pub retrying: AtomicU64,
    /// The attempt failed and the delivery is given up.
    pub failed: AtomicU64,
}

impl AttemptCounts {
    fn count(&self, status: DeliveryStatus) {
        let counter = match status {
            DeliveryStatus::Succeeded => &self.succeeded,
            DeliveryStatus::Failed => &self.failed,
            DeliveryStatus::Pending | DeliveryStatus::Sending => &self.retrying,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Tunables of the worker (`WEBHOOK_*`, see docs/operations.md).
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Hosts that may be reached over http and at internal addresses.
    pub allowed_hosts: Vec<String>,
    /// How often the worker looks for work when nothing wakes it.
    pub poll_interval: Duration,
    /// The first retry's delay; each further one doubles, up to `retry_max`, then ±25 % jitter.
    pub retry_base: Duration,
    /// The longest delay between two retries, before jitter.
    pub retry_max: Duration,
    /// How long a delivery is retried after it was made.
    pub retry_window: time::Duration,
    /// How long an endpoint may fail without a success before it is disabled.
    pub disable_after: time::Duration,
    /// Deliveries (to different webhooks) sent at once by one instance.
    pub concurrency: usize,
    /// How long a claimed delivery is this instance's: longer than an attempt can take. An
    /// instance that dies mid-send leaves it to be sent again after this.
    pub claim_lease: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            poll_interval: Duration::from_secs(1),
            retry_base: Duration::from_secs(5),
            retry_max: Duration::from_secs(60 * 60),
            retry_window: RETRY_WINDOW,
            disable_after: DISABLE_AFTER,
            concurrency: 8,
            claim_lease: Duration::from_secs(60),
        }
    }
}

/// Delivers the organizations' committed changes to their webhooks, in order, at least once;
/// [`App::take_webhook_worker`](crate::App::take_webhook_worker) hands it to the process that runs
/// it.
pub struct WebhookWorker {
    webhooks: Arc<dyn WebhookRepository>,
    feed: Arc<dyn EventFeed>,
    sender: Arc<dyn WebhookSender>,
    cipher: Arc<dyn SecretCipher>,
    /// The internal hosts the operator granted to each organization.
    grants: Arc<dyn AllowedHostRepository>,
    clock: Arc<dyn Clock>,
    settings: WebhookSettings,
    work: Arc<Notify>,
    audit: AuditTrail,
}

/// What one attempt came to, before it is recorded.
struct Attempt {
    outcome: AttemptOutcome,
    /// Whether the receiver took the event (a 2xx).
    succeeded: bool,
}

impl WebhookWorker {
    pub(crate) fn new(ports: &Ports, settings: WebhookSettings, work: Arc<Notify>) -> Self {
        Self {
            webhooks: ports.webhooks.clone(),
            feed: ports.event_feed.clone(),
            sender: ports.webhook_sender.clone(),
            cipher: ports.cipher.clone(),
            grants: ports.allowed_hosts.clone(),
            clock: ports.clock.clone(),
            settings,
            work,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// Works until `stop` turns true: a tick, then a wait for a poke, the poll interval or the
    /// stop. A stop lets the deliveries in flight finish (each is bounded by the send timeout), so
    /// a stopped instance sends nothing twice; it claims nothing new.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let worker = Arc::new(self);
        while !*stop.borrow() {
            let tick = tokio::spawn({
                let (worker, stop) = (worker.clone(), stop.clone());
                async move { worker.tick(&stop).await }
            });
            if let Err(error) = tick.await {
                tracing::error!(%error, "a webhook worker tick failed; going on");
            }
            tokio::select! {
                () = worker.work.notified() => {}
                () = tokio::time::sleep(worker.settings.poll_interval) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// One pass: queue new events, then send every due delivery, `concurrency` at a time: a
    /// slot that frees is filled by the next claim at once (its webhook's next delivery may be
    /// due now), rather than when the slowest of a batch is done.
    pub async fn tick(self: &Arc<Self>, stop: &watch::Receiver<bool>) {
        if let Err(error) = self.queue_events().await {
            tracing::warn!(%error, "could not queue webhook events");
        }
        let slots = self.settings.concurrency.max(1);
        let mut in_flight = tokio::task::JoinSet::new();
        loop {
            let free = slots - in_flight.len();
            if free > 0 && !*stop.borrow() {
                let now = self.clock.now();
                let until =
                    now.plus(time::Duration::try_from(self.settings.claim_lease).unwrap_or(time::Duration::MINUTE));
                match self.webhooks.claim_due(now, until, free).await {
                    Ok(claimed) => {
                        for (delivery, webhook) in claimed {
                            let worker = Arc::clone(self);
                            in_flight.spawn(async move { worker.deliver(delivery, webhook).await });
                        }
                    }
                    Err(error) => tracing::warn!(%error, "could not claim webhook deliveries"),
                }
            }
            // Wait for one delivery to finish, take every other that has, then claim again.
            let Some(done) = in_flight.join_next().await else { return };
            for done in std::iter::once(done).chain(std::iter::from_fn(|| in_flight.try_join_next())) {
                if let Err(error) = done {
                    tracing::error!(%error, "a webhook delivery task failed");
                }
            }
        }
    }

    async fn queue_events(&self) -> Result<(), RepoError> {
        let mut after: Option<WebhookId> = None;
        loop {
            let webhooks = self.webhooks.enabled(after.as_ref(), WEBHOOK_BATCH).await?;
            for webhook in &webhooks {
                if let Err(error) = self.queue_for(webhook.clone()).await {
                    tracing::warn!(%error, webhook = %webhook.id, "could not queue a webhook's events");
                }
            }
            if webhooks.len() < WEBHOOK_BATCH {
                return Ok(());
            }
            after = webhooks.last().map(|w| w.id.clone());
        }
    }

    async fn queue_for(&self, mut webhook: Webhook) -> Result<(), RepoError> {
        loop {
            let events = self.feed.after(&webhook.organization_id, webhook.event_cursor, FEED_BATCH).await?;
            let Some(last) = events.last().map(|e| e.seq) else { return Ok(()) };
            let now = self.clock.now();
            let deliveries: Vec<WebhookDelivery> = events
                .iter()
                .filter(|event| {
                    webhook.wants(&event.action) && webhook.follows(event.created_at, &event.action, &event.resource_id)
                })
                .map(|event| {
                    let data = serde_json::from_str(&event.data).unwrap_or(serde_json::Value::Null);
                    let body = payload(&event.action, event.created_at, data);
                    WebhookDelivery::new(&webhook, event.action.clone(), Some(event.seq), body, now)
                })
                .collect();
            if !self.webhooks.advance(&webhook, last, &deliveries).await? {
                // Another instance queued these; it goes on from there.
                return Ok(());
            }
            webhook.event_cursor = last;
            if events.len() < FEED_BATCH {
                return Ok(());
            }
        }
    }

    async fn deliver(&self, delivery: WebhookDelivery, webhook: Webhook) {
        let attempt = self.attempt(&delivery, &webhook).await;
        let Attempt { outcome, succeeded } = attempt;
        DELIVERY_ATTEMPTS.count(outcome.status);
        // The failure streak is noted before the outcome: until the outcome is recorded this
        // delivery heads its webhook's queue, so the claim of the next one (on any instance) reads
        // the streak as this attempt left it. Noted after, a success of the next delivery could
        // clear the streak before this failure started it, leaving a stale `failing_since` that
        // would disable the endpoint at its next failure. A success of an endpoint that was not
        // failing changes nothing (the webhook was read with the claim).
        if !(succeeded && webhook.failing_since.is_none())
            && let Err(error) = self.note_result(&webhook, succeeded, outcome.at).await
        {
            tracing::warn!(%error, webhook = %webhook.id, "could not record a webhook's failure streak");
        }
        self.record(&delivery, &outcome).await;
    }

    /// Records the outcome of an attempt. One left unrecorded keeps the delivery claimed until
    /// its lease runs out, and then it is sent again: a store that is briefly unavailable (on
    /// SQLite, another instance holding the write lock past `busy_timeout`) is waited for, with
    /// growing pauses, for up to half the lease.
    async fn record(&self, delivery: &WebhookDelivery, outcome: &AttemptOutcome) {
        let deadline = Instant::now() + self.settings.claim_lease / 2;
        let mut pause = RECORD_RETRY_FIRST_PAUSE;
        loop {
            match self.webhooks.finish_attempt(delivery, outcome).await {
                Ok(true) => return,
                Ok(false) => {
                    tracing::warn!(delivery = %delivery.id, "a webhook delivery's claim ran out before its outcome was recorded");
                    return;
                }
                Err(RepoError::Unavailable(_)) if Instant::now() + pause < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(RECORD_RETRY_LONGEST_PAUSE);
                }
                Err(error) => {
                    tracing::warn!(%error, delivery = %delivery.id, "could not record a webhook delivery's outcome");
                    return;
                }
            }
        }
    }

    async fn attempt(&self, delivery: &WebhookDelivery, webhook: &Webhook) -> Attempt {
        let now = self.clock.now();
        let request = match self.request(delivery, webhook, now).await {
            Ok(request) => request,
            Err(reason) => return self.retry_or_fail(delivery, now, None, None, None, reason),
        };
        let started = Instant::now();
        let result = self.sender.send(&request).await;
        let latency = i64::try_from(started.elapsed().as_millis()).ok();
        let now = self.clock.now();
        match result {
            Ok(response) if (200..300).contains(&response.status) => Attempt {
                outcome: AttemptOutcome {
                    status: DeliveryStatus::Succeeded,
                    next_attempt_at: now,
                    response_status: Some(response.status),
                    response_body: Some(excerpt(&response.body)),
                    latency_ms: latency,
                    last_error: None,
                    at: now,
                },
                succeeded: true,
            },
            Ok(response) if retryable(response.status) => {
                let reason = format!("the endpoint answered {}", response.status);
                let delay = response.retry_after;
                let mut attempt = self.retry_or_fail(delivery, now, Some(&response), latency, delay, reason);
                attempt.outcome.response_status = Some(response.status);
                attempt
            }
            Ok(response) => {
                let reason = format!("the endpoint answered {} (not retried)", response.status);
                failed(now, Some(&response), latency, reason)
            }
            Err(SendError::Refused(reason)) => failed(now, None, latency, format!("refused: {reason}")),
            Err(error) => self.retry_or_fail(delivery, now, None, latency, None, error.to_string()),
        }
    }

    /// The signed POST: `webhook-signature` holds a signature per secret that still signs.
    async fn request(
        &self,
        delivery: &WebhookDelivery,
        webhook: &Webhook,
        now: Timestamp,
    ) -> Result<OutboundRequest, String> {
        let sealed = self
            .webhooks
            .sealed_secrets(&webhook.organization_id, &webhook.id)
            .await
            .map_err(|error| format!("the webhook's secret could not be read: {error}"))?;
        let owner = SecretOwner {
            organization_id: &webhook.organization_id,
            owner_kind: WEBHOOK_SECRET_OWNER_KIND,
            owner_id: webhook.id.as_str(),
        };
        let open = |ciphertext: &[u8]| -> Result<SecretString, String> {
            self.cipher.open(ciphertext, owner).map_err(|error| error.to_string())
        };
        let mut secrets = vec![open(&sealed.current)?];
        if let Some((previous, until)) = &sealed.previous
            && now < *until
        {
            secrets.push(open(previous)?);
        }
        let timestamp = now.as_unix_seconds();
        let signatures: Vec<String> = secrets
            .iter()
            .filter_map(|secret| sign(secret, delivery.id.as_str(), timestamp, &delivery.payload))
            .collect();
        let url = match &sealed.url {
            SealedUrl::Sealed(ciphertext) => {
                let owner = SecretOwner { owner_kind: WEBHOOK_URL_OWNER_KIND, ..owner };
                self.cipher.open(ciphertext, owner).map_err(|error| error.to_string())?.expose_secret().to_owned()
            }
            SealedUrl::Clear(url) => url.clone(),
        };
        let granted_hosts = self
            .grants
            .hosts(&webhook.organization_id, AllowedHostUse::Webhooks)
            .await
            .map_err(|error| format!("the organization's allowed hosts could not be read: {error}"))?;
        Ok(OutboundRequest {
            url,
            granted_hosts,
            headers: vec![
                ("webhook-id", delivery.id.to_string()),
                ("webhook-timestamp", timestamp.to_string()),
                ("webhook-signature", signatures.join(" ")),
            ],
            body: delivery.payload.clone(),
        })
    }

    /// A retry after the backoff (or the receiver's `Retry-After`), unless that falls outside the
    /// retry window: then the delivery has failed.
    fn retry_or_fail(
        &self,
        delivery: &WebhookDelivery,
        now: Timestamp,
        response: Option<&OutboundResponse>,
        latency: Option<i64>,
        retry_after: Option<Duration>,
        reason: String,
    ) -> Attempt {
        let delay = retry_after.unwrap_or_else(|| self.backoff(delivery.attempts));
        let next = now.plus(time::Duration::try_from(delay).unwrap_or(time::Duration::HOUR));
        if next > delivery.created_at.plus(self.settings.retry_window) {
            return failed(now, response, latency, format!("{reason}; retries ended (24-hour window)"));
        }
        Attempt {
            outcome: AttemptOutcome {
                status: DeliveryStatus::Pending,
                next_attempt_at: next,
                response_status: response.map(|r| r.status),
                response_body: response.map(|r| excerpt(&r.body)),
                latency_ms: latency,
                last_error: Some(reason),
                at: now,
            },
            succeeded: false,
        }
    }

    /// `retry_base · 2^(attempts − 1)`, at most `retry_max`, times a random 0.75–1.25.
    fn backoff(&self, attempts: u32) -> Duration {
        let exponent = attempts.saturating_sub(1).min(30);
        let delay = self.settings.retry_base.saturating_mul(1u32 << exponent).min(self.settings.retry_max);
        delay.mul_f64(rand::rng().random_range(0.75..1.25))
    }

    /// Keeps the failure streak; an endpoint failing for `disable_after` is disabled.
    async fn note_result(&self, webhook: &Webhook, succeeded: bool, at: Timestamp) -> Result<(), RepoError> {
        let since = self.webhooks.note_result(&webhook.organization_id, &webhook.id, succeeded, at).await?;
        let Some(since) = since else { return Ok(()) };
        if at < since.plus(self.settings.disable_after) {
            return Ok(());
        }
        let reason = format!("every delivery failed since {since}");
        let provenance = Provenance::system("webhook-worker", &webhook.organization_id);
        let audit = self.audit.change_by(provenance, |_, _| "webhook.disabled", &WEBHOOK);
        if self.webhooks.disable(&webhook.organization_id, &webhook.id, &reason, at, &audit).await? {
            tracing::warn!(webhook = %webhook.id, organization = %webhook.organization_id, "disabled a failing webhook");
        }
        Ok(())
    }
}

/// Timeouts (408), throttling (429) and server errors are worth retrying.
fn retryable(status: u16) -> bool {
    status == 408 || status == 429 || status >= 500
}

fn failed(now: Timestamp, response: Option<&OutboundResponse>, latency: Option<i64>, reason: String) -> Attempt {
    Attempt {
        outcome: AttemptOutcome {
            status: DeliveryStatus::Failed,
            next_attempt_at: now,
            response_status: response.map(|r| r.status),
            response_body: response.map(|r| excerpt(&r.body)),
            latency_ms: latency,
            last_error: Some(reason),
            at: now,
        },
        succeeded: false,
    }
}

/// The first KiB of a body as text (cut at a character boundary; invalid UTF-8 replaced).
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(RESPONSE_EXCERPT_BYTES)]).into_owned();
    let mut end = text.len().min(RESPONSE_EXCERPT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_on_timeouts_throttling_and_server_errors_only() {
        for status in [408, 429, 500, 502, 503, 599] {
            assert!(retryable(status), "{status}");
        }
        for status in [301, 400, 401, 404, 410] {
            assert!(!retryable(status), "{status}");
        }
    }

    #[test]
    fn excerpts_stop_at_a_kib_on_a_character_boundary() {
        let body = "é".repeat(1000);
        let cut = excerpt(body.as_bytes());
        assert!(cut.len() <= RESPONSE_EXCERPT_BYTES);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
