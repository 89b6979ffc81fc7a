//! Black-box HTTP tests of `compliance-server`: every test starts the real binary on a fresh
//! database, sets data up through the operator CLI and talks to it over HTTP, once on SQLite and
//! once on PostgreSQL (admin URL from `DATABASE_URL`).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Runs each listed `async fn NAME(server: &TestServer)` of the calling module on both backends:
/// `api_tests!(a, b)` expands to `mod sqlite { fn a(); fn b(); }` and `mod postgres { … }`, each
/// test with its own server and database.
macro_rules! api_tests {
    ($($name:ident),+ $(,)?) => {
        api_tests!(@backend sqlite, Sqlite, $($name),+);
        api_tests!(@backend postgres, Postgres, $($name),+);
    };
    (@backend $module:ident, $backend:ident, $($name:ident),+) => {
        mod $module {
            $(
                #[tokio::test]
                async fn $name() {
                    $crate::harness::run($crate::harness::Backend::$backend, |server| async move {
                        super::$name(&server).await
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
mod harness;
mod tenant;

mod auth;
mod context;
mod isolation;
mod organization;
mod outage;
mod people;
mod policies;
mod risks;
mod vendors;
mod wire;
