//! The OAuth 2.0 authorization-code flow: authorization URL, PKCE, state, callback, token exchange,
//! refresh, revocation.

pub mod authorize;
pub mod callback;
pub mod pkce;
pub mod provider_http;
pub mod refresh;
pub mod revoke;
pub mod state;
pub mod token;
mod token_response;
pub mod vault_store;
