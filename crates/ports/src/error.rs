/// What a repository can fail with. Adapters translate their infrastructure errors into these.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// No such record in the caller's organization.
    #[error("not found")]
    NotFound,
    /// A unique value is taken; the text names it in words fit for the caller.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The store cannot be reached or has no free connection; worth retrying.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// A list's `cursor` does not fit the list's sort (a cursor made by hand: the ones the
    /// service issues always fit the query they were issued for).
    #[error("a cursor that does not fit the list's sort")]
    BadCursor,
    /// The write's `If-Match` no longer holds: the record changed since the caller read it, and
    /// nothing was written.
    #[error("{0}")]
    PreconditionFailed(compliance_domain::etag::PreconditionFailed),
    /// Anything else. The text is for logs only: it may hold details callers must not see.
    #[error("store failure: {0}")]
    Internal(String),
}

impl From<compliance_domain::etag::PreconditionFailed> for RepoError {
    fn from(failed: compliance_domain::etag::PreconditionFailed) -> Self {
        Self::PreconditionFailed(failed)
    }
}
