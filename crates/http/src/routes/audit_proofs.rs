//! What an auditor checks the audit log with, without reading it: the signed tree head
//! (`/v1/audit-log/tree-head`), an entry's inclusion proof (`/v1/audit-log/{seq}/proof`) and the
//! consistency proof between two tree sizes (`/v1/audit-log/consistency`), RFC 9162's.

use actix_web::{HttpResponse, web};
use compliance_app::{ConsistencyProof, InclusionProof, SignedTreeHead};
use compliance_domain::Timestamp;
use compliance_domain::merkle::{Hash, to_hex};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(get_tree_head, __path_get_tree_head);
    routes.add(get_inclusion_proof, __path_get_inclusion_proof);
    routes.add(get_consistency_proof, __path_get_consistency_proof);
}

/// The organization's latest signed tree head.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TreeHeadDto {
    /// How many entries the tree holds (entries 1 to `treeSize`).
    tree_size: u64,
    /// The RFC 9162 root hash, hex.
    root_hash: String,
    /// When the server signed it.
    signed_at: Timestamp,
    /// The C2SP key hash of the signing key, hex.
    key_id: String,
    /// The Ed25519 public key, base64 of its 32 bytes.
    public_key: String,
    /// The Ed25519 signature of `checkpoint`, base64.
    signature: String,
    /// The signed text: the C2SP checkpoint (origin, size, base64 root, then the signing time).
    checkpoint: String,
    /// The same as a C2SP signed note, for transparency-log tools.
    note: String,
}

impl From<SignedTreeHead> for TreeHeadDto {
    fn from(signed: SignedTreeHead) -> Self {
        let head = signed.head;
        Self {
            tree_size: head.size(),
            root_hash: to_hex(&head.root()),
            signed_at: head.signed_at,
            checkpoint: head.checkpoint_body(),
            key_id: head.key_id,
            public_key: signed.public_key,
            signature: head.signature,
            note: signed.note,
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/audit-log/tree-head",
    tag = "audit",
    operation_id = "getAuditTreeHead",
    summary = "The audit log's latest signed tree head",
    responses((status = 200, description = "The signed head of the organization's Merkle tree.", body = TreeHeadDto)),
)]
async fn get_tree_head(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let head = state.run(|app| async move { app.audit.tree_head(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(TreeHeadDto::from(head)))
}

/// `treeSize`: the tree a proof reaches.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProofQuery {
    /// The size of the tree (a signed head's `treeSize`) the proof reaches; absent: the latest.
    #[param(value_type = Option<u64>, minimum = 1)]
    tree_size: Option<String>,
}

/// An entry's inclusion proof.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct InclusionProofDto {
    /// The entry's `seq`.
    seq: i64,
    /// Its leaf index in the tree: `seq - 1`.
    leaf_index: u64,
    /// The tree the proof reaches.
    tree_size: u64,
    /// The entry's leaf hash (its `hash`), hex.
    leaf_hash: String,
    /// RFC 9162 `PATH(m, D[n])`, hex, from the leaf's sibling up.
    audit_path: Vec<String>,
}

impl From<InclusionProof> for InclusionProofDto {
    fn from(proof: InclusionProof) -> Self {
        Self {
            leaf_index: u64::try_from(proof.seq - 1).unwrap_or_default(),
            seq: proof.seq,
            tree_size: proof.tree_size,
            leaf_hash: proof.leaf_hash,
            audit_path: hex_all(&proof.path),
        }
    }
}

#[utoipa::path(
    get,
    path = "/v1/audit-log/{seq}/proof",
    tag = "audit",
    operation_id = "getAuditInclusionProof",
    summary = "The inclusion proof of one sealed entry",
    params(("seq" = i64, Path, description = "The entry's seq"), ProofQuery),
    responses(
        (status = 200, description = "The entry's leaf and its path to the root.", body = InclusionProofDto),
        (status = 400, description = "A `treeSize` that is not a whole number of at least 1."),
        (status = 404, description = "No sealed entry with this seq (not yet sealed, pruned, or never), or no tree of that size holding it."),
    ),
)]
async fn get_inclusion_proof(
    state: web::Data<AppState>,
    caller: Authenticated,
    seq: web::Path<String>,
    query: web::Query<ProofQuery>,
) -> Result<HttpResponse, ApiError> {
    let seq = match seq.parse::<i64>() {
        Ok(seq) if seq >= 1 => seq,
        _ => return Err(ApiError::not_found("audit entry")),
    };
    let tree_size = size("treeSize", query.tree_size.as_deref())?;
    let principal = caller.0;
    let proof = state.run(|app| async move { app.audit.inclusion_proof(&principal, seq, tree_size).await }).await?;
    Ok(HttpResponse::Ok().json(InclusionProofDto::from(proof)))
}

/// `from` and `to`: the two tree sizes.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConsistencyQuery {
    /// The older tree's size (at least 1).
    #[param(value_type = u64, minimum = 1)]
    from: Option<String>,
    /// The newer tree's size (at least `from`); absent: the latest.
    #[param(value_type = Option<u64>, minimum = 1)]
    to: Option<String>,
}

/// The consistency proof between two tree sizes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ConsistencyProofDto {
    from: u64,
    to: u64,
    /// RFC 9162 `PROOF(m, D[n])`, hex; empty when the sizes are equal.
    proof: Vec<String>,
}

impl From<ConsistencyProof> for ConsistencyProofDto {
    fn from(proof: ConsistencyProof) -> Self {
        Self { from: proof.from, to: proof.to, proof: hex_all(&proof.path) }
    }
}

#[utoipa::path(
    get,
    path = "/v1/audit-log/consistency",
    tag = "audit",
    operation_id = "getAuditConsistencyProof",
    summary = "The consistency proof between two tree sizes of the audit log",
    params(ConsistencyQuery),
    responses(
        (status = 200, description = "The hashes showing the older tree is a prefix of the newer.", body = ConsistencyProofDto),
        (status = 400, description = "`from` missing or not between 1 and `to`."),
        (status = 404, description = "A `from` or `to` the log has not reached."),
    ),
)]
async fn get_consistency_proof(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<ConsistencyQuery>,
) -> Result<HttpResponse, ApiError> {
    let from = size("from", query.from.as_deref())?.ok_or_else(|| ApiError::invalid_field("from", "is required"))?;
    let to = size("to", query.to.as_deref())?;
    let principal = caller.0;
    let proof = state.run(|app| async move { app.audit.consistency_proof(&principal, from, to).await }).await?;
    Ok(HttpResponse::Ok().json(ConsistencyProofDto::from(proof)))
}

/// A tree size from the query: a whole number of at least 1, or a 400 naming `name`.
fn size(name: &str, text: Option<&str>) -> Result<Option<u64>, ApiError> {
    match text {
        None => Ok(None),
        Some(text) => match text.parse::<u64>() {
            Ok(size) if size >= 1 => Ok(Some(size)),
            _ => Err(ApiError::invalid_field(name, "must be a whole number of at least 1")),
        },
    }
}

fn hex_all(hashes: &[Hash]) -> Vec<String> {
    hashes.iter().map(to_hex).collect()
}
