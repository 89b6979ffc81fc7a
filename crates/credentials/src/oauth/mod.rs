//! The OAuth 2.0 authorization-code flow as data and rules: the authorization URL, PKCE, the
//! state, the callback, and what token requests carry. Sending them is the adapter's part.

pub mod authorize;
pub mod callback;
pub mod pkce;
pub mod state;
pub mod token;
