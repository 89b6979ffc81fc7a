//! The audit trail: the [`AuditRepository`] on both backends, and [`AuditChain`], which every
//! audited write uses inside its own transaction.
//!
//! An audited transaction starts with [`AuditChain::lock_head`]: the upsert of the organization's
//! chain head takes the next `seq` and holds the head row's lock until commit (PostgreSQL's row
//! lock; SQLite has one writer). So the audited writes of one organization run one after the
//! other, on every instance: `seq` has no gap and follows commit order, each entry follows the
//! previous one's hash, and the record read "before" the change is the one the change replaces.

use async_trait::async_trait;
use compliance_domain::audit::{Actor, ActorType, AuditDraft, AuditEntry, GENESIS_HASH};
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{AuditCheckpoint, AuditFilter, AuditRepository, Cursor, Page, PageRequest, RepoError};
use diesel::prelude::*;
use diesel::result::QueryResult;
use diesel_async::{AsyncConnection, RunQueryDsl};
use time::PrimitiveDateTime;

use crate::Store;
use crate::db::{AnyConnection, ConnRef, db_run};
use crate::error::{TxError, corrupt, repo_error};
use crate::evidence::record_evidence;
use crate::idempotency::mark_applied;
use crate::paging::{newest_first, read_page};
use crate::rows::{id, instant, json, json_text, naive, optional_id};
use crate::schema::{audit_chain_heads, audit_checkpoints, audit_entries};

/// The places the next entries of an organization take: the first one's `seq`, how many were
/// reserved, and the hash the first follows.
pub(crate) struct Head {
    seq: i64,
    reserved: i64,
    prev_hash: String,
}

impl Head {
    /// The `seq` the (first) entry appended at this place gets.
    pub(crate) fn seq(&self) -> i64 {
        self.seq
    }
}

/// The most rows one multi-row `INSERT` of the store writes (on PostgreSQL): 1,000 rows of the
/// widest table it inserts so (16 columns) bind 16,000 parameters, under the 65,535 a statement
/// may bind.
pub(crate) const INSERT_CHUNK: usize = 1_000;

/// The two steps of an audited write, on either backend's connection, inside its transaction:
/// [`lock_head`](AuditChain::lock_head) first, then the change, then
/// [`append`](AuditChain::append) with the entry made from what the change read and wrote
/// (which also marks the request's `Idempotency-Key` applied, see [`mark_applied`], and records
/// the evidence the change proves, see [`record_evidence`]). A write of many records (a bulk
/// request) reserves their places at once with [`lock_head_for`](AuditChain::lock_head_for) and
/// appends their entries together with [`append_many`](AuditChain::append_many): one statement
/// for all the entries (on PostgreSQL; SQLite, which pays no round trips, inserts them one by
/// one) and one update of the head, instead of a head update each.
///
/// Written once for both connection types: each step's statements are a `db_run!` body over the
/// connection the transaction holds ([`AnyConnection`]), and code generic over the connection
/// (the bulk writes) names this trait.
pub(crate) trait AuditChain: AnyConnection {
    /// Reserves the places of `entries` entries (at least one) and holds the head's lock until
    /// commit: `INSERT … ON CONFLICT DO UPDATE SET seq = seq + entries RETURNING seq, hash`, the
    /// last reserved `seq` and the hash the first entry follows.
    fn lock_head_for(&mut self, org: &str, entries: i64) -> impl Future<Output = QueryResult<Head>> + Send {
        async move {
            let (last, prev_hash) = db_run!(self.any(), |c| {
                diesel::insert_into(audit_chain_heads::table)
                    .values((
                        audit_chain_heads::organization_id.eq(org),
                        audit_chain_heads::seq.eq(entries),
                        audit_chain_heads::hash.eq(GENESIS_HASH),
                    ))
                    .on_conflict(audit_chain_heads::organization_id)
                    .do_update()
                    .set(audit_chain_heads::seq.eq(audit_chain_heads::seq + entries))
                    .returning((audit_chain_heads::seq, audit_chain_heads::hash))
                    .get_result::<(i64, String)>(c)
                    .await
            })?;
            Ok(Head { seq: last - entries + 1, reserved: entries, prev_hash })
        }
    }

