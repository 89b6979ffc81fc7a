//! Webhook endpoints and their deliveries, and the claims that share delivery between server
//! instances: the event cursor moves by compare-and-swap (one instance queues each event), and a
//! delivery is sent by whoever moves it from `pending` to `sending` first, only when it heads its
//! webhook's queue (so each webhook gets its events one at a time, in order).

use std::collections::HashMap;

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::webhook::{AttemptOutcome, DeliveryStatus, Webhook, WebhookDelivery, masked_url};
use compliance_domain::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId};
use compliance_ports::{
    AuditOf, Cursor, EventFeed, FeedEvent, Page, PageRequest, RepoError, SealedSecrets, SealedUrl, WebhookRepository,
};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, ConnRef, Pools, db_run, write_transaction};
use crate::error::{TxError, corrupt, repo_error};
use crate::locks::lock_organization;
use crate::paging::{newest_first, read_page};
use crate::prepared::Prepared;
use crate::rows::{id, instant, json, json_text, optional_instant, optional_naive, value};
use crate::schema::{audit_entries, audit_tree_heads, webhook_deliveries, webhooks};

const PENDING: &str = DeliveryStatus::Pending.as_str();
const SENDING: &str = DeliveryStatus::Sending.as_str();
const SUCCEEDED: &str = DeliveryStatus::Succeeded.as_str();
const FAILED: &str = DeliveryStatus::Failed.as_str();

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhooks)]
struct WebhookRow {
    id: String,
    organization_id: String,
    url: String,
    description: Option<String>,
    events: String,
    is_enabled: bool,
    disabled_reason: Option<String>,
    previous_secret_expires_at: Option<PrimitiveDateTime>,
    event_cursor: i64,
    failing_since: Option<PrimitiveDateTime>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

#[derive(Insertable)]
#[diesel(table_name = webhooks)]
struct NewWebhookRow<'a> {
    id: &'a str,
    organization_id: &'a str,
    url: &'a str,
    description: Option<&'a str>,
    events: String,
    is_enabled: bool,
    secret: &'a [u8],
    sealed_url: &'a [u8],
    event_cursor: i64,
    next_ordinal: i64,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

/// What `update` replaces; `None` writes NULL. The URL is written only with its sealed form.
#[derive(AsChangeset)]
#[diesel(table_name = webhooks, treat_none_as_null = true)]
struct WebhookChangesRow<'a> {
    description: Option<&'a str>,
    events: String,
    is_enabled: bool,
    disabled_reason: Option<&'a str>,
    updated_at: PrimitiveDateTime,
}

#[derive(Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries)]
struct DeliveryRow {
    id: String,
    organization_id: String,
    webhook_id: String,
    ordinal: i64,
    event_type: String,
    event_seq: Option<i64>,
    payload: String,
    status: String,
    attempts: i32,
    next_attempt_at: PrimitiveDateTime,
    claimed_until: Option<PrimitiveDateTime>,
    response_status: Option<i32>,
    response_body: Option<String>,
    latency_ms: Option<i64>,
    last_error: Option<String>,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
}

/// What `finish_attempt` stores.
#[derive(AsChangeset)]
#[diesel(table_name = webhook_deliveries, treat_none_as_null = true)]
struct OutcomeRow<'a> {
    status: &'a str,
    next_attempt_at: PrimitiveDateTime,
    claimed_until: Option<PrimitiveDateTime>,
    response_status: Option<i32>,
    response_body: Option<&'a str>,
    latency_ms: Option<i64>,
    last_error: Option<&'a str>,
    updated_at: PrimitiveDateTime,
}

