//! The audit log: [`AuditQueue`], which every audited write uses inside its own transaction, and
//! the [`AuditRepository`] on both backends, whose [`seal_queued`](AuditRepository::seal_queued)
//! is the sequencer's step.
//!
//! A write queues its entry (`seq` and `hash` NULL) in its transaction and touches no shared row,
//! so the writes of one organization do not wait for each other. The sequencer then takes queued
//! entries oldest first, gives each its organization's next `seq` and leaf hash, stores the
//! large perfect subtrees the new leaves complete (`audit_tree_nodes`, see [`crate::audit_tree`]),
//! and replaces the organization's signed tree head, all in one transaction under the head's row
//! lock.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use compliance_domain::audit::{Actor, ActorType, AuditDraft, AuditEntry, JsonText, Seal, TreeHead, entry_leaf};
use compliance_domain::merkle::{Frontier, Hash, NodeId, from_hex, to_hex};
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{
    AuditFilter, AuditRepository, Clock, Cursor, Page, PageRequest, RepoError, SealedBatch, SignTreeHead,
};
use diesel::prelude::*;
use diesel::result::QueryResult;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit_tree::{NodeRow, keep_pruned_leaves, stored, subtree_hashes};
use crate::db::{AnyConnection, ConnRef, db_run, write_transaction};
use crate::error::{TxError, corrupt, repo_error};
use crate::evidence::record_evidence;
use crate::idempotency::mark_applied;
use crate::paging::{newest_first, read_page};
use crate::prepared::{INSERT_CHUNK, Prepared, insert_rows};
use crate::rows::{id, instant, naive, optional_id};
use crate::schema::{audit_checkpoints, audit_entries, audit_tree_heads, audit_tree_nodes};

/// The audit step of a write, on either backend's connection, inside its transaction: after the
/// change, [`append`](AuditQueue::append) queues the entry made from what the change read and
/// wrote (and marks the request's `Idempotency-Key` applied, see [`mark_applied`], and records
/// the evidence the change proves, see [`record_evidence`]). A write of many records (a bulk
/// request) queues their entries together with [`append_many`](AuditQueue::append_many).
///
/// Nothing here is shared between writes: a record changed after being read is locked first
/// ([`crate::locks::Locked`]), and the entry's `seq` is given later, by the sequencer.
pub(crate) trait AuditQueue: AnyConnection {
    /// Queues one entry.
    fn append(&mut self, draft: AuditDraft) -> impl Future<Output = QueryResult<AuditEntry>> + Send {
        async move {
            let mut entries = self.append_many(vec![draft]).await?;
            entries.pop().ok_or(diesel::result::Error::NotFound)
        }
    }

    /// Queues `drafts` in order, inserted in as few statements as [`INSERT_CHUNK`] allows, each
    /// with the evidence it proves, the request's `Idempotency-Key` marked applied by the first
    /// that carries it.
    fn append_many(&mut self, drafts: Vec<AuditDraft>) -> impl Future<Output = QueryResult<Vec<AuditEntry>>> + Send {
        async move {
            if let Some(claimed) = drafts.iter().find(|draft| draft.idempotency.is_some())
                && let Some(claim) = &claimed.idempotency
            {
                mark_applied(self.any(), claim, claimed).await?;
            }
            for chunk in drafts.chunks(INSERT_CHUNK) {
                insert_entries(self.any(), &chunk.iter().map(AuditRow::queued).collect::<Vec<_>>()).await?;
            }
            // What each change proves for the controls linked to its record, in its transaction.
            for draft in &drafts {
                record_evidence(self.any(), draft).await?;
            }
            Ok(drafts.into_iter().map(AuditDraft::queued).collect())
        }
    }
}

impl<C: AnyConnection> AuditQueue for C {}

async fn insert_entries(conn: ConnRef<'_>, rows: &[AuditRow]) -> QueryResult<()> {
    insert_rows!(conn, audit_entries::table, rows)
}

