//! Where the audit log's Merkle tree keeps its hashes: a leaf's hash in its entry's `hash`
//! column, and the perfect subtrees of [`STORED_LEVEL`] and above in `audit_tree_nodes`. The
//! smaller subtrees a proof needs are folded from their leaves when asked for.
//!
//! Storing every subtree took two node rows per entry (the leaf again, and on average one node
//! above it), written by the sequencer on every seal; from level 4 it is one row per eight
//! entries, and a proof folds at most 15 leaves per small subtree it needs. When pruning deletes
//! entries, their leaf hashes move to `audit_tree_nodes` as level 0, so the small subtrees of the
//! pruned prefix can still be folded (a consistency proof from an old tree needs them).

use std::collections::{BTreeSet, HashMap};

use compliance_domain::merkle::{Frontier, Hash, NodeId, from_hex, to_hex};
use diesel::prelude::*;
use diesel::result::QueryResult;
use diesel_async::RunQueryDsl;

use crate::db::{ConnRef, db_run};
use crate::error::{TxError, corrupt};
use crate::schema::{audit_entries, audit_tree_nodes};

/// The lowest level of the subtrees the sequencer stores: 16 leaves.
pub(crate) const STORED_LEVEL: u32 = 4;

/// Whether the sequencer stores this completed subtree.
pub(crate) fn stored(node: NodeId) -> bool {
    node.level >= STORED_LEVEL
}

/// The hashes of these perfect subtrees of `org`'s tree, those it has: stored nodes in one read,
/// the smaller ones folded from their leaves (entries' hashes, then pruned leaves) in two more.
pub(crate) async fn subtree_hashes(
    mut conn: ConnRef<'_>,
    org: &str,
    nodes: &[NodeId],
) -> Result<HashMap<NodeId, Hash>, TxError> {
    let (kept, folded): (Vec<NodeId>, Vec<NodeId>) = nodes.iter().partition(|node| stored(**node));
    let mut found = read_nodes(conn.reborrow(), org, &kept).await?;
    let leaves: BTreeSet<u64> = folded.iter().flat_map(|node| leaves_of(*node)).collect();
    let leaf_hashes = read_leaves(conn, org, &leaves).await?;
    for node in folded {
        let mut subtree = Frontier::default();
        for leaf in leaves_of(node) {
            let Some(hash) = leaf_hashes.get(&leaf) else { break };
            subtree.push(*hash);
        }
        // A leaf missing (not sealed yet) leaves the subtree out, as a stored node not there yet.
        if subtree.size() == 1 << node.level {
            found.insert(node, subtree.root());
        }
    }
    Ok(found)
}

/// Moves the leaf hashes of `org`'s entries up to `through` (which pruning is about to delete) to
/// `audit_tree_nodes` as level 0. One `INSERT … SELECT`; a leaf already there stays.
pub(crate) async fn keep_pruned_leaves(conn: ConnRef<'_>, org: &str, through: i64) -> QueryResult<()> {
    use diesel::sql_types::{BigInt, Text};
    let insert = |placeholder: fn(usize) -> String| {
        format!(
            "INSERT INTO audit_tree_nodes (organization_id, level, idx, hash) \
             SELECT organization_id, 0, seq - 1, hash FROM audit_entries \
             WHERE organization_id = {} AND seq IS NOT NULL AND seq <= {} \
             ON CONFLICT DO NOTHING",
            placeholder(1),
            placeholder(2)
        )
    };
    match conn {
        ConnRef::Pg(c) => {
            diesel::sql_query(insert(|n| format!("${n}")))
                .bind::<Text, _>(org)
                .bind::<BigInt, _>(through)
                .execute(c)
                .await?
        }
        ConnRef::Sqlite(c) => {
            diesel::sql_query(insert(|_| "?".to_owned()))
                .bind::<Text, _>(org)
                .bind::<BigInt, _>(through)
                .execute(c)
                .await?
        }
    };
    Ok(())
}

/// The leaves (0-based) under `node`.
fn leaves_of(node: NodeId) -> std::ops::Range<u64> {
    let first = node.index << node.level;
    first..first + (1 << node.level)
}

