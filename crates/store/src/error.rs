//! Translating database errors into port errors.

use compliance_ports::RepoError;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;

/// Why the store could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Config(String),
    #[error("cannot connect to the database: {0}")]
    Connect(String),
    #[error("migrations failed: {0}")]
    Migration(String),
}

impl From<StoreError> for RepoError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Connect(why) => RepoError::Unavailable(why),
            other => RepoError::Internal(other.to_string()),
        }
    }
}

pub fn pool_error(error: PoolError) -> StoreError {
    StoreError::Connect(error.to_string())
}

/// Unique violations become conflicts; lost or busy connections become "unavailable".
pub fn repo_error(error: DieselError) -> RepoError {
    match error {
        DieselError::NotFound => RepoError::NotFound,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
            RepoError::Conflict("a unique value is already taken".into())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation | DatabaseErrorKind::CheckViolation, _) => {
            RepoError::Conflict("a record this one refers to changed meanwhile; retry".into())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
            RepoError::Unavailable(info.message().to_owned())
        }
        DieselError::DatabaseError(_, info) if is_busy(info.message()) => {
            RepoError::Unavailable(info.message().to_owned())
        }
        DieselError::BrokenTransactionManager => RepoError::Unavailable("broken transaction".into()),
        other => RepoError::Internal(other.to_string()),
    }
}

/// SQLite reports contention and PostgreSQL lost connections only in their messages.
fn is_busy(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    ["database is locked", "database is busy", "connection closed", "terminating connection", "connection reset"]
        .iter()
        .any(|needle| message.contains(needle))
}

/// A stored value that does not fit the domain: the row was written by something else.
pub fn corrupt(table: &str, detail: impl std::fmt::Display) -> RepoError {
    RepoError::Internal(format!("corrupt row in {table}: {detail}"))
}

/// Errors inside a transaction: diesel's own, or a port error raised by our code.
#[derive(Debug)]
pub enum TxError {
    Diesel(DieselError),
    Repo(RepoError),
}

impl From<DieselError> for TxError {
    fn from(error: DieselError) -> Self {
        Self::Diesel(error)
    }
}

impl From<RepoError> for TxError {
    fn from(error: RepoError) -> Self {
        Self::Repo(error)
    }
}

impl From<TxError> for RepoError {
    fn from(error: TxError) -> Self {
        match error {
            TxError::Diesel(error) => repo_error(error),
            TxError::Repo(error) => error,
        }
    }
}
