//! Integration use cases: the provider catalog, OAuth apps, the OAuth connect flow and connections.
//!
//! Built on `compliance-credentials` (strategies, OAuth, vault) and the ports; called by the HTTP
//! layer. The contract and the choices made where the spec is silent are in `docs/integrations.md`.

pub mod catalog;
mod shipped;

pub use catalog::{ManifestError, Provider, ProviderCatalog, VerifyRequest};