    /// The place of one entry.
    fn lock_head(&mut self, org: &str) -> impl Future<Output = QueryResult<Head>> + Send {
        self.lock_head_for(org, 1)
    }

    /// Appends the one entry `head` was reserved for.
    fn append(&mut self, head: Head, draft: AuditDraft) -> impl Future<Output = QueryResult<AuditEntry>> + Send {
        async move {
            let mut entries = self.append_many(head, vec![draft]).await?;
            entries.pop().ok_or_else(|| diesel::result::Error::QueryBuilderError(RESERVED_OTHERWISE.into()))
        }
    }

    /// Appends `drafts` in order at the places `head` reserved (exactly as many): chained one to
    /// the next, inserted in as few statements as [`INSERT_CHUNK`] allows, each with the evidence
    /// it proves, the request's `Idempotency-Key` marked applied by the first that carries it.
    fn append_many(
        &mut self,
        head: Head,
        drafts: Vec<AuditDraft>,
    ) -> impl Future<Output = QueryResult<Vec<AuditEntry>>> + Send {
        async move {
            if i64::try_from(drafts.len()).ok() != Some(head.reserved) {
                return Err(diesel::result::Error::QueryBuilderError(RESERVED_OTHERWISE.into()));
            }
            if let Some(claimed) = drafts.iter().find(|draft| draft.idempotency.is_some())
                && let Some(claim) = &claimed.idempotency
            {
                mark_applied(self.any(), claim, claimed).await?;
            }
            let (mut seq, mut prev_hash) = (head.seq, head.prev_hash);
            let mut entries = Vec::with_capacity(drafts.len());
            for draft in drafts {
                let entry = draft.chained(seq, prev_hash);
                (seq, prev_hash) = (seq + 1, entry.hash.clone());
                entries.push(entry);
            }
            for chunk in entries.chunks(INSERT_CHUNK) {
                insert_entries(self.any(), &chunk.iter().map(AuditRow::from).collect::<Vec<_>>()).await?;
            }
            // What each change proves for the controls linked to its record, in its transaction.
            for entry in &entries {
                record_evidence(self.any(), &entry.draft).await?;
            }
            if let Some(last) = entries.last() {
                let this_head = audit_chain_heads::table.find(last.draft.organization_id.as_str());
                db_run!(self.any(), |c| {
                    diesel::update(this_head).set(audit_chain_heads::hash.eq(&last.hash)).execute(c).await
                })?;
            }
            Ok(entries)
        }
    }
}

impl<C: AnyConnection> AuditChain for C {}

/// A write appended another number of entries than it reserved places for (a bug: the chain's
/// `seq` would have a gap); the transaction rolls back.
const RESERVED_OTHERWISE: &str = "an audited write appended another number of entries than it reserved";

/// Inserts the entries' rows (at most [`INSERT_CHUNK`]): in one statement on PostgreSQL, one
/// statement a row on SQLite (diesel builds no multi-row INSERT for SQLite through diesel-async,
/// and in-process SQLite pays no round trip per statement).
async fn insert_entries(conn: ConnRef<'_>, rows: &[AuditRow]) -> QueryResult<()> {
    match conn {
        ConnRef::Pg(c) => diesel::insert_into(audit_entries::table).values(rows).execute(c).await.map(drop),
        ConnRef::Sqlite(c) => {
            for row in rows {
                diesel::insert_into(audit_entries::table).values(row).execute(c).await?;
            }
            Ok(())
        }
    }
}

