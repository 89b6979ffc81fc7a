//! A pool of PostgreSQL connections for each thread that uses the store.
//!
//! A connection's socket is driven by a task on the runtime that opened it. From a shared pool, a
//! request on one of actix's threads would wake the thread driving its connection and be woken
//! back, twice per statement; from its own thread's pool the whole request stays on one thread.

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use compliance_ports::PoolStatus;
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool::{Object, Pool};

use crate::db::{PoolOptions, StatementCounter, build, pg_manager};
use crate::error::{StoreError, pool_error};

/// Each thread's pool, opened on the thread's first request.
pub struct ThreadPools {
    url: String,
    options: PoolOptions,
    statements: StatementCounter,
    every: Mutex<Every>,
}

/// Every thread's pool, for metrics and for closing them all.
#[derive(Default)]
struct Every {
    pools: Vec<Pool<AsyncPgConnection>>,
    closed: bool,
}

thread_local! {
    /// This thread's pool of each [`ThreadPools`] (tests run several stores in one process). An
    /// entry goes once its store is dropped.
    static THIS_THREAD: RefCell<Vec<(Weak<ThreadPools>, Pool<AsyncPgConnection>)>> = const { RefCell::new(Vec::new()) };
}

impl ThreadPools {
    /// Pools of `options.max_size` connections each, whose connections count their statements in
    /// `statements`.
    pub fn new(url: &str, options: &PoolOptions, statements: &StatementCounter) -> Self {
        Self { url: url.to_owned(), options: options.clone(), statements: statements.clone(), every: Mutex::default() }
    }

    /// A connection of the calling thread's pool.
    pub async fn get(self: &Arc<Self>) -> Result<Object<AsyncPgConnection>, StoreError> {
        self.pool()?.get().await.map_err(pool_error)
    }

    fn pool(self: &Arc<Self>) -> Result<Pool<AsyncPgConnection>, StoreError> {
        THIS_THREAD.with_borrow_mut(|pools| {
            pools.retain(|(owner, _)| owner.strong_count() > 0);
            if let Some((_, pool)) = pools.iter().find(|(owner, _)| std::ptr::eq(owner.as_ptr(), Arc::as_ptr(self))) {
                return Ok(pool.clone());
            }
            let mut every = self.every();
            if every.closed {
                return Err(pool_error(deadpool::managed::PoolError::Closed));
            }
            let pool = build(pg_manager(&self.url, &self.statements), self.options.max_size, &self.options)?;
            every.pools.push(pool.clone());
            pools.push((Arc::downgrade(self), pool.clone()));
            Ok(pool)
        })
    }

    /// All threads' pools as one, for metrics.
    pub fn status(&self) -> PoolStatus {
        let mut total = PoolStatus { name: "main", max_size: 0, size: 0, available: 0, waiting: 0 };
        for pool in &self.every().pools {
            let status = pool.status();
            total.max_size += status.max_size;
            total.size += status.size;
            total.available += status.available;
            total.waiting += status.waiting;
        }
        total
    }

    /// Closes every thread's pool; a thread without one cannot open one any more.
    pub fn close(&self) {
        let mut every = self.every();
        every.closed = true;
        every.pools.iter().for_each(Pool::close);
    }

    /// A panic cannot leave the list half-changed, so a poisoned lock is fine.
    fn every(&self) -> MutexGuard<'_, Every> {
        self.every.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
