//! `Idempotency-Key` reservations on both backends ([`IdempotencyRepository`]), and
//! [`mark_applied`], which an audited write runs in its own transaction.

use async_trait::async_trait;
use compliance_domain::audit::AuditDraft;
use compliance_domain::idempotency::IdempotencyClaim;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{IdempotencyRepository, NewReservation, Outcome, RepoError, Reservation, StoredResponse};
use diesel::prelude::*;
use diesel::result::{Error as DieselError, QueryResult};
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::db::{ConnRef, db_run, write_transaction};
use crate::error::repo_error;
use crate::rows::{instant, naive};
use crate::schema::idempotency_keys;

/// The error an audited write fails with when its request's claim was taken over (see
/// [`mark_applied`]); `repo_error` answers it as a conflict.
pub(crate) const CLAIM_LOST: &str = "idempotency claim lost";

/// How often [`IdempotencyRepository::reserve_idempotency_key`] inserts again when the
/// reservation it collided with was deleted before it could be read.
const INSERT_TRIES: usize = 3;

/// Marks the reservation of `claim` applied, naming the record the change's entry names, inside
/// the change's transaction (the audit entry's `append` calls it), so the key and the change
/// commit together. Fails the transaction, so nothing is changed, when a retry took the
/// reservation over after its lease ran out: that retry runs the change instead. A request that
/// writes several entries marks it with the first.
pub(crate) async fn mark_applied(conn: ConnRef<'_>, claim: &IdempotencyClaim, draft: &AuditDraft) -> QueryResult<()> {
    let held = idempotency_keys::table
        .filter(idempotency_keys::id.eq(&claim.id))
        .filter(idempotency_keys::organization_id.eq(draft.organization_id.as_str()))
        .filter(idempotency_keys::attempt.eq(claim.attempt));
    db_run!(conn, |c| {
        let marked = diesel::update(held.filter(idempotency_keys::applied_at.is_null()))
            .set((
                idempotency_keys::applied_at.eq(Some(naive(draft.created_at))),
                idempotency_keys::resource_type.eq(Some(&draft.resource_type)),
                idempotency_keys::resource_id.eq(Some(&draft.resource_id)),
            ))
            .execute(c)
            .await?;
        if marked == 0 && held.count().get_result::<i64>(c).await? == 0 {
            return Err(DieselError::QueryBuilderError(CLAIM_LOST.into()));
        }
        Ok(())
    })
}

#[async_trait]
impl IdempotencyRepository for Store {
    async fn reserve_idempotency_key(
        &self,
        new: &NewReservation,
        now: Timestamp,
    ) -> Result<Option<Reservation>, RepoError> {
        let row = KeyRow::reserved(new);
        let mut conn = self.pools.write().await?;
        for _ in 0..INSERT_TRIES {
            // One short transaction: an expired reservation of the same scope goes, this one is
            // inserted unless the scope is taken, else the one holding it is read.
            let found: Result<Option<Option<KeyRow>>, DieselError> = write_transaction!(&mut conn, async |c| {
                let scope = idempotency_keys::table
                    .filter(idempotency_keys::organization_id.eq(&row.organization_id))
                    .filter(idempotency_keys::caller.eq(&row.caller))
                    .filter(idempotency_keys::idempotency_key.eq(&row.idempotency_key))
                    .filter(idempotency_keys::route.eq(&row.route));
                diesel::delete(scope.filter(idempotency_keys::expires_at.le(naive(now)))).execute(c).await?;
                let inserted = diesel::insert_into(idempotency_keys::table)
                    .values(&row)
                    .on_conflict_do_nothing()
                    .execute(c)
                    .await?;
                if inserted == 1 {
                    return Ok(None);
                }
                let existing = scope.select(KeyRow::as_select()).first(c).await.optional()?;
                Ok(Some(existing))
            });
            match found.map_err(repo_error)? {
                None => return Ok(None),
                Some(Some(existing)) => return Ok(Some(existing.into())),
                // Released between the insert and the read: try again.
                Some(None) => {}
            }
        }
        Err(RepoError::Conflict("the Idempotency-Key is being reserved and released by other requests; retry".into()))
    }