#[async_trait]
impl AuditRepository for Store {
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEntry, RepoError> {
        let org = draft.organization_id.to_string();
        let mut conn = self.pools.write().await?;
        db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let head = c.lock_head(&org).await?;
                c.append(head, draft.clone()).await
            })
            .await
        })
        .map_err(repo_error)
    }

    async fn list_audit(
        &self,
        org: &OrganizationId,
        filter: &AuditFilter,
        page: &PageRequest,
    ) -> Result<Page<AuditEntry>, RepoError> {
        let (org, filter) = (org.to_string(), filter.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<AuditRow>, _) = read_page!(
            &mut conn,
            page,
            {
                let mut query =
                    audit_entries::table.filter(audit_entries::organization_id.eq(org.clone())).into_boxed();
                if let Some(resource_type) = filter.resource_type.clone() {
                    query = query.filter(audit_entries::resource_type.eq(resource_type));
                }
                if let Some(resource_id) = filter.resource_id.clone() {
                    query = query.filter(audit_entries::resource_id.eq(resource_id));
                }
                if let Some(actor_id) = filter.actor_id.clone() {
                    query = query.filter(audit_entries::actor_id.eq(actor_id));
                }
                if let Some(prefix) = filter.action_prefix.clone() {
                    query = query.filter(audit_entries::action.like(like_prefix(&prefix)).escape('\\'));
                }
                if let Some(after) = filter.created_after {
                    query = query.filter(audit_entries::created_at.ge(naive(after)));
                }
                if let Some(before) = filter.created_before {
                    query = query.filter(audit_entries::created_at.lt(naive(before)));
                }
                query
            },
            AuditRow::as_select(),
            newest_first(audit_entries::created_at, audit_entries::id),
            None,
        )
        .map_err(repo_error)?;
        let entries = rows.into_iter().map(AuditEntry::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(entries, page, total, |e| Cursor::newest_first(e.draft.created_at, e.draft.id.to_string())))
    }

    async fn entries_after(
        &self,
        org: &OrganizationId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<AuditRow> = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::organization_id.eq(org.as_str()))
                .filter(audit_entries::seq.gt(after_seq))
                .order(audit_entries::seq.asc())
                .limit(limit)
                .select(AuditRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(AuditEntry::try_from).collect()
    }

    async fn audit_head(&self, org: &OrganizationId) -> Result<Option<(i64, String)>, RepoError> {
        let mut conn = self.pools.read().await?;
        db_run!(&mut conn, |c| {
            audit_chain_heads::table
                .find(org.as_str())
                .select((audit_chain_heads::seq, audit_chain_heads::hash))
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)
    }

    async fn audit_checkpoint(&self, org: &OrganizationId) -> Result<Option<AuditCheckpoint>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<CheckpointRow> = db_run!(&mut conn, |c| {
            audit_checkpoints::table.find(org.as_str()).select(CheckpointRow::as_select()).first(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(AuditCheckpoint::try_from).transpose()
    }

    async fn organizations_with_entries_before(&self, before: Timestamp) -> Result<Vec<OrganizationId>, RepoError> {
        let mut conn = self.pools.read().await?;
        let ids: Vec<String> = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::created_at.lt(naive(before)))
                .select(audit_entries::organization_id)
                .distinct()
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        ids.into_iter().map(|text| id("audit_entries", text)).collect()
    }

    async fn prune_audit(
        &self,
        org: &OrganizationId,
        before: Timestamp,
        now: Timestamp,
        sign: &(dyn for<'c> Fn(&'c AuditCheckpoint) -> String + Send + Sync),
    ) -> Result<u64, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<u64, TxError> = db_run!(&mut conn, |c| {
            c.transaction(async |c| {
                let of_org = audit_entries::organization_id.eq(org.as_str());
                let last: Option<AuditRow> = audit_entries::table
                    .filter(of_org)
                    .filter(audit_entries::created_at.lt(naive(before)))
                    .order(audit_entries::seq.desc())
                    .select(AuditRow::as_select())
                    .first(c)
                    .await
                    .optional()?;
                let Some(last) = last else { return Ok(0) };
                let mut checkpoint = AuditCheckpoint {
                    organization_id: org.clone(),
                    through_seq: last.seq,
                    through_hash: last.hash.clone(),
                    created_at: now,
                    signature: String::new(),
                };
                checkpoint.signature = sign(&checkpoint);
                let row = CheckpointRow::from(&checkpoint);
                diesel::insert_into(audit_checkpoints::table)
                    .values(&row)
                    .on_conflict(audit_checkpoints::organization_id)
                    .do_update()
                    .set(&row)
                    .execute(c)
                    .await?;
                let pruned = audit_entries::table.filter(of_org).filter(audit_entries::seq.le(last.seq));
                let deleted = diesel::delete(pruned).execute(c).await?;
                Ok(u64::try_from(deleted).unwrap_or_default())
            })
            .await
        });
        result.map_err(RepoError::from)
    }
}

