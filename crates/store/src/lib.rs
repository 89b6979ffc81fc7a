//! Diesel adapters for every repository port, on PostgreSQL (production) and SQLite (the embedded
//! default), chosen by the database URL's scheme.

#![warn(missing_docs)]

mod allowed_hosts;
mod audit;
mod audit_tree;
mod automations;
mod bulk;
mod check_runs;
mod comments;
mod connections;
mod context;
mod control_requirements;
mod controls;
mod db;
mod error;
mod evidence;
mod finding_tasks;
mod frameworks;
mod generations;
mod health;
mod idempotency;
mod invitations;
mod library;
mod list_counts;
mod locks;
mod migrate;
mod organization;
mod paging;
mod people;
mod policies;
mod policy_reviews;
mod policy_versions;
mod prepared;
mod risks;
mod rows;
mod schema;
mod search;
mod sessions;
mod sign_in;
mod tasks;
mod thread_connection;
mod thread_pools;
mod vault;
mod vendors;
mod webhooks;

use std::path::PathBuf;

pub use db::PoolOptions;
pub use error::StoreError;
pub use migrate::{migrate, redo_all};

use crate::db::Pools;

/// Where the data lives, from `DATABASE_URL`.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `postgres://…` or `postgresql://…`
    Postgres(String),
    /// `sqlite://PATH`
    Sqlite(PathBuf),
}

impl DatabaseUrl {
    /// Reads `DATABASE_URL`: `postgres://…`, `postgresql://…` or `sqlite://PATH`; anything else is
    /// [`StoreError::Config`].
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Ok(Self::Postgres(text.to_owned()))
        } else if let Some(path) = text.strip_prefix("sqlite://") {
            if path.is_empty() {
                return Err(StoreError::Config("DATABASE_URL sqlite:// needs a file path".into()));
            }
            Ok(Self::Sqlite(PathBuf::from(path)))
        } else {
            let scheme = text.split_once("://").map_or("(none)", |(scheme, _)| scheme);
            Err(StoreError::Config(format!(
                "DATABASE_URL has an unknown scheme `{scheme}`: use postgres://… or sqlite://PATH"
            )))
        }
    }

    /// Where the database is, for messages: host, port and database, never user or password.
    pub fn describe(&self) -> String {
        match self {
            Self::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
                let target = rest.rsplit_once('@').map_or(rest, |(_, target)| target);
                format!("PostgreSQL at {}", target.split('?').next().unwrap_or(target))
            }
            Self::Sqlite(path) => format!("SQLite at {}", path.display()),
        }
    }

    /// The path SQLite opens, after creating its directory (0700) and an empty database file
    /// (0600) if there is none: SQLite would create the file world-readable (0644), and gives its
    /// `-wal` and `-shm` files the database file's mode.
    fn sqlite_path(path: &std::path::Path) -> Result<String, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            private_dirs(parent).map_err(|error| {
                StoreError::Config(format!("cannot create the data directory {}: {error}", parent.display()))
            })?;
        }
        private_file(path).map_err(|error| {
            StoreError::Config(format!("cannot create the database file {}: {error}", path.display()))
        })?;
        path.to_str().map(str::to_owned).ok_or_else(|| StoreError::Config("the SQLite path is not UTF-8".into()))
    }
}

/// Creates `dir` and its missing parents readable by the server's user only (0700).
fn private_dirs(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates `path` empty and readable by the server's user only (0600) unless it exists; an
/// existing file keeps its mode (the operator's choice).
fn private_file(path: &std::path::Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

/// Never shows a PostgreSQL user or password.
impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The store: implements every repository port over pooled connections.
pub struct Store {
    pools: Pools,
}

impl Store {
    /// Opens the pools and checks that the database answers.
    pub async fn connect(url: &DatabaseUrl, options: &PoolOptions) -> Result<Self, StoreError> {
        let pools = match url {
            DatabaseUrl::Postgres(url) => Pools::postgres(url, options)?,
            DatabaseUrl::Sqlite(path) => Pools::sqlite(&DatabaseUrl::sqlite_path(path)?, options)?,
        };
        pools.write().await.map_err(|error| match error {
            StoreError::Connect(why) => StoreError::Connect(format!("{}: {why}", url.describe())),
            other => other,
        })?;
        Ok(Self { pools })
    }

    /// Closes the pools: waiting requests fail, idle connections are dropped.
    pub fn close(&self) {
        self.pools.close();
    }
}

/// The pools' state, for `/metrics`.
impl compliance_ports::PoolMetrics for Store {
    fn pool_status(&self) -> Vec<compliance_ports::PoolStatus> {
        self.pools.status()
    }
}
