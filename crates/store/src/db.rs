//! Connection pools for both backends and the macro that runs one query body on either.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use compliance_ports::PoolStatus;
use diesel::SqliteConnection;
use diesel::connection::AnsiTransactionManager;
use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
use diesel_async::sync_connection_wrapper::{SpawnBlocking, SyncConnectionWrapper, SyncTransactionManagerWrapper};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection, TransactionManager};

use crate::error::{StoreError, pool_error};
use crate::thread_connection::{ThreadConnection, ThreadConnections};
use crate::thread_pools::ThreadPools;

pub type SqliteAsync = SyncConnectionWrapper<SqliteConnection, InPlace>;

/// Runs each SQLite call on the task that awaits it, instead of handing it to tokio's blocking
/// threads (diesel-async's default).
///
/// A statement here takes microseconds, in process; the hand-off to a blocking thread and back
/// took longer than most of them, and was two more thread switches per statement (`cargo xtask
/// bench --db sqlite`: see docs/performance.md). Use cases run on the thread serving their
/// request, so a slow statement holds up the other requests of that thread. The call runs when
/// the future is first polled, as a spawned task would.
pub struct InPlace;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

impl SpawnBlocking for InPlace {
    fn spawn_blocking<'a, R>(
        &mut self,
        task: impl FnOnce() -> R + Send + 'static,
    ) -> Pin<Box<dyn Future<Output = Result<R, BoxError>> + Send + 'a>>
    where
        R: Send + 'static,
    {
        Box::pin(async move { Ok(task()) })
    }

    fn get_runtime() -> Self {
        Self
    }
}

/// A pooled connection to either backend.
#[allow(clippy::large_enum_variant, reason = "lives briefly on the stack; boxing would allocate per query")]
pub enum DbConn {
    Pg(Object<AsyncPgConnection>),
    Sqlite(Object<SqliteAsync>),
}

/// Runs one diesel body against whichever backend the connection is; the body is type-checked
/// once per backend, so it must be plain diesel that both accept. `$conn` is anything a
/// [`ConnRef`] is made from: a pooled [`DbConn`], or either backend's connection inside a
/// transaction (an [`AnyConnection`], which code generic over the connection holds).
macro_rules! db_run {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $crate::db::ConnRef::from($conn) {
            $crate::db::ConnRef::Pg($c) => $body,
            $crate::db::ConnRef::Sqlite($c) => $body,
        }
    };
}
pub(crate) use db_run;

/// Runs one transaction body that writes, on either backend: PostgreSQL's `BEGIN`, SQLite's
/// `BEGIN IMMEDIATE`. SQLite's plain `BEGIN` reads from a snapshot and asks for the write lock at
/// its first write; when another process on the same file (a second instance) has committed in
/// between, that request fails at once with "database is locked" instead of waiting out
/// `busy_timeout`. `IMMEDIATE` takes the write lock first, waiting for it as `busy_timeout`
/// allows, so the body reads what it then changes. `$conn` is what [`db_run!`] takes.
macro_rules! write_transaction {
    ($conn:expr, async |$c:ident| $body:block) => {
        match $crate::db::ConnRef::from($conn) {
            $crate::db::ConnRef::Pg(conn) => diesel_async::AsyncConnection::transaction(conn, async |$c| $body).await,
            $crate::db::ConnRef::Sqlite($c) => match $crate::db::begin_immediate($c).await {
                Ok(()) => {
                    let result = async { $body }.await;
                    $crate::db::end_immediate($c, result).await
                }
                Err(error) => Err(error.into()),
            },
        }
    };
}
pub(crate) use write_transaction;

/// Opens [`write_transaction!`]'s SQLite transaction. diesel-async's own `immediate_transaction`
/// exists only for connections that hand their calls to tokio's blocking threads, which ours do
/// not ([`InPlace`]); this is what it does, through the same transaction manager.
pub(crate) async fn begin_immediate(conn: &mut SqliteAsync) -> diesel::QueryResult<()> {
    conn.spawn_blocking(|c| AnsiTransactionManager::begin_transaction_sql(c, "BEGIN IMMEDIATE")).await
}

/// Ends [`write_transaction!`]'s SQLite transaction: commits when its body succeeded, rolls back
/// when it failed.
pub(crate) async fn end_immediate<R, E: From<diesel::result::Error>>(
    conn: &mut SqliteAsync,
    result: Result<R, E>,
) -> Result<R, E> {
    type Transactions = SyncTransactionManagerWrapper<AnsiTransactionManager>;
    match result {
        Ok(value) => {
            Transactions::commit_transaction(conn).await?;
            Ok(value)
        }
        Err(error) => {
            Transactions::rollback_transaction(conn).await?;
            Err(error)
        }
    }
}

/// One connection of either backend, borrowed: what [`db_run!`] matches on.
pub(crate) enum ConnRef<'c> {
    Pg(&'c mut AsyncPgConnection),
    Sqlite(&'c mut SqliteAsync),
}

impl ConnRef<'_> {
    /// The same connection, lent again for one more call.
    pub(crate) fn reborrow(&mut self) -> ConnRef<'_> {
        match self {
            ConnRef::Pg(c) => ConnRef::Pg(c),
            ConnRef::Sqlite(c) => ConnRef::Sqlite(c),
        }
    }
}