/// `LIKE 'prefix%'` with the prefix's own `%`, `_` and `\` taken literally.
fn like_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for ch in prefix.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(ch);
    }
    pattern.push('%');
    pattern
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_entries)]
pub(crate) struct AuditRow {
    id: String,
    organization_id: String,
    seq: i64,
    actor_type: String,
    actor_id: String,
    actor_email: Option<String>,
    actor_api_key_id: Option<String>,
    action: String,
    resource_type: String,
    resource_id: String,
    changes: String,
    data: Option<String>,
    request_id: Option<String>,
    created_at: PrimitiveDateTime,
    prev_hash: String,
    hash: String,
}

impl From<&AuditEntry> for AuditRow {
    fn from(entry: &AuditEntry) -> Self {
        let d = &entry.draft;
        Self {
            id: d.id.to_string(),
            organization_id: d.organization_id.to_string(),
            seq: entry.seq,
            actor_type: d.actor.actor_type.as_str().to_owned(),
            actor_id: d.actor.id.clone(),
            actor_email: d.actor.email.clone(),
            actor_api_key_id: d.actor.api_key_id.as_ref().map(ToString::to_string),
            action: d.action.clone(),
            resource_type: d.resource_type.clone(),
            resource_id: d.resource_id.clone(),
            changes: json_text(&d.changes),
            data: d.data.as_ref().map(json_text),
            request_id: d.request_id.clone(),
            created_at: naive(d.created_at),
            prev_hash: entry.prev_hash.clone(),
            hash: entry.hash.clone(),
        }
    }
}

impl TryFrom<AuditRow> for AuditEntry {
    type Error = RepoError;
    fn try_from(r: AuditRow) -> Result<Self, RepoError> {
        const T: &str = "audit_entries";
        let actor_type = ActorType::parse(&r.actor_type).ok_or_else(|| corrupt(T, "unknown actor type"))?;
        let draft = AuditDraft {
            id: id(T, r.id)?,
            organization_id: id(T, r.organization_id)?,
            actor: Actor {
                actor_type,
                id: r.actor_id,
                email: r.actor_email,
                api_key_id: optional_id(T, r.actor_api_key_id)?,
            },
            action: r.action,
            resource_type: r.resource_type,
            resource_id: r.resource_id,
            changes: json(T, &r.changes)?,
            data: r.data.map(|text| json(T, &text)).transpose()?,
            request_id: r.request_id,
            created_at: instant(r.created_at),
            idempotency: None,
            evidence: None,
        };
        Ok(AuditEntry { draft, seq: r.seq, prev_hash: r.prev_hash, hash: r.hash })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = audit_checkpoints)]
struct CheckpointRow {
    organization_id: String,
    through_seq: i64,
    through_hash: String,
    created_at: PrimitiveDateTime,
    signature: String,
}

impl From<&AuditCheckpoint> for CheckpointRow {
    fn from(c: &AuditCheckpoint) -> Self {
        Self {
            organization_id: c.organization_id.to_string(),
            through_seq: c.through_seq,
            through_hash: c.through_hash.clone(),
            created_at: naive(c.created_at),
            signature: c.signature.clone(),
        }
    }
}

impl TryFrom<CheckpointRow> for AuditCheckpoint {
    type Error = RepoError;
    fn try_from(r: CheckpointRow) -> Result<Self, RepoError> {
        Ok(Self {
            organization_id: id("audit_checkpoints", r.organization_id)?,
            through_seq: r.through_seq,
            through_hash: r.through_hash,
            created_at: instant(r.created_at),
            signature: r.signature,
        })
    }
}
