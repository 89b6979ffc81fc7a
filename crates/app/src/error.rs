use compliance_domain::{FieldError, ValidationErrors};
use compliance_ports::RepoError;

/// What a use case can fail with; the delivery layer maps each to a status.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("invalid request: {0}")]
    /// A bad input (400): each field and why, the first wrong field of each input.
    Validation(ValidationErrors),
    #[error("authentication required: {0}")]
    /// No valid credentials (401); the text says what was missing or wrong.
    Unauthenticated(&'static str),
    #[error("forbidden: {0}")]
    /// Valid credentials that cannot be used for this (403): an API key where only a signed-in
    /// user may act, or an organization the caller is not an active member of.
    Forbidden(&'static str),
    /// The permission matrix or a key's scopes refuse the call (403); the text names the rule.
    #[error("forbidden: {0}")]
    Denied(String),
    #[error("{0} not found")]
    /// No such record in the caller's organization (404), which is also how another organization's
    /// record answers; the text names the kind of record.
    NotFound(&'static str),
    /// A feature this deployment does not have (404), e.g. sign-in without OpenID Connect settings.
    #[error("{0}")]
    NotEnabled(&'static str),
    /// Something that was once there is no longer usable (410): an expired or used invitation.
    #[error("{0}")]
    Gone(&'static str),
    #[error("{0}")]
    /// The change contradicts the stored state (409), e.g. a taken slug or a changed record.
    Conflict(String),
    /// More bytes or items than the limits allow (413).
    #[error("{0}")]
    TooLarge(String),
    /// Something an administrator must set up first (412), with where to read how.
    #[error("{detail}")]
    SetupRequired {
        /// What is missing.
        detail: String,
        /// Where the administrator reads how to set it up.
        setup_instructions: Option<String>,
        /// Where the administrator registers the application with the provider, if it has such a page.
        create_app_url: Option<String>,
    },
    /// A write's `If-Match` no longer holds (412): the record changed since the caller read it,
    /// and nothing was written; the error names the record's current tag.
    #[error("{0}")]
    PreconditionFailed(compliance_domain::etag::PreconditionFailed),
    /// The OAuth callback's state is unknown, expired, used or someone else's (400): the spec's
    /// `Invalid state`.
    #[error("invalid OAuth state: {0}")]
    InvalidOAuthState(&'static str),
    /// A part of the deployment that this request needs is not set up (503, no retry helps).
    #[error("{0}")]
    NotConfigured(String),
    /// An outside system answered badly (502) or not in time (504); the detail is fit to show.
    #[error("{detail}")]
    Upstream {
        /// `true` when it did not answer in time (504), `false` when it answered badly (502).
        timeout: bool,
        /// What went wrong, without secrets.
        detail: String,
    },
    #[error("service unavailable")]
    /// The database or another dependency is down for now (503); the detail is for the log.
    Unavailable(String),
    /// Capacity this request needs (the browsers that print) stayed in use for the bounded wait
    /// (503 with `Retry-After`); the detail is fit to show.
    #[error("{detail}")]
    Busy {
        /// What is busy, without naming other tenants.
        detail: String,
        /// When a retry may find capacity.
        retry_after: std::time::Duration,
    },
    /// Operations of an atomic bulk request failed (400), so nothing was written: each failing
    /// operation's index in the request and its error, in the request's order.
    #[error("{} bulk operations failed", .0.len())]
    BulkFailed(Vec<(usize, AppError)>),
    /// Details are for the log only.
    #[error("internal error")]
    Internal(String),
}

impl AppError {
    /// A [`AppError::Validation`] of one field.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Validation(ValidationErrors::field(field, message))
    }

    /// Maps a store error, naming what was not found.
    pub fn from_repo(error: RepoError, what: &'static str) -> Self {
        match error {
            RepoError::NotFound => Self::NotFound(what),
            other => other.into(),
        }
    }
}

impl From<RepoError> for AppError {
    fn from(error: RepoError) -> Self {
        match error {
            RepoError::NotFound => Self::NotFound("record"),
            RepoError::Conflict(what) => Self::Conflict(what),
            RepoError::Unavailable(why) => Self::Unavailable(why),
            RepoError::BadCursor => Self::Validation(ValidationErrors::field(
                "cursor",
                "must be a `nextCursor` this list returned for the same filters, search and sort, unchanged",
            )),
            RepoError::PreconditionFailed(failed) => Self::PreconditionFailed(failed),
            RepoError::Internal(why) => Self::Internal(why),
        }
    }
}

impl From<compliance_domain::etag::PreconditionFailed> for AppError {
    fn from(failed: compliance_domain::etag::PreconditionFailed) -> Self {
        Self::PreconditionFailed(failed)
    }
}

impl From<ValidationErrors> for AppError {
    fn from(errors: ValidationErrors) -> Self {
        Self::Validation(errors)
    }
}

impl From<FieldError> for AppError {
    fn from(error: FieldError) -> Self {
        Self::Validation(error.into())
    }
}