/// Either backend's connection, to code generic over it (the steps of an audited write, which
/// run inside a transaction that `write_transaction!` opened): [`any`](AnyConnection::any) lends
/// it back as a [`ConnRef`], so such a step is one `db_run!` body, not one impl per connection
/// type.
pub(crate) trait AnyConnection: Send {
    fn any(&mut self) -> ConnRef<'_>;
}

impl AnyConnection for DbConn {
    fn any(&mut self) -> ConnRef<'_> {
        match self {
            DbConn::Pg(pooled) => ConnRef::Pg(pooled),
            DbConn::Sqlite(pooled) => ConnRef::Sqlite(pooled),
        }
    }
}

impl AnyConnection for AsyncPgConnection {
    fn any(&mut self) -> ConnRef<'_> {
        ConnRef::Pg(self)
    }
}

impl AnyConnection for SqliteAsync {
    fn any(&mut self) -> ConnRef<'_> {
        ConnRef::Sqlite(self)
    }
}

impl<'c, C: AnyConnection> From<&'c mut C> for ConnRef<'c> {
    fn from(conn: &'c mut C) -> Self {
        conn.any()
    }
}

/// Pool sizes and timeouts.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Connections of each thread's PostgreSQL pool (one pool per thread), or SQLite readers.
    pub max_size: usize,
    /// How long a request waits for a free connection before it is answered 503.
    pub wait_timeout: Duration,
    /// How long opening a connection may take.
    pub create_timeout: Duration,
    /// How long checking a returned connection may take.
    pub recycle_timeout: Duration,
}

impl Default for PoolOptions {
    /// 4 connections: on two cores, 4 per thread answered `PATCH` at 32 connections 0.68–0.76× as
    /// fast as pgbench's `UPDATE`, 2 per thread 0.60–0.66× (docs/performance.md).
    fn default() -> Self {
        Self {
            max_size: 4,
            wait_timeout: Duration::from_secs(2),
            create_timeout: Duration::from_secs(3),
            recycle_timeout: Duration::from_secs(2),
        }
    }
}

/// How many statements a store's connections have sent to the database: every pooled
/// connection counts each statement diesel starts on it (its instrumentation,
/// `Connection::set_instrumentation`, set when the pool opens the connection: a transaction's
/// `BEGIN` and `COMMIT` count as statements), and PostgreSQL's per-thread connections count each
/// query. Clones share the count. Read with [`crate::Store::statements`].
#[derive(Clone, Default)]
pub struct StatementCounter(Arc<AtomicU64>);

impl StatementCounter {
    /// The statements counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one statement.
    pub fn add_one(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Instrumentation for StatementCounter {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if let InstrumentationEvent::StartQuery { .. } = event {
            self.add_one();
        }
    }
}

impl crate::Store {
    /// How many statements this store's connections have sent to the database since it was
    /// opened: each statement diesel starts on a pooled connection (a transaction's `BEGIN` and
    /// `COMMIT` included), and each query of PostgreSQL's per-thread connections. A test reads
    /// it before and after a use case to count that use case's statements
    /// (crates/embedded/tests/statements.rs). Every connection of the store counts, whatever task
    /// runs on it, so a count around one call is that call's only while nothing else uses the
    /// store.
    pub fn statements(&self) -> u64 {
        self.pools.statements().get()
    }
}

/// PostgreSQL uses a pool per thread, and one more connection per thread for [`Pools::here`].
/// SQLite has one writer connection (concurrent SQLite writers fail with "database is locked") and
/// a pool of readers, which WAL lets run beside it. Each counts its statements.
pub enum Pools {
    Pg { pools: Arc<ThreadPools>, per_thread: Arc<ThreadConnections>, statements: StatementCounter },
    Sqlite { writer: Pool<SqliteAsync>, readers: Pool<SqliteAsync>, statements: StatementCounter },
}

/// A connection for a short read on the calling thread.
#[allow(clippy::large_enum_variant, reason = "lives briefly on the stack; boxing would allocate per read")]
pub enum Here {
    Pg(Arc<ThreadConnection>),
    Sqlite(DbConn),
}

impl Pools {
    pub fn postgres(url: &str, options: &PoolOptions) -> Result<Self, StoreError> {
        let statements = StatementCounter::default();
        let pools = Arc::new(ThreadPools::new(url, options, &statements));
        let per_thread = ThreadConnections::new(url, options.create_timeout, &statements);
        Ok(Self::Pg { pools, per_thread: Arc::new(per_thread), statements })
    }

    pub fn sqlite(path: &str, options: &PoolOptions) -> Result<Self, StoreError> {
        let statements = StatementCounter::default();
        let writer = build(sqlite_manager(path, false, &statements), 1, options)?;
        let readers = build(sqlite_manager(path, true, &statements), options.max_size, options)?;
        Ok(Self::Sqlite { writer, readers, statements })
    }