impl TryFrom<WebhookRow> for Webhook {
    type Error = RepoError;
    fn try_from(r: WebhookRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("webhooks", r.id)?,
            organization_id: id("webhooks", r.organization_id)?,
            // A row made before URLs were sealed holds its full URL here: it is never shown.
            url: masked_url(&r.url),
            description: r.description,
            events: json("webhooks", &r.events)?,
            is_enabled: r.is_enabled,
            disabled_reason: r.disabled_reason,
            previous_secret_expires_at: optional_instant(r.previous_secret_expires_at),
            event_cursor: r.event_cursor,
            failing_since: optional_instant(r.failing_since),
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

impl DeliveryRow {
    fn new(d: &WebhookDelivery, ordinal: i64) -> Self {
        Self {
            id: d.id.to_string(),
            organization_id: d.organization_id.to_string(),
            webhook_id: d.webhook_id.to_string(),
            ordinal,
            event_type: d.event_type.clone(),
            event_seq: d.event_seq,
            payload: d.payload.clone(),
            status: d.status.as_str().to_owned(),
            attempts: i32::try_from(d.attempts).unwrap_or(i32::MAX),
            next_attempt_at: d.next_attempt_at.to_utc_naive(),
            claimed_until: optional_naive(d.claimed_until),
            response_status: d.response_status.map(i32::from),
            response_body: d.response_body.clone(),
            latency_ms: d.latency_ms,
            last_error: d.last_error.clone(),
            created_at: d.created_at.to_utc_naive(),
            updated_at: d.updated_at.to_utc_naive(),
        }
    }
}

impl TryFrom<DeliveryRow> for WebhookDelivery {
    type Error = RepoError;
    fn try_from(r: DeliveryRow) -> Result<Self, RepoError> {
        const TABLE: &str = "webhook_deliveries";
        Ok(Self {
            id: id(TABLE, r.id)?,
            organization_id: id(TABLE, r.organization_id)?,
            webhook_id: id(TABLE, r.webhook_id)?,
            ordinal: r.ordinal,
            event_type: r.event_type,
            event_seq: r.event_seq,
            payload: r.payload,
            status: value(TABLE, &r.status)?,
            attempts: u32::try_from(r.attempts).map_err(|e| corrupt(TABLE, e))?,
            next_attempt_at: instant(r.next_attempt_at),
            claimed_until: optional_instant(r.claimed_until),
            response_status: r.response_status.map(u16::try_from).transpose().map_err(|e| corrupt(TABLE, e))?,
            response_body: r.response_body,
            latency_ms: r.latency_ms,
            last_error: r.last_error,
            created_at: instant(r.created_at),
            updated_at: instant(r.updated_at),
        })
    }
}

#[async_trait]
impl WebhookRepository for Store {
    /// The endpoint's cursor starts at its own `webhook.created` entry: it receives what commits
    /// after it, not its own making.
    async fn insert(
        &self,
        webhook: &Webhook,
        sealed_secret: &[u8],
        sealed_url: &[u8],
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError> {
        let org = webhook.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let row = NewWebhookRow {
                id: webhook.id.as_str(),
                organization_id: org,
                url: &webhook.url,
                description: webhook.description.as_deref(),
                events: json_text(&webhook.events),
                is_enabled: webhook.is_enabled,
                secret: sealed_secret,
                sealed_url,
                event_cursor: webhook.event_cursor,
                next_ordinal: 1,
                created_at: webhook.created_at.to_utc_naive(),
                updated_at: webhook.updated_at.to_utc_naive(),
            };
            diesel::insert_into(webhooks::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(webhook))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn get(&self, org: &OrganizationId, id: &WebhookId) -> Result<Webhook, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: WebhookRow = db_run!(&mut conn, |c| {
            webhooks::table
                .filter(webhooks::organization_id.eq(org.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .select(WebhookRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn list(&self, org: &OrganizationId, page: &PageRequest) -> Result<Page<Webhook>, RepoError> {
        let org = org.to_string();
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<WebhookRow>, _) = read_page!(
            &mut conn,
            page,
            webhooks::table.into_boxed().filter(webhooks::organization_id.eq(org.clone())),
            WebhookRow::as_select(),
            newest_first(webhooks::created_at, webhooks::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Webhook::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, page, total, |w| Cursor::newest_first(w.created_at, w.id.to_string())))
    }

    async fn update(
        &self,
        webhook: &Webhook,
        previous: &Webhook,
        sealed_url: Option<&[u8]>,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError> {
        let changes = WebhookChangesRow {
            description: webhook.description.as_deref(),
            events: json_text(&webhook.events),
            is_enabled: webhook.is_enabled,
            disabled_reason: webhook.disabled_reason.as_deref(),
            updated_at: webhook.updated_at.to_utc_naive(),
        };
        // The failure streak is the worker's: a PATCH read it before the worker may have moved
        // it, so only a re-enable (which starts a new streak) writes it.
        let reenabled = (webhook.is_enabled && !previous.is_enabled).then(|| optional_naive(webhook.failing_since));
        let (org, id, seen) =
            (webhook.organization_id.as_str(), webhook.id.as_str(), previous.updated_at.to_utc_naive());
        let seen_enabled = previous.is_enabled;
        let mut conn = self.pools.write().await?;
        // The worker disabling the webhook meanwhile changes is_enabled without updated_at. A
        // swap that finds the row changed rolls back and writes no entry.
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let mine = webhooks::table.filter(webhooks::organization_id.eq(org)).filter(webhooks::id.eq(id));
            let updated = diesel::update(
                mine.filter(webhooks::updated_at.eq(seen)).filter(webhooks::is_enabled.eq(seen_enabled)),
            )
            .set(&changes)
            .execute(c)
            .await?;
            if updated == 0 {
                return Err(TxError::Repo(RepoError::NotFound));
            }
            if let Some(failing_since) = reenabled {
                diesel::update(mine).set(webhooks::failing_since.eq(failing_since)).execute(c).await?;
            }
            // The shown URL is written with its sealed one only: a row made before URLs were
            // sealed keeps its clear URL (which it is sent to) until it gets a new one.
            if let Some(sealed) = sealed_url {
                diesel::update(mine)
                    .set((webhooks::url.eq(webhook.url.as_str()), webhooks::sealed_url.eq(Some(sealed))))
                    .execute(c)
                    .await?;
            }
            c.append(audit(Some(previous), Some(webhook))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<Webhook, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let row: WebhookRow = webhooks::table
                .filter(webhooks::organization_id.eq(org.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .select(WebhookRow::as_select())
                .first(c)
                .await?;
            diesel::delete(webhook_deliveries::table.filter(webhook_deliveries::webhook_id.eq(id.as_str())))
                .execute(c)
                .await?;
            let deleted = Webhook::try_from(row)?;
            if_match.check(&deleted.etag())?;
            diesel::delete(webhooks::table.filter(webhooks::id.eq(id.as_str()))).execute(c).await?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(deleted)
        });
        result.map_err(RepoError::from)
    }

    async fn rotate_secret(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        sealed: &[u8],
        until: Timestamp,
        now: Timestamp,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError> {
        let (until, now) = (until.to_utc_naive(), now.to_utc_naive());
        let mut conn = self.pools.write().await?;
        let result: Result<Webhook, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let mine =
                webhooks::table.filter(webhooks::organization_id.eq(org.as_str())).filter(webhooks::id.eq(id.as_str()));
            let before: WebhookRow = mine.select(WebhookRow::as_select()).first(c).await?;
            // `previous_secret = secret` reads the value before the update: the current secret moves down.
            let after: WebhookRow = diesel::update(mine)
                .set((
                    webhooks::previous_secret.eq(webhooks::secret.nullable()),
                    webhooks::secret.eq(sealed),
                    webhooks::previous_secret_expires_at.eq(Some(until)),
                    webhooks::updated_at.eq(now),
                ))
                .returning(WebhookRow::as_returning())
                .get_result(c)
                .await?;
            let (before, after) = (Webhook::try_from(before)?, Webhook::try_from(after)?);
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(after)
        });
        result.map_err(RepoError::from)
    }

    async fn sealed_secrets(&self, org: &OrganizationId, id: &WebhookId) -> Result<SealedSecrets, RepoError> {
        let mut conn = self.pools.read().await?;
        type Sealed = (Vec<u8>, Option<Vec<u8>>, Option<PrimitiveDateTime>, Option<Vec<u8>>, String);
        let (current, previous, until, sealed_url, url): Sealed = db_run!(&mut conn, |c| {
            webhooks::table
                .filter(webhooks::organization_id.eq(org.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .select((
                    webhooks::secret,
                    webhooks::previous_secret,
                    webhooks::previous_secret_expires_at,
                    webhooks::sealed_url,
                    webhooks::url,
                ))
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        let previous = previous.zip(until).map(|(sealed, until)| (sealed, instant(until)));
        let url = sealed_url.map_or(SealedUrl::Clear(url), SealedUrl::Sealed);
        Ok(SealedSecrets { current, previous, url })
    }

    async fn enqueue(&self, delivery: &WebhookDelivery) -> Result<WebhookDelivery, RepoError> {
        let (org, webhook) = (delivery.organization_id.as_str(), delivery.webhook_id.as_str());
        let mut conn = self.pools.write().await?;
        // Taking the ordinal locks the webhook's row until the delivery is in: ordinals of one
        // webhook are handed out one at a time, as `advance` does.
        let ordinal: i64 = write_transaction!(&mut conn, async |c| {
            let next: i64 = diesel::update(
                webhooks::table.filter(webhooks::organization_id.eq(org)).filter(webhooks::id.eq(webhook)),
            )
            .set(webhooks::next_ordinal.eq(webhooks::next_ordinal + 1))
            .returning(webhooks::next_ordinal)
            .get_result(c)
            .await?;
            let ordinal = next - 1;
            diesel::insert_into(webhook_deliveries::table)
                .values(&DeliveryRow::new(delivery, ordinal))
                .execute(c)
                .await?;
            Ok::<_, DieselError>(ordinal)
        })
        .map_err(repo_error)?;
        Ok(WebhookDelivery { ordinal, ..delivery.clone() })
    }

    async fn deliveries(
        &self,
        org: &OrganizationId,
        webhook: &WebhookId,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, RepoError> {
        let (org, webhook) = (org.to_string(), webhook.to_string());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<DeliveryRow>, _) = read_page!(
            &mut conn,
            page,
            webhook_deliveries::table
                .into_boxed()
                .filter(webhook_deliveries::organization_id.eq(org.clone()))
                .filter(webhook_deliveries::webhook_id.eq(webhook.clone())),
            DeliveryRow::as_select(),
            newest_first(webhook_deliveries::created_at, webhook_deliveries::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(WebhookDelivery::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, page, total, |d| Cursor::newest_first(d.created_at, d.id.to_string())))
    }

    async fn retry_delivery(
        &self,
        org: &OrganizationId,
        webhook: &WebhookId,
        id: &WebhookDeliveryId,
        now: Timestamp,
    ) -> Result<WebhookDelivery, RepoError> {
        let now = now.to_utc_naive();
        let mut conn = self.pools.write().await?;
        let row: Option<DeliveryRow> = write_transaction!(&mut conn, async |c| {
            let mine = webhook_deliveries::table
                .filter(webhook_deliveries::organization_id.eq(org.as_str()))
                .filter(webhook_deliveries::webhook_id.eq(webhook.as_str()))
                .filter(webhook_deliveries::id.eq(id.as_str()));
            let status: String = mine.select(webhook_deliveries::status).first(c).await?;
            if status != SUCCEEDED && status != FAILED {
                return Ok::<_, DieselError>(None);
            }
            let row = diesel::update(mine.filter(webhook_deliveries::status.eq(status)))
                .set((
                    webhook_deliveries::status.eq(PENDING),
                    webhook_deliveries::attempts.eq(0),
                    webhook_deliveries::next_attempt_at.eq(now),
                    webhook_deliveries::updated_at.eq(now),
                ))
                .returning(DeliveryRow::as_returning())
                .get_result(c)
                .await
                .optional()?;
            Ok(row)
        })
        .map_err(repo_error)?;
        match row {
            Some(row) => row.try_into(),
            None => Err(RepoError::Conflict("the delivery is still pending or being sent".into())),
        }
    }

    async fn enabled(&self, after: Option<&WebhookId>, limit: usize) -> Result<Vec<Webhook>, RepoError> {
        let after = after.map_or("", |id| id.as_str());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<WebhookRow> = db_run!(&mut conn, |c| {
            webhooks::table
                .filter(webhooks::is_enabled)
                .filter(webhooks::id.gt(after))
                .order(webhooks::id.asc())
                .limit(limit)
                .select(WebhookRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Webhook::try_from).collect()
    }

    async fn advance(&self, webhook: &Webhook, to: i64, deliveries: &[WebhookDelivery]) -> Result<bool, RepoError> {
        let (org, id, from) = (webhook.organization_id.as_str(), webhook.id.as_str(), webhook.event_cursor);
        let count = i64::try_from(deliveries.len()).unwrap_or(i64::MAX);
        let mut conn = self.pools.write().await?;
        // The conditional update is the claim: of workers that read the same events, the first to
        // move the cursor queues them; the others update nothing and queue nothing.
        let advanced = write_transaction!(&mut conn, async |c| {
            let next: Option<i64> = diesel::update(
                webhooks::table
                    .filter(webhooks::organization_id.eq(org))
                    .filter(webhooks::id.eq(id))
                    .filter(webhooks::event_cursor.eq(from)),
            )
            .set((webhooks::event_cursor.eq(to), webhooks::next_ordinal.eq(webhooks::next_ordinal + count)))
            .returning(webhooks::next_ordinal)
            .get_result(c)
            .await
            .optional()?;
            let Some(next) = next else { return Ok::<_, DieselError>(false) };
            let first = next - count;
            // One statement per row: SQLite's batch insert is not available through diesel-async.
            for (delivery, ordinal) in deliveries.iter().zip(first..) {
                diesel::insert_into(webhook_deliveries::table)
                    .values(&DeliveryRow::new(delivery, ordinal))
                    .execute(c)
                    .await?;
            }
            Ok(true)
        })
        .map_err(repo_error)?;
        Ok(advanced)
    }

    async fn claim_due(
        &self,
        now: Timestamp,
        claimed_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<(WebhookDelivery, Webhook)>, RepoError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (now, until) = (now.to_utc_naive(), claimed_until.to_utc_naive());
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // On SQLite the claim's `UPDATE` takes the write lock, which every request's write waits
        // for, even when nothing is due; and each pass of the audit sequencer wakes the worker. So
        // SQLite reads first whether anything is due, and a pass with nothing due writes nothing.
        if let Pools::Sqlite { .. } = &self.pools
            && !anything_due(self.pools.read().await?.any(), now).await.map_err(repo_error)?
        {
            return Ok(Vec::new());
        }
        let claimed = claim_heads(self.pools.write().await?.any(), now, until, limit).await.map_err(repo_error)?;
        claimed.into_iter().map(|(delivery, webhook)| Ok((delivery.try_into()?, webhook.try_into()?))).collect()
    }

    async fn finish_attempt(&self, claimed: &WebhookDelivery, outcome: &AttemptOutcome) -> Result<bool, RepoError> {
        let Some(claim) = claimed.claimed_until.map(Timestamp::to_utc_naive) else { return Ok(false) };
        let row = OutcomeRow {
            status: outcome.status.as_str(),
            next_attempt_at: outcome.next_attempt_at.to_utc_naive(),
            claimed_until: None,
            response_status: outcome.response_status.map(i32::from),
            response_body: outcome.response_body.as_deref(),
            latency_ms: outcome.latency_ms,
            last_error: outcome.last_error.as_deref(),
            updated_at: outcome.at.to_utc_naive(),
        };
        let id = claimed.id.as_str();
        let mut conn = self.pools.write().await?;
        // One shape (`treat_none_as_null`): kept prepared, where diesel would prepare it anew
        let updated = db_run!(&mut conn, |c| {
            Prepared(
                diesel::update(
                    webhook_deliveries::table
                        .filter(webhook_deliveries::id.eq(id))
                        .filter(webhook_deliveries::status.eq(SENDING))
                        .filter(webhook_deliveries::claimed_until.eq(claim)),
                )
                .set(&row),
            )
            .execute(c)
            .await
        })
        .map_err(repo_error)?;
        Ok(updated > 0)
    }

    async fn note_result(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        succeeded: bool,
        at: Timestamp,
    ) -> Result<Option<Timestamp>, RepoError> {
        let at = at.to_utc_naive();
        let mut conn = self.pools.write().await?;
        let since: Option<PrimitiveDateTime> = write_transaction!(&mut conn, async |c| {
            let mine =
                webhooks::table.filter(webhooks::organization_id.eq(org.as_str())).filter(webhooks::id.eq(id.as_str()));
            if succeeded {
                diesel::update(mine).set(webhooks::failing_since.eq(None::<PrimitiveDateTime>)).execute(c).await?;
                return Ok::<_, DieselError>(None);
            }
            diesel::update(mine.filter(webhooks::failing_since.is_null()))
                .set(webhooks::failing_since.eq(Some(at)))
                .execute(c)
                .await?;
            mine.select(webhooks::failing_since).first(c).await
        })
        .map_err(repo_error)?;
        Ok(optional_instant(since))
    }

    /// Nothing found enabled rolls back: no entry.
    async fn disable(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        reason: &str,
        at: Timestamp,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<bool, RepoError> {
        let at = at.to_utc_naive();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let enabled = webhooks::table
                .filter(webhooks::organization_id.eq(org.as_str()))
                .filter(webhooks::id.eq(id.as_str()))
                .filter(webhooks::is_enabled);
            let before: Option<WebhookRow> = enabled.select(WebhookRow::as_select()).first(c).await.optional()?;
            let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
            let after: WebhookRow = diesel::update(enabled)
                .set((
                    webhooks::is_enabled.eq(false),
                    webhooks::disabled_reason.eq(Some(reason)),
                    webhooks::updated_at.eq(at),
                ))
                .returning(WebhookRow::as_returning())
                .get_result(c)
                .await?;
            let (before, after) = (Webhook::try_from(before)?, Webhook::try_from(after)?);
            c.append(audit(Some(&before), Some(&after))).await?;
            Ok(())
        });
        match result.map_err(RepoError::from) {
            Ok(()) => Ok(true),
            Err(RepoError::NotFound) => Ok(false),
            Err(other) => Err(other),
        }
    }
}

/// Whether any queue head is due ([`anything_due`]).
#[derive(QueryableByName)]
struct Due {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    due: bool,
}

/// The head of each enabled webhook's queue (its lowest unfinished ordinal) when it is due
/// (pending and its time has come, or sending under a claim that ran out), soonest due first, at
/// most `limit`: a `SELECT` of `webhook_id` and `ordinal`, with `now` as parameter 1 and `limit`
/// as parameter 2, in `conn`'s dialect.
///
/// It seeks each webhook's head in the open deliveries' partial index, whatever the number of
/// queued deliveries; its predicate is written as the index's own, so that the index serves it.
/// Plainer forms read every open delivery (or every delivery) per claim, 4–10 ms with 16,000
/// queued: heads first, then `webhook_id = ANY(…) AND ordinal = ANY(…)`; a join on the head
/// ordinal, which PostgreSQL hashed over all open deliveries and SQLite drove from the deliveries
/// side. So PostgreSQL takes each head with a `LATERAL … LIMIT 1`, and SQLite (which has no
/// `LATERAL`) finds the head's ordinal by subquery and the row by the (webhook, ordinal) key,
/// webhooks first (`CROSS JOIN` keeps SQLite's join order).
fn heads_sql(conn: &ConnRef<'_>) -> String {
    match conn {
        ConnRef::Pg(_) => format!(
            "SELECT d.webhook_id, d.ordinal FROM webhooks w CROSS JOIN LATERAL ( \
                 SELECT o.webhook_id, o.ordinal, o.status, o.next_attempt_at, o.claimed_until \
                 FROM webhook_deliveries o \
                 WHERE o.webhook_id = w.id AND o.status IN ('pending', 'sending') \
                 ORDER BY o.ordinal LIMIT 1) d \
             WHERE w.is_enabled AND {} ORDER BY d.next_attempt_at LIMIT $2",
            due_sql("d", "$1")
        ),
        ConnRef::Sqlite(_) => format!(
            "SELECT d.webhook_id, d.ordinal FROM webhooks w CROSS JOIN webhook_deliveries d \
             WHERE w.is_enabled AND d.webhook_id = w.id AND d.ordinal = ( \
                 SELECT min(o.ordinal) FROM webhook_deliveries o \
                 WHERE o.webhook_id = w.id AND o.status IN ('pending', 'sending')) \
               AND {} ORDER BY d.next_attempt_at LIMIT ?2",
            due_sql("d", "?1")
        ),
    }
}

/// Whether the delivery `row` is due at `now` (both SQL names): pending and its time has come, or
/// sending under a claim that ran out.
fn due_sql(row: &str, now: &str) -> String {
    format!(
        "(({row}.status = 'pending' AND {row}.next_attempt_at <= {now}) \
          OR ({row}.status = 'sending' AND {row}.claimed_until < {now}))"
    )
}

/// Whether any queue head is due ([`heads_sql`]): a read.
async fn anything_due(conn: ConnRef<'_>, now: PrimitiveDateTime) -> QueryResult<bool> {
    use diesel::sql_types::{BigInt, Timestamp};
    let query = format!("SELECT EXISTS ({}) AS due", heads_sql(&conn));
    let due = diesel::sql_query(query).bind::<Timestamp, _>(now).bind::<BigInt, _>(1);
    db_run!(conn, |c| Prepared(due).get_result::<Due>(c).await).map(|row| row.due)
}

/// Claims up to `limit` due heads ([`heads_sql`]) until `until`, in one `UPDATE … FROM (heads)
/// … RETURNING`, and reads their webhooks. A head that another worker claims or finishes while
/// this statement runs is skipped, not claimed twice: its row lock makes this statement wait,
/// and PostgreSQL then checks the `WHERE` again on the row as the other left it, where it is no
/// longer due (SQLite's writes take turns). One statement, where a claim was a read of the heads
/// and then an `UPDATE` per head in a transaction: with two instances both read the same heads,
/// and 4 of 10 of those updates found their head taken.
async fn claim_heads(
    conn: ConnRef<'_>,
    now: PrimitiveDateTime,
    until: PrimitiveDateTime,
    limit: i64,
) -> QueryResult<Vec<(DeliveryRow, WebhookRow)>> {
    use diesel::sql_types::{BigInt, Timestamp};
    // The head is due when read; checked again on the row as the statement finds it locked.
    let claim = |now: &str, until: &str, returning: &str| {
        format!(
            "UPDATE webhook_deliveries AS q \
             SET status = 'sending', claimed_until = {until}, attempts = attempts + 1, updated_at = {now} \
             FROM ({heads}) AS h \
             WHERE q.webhook_id = h.webhook_id AND q.ordinal = h.ordinal AND {due} \
             RETURNING {returning}",
            heads = heads_sql(&conn),
            due = due_sql("q", now),
        )
    };
    let query = match &conn {
        ConnRef::Pg(_) => claim("$1", "$3", "q.*"),
        // SQLite's RETURNING names the table's columns only
        ConnRef::Sqlite(_) => claim("?1", "?3", "*"),
    };
    let claim = diesel::sql_query(query).bind::<Timestamp, _>(now).bind::<BigInt, _>(limit).bind::<Timestamp, _>(until);
    db_run!(conn, |c| {
        let claimed: Vec<DeliveryRow> = Prepared(claim).load(c).await?;
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = claimed.iter().map(|row| row.webhook_id.as_str()).collect();
        let hooks: Vec<WebhookRow> =
            webhooks::table.filter(webhooks::id.eq_any(ids)).select(WebhookRow::as_select()).load(c).await?;
        let mut hooks: HashMap<String, WebhookRow> = hooks.into_iter().map(|hook| (hook.id.clone(), hook)).collect();
        // A webhook deleted since the claim took its deliveries with it.
        Ok(claimed
            .into_iter()
            .filter_map(|row| {
                let hook = hooks.remove(&row.webhook_id)?;
                Some((row, hook))
            })
            .collect())
    })
}

/// The webhook feed is the audit trail: its sealed entries in `seq` order, with the resource as
/// `data`.
#[async_trait]
impl EventFeed for Store {
    async fn after(&self, org: &OrganizationId, after: i64, limit: usize) -> Result<Vec<FeedEvent>, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<(i64, String, String, PrimitiveDateTime, Option<String>)> = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::organization_id.eq(org.as_str()))
                .filter(audit_entries::seq.gt(after))
                .order(audit_entries::seq.asc())
                .limit(limit)
                .select((
                    audit_entries::seq.assume_not_null(),
                    audit_entries::action,
                    audit_entries::resource_id,
                    audit_entries::created_at,
                    audit_entries::data,
                ))
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        Ok(rows
            .into_iter()
            .map(|(seq, action, resource_id, created_at, data)| FeedEvent {
                seq,
                action,
                resource_id,
                created_at: instant(created_at),
                data: data.unwrap_or_else(|| "null".to_owned()),
            })
            .collect())
    }

    async fn last_seq(&self, org: &OrganizationId) -> Result<i64, RepoError> {
        let mut conn = self.pools.read().await?;
        let seq: Option<i64> = db_run!(&mut conn, |c| {
            audit_tree_heads::table
                .filter(audit_tree_heads::organization_id.eq(org.as_str()))
                .select(audit_tree_heads::tree_size)
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        Ok(seq.unwrap_or(0))
    }
}
