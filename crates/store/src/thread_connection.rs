//! One PostgreSQL connection per thread, shared by all the thread's tasks, for short reads that
//! should not leave the thread serving the request (see [`crate::db::Pools::pipelined_here`]).
//!
//! Its statements are pipelined: tokio-postgres sends each as soon as it is asked and matches the
//! answers in order, so sixteen requests on one of actix's threads wait for one connection's round
//! trips, not for a connection each. A pool per thread did the same work with four backends per
//! thread, whose scheduling on two cores put list p99s at 18–27 ms in `cargo xtask bench`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::OnceCell;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use crate::db::StatementCounter;
use crate::error::StoreError;

/// Where each thread's connection goes, and whether the store still takes requests.
pub struct ThreadConnections {
    url: String,
    connect_timeout: Duration,
    statements: StatementCounter,
    closed: AtomicBool,
}

/// One thread's connection, opened on its first use, with the statements prepared on it.
pub struct ThreadConnection {
    client: Client,
    /// Where its queries are counted (the store's count).
    statements: StatementCounter,
    /// Prepared once per connection: `Client::query` with SQL text would parse it every time,
    /// which is a second round trip.
    prepared: Mutex<Vec<(&'static str, Statement)>>,
}

type Slot = Arc<OnceCell<Arc<ThreadConnection>>>;

thread_local! {
    /// This thread's connection of each [`ThreadConnections`] (tests run several stores in one
    /// process). An entry goes, with its connection, once its store is dropped.
    static THIS_THREAD: RefCell<Vec<(Weak<ThreadConnections>, Slot)>> = const { RefCell::new(Vec::new()) };
}

impl ThreadConnections {
    /// Connections to `url` that count their queries in `statements`.
    pub fn new(url: &str, connect_timeout: Duration, statements: &StatementCounter) -> Self {
        Self { url: url.to_owned(), connect_timeout, statements: statements.clone(), closed: AtomicBool::new(false) }
    }

    /// Refuses every later [`Self::here`]: the store is shutting down.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// The calling thread's connection, opened if it has none or its last one was lost.
    pub async fn here(self: &Arc<Self>) -> Result<Arc<ThreadConnection>, StoreError> {
        if self.closed.load(Ordering::Relaxed) {
            return Err(StoreError::Connect("the store is closed".into()));
        }
        let slot = self.slot();
        let connection = slot.get_or_try_init(|| self.connect()).await?;
        Ok(Arc::clone(connection))
    }

    /// This thread's slot; a fresh one in place of a lost connection's.
    fn slot(self: &Arc<Self>) -> Slot {
        THIS_THREAD.with_borrow_mut(|slots| {
            slots.retain(|(owner, _)| owner.strong_count() > 0);
            let mine = slots.iter_mut().find(|(owner, _)| std::ptr::eq(owner.as_ptr(), Arc::as_ptr(self)));
            match mine {
                Some((_, slot)) => {
                    if slot.get().is_some_and(|connection| connection.client.is_closed()) {
                        *slot = Slot::default();
                    }
                    Arc::clone(slot)
                }
                None => {
                    let slot = Slot::default();
                    slots.push((Arc::downgrade(self), Arc::clone(&slot)));
                    slot
                }
            }
        })
    }

    /// Opens the connection; its socket is driven by a task on the calling runtime, which on
    /// actix's single-threaded workers is this thread.
    async fn connect(&self) -> Result<Arc<ThreadConnection>, StoreError> {
        let connecting = tokio_postgres::connect(&self.url, NoTls);
        let (client, connection) = tokio::time::timeout(self.connect_timeout, connecting)
            .await
            .map_err(|_| StoreError::Connect(format!("no connection within {:?}", self.connect_timeout)))?
            .map_err(|error| StoreError::Connect(error.to_string()))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(%error, "a thread's database connection ended");
            }
        });
        Ok(Arc::new(ThreadConnection { client, statements: self.statements.clone(), prepared: Mutex::default() }))
    }
}

impl ThreadConnection {
    /// Runs `sql`, prepared on this connection the first time.
    pub async fn query(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        self.statements.add_one();
        let statement = match self.prepared(sql) {
            Some(statement) => statement,
            None => {
                let statement = self.client.prepare(sql).await?;
                self.lock_prepared().push((sql, statement.clone()));
                statement
            }
        };
        self.client.query(&statement, params).await
    }

    fn prepared(&self, sql: &str) -> Option<Statement> {
        self.lock_prepared().iter().find(|(known, _)| *known == sql).map(|(_, statement)| statement.clone())
    }

    /// The list only grows and a panic cannot leave it half-changed, so a poisoned lock is fine.
    fn lock_prepared(&self) -> std::sync::MutexGuard<'_, Vec<(&'static str, Statement)>> {
        self.prepared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
