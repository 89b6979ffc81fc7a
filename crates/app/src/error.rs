use compliance_domain::{FieldError, ValidationErrors};
use compliance_ports::RepoError;

/// What a use case can fail with; the delivery layer maps each to a status.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("invalid request: {0}")]
    Validation(ValidationErrors),
    #[error("authentication required: {0}")]
    Unauthenticated(&'static str),
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    /// The permission matrix or a key's scopes refuse the call (403); the text names the rule.
    #[error("forbidden: {0}")]
    Denied(String),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A feature this deployment does not have (404), e.g. sign-in without OpenID Connect settings.
    #[error("{0}")]
    NotEnabled(&'static str),
    /// Something that was once there is no longer usable (410): an expired or used invitation.
    #[error("{0}")]
    Gone(&'static str),
    #[error("{0}")]
    Conflict(String),
    /// More bytes or items than the limits allow (413).
    #[error("{0}")]
    TooLarge(String),
    /// Something an administrator must set up first (412), with where to read how.
    #[error("{detail}")]
    SetupRequired { detail: String, setup_instructions: Option<String>, create_app_url: Option<String> },
    /// The OAuth callback's state is unknown, expired, used or someone else's (400): the spec's
    /// `Invalid state`.
    #[error("invalid OAuth state: {0}")]
    InvalidOAuthState(&'static str),
    /// A part of the deployment that this request needs is not set up (503, no retry helps).
    #[error("{0}")]
    NotConfigured(String),
    /// An outside system answered badly (502) or not in time (504); the detail is fit to show.
    #[error("{detail}")]
    Upstream { timeout: bool, detail: String },
    #[error("service unavailable")]
    Unavailable(String),
    /// Details are for the log only.
    #[error("internal error")]
    Internal(String),
}

impl AppError {
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
            RepoError::Internal(why) => Self::Internal(why),
        }
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
