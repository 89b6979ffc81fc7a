//! The credential vault's storage: ciphertexts, OAuth states and refresh leases.

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, OAuthStateRecord, OAuthStateRepository, RefreshLeases, RepoError, SecretRepository, StoredSecret,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, corrupt, repo_error};
use crate::locks::lock_organization;
use crate::schema::{oauth_states, refresh_leases, vault_secrets};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = vault_secrets)]
struct SecretRow {
    organization_id: String,
    owner_kind: String,
    owner_id: String,
    key_id: String,
    ciphertext: Vec<u8>,
    updated_at: PrimitiveDateTime,
}

impl From<&StoredSecret> for SecretRow {
    fn from(s: &StoredSecret) -> Self {
        Self {
            organization_id: s.organization_id.to_string(),
            owner_kind: s.owner_kind.clone(),
            owner_id: s.owner_id.clone(),
            key_id: s.key_id.clone(),
            ciphertext: s.ciphertext.clone(),
            updated_at: s.updated_at.to_utc_naive(),
        }
    }
}

impl TryFrom<SecretRow> for StoredSecret {
    type Error = RepoError;
    fn try_from(r: SecretRow) -> Result<Self, RepoError> {
        Ok(Self {
            organization_id: OrganizationId::parse(&r.organization_id).map_err(|e| corrupt("vault_secrets", e))?,
            owner_kind: r.owner_kind,
            owner_id: r.owner_id,
            key_id: r.key_id,
            ciphertext: r.ciphertext,
            updated_at: Timestamp::from_utc_naive(r.updated_at),
        })
    }
}

