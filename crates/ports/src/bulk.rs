//! Bulk writes: what a resource's `apply_<resource>_bulk` repository method takes and answers.
//!
//! The use case validates every operation first; the store then applies them in the request's
//! order inside ONE transaction, each with its audit entry, and commits only when every one of
//! them succeeded.

use compliance_domain::comment::Attachment;

use crate::RepoError;

/// One validated write of a bulk request: a new record, a patch of a record, or a delete.
#[derive(Debug, Clone)]
pub enum BulkWrite<R, I, P> {
    /// Insert this record (made and validated by the domain).
    Create(R),
    /// Apply this patch to the record with this id; an empty patch only reads it.
    Update(I, P),
    /// Delete the record with this id, with its comments and their attachments' rows.
    Delete(I),
}

/// What a committed bulk write answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkApplied<R> {
    /// Each operation's record, in the request's order: as it is now, or as it was before a delete.
    pub records: Vec<R>,
    /// The attachments deleted with the deleted records, whose bytes are now to be removed.
    pub attachments: Vec<Attachment>,
}

/// Why a bulk write committed nothing.
#[derive(Debug, thiserror::Error)]
pub enum BulkError {
    /// These operations (by their index in the request) failed, so the transaction was rolled
    /// back. The list stops at the first failure that leaves the transaction unusable (anything
    /// other than a missing record), so later operations may be unchecked.
    #[error("{} operations failed", .0.len())]
    Operations(Vec<(usize, RepoError)>),
    /// The store failed as a whole (unavailable, …).
    #[error(transparent)]
    Store(#[from] RepoError),
}