async fn insert_nodes(conn: ConnRef<'_>, rows: &[NodeRow]) -> QueryResult<()> {
    insert_rows!(conn, audit_tree_nodes::table, rows)
}

/// Gives queued entries their `seq` and leaf hash, sealed at `now`: one `UPDATE … FROM unnest(…)`
/// on PostgreSQL, one statement an entry on SQLite. Only entries still queued are sealed; how
/// many were. Not kept prepared, on purpose: kept so, the seal delay's p99 rose from 8 ms to
/// hundreds (docs/performance.md, "What PostgreSQL alone does with a request's statements").
async fn mark_sealed(conn: ConnRef<'_>, sealed: &[(String, i64, String)], now: Timestamp) -> QueryResult<usize> {
    match conn {
        ConnRef::Pg(c) => {
            use diesel::sql_types::{Array, BigInt, Text, Timestamp as SqlTimestamp};
            let ids: Vec<&str> = sealed.iter().map(|(id, _, _)| id.as_str()).collect();
            let seqs: Vec<i64> = sealed.iter().map(|(_, seq, _)| *seq).collect();
            let hashes: Vec<&str> = sealed.iter().map(|(_, _, hash)| hash.as_str()).collect();
            diesel::sql_query(
                "UPDATE audit_entries AS e SET seq = v.seq, hash = v.hash, sealed_at = $4 \
                 FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v(id, seq, hash) \
                 WHERE e.id = v.id AND e.seq IS NULL",
            )
            .bind::<Array<Text>, _>(ids)
            .bind::<Array<BigInt>, _>(seqs)
            .bind::<Array<Text>, _>(hashes)
            .bind::<SqlTimestamp, _>(naive(now))
            .execute(c)
            .await
        }
        ConnRef::Sqlite(c) => {
            let mut updated = 0;
            for (id, seq, hash) in sealed {
                let queued = audit_entries::table.filter(audit_entries::id.eq(id)).filter(audit_entries::seq.is_null());
                updated += diesel::update(queued)
                    .set((
                        audit_entries::seq.eq(seq),
                        audit_entries::hash.eq(hash),
                        audit_entries::sealed_at.eq(naive(now)),
                    ))
                    .execute(c)
                    .await?;
            }
            Ok(updated)
        }
    }
}

/// The organization's tree head, locked until the transaction ends on PostgreSQL (SQLite has one
/// writer): the sequencer's hold on the organization's tree while it appends.
async fn lock_tree_head(conn: ConnRef<'_>, org: &str) -> QueryResult<Option<TreeHeadRow>> {
    let this = audit_tree_heads::table.find(org);
    match conn {
        ConnRef::Pg(c) => this.select(TreeHeadRow::as_select()).for_update().first(c).await.optional(),
        ConnRef::Sqlite(c) => this.select(TreeHeadRow::as_select()).first(c).await.optional(),
    }
}

/// Appends one organization's queued entries (in queue order) to its tree, inside the
/// sequencer's transaction; the organization whose tree grew.
async fn seal_organization(
    conn: &mut (impl AnyConnection + ?Sized),
    org: &str,
    rows: Vec<AuditRow>,
    now: Timestamp,
    sign: &SignTreeHead<'_>,
) -> Result<OrganizationId, TxError> {
    let organization_id: OrganizationId = id("audit_entries", org.to_owned())?;
    let mut frontier = match lock_tree_head(conn.any(), org).await? {
        Some(row) => TreeHead::try_from(row)?.frontier,
        None => Frontier::default(),
    };
    let (mut sealed, mut nodes) = (Vec::with_capacity(rows.len()), Vec::with_capacity(rows.len() * 2));
    for row in rows {
        let entry = AuditEntry::try_from(row)?;
        let seq = i64::try_from(frontier.size()).unwrap_or(i64::MAX) + 1;
        let leaf = entry_leaf(&entry.draft, seq);
        for (node, hash) in frontier.push(leaf).into_iter().filter(|(node, _)| stored(*node)) {
            nodes.push(NodeRow::new(org, node, &hash));
        }
        sealed.push((entry.draft.id.to_string(), seq, to_hex(&leaf)));
    }
    if mark_sealed(conn.any(), &sealed, now).await? != sealed.len() {
        // Another sequencer sealed some of them first (its lease ran out under it): this batch
        // rolls back, and the next pass starts from the tree as it now is.
        return Err(RepoError::Conflict("the audit log was sealed by another sequencer".into()).into());
    }
    insert_nodes(conn.any(), &nodes).await?;
    let mut head =
        TreeHead { organization_id, frontier, signed_at: now, key_id: String::new(), signature: String::new() };
    sign(&mut head);
    let row = TreeHeadRow::from(&head);
    db_run!(conn.any(), |c| {
        let replace_head = diesel::insert_into(audit_tree_heads::table)
            .values(&row)
            .on_conflict(audit_tree_heads::organization_id)
            .do_update()
            .set(&row);
        Prepared(replace_head).execute(c).await
    })?;
    Ok(head.organization_id)
}

