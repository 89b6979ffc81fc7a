//! [`TestApp`]: the application a server thread runs, over a SQLite database of its own, in the
//! style of crates.io's `TestApp`.

use std::path::PathBuf;
use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::web;
use compliance_embedded::Store;
use compliance_http::middleware::{HeadLimits, Operations};
use compliance_http::{AppState, ListCache};

/// Pages kept by the list cache, as the server's default keeps them.
const LIST_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// The application over a fresh SQLite database in a directory of its own (removed on drop), with
/// the server's default settings and adapters that start nothing (`compliance_embedded`).
pub struct TestApp {
    dir: PathBuf,
    store: Arc<Store>,
    state: web::Data<AppState>,
    operations: web::Data<Operations>,
}

impl TestApp {
    pub async fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("compliance-test-app-{:016x}", rand::random::<u64>()));
        std::fs::create_dir_all(&dir).unwrap();
        let (app, store) = compliance_embedded::open_sqlite(&dir).await.unwrap();
        let state = web::Data::new(AppState::new(app, ListCache::new(LIST_CACHE_BYTES)));
        let operations = web::Data::new(Operations::new(HeadLimits::default()).with_pools(store.clone()));
        Self { dir, store, state, operations }
    }

    /// The application as one server thread serves it: `actix_web::test::init_service` starts it,
    /// `call_service` sends it requests.
    pub fn application(
        &self,
    ) -> actix_web::App<
        impl ServiceFactory<
            ServiceRequest,
            Config = (),
            Response = ServiceResponse<impl MessageBody + use<>>,
            Error = actix_web::Error,
            InitError = (),
        > + use<>,
    > {
        compliance_http::application(self.state.clone(), self.operations.clone())
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.store.close();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