    async fn take_over_idempotency_key(
        &self,
        org: &OrganizationId,
        id: &str,
        attempt: i64,
        locked_until: Timestamp,
    ) -> Result<Option<IdempotencyClaim>, RepoError> {
        let mut conn = self.pools.write().await?;
        let taken: Option<i64> = db_run!(&mut conn, |c| {
            let unapplied = idempotency_keys::table
                .filter(idempotency_keys::id.eq(id))
                .filter(idempotency_keys::organization_id.eq(org.as_str()))
                .filter(idempotency_keys::attempt.eq(attempt))
                .filter(idempotency_keys::applied_at.is_null())
                .filter(idempotency_keys::response_status.is_null());
            diesel::update(unapplied)
                .set((
                    idempotency_keys::attempt.eq(attempt + 1),
                    idempotency_keys::locked_until.eq(naive(locked_until)),
                ))
                .returning(idempotency_keys::attempt)
                .get_result(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        Ok(taken.map(|attempt| IdempotencyClaim { id: id.to_owned(), attempt }))
    }

    async fn finish_idempotency_key(
        &self,
        org: &OrganizationId,
        claim: &IdempotencyClaim,
        outcome: &Outcome,
    ) -> Result<(), RepoError> {
        let (status, content_type, location, etag, body, withheld) = match outcome {
            Outcome::Keep(response) => (
                response.status,
                response.content_type.clone(),
                response.location.clone(),
                response.etag.clone(),
                Some(response.body.clone()),
                false,
            ),
            Outcome::Withheld { status } => (*status, None, None, None, None, true),
        };
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            let held = idempotency_keys::table
                .filter(idempotency_keys::id.eq(&claim.id))
                .filter(idempotency_keys::organization_id.eq(org.as_str()))
                .filter(idempotency_keys::attempt.eq(claim.attempt));
            diesel::update(held)
                .set((
                    idempotency_keys::response_status.eq(Some(i32::from(status))),
                    idempotency_keys::response_content_type.eq(&content_type),
                    idempotency_keys::response_location.eq(&location),
                    idempotency_keys::response_etag.eq(&etag),
                    idempotency_keys::response_body.eq(&body),
                    idempotency_keys::response_withheld.eq(withheld),
                ))
                .execute(c)
                .await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn release_idempotency_key(&self, org: &OrganizationId, claim: &IdempotencyClaim) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            let unapplied = idempotency_keys::table
                .filter(idempotency_keys::id.eq(&claim.id))
                .filter(idempotency_keys::organization_id.eq(org.as_str()))
                .filter(idempotency_keys::attempt.eq(claim.attempt))
                .filter(idempotency_keys::applied_at.is_null());
            diesel::delete(unapplied).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn prune_idempotency_keys(&self, now: Timestamp) -> Result<u64, RepoError> {
        let mut conn = self.pools.write().await?;
        let deleted = db_run!(&mut conn, |c| {
            diesel::delete(idempotency_keys::table.filter(idempotency_keys::expires_at.le(naive(now)))).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(u64::try_from(deleted).unwrap_or_default())
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = idempotency_keys)]
struct KeyRow {
    id: String,
    organization_id: String,
    caller: String,
    idempotency_key: String,
    route: String,
    fingerprint: String,
    attempt: i64,
    locked_until: PrimitiveDateTime,
    applied_at: Option<PrimitiveDateTime>,
    resource_type: Option<String>,
    resource_id: Option<String>,
    response_status: Option<i32>,
    response_content_type: Option<String>,
    response_location: Option<String>,
    response_etag: Option<String>,
    response_body: Option<Vec<u8>>,
    response_withheld: bool,
    created_at: PrimitiveDateTime,
    expires_at: PrimitiveDateTime,
}

impl KeyRow {
    fn reserved(new: &NewReservation) -> Self {
        Self {
            id: new.id.clone(),
            organization_id: new.organization_id.to_string(),
            caller: new.caller.clone(),
            idempotency_key: new.key.clone(),
            route: new.route.clone(),
            fingerprint: new.fingerprint.clone(),
            attempt: 0,
            locked_until: naive(new.locked_until),
            applied_at: None,
            resource_type: None,
            resource_id: None,
            response_status: None,
            response_content_type: None,
            response_location: None,
            response_etag: None,
            response_body: None,
            response_withheld: false,
            created_at: naive(new.created_at),
            expires_at: naive(new.expires_at),
        }
    }
}

impl From<KeyRow> for Reservation {
    fn from(row: KeyRow) -> Self {
        let response = match (row.response_status.and_then(|s| u16::try_from(s).ok()), row.response_body) {
            (Some(status), Some(body)) => Some(StoredResponse {
                status,
                content_type: row.response_content_type,
                location: row.response_location,
                etag: row.response_etag,
                body,
            }),
            _ => None,
        };
        Self {
            id: row.id,
            fingerprint: row.fingerprint,
            attempt: row.attempt,
            locked_until: instant(row.locked_until),
            applied_at: row.applied_at.map(instant),
            resource: row.resource_type.zip(row.resource_id),
            response,
            withheld: row.response_withheld,
        }
    }
}
