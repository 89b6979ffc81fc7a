//! Integration use cases: the provider catalog, OAuth apps, the OAuth connect flow and
//! connections, over the ports only: the providers' endpoints through
//! [`compliance_ports::ProviderClient`], the vault through [`compliance_ports::SecretCipher`].
//! The contract is docs/integrations.md.
//!
//! The views and inputs here are also the API's JSON (their schemas come with the `openapi`
//! feature), so their fields carry no doc comments: those would become schema descriptions.
#![allow(missing_docs, reason = "field docs would change the OpenAPI document's schemas")]

mod audit;
mod connection_check;
mod connection_tokens;
mod connections;
mod limits;
mod oauth_apps;
mod oauth_flow;
#[cfg(feature = "openapi")]
pub mod openapi;
mod providers;
mod sealed;
mod secret_input;
mod service;

/// The credential form's fields, which the connect page renders, and the encoding of the values it
/// puts in URLs: delivery reaches the credential model only through these.
pub use compliance_credentials::{CredentialField, FieldOption, FieldType, percent_encode};
pub use connection_check::{CheckReport, CheckResult};
pub use connections::{ConnectionView, Disconnected, NewConnection, Revocation};
pub use oauth_apps::{OAuthAppInput, OAuthAppView};
pub use oauth_flow::{CallbackRedirect, PendingAuthorization, StartOAuth, StateFor, invalid_state};
pub use providers::{OAuthView, ProviderView};
pub use service::{IntegrationService, IntegrationSettings};