#[async_trait]
impl AuditRepository for Store {
    async fn append_audit(&self, draft: &AuditDraft) -> Result<AuditEntry, RepoError> {
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| { c.append(draft.clone()).await }).map_err(repo_error)
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

    async fn sealed_entry(&self, org: &OrganizationId, seq: i64) -> Result<Option<AuditEntry>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<AuditRow> = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::organization_id.eq(org.as_str()))
                .filter(audit_entries::seq.eq(seq))
                .select(AuditRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(AuditEntry::try_from).transpose()
    }

    async fn unsealed(&self, org: &OrganizationId) -> Result<Option<(i64, i64)>, RepoError> {
        let mut conn = self.pools.read().await?;
        let (first, last): (Option<i64>, Option<i64>) = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::organization_id.eq(org.as_str()))
                .filter(audit_entries::seq.is_null())
                .select((diesel::dsl::min(audit_entries::queued), diesel::dsl::max(audit_entries::queued)))
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        Ok(first.zip(last))
    }

    async fn seal_queued(
        &self,
        limit: usize,
        clock: &dyn Clock,
        sign: &SignTreeHead<'_>,
    ) -> Result<SealedBatch, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.write().await?;
        let result: Result<SealedBatch, TxError> = write_transaction!(&mut conn, async |c| {
            let rows: Vec<AuditRow> = audit_entries::table
                .filter(audit_entries::seq.is_null())
                .order(audit_entries::queued.asc())
                .limit(limit)
                .select(AuditRow::as_select())
                .load(c)
                .await?;
            let entries = rows.len();
            let now = clock.now();
            let mut by_org: BTreeMap<String, Vec<AuditRow>> = BTreeMap::new();
            for row in rows {
                by_org.entry(row.organization_id.clone()).or_default().push(row);
            }
            let mut organizations = Vec::with_capacity(by_org.len());
            // In id order, so that two sequencers (a lease run out) lock heads in one order.
            for (org, rows) in by_org {
                organizations.push(seal_organization(c, &org, rows, now, sign).await?);
            }
            Ok(SealedBatch { entries, organizations })
        });
        result.map_err(RepoError::from)
    }

    async fn tree_head(&self, org: &OrganizationId) -> Result<Option<TreeHead>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<TreeHeadRow> = db_run!(&mut conn, |c| {
            audit_tree_heads::table.find(org.as_str()).select(TreeHeadRow::as_select()).first(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(TreeHead::try_from).transpose()
    }

    async fn resign_tree_heads(&self, key_id: &str, sign: &SignTreeHead<'_>) -> Result<u64, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<u64, TxError> = write_transaction!(&mut conn, async |c| {
            let stale: Vec<TreeHeadRow> = audit_tree_heads::table
                .filter(audit_tree_heads::key_id.ne(key_id))
                .select(TreeHeadRow::as_select())
                .load(c)
                .await?;
            let mut resigned = 0;
            for row in stale {
                let mut head = TreeHead::try_from(row)?;
                sign(&mut head);
                let row = TreeHeadRow::from(&head);
                diesel::update(audit_tree_heads::table.find(&row.organization_id)).set(&row).execute(c).await?;
                resigned += 1;
            }
            Ok(resigned)
        });
        result.map_err(RepoError::from)
    }

    async fn tree_nodes(&self, org: &OrganizationId, nodes: &[NodeId]) -> Result<HashMap<NodeId, Hash>, RepoError> {
        if nodes.is_empty() {
            return Ok(HashMap::new());
        }
        let mut conn = self.pools.read().await?;
        Ok(subtree_hashes(ConnRef::from(&mut conn), org.as_str(), nodes).await?)
    }

    async fn audit_checkpoint(&self, org: &OrganizationId) -> Result<Option<TreeHead>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<CheckpointRow> = db_run!(&mut conn, |c| {
            audit_checkpoints::table.find(org.as_str()).select(CheckpointRow::as_select()).first(c).await.optional()
        })
        .map_err(repo_error)?;
        row.map(|row| TreeHead::try_from(TreeHeadRow::from(row))).transpose()
    }

    async fn organizations_with_entries_before(&self, before: Timestamp) -> Result<Vec<OrganizationId>, RepoError> {
        let mut conn = self.pools.read().await?;
        let ids: Vec<String> = db_run!(&mut conn, |c| {
            audit_entries::table
                .filter(audit_entries::created_at.lt(naive(before)))
                .filter(audit_entries::seq.is_not_null())
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
        sign: &SignTreeHead<'_>,
    ) -> Result<u64, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<u64, TxError> = write_transaction!(&mut conn, async |c| {
            let of_org = audit_entries::organization_id.eq(org.as_str());
            // Under the tree head's lock, so the sequencer does not append meanwhile.
            if lock_tree_head(c.any(), org.as_str()).await?.is_none() {
                return Ok(0);
            }
            let last: Option<i64> = audit_entries::table
                .filter(of_org)
                .filter(audit_entries::created_at.lt(naive(before)))
                .select(diesel::dsl::max(audit_entries::seq))
                .first(c)
                .await?;
            let Some(through) = last else { return Ok(0) };
            let size = u64::try_from(through).unwrap_or_default();
            // The pruned leaves' hashes stay, for the small subtrees of the pruned prefix.
            keep_pruned_leaves(c.any(), org.as_str(), through).await?;
            // The frontier of the pruned prefix: its perfect subtrees.
            let wanted = compliance_domain::merkle::cover(0, size);
            let found = subtree_hashes(c.any(), org.as_str(), &wanted).await?;
            let hashes = wanted.iter().map(|node| found.get(node).copied()).collect::<Option<Vec<Hash>>>();
            let hashes =
                hashes.ok_or_else(|| corrupt("audit_tree_nodes", "a subtree of the pruned prefix is missing"))?;
            let frontier = Frontier::new(size, hashes).ok_or_else(|| corrupt("audit_tree_nodes", "frontier"))?;
            let mut checkpoint = TreeHead {
                organization_id: org.clone(),
                frontier,
                signed_at: now,
                key_id: String::new(),
                signature: String::new(),
            };
            sign(&mut checkpoint);
            let row = CheckpointRow::from(TreeHeadRow::from(&checkpoint));
            diesel::insert_into(audit_checkpoints::table)
                .values(&row)
                .on_conflict(audit_checkpoints::organization_id)
                .do_update()
                .set(&row)
                .execute(c)
                .await?;
            let pruned = audit_entries::table.filter(of_org).filter(audit_entries::seq.le(through));
            let deleted = diesel::delete(pruned).execute(c).await?;
            Ok(u64::try_from(deleted).unwrap_or_default())
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
    seq: Option<i64>,
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
    hash: Option<String>,
}

impl AuditRow {
    /// The row of an entry as its change's transaction writes it: queued, not sealed.
    fn queued(d: &AuditDraft) -> Self {
        Self {
            id: d.id.to_string(),
            organization_id: d.organization_id.to_string(),
            seq: None,
            actor_type: d.actor.actor_type.as_str().to_owned(),
            actor_id: d.actor.id.clone(),
            actor_email: d.actor.email.clone(),
            actor_api_key_id: d.actor.api_key_id.as_ref().map(ToString::to_string),
            action: d.action.clone(),
            resource_type: d.resource_type.clone(),
            resource_id: d.resource_id.clone(),
            changes: d.changes.get().to_owned(),
            data: d.data.as_ref().map(|data| data.get().to_owned()),
            request_id: d.request_id.clone(),
            created_at: naive(d.created_at),
            hash: None,
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
            changes: JsonText::parse(r.changes).map_err(|error| corrupt(T, error))?,
            data: r.data.map(JsonText::parse).transpose().map_err(|error| corrupt(T, error))?,
            request_id: r.request_id,
            created_at: instant(r.created_at),
            idempotency: None,
            evidence: None,
        };
        let seal = match (r.seq, r.hash) {
            (Some(seq), Some(hash)) => Some(Seal { seq, hash }),
            (None, None) => None,
            _ => return Err(corrupt(T, "seq and hash are set together")),
        };
        Ok(AuditEntry { draft, seal })
    }
}

/// A tree head's columns, for the latest head (`audit_tree_heads`).
#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = audit_tree_heads)]
struct TreeHeadRow {
    organization_id: String,
    tree_size: i64,
    root_hash: String,
    frontier: String,
    signed_at: PrimitiveDateTime,
    key_id: String,
    signature: String,
}

/// The same columns, for the head of a pruned prefix (`audit_checkpoints`).
#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = audit_checkpoints)]
struct CheckpointRow {
    organization_id: String,
    tree_size: i64,
    root_hash: String,
    frontier: String,
    signed_at: PrimitiveDateTime,
    key_id: String,
    signature: String,
}

impl From<TreeHeadRow> for CheckpointRow {
    fn from(r: TreeHeadRow) -> Self {
        let TreeHeadRow { organization_id, tree_size, root_hash, frontier, signed_at, key_id, signature } = r;
        Self { organization_id, tree_size, root_hash, frontier, signed_at, key_id, signature }
    }
}

impl From<CheckpointRow> for TreeHeadRow {
    fn from(r: CheckpointRow) -> Self {
        let CheckpointRow { organization_id, tree_size, root_hash, frontier, signed_at, key_id, signature } = r;
        Self { organization_id, tree_size, root_hash, frontier, signed_at, key_id, signature }
    }
}

impl From<&TreeHead> for TreeHeadRow {
    fn from(head: &TreeHead) -> Self {
        Self {
            organization_id: head.organization_id.to_string(),
            tree_size: i64::try_from(head.size()).unwrap_or(i64::MAX),
            root_hash: to_hex(&head.root()),
            frontier: head.frontier.hashes().iter().map(to_hex).collect::<Vec<_>>().join(" "),
            signed_at: naive(head.signed_at),
            key_id: head.key_id.clone(),
            signature: head.signature.clone(),
        }
    }
}

impl TryFrom<TreeHeadRow> for TreeHead {
    type Error = RepoError;
    fn try_from(r: TreeHeadRow) -> Result<Self, RepoError> {
        const T: &str = "audit_tree_heads";
        let hashes = r.frontier.split_whitespace().map(from_hex).collect::<Option<Vec<Hash>>>();
        let size = u64::try_from(r.tree_size).ok();
        let frontier = size
            .zip(hashes)
            .and_then(|(size, hashes)| Frontier::new(size, hashes))
            .ok_or_else(|| corrupt(T, "frontier does not fit the tree size"))?;
        // `root_hash` is the frontier's root, kept for people reading the table; the signature
        // covers the root the frontier gives, so an edit of either fails verification.
        Ok(Self {
            organization_id: id(T, r.organization_id)?,
            frontier,
            signed_at: instant(r.signed_at),
            key_id: r.key_id,
            signature: r.signature,
        })
    }
}