#[async_trait]
impl SecretRepository for Store {
    async fn put(&self, secret: &StoredSecret) -> Result<(), RepoError> {
        let row = SecretRow::from(secret);
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            diesel::insert_into(vault_secrets::table)
                .values(&row)
                .on_conflict((vault_secrets::organization_id, vault_secrets::owner_kind, vault_secrets::owner_id))
                .do_update()
                .set((
                    vault_secrets::key_id.eq(&row.key_id),
                    vault_secrets::ciphertext.eq(&row.ciphertext),
                    vault_secrets::updated_at.eq(row.updated_at),
                ))
                .execute(c)
                .await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn get(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        owner_id: &str,
    ) -> Result<Option<StoredSecret>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<SecretRow> = db_run!(&mut conn, |c| {
            vault_secrets::table
                .find((org.as_str(), owner_kind, owner_id))
                .select(SecretRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(StoredSecret::try_from).transpose()
    }

    async fn owner_ids(&self, org: &OrganizationId, owner_kind: &str) -> Result<Vec<String>, RepoError> {
        let mut conn = self.pools.read().await?;
        db_run!(&mut conn, |c| {
            vault_secrets::table
                .filter(vault_secrets::organization_id.eq(org.as_str()))
                .filter(vault_secrets::owner_kind.eq(owner_kind))
                .order(vault_secrets::owner_id.asc())
                .select(vault_secrets::owner_id)
                .load(c)
                .await
        })
        .map_err(repo_error)
    }

    async fn children(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        parent: &str,
    ) -> Result<Vec<StoredSecret>, RepoError> {
        let pattern = children_pattern(parent);
        let mut conn = self.pools.read().await?;
        let rows: Vec<SecretRow> = db_run!(&mut conn, |c| {
            vault_secrets::table
                .filter(vault_secrets::organization_id.eq(org.as_str()))
                .filter(vault_secrets::owner_kind.eq(owner_kind))
                .filter(vault_secrets::owner_id.like(&pattern).escape('\\'))
                .order(vault_secrets::owner_id.asc())
                .select(SecretRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        // SQLite's LIKE ignores ASCII case; the exact prefix is checked here.
        let prefix = format!("{parent}/");
        rows.into_iter().filter(|row| row.owner_id.starts_with(&prefix)).map(StoredSecret::try_from).collect()
    }

    async fn delete(&self, org: &OrganizationId, owner_kind: &str, owner_id: &str) -> Result<bool, RepoError> {
        let mut conn = self.pools.write().await?;
        let deleted = db_run!(&mut conn, |c| {
            diesel::delete(vault_secrets::table.find((org.as_str(), owner_kind, owner_id))).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(deleted > 0)
    }

    async fn put_audited(
        &self,
        secret: &StoredSecret,
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<(), RepoError> {
        let row = SecretRow::from(secret);
        let org = secret.organization_id.as_str();
        let the_secret = || vault_secrets::table.find((org, secret.owner_kind.as_str(), secret.owner_id.as_str()));
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let before: Option<SecretRow> = the_secret().select(SecretRow::as_select()).first(c).await.optional()?;
            let before = before.map(StoredSecret::try_from).transpose()?;
            if_match.check_existing(before.as_ref().map(StoredSecret::etag).as_ref())?;
            diesel::insert_into(vault_secrets::table)
                .values(&row)
                .on_conflict((vault_secrets::organization_id, vault_secrets::owner_kind, vault_secrets::owner_id))
                .do_update()
                .set((
                    vault_secrets::key_id.eq(&row.key_id),
                    vault_secrets::ciphertext.eq(&row.ciphertext),
                    vault_secrets::updated_at.eq(row.updated_at),
                ))
                .execute(c)
                .await?;
            c.append(audit(before.as_ref(), Some(secret))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn delete_audited(
        &self,
        org: &OrganizationId,
        owner_kind: &str,
        owner_id: &str,
        if_match: &IfMatch,
        audit: &AuditOf<'_, StoredSecret>,
    ) -> Result<bool, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<bool, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let deleted: Option<SecretRow> =
                diesel::delete(vault_secrets::table.find((org.as_str(), owner_kind, owner_id)))
                    .returning(SecretRow::as_returning())
                    .get_result(c)
                    .await
                    .optional()?;
            // Nothing deleted: roll back (NotFound below), with no entry.
            let Some(deleted) = deleted else { return Err(TxError::Repo(RepoError::NotFound)) };
            let deleted = StoredSecret::try_from(deleted)?;
            // The deleted row is the secret as it was: a stale `If-Match` rolls the delete back.
            if_match.check(&deleted.etag())?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(true)
        });
        match result.map_err(RepoError::from) {
            Err(RepoError::NotFound) => Ok(false),
            other => other,
        }
    }

    async fn count_stale(&self, current_key: &str) -> Result<u64, RepoError> {
        let mut conn = self.pools.read().await?;
        let count: i64 = db_run!(&mut conn, |c| {
            vault_secrets::table.filter(vault_secrets::key_id.ne(current_key)).count().get_result(c).await
        })
        .map_err(repo_error)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    async fn stale(&self, current_key: &str, limit: usize) -> Result<Vec<StoredSecret>, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<SecretRow> = db_run!(&mut conn, |c| {
            vault_secrets::table
                .filter(vault_secrets::key_id.ne(current_key))
                .order((vault_secrets::updated_at.asc(), vault_secrets::owner_id.asc()))
                .limit(limit)
                .select(SecretRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(StoredSecret::try_from).collect()
    }

    async fn reencrypt(&self, secret: &StoredSecret, previous: &[u8]) -> Result<bool, RepoError> {
        let row = SecretRow::from(secret);
        let mut conn = self.pools.write().await?;
        let replaced = db_run!(&mut conn, |c| {
            diesel::update(
                vault_secrets::table
                    .find((row.organization_id.as_str(), row.owner_kind.as_str(), row.owner_id.as_str()))
                    .filter(vault_secrets::ciphertext.eq(previous)),
            )
            // `updated_at` stays: the value is the same, only its key changed (so does its tag).
            .set((vault_secrets::key_id.eq(&row.key_id), vault_secrets::ciphertext.eq(&row.ciphertext)))
            .execute(c)
            .await
        })
        .map_err(repo_error)?;
        Ok(replaced > 0)
    }
}

/// A LIKE pattern (escape `\\`) matching the owner ids `{parent}/…`. LIKE compares characters
/// whatever the collation, where a range of text would follow PostgreSQL's locale.
pub(crate) fn children_pattern(parent: &str) -> String {
    let mut pattern = String::with_capacity(parent.len() + 2);
    for c in parent.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push_str("/%");
    pattern
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = oauth_states)]
struct StateRow {
    state_hash: String,
    organization_id: String,
    user_id: String,
    provider: String,
    redirect_url: Option<String>,
    created_at: PrimitiveDateTime,
    expires_at: PrimitiveDateTime,
    pkce_verifier: Option<Vec<u8>>,
}

impl StateRow {
    fn record(self) -> Result<OAuthStateRecord, RepoError> {
        let bad = |e| corrupt("oauth_states", e);
        Ok(OAuthStateRecord {
            state_hash: self.state_hash,
            organization_id: OrganizationId::parse(&self.organization_id).map_err(bad)?,
            user_id: compliance_domain::UserId::parse(&self.user_id).map_err(bad)?,
            provider: self.provider,
            redirect_url: self.redirect_url,
            created_at: Timestamp::from_utc_naive(self.created_at),
            expires_at: Timestamp::from_utc_naive(self.expires_at),
            sealed_pkce_verifier: self.pkce_verifier,
        })
    }
}

#[async_trait]
impl OAuthStateRepository for Store {
    async fn insert(&self, state: &OAuthStateRecord) -> Result<(), RepoError> {
        let row = StateRow {
            state_hash: state.state_hash.clone(),
            organization_id: state.organization_id.to_string(),
            user_id: state.user_id.to_string(),
            provider: state.provider.clone(),
            redirect_url: state.redirect_url.clone(),
            created_at: state.created_at.to_utc_naive(),
            expires_at: state.expires_at.to_utc_naive(),
            pkce_verifier: state.sealed_pkce_verifier.clone(),
        };
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| diesel::insert_into(oauth_states::table).values(&row).execute(c).await)
            .map_err(repo_error)?;
        Ok(())
    }

    async fn find(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<StateRow> = db_run!(&mut conn, |c| {
            oauth_states::table.find(state_hash).select(StateRow::as_select()).first(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(StateRow::record).transpose()
    }

    async fn take(
        &self,
        state_hash: &str,
        org: &OrganizationId,
        user: &compliance_domain::UserId,
    ) -> Result<Option<OAuthStateRecord>, RepoError> {
        let mut conn = self.pools.write().await?;
        // DELETE … RETURNING: of two racing callers, only one gets the row; another user none.
        let row: Option<StateRow> = db_run!(&mut conn, |c| {
            let started_by_them = oauth_states::table
                .filter(oauth_states::state_hash.eq(state_hash))
                .filter(oauth_states::organization_id.eq(org.as_str()))
                .filter(oauth_states::user_id.eq(user.as_str()));
            diesel::delete(started_by_them).returning(StateRow::as_returning()).get_result(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(StateRow::record).transpose()
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, RepoError> {
        let now = now.to_utc_naive();
        let mut conn = self.pools.write().await?;
        let purged = db_run!(&mut conn, |c| {
            diesel::delete(oauth_states::table.filter(oauth_states::expires_at.lt(now))).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(u64::try_from(purged).unwrap_or(0))
    }
}

#[async_trait]
impl RefreshLeases for Store {
    async fn acquire(&self, key: &str, holder: &str, now: Timestamp, until: Timestamp) -> Result<bool, RepoError> {
        let (now, until) = (now.to_utc_naive(), until.to_utc_naive());
        let mut conn = self.pools.write().await?;
        // Take over a lapsed or own lease, else create it; a lease held by someone else stays.
        // Two statements suffice: a racing insert makes ours do nothing, which is the answer.
        let taken = db_run!(&mut conn, |c| {
            async {
                let updated = diesel::update(
                    refresh_leases::table
                        .find(key)
                        .filter(refresh_leases::expires_at.lt(now).or(refresh_leases::holder.eq(holder))),
                )
                .set((refresh_leases::holder.eq(holder), refresh_leases::expires_at.eq(until)))
                .execute(c)
                .await?;
                if updated > 0 {
                    return Ok(updated);
                }
                diesel::insert_into(refresh_leases::table)
                    .values((
                        refresh_leases::lease_key.eq(key),
                        refresh_leases::holder.eq(holder),
                        refresh_leases::expires_at.eq(until),
                    ))
                    .on_conflict_do_nothing()
                    .execute(c)
                    .await
            }
            .await
        })
        .map_err(repo_error)?;
        Ok(taken > 0)
    }

    async fn release(&self, key: &str, holder: &str) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            diesel::delete(refresh_leases::table.find(key).filter(refresh_leases::holder.eq(holder))).execute(c).await
        })
        .map_err(repo_error)?;
        Ok(())
    }
}
