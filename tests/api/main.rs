//! Black-box HTTP tests of `compliance-server`: every test starts the real binary on a fresh
//! database, sets data up through the operator CLI and talks to it over HTTP, once on SQLite and
//! once on PostgreSQL (admin URL from `DATABASE_URL`).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Runs each listed `async fn NAME(server: &TestServer)` of the calling module on both backends:
/// `api_tests!(a, b)` expands to `mod sqlite { fn a(); fn b(); }` and `mod postgres { … }`, each
/// test with its own server and database. `api_tests!(a, b with ENV)` starts `b`'s server with the
/// extra environment variables `ENV` (a [`harness::Env`]).
macro_rules! api_tests {
    ($($name:ident $(with $env:expr)?),+ $(,)?) => {
        api_tests!(@backend sqlite, Sqlite, $($name $(with $env)?),+);
        api_tests!(@backend postgres, Postgres, $($name $(with $env)?),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident $(with $env:expr)?),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    #[allow(unused_variables)]
                    let env: $crate::harness::Env = &[];
                    $(let env: $crate::harness::Env = {
                        #[allow(unused_imports)]
                        use super::*;
                        $env
                    };)?
                    $crate::harness::run_with_env($crate::harness::Backend::$backend, env, |server| async move {
                        super::$name(&server).await
                    })
                    .await;
                }
            )+
        }
    };
}

/// Like [`api_tests!`], for tests of the integrations: each listed
/// `async fn NAME(server: &TestServer, fake: &FakeProvider)` runs on both backends against a server
/// whose `PROVIDERS_DIR` points at a fresh [`fake_provider::FakeProvider`] (see
/// [`fake_provider::run`], which also checks the server's stderr for secrets afterwards).
/// `provider_tests!(@backend sqlite, Sqlite, a, b)` runs them on one backend only.
macro_rules! provider_tests {
    ($($name:ident),+ $(,)?) => {
        provider_tests!(@backend sqlite, Sqlite, $($name),+);
        provider_tests!(@backend postgres, Postgres, $($name),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    $crate::fake_provider::run($crate::harness::Backend::$backend, |server, fake| async move {
                        super::$name(&server, &fake).await
                    })
                    .await;
                }
            )+
        }
    };
}

mod checks;
mod cli;
mod client;
mod cluster;
mod declared;
#[macro_use]
mod fake_fleet;
mod fake_model;
mod fake_provider;
mod harness;
#[path = "../support/moto.rs"]
mod moto;
mod oidc_provider;
mod tenant;
mod webdriver;

mod access;
mod adoption;
mod api_keys;
mod applicability;
mod attachments;
mod audit;
mod audit_proofs;
mod auth;
mod automation_agent;
mod automation_secrets;
mod automations;
mod bad_input;
mod bulk;
mod chat;
mod check_catalog;
mod check_runs;
mod comments;
mod conditional;
mod conformance;
mod connect_page;
mod context;
mod controls;
mod device_checks;
mod devices;
mod docs;
mod export;
mod filters;
mod finding_tasks;
mod framework_status;
mod frameworks;
mod idempotency;
mod instances;
mod integrations;
mod isolation;
mod library;
mod limits;
mod lists;
mod observability;
mod organization;
mod outage;
mod pagination;
mod people;
mod policies;
mod policy_diff;
mod policy_document;
mod policy_lifecycle;
mod policy_reviews;
mod prowler_import;
mod risks;
mod search;
mod shutdown;
mod sign_in;
mod task_lifecycle;
mod tasks;
mod typed_client;
mod vendors;
mod webhooks;
mod wire;
