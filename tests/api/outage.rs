//! A database outage answers 503 with `Retry-After`, promptly, while liveness stays up.
//!
//! PostgreSQL only: its database can be dropped under the running server, whereas an SQLite file
//! stays readable through the connections the server already holds, so there is no black-box way
//! to take it away.

use std::time::{Duration, Instant};

use crate::harness::{Backend, TestServer, run};

#[tokio::test]
async fn postgres_outage_is_503_with_retry_after() {
    run(Backend::Postgres, |server| async move { outage_is_503_with_retry_after(&server).await }).await;
}

async fn outage_is_503_with_retry_after(server: &TestServer) {
    let tenant = server.tenant().await;
    tenant.api.get("/v1/risks").await.ok(200);
    server.cut_database().await;

    let started = Instant::now();
    for response in [server.anonymous().get("/ready").await, tenant.api.get("/v1/risks").await] {
        let retry_after = response.retry_after.clone();
        response.problem(503);
        assert!(retry_after.is_some_and(|v| v.parse::<u32>().is_ok()), "503 without a numeric Retry-After");
    }
    assert!(started.elapsed() < Duration::from_secs(10), "the 503s took {:?}", started.elapsed());
    assert_eq!(server.anonymous().get("/health").await.status, 200, "liveness does not need the database");
}
