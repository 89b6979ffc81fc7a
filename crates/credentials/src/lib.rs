//! The integration credential model of the compliance service, pure: the four ways a third-party
//! service is connected (`oauth2`, `api_key`, `basic`, `custom`), their fields and validation, the
//! provider manifests, and the OAuth 2.0 authorization-code flow as data (authorization URL, PKCE,
//! hashed single-use state, what token requests carry). No HTTP client, no `oauth2` client, no
//! database: `compliance-provider-client` sends the requests (behind the `ProviderClient` port) and
//! `compliance-vault` seals the secrets (behind the `SecretCipher` port).
//!
//! # What it offers
//!
//! - [`strategy`]: the `auth: {type, config}` model, deserialised from the spec's camelCase JSON with
//!   its defaults, and the choice rule [`choose_strategy`].
//! - [`validation`]: [`parse_strategy`] (JSON in, validated strategy out) and [`validate_strategy`],
//!   with [`FieldError`]s that name the field by JSON path (`config.credentialFields[2].options`).
//! - [`fields`]: credential fields and [`validate_values`] for what a user submits;
//!   [`strategy_fields`]: the fields each strategy asks for ([`credential_fields`]).
//! - [`catalog`]: the provider manifests ([`ProviderCatalog`], the shipped `providers/` and
//!   `PROVIDERS_DIR`'s).
//! - [`oauth`]: [`authorization_url`], PKCE ([`PkceVerifier`]), the state ([`StateToken`],
//!   [`OAuthState`]), the callback ([`accept_callback`]), token requests and answers ([`TokenSet`],
//!   [`TokenError`]) and when to refresh ([`needs_refresh`]).
//! - [`request_auth`]: [`RequestAuth`], how a signed request to a provider authenticates.
//! - [`diagnostics`]: the spec's log messages, word for word.
//!
//! # Example
//!
//! ```
//! use std::collections::BTreeMap;
//! use compliance_credentials::{credential_fields, parse_strategy, validate_values};
//! use secrecy::{ExposeSecret, SecretString};
//!
//! let auth = serde_json::json!({"type": "api_key", "config": {"in": "header", "name": "Authorization", "prefix": "Token "}});
//! let strategy = parse_strategy(&auth)?;
//! let fields = credential_fields(&strategy);
//! assert_eq!(fields[0].id, "api_key");
//!
//! let submitted = BTreeMap::from([("api_key".to_owned(), SecretString::from("k-123"))]);
//! let values = validate_values(&fields, submitted)?;
//! assert_eq!(values.get("api_key").map(|v| v.expose_secret()), Some("k-123"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Choices where the spec is silent
//!
//! - **Unknown keys** in any config object are refused (a typo such as `clientAuthMetod` would
//!   otherwise silently fall back to a default). `custom` needs at least one credential field.
//!   A custom setting's `required` defaults to false and its `token` is optional; every `{NAME}`
//!   placeholder in `authorizeUrl` must be the token of a setting. An optional setting left empty
//!   replaces its token with the empty string. Setting values are percent-encoded (RFC 3986
//!   unreserved characters kept).
//! - **Reserved parameters**: `authorizationParams` may not set client_id, response_type,
//!   redirect_uri, scope, state, code_challenge or code_challenge_method; `tokenParams` may not set
//!   grant_type, code, redirect_uri, code_verifier, client_id, client_secret or refresh_token.
//!   An empty scope list sends no `scope` parameter. Scopes may not contain spaces.
//! - **PKCE**: S256 only; the verifier is 64 random bytes in base64url (86 characters).
//! - **State**: 32 random bytes in base64url; stored as hex SHA-256; compared in constant time; a
//!   record dated more than a minute in the future counts as expired. It also carries the PKCE
//!   verifier, which the store must encrypt.
//! - **Refresh**: due when `now + 5 min >= expires_at`; a token without `expires_in` is never
//!   refreshed proactively.
//! - **Values**: an optional field submitted empty (or only whitespace) is dropped; whitespace-only
//!   counts as missing for a required one. Numbers must parse as finite decimals.
//! - **Errors** never carry a submitted value, code, token or secret; a provider's OAuth error code
//!   is echoed only when it is a lowercase word such as `invalid_client` ([`diagnostics::safe_code`]).

pub mod catalog;
pub mod diagnostics;
pub mod field_error;
pub mod fields;
mod header_text;
pub mod oauth;
mod random;
pub mod request_auth;
mod shipped;
pub mod strategy;
pub mod strategy_fields;
pub mod validation;

pub use catalog::{ManifestError, Provider, ProviderCatalog, VerifyMethod, VerifyRequest};
pub use field_error::{FieldError, ValidationErrors};
pub use fields::{API_KEY_FIELD_ID, CredentialField, CredentialValues, FieldOption, FieldType, validate_values};
pub use header_text::{is_header_name, is_header_value};
pub use oauth::authorize::{AuthorizationRequest, AuthorizeUrlError, authorization_url, percent_encode};
pub use oauth::callback::{CallbackCaller, CallbackError, CallbackParams, accept_callback};
pub use oauth::pkce::{PkceChallenge, PkceVerifier};
pub use oauth::state::{OAuthState, STATE_LIFETIME, StateError, StateToken};
pub use oauth::token::{
    ClientCredentials, CodeExchange, DEFAULT_REFRESH_MARGIN, RESERVED_TOKEN_PARAMS, RefreshRequest, RevokeRequest,
    TokenError, TokenSet, TokenTypeHint, needs_refresh,
};
pub use request_auth::RequestAuth;
pub use strategy::{
    ApiKeyConfig, ApiKeyLocation, AuthStrategy, BasicConfig, ClientAuthMethod, CustomConfig, CustomSetting,
    OAuth2Config, OfferedCredential, ServiceAuthOffer, StrategyKind, choose_strategy,
};
pub use strategy_fields::credential_fields;
pub use validation::{parse_strategy, validate_strategy};
