//! Translating database errors into port errors.

use compliance_ports::RepoError;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;

/// Why the store could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    /// `DATABASE_URL` or the pool options are wrong; the text says which.
    Config(String),
    #[error("cannot connect to the database: {0}")]
    /// The database cannot be reached at start-up; the text names where, never the password.
    Connect(String),
    #[error("migrations failed: {0}")]
    /// A migration failed to apply.
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

/// Unique violations become conflicts; lost or busy connections become "unavailable", so that a
/// database outage or restart answers 503 (with `Retry-After`), never 500.
pub fn repo_error(error: DieselError) -> RepoError {
    match error {
        DieselError::NotFound => RepoError::NotFound,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _) => {
            RepoError::Conflict("a unique value is already taken".into())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation | DatabaseErrorKind::CheckViolation, _) => {
            RepoError::Conflict("a record this one refers to changed meanwhile; retry".into())
        }
        // diesel-async reports every failure to talk to PostgreSQL (socket closed or reset,
        // connection task gone) as `UnableToSendCommand`.
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            info,
        ) => RepoError::Unavailable(info.message().to_owned()),
        DieselError::DatabaseError(_, info) if is_busy(info.message()) => {
            RepoError::Unavailable(info.message().to_owned())
        }
        DieselError::QueryBuilderError(why) if why.to_string() == crate::paging::CURSOR_MISFIT => RepoError::BadCursor,
        DieselError::QueryBuilderError(why) if why.to_string() == crate::idempotency::CLAIM_LOST => {
            RepoError::Conflict(
                "a retry with this Idempotency-Key took over after this request's reservation ran out; this request \
             changed nothing"
                    .into(),
            )
        }
        DieselError::BrokenTransactionManager => RepoError::Unavailable("broken transaction".into()),
        // A COMMIT that failed (and whose ROLLBACK failed too) says why in the commit error: a
        // connection lost mid-transaction is an outage. If it was lost after COMMIT was sent, the
        // outcome is unknown (docs/operations.md, "Database outages", says so to clients).
        DieselError::RollbackErrorOnCommit { commit_error, .. } => repo_error(*commit_error),
        other => RepoError::Internal(other.to_string()),
    }
}

/// Errors of a thread's own connection (tokio-postgres, without diesel): an error the server did
/// not send is a lost or broken connection; of those it sent, classes 08 (connection exception),
/// 53 (insufficient resources) and 57 (operator intervention: shutdown, restart) are outages.
pub fn pg_error(error: tokio_postgres::Error) -> RepoError {
    let Some(sent) = error.as_db_error() else {
        return RepoError::Unavailable(error.to_string());
    };
    match sent.code().code().get(..2) {
        Some("08" | "53" | "57") => RepoError::Unavailable(sent.message().to_owned()),
        _ => RepoError::Internal(error.to_string()),
    }
}

/// SQLite reports contention and PostgreSQL lost connections only in their messages (diesel keeps
/// no SQLSTATE): `terminating connection …` is 57P01/57P02 (shutdown, crash of another backend),
/// `the database system is …` is 57P03 (starting up, shutting down, in recovery).
fn is_busy(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "database is locked",
        "database is busy",
        "connection closed",
        "terminating connection",
        "connection reset",
        "the database system is",
        "server closed the connection",
        "broken pipe",
        "error communicating with the server",
    ]
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

impl From<compliance_domain::etag::PreconditionFailed> for TxError {
    fn from(failed: compliance_domain::etag::PreconditionFailed) -> Self {
        Self::Repo(failed.into())
    }
}

#[cfg(test)]
mod tests {
    use diesel::result::{DatabaseErrorKind, Error as DieselError};

    use super::*;

    fn database_error(kind: DatabaseErrorKind, message: &str) -> DieselError {
        DieselError::DatabaseError(kind, Box::new(message.to_owned()))
    }

    #[test]
    fn lost_connections_are_unavailable() {
        let lost = [
            database_error(DatabaseErrorKind::UnableToSendCommand, "error communicating with the server: Broken pipe"),
            database_error(DatabaseErrorKind::UnableToSendCommand, "connection closed"),
            database_error(DatabaseErrorKind::ClosedConnection, "server closed the connection unexpectedly"),
            database_error(DatabaseErrorKind::Unknown, "terminating connection due to administrator command"),
            database_error(DatabaseErrorKind::Unknown, "the database system is shutting down"),
            database_error(DatabaseErrorKind::Unknown, "the database system is starting up"),
            database_error(DatabaseErrorKind::Unknown, "database is locked"),
            DieselError::RollbackErrorOnCommit {
                rollback_error: Box::new(database_error(DatabaseErrorKind::UnableToSendCommand, "connection closed")),
                commit_error: Box::new(database_error(DatabaseErrorKind::UnableToSendCommand, "connection closed")),
            },
        ];
        for error in lost {
            let shown = format!("{error:?}");
            assert!(matches!(repo_error(error), RepoError::Unavailable(_)), "{shown}");
        }
    }

    #[test]
    fn other_errors_keep_their_meaning() {
        assert!(matches!(repo_error(DieselError::NotFound), RepoError::NotFound));
        let unique = database_error(DatabaseErrorKind::UniqueViolation, "duplicate key");
        assert!(matches!(repo_error(unique), RepoError::Conflict(_)));
        let syntax = database_error(DatabaseErrorKind::Unknown, "syntax error at or near \"FROM\"");
        assert!(matches!(repo_error(syntax), RepoError::Internal(_)));
    }

    #[test]
    fn pool_errors_are_unavailable() {
        let closed = RepoError::from(pool_error(PoolError::Closed));
        assert!(matches!(closed, RepoError::Unavailable(_)));
    }
}
