//! The use cases of `compliance-app` over in-memory ports and a fake clock: the decisions the
//! application makes (clean-up, who may do what, claims, expiry, what must not happen), tested
//! without a server, a database or a real clock. tests/api checks the same service over HTTP.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod access;
mod allowed_hosts;
mod api_keys;
mod as_of;
mod automation_reach;
mod automation_secrets;
mod automations;
mod chat;
mod comments;
mod controls;
mod devices;
mod download_links;
mod evidence;
mod frameworks;
mod idempotency;
mod integrations;
mod people;
mod policy_documents;
mod policy_reviews;
mod principal_cache;
mod webhooks;
