//! In-process tests: the real actix application ([`compliance_http::application`]) over a fresh
//! SQLite database, driven through `actix_web::test` with no port and no child process
//! (`test_app.rs`). They are fast and see what the black-box suite (`tests/api`) cannot: the
//! route table the application was built from.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod routes;
mod test_app;
