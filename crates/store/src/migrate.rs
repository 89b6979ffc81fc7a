//! Embedded migrations, run on a plain blocking connection before the server starts.

use diesel::connection::SimpleConnection;
use diesel::{Connection, SqliteConnection};
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::{DatabaseUrl, StoreError};

const POSTGRES: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");
const SQLITE: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");

/// Applies every pending migration; returns how many ran.
pub async fn migrate(url: &DatabaseUrl) -> Result<usize, StoreError> {
    let target = url.describe();
    let url = url.clone();
    tokio::task::spawn_blocking(move || match url {
        DatabaseUrl::Postgres(url) => {
            let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&url)
                .map_err(|error| StoreError::Connect(format!("{target}: {error}")))?;
            run(&mut conn, POSTGRES)
        }
        DatabaseUrl::Sqlite(path) => {
            let mut conn = sqlite(&DatabaseUrl::sqlite_path(&path)?)
                .map_err(|error| StoreError::Connect(format!("{target}: {error}")))?;
            run(&mut conn, SQLITE)
        }
    })
    .await
    .map_err(|error| StoreError::Migration(error.to_string()))?
}

/// A connection that waits for another's lock, as the pools' do: every CLI command runs the
/// migrations, often while the server writes, and without a busy timeout SQLite answers "database
/// is locked" at once (seen once in CI's 741 tests, in `admin create-user`).
fn sqlite(path: &str) -> Result<SqliteConnection, diesel::ConnectionError> {
    let mut conn = SqliteConnection::establish(path)?;
    conn.batch_execute("PRAGMA busy_timeout = 5000;").map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

fn run<C: MigrationHarness<B>, B: diesel::backend::Backend>(
    conn: &mut C,
    migrations: EmbeddedMigrations,
) -> Result<usize, StoreError> {
    conn.run_pending_migrations(migrations)
        .map(|applied| applied.len())
        .map_err(|error| StoreError::Migration(error.to_string()))
}

/// Reverts every migration, then applies them again: proves each down.sql undoes its up.sql.
pub async fn redo_all(url: &DatabaseUrl) -> Result<(), StoreError> {
    let url = url.clone();
    tokio::task::spawn_blocking(move || match url {
        DatabaseUrl::Postgres(url) => {
            let mut conn = AsyncConnectionWrapper::<AsyncPgConnection>::establish(&url)
                .map_err(|error| StoreError::Connect(error.to_string()))?;
            redo(&mut conn, || POSTGRES)
        }
        DatabaseUrl::Sqlite(path) => {
            let mut conn =
                sqlite(&DatabaseUrl::sqlite_path(&path)?).map_err(|error| StoreError::Connect(error.to_string()))?;
            redo(&mut conn, || SQLITE)
        }
    })
    .await
    .map_err(|error| StoreError::Migration(error.to_string()))?
}

fn redo<C: MigrationHarness<B>, B: diesel::backend::Backend>(
    conn: &mut C,
    migrations: fn() -> EmbeddedMigrations,
) -> Result<(), StoreError> {
    let failed = |error: Box<dyn std::error::Error + Send + Sync>| StoreError::Migration(error.to_string());
    conn.revert_all_migrations(migrations()).map_err(failed)?;
    conn.run_pending_migrations(migrations()).map_err(failed)?;
    Ok(())
}