async fn read_nodes(conn: ConnRef<'_>, org: &str, nodes: &[NodeId]) -> Result<HashMap<NodeId, Hash>, TxError> {
    if nodes.is_empty() {
        return Ok(HashMap::new());
    }
    // A proof asks for a few dozen nodes at most: one statement for all of them, by index
    // (other levels' nodes of the same indexes come along and are dropped).
    let indexes: Vec<i64> = nodes.iter().map(|node| i64::try_from(node.index).unwrap_or(i64::MAX)).collect();
    let rows: Vec<NodeRow> = db_run!(conn, |c| {
        audit_tree_nodes::table
            .filter(audit_tree_nodes::organization_id.eq(org))
            .filter(audit_tree_nodes::idx.eq_any(&indexes))
            .filter(audit_tree_nodes::level.ge(STORED_LEVEL as i32))
            .select(NodeRow::as_select())
            .load(c)
            .await
    })?;
    let wanted: BTreeSet<&NodeId> = nodes.iter().collect();
    let mut found = HashMap::with_capacity(nodes.len());
    for row in rows {
        let (node, hash) = row.parsed()?;
        if wanted.contains(&node) {
            found.insert(node, hash);
        }
    }
    Ok(found)
}

/// The hashes of these leaves (0-based): a sealed entry's `hash`, or the level-0 node its pruning
/// left.
async fn read_leaves(mut conn: ConnRef<'_>, org: &str, leaves: &BTreeSet<u64>) -> Result<HashMap<u64, Hash>, TxError> {
    if leaves.is_empty() {
        return Ok(HashMap::new());
    }
    let seqs: Vec<i64> = leaves.iter().map(|leaf| i64::try_from(*leaf).unwrap_or(i64::MAX - 1) + 1).collect();
    let sealed: Vec<(Option<i64>, Option<String>)> = db_run!(conn.reborrow(), |c| {
        audit_entries::table
            .filter(audit_entries::organization_id.eq(org))
            .filter(audit_entries::seq.eq_any(&seqs))
            .select((audit_entries::seq, audit_entries::hash))
            .load(c)
            .await
    })?;
    let mut found = HashMap::with_capacity(leaves.len());
    for (seq, hash) in sealed {
        let (Some(seq), Some(hash)) = (seq, hash) else { continue };
        let hash = from_hex(&hash).ok_or_else(|| corrupt("audit_entries", "hash is not 64 hex digits"))?;
        found.insert(u64::try_from(seq - 1).map_err(|_| corrupt("audit_entries", "seq below 1"))?, hash);
    }
    let pruned: Vec<i64> = leaves
        .iter()
        .filter(|leaf| !found.contains_key(leaf))
        .map(|leaf| i64::try_from(*leaf).unwrap_or(i64::MAX))
        .collect();
    if pruned.is_empty() {
        return Ok(found);
    }
    let rows: Vec<NodeRow> = db_run!(conn, |c| {
        audit_tree_nodes::table
            .filter(audit_tree_nodes::organization_id.eq(org))
            .filter(audit_tree_nodes::level.eq(0))
            .filter(audit_tree_nodes::idx.eq_any(&pruned))
            .select(NodeRow::as_select())
            .load(c)
            .await
    })?;
    for row in rows {
        let (node, hash) = row.parsed()?;
        found.insert(node.index, hash);
    }
    Ok(found)
}

/// A perfect subtree's hash (`audit_tree_nodes`).
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = audit_tree_nodes)]
pub(crate) struct NodeRow {
    organization_id: String,
    level: i32,
    idx: i64,
    hash: String,
}

impl NodeRow {
    pub(crate) fn new(org: &str, node: NodeId, hash: &Hash) -> Self {
        Self {
            organization_id: org.to_owned(),
            level: i32::try_from(node.level).unwrap_or(i32::MAX),
            idx: i64::try_from(node.index).unwrap_or(i64::MAX),
            hash: to_hex(hash),
        }
    }

    fn parsed(self) -> Result<(NodeId, Hash), compliance_ports::RepoError> {
        const T: &str = "audit_tree_nodes";
        let level = u32::try_from(self.level).map_err(|_| corrupt(T, "negative level"))?;
        let index = u64::try_from(self.idx).map_err(|_| corrupt(T, "negative index"))?;
        let hash = from_hex(&self.hash).ok_or_else(|| corrupt(T, "hash is not 64 hex digits"))?;
        Ok((NodeId { level, index }, hash))
    }
}
