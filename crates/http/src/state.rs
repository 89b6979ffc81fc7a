//! The state handlers share: the application and the kept list pages.

use std::future::Future;
use std::sync::Arc;

use compliance_app::{App, AppError, Credentials, Principal};
use compliance_ports::Page;
use serde_json::value::RawValue;
use tracing::Instrument;

use crate::ApiError;
use crate::list_cache::{ListCache, ListKey, ListPage};

/// Runs each use case as a task of its own on the thread that serves the request (actix's
/// single-threaded worker), with that thread's database connections.
///
/// A task, not a call in the handler: when the client goes away, actix drops the handler, but the
/// task runs to completion, so a write is never abandoned half-way. On the same thread, because a
/// hand-off to another runtime and back cost more than most use cases (docs/performance.md).
pub struct AppState {
    app: Arc<App>,
    lists: ListCache,
}

impl AppState {
    pub fn new(app: App, lists: ListCache) -> Self {
        Self { app: Arc::new(app), lists }
    }

    /// The page of a list under `key`: the kept one while its list is unchanged, else the page
    /// `load` loads (a use case, run as [`AppState::run`] runs it), serialized with `data` and kept.
    ///
    /// The list's generation is read here, on the serving thread, and before the page is loaded,
    /// never after: a write committing in between makes the page newer than its generation, so
    /// the next request loads it again; read the other way round, a page older than its
    /// generation could be kept for good. A current page is answered without spawning anything,
    /// but never before the permission matrix allows `caller` to read the list.
    pub async fn list_page<T, F, Fut>(
        &self,
        caller: &Principal,
        key: ListKey,
        load: F,
        data: impl FnOnce(&Page<T>) -> serde_json::Result<Box<RawValue>>,
    ) -> Result<Arc<ListPage>, ApiError>
    where
        F: FnOnce(Arc<App>) -> Fut,
        Fut: Future<Output = Result<Page<T>, AppError>> + Send + 'static,
        T: Send + 'static,
    {
        compliance_app::access::list_reach(caller, key.list())?;
        let generation = match self.lists.keeps_pages() {
            true => Some(self.app.list_generation(key.organization(), key.list()).await?),
            false => None,
        };
        if let Some(page) = generation.and_then(|generation| self.lists.current(&key, generation)) {
            return Ok(page);
        }
        let page = ListPage::serialize(&self.run(load).await?, data, &key.fingerprint())?;
        if let Some(generation) = generation {
            self.lists.keep(key, generation, page.clone());
        }
        Ok(page)
    }

    pub async fn run<T, F, Fut>(&self, use_case: F) -> Result<T, ApiError>
    where
        F: FnOnce(Arc<App>) -> Fut,
        Fut: Future<Output = Result<T, AppError>> + Send + 'static,
        T: Send + 'static,
    {
        Ok(self.spawn(use_case(self.app.clone())).await?)
    }

    /// The caller `credentials` name, if the application remembers it (see
    /// [`compliance_app::AuthService::remembered`]): answered on the calling thread, after one
    /// indexed read of the organization's access generation.
    pub async fn remembered(&self, credentials: &Credentials) -> Option<Principal> {
        self.app.auth.remembered(credentials).await
    }

    /// Tells the audit log's sequencer that a write committed (see `AuditService::written`).
    pub fn audit_written(&self) {
        self.app.audit.written();
    }

    /// The use cases' settings.
    pub fn settings(&self) -> &compliance_app::Settings {
        &self.app.settings
    }

    /// Signs and checks links and form tokens with the service's key.
    pub fn signer(&self) -> compliance_app::UrlSigner {
        compliance_app::UrlSigner::new(self.app.settings.url_signing_key.clone())
    }

    async fn spawn<T, Fut>(&self, use_case: Fut) -> Result<T, AppError>
    where
        Fut: Future<Output = Result<T, AppError>> + Send + 'static,
        T: Send + 'static,
    {
        // The use case logs in the request's span (its request id), although it is a task of its own.
        let task = tokio::spawn(use_case.instrument(tracing::Span::current()));
        match task.await {
            Ok(result) => result,
            Err(error) => Err(AppError::Internal(format!("use case task failed: {error}"))),
        }
    }
}