    /// The count of the statements every connection of these pools sent.
    pub fn statements(&self) -> &StatementCounter {
        match self {
            Self::Pg { statements, .. } | Self::Sqlite { statements, .. } => statements,
        }
    }

    /// A connection for reads.
    pub async fn read(&self) -> Result<DbConn, StoreError> {
        match self {
            Self::Pg { pools, .. } => pools.get().await.map(DbConn::Pg),
            Self::Sqlite { readers, .. } => readers.get().await.map(DbConn::Sqlite).map_err(pool_error),
        }
    }

    /// A connection for writes (and reads that must see the latest write).
    pub async fn write(&self) -> Result<DbConn, StoreError> {
        match self {
            Self::Pg { pools, .. } => pools.get().await.map(DbConn::Pg),
            Self::Sqlite { writer, .. } => writer.get().await.map(DbConn::Sqlite).map_err(pool_error),
        }
    }

    /// A connection for a short read whose I/O runs on the calling thread, without the hand-offs to
    /// and from the thread that drives a shared connection.
    ///
    /// A PostgreSQL connection's I/O runs on the runtime that opened it: this is the calling
    /// thread's own (see [`ThreadConnection`]), which on actix's single-threaded workers is the
    /// thread serving the request. SQLite's calls always run in place (see [`InPlace`]).
    pub async fn here(&self) -> Result<Here, StoreError> {
        match self {
            Self::Pg { per_thread, .. } => per_thread.here().await.map(Here::Pg),
            Self::Sqlite { .. } => self.read().await.map(Here::Sqlite),
        }
    }

    /// The state of every shared pool, for metrics.
    pub fn status(&self) -> Vec<PoolStatus> {
        match self {
            Self::Pg { pools, .. } => vec![pools.status()],
            Self::Sqlite { writer, readers, .. } => vec![status("writer", writer), status("readers", readers)],
        }
    }

    pub fn close(&self) {
        match self {
            Self::Pg { pools, per_thread, .. } => {
                pools.close();
                per_thread.close();
            }
            Self::Sqlite { writer, readers, .. } => {
                writer.close();
                readers.close();
            }
        }
    }
}

fn status<C>(name: &'static str, pool: &Pool<C>) -> PoolStatus
where
    C: diesel_async::pooled_connection::PoolableConnection + Send + 'static,
    AsyncDieselConnectionManager<C>: deadpool::managed::Manager,
{
    let status = pool.status();
    PoolStatus {
        name,
        max_size: status.max_size,
        size: status.size,
        available: status.available,
        waiting: status.waiting,
    }
}

pub(crate) fn build<C>(
    manager: AsyncDieselConnectionManager<C>,
    size: usize,
    options: &PoolOptions,
) -> Result<Pool<C>, StoreError>
where
    C: diesel_async::pooled_connection::PoolableConnection + Send + 'static,
    AsyncDieselConnectionManager<C>: deadpool::managed::Manager,
{
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(options.wait_timeout))
        .create_timeout(Some(options.create_timeout))
        .recycle_timeout(Some(options.recycle_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|error| StoreError::Config(format!("cannot build the connection pool: {error}")))
}

/// `Fast`: no query on checkout (a `SELECT 1` per request cost a round trip). A connection that
/// died with a database restart or outage is closed by then, which `Fast` checks, and the pool opens
/// a fresh one; one that dies while in use answers 503 (see error.rs). Each connection counts its
/// statements in `statements`.
pub(crate) fn pg_manager(url: &str, statements: &StatementCounter) -> AsyncDieselConnectionManager<AsyncPgConnection> {
    let mut config = ManagerConfig::<AsyncPgConnection>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let statements = statements.clone();
    config.custom_setup = Box::new(move |url| {
        let (url, statements) = (url.to_owned(), statements.clone());
        Box::pin(async move {
            let mut conn = AsyncPgConnection::establish(&url).await?;
            conn.set_instrumentation(statements);
            Ok(conn)
        })
    });
    AsyncDieselConnectionManager::new_with_config(url, config)
}

/// SQLite connections: `busy_timeout` before WAL (the other order fails under concurrency),
/// foreign keys on, and readers that cannot write. Each connection counts its statements in
/// `statements` (from its first statement after these settings).
fn sqlite_manager(
    path: &str,
    read_only: bool,
    statements: &StatementCounter,
) -> AsyncDieselConnectionManager<SqliteAsync> {
    let mut config = ManagerConfig::<SqliteAsync>::default();
    config.recycling_method = RecyclingMethod::Fast;
    let statements = statements.clone();
    config.custom_setup = Box::new(move |url| {
        let (url, statements) = (url.to_owned(), statements.clone());
        Box::pin(async move {
            let mut conn = SqliteAsync::establish(&url).await?;
            let query_only = if read_only { "PRAGMA query_only = ON;" } else { "" };
            let pragmas = format!(
                "PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                 PRAGMA foreign_keys = ON; {query_only}"
            );
            conn.batch_execute(&pragmas).await.map_err(diesel::ConnectionError::CouldntSetupConfiguration)?;
            conn.set_instrumentation(statements);
            Ok(conn)
        })
    });
    AsyncDieselConnectionManager::new_with_config(path, config)
}
